"""Offset moves that lose records, found in a streaming query's progress (pure: offsets in, gap rows out).

Spark's Kafka source plans each micro-batch from the offsets it stood at to the source's latest; when a partition's
latest is now *before* where it stood (a topic deleted and recreated, a log truncated by an unclean leader
election) or a partition disappears, it only logs a warning with failOnDataLoss off. The query's progress still
says so: its start and end offsets per partition. Reading them here makes each such event a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from rebalance_radar.transforms.schemas import SourceGapKind

PartitionOffsets = Mapping[str, Mapping[str, int]]
"""Spark's Kafka offsets JSON: {topic: {partition (as text): offset}}."""


@dataclass(frozen=True, slots=True)
class SourceGap:
    """One row of `source_gaps`."""

    cluster: str
    query: str
    src_topic: str
    src_partition: int
    kind: str
    from_offset: int
    to_offset: int | None
    batch_id: int
    detected_at: datetime
    message: str

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


def kafka_offsets(value: object) -> PartitionOffsets | None:
    """A progress report's offset, as its JSON parses (Spark writes an offset it cannot parse as a string), as Kafka
    partition offsets; None when absent or not a Kafka source's."""
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        return None
    return value


def source_gaps(
    start: PartitionOffsets | None,
    end: PartitionOffsets | None,
    *,
    cluster: str,
    query: str,
    batch_id: int,
    detected_at: datetime,
) -> list[SourceGap]:
    """The partitions whose offsets moved back, or that vanished, between a batch's start and end offsets."""
    if not start or end is None:  # a first batch has no start: nothing to compare
        return []
    gaps = []
    for topic, partitions in sorted(start.items()):
        ends = end.get(topic, {})
        for partition, stood_at in sorted(partitions.items(), key=lambda item: int(item[0])):
            now = ends.get(partition)
            if now is None:
                kind, message = (
                    SourceGapKind.PARTITION_GONE,
                    f"{topic}-{partition} is no longer in the source (topic or partition deleted) after offset "
                    f"{stood_at}; records after it may never have been read.",
                )
            elif int(now) < int(stood_at):
                kind, message = (
                    SourceGapKind.OFFSETS_MOVED_BACK,
                    f"{topic}-{partition} moved back from offset {stood_at} to {now} (topic recreated or log "
                    "truncated): records the query had not read before the move may be lost, and new records at "
                    f"offsets below {stood_at} share their record key with ones already written, so they are not "
                    "written again. If the topic was recreated on purpose, run radar under a new cluster name.",
                )
            else:
                continue
            gaps.append(
                SourceGap(
                    cluster=cluster,
                    query=query,
                    src_topic=topic,
                    src_partition=int(partition),
                    kind=str(kind),
                    from_offset=int(stood_at),
                    to_offset=None if now is None else int(now),
                    batch_id=batch_id,
                    detected_at=detected_at,
                    message=message,
                )
            )
    return gaps
