"""A heartbeat event (one `heartbeat_events` row without its Kafka coordinates), the outcome of parsing a record,
and the detector contract every telemetry format implements (`RecordDetector`, given a `RecordContext`).

`event_time` is epoch milliseconds, UTC: integers are cheap to build per line and convert to Arrow
`timestamp[ms, UTC]` without a Python `datetime` per row; `as_row()` gives the `datetime` for Spark rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rebalance_radar.transforms.schemas import HEARTBEAT_EVENTS, SOURCE_COLUMNS, HeartbeatEventKind, TelemetrySource

# Partitions listed in `details` (assignment, commits); longer lists are cut (the count is kept in full).
MAX_LISTED_PARTITIONS = 256


@dataclass(frozen=True, slots=True)
class HeartbeatEvent:
    """One normalised heartbeat event; fields are exactly the non-source columns of `HEARTBEAT_EVENTS`.

    `error` is a Kafka error name (`ILLEGAL_GENERATION`), `details` carries what has no column of its own
    (state, member counts, partitions, the cause parsed out of a broker reason...), always as strings.
    """

    event_time: int
    group_id: str | None
    member_id: str | None
    group_instance_id: str | None
    generation: int | None
    member_epoch: int | None
    event: HeartbeatEventKind
    error: str | None
    reason: str | None
    client_id: str | None
    host: str | None
    source: TelemetrySource
    details: dict[str, str] = field(default_factory=dict)

    def as_row(self) -> dict[str, Any]:
        """The event as a `heartbeat_events` row (minus cluster/src_* columns): time as an aware UTC datetime."""
        return {
            "event_time": datetime.fromtimestamp(self.event_time / 1000, tz=UTC),
            "group_id": self.group_id,
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "generation": self.generation,
            "member_epoch": self.member_epoch,
            "event": self.event.value,
            "error": self.error,
            "reason": self.reason,
            "client_id": self.client_id,
            "host": self.host,
            "source": self.source.value,
            "details": dict(self.details),
        }


EVENT_COLUMNS: tuple[str, ...] = tuple(
    name for name in HEARTBEAT_EVENTS.column_names if name not in {c.name for c in SOURCE_COLUMNS}
)


@dataclass(frozen=True, slots=True)
class ParseOutcome:
    """What one telemetry record turned into: events, or "unrecognised" with the source kind it looked like.

    `source` is the detected kind (None when the bytes did not even look like a known kind, e.g. binary
    garbage), so callers can count unrecognised records per source; `reason` says why nothing was recognised.
    """

    events: tuple[HeartbeatEvent, ...]
    source: TelemetrySource | None
    reason: str | None = None

    @property
    def recognised(self) -> bool:
        return bool(self.events)

    @staticmethod
    def unrecognised(source: TelemetrySource | None, reason: str) -> ParseOutcome:
        return ParseOutcome((), source, reason)


@dataclass(frozen=True, slots=True)
class RecordContext:
    """What a detector may use besides the bytes: the Kafka record time and the zone of naive log times."""

    record_timestamp_ms: int
    tz: str = "UTC"


# One telemetry format: the record's events, or None when the bytes are not that format (the next one is asked).
RecordDetector = Callable[[bytes, RecordContext], ParseOutcome | None]


def partition_list(
    pairs: Iterable[tuple[str, Iterable[int]]], limit: int | None = MAX_LISTED_PARTITIONS, sep: str = "-"
) -> tuple[str, int]:
    """`topic-0,topic-1,...` as `details` spell partitions (cut at `limit`, None = all) and the full count.

    `sep="_"` spells Kafka Streams task ids (`<subtopology>_<partition>`)."""
    listed: list[str] = []
    count = 0
    for topic, partitions in pairs:
        for partition in partitions or ():
            count += 1
            if limit is None or len(listed) < limit:
                listed.append(f"{topic}{sep}{partition}")
    return ",".join(listed), count
