"""A deliberately minimal tracker with the `transforms.detectors` contract, to test the Spark mechanics only.

Not the detectors: it knows two toy rules, so the pipeline tests (ordering, watermark, timers, MERGE, replay,
restart) can state exactly what must come out. To be replaced by the real tracker where a test needs real rules.

- `heartbeat_expiration`: a `heartbeat_events` row `member_expired` opens a detection at its event time.
- `heartbeat_at_risk` ("nothing happened"): a member whose last event is `member_silence_ms` old opens a
  detection at that deadline; the member's next event resolves it (same detection_id: an update, not a new row).
Every detection's evidence lists the member's events in the order the tracker processed them, and an event that
arrives at or below a watermark already processed raises: both make out-of-order delivery visible.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from transforms.schemas import DetectionKind, DetectionStatus, HeartbeatEventKind, Severity

_TABLE_RANK = {"group_metadata": 0, "group_records": 1, "offset_commits": 2, "heartbeat_events": 3}


@dataclass(frozen=True)
class StandInThresholds:
    """The stand-in's two thresholds."""

    member_silence_ms: int = 10_000
    group_idle_ttl_ms: int = 3_600_000


@dataclass(frozen=True, slots=True)
class StandInEvent:
    """What the stand-in keeps of a row: time, source coordinates, member and heartbeat event kind."""

    event_time_ms: int
    src_table: str
    src_topic: str | None
    src_partition: int | None
    src_offset: int | None
    member_id: str | None
    event: str | None


def _ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return int(aware.timestamp() * 1000)
    return int(value)


def group_event_from_row(row: Mapping[str, Any]) -> StandInEvent | None:
    """None for clock ticks and rows without a group or time."""
    time_ms = _ms(row.get("event_time"))
    if row.get("group_id") is None or row.get("src_table") == "clock_ticks" or time_ms is None:
        return None
    return StandInEvent(
        time_ms,
        str(row["src_table"]),
        row.get("src_topic"),
        row.get("src_partition"),
        row.get("src_offset"),
        row.get("member_id"),
        row.get("event"),
    )


def event_order(event: StandInEvent) -> tuple[int, int, int, int]:
    return (
        event.event_time_ms,
        _TABLE_RANK.get(event.src_table, 9),
        event.src_partition if event.src_partition is not None else -1,
        event.src_offset if event.src_offset is not None else -1,
    )


@dataclass(frozen=True, slots=True)
class StandInOutput:
    """`TrackerOutput` of the contract."""

    rebalances: tuple[dict[str, Any], ...]
    detections: tuple[dict[str, Any], ...]
    health: dict[str, Any] | None


