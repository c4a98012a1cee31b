"""Kafka Streams application log lines -> heartbeat events: the client's and its threads' states, and the tasks each
rebalance gives them, under the classic protocol and the streams protocol (KIP-1071, 4.1+).

Prefixes (log4j `LogContext`): `stream-client [<client id>] ` (`KafkaStreams`; the client id defaults to
`<application id>-<process uuid>`), `stream-thread [<client id>-StreamThread-<n>] ` (`StreamThread`, `TaskManager`,
`DefaultStreamsRebalanceListener`), and the thread's consumer `[Consumer clientId=<thread>-consumer, groupId=<app>] `
(`StreamsMembershipManager` in kafka-clients). Wording, identical in 4.1.1, 4.2.0 and 4.3.1 unless said:
- `KafkaStreams`/`StreamThread` (2.x-4.x, INFO): "State transition from S1 to S2" -> state_change.
- `TaskManager` (2.x-4.x, INFO): "Handle new assignment with:\\n\\tNew active tasks: [0_0]\\n\\tNew standby tasks: []
  \\n\\tExisting active tasks: []\\n\\tExisting standby tasks: []" -> assignment (change=tasks_assigned); a line shipper
  sends the first line alone (a plain-text record is read line by line); a JSON-wrapped message keeps the task lists.
- `DefaultStreamsRebalanceListener` (4.1+, INFO): "Processing new assignment Assignment{activeTasks=[0_0],
  standbyTasks=[], warmupTasks=[]} from Streams Rebalance Protocol" (4.2+ adds ", isGroupReady=true") and
  "Revoking active tasks [0_0]." -> assignment (received / revoked).
- `StreamsMembershipManager` (kafka-clients 4.1+, INFO): "Assigning active tasks {0_0, 0_1}, standby tasks {}, and
  warm-up tasks {} to the member.", "Revoking previously assigned active tasks 0_0, 0_1" -> assignment;
  "Revoking previously assigned and now lost active tasks 0_0" -> assignment (lost_tasks);
  "Assigned tasks with local epoch E and group is ready" (4.2+; 4.1: "Assigned tasks with local epoch E") followed by
  "\\tMember: M" and the task lists -> assignment (change=target, local_epoch); "Member M completed callback to revoke
  task assignment. It will proceed to clear its assignment and send a leave group heartbeat" (and its ERROR twin
  "Member M callback to revoke task assignment failed. ...") -> leave.
- `StreamThread` (4.3, INFO): "The consumer will leave the group since the streams group protocol is used" -> leave
  (no member id: the coordinator's "Member M left the streams group." names it).
- `StreamsRebalanceListenerInvoker` (kafka-clients 4.1+, INFO, the consumer's prefix, so with the group even when
  `client.id` is set): "Invoking tasks assigned callback for new assignment: Assignment{...}", "Invoking task revoked
  callback for revoked active tasks [0_1]" -> assignment; "Invoking tasks lost callback for all tasks" -> member_removed
  (lost: only a fenced or failed member loses all its tasks).
- `StreamsGroupHeartbeatRequestManager` (4.1+, WARN): "Membership is in the following statuses: (C) detail, ..." ->
  topology (stale topology, missing or mis-partitioned topics) or assignment (delayed by the initial rebalance delay).
- `StreamTask`/`StandbyTask` (2.x-4.x, INFO, prefix `... task [0_1] `): "Initialized", "Restored and ready to run",
  "Suspended from S" / "Suspended running|created", "Closed clean|dirty", "Closed and recycled state" -> state_change
  (component task).
The membership manager's "Member M with epoch E transitioned from S1 to S2." is shared with the KIP-848 consumer and
read by `client_log`.
"""

from __future__ import annotations

import re

from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent
from rebalance_radar.transforms.telemetry.log_line import EventBuilder, LogLine, MessageRule, RuleTable, apply_rules

SOURCE = TelemetrySource.CLIENT_LOG
Kind = HeartbeatEventKind

