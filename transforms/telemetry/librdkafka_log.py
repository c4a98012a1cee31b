"""librdkafka log lines (C, confluent-kafka-python/-go/-dotnet, node-rdkafka...) -> heartbeat events.

librdkafka's own logger prints `%<level>|<epoch s>.<ms>|<FAC>|<client name>| [thrd:<thread>]: <message>`
(`rd_kafka_log_print`); confluent-kafka-python hands the same to a Python logger as `<FAC> [<client name>]
[thrd:<thread>]: <message>`. What it logs at its default level (`log_level` 6) is read, and a few `debug=cgrp` /
`debug=consumer` lines (`%7`, below) that are the only ones naming the group or the heartbeat error; the rest of
the debug chatter ("Heartbeat for group ... generation id N", CGRPSTATE, ASSIGN...) is not read. Wording from
`src/rdkafka_cgrp.c`, unchanged from v1.6 to v2.15:

- MAXPOLL (WARNING): "Application maximum poll interval (Nms) exceeded by Mms (adjust max.poll.interval.ms for
  long-running message processing): leaving group"
- SESSTMOUT (WARNING): "Consumer group session timed out (in join-state S) after N ms without a successful response
  from the group coordinator (broker B, last error was E): revoking assignment and rejoining group"
- COMMITFAIL (WARNING, only when the commit has no callback): "Offset commit (R) failed for K/N partition(s) in
  join-state S: E: t[p]@o(E), ..." (v2.4+ prints the topic id too: `t(<base64 id>)[p]@o`, `t((null))[p]@o`; the
  id is standard base64 without padding, so it may hold `+` and `/`)
- HEARTBEAT (ERROR, KIP-848 groups, v2.15+; v2.10-v2.14 hand the same text to the application only; only
  TOPIC_AUTHORIZATION_FAILED takes this path): "ConsumerGroupHeartbeat failed: E: <message>"
- FATAL (EMERG, only when the application listens for error events, `rdkafka.c`): "Fatal error: E: <text>" with
  <text> "Fatal consumer error: E" (FENCED_INSTANCE_ID in JoinGroup/SyncGroup/Heartbeat), "OffsetCommit failed: E"
  (`rdkafka_request.c`, FENCED_INSTANCE_ID on a commit: a commit failure) or, KIP-848 v2.4+, "ConsumerGroupHeartbeat
  fatal error: E" (UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, GROUP_AUTHORIZATION_FAILED...: the member is out)

Debug lines read (`%7`, v1.6-v2.15 unless noted; the classic HEARTBEAT, GRPSYNC and LOST ones name the group):
- HEARTBEAT (CGRP, classic): "Group "G" heartbeat error response in state S (join-state J, N partition(s)
  assigned): E"
- HEARTBEAT (CONSUMER, KIP-848, v2.4+): "ConsumerGroupHeartbeat failed due to: E: will rejoin the group"
  (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH; `ShareGroupHeartbeat` in v2.15)
- GRPSYNC (CGRP): "Group "G": synchronization failed: E: rejoining"
- JOINGROUP (CGRP): "JoinGroup response: GenerationId N, Protocol P, LeaderId L[ (me)], my MemberId M, member
  metadata count K: E" (E "(no error)" on success)
- LOST (CONSUMER|CGRP): "Group "G": current assignment of N partition(s) lost: R: revoking [incremental]
  assignment and rejoining" (other LOST reasons, e.g. deleted topics, say nothing about membership)

The default layout's own time (epoch seconds, ms) is the event time, even over a JSON shipper's timestamp: it is
when librdkafka logged. Apart from those three debug lines, none names the group: the `client.id` part of the client
name (`client.id#consumer-N`) is kept as the client id, and the group comes only from a JSON shipper's `group_id`
field (without one the detectors cannot use the event). Errors are `rd_kafka_err2str` texts ("Broker: Unknown member"),
mapped back to Kafka error names by `kafka_errors`.
"""

from __future__ import annotations

import dataclasses
import re

from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent
from rebalance_radar.transforms.telemetry.kafka_errors import error_name_in_text
from rebalance_radar.transforms.telemetry.log_line import LogLine, MessageRule, RuleTable, apply_rules

SOURCE = TelemetrySource.CLIENT_LOG
Kind = HeartbeatEventKind