def _utc(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


@dataclass
class _State:
    cluster: str
    group_id: str
    processed_to: int = -1
    last_event_ms: int | None = None
    buffered: list[dict[str, Any]] = field(default_factory=list)
    last_seen: dict[str, int] = field(default_factory=dict)
    evidence: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    open_silence: dict[str, list[int]] = field(default_factory=dict)  # member -> [last seen, deadline] in ms
    open_count: int = 0


class StandInTracker:
    """`GroupTracker` of the contract with two toy rules (see the module docstring)."""

    def __init__(self, cluster: str, group_id: str, thresholds: StandInThresholds) -> None:
        self._s = _State(cluster, group_id)
        self._t = thresholds

    @classmethod
    def restore(cls, snapshot: bytes, thresholds: StandInThresholds) -> StandInTracker:
        tracker = cls("", "", thresholds)
        tracker._s = _State(**json.loads(zlib.decompress(snapshot)))
        return tracker

    def snapshot(self) -> bytes:
        return zlib.compress(json.dumps(asdict(self._s)).encode())

    def accept(self, events: Iterable[StandInEvent]) -> None:
        for event in events:
            if event.event_time_ms <= self._s.processed_to:
                raise AssertionError(
                    f"event at {event.event_time_ms} reached the tracker after watermark {self._s.processed_to} "
                    "was processed: the pipeline delivered it out of order"
                )
            self._s.buffered.append(asdict(event))

    def _detection(self, kind: DetectionKind, member: str, key: str, first: int, at: int) -> dict[str, Any]:
        identity = f"{self._s.cluster}|{self._s.group_id}|{kind}|{member}|{key}"
        return {
            "cluster": self._s.cluster,
            "detection_id": hashlib.sha256(identity.encode()).hexdigest()[:32],
            "kind": str(kind),
            "severity": str(Severity.WARNING),
            "group_id": self._s.group_id,
            "generation": None,
            "member_id": member,
            "topic": None,
            "partition": None,
            "first_seen": _utc(first),
            "last_seen": _utc(at),
            "detected_at": _utc(at),
            "status": str(DetectionStatus.OPEN),
            "resolved_at": None,
            "summary": f"member {member} of group {self._s.group_id}: {kind}",
            "evidence": json.dumps(self._s.evidence.get(member, [])),
        }

    def _silence(self, member: str) -> dict[str, Any]:
        seen, deadline = self._s.open_silence[member]
        return self._detection(DetectionKind.HEARTBEAT_AT_RISK, member, str(seen), seen, deadline)

    def _deadlines(self) -> list[tuple[int, str]]:
        return sorted(
            (seen + self._t.member_silence_ms, member)
            for member, seen in self._s.last_seen.items()
            if member not in self._s.open_silence
        )

    def advance_to(self, watermark_ms: int) -> StandInOutput:
        s = self._s
        due = sorted((StandInEvent(**e) for e in s.buffered if e["event_time_ms"] <= watermark_ms), key=event_order)
        s.buffered = [e for e in s.buffered if e["event_time_ms"] > watermark_ms]
        detections: list[dict[str, Any]] = []
        changed = False
        for event in [*due, None]:
            horizon = watermark_ms if event is None else event.event_time_ms - 1
            for deadline, member in self._deadlines():
                if deadline > horizon:
                    break
                s.open_silence[member] = [s.last_seen[member], deadline]
                detections.append(self._silence(member))
                changed = True
            if event is None:
                break
            changed = True
            s.last_event_ms = event.event_time_ms
            member = event.member_id
            if member is None:
                continue
            s.evidence.setdefault(member, []).append(
                {
                    "table": event.src_table,
                    "partition": event.src_partition,
                    "offset": event.src_offset,
                    "event_time": event.event_time_ms,
                }
            )
            if member in s.open_silence:
                resolved = self._silence(member)
                del s.open_silence[member]
                detections.append(
                    {
                        **resolved,
                        "status": str(DetectionStatus.RESOLVED),
                        "resolved_at": _utc(event.event_time_ms),
                        "last_seen": _utc(event.event_time_ms),
                    }
                )
            if event.event == HeartbeatEventKind.MEMBER_EXPIRED:
                detections.append(
                    self._detection(
                        DetectionKind.HEARTBEAT_EXPIRATION, member, "expired", event.event_time_ms, event.event_time_ms
                    )
                )
                s.last_seen.pop(member, None)
            else:
                s.last_seen[member] = event.event_time_ms
        s.processed_to = max(s.processed_to, watermark_ms)
        s.open_count = len(s.open_silence)
        health = None
        if changed:
            health = {
                "cluster": s.cluster,
                "group_id": s.group_id,
                "group_protocol": None,
                "state": None,
                "generation": None,
                "members": len(s.last_seen),
                "last_rebalance_at": None,
                "rebalances_1h": 0,
                "open_detections": s.open_count,
                "last_event_at": _utc(s.last_event_ms),
            }
        return StandInOutput((), tuple(detections), health)

    def next_wakeup(self) -> int | None:
        times = [e["event_time_ms"] for e in self._s.buffered] + [d for d, _ in self._deadlines()]
        return min(times) if times else None

    def is_expired(self, watermark_ms: int) -> bool:
        s = self._s
        idle = s.last_event_ms is None or watermark_ms - s.last_event_ms > self._t.group_idle_ttl_ms
        return idle and not s.open_silence and not s.buffered and s.last_event_ms is not None
