"""One normalised event type for the detectors, built from a `DETECTOR_INPUT` row of any silver table.

Why one type: the tracker orders and replays events from four tables; a single shape with its source coordinates
keeps the ordering and the evidence (table, topic, partition, offset) uniform. Conversion never raises: a row
that says nothing about a group, or carries odd values, becomes None.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from rebalance_radar.transforms.schemas import (
    CLOCK_TICKS,
    DETECTOR_MEMBER_TEXTS,
    GROUP_METADATA,
    GROUP_RECORDS,
    HEARTBEAT_EVENTS,
    OFFSET_COMMITS,
    PARTITION_END_OFFSETS,
    HeartbeatEventKind,
)

# Tie-break between tables at the same millisecond: the coordinator's own records before the telemetry that
# comments on them, commits last (a commit is judged against the membership known at that instant).
TABLE_RANK: dict[str, int] = {
    GROUP_RECORDS.name: 0,
    GROUP_METADATA.name: 1,
    HEARTBEAT_EVENTS.name: 2,
    OFFSET_COMMITS.name: 3,
    PARTITION_END_OFFSETS.name: 4,  # a poll is judged against the commits of the same instant
}
_HEARTBEAT_KINDS = frozenset(k.value for k in HeartbeatEventKind)


@dataclass(frozen=True, slots=True)
class MemberInfo:
    """A classic member as the GroupMetadata record stores it (partitions as `topic-partition` texts)."""

    member_id: str
    instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    partitions: tuple[str, ...] = ()
    subscribed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupEvent:
    """One event about one group at `event_time_ms`, with the coordinates of the row it came from.

    Which fields are set depends on `src_table`: offset commits (topic, partition, committed_offset), classic
    GroupMetadata (generation, protocol_type, protocol, leader, members), KIP-848/1071/932 records (group_type,
    record_type, epoch, member fields, partitions, pending), heartbeat events (event, member, error, details...).
    """

    event_time_ms: int
    src_table: str
    group_id: str
    cluster: str | None = None
    src_topic: str | None = None
    src_partition: int | None = None
    src_offset: int | None = None
    is_tombstone: bool = False
    # offset_commits
    topic: str | None = None
    partition: int | None = None
    committed_offset: int | None = None
    # partition_end_offsets (topic, partition, error too)
    end_offset: int | None = None
    # group_metadata
    generation: int | None = None
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: tuple[MemberInfo, ...] | None = None
    # group_records
    group_type: str | None = None
    record_type: str | None = None
    epoch: int | None = None
    previous_epoch: int | None = None
    member_state: str | None = None
    partitions: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    rebalance_timeout_ms: int | None = None
    subscribed: tuple[str, ...] | None = None
    """A KIP-848 member's subscribed topics (its regex as `regex:<pattern>`); None where the record says nothing."""
    classic_session_timeout_ms: int | None = None
    """A classic consumer's session timeout, where its KIP-848 group's record carries its classic metadata."""
    metadata_hash: int | None = None
    """The subscribed topics' metadata of a KIP-848/1071 group record (4.1+ `metadataHash`; 3.x a digest)."""
    # heartbeat_events (member_id and group_instance_id also from group records)
    event: str | None = None
    member_id: str | None = None
    group_instance_id: str | None = None
    member_epoch: int | None = None
    error: str | None = None
    reason: str | None = None
    client_id: str | None = None
    host: str | None = None
    source: str | None = None
    details: Mapping[str, str] = field(default_factory=dict)

    def detail(self, key: str) -> str | None:
        return self.details.get(key) if self.details else None

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields that differ from their defaults (members as dicts), which `from_json`
        reads back whole: a GroupMetadata record of an Empty group keeps its `members=()`, which is not the default
        (None: no member list), and which the tracker acts on. It runs for the events a tracker holds converted but
        not processed when it is snapshotted: in the detection query, only those restored from a snapshot written
        before `GroupTracker.accept_packed` (which keeps waiting rows as text); in the detector tests, every event
        they feed. Field by field, without `dataclasses.asdict`'s recursive deep copy, which was 28 % of the
        detection workers' samples in a 400k-record replay when every waiting event was snapshotted as an event."""
        data: dict[str, Any] = {}
        for name, default in _EVENT_DEFAULTS:
            value = getattr(self, name)
            if name == "details":
                value = dict(value)
            elif name == "members" and value:
                value = tuple({key: getattr(member, key) for key in _MEMBER_FIELDS} for member in value)
            if value is not default and value != default:
                data[name] = value
        return data

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> GroupEvent:
        values = dict(data)
        if values.get("members") is not None:
            values["members"] = tuple(
                MemberInfo(**{**m, "partitions": tuple(m["partitions"]), "subscribed": tuple(m["subscribed"])})
                for m in values["members"]
            )
        for name in ("partitions", "pending", "subscribed"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        return GroupEvent(**values)


_EVENT_DEFAULTS: tuple[tuple[str, Any], ...] = tuple(
    (f.name, f.default_factory() if f.default_factory is not MISSING else f.default) for f in fields(GroupEvent)
)
"""Every field of an event and its default (`MISSING` for the required ones, which are always written)."""
_MEMBER_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(MemberInfo))


