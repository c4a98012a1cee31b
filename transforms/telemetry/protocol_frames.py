"""Kafka group-protocol frames mirrored by a tap or proxy -> heartbeat events (`source = protocol`).

Brokers do not publish heartbeats, but a proxy (or a packet tap that reassembles TCP) sees every one. It ships
each frame, or each request/response exchange, as one telemetry record in the `radar.frame/1` envelope below,
and this detector decodes it with `transforms.wire`.

Envelope `radar.frame/1` (the whole Kafka record value; big-endian; the record key is free for the tap):

    offset size  field
    0      4     magic b"\\xffRF1"    0xFF never occurs in UTF-8, so no text record is ever mistaken for a frame
    4      1     kind                0 = request, 1 = response, 2 = exchange (request + its response)
    5      1     framing             0 = as on the wire (int32 size + header + body), 1 = header + body,
                                     2 = body only (no header: the tap decoded it already)
    6      2     api_key             int16; for a response, the API of the request it answers
    8      2     api_version         int16; for a response, the version of the request it answers
    10     8     time_ms             int64 epoch ms of the capture; -1 = use the Kafka record timestamp
    18     2+n   peer                int16 length (-1 = null) + UTF-8: the client's address as the tap saw it
    ..     2+n   client_id           int16 length (-1 = null) + UTF-8: for frames without a request header
    ..           payload             kind 0/1: the frame; kind 2: int32 request length + request frame,
                                     then the response frame

A response alone says how a call ended but not who made it (a Heartbeat response is just an error code), so a
tap that pairs requests and responses by correlation id should prefer kind 2: the exchange's event carries the
request's group, member and generation/epoch with the response's error — what zombie and expiry rules need.

Events: Heartbeat -> heartbeat / heartbeat_failed; JoinGroup -> join / join_failed; SyncGroup -> sync /
sync_failed (+ assignment when the classic `consumer` assignment decodes); LeaveGroup -> leave (one per member);
OffsetCommit -> commit / commit_failed; Consumer/Streams/ShareGroupHeartbeat -> join (epoch 0), leave (epoch -1,
-2), heartbeat, heartbeat_failed, + assignment when the response carries one; DescribeGroups /
ConsumerGroupDescribe / StreamsGroupDescribe responses -> a describe snapshot: one `heartbeat` per member
(`details.snapshot` = the API name, with state, member count, epochs, assignment), or `group_empty` for a group
without members. Error names come from `ERROR_NAME_BY_CODE` (the group-related codes of Kafka's `Errors`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from transforms.schemas import HeartbeatEventKind, TelemetrySource
from transforms.telemetry.events import HeartbeatEvent, ParseOutcome
from transforms.wire.consumer_protocol import decode_assignment
from transforms.wire.errors import DecodeError
from transforms.wire.frames import APIS, Direction, ProtocolFrame, decode_body, decode_request, decode_response

if TYPE_CHECKING:  # record_parser registers this detector, so it cannot be imported from here at run time
    from transforms.telemetry.record_parser import RecordContext

SOURCE = TelemetrySource.PROTOCOL
Kind = HeartbeatEventKind

MAGIC = b"\xffRF1"
KIND_REQUEST, KIND_RESPONSE, KIND_EXCHANGE = 0, 1, 2
FRAMING_SIZED, FRAMING_HEADER, FRAMING_BODY = 0, 1, 2
_FIXED = struct.Struct(">4sBBhhq")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
# Partitions listed in `details.assignment`; longer assignments are cut (the count is kept in full).
MAX_LISTED_PARTITIONS = 256

# Kafka `Errors` codes that group and offset-commit calls return (org.apache.kafka.common.protocol.Errors).
ERROR_NAME_BY_CODE: dict[int, str] = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    7: "REQUEST_TIMED_OUT",
    12: "OFFSET_METADATA_TOO_LARGE",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    22: "ILLEGAL_GENERATION",
    23: "INCONSISTENT_GROUP_PROTOCOL",
    24: "INVALID_GROUP_ID",
    25: "UNKNOWN_MEMBER_ID",
    26: "INVALID_SESSION_TIMEOUT",
    27: "REBALANCE_IN_PROGRESS",
    28: "INVALID_COMMIT_OFFSET_SIZE",
    29: "TOPIC_AUTHORIZATION_FAILED",
    30: "GROUP_AUTHORIZATION_FAILED",
    35: "UNSUPPORTED_VERSION",
    42: "INVALID_REQUEST",
    68: "NON_EMPTY_GROUP",
    69: "GROUP_ID_NOT_FOUND",
    79: "MEMBER_ID_REQUIRED",
    81: "GROUP_MAX_SIZE_REACHED",
    82: "FENCED_INSTANCE_ID",
    86: "GROUP_SUBSCRIBED_TO_TOPIC",
    88: "UNSTABLE_OFFSET_COMMIT",
    100: "UNKNOWN_TOPIC_ID",
    110: "FENCED_MEMBER_EPOCH",
    111: "UNRELEASED_INSTANCE_ID",
    112: "UNSUPPORTED_ASSIGNOR",
    113: "STALE_MEMBER_EPOCH",
    128: "INVALID_REGULAR_EXPRESSION",
    130: "STREAMS_INVALID_TOPOLOGY",
    131: "STREAMS_INVALID_TOPOLOGY_EPOCH",
    132: "STREAMS_TOPOLOGY_FENCED",
}


def error_name(code: int | None) -> str | None:
    """Kafka's name for an error code; None for no error, `ERROR_<code>` for a code outside the table."""
    if not code:
        return None
    return ERROR_NAME_BY_CODE.get(code, f"ERROR_{code}")