LIBRDKAFKA_MARKERS: tuple[str, ...] = ("[thrd:", "rdkafka#")

# `%4|1700000000.123|MAXPOLL|rdkafka#consumer-1| ...` (default logger) or `MAXPOLL [rdkafka#consumer-1] [thrd:...`
_STDERR_ENVELOPE = re.compile(r"%(\d)\|(\d{9,11})\.(\d{3})\|([A-Z0-9_]+)\|([^|]*)\|")
_PYTHON_ENVELOPE = re.compile(r"\b([A-Z0-9_]{3,})\s+\[([^\]\s]+)\]\s+\[thrd:")
# `orders[3]@42(Broker: Unknown member)`, or with a topic id `orders(Ab+C/d...)[3]@42` / `orders((null))[3]@42`
_PARTITION = re.compile(r"([^\s,()\[\]]+)(?:\((?:\(null\)|[\w+/=-]*)\))?\[(\d+)\](?:@(-?\d+))?")


def _client_id(name: str) -> str | None:
    """`orders-worker#consumer-1` -> `orders-worker`: the `client.id` the coordinator knows the member by."""
    return name.strip().split("#", 1)[0] or None


def _envelope(line: LogLine) -> LogLine:
    """The line with librdkafka's own time (epoch seconds in the default logger) and client id, when present."""
    found = _STDERR_ENVELOPE.search(line.message)
    if found is not None:
        _level, seconds, millis, _facility, name = found.groups()
        return dataclasses.replace(
            line, event_time=int(seconds) * 1000 + int(millis), client_id=line.client_id or _client_id(name)
        )
    found = _PYTHON_ENVELOPE.search(line.message)
    if found is not None:
        return dataclasses.replace(line, client_id=line.client_id or _client_id(found.group(2)))
    return line


def _details(line: LogLine, **extra: str | None) -> dict[str, str | None]:
    details: dict[str, str | None] = {"client": "librdkafka"}
    if line.logger:
        details["logger"] = line.logger
    details.update(extra)
    return details


def _max_poll_exceeded(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.POLL_TIMEOUT,
        SOURCE,
        reason="max.poll.interval.ms exceeded: leaving group",
        details=_details(line, max_poll_interval_ms=m.group(1), exceeded_ms=m.group(2)),
    )


def _session_timed_out(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    last_error = m.group(4)
    return line.event(
        Kind.SESSION_TIMEOUT,
        SOURCE,
        error=error_name_in_text(last_error),
        reason="session timed out without a successful response from the group coordinator",
        details=_details(line, join_state=m.group(1), elapsed_ms=m.group(2), coordinator=m.group(3)),
    )


def _commit_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    text = m.group(5)
    partitions = [f"{topic}-{partition}" for topic, partition, _offset in _PARTITION.findall(text)]
    return line.event(
        Kind.COMMIT_FAILED,
        SOURCE,
        error=error_name_in_text(text),
        reason=text.strip() or None,
        details=_details(
            line,
            commit_mode=m.group(1),
            failed_count=m.group(2),
            partition_count=m.group(3),
            join_state=m.group(4),
            failed_partitions=",".join(partitions) or None,
        ),
    )


def _group_heartbeat_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    text = m.group(2)
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        error=error_name_in_text(text),
        reason=text.strip() or None,
        details=_details(line, api=m.group(1), protocol="consumer" if m.group(1).startswith("Consumer") else "share"),
    )


def _fatal(m: re.Match[str], line: LogLine) -> HeartbeatEvent | None:
    text = m.group(1)
    error = error_name_in_text(text)
    if "OffsetCommit failed: " in text:
        kind = Kind.COMMIT_FAILED  # rdkafka_request.c: a fenced static member's commit
    elif "GroupHeartbeat fatal error: " in text or error == "FENCED_INSTANCE_ID":
        kind = Kind.HEARTBEAT_FAILED
    else:
        return None  # other fatal errors say nothing about membership
    return line.event(kind, SOURCE, error=error, reason=text.strip(), details=_details(line, fatal="true"))


def _classic_heartbeat_error(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    group, state, join_state, assigned, text = m.groups()
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        group_id=group,
        error=error_name_in_text(text),
        reason=text.strip() or None,
        details=_details(line, state=state, join_state=join_state, assigned_count=assigned, protocol="classic"),
    )


