"""Kafka group-protocol frames mirrored by a tap or proxy -> heartbeat events (`source = protocol`).

Brokers do not publish heartbeats, but a proxy (or a packet tap that reassembles TCP) sees every one. It ships
each frame, or each request/response exchange, as one telemetry record in the `radar.frame/1` envelope
(`transforms.wire.frame_envelope`), and this detector decodes it with `transforms.wire`.

A response alone says how a call ended but not who made it (a Heartbeat response is just an error code), so a
tap that pairs requests and responses by correlation id should prefer kind 2: the exchange's event carries the
request's group, member and generation/epoch with the response's error — what zombie and expiry rules need.

Events: Heartbeat -> heartbeat / heartbeat_failed; JoinGroup -> join / join_failed; SyncGroup -> sync /
sync_failed (+ assignment when the classic `consumer` assignment decodes); LeaveGroup -> leave (one per member);
OffsetCommit -> commit / commit_failed; Consumer/Streams/ShareGroupHeartbeat -> join (epoch 0), leave (epoch -1,
-2), heartbeat, heartbeat_failed, + assignment when the response carries one; DescribeGroups /
ConsumerGroupDescribe / StreamsGroupDescribe responses -> a describe snapshot: one `heartbeat` per member
(`details.snapshot` = the API name, with state, member count, epochs, assignment), or `group_empty` for a group
without members. Error names come from `transforms.wire.error_codes`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent, ParseOutcome, RecordContext, partition_list
from rebalance_radar.transforms.wire.consumer_protocol import decode_assignment
from rebalance_radar.transforms.wire.error_codes import error_name
from rebalance_radar.transforms.wire.errors import DecodeError
from rebalance_radar.transforms.wire.frame_envelope import (
    FRAMING_BODY,
    FRAMING_SIZED,
    MAGIC,
    FrameEnvelope,
    decode_frame_envelope,
)
from rebalance_radar.transforms.wire.frames import (
    APIS,
    Direction,
    ProtocolFrame,
    decode_body,
    decode_request,
    decode_response,
)

SOURCE = TelemetrySource.PROTOCOL
Kind = HeartbeatEventKind


def _decode_frame(envelope: FrameEnvelope, direction: Direction, data: bytes) -> ProtocolFrame:
    """One frame of the envelope with the codec, honouring its framing; the envelope's API decides responses."""
    api, version, framing = envelope.api_key, envelope.api_version, envelope.framing
    if framing == FRAMING_BODY:
        body, end = decode_body(api, version, direction, data)
        return ProtocolFrame(api, APIS[api].name, version, direction, None, body, None, len(data) - end)
    if direction == "request":
        frame = decode_request(data, sized=framing == FRAMING_SIZED)
        if frame.api_key != api or frame.api_version != version:
            raise DecodeError(
                f"request header says API {frame.api_key} v{frame.api_version}, envelope {api} v{version}",
                part="radar.frame/1",
            )
        return frame
    return decode_response(data, api, version, sized=framing == FRAMING_SIZED)


@dataclass(frozen=True, slots=True)
class _Call:
    """What the events of one record share: time, who, and the decoded request/response bodies."""

    time_ms: int
    api: str
    api_version: int
    peer: str | None
    client_id: str | None
    request: dict[str, Any] | None
    response: dict[str, Any] | None

    def event(
        self,
        kind: HeartbeatEventKind,
        *,
        group_id: str | None,
        member_id: str | None = None,
        group_instance_id: str | None = None,
        generation: int | None = None,
        member_epoch: int | None = None,
        error: str | None = None,
        reason: str | None = None,
        client_id: str | None = None,
        host: str | None = None,
        details: dict[str, str] | None = None,
    ) -> HeartbeatEvent:
        base = {"api": self.api, "api_version": str(self.api_version), "observed": self._observed()}
        if self.peer:
            base["peer"] = self.peer
        return HeartbeatEvent(
            event_time=self.time_ms,
            group_id=group_id or None,
            member_id=member_id or None,
            group_instance_id=group_instance_id,
            generation=generation,
            member_epoch=member_epoch,
            event=kind,
            error=error,
            reason=reason,
            client_id=client_id or self.client_id,
            host=host or _peer_host(self.peer),
            source=SOURCE,
            details={**base, **(details or {})},
        )

    def _observed(self) -> str:
        if self.request is not None and self.response is not None:
            return "exchange"
        return "request" if self.request is not None else "response"


def _peer_host(peer: str | None) -> str | None:
    if not peer:
        return None
    host, sep, port = peer.rpartition(":")
    return host.strip("[]") if sep and port.isdigit() else peer