def event_order(event: GroupEvent) -> tuple[int, int, int, int, str]:
    """Event time, then source table rank, src_partition, src_offset (and member id for a total order)."""
    return (
        event.event_time_ms,
        TABLE_RANK.get(event.src_table, 9),
        event.src_partition if event.src_partition is not None else -1,
        event.src_offset if event.src_offset is not None else -1,
        event.member_id or "",
    )


def epoch_ms(value: Any) -> int | None:
    """Epoch milliseconds of a TIMESTAMP value: int ms, datetime (naive = UTC) or pandas Timestamp."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return None if value != value else int(value)
    to_py = getattr(value, "to_pydatetime", None)
    if callable(to_py):
        try:
            value = to_py()
        except (ValueError, TypeError):
            return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return round(value.timestamp() * 1000)
    return None


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _timeout(value: Any) -> int | None:
    """A timeout in ms; Kafka writes -1/0 for "not set"."""
    number = _int(value)
    return number if number is not None and number > 0 else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text or None


def _host(value: Any) -> str | None:
    text = _text(value)
    return text.lstrip("/") or None if text else None


def _items(value: Any) -> list[Any]:
    """A list column's items whatever carries it (list, tuple, numpy array from pandas, None)."""
    if value is None or isinstance(value, str | bytes | Mapping):
        return []
    try:
        return list(value)
    except TypeError:
        return []


def _topic_partitions(items: Iterable[Mapping[str, Any]] | None, topic_key: str = "topic") -> tuple[str, ...]:
    out: list[str] = []
    for item in _items(items):
        if not isinstance(item, Mapping):
            continue
        topic = item.get(topic_key)
        for p in _items(item.get("partitions")):
            out.append(f"{topic}-{p}")
    return tuple(sorted(out))