def _sync_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    text = m.group(2)
    return line.event(
        Kind.SYNC_FAILED,
        SOURCE,
        group_id=m.group(1),
        error=error_name_in_text(text),
        reason=text.strip() or None,
        details=_details(line),
    )


def _join_response(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    generation, protocol, leader, me, member, count, text = m.groups()
    failed = text.strip() != "(no error)"
    return line.event(
        Kind.JOIN_FAILED if failed else Kind.JOIN,
        SOURCE,
        generation=int(generation) if int(generation) >= 0 else None,
        member_id=member,
        error=error_name_in_text(text) if failed else None,
        reason=text.strip() if failed else None,
        details=_details(
            line,
            phase=None if failed else "joined",
            protocol=protocol or None,
            leader_id=leader or None,
            leader="true" if me else None,
            member_count=count,
        ),
    )


def _assignment_lost(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.MEMBER_REMOVED,
        SOURCE,
        group_id=m.group(1),
        reason=m.group(3).strip(),
        details=_details(line, change="lost", partition_count=m.group(2)),
    )


RULES = RuleTable.of(
    (
        MessageRule(
            "Application maximum poll interval",
            re.compile(r"Application maximum poll interval \((\d+)ms\) exceeded by (\d+)ms"),
            _max_poll_exceeded,
        ),
        MessageRule(
            "Consumer group session timed out",
            re.compile(
                r"Consumer group session timed out \(in join-state ([\w-]+)\) after (\d+) ms without a successful "
                r"response from the group coordinator \(broker (-?\d+), last error was (.*?)\)"
            ),
            _session_timed_out,
        ),
        MessageRule(
            "Offset commit (",
            re.compile(
                r"Offset commit \(([^)]*)\) failed for (\d+)/(\d+) partition\(s\) in join-state ([\w-]+): ?(.*)$"
            ),
            _commit_failed,
        ),
        MessageRule(
            "GroupHeartbeat failed: ",
            re.compile(r"\b((?:Consumer|Share)GroupHeartbeat) failed: (.*)$"),
            _group_heartbeat_failed,
        ),
        MessageRule("Fatal error: ", re.compile(r"Fatal error: (.*)$"), _fatal),
        # debug=cgrp / debug=consumer lines
        MessageRule(
            "heartbeat error response in state",
            re.compile(
                r'Group "(.+?)" heartbeat error response in state ([\w-]+) \(join-state ([\w-]+), (\d+) '
                r"partition\(s\) assigned\): (.*)$"
            ),
            _classic_heartbeat_error,
        ),
        MessageRule(
            "GroupHeartbeat failed due to: ",
            re.compile(r"\b((?:Consumer|Share)GroupHeartbeat) failed due to: (.*?): will rejoin the group"),
            _group_heartbeat_failed,
        ),
        MessageRule(
            "synchronization failed: ",
            re.compile(r'Group "(.+?)": synchronization failed: (.*?): rejoining\s*$'),
            _sync_failed,
        ),
        MessageRule(
            "JoinGroup response: GenerationId",
            re.compile(
                r"JoinGroup response: GenerationId (-?\d+), Protocol (.*?), LeaderId (.*?)( \(me\))?, my MemberId "
                r"(.*?), member metadata count (-?\d+): (.*)$"
            ),
            _join_response,
        ),
        MessageRule(
            "current assignment of",
            re.compile(
                r'Group "(.+?)": current assignment of (\d+) partition\(s\) lost: (.*?): revoking (?:incremental )?'
                r"assignment and rejoining"
            ),
            _assignment_lost,
        ),
    )
)


def looks_like_librdkafka_log(text: str) -> bool:
    """Whether a line carries librdkafka's logging envelope (for counting unrecognised lines per source)."""
    return any(marker in text for marker in LIBRDKAFKA_MARKERS) or _STDERR_ENVELOPE.search(text) is not None


def parse_librdkafka_message(line: LogLine) -> HeartbeatEvent | None:
    """The heartbeat event of a librdkafka log line already split into its envelope, or None."""
    if RULES.gate.search(line.message) is None:
        return None
    return apply_rules(RULES, _envelope(line))
