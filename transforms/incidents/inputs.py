"""What the linking reads, one frozen row type per source: rebalances and detections (gold), the coordinator's own
moves and its brokers' start and stop (`heartbeat_events` of the coordinator kinds), and members' comings and goings
that name a client id or host (`heartbeat_events` joins, leaves and expiries). Each has `of_row` for the rows Spark or
DuckDB return (timestamps as datetimes or epoch ms)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rebalance_radar.transforms.schemas import HeartbeatEventKind

COORDINATOR_EVENT_KINDS: tuple[HeartbeatEventKind, ...] = (
    HeartbeatEventKind.COORDINATOR_LOADED,
    HeartbeatEventKind.COORDINATOR_UNLOADED,
    HeartbeatEventKind.GROUP_LOADED,
    HeartbeatEventKind.GROUP_UNLOADED,
    HeartbeatEventKind.COORDINATOR_STARTED,
    HeartbeatEventKind.COORDINATOR_STOPPING,
)
"""`heartbeat_events.event` values read as `CoordinatorEvent`s."""

MEMBER_EVENT_KINDS: tuple[HeartbeatEventKind, ...] = (
    HeartbeatEventKind.JOIN,
    HeartbeatEventKind.LEAVE,
    HeartbeatEventKind.MEMBER_EXPIRED,
    HeartbeatEventKind.MEMBER_REMOVED,
)
"""`heartbeat_events.event` values read as `MemberSighting`s (when they name a client id or host)."""

# A classic member id is the coordinator's `clientId + "-" + UUID` (both coordinators, any client library).
_CLASSIC_MEMBER_ID = re.compile(r"^(?P<client>.+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def epoch_ms(value: Any) -> int | None:
    """A timestamp as Spark (aware or naive UTC datetime), DuckDB or the tests give it -> epoch ms."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            from datetime import UTC

            value = value.replace(tzinfo=UTC)
        return int(value.timestamp() * 1000)
    return int(value)


def client_id_of_member(member_id: str) -> str | None:
    """The client id inside a classic member id (`clientId-UUID`); None for a KIP-848 member's bare UUID."""
    found = _CLASSIC_MEMBER_ID.match(member_id)
    return found.group("client") if found else None


def _texts(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(str(v) for v in value if v is not None)


@dataclass(frozen=True)
class RebalanceRef:
    """A `rebalances` row as the linking reads it: who, when, and which members came and went."""

    cluster: str
    group_id: str
    rebalance_id: str
    started_ms: int
    members: tuple[str, ...] = ()  # joined, left and expired member ids

    @staticmethod
    def of_row(row: Mapping[str, Any]) -> RebalanceRef | None:
        started = epoch_ms(row.get("started_at"))
        if started is None or row.get("group_id") is None or row.get("rebalance_id") is None:
            return None
        members = _texts(row.get("joined")) + _texts(row.get("left")) + _texts(row.get("expired"))
        return RebalanceRef(str(row.get("cluster")), str(row["group_id"]), str(row["rebalance_id"]), started, members)


@dataclass(frozen=True)
class DetectionRef:
    """A `detections` row as the linking reads it."""

    cluster: str
    group_id: str
    detection_id: str
    first_seen_ms: int
    last_seen_ms: int

    @staticmethod
    def of_row(row: Mapping[str, Any]) -> DetectionRef | None:
        first = epoch_ms(row.get("first_seen"))
        if first is None or row.get("group_id") is None or row.get("detection_id") is None:
            return None
        last = epoch_ms(row.get("last_seen")) or first
        return DetectionRef(str(row.get("cluster")), str(row["group_id"]), str(row["detection_id"]), first, last)


@dataclass(frozen=True)
class CoordinatorEvent:
    """A coordinator move (a partition or a group loaded or unloaded) or a coordinator's start or stop."""

    cluster: str
    time_ms: int
    kind: HeartbeatEventKind
    broker: str | None
    offsets_partition: int | None = None
    group_id: str | None = None
    src: tuple[str | None, int | None, int | None] = (
        None,
        None,
        None,
    )  # the telemetry record: topic, partition, offset

    @staticmethod
    def of_row(row: Mapping[str, Any]) -> CoordinatorEvent | None:
        time_ms = epoch_ms(row.get("event_time"))
        try:
            kind = HeartbeatEventKind(str(row.get("event")))
        except ValueError:
            return None
        if time_ms is None or kind not in COORDINATOR_EVENT_KINDS:
            return None
        details = _details(row.get("details"))
        partition = details.get("offsets_partition")
        return CoordinatorEvent(
            str(row.get("cluster")),
            time_ms,
            kind,
            details.get("coordinator"),
            int(partition) if partition is not None and partition.isdigit() else None,
            row.get("group_id"),
            (row.get("src_topic"), row.get("src_partition"), row.get("src_offset")),
        )


@dataclass(frozen=True)
class MemberSighting:
    """A member's join, leave or expiry that names its client id or host."""

    cluster: str
    group_id: str
    time_ms: int
    member_id: str | None
    client_id: str | None
    host: str | None

    @staticmethod
    def of_row(row: Mapping[str, Any]) -> MemberSighting | None:
        time_ms = epoch_ms(row.get("event_time"))
        if time_ms is None or row.get("group_id") is None or row.get("event") not in MEMBER_EVENT_KINDS:
            return None
        if row.get("client_id") is None and row.get("host") is None:
            return None
        return MemberSighting(
            str(row.get("cluster")),
            str(row["group_id"]),
            time_ms,
            row.get("member_id"),
            row.get("client_id"),
            row.get("host"),
        )


def _details(value: Any) -> dict[str, str]:
    """A `details` map as Spark (dict), DuckDB (dict or key/value list) or Arrow (list of pairs) returns it."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        if set(value) == {"key", "value"} and isinstance(value["key"], Sequence) and not isinstance(value["key"], str):
            return {str(k): str(v) for k, v in zip(value["key"], value["value"], strict=False) if v is not None}
        return {str(k): str(v) for k, v in value.items() if v is not None}
    return {str(k): str(v) for k, v in value if v is not None}
