"""Java consumer and Kafka Streams client log lines -> heartbeat events.

Consumer lines carry `[Consumer clientId=C, groupId=G]` (with `instanceId=I, ` first for static members) from
`AbstractCoordinator`/`ConsumerCoordinator`; Streams lines carry `stream-thread [<app>-<process>-StreamThread-n]`
(the `-consumer` suffix from `StreamsPartitionAssignor`), whose application id is the group id. Wording is
the 3.x/4.x classic consumer's (`Generation{generationId=N, memberId='M', protocol='P'}`); 2.x's "Attempt to
heartbeat failed since group is rebalancing" is also read, as are 2.0-2.2's "Attempt to heartbeat failed since
generation N is not current" (ILLEGAL_GENERATION) and "Attempt to heartbeat failed for since member id M is not
valid." (UNKNOWN_MEMBER_ID). The "N client nodes and M consumers participating in this rebalance" summary exists
since Streams 3.6; earlier versions list nodes on separate lines only.

A classic consumer cut off from its coordinator for longer than its rebalance timeout (AbstractCoordinator 2.8+/3.x/
4.x, WARN): "Consumer has been disconnected from the group coordinator for Nms" (a session timeout: the coordinator
has expired the member; the KIP-848 consumer logs the same text at DEBUG only).

Any other cause of "Group coordinator H is unavailable or invalid due to cause: C" (a NOT_COORDINATOR response, a
disconnect) is a heartbeat_failed with cause coordinator_unavailable: the member sends no heartbeat until it finds
its coordinator again. The KIP-848 consumer's "Member M is triggering callbacks to release assignment P and leave
group" is its leave, "Member M with epoch E transitioned to fatal state" (3.7-3.9: "FATAL") its end.

Commit failures that name no partition error (`{...}` is a Java map `t-p=OffsetAndMetadata{offset=O, ...}`, read
into `details.partitions`; the exception, when the record carries it, gives the error):
- ConsumerCoordinator 2.x-4.x (ERROR), `commitAsync()`'s default callback: "Offset commit with offsets {...} failed"
- ConsumerCoordinator 3.x/4.x (WARN): "Asynchronous auto-commit of offsets {...} failed: <message>" /
  "Synchronous auto-commit of offsets {...} failed: <message>"; 3.3+ at join prepare (ERROR): "Asynchronous
  auto-commit of offsets failed: joinPrepare timeout. Will continue to join group" / "... failed: <message>. Will
  continue to join group."
- CommitRequestManager (KIP-848 consumer, WARN): 3.9+/4.x "Auto-commit of offsets {...} failed", 3.7-3.8
  "Asynchronous auto-commit of offsets {...} failed"
"""

from __future__ import annotations

import re

from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent, ParseOutcome
from rebalance_radar.transforms.telemetry.kafka_errors import error_name_in_text
from rebalance_radar.transforms.telemetry.log_line import (
    GENERATION,
    EventBuilder,
    LogLine,
    MessageRule,
    RuleTable,
    apply_rules,
    instance_id_value,
    split_log_line,
)
from rebalance_radar.transforms.telemetry.streams_log import parse_streams_message
from rebalance_radar.transforms.wire.error_codes import ErrorCode as E

SOURCE = TelemetrySource.CLIENT_LOG
Kind = HeartbeatEventKind

CLIENT_MARKERS: tuple[str, ...] = (
    "[Consumer ",
    "stream-thread [",
    "stream-client [",
    "ConsumerCoordinator",
    "AbstractCoordinator",
    "StreamsPartitionAssignor",
    "org.apache.kafka.clients",
    "org.apache.kafka.streams",
    "o.a.k.c.c.internals",
)

_COORDINATOR_UNAVAILABLE = re.compile(r"Group coordinator (.+?) is unavailable or invalid")
_NEEDS_MEMBER_ID = re.compile(r"need to re-join with the given member-id:? (\S+)")
_FAILURE_TEXT = re.compile(r"(?:Sync|Join)Group failed(?: with a fatal error)?:? ?(.*?)\s*(?:Sent generation was|$)")


def _generation(line: LogLine) -> int | None:
    found = GENERATION.search(line.message)
    return int(found.group(1)) if found else None


def _generation_member(line: LogLine) -> str | None:
    found = GENERATION.search(line.message)
    return (found.group(2) or None) if found else None


def _protocol_details(line: LogLine, **extra: str | None) -> dict[str, str | None]:
    found = GENERATION.search(line.message)
    details: dict[str, str | None] = {"protocol": found.group(3) if found and found.group(3) else None}
    if line.logger:
        details["logger"] = line.logger
    details.update(extra)
    return details


def _partition_count(partitions: str) -> str:
    inner = partitions.strip().strip("[]").strip()
    return str(len([p for p in inner.split(",") if p.strip()])) if inner else "0"