# Task ids as Streams prints them: `0_1` (subtopology_partition), `topology__0_1` with named topologies.
_TASK_ID = re.compile(r"[\w.-]*?\d+_\d+")
_TASK_LINE = re.compile(
    r"^\s*(Member|New active tasks|New standby tasks|Assigned active tasks|Active tasks to revoke|"
    r"Assigned standby tasks|Assigned warm-up tasks):\s*(.*?)\s*$",
    re.MULTILINE,
)


def task_ids(printed: str | None) -> list[str]:
    """`[0_0, 1_2]`, `{0_0, 1_2}` or `0_0, 1_2` (how each class prints a task set) -> the task ids."""
    return _TASK_ID.findall(printed or "")


def _tasks(details: dict[str, str | None], name: str, printed: str | None) -> None:
    """`<name>_tasks` (comma-joined ids) and `<name>_task_count` when the line printed that set."""
    if printed is None:
        return
    ids = task_ids(printed)
    details[f"{name}_tasks"] = ",".join(ids)
    details[f"{name}_task_count"] = str(len(ids))


def _component(line: LogLine) -> str:
    """Which state machine a "State transition" line is about, from its prefix or logger."""
    message, logger = line.message, line.logger or ""
    if "global-stream-thread [" in message or logger.endswith("GlobalStreamThread"):
        return "global_stream_thread"
    if "stream-thread [" in message or logger.endswith("StreamThread"):
        return "stream_thread"
    return "kafka_streams"


def _details(line: LogLine, **extra: str | None) -> dict[str, str | None]:
    details: dict[str, str | None] = {"logger": line.logger} if line.logger else {}
    details.update(extra)
    return details