@dataclass(frozen=True, slots=True)
class FrameEnvelope:
    """One `radar.frame/1` record, unpacked but not yet decoded."""

    kind: int
    framing: int
    api_key: int
    api_version: int
    time_ms: int
    peer: str | None
    client_id: str | None
    request: bytes | None
    response: bytes | None


def _write_text(out: bytearray, text: str | None) -> None:
    if text is None:
        out += _INT16.pack(-1)
        return
    raw = text.encode("utf-8")
    out += _INT16.pack(len(raw)) + raw


def encode_frame_envelope(
    *,
    api_key: int,
    api_version: int,
    request: bytes | None = None,
    response: bytes | None = None,
    framing: int = FRAMING_SIZED,
    time_ms: int = -1,
    peer: str | None = None,
    client_id: str | None = None,
) -> bytes:
    """The record value a tap emits for a request, a response, or both (an exchange)."""
    if request is None and response is None:
        raise ValueError("a frame envelope needs a request, a response or both")
    kind = KIND_EXCHANGE if request is not None and response is not None else KIND_REQUEST if response is None else 1
    out = bytearray(_FIXED.pack(MAGIC, kind, framing, api_key, api_version, time_ms))
    _write_text(out, peer)
    _write_text(out, client_id)
    if kind == KIND_EXCHANGE:
        assert request is not None and response is not None
        out += _INT32.pack(len(request)) + request + response
    else:
        out += request if request is not None else response  # type: ignore[operator]
    return bytes(out)


def _read_text(data: bytes, pos: int) -> tuple[str | None, int]:
    if len(data) < pos + 2:
        raise DecodeError("envelope truncated in a string length", offset=pos, part="radar.frame/1")
    (length,) = _INT16.unpack_from(data, pos)
    pos += 2
    if length < 0:
        return None, pos
    if len(data) < pos + length:
        raise DecodeError("envelope truncated in a string", offset=pos, part="radar.frame/1")
    return data[pos : pos + length].decode("utf-8", errors="replace"), pos + length


def decode_frame_envelope(data: bytes) -> FrameEnvelope:
    """Unpack the envelope; a DecodeError says what is wrong with it (the frames inside are not read yet)."""
    if len(data) < _FIXED.size:
        raise DecodeError("envelope shorter than its fixed header", offset=len(data), part="radar.frame/1")
    magic, kind, framing, api_key, api_version, time_ms = _FIXED.unpack_from(data, 0)
    if magic != MAGIC:
        raise DecodeError("not a radar.frame/1 envelope", offset=0, part="radar.frame/1")
    if kind not in (KIND_REQUEST, KIND_RESPONSE, KIND_EXCHANGE) or framing not in (0, 1, 2):
        raise DecodeError(f"unknown kind {kind} or framing {framing}", offset=4, part="radar.frame/1")
    peer, pos = _read_text(data, _FIXED.size)
    client_id, pos = _read_text(data, pos)
    request = response = None
    if kind == KIND_EXCHANGE:
        if len(data) < pos + 4:
            raise DecodeError("envelope truncated in the request length", offset=pos, part="radar.frame/1")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or len(data) < pos + length:
            raise DecodeError("request length beyond the record", offset=pos, part="radar.frame/1")
        request, response = data[pos : pos + length], data[pos + length :]
    elif kind == KIND_REQUEST:
        request = data[pos:]
    else:
        response = data[pos:]
    return FrameEnvelope(kind, framing, api_key, api_version, time_ms, peer, client_id, request, response)


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


def _partition_list(pairs: Iterable[tuple[str, Iterable[int]]]) -> tuple[str, int]:
    """`topic-0,topic-1,...` (cut at MAX_LISTED_PARTITIONS) and the full partition count."""
    listed: list[str] = []
    count = 0
    for topic, partitions in pairs:
        for partition in partitions or ():
            count += 1
            if len(listed) < MAX_LISTED_PARTITIONS:
                listed.append(f"{topic}-{partition}")
    return ",".join(listed), count


def _assignment_details(pairs: Iterable[tuple[str, Iterable[int]]], prefix: str = "") -> dict[str, str]:
    text, count = _partition_list(pairs)
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
    text, count = _partition_list(committed)
    details = {"partitions": text, "partition_count": str(count)}
    if failed:
        details["failed_partitions"] = _partition_list(failed)[0]
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
                extra["standby_tasks"] = _partition_list(_tasks(resp.get("standbyTasks")))[0]
                extra["warmup_tasks"] = _partition_list(_tasks(resp.get("warmupTasks")))[0]
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