def _assignment_details(pairs: Iterable[tuple[str, Iterable[int]]], prefix: str = "") -> dict[str, str]:
    text, count = partition_list(pairs)
    return {f"{prefix}assignment": text, f"{prefix}assigned_partitions": str(count)}


def _topic_partitions(assignment: dict[str, Any] | None) -> list[tuple[str, list[int]]]:
    """KIP-848 `Assignment.topicPartitions` (topic ids; names when a describe response has them)."""
    if not assignment:
        return []
    return [
        (str(tp.get("topicName") or tp.get("topicId")), list(tp.get("partitions") or []))
        for tp in assignment.get("topicPartitions") or []
    ]


def _tasks(tasks: list[dict[str, Any]] | None) -> list[tuple[str, list[int]]]:
    """Streams task ids: subtopology and partitions (a task is `<subtopology>_<partition>`)."""
    return [(str(task.get("subtopologyId")), list(task.get("partitions") or [])) for task in tasks or []]


def _classic_assignment(payload: bytes | None) -> dict[str, str] | None:
    if not payload:
        return None
    decoded = decode_assignment(payload)
    if decoded.data is None:
        return None
    pairs = [(str(tp.get("topic")), tp.get("partitions") or []) for tp in decoded.data.get("assignedPartitions") or []]
    return _assignment_details(pairs)


# --- per API -------------------------------------------------------------------------------------------------


def _heartbeat(call: _Call) -> list[HeartbeatEvent]:
    req, resp = call.request or {}, call.response
    error = error_name(resp.get("errorCode")) if resp is not None else None
    kind = Kind.HEARTBEAT_FAILED if error else Kind.HEARTBEAT
    return [
        call.event(
            kind,
            group_id=req.get("groupId"),
            member_id=req.get("memberId"),
            group_instance_id=req.get("groupInstanceId"),
            generation=req.get("generationId"),
            error=error,
        )
    ]


def _join_group(call: _Call) -> list[HeartbeatEvent]:
    req, resp = call.request or {}, call.response
    details: dict[str, str] = {}
    for key, name in (
        ("protocolType", "protocol_type"),
        ("sessionTimeoutMs", "session_timeout_ms"),
        ("rebalanceTimeoutMs", "rebalance_timeout_ms"),
    ):
        if req.get(key) is not None:
            details[name] = str(req[key])
    member_id, generation, error = req.get("memberId"), None, None
    if resp is not None:
        error = error_name(resp.get("errorCode"))
        member_id = resp.get("memberId") or member_id
        generation = resp.get("generationId") if not error else None
        if resp.get("leader"):
            details["leader"] = str(resp["leader"])
            details["is_leader"] = "true" if resp["leader"] == resp.get("memberId") else "false"
        if resp.get("protocolName"):
            details["protocol"] = str(resp["protocolName"])
        if resp.get("members"):
            details["members"] = str(len(resp["members"]))
    return [
        call.event(
            Kind.JOIN_FAILED if error else Kind.JOIN,
            group_id=req.get("groupId"),
            member_id=member_id,
            group_instance_id=req.get("groupInstanceId"),
            generation=generation,
            error=error,
            reason=req.get("reason"),
            details=details,
        )
    ]


def _sync_group(call: _Call) -> list[HeartbeatEvent]:
    req, resp = call.request or {}, call.response
    error = error_name(resp.get("errorCode")) if resp is not None else None
    details: dict[str, str] = {}
    if req.get("assignments"):
        details["leader_assignments"] = str(len(req["assignments"]))
    who = {
        "group_id": req.get("groupId"),
        "member_id": req.get("memberId"),
        "group_instance_id": req.get("groupInstanceId"),
        "generation": req.get("generationId"),
    }
    events = [call.event(Kind.SYNC_FAILED if error else Kind.SYNC, error=error, details=details, **who)]
    if resp is not None and not error and (req.get("protocolType") in (None, "consumer")):
        assignment = _classic_assignment(resp.get("assignment"))
        if assignment is not None:
            events.append(call.event(Kind.ASSIGNMENT, details=assignment, **who))
    return events