def _leave_group_request(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    reason = m.group(3).rstrip(".") if m.group(3) else None
    cause = "poll_timeout" if reason and "poll timeout" in reason else None
    return line.event(
        Kind.LEAVE,
        SOURCE,
        member_id=m.group(1),
        reason=reason,
        details=_protocol_details(line, coordinator=m.group(2), cause=cause),
    )


def _leave_group_response(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    failure = m.group(2)
    return line.event(
        Kind.LEAVE,
        SOURCE,
        generation=_generation(line),
        member_id=_generation_member(line),
        error=error_name_in_text(failure) if failure else None,
        reason=failure.strip() if failure else None,
        details=_protocol_details(line, response="failed" if failure else "success"),
    )


def _heartbeat_attempt_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    stale, generation, member, _protocol, raw_generation, instance, error, outcome = m.groups()
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        member_id=member,
        generation=int(generation) if generation is not None else None,
        group_instance_id=instance_id_value(instance),
        error=error,
        reason=outcome,
        details=_protocol_details(
            line,
            stale="true" if stale else None,
            sent_generation=raw_generation,
            generation_reset="true" if outcome == "resetting generation" else None,
        ),
    )


# 2.0-2.2 AbstractCoordinator: "Attempt to heartbeat failed since generation N is not current" (ILLEGAL_GENERATION),
# "Attempt to heartbeat failed for since member id M is not valid." (UNKNOWN_MEMBER_ID, the source's "for since").
_LEGACY_HEARTBEAT_GENERATION = re.compile(r"^generation (-?\d+) is not current")
_LEGACY_HEARTBEAT_MEMBER = re.compile(r"^member id (\S*?) is not valid")
# 2.x-4.x AbstractCoordinator, a NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE answer (which of the two is not said):
# "Attempt to heartbeat failed since coordinator H is either not started or not valid".
_HEARTBEAT_COORDINATOR = re.compile(r"^coordinator (.+?) is either not started or not valid")


def _heartbeat_failed_legacy(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    cause = m.group(1).rstrip(".")
    error = error_name_in_text(cause) or (E.REBALANCE_IN_PROGRESS.name if "rebalancing" in cause else None)
    generation = _LEGACY_HEARTBEAT_GENERATION.match(cause)
    member = _LEGACY_HEARTBEAT_MEMBER.match(cause)
    coordinator = _HEARTBEAT_COORDINATOR.match(cause)
    extra = {"coordinator": coordinator.group(1), "cause": "coordinator_unavailable"} if coordinator else {}
    if generation is not None:
        error = E.ILLEGAL_GENERATION.name
    elif member is not None:
        error = E.UNKNOWN_MEMBER_ID.name
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        generation=int(generation.group(1)) if generation else None,
        member_id=member.group(1) if member else None,
        error=error,
        reason=cause,
        details=_protocol_details(line, **extra),
    )


def _heartbeat_ok(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(Kind.HEARTBEAT, SOURCE, details=_protocol_details(line))


def _heartbeat_error_ignored(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.HEARTBEAT,
        SOURCE,
        error=m.group(1),
        details=_protocol_details(line, member_state=m.group(2), ignored="true"),
    )


def _fenced_instance_in_heartbeat(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        group_instance_id=instance_id_value(m.group(1)),
        error=E.FENCED_INSTANCE_ID.name,
        reason="fenced group.instance.id",
        details=_protocol_details(line),
    )


def _heartbeat_thread_error(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    kind = (m.group(1) or "").strip()
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        error=error_name_in_text(line.message),
        reason=f"{kind} error in heartbeat thread".strip(),
        details=_protocol_details(line),
    )


def _unexpected_heartbeat_error(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    text = m.group(1).strip()
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        error=error_name_in_text(text),
        reason=text or None,
        details=_protocol_details(line),
    )


def _session_timed_out(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    coordinator = _COORDINATOR_UNAVAILABLE.search(line.message)
    return line.event(
        Kind.SESSION_TIMEOUT,
        SOURCE,
        reason="session timed out without receiving a heartbeat response",
        details=_protocol_details(line, coordinator=coordinator.group(1) if coordinator else None),
    )


def _coordinator_unavailable(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """Classic consumer (AbstractCoordinator 2.x-4.x, INFO), any cause but a session timeout (read above): the member
    lost its coordinator (an error response NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE, a disconnect) and sends no
    heartbeat until it finds it again; in a broker roll, every member of every group the broker led logs it."""
    cause = m.group("cause").strip()
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        error=error_name_in_text(cause),
        reason=f"group coordinator unavailable: {cause}",
        details=_protocol_details(
            line, coordinator=m.group("coordinator"), cause="coordinator_unavailable", disconnected=m.group("disc")
        ),
    )


def _release_assignment_to_leave(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """KIP-848 consumer (ConsumerMembershipManager 3.7+/4.x, INFO): leaving the group on close or unsubscribe, the
    counterpart of the classic "Member M sending LeaveGroup request"."""
    return line.event(
        Kind.LEAVE,
        SOURCE,
        member_id=m.group(1),
        reason="release assignment and leave group",
        details=_protocol_details(line, protocol="consumer", partitions=m.group(2)),
    )


def _member_fatal(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """KIP-848 consumer (MembershipManagerImpl 3.7-3.9 "... transitioned to FATAL state", AbstractMembershipManager
    4.x "... transitioned to fatal state", ERROR): a non-retriable heartbeat error; the member is out for good."""
    return line.event(
        Kind.MEMBER_REMOVED,
        SOURCE,
        member_id=m.group(1),
        member_epoch=int(m.group(2)),
        reason="member transitioned to fatal state",
        details=_protocol_details(line, protocol="consumer", change="lost", cause="fatal"),
    )


_STREAMS_CONSUMER_CLIENT = re.compile(r"-StreamThread-\d+-consumer$")


def _membership_protocol(line: LogLine) -> str:
    """KIP-1071 when the line comes from `StreamsMembershipManager` or a Streams thread's consumer, else KIP-848."""
    if (line.logger and "Streams" in line.logger) or _STREAMS_CONSUMER_CLIENT.search(line.client_id or ""):
        return "streams"
    return "consumer"


def _membership_transition(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """KIP-848/1071 member state machine (`AbstractMembershipManager` 3.7+/4.x, `StreamsMembershipManager` 4.1+,
    INFO): "Member M with epoch E transitioned from S1 to S2.". A state change, FENCED included: the heartbeat
    failure that fenced the member (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) is its own line, read above, and the
    tasks or partitions it lost are the listener invoker's line."""
    member, epoch, before, after = m.groups()
    details = _protocol_details(line, protocol=_membership_protocol(line), from_state=before, to_state=after)
    details["component"] = "membership"
    return line.event(Kind.STATE_CHANGE, SOURCE, member_id=member, member_epoch=int(epoch), details=details)


def _disconnected_from_coordinator(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """Classic consumer (AbstractCoordinator 2.8+/3.x/4.x, WARN): the coordinator has been unreachable for longer than
    the rebalance timeout (max.poll.interval.ms), so for longer than any session timeout: no heartbeat of this
    member reached it, and the coordinator has expired it."""
    return line.event(
        Kind.SESSION_TIMEOUT,
        SOURCE,
        reason="disconnected from the group coordinator past the rebalance timeout",
        details=_protocol_details(line, disconnected_ms=m.group(1)),
    )


def _poll_timeout(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.POLL_TIMEOUT, SOURCE, reason="consumer poll timeout has expired", details=_protocol_details(line)
    )


def _group_request_failed(kind: HeartbeatEventKind) -> EventBuilder:
    def build(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
        failure = _FAILURE_TEXT.search(line.message)
        text = failure.group(1).strip() if failure else ""
        text = text.removesuffix("Need to re-join the group.").strip() or None
        return line.event(
            kind,
            SOURCE,
            generation=_generation(line),
            member_id=_generation_member(line),
            error=error_name_in_text(line.message),
            reason=text,
            details=_protocol_details(line),
        )

    return build


def _joined(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.JOIN,
        SOURCE,
        generation=_generation(line),
        member_id=_generation_member(line),
        details=_protocol_details(line, phase="joined"),
    )


def _synced(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.SYNC,
        SOURCE,
        generation=_generation(line),
        member_id=_generation_member(line),
        details=_protocol_details(line),
    )


def _join_requested(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    reason = m.group(1).strip()
    member = _NEEDS_MEMBER_ID.search(reason)
    return line.event(
        Kind.JOIN,
        SOURCE,
        member_id=member.group(1) if member else None,
        error=error_name_in_text(reason),
        reason=reason or None,
        details=_protocol_details(line, phase="requested"),
    )


def _join_sent(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(Kind.JOIN, SOURCE, details=_protocol_details(line, phase="sent"))


def _offset_commit_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    partition, offset, text = m.groups()
    return line.event(
        Kind.COMMIT_FAILED,
        SOURCE,
        generation=_generation(line),
        member_id=_generation_member(line),
        error=error_name_in_text(line.message),
        reason=(text or "").strip() or None,
        details=_protocol_details(line, partition=partition, offset=offset),
    )


_COMMITTED_OFFSET = re.compile(r"([^\s{},=]+)=OffsetAndMetadata\{offset=(-?\d+)")


def _offsets_details(offsets: str | None) -> dict[str, str | None]:
    """`{orders-0=OffsetAndMetadata{offset=42, ...}, ...}` (a Java map of offsets) -> the partitions it names."""
    if not offsets:
        return {}
    partitions = [tp for tp, _offset in _COMMITTED_OFFSET.findall(offsets)]
    return {"offsets": offsets, "partitions": ",".join(partitions) or None, "partition_count": str(len(partitions))}


def _auto_commit_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """ConsumerCoordinator "(A)synchronous auto-commit of offsets {...} failed: <message>" and, at a rebalance's
    join prepare (3.3+), "Asynchronous auto-commit of offsets failed: <message>. Will continue to join group.";
    the KIP-848 CommitRequestManager "Auto-commit of offsets {...} failed" (3.9+/4.x; 3.7-3.8 "Asynchronous
    auto-commit of offsets {...} failed"), whose exception follows on the next line."""
    text = (m.group("message") or "").strip()
    mode = m.group("mode")
    return line.event(
        Kind.COMMIT_FAILED,
        SOURCE,
        error=error_name_in_text(line.message),
        reason=text or None,
        details=_protocol_details(
            line,
            commit_mode=mode.lower() if mode else "auto",
            join_prepare="true" if m.group("join") else None,
            **_offsets_details(m.group("offsets")),
        ),
    )


def _offset_commit_callback_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """ConsumerCoordinator's default callback of `commitAsync()` (2.x-4.x, ERROR): the exception (a
    CommitFailedException, RebalanceInProgressException...) is on the next line, or in the same record."""
    return line.event(
        Kind.COMMIT_FAILED,
        SOURCE,
        error=error_name_in_text(m.group("rest")),
        reason="commitAsync failed",
        details=_protocol_details(line, commit_mode="async", **_offsets_details(m.group("offsets"))),
    )


def _commit_cannot_complete(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.COMMIT_FAILED,
        SOURCE,
        error=error_name_in_text(line.message),
        reason=m.group(1).strip().rstrip("."),
        details=_protocol_details(line, exception="CommitFailedException"),
    )


def _commit_failed_not_in_group(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.COMMIT_FAILED,
        SOURCE,
        reason="consumer is not part of an active group",
        details=_protocol_details(line),
    )


def _committed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.COMMIT,
        SOURCE,
        generation=_generation(line),
        member_id=_generation_member(line),
        details=_protocol_details(line, offset=m.group(1), partition=m.group(2)),
    )


def _followup_immediate(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.FOLLOWUP_REBALANCE,
        SOURCE,
        reason=m.group(2).strip().rstrip("."),
        details=_protocol_details(line, requested_of=m.group(1), cause="tasks_changing_ownership"),
    )


def _probing_requested(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.PROBING_REBALANCE,
        SOURCE,
        reason="probe for caught-up replica tasks",
        details=_protocol_details(line, requested_of=m.group(1), scheduled_for=m.group(2)),
    )


def _fixed(kind: HeartbeatEventKind, reason: str, **extra: str) -> EventBuilder:
    def build(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
        scheduled = m.group(1) if m.re.groups else None
        return line.event(
            kind, SOURCE, reason=reason, details=_protocol_details(line, scheduled_for=scheduled, **extra)
        )

    return build


def _unstable_assignment(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    probing = "probing" in line.message
    return line.event(
        Kind.PROBING_REBALANCE if probing else Kind.FOLLOWUP_REBALANCE,
        SOURCE,
        reason="unstable assignment",
        details=_protocol_details(line),
    )


def _participants(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.ASSIGNMENT,
        SOURCE,
        details=_protocol_details(line, change="leader_assigning", client_nodes=m.group(1), consumers=m.group(2)),
    )


def _leader_finished_assignment(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.ASSIGNMENT,
        SOURCE,
        generation=int(m.group(1)),
        details=_protocol_details(line, change="leader_assigned", leader="true"),
    )


def _partitions_change(change: str) -> EventBuilder:
    def build(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
        partitions = m.group(1).strip().rstrip(".")
        return line.event(
            Kind.ASSIGNMENT,
            SOURCE,
            details=_protocol_details(
                line, change=change, partitions=partitions, partition_count=_partition_count(partitions)
            ),
        )

    return build


_COMMIT_PARTITION = re.compile(r"on partition (\S+) for offset (-?\d+)")
_COMMIT_FENCED_INSTANCE = re.compile(r"due to group instance id (\S+) fenced")


def _offset_commit_failed_response(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """A refused OffsetCommit: classic "OffsetCommit failed with Generation{...}: <message>" or "... due to group
    instance id I fenced" (ConsumerCoordinator), KIP-848 "OffsetCommit failed with E", "... for member M with stale
    member epoch error. Last epoch sent: N", "... due to group instance id fenced: I" (CommitRequestManager 3.8+;
    3.7 adds " on partition P for offset O", or says "OffsetCommit failed on partition P for offset O: <message>")."""
    rest = m.group("rest") or ""
    if m.group("stale_member"):
        error: str | None = E.STALE_MEMBER_EPOCH.name
    elif m.group("fenced_instance") or _COMMIT_FENCED_INSTANCE.search(rest):
        error = E.FENCED_INSTANCE_ID.name
    else:
        error = m.group("error") or error_name_in_text(rest)
    fenced = _COMMIT_FENCED_INSTANCE.search(rest)
    partition = _COMMIT_PARTITION.search(rest)
    message = rest.split(": ", 1)[1] if ": " in rest else None
    epoch = m.group("epoch")
    return line.event(
        Kind.COMMIT_FAILED,
        SOURCE,
        generation=_generation(line),
        member_id=_generation_member(line) or m.group("stale_member"),
        member_epoch=int(epoch) if epoch and epoch.lstrip("-").isdigit() else None,
        group_instance_id=instance_id_value(m.group("fenced_instance") or (fenced.group(1) if fenced else None)),
        error=error,
        reason=(message or "").strip() or None,
        details=_protocol_details(
            line,
            partition=partition.group(1) if partition else None,
            offset=partition.group(2) if partition else None,
        ),
    )


def _generation_cleared_before_sync(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """The heartbeat thread reset the generation while SyncGroup was in flight: the rebalance is marked failed.
    The Generation printed is the reset one (-1, no member), so it is not the sent generation."""
    return line.event(
        Kind.SYNC_FAILED,
        SOURCE,
        reason="generation reset by the heartbeat thread before the SyncGroup response",
        details=_protocol_details(line, member_state=m.group(1), generation_reset="true"),
    )


# KIP-848 clients (HeartbeatRequestManager 3.7-3.8 "GroupHeartbeatRequest ...", AbstractHeartbeatRequestManager /
# ConsumerHeartbeatRequestManager 3.9+/4.x "ConsumerGroupHeartbeatRequest ...", StreamsGroupHeartbeatRequestManager
# 4.1+): which heartbeat failures say what about membership. Errors are named "because of E: <response>" (retried)
# or, for the fatal ones (GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR, INVALID_REQUEST, UNSUPPORTED_VERSION),
# "due to E: <message>" / "due to unexpected error E: <message>".
# AbstractHeartbeatRequestManager 3.9+/4.x, StreamsGroupHeartbeatRequestManager 4.1+ (INFO): "... failed because the
# group coordinator C is incorrect. / is not available. / is still loading. Will ..." (the member keeps its membership).
_COORDINATOR_STATE_ERRORS = {
    "incorrect": E.NOT_COORDINATOR.name,
    "not available": E.COORDINATOR_NOT_AVAILABLE.name,
    "still loading": E.COORDINATOR_LOAD_IN_PROGRESS.name,
}


def _group_heartbeat_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    if m.group("fenced_member"):
        error, member = E.FENCED_MEMBER_EPOCH.name, m.group("fenced_member")
    elif m.group("unknown_member"):
        error, member = E.UNKNOWN_MEMBER_ID.name, m.group("unknown_member")
    elif m.group("instance_state"):
        fenced = m.group("instance_state") == "fenced"
        error, member = (E.FENCED_INSTANCE_ID.name if fenced else E.UNRELEASED_INSTANCE_ID.name), None
    elif m.group("coordinator_state"):
        error, member = _COORDINATOR_STATE_ERRORS[m.group("coordinator_state")], None
    else:
        error, member = m.group("error"), None
    epoch = m.group("epoch")
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        member_id=member,
        member_epoch=int(epoch) if epoch is not None else None,
        group_instance_id=instance_id_value(m.group("instance")),
        error=error,
        reason=f"{m.group('api')} failed with {error}",
        details=_protocol_details(
            line,
            api=m.group("api"),
            protocol=m.group("api").split("Group")[0].lower() or "consumer",
            coordinator=m.group("coordinator"),
            cause="coordinator_unavailable" if m.group("coordinator") else None,
        ),
    )


def _poll_timer_expired_rejoin(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    """KIP-848 client, at the poll() after the overrun: names the member (the earlier warning does not)."""
    return line.event(
        Kind.POLL_TIMEOUT,
        SOURCE,
        member_id=m.group(2),
        reason="max.poll.interval.ms exceeded",
        details=_protocol_details(line, exceeded_ms=m.group(1), late="true", protocol="consumer"),
    )


def _lost(reason: str, cause: str) -> EventBuilder:
    """A client saying it is no longer a member (the agent's `member_removed` with change=lost)."""

    def build(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
        partitions = m.group(1).strip().rstrip(".") if m.re.groups else None
        extra = {"partitions": partitions, "partition_count": _partition_count(partitions)} if partitions else {}
        return line.event(
            Kind.MEMBER_REMOVED,
            SOURCE,
            reason=reason,
            details=_protocol_details(line, change="lost", cause=cause, **extra),
        )

    return build


def _thread_replaced(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.LEAVE,
        SOURCE,
        reason="Replacing thread in the streams uncaught exception handler",
        details=_protocol_details(line, cause="thread_replaced"),
    )


_GENERATION_TEXT = r"Generation\{generationId=(-?\d+), memberId='([^']*)', protocol='([^']*)'\}"

# Order matters where one message quotes another (a LeaveGroup line quotes the poll-timeout sentence).
RULES = RuleTable.of(
    (
        MessageRule(
            "sending LeaveGroup request",
            re.compile(r"Member (\S+) sending LeaveGroup request to coordinator(?: (.*?))? due to (.*?)\s*$"),
            _leave_group_request,
        ),
        MessageRule(
            "LeaveGroup re",
            re.compile(
                r"LeaveGroup re(?:sponse|quest) with (.*?) (?:returned successfully.*|failed with error: (.*))$"
            ),
            _leave_group_response,
        ),
        MessageRule(
            "Attempt to heartbeat with",
            re.compile(
                r"Attempt to heartbeat with (stale )?(?:" + _GENERATION_TEXT + r"|(\S+)) and group instance id (\S+) "
                r"failed due to (\w+), (resetting generation|ignoring the error)"
            ),
            _heartbeat_attempt_failed,
        ),
        MessageRule(
            "Attempt to heartbeat failed",
            re.compile(r"Attempt to heartbeat failed (?:for )?(?:since )?(.*)$"),
            _heartbeat_failed_legacy,
        ),
        MessageRule(
            "Received successful Heartbeat response",
            re.compile(r"Received successful Heartbeat response"),
            _heartbeat_ok,
        ),
        MessageRule(
            "Ignoring heartbeat response with error",
            re.compile(r"Ignoring heartbeat response with error (\w+) during (\w+) state"),
            _heartbeat_error_ignored,
        ),
        MessageRule(
            "Caught fenced group.instance.id",
            re.compile(r"Caught fenced group\.instance\.id (\S+) error in heartbeat thread"),
            _fenced_instance_in_heartbeat,
        ),
        MessageRule(
            "error occurred in the heartbeat thread",
            re.compile(r"An? ((?:\w+ )*?)error occurred in the heartbeat thread"),
            _heartbeat_thread_error,
        ),
        MessageRule(
            "Unexpected error in heartbeat response",
            re.compile(r"Unexpected error in heartbeat response:?(.*)$"),
            _unexpected_heartbeat_error,
        ),
        MessageRule(
            "session timed out without receiving a heartbeat response",
            re.compile(r"session timed out without receiving a heartbeat response"),
            _session_timed_out,
        ),
        MessageRule(  # after the session-timeout cause above: any other cause
            "is unavailable or invalid due to cause",
            re.compile(
                r"Group coordinator (?P<coordinator>.+?) is unavailable or invalid due to cause: (?P<cause>.*?)\.? "
                r"isDisconnected: (?P<disc>\w+)"
            ),
            _coordinator_unavailable,
        ),
        MessageRule(
            "triggering callbacks to release assignment",
            re.compile(r"Member (\S+) is triggering callbacks to release assignment (.*?) and leave group"),
            _release_assignment_to_leave,
        ),
        MessageRule(
            "transitioned from",
            re.compile(r"Member (\S+) with epoch (-?\d+) transitioned from (\w+) to (\w+)"),
            _membership_transition,
        ),
        MessageRule(
            "transitioned to",
            re.compile(r"Member (\S+) with epoch (-?\d+) transitioned to (?:fatal|FATAL) state"),
            _member_fatal,
        ),
        MessageRule(
            "disconnected from the group coordinator for",
            re.compile(r"Consumer has been disconnected from the group coordinator for (\d+)ms"),
            _disconnected_from_coordinator,
        ),
        MessageRule(  # the classic consumer writes "consumer poll ...", the KIP-848 (async) one "Consumer poll ..."
            "poll timeout has expired", re.compile(r"[Cc]onsumer poll timeout has expired"), _poll_timeout
        ),
        MessageRule("SyncGroup failed", re.compile(r"SyncGroup failed"), _group_request_failed(Kind.SYNC_FAILED)),
        MessageRule("JoinGroup failed", re.compile(r"JoinGroup failed"), _group_request_failed(Kind.JOIN_FAILED)),
        MessageRule("Successfully joined group", re.compile(r"Successfully joined group with generation"), _joined),
        MessageRule("Successfully synced group", re.compile(r"Successfully synced group in generation"), _synced),
        MessageRule(
            "Request joining group due to", re.compile(r"Request joining group due to:? ?(.*)$"), _join_requested
        ),
        MessageRule("(Re-)joining group", re.compile(r"\(Re-\)joining group"), _join_sent),
        MessageRule(
            "Offset commit failed",
            re.compile(r"Offset commit failed(?: on partition (\S+) at offset (\d+))?:? ?(.*)$"),
            _offset_commit_failed,
        ),
        MessageRule(
            "uto-commit of offsets",
            re.compile(
                r"(?:(?P<mode>Asynchronous|Synchronous) a|A)uto-commit of offsets (?:(?P<offsets>\{[^\n]*\}) )?failed"
                r"(?:: (?P<message>[^\n]*?))?(?P<join>\.? Will continue to join group)?\.?[ \t]*(?:\n.*)?$",
                re.DOTALL,
            ),
            _auto_commit_failed,
        ),
        MessageRule(
            "Offset commit with offsets",
            re.compile(r"Offset commit with offsets (?P<offsets>\{[^\n]*\}) failed(?P<rest>.*)$", re.DOTALL),
            _offset_commit_callback_failed,
        ),
        MessageRule(
            "ommit cannot be completed",
            re.compile(r"(?:Offset c|C)ommit cannot be completed since (.*?)(?:;|$)"),
            _commit_cannot_complete,
        ),
        MessageRule(
            "Failing OffsetCommit request",
            re.compile(r"Failing OffsetCommit request since the consumer is not part of an active group"),
            _commit_failed_not_in_group,
        ),
        MessageRule("Committed offset", re.compile(r"Committed offset (\d+) for partition (\S+)"), _committed),
        MessageRule(
            "OffsetCommit failed",
            re.compile(
                r"OffsetCommit failed (?:with (?:" + _GENERATION_TEXT + r"|(?P<error>[A-Z][A-Z_]+\b))"
                r"|for member (?P<stale_member>\S+) with stale member epoch error\. Last epoch sent: (?P<epoch>\S+)"
                r"|due to group instance id fenced: (?P<fenced_instance>\S+)|(?=on partition ))(?P<rest>.*)$"
            ),
            _offset_commit_failed_response,
        ),
        MessageRule(
            "before receiving SyncGroup response",
            re.compile(
                r"Generation data was cleared by heartbeat thread to .* and state is now (\w+) before receiving "
                r"SyncGroup response"
            ),
            _generation_cleared_before_sync,
        ),
        MessageRule(
            "GroupHeartbeat",
            re.compile(
                r"(?P<api>(?:Consumer|Streams|Share)?GroupHeartbeat(?:Request)?) failed "
                r"(?:for member (?P<fenced_member>\S+) because epoch (?P<epoch>-?\d+) is fenced"
                r"|because member (?P<unknown_member>\S+?)\.? is unknown"
                r"|due to (?P<instance_state>fenced|unreleased) instance id (?P<instance>[^\s:]+)"
                r"|(?:because of|due to(?: unexpected error)?) (?P<error>[A-Z][A-Z_]+):"
                r"|because the group coordinator (?P<coordinator>.+?) is (?P<coordinator_state>incorrect|not available"
                r"|still loading)\.)"
            ),
            _group_heartbeat_failed,
        ),
        MessageRule(
            "will rejoin the group now",
            re.compile(r"exceeded approximately by (\d+) ms\. Member (\S+) will rejoin the group now"),
            _poll_timer_expired_rejoin,
        ),
        MessageRule(
            "Requesting followup rebalance be scheduled immediately",
            re.compile(r"Requesting followup rebalance be scheduled immediately by (\S+) due to (.*)$"),
            _followup_immediate,
        ),
        MessageRule(
            "to probe for caught-up replica tasks",
            re.compile(
                r"Requesting followup rebalance be scheduled by (\S+) for (.+?) to probe for caught-up replica tasks"
            ),
            _probing_requested,
        ),
        MessageRule(
            "to be safely revoked from current owner",
            re.compile(
                r"Requested to schedule immediate rebalance for new tasks to be safely revoked from current owner"
            ),
            _fixed(Kind.FOLLOWUP_REBALANCE, "tasks to be safely revoked from current owner"),
        ),
        MessageRule(
            "Requested to schedule next probing rebalance",
            re.compile(r"Requested to schedule next probing rebalance at (.+?) to try for a more balanced assignment"),
            _fixed(Kind.PROBING_REBALANCE, "try for a more balanced assignment"),
        ),
        MessageRule(
            "Requested to schedule probing rebalance",
            re.compile(r"Requested to schedule probing rebalance for (\d+ ?ms)"),
            _fixed(Kind.PROBING_REBALANCE, "try for a more balanced assignment"),
        ),
        MessageRule(
            "rebalance due to version probing",
            re.compile(r"Requested to schedule immediate rebalance due to version probing"),
            _fixed(Kind.VERSION_PROBING, "version probing"),
        ),
        MessageRule(
            "version probing)",
            re.compile(r"\(successful version probing\)|future \(version probing\) subscription"),
            _fixed(Kind.VERSION_PROBING, "version probing"),
        ),
        MessageRule(
            "update group with new host endpoint",
            re.compile(r"Requested to schedule immediate rebalance to update group with new host endpoint"),
            _fixed(Kind.FOLLOWUP_REBALANCE, "update group with new host endpoint", cause="host_endpoint_change"),
        ),
        MessageRule(
            "Triggering the followup rebalance scheduled for",
            re.compile(r"Triggering the followup rebalance scheduled for (.+?)\.?\s*$"),
            _fixed(Kind.FOLLOWUP_REBALANCE, "scheduled followup rebalance triggered"),
        ),
        MessageRule(
            "Finished unstable assignment", re.compile(r"Finished unstable assignment of tasks"), _unstable_assignment
        ),
        MessageRule(  # StreamsRebalanceListener 2.8+/3.x/4.x (ERROR): the assignment carried SHUTDOWN_REQUESTED
            "is requesting to shutdown the application",
            re.compile(r"A Kafka Streams client in this Kafka Streams application is requesting to shutdown"),
            _fixed(Kind.SHUTDOWN_REQUESTED, "a client requested the application to shut down"),
        ),
        MessageRule(  # StreamsGroupHeartbeatRequestManager 4.1+ (WARN), the coordinator's SHUTDOWN_APPLICATION status
            "requested a shutdown for the entire application",
            re.compile(r"Membership is in the following statuses: .*requested a shutdown for the entire application"),
            _fixed(Kind.SHUTDOWN_REQUESTED, "a member requested the application to shut down", protocol="streams"),
        ),
        MessageRule(  # StreamsRebalanceListener 3.x/4.x (INFO): AssignorError.VERSION_PROBING in the assignment
            "Received version probing code",
            re.compile(r"Received version probing code VERSION_PROBING"),
            _fixed(Kind.VERSION_PROBING, "version probing"),
        ),
        MessageRule(  # StreamThread 3.x/4.x (INFO): a corrupted task enforces a rebalance
            "got corrupted. Triggering a rebalance",
            re.compile(r"Active task\(s\) got corrupted\. Triggering a rebalance"),
            _fixed(Kind.FOLLOWUP_REBALANCE, "active tasks corrupted", cause="task_corrupted"),
        ),
        MessageRule(  # StreamThread 3.x/4.x (WARN): TaskMigratedException, the thread dropped out of the group
            "Detected that the thread is being fenced",
            re.compile(r"Detected that the thread is being fenced"),
            _lost("thread fenced: it missed a rebalance and dropped out of the consumer group", "task_migrated"),
        ),
        MessageRule(
            "Detected that shutdown was requested",
            re.compile(r"Detected that shutdown was requested"),
            _fixed(Kind.SHUTDOWN_REQUESTED, "shutdown requested"),
        ),
        MessageRule(
            "participating in this rebalance",
            re.compile(r"(\d+) client nodes and (\d+) consumers participating in this rebalance"),
            _participants,
        ),
        MessageRule(
            "Finished assignment for group at generation",
            re.compile(r"Finished assignment for group at generation (-?\d+)"),
            _leader_finished_assignment,
        ),
        MessageRule(
            "Notifying assignor about the new Assignment",
            re.compile(r"Notifying assignor about the new Assignment\(partitions=(\[[^\]]*\])"),
            _partitions_change("received"),
        ),
        MessageRule(
            "Adding newly assigned partitions",
            re.compile(r"Adding newly assigned partitions:? ?(.*)$"),
            _partitions_change("assigned"),
        ),
        MessageRule(
            "Revoke previously assigned partitions",
            re.compile(r"Revoke previously assigned partitions:? ?(.*)$"),
            _partitions_change("revoked"),
        ),
        MessageRule(  # onPartitionsLost: the member was fenced or expired (the agent's member_removed, lost)
            "Lost previously assigned partitions",
            re.compile(r"Lost previously assigned partitions:? ?(.*)$"),
            _lost("partitions lost", "generation_reset"),
        ),
        MessageRule(
            "Replacing thread in the streams uncaught exception handler",
            re.compile(r"Replacing thread in the streams uncaught exception handler"),
            _thread_replaced,
        ),
    )
)


def looks_like_client_log(text: str) -> bool:
    """Whether a line carries a consumer/Streams logging marker (for counting unrecognised lines per source)."""
    return any(marker in text for marker in CLIENT_MARKERS)


def parse_client_message(line: LogLine) -> HeartbeatEvent | None:
    """The heartbeat event of a client log line already split into its envelope, or None (consumer wording first,
    then the Kafka Streams application's own, `streams_log`)."""
    return apply_rules(RULES, line) or parse_streams_message(line)


def parse_client_log_line(text: str, record_timestamp_ms: int, tz: str = "UTC") -> ParseOutcome:
    """One plain-text consumer/Streams log line -> outcome (the line's own time, else the record's)."""
    event = parse_client_message(split_log_line(text, record_timestamp_ms, tz))
    if event is None:
        return ParseOutcome.unrecognised(SOURCE, "no known consumer or Streams message")
    return ParseOutcome((event,), SOURCE)