def _state_transition(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    before, after = m.groups()
    return line.event(
        Kind.STATE_CHANGE,
        SOURCE,
        details=_details(line, component=_component(line), from_state=before, to_state=after),
    )


def _handle_new_assignment(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """TaskManager.handleAssignment, under either protocol: the tasks the thread will now run."""
    lists = {name: value for name, value in _TASK_LINE.findall(line.message)}
    details = _details(line, change="tasks_assigned")
    _tasks(details, "active", lists.get("New active tasks"))
    _tasks(details, "standby", lists.get("New standby tasks"))
    return line.event(Kind.ASSIGNMENT, SOURCE, details=details)


def _processing_new_assignment(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    active, standby, warmup, ready = m.groups()
    details = _details(line, change="received", protocol="streams", group_ready=ready)
    _tasks(details, "active", active)
    _tasks(details, "standby", standby)
    _tasks(details, "warmup", warmup)
    return line.event(Kind.ASSIGNMENT, SOURCE, details=details)


def _assigning_tasks(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    active, standby, warmup = m.groups()
    details = _details(line, change="assigned", protocol="streams")
    _tasks(details, "active", active)
    _tasks(details, "standby", standby)
    _tasks(details, "warmup", warmup)
    return line.event(Kind.ASSIGNMENT, SOURCE, details=details)


def _revoking_tasks(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _details(line, change="revoked", protocol="streams")
    _tasks(details, "active", m.group(1))
    return line.event(Kind.ASSIGNMENT, SOURCE, details=details)


def _lost_tasks(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """StreamsMembershipManager releases tasks as lost when fenced or failed; the listener invoker's "Invoking tasks
    lost callback" that follows is read as the member's loss, this line gives the tasks."""
    details = _details(line, change="lost_tasks", protocol="streams")
    _tasks(details, "active", m.group(1))
    return line.event(Kind.ASSIGNMENT, SOURCE, details=details)


def _target_assignment(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    epoch, ready = m.groups()
    lists = {name: value for name, value in _TASK_LINE.findall(line.message)}
    details = _details(
        line,
        change="target",
        protocol="streams",
        local_epoch=epoch,
        group_ready={"is ready": "true", "is not ready": "false"}.get(ready or ""),
    )
    _tasks(details, "active", lists.get("Assigned active tasks"))
    _tasks(details, "revoking", lists.get("Active tasks to revoke"))
    _tasks(details, "standby", lists.get("Assigned standby tasks"))
    _tasks(details, "warmup", lists.get("Assigned warm-up tasks"))
    member = lists.get("Member")
    return line.event(Kind.ASSIGNMENT, SOURCE, member_id=member or None, details=details)


def _callback_assigned(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """StreamsRebalanceListenerInvoker: the same assignment as the listener's line, but with the group in its prefix."""
    active, standby, warmup, ready = m.groups()
    details = _details(line, change="assigned_callback", protocol="streams", group_ready=ready)
    _tasks(details, "active", active)
    _tasks(details, "standby", standby)
    _tasks(details, "warmup", warmup)
    return line.event(Kind.ASSIGNMENT, SOURCE, details=details)


def _callback_revoked(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    details = _details(line, change="revoked_callback", protocol="streams")
    _tasks(details, "active", m.group(1))
    return line.event(Kind.ASSIGNMENT, SOURCE, details=details)


def _callback_lost(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """The invoker's onAllTasksLost: only a fenced or failed member loses all its tasks."""
    details = _details(line, change="lost", cause="tasks_lost", protocol="streams")
    return line.event(Kind.MEMBER_REMOVED, SOURCE, reason="all tasks lost", details=details)


# StreamsGroupHeartbeatResponse.Status codes (KIP-1071): the topology's and the assignment's state on the coordinator.
_STATUS_NAMES = {
    "0": "STALE_TOPOLOGY",
    "1": "MISSING_SOURCE_TOPICS",
    "2": "INCORRECTLY_PARTITIONED_TOPICS",
    "3": "MISSING_INTERNAL_TOPICS",
    "4": "SHUTDOWN_APPLICATION",
    "5": "ASSIGNMENT_DELAYED",
}
_STATUS = re.compile(r"\((\d+)\) ")
_TOPOLOGY_STATUSES = frozenset({"0", "1", "2", "3"})


def _statuses(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """StreamsGroupHeartbeatRequestManager 4.1+ (WARN): "Membership is in the following statuses: (C) detail, ...".
    A topology status (stale, missing or mis-partitioned topics) is a topology event; an assignment delayed by the
    group's initial rebalance delay is an assignment event (the shutdown status is read by `client_log`)."""
    codes = _STATUS.findall(m.group(1))
    names = ",".join(_STATUS_NAMES.get(code, code) for code in codes)
    topology = any(code in _TOPOLOGY_STATUSES for code in codes)
    details = _details(line, protocol="streams", statuses=names, status_detail=m.group(1).strip())
    if topology:
        details["topology_phase"] = "status"
        return line.event(Kind.TOPOLOGY, SOURCE, reason=names, details=details)
    details["change"] = "delayed" if "5" in codes else "status"
    return line.event(Kind.ASSIGNMENT, SOURCE, reason=names, details=details)


_TASK_STATES = {
    "Initialized": "RESTORING",
    "Restored and ready to run": "RUNNING",
    "Suspended": "SUSPENDED",
    "Closed": "CLOSED",
}


def _task_state(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """StreamTask/StandbyTask (2.x-4.x, INFO, prefix `... task [0_1] `): a task created, restored, suspended or
    closed as its thread's assignment changes."""
    kind, task, said, before = m.groups()
    if before is None and said in ("Suspended running", "Suspended created"):
        before = said.split()[1]
    after = next(state for word, state in _TASK_STATES.items() if said.startswith(word))
    details = _details(
        line,
        component="standby_task" if kind else "task",
        task_id=task,
        to_state=after,
        from_state=before.upper() if before else None,
        closed=said.removeprefix("Closed ").replace(" ", "_") if after == "CLOSED" else None,
    )
    return line.event(Kind.STATE_CHANGE, SOURCE, details=details)


def _leave(reason: str) -> EventBuilder:
    def build(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
        member = m.group(1) if m.re.groups else None
        return line.event(
            Kind.LEAVE, SOURCE, member_id=member, reason=reason, details=_details(line, protocol="streams")
        )

    return build


RULES = RuleTable.of(
    (
        MessageRule(
            "State transition from",
            re.compile(r"(?<!Unexpected )State transition from (\w+) to (\w+)"),
            _state_transition,
        ),
        MessageRule("Handle new assignment with", re.compile(r"Handle new assignment with"), _handle_new_assignment),
        MessageRule(
            "from Streams Rebalance Protocol",
            re.compile(
                r"Processing new assignment Assignment\{activeTasks=(\[[^\]]*\]), standbyTasks=(\[[^\]]*\]), "
                r"warmupTasks=(\[[^\]]*\])(?:, isGroupReady=(\w+))?\} from Streams Rebalance Protocol"
            ),
            _processing_new_assignment,
        ),
        MessageRule(
            "Assigning active tasks",
            re.compile(
                r"Assigning active tasks \{([^}]*)\}, standby tasks \{([^}]*)\}, and warm-up tasks \{([^}]*)\} to the "
                r"member"
            ),
            _assigning_tasks,
        ),
        MessageRule(
            "and now lost active tasks",
            re.compile(r"Revoking previously assigned and now lost active tasks ?(.*)$"),
            _lost_tasks,
        ),
        MessageRule(
            "Revoking previously assigned active tasks",
            re.compile(r"Revoking previously assigned active tasks ?(.*)$"),
            _revoking_tasks,
        ),
        MessageRule("Revoking active tasks", re.compile(r"Revoking active tasks (\[[^\]]*\])"), _revoking_tasks),
        MessageRule(
            "Assigned tasks with local epoch",
            re.compile(r"Assigned tasks with local epoch (-?\d+)(?: and group (is ready|is not ready))?"),
            _target_assignment,
        ),
        MessageRule(
            "Invoking tasks assigned callback",
            re.compile(
                r"Invoking tasks assigned callback for new assignment: Assignment\{activeTasks=(\[[^\]]*\]), "
                r"standbyTasks=(\[[^\]]*\]), warmupTasks=(\[[^\]]*\])(?:, isGroupReady=(\w+))?\}"
            ),
            _callback_assigned,
        ),
        MessageRule(
            "Invoking task revoked callback",
            re.compile(r"Invoking task revoked callback for revoked active tasks (\[[^\]]*\])"),
            _callback_revoked,
        ),
        MessageRule(
            "Invoking tasks lost callback", re.compile(r"Invoking tasks lost callback for all tasks"), _callback_lost
        ),
        MessageRule(
            "Membership is in the following statuses",
            re.compile(r"Membership is in the following statuses: (.*)$"),
            _statuses,
        ),
        MessageRule(
            "task [",
            re.compile(
                r"\b(standby-)?task \[([^\]]+)\] (Initialized|Restored and ready to run|Suspended from (\w+)"
                r"|Suspended (?:running|created)|Closed clean|Closed dirty|Closed and recycled state)\s*$"
            ),
            _task_state,
        ),
        MessageRule(
            "callback to revoke task assignment",
            re.compile(
                r"Member (\S+) (?:completed callback|callback) to revoke task assignment(?: failed)?\. It will proceed "
                r"to clear its assignment and send a leave group heartbeat"
            ),
            _leave("revoked its tasks to leave the group"),
        ),
        MessageRule(
            "will leave the group since the streams group protocol",
            re.compile(r"The consumer will leave the group since the streams group protocol is used"),
            _leave("thread shutting down: the streams protocol leaves the group"),
        ),
    )
)


def parse_streams_message(line: LogLine) -> HeartbeatEvent | None:
    """The heartbeat event of a Kafka Streams log line already split into its envelope, or None."""
    return apply_rules(RULES, line)