def _leave_group(call: _Call) -> list[HeartbeatEvent]:
    req, resp = call.request or {}, call.response or {}
    group_error = error_name(resp.get("errorCode"))
    results = {m.get("memberId"): m for m in resp.get("members") or []}
    members = req.get("members") or ([{"memberId": req.get("memberId")}] if "memberId" in req else [])
    if not members:  # a response alone: its per-member results are all we know
        members = list(results.values()) or [{"memberId": None}]
    events = []
    for member in members:
        result = results.get(member.get("memberId"), {})
        events.append(
            call.event(
                Kind.LEAVE,
                group_id=req.get("groupId"),
                member_id=member.get("memberId"),
                group_instance_id=member.get("groupInstanceId"),
                error=group_error or error_name(result.get("errorCode")),
                reason=member.get("reason"),
            )
        )
    return events


def _offset_commit(call: _Call) -> list[HeartbeatEvent]:
    req, resp = call.request or {}, call.response
    committed = [
        (str(t.get("name") or t.get("topicId")), [p.get("partitionIndex") for p in t.get("partitions") or []])
        for t in req.get("topics") or []
    ]
    failed: list[tuple[str, list[int]]] = []
    error = None
    for topic in (resp or {}).get("topics") or []:
        bad = [p for p in topic.get("partitions") or [] if p.get("errorCode")]
        if bad:
            error = error or error_name(bad[0]["errorCode"])
            failed.append((str(topic.get("name") or topic.get("topicId")), [p.get("partitionIndex") for p in bad]))
    if resp is not None and not committed:
        committed = [
            (str(t.get("name") or t.get("topicId")), [p.get("partitionIndex") for p in t.get("partitions") or []])
            for t in resp.get("topics") or []
        ]
    text, count = partition_list(committed)
    details = {"partitions": text, "partition_count": str(count)}
    if failed:
        details["failed_partitions"] = partition_list(failed)[0]
    generation = req.get("generationIdOrMemberEpoch")
    if generation is not None:
        details["generation_or_member_epoch"] = str(generation)
    return [
        call.event(
            Kind.COMMIT_FAILED if error else Kind.COMMIT,
            group_id=req.get("groupId"),
            member_id=req.get("memberId"),
            group_instance_id=req.get("groupInstanceId"),
            generation=generation if generation is not None and generation >= 0 else None,
            error=error,
            details=details,
        )
    ]


def _group_heartbeat(call: _Call) -> list[HeartbeatEvent]:
    """Consumer/Streams/ShareGroupHeartbeat (KIP-848/1071/932): the member epoch says join, leave or beat."""
    req, resp = call.request or {}, call.response
    sent_epoch = req.get("memberEpoch")
    error = error_name(resp.get("errorCode")) if resp is not None else None
    if sent_epoch is not None and sent_epoch < 0:
        kind = Kind.LEAVE
    elif sent_epoch == 0:
        kind = Kind.JOIN_FAILED if error else Kind.JOIN
    else:
        kind = Kind.HEARTBEAT_FAILED if error else Kind.HEARTBEAT
    member_id = (resp or {}).get("memberId") or req.get("memberId")
    epoch = (resp or {}).get("memberEpoch") if resp is not None and not error else sent_epoch
    details: dict[str, str] = {}
    if sent_epoch is not None:
        details["sent_member_epoch"] = str(sent_epoch)
    if sent_epoch == -2:
        details["static_leave"] = "true"
    if resp is not None and resp.get("errorMessage"):
        details["error_message"] = str(resp["errorMessage"])
    who = {
        "group_id": req.get("groupId"),
        "member_id": member_id,
        "group_instance_id": req.get("instanceId"),
        "member_epoch": epoch,
    }
    events = [call.event(kind, error=error, reason=req.get("reason"), details=details, **who)]
    if resp is not None and not error:
        pairs: list[tuple[str, list[int]]] | None = None
        if isinstance(resp.get("assignment"), dict):
            pairs = _topic_partitions(resp["assignment"])
        elif resp.get("activeTasks") is not None:
            pairs = _tasks(resp.get("activeTasks"))
        if pairs is not None:
            extra = _assignment_details(pairs)
            if resp.get("activeTasks") is not None:
                extra["standby_tasks"] = partition_list(_tasks(resp.get("standbyTasks")))[0]
                extra["warmup_tasks"] = partition_list(_tasks(resp.get("warmupTasks")))[0]
            events.append(call.event(Kind.ASSIGNMENT, details=extra, **who))
    return events