def _as_mapping(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    as_dict = getattr(value, "asDict", None)  # a Spark Row
    if callable(as_dict):
        return as_dict(recursive=True)
    return {}


def _member_info(raw: Any) -> MemberInfo | None:
    if isinstance(raw, dict) and "f" in raw:  # as the detection query shapes a member (`packed_member`)
        return _member_from_packed(raw)
    m = _as_mapping(raw)
    member_id = _text(m.get("member_id"))
    if member_id is None:
        return None
    partitions = _topic_partitions(_as_mapping(tp) for tp in _items(m.get("assigned_partitions")))
    return MemberInfo(
        member_id=member_id,
        instance_id=_text(m.get("group_instance_id")),
        client_id=_text(m.get("client_id")),
        host=_host(m.get("client_host")),
        session_timeout_ms=_timeout(m.get("session_timeout_ms")),
        rebalance_timeout_ms=_timeout(m.get("rebalance_timeout_ms")),
        partitions=partitions,
        subscribed=tuple(sorted(str(t) for t in _items(m.get("subscribed_topics")))),
    )


def _details(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = value.items()
    else:
        try:  # Arrow/pandas give a map column as a list of (key, value) pairs
            items = list(value)
        except TypeError:
            return {}
    out: dict[str, str] = {}
    for pair in items:
        try:
            key, item = pair
        except (TypeError, ValueError):
            continue
        if key is not None and item is not None:
            out[str(key)] = str(item)
    return out


def _record_fields(record_type: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """What the detectors need out of a KIP-848/1071/932 record's decoded value."""
    found: dict[str, Any] = {}
    if record_type.endswith("CurrentMemberAssignment"):
        found["previous_epoch"] = _int(payload.get("previousMemberEpoch"))
        if "assignedPartitions" in payload:
            found["partitions"] = _topic_partitions(payload.get("assignedPartitions"), "topicId")
            found["pending"] = _topic_partitions(payload.get("partitionsPendingRevocation"), "topicId")
        else:  # streams: tasks as subtopology-partition
            found["partitions"] = _topic_partitions(payload.get("activeTasks"), "subtopologyId")
            found["pending"] = _topic_partitions(payload.get("activeTasksPendingRevocation"), "subtopologyId")
    elif record_type.endswith("GroupMetadata"):  # 4.1+: the hash of the subscribed topics' metadata
        found["metadata_hash"] = _int(payload.get("metadataHash"))
    elif record_type.endswith("GroupPartitionMetadata"):  # 3.x: the subscribed topics' metadata itself (not a
        # share group's ShareGroupStatePartitionMetadata, which says which partitions its share state covers)
        found["metadata_hash"] = zlib.crc32(json.dumps(payload, sort_keys=True).encode())
    elif record_type.endswith("MemberMetadata"):
        found["group_instance_id"] = _text(payload.get("instanceId"))
        found["client_id"] = _text(payload.get("clientId"))
        found["host"] = _host(payload.get("clientHost"))
        found["rebalance_timeout_ms"] = _timeout(payload.get("rebalanceTimeoutMs"))
        if "subscribedTopicNames" in payload:  # consumer groups; streams members subscribe through the topology
            regex = _text(payload.get("subscribedTopicRegex"))
            names = sorted(str(t) for t in _items(payload.get("subscribedTopicNames")))
            found["subscribed"] = tuple(names + ([f"regex:{regex}"] if regex else []))
        classic = payload.get("classicMemberMetadata")
        if isinstance(classic, Mapping):
            found["classic_session_timeout_ms"] = _timeout(classic.get("sessionTimeoutMs"))
    return found


def group_event_from_row(row: Mapping[str, Any]) -> GroupEvent | None:
    """A `DETECTOR_INPUT` row -> its group event, or None (clock ticks, rows without a group or a time)."""
    try:
        return _event_from_row(row)
    except (TypeError, ValueError, AttributeError, KeyError):
        return None


def _member_from_packed(packed: dict[str, Any]) -> MemberInfo | None:
    """A member as `packed_member` shapes it -> its `MemberInfo` (None without a member id), as `_member_info`
    converts the whole struct (which it still does for a member by its field names, as trackers snapshotted before
    the shaping keep their waiting rows)."""
    texts = packed["f"]
    if not isinstance(texts, list) or len(texts) != len(DETECTOR_MEMBER_TEXTS):
        return None
    # in the order of `DETECTOR_MEMBER_TEXTS`; every value a text or null
    member_id, instance_id, client_id, host, session_timeout, rebalance_timeout = texts
    if not member_id:
        return None
    return MemberInfo(
        member_id=member_id,
        instance_id=instance_id or None,
        client_id=client_id or None,
        host=_host(host),
        session_timeout_ms=_timeout(session_timeout),
        rebalance_timeout_ms=_timeout(rebalance_timeout),
        partitions=tuple(packed.get("p") or ()),
        subscribed=tuple(packed.get("s") or ()),
    )


def group_event_from_packed(cluster: str | None, group_id: str, packed: str) -> GroupEvent | None:
    """A `DETECTOR_INPUT` row as the detection query hands it to the trackers (`pipelines.stages.detect.
    packed_detector_input`: one JSON text of every column but the key, timestamps as epoch ms, nulls left out) ->
    its group event, or None, as `group_event_from_row` converts the whole row."""
    try:
        values = json.loads(packed)
    except ValueError:
        return None
    if not isinstance(values, dict):
        return None
    values["cluster"], values["group_id"] = cluster, group_id
    return group_event_from_row(values)


def _event_from_row(row: Mapping[str, Any]) -> GroupEvent | None:
    table = _text(row.get("src_table"))
    group_id = _text(row.get("group_id"))
    if table is None or table == CLOCK_TICKS.name or group_id is None:
        return None
    time_ms = epoch_ms(row.get("event_time"))
    if time_ms is None:
        time_ms = epoch_ms(row.get("src_timestamp"))
    if time_ms is None:
        return None
    common: dict[str, Any] = {
        "event_time_ms": time_ms,
        "src_table": table,
        "group_id": group_id,
        "cluster": _text(row.get("cluster")),
        "src_topic": _text(row.get("src_topic")),
        "src_partition": _int(row.get("src_partition")),
        "src_offset": _int(row.get("src_offset")),
        "is_tombstone": bool(row.get("is_tombstone")),
    }
    if table == OFFSET_COMMITS.name:
        partition = _int(row.get("partition"))
        if _text(row.get("topic")) is None or partition is None:
            return None
        return GroupEvent(
            **common,
            topic=_text(row.get("topic")),
            partition=partition,
            committed_offset=_int(row.get("committed_offset")),
        )
    if table == PARTITION_END_OFFSETS.name:
        partition = _int(row.get("partition"))
        if _text(row.get("topic")) is None or partition is None:
            return None
        return GroupEvent(
            **common,
            topic=_text(row.get("topic")),
            partition=partition,
            end_offset=_int(row.get("end_offset")),
            error=_text(row.get("error")),
        )
    if table == GROUP_METADATA.name:
        raw_members = row.get("members")
        members = None
        if raw_members is not None:
            members = tuple(m for m in (_member_info(raw) for raw in _items(raw_members)) if m is not None)
        return GroupEvent(
            **common,
            generation=_int(row.get("generation")),
            protocol_type=_text(row.get("protocol_type")),
            protocol=_text(row.get("protocol")),
            leader=_text(row.get("leader")),
            members=members,
        )
    if table == GROUP_RECORDS.name:
        record_type = _text(row.get("record_type"))
        if record_type is None:
            return None
        payload_text = row.get("payload")
        payload = json.loads(payload_text) if isinstance(payload_text, str) and payload_text else {}
        extra = _record_fields(record_type, payload if isinstance(payload, Mapping) else {})
        return GroupEvent(
            **common,
            group_type=_text(row.get("group_type")),
            record_type=record_type,
            epoch=_int(row.get("epoch")),
            member_id=_text(row.get("member_id")),
            member_state=_text(row.get("member_state")),
            **extra,
        )
    if table == HEARTBEAT_EVENTS.name:
        kind = _text(row.get("event"))
        if kind not in _HEARTBEAT_KINDS:
            return None
        return GroupEvent(
            **common,
            event=kind,
            member_id=_text(row.get("member_id")),
            group_instance_id=_text(row.get("group_instance_id")),
            generation=_int(row.get("generation")),
            member_epoch=_int(row.get("member_epoch")),
            error=_text(row.get("error")),
            reason=_text(row.get("reason")),
            client_id=_text(row.get("client_id")),
            host=_host(row.get("host")),
            source=_text(row.get("source")),
            details=_details(row.get("details")),
        )
    return None