def _describe(call: _Call) -> list[HeartbeatEvent]:
    """A describe response: a snapshot of each group, one event per member."""
    resp = call.response or {}
    events: list[HeartbeatEvent] = []
    for group in resp.get("groups") or []:
        error = error_name(group.get("errorCode"))
        state = group.get("groupState") or ""
        if error or state in ("Dead", "DEAD", ""):
            continue  # a group the coordinator does not know (or may not show) has nothing to snapshot
        members = group.get("members") or []
        snapshot = {"snapshot": call.api, "state": state, "members": str(len(members))}
        for key, name in (
            ("protocolType", "protocol_type"),
            ("protocolData", "protocol"),
            ("groupEpoch", "group_epoch"),
            ("assignmentEpoch", "assignment_epoch"),
            ("assignorName", "assignor"),
        ):
            if group.get(key) not in (None, ""):
                snapshot[name] = str(group[key])
        group_id = group.get("groupId")
        if not members:
            events.append(call.event(Kind.GROUP_EMPTY, group_id=group_id, details=snapshot))
            continue
        for member in members:
            details = dict(snapshot)
            if "memberAssignment" in member:
                details.update(_classic_assignment(member.get("memberAssignment")) or {})
            elif isinstance(member.get("assignment"), dict) and "topicPartitions" in member["assignment"]:
                details.update(_assignment_details(_topic_partitions(member["assignment"])))
                details.update(_assignment_details(_topic_partitions(member.get("targetAssignment")), "target_"))
            elif isinstance(member.get("assignment"), dict):
                details.update(_assignment_details(_tasks(member["assignment"].get("activeTasks"))))
            if member.get("processId"):
                details["process_id"] = str(member["processId"])
            events.append(
                call.event(
                    Kind.HEARTBEAT,
                    group_id=group_id,
                    member_id=member.get("memberId"),
                    group_instance_id=member.get("groupInstanceId") or member.get("instanceId"),
                    member_epoch=member.get("memberEpoch"),
                    client_id=member.get("clientId"),
                    host=(member.get("clientHost") or "").lstrip("/") or None,
                    details=details,
                )
            )
    return events


_HANDLERS: dict[str, Callable[[_Call], list[HeartbeatEvent]]] = {
    "Heartbeat": _heartbeat,
    "JoinGroup": _join_group,
    "SyncGroup": _sync_group,
    "LeaveGroup": _leave_group,
    "OffsetCommit": _offset_commit,
    "ConsumerGroupHeartbeat": _group_heartbeat,
    "StreamsGroupHeartbeat": _group_heartbeat,
    "ShareGroupHeartbeat": _group_heartbeat,
    "DescribeGroups": _describe,
    "ConsumerGroupDescribe": _describe,
    "StreamsGroupDescribe": _describe,
}
_RESPONSE_ONLY = frozenset({"DescribeGroups", "ConsumerGroupDescribe", "StreamsGroupDescribe"})


def frame_events(envelope: FrameEnvelope, record_timestamp_ms: int) -> ParseOutcome:
    """Decode the frames of one envelope and turn them into events; never raises on the bytes."""
    api = APIS.get(envelope.api_key)
    if api is None or api.name not in _HANDLERS:
        return ParseOutcome.unrecognised(SOURCE, f"API {envelope.api_key} carries no group telemetry")
    try:
        request = _decode_frame(envelope, "request", envelope.request) if envelope.request is not None else None
        response = _decode_frame(envelope, "response", envelope.response) if envelope.response is not None else None
    except DecodeError as failure:
        return ParseOutcome.unrecognised(SOURCE, f"undecodable {api.name} frame: {failure.kind}: {failure}")
    if api.name in _RESPONSE_ONLY and response is None:
        return ParseOutcome.unrecognised(SOURCE, f"{api.name} request carries no group state")
    client_id = envelope.client_id
    if client_id is None and request is not None and request.header is not None:
        client_id = request.header.get("clientId")
    call = _Call(
        time_ms=envelope.time_ms if envelope.time_ms >= 0 else record_timestamp_ms,
        api=api.name,
        api_version=envelope.api_version,
        peer=envelope.peer,
        client_id=client_id,
        request=request.body if request is not None else None,
        response=response.body if response is not None else None,
    )
    events = _HANDLERS[api.name](call)
    if not events:
        return ParseOutcome.unrecognised(SOURCE, f"{api.name} response describes no live group")
    return ParseOutcome(tuple(events), SOURCE)


def protocol_frame_detector(value: bytes, context: RecordContext) -> ParseOutcome | None:
    """`RecordDetector` for `radar.frame/1` records: None (not mine) unless the value starts with the magic."""
    if value[:4] != MAGIC:
        return None
    try:
        envelope = decode_frame_envelope(value)
    except DecodeError as failure:
        return ParseOutcome.unrecognised(SOURCE, f"bad radar.frame/1 envelope: {failure}")
    return frame_events(envelope, context.record_timestamp_ms)
