"""The vectorised path for what a classic `consumer` member carries as opaque bytes: its ConsumerProtocol
Subscription and Assignment (v0-v3; a newer version is read as v3, as Kafka's ConsumerProtocol does), decoded for
all the members of a batch at once, straight into the `group_metadata.members` columns they fill.

Every GroupMetadata record repeats every member of its group, and a member's subscription changes each generation
(its owned partitions, its generation id), so these payloads rarely repeat: decoded one by one through the reader
they were ~60 % of the cost of a GroupMetadata record (10 members: ~3k records/s on one core, against 1.6M
OffsetCommit records/s on the vectorised path). Here each field is read for every payload at once (gathers at
per-row byte positions); a list is read element by element across the payloads that still have one, so a batch
takes as many steps as its longest list. Like `offset_commit_columns`, the path *accepts* only what it decodes
exactly as the reader would (both payloads well formed, strings strict UTF-8, lists of at most
`binary_column.MAX_LISTED` entries) and declines the rest to the reference,
`transforms.member_columns.consumer_protocol_columns`: tests/transforms/test_consumer_protocol_columns.py proves
the two give the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rebalance_radar.transforms.binary_column import (
    BinaryColumn,
    FieldCursor,
    Slices,
    decline_invalid_strings,
    string_slices,
)

_NEWEST_VERSION = 3  # ConsumerProtocolSubscription/Assignment: v0-v3 known, newer read as v3 (fields only append)


@dataclass(frozen=True)
class _TopicPartitionList:
    """A `[]TopicPartition` read across payloads: which rows have it, its length per row, each entry's topic and
    the position and count of its int32 partitions."""

    present: np.ndarray
    counts: np.ndarray
    topics: Slices
    partition_starts: np.ndarray
    partition_counts: np.ndarray


@dataclass(frozen=True)
class _StringList:
    """A `[]string` read across payloads: which rows have it, its length per row, and its strings."""

    present: np.ndarray
    counts: np.ndarray
    strings: Slices


class _Payloads(FieldCursor):
    """One ConsumerProtocol payload column: its version first, then its fields (`FieldCursor`)."""

    def __init__(self, column: BinaryColumn) -> None:
        super().__init__(column, column.valid & (column.ends - column.starts >= 2), column.starts + 2)
        self.raw_version = np.where(self.ok, column.int16(column.starts), 0)
        self.ok &= self.raw_version >= 0
        self.version = np.minimum(self.raw_version, _NEWEST_VERSION)

    def rows_at_least(self, version: int) -> np.ndarray:
        return np.flatnonzero(self.ok & (self.version >= version))

    def string_list(self, rows: np.ndarray) -> _StringList:
        counts = np.zeros(len(self.ok), np.int64)
        counts[rows] = self.count(rows, 2)
        present = np.zeros(len(self.ok), bool)
        present[rows] = True
        parts = []
        for j in range(int(counts.max(initial=0))):
            active = np.flatnonzero(self.ok & (counts > j))
            if not len(active):
                break
            parts.append(self.length_prefixed(active, wide=False, nullable=False)[0])
        return _StringList(present, counts, Slices.joined(parts))

    def topic_partition_list(self, rows: np.ndarray) -> _TopicPartitionList:
        counts = np.zeros(len(self.ok), np.int64)
        counts[rows] = self.count(rows, 6)  # a topic's int16 length and its partitions' int32 count
        present = np.zeros(len(self.ok), bool)
        present[rows] = True
        topics, starts, partition_counts = [], [], []
        for j in range(int(counts.max(initial=0))):
            active = np.flatnonzero(self.ok & (counts > j))
            if not len(active):
                break
            topics.append(self.length_prefixed(active, wide=False, nullable=False)[0])
            m = self.count(active, 4)
            starts.append(self.pos[active].copy())
            partition_counts.append(m)
            self.advance(active, 4 * m)
        empty = np.empty(0, np.int64)
        return _TopicPartitionList(
            present,
            counts,
            Slices.joined(topics),
            np.concatenate(starts) if starts else empty,
            np.concatenate(partition_counts) if partition_counts else empty,
        )


@dataclass(frozen=True)
class _Subscriptions:
    payloads: _Payloads
    topics: _StringList
    owned: _TopicPartitionList
    generation: np.ndarray
    has_generation: np.ndarray
    rack: Slices
    rack_null: np.ndarray


def _read_subscriptions(column: BinaryColumn) -> _Subscriptions:
    """topics, userData (skipped: no column holds it), ownedPartitions (v1+), generationId (v2+), rackId (v3+)."""
    p = _Payloads(column)
    n = len(p.ok)
    topics = p.string_list(p.rows_at_least(0))
    p.length_prefixed(p.rows_at_least(0), wide=True, nullable=True)
    owned = p.topic_partition_list(p.rows_at_least(1))
    generation = np.zeros(n, np.int64)
    with_generation = p.rows_at_least(2)
    generation[with_generation] = p.int32(with_generation)
    with_rack = p.rows_at_least(3)
    rack, null = p.length_prefixed(with_rack, wide=False, nullable=True)
    rack_null = np.ones(n, bool)
    rack_null[with_rack] = null
    return _Subscriptions(p, topics, owned, generation, p.version >= 2, rack, rack_null)


def _read_assignments(column: BinaryColumn) -> tuple[_Payloads, _TopicPartitionList]:
    """assignedPartitions; userData follows and is skipped (checked, as the reader reads it)."""
    p = _Payloads(column)
    assigned = p.topic_partition_list(p.rows_at_least(0))
    p.length_prefixed(p.rows_at_least(0), wide=True, nullable=True)
    return p, assigned


@dataclass(frozen=True)
class ConsumerProtocolColumns:
    """What the path decoded: `accepted[i]` for every (subscription, assignment) pair, and the rows of the
    accepted pairs, in input order, as `row_type` (the member columns the two payloads fill)."""

    accepted: np.ndarray
    rows: pa.StructArray


class _Output:
    """Elements read for all payloads, kept for the accepted rows only and put in row order."""

    def __init__(self, accepted: np.ndarray) -> None:
        self.accepted = accepted
        self.position = np.cumsum(accepted) - 1  # a row's position among the accepted rows
        self.size = int(accepted.sum())

    def offsets(self, present: np.ndarray, counts: np.ndarray) -> tuple[pa.Array, pa.Array]:
        """List offsets of the accepted rows and their validity (an absent list is null, not empty)."""
        rows = self.accepted
        offsets = np.zeros(self.size + 1, np.int32)
        np.cumsum(counts[rows], out=offsets[1:])
        return pa.array(offsets), pa.array(~present[rows])

    def order(self, element_rows: np.ndarray) -> np.ndarray:
        """The kept elements' indices, row by row (elements were read list position by list position)."""
        kept = np.flatnonzero(self.accepted[element_rows])
        return kept[np.argsort(element_rows[kept], kind="stable")]


def _string_column(data: np.ndarray, slices: Slices, order: np.ndarray) -> pa.Array:
    return string_slices(data, slices.starts[order], slices.lengths[order])[0]


def _partitions_column(
    column: BinaryColumn, listed: _TopicPartitionList, out: _Output, list_type: pa.ListType
) -> pa.Array:
    order = out.order(listed.topics.rows)
    counts = listed.partition_counts[order]
    starts = listed.partition_starts[order]
    inner = np.zeros(len(order) + 1, np.int32)
    np.cumsum(counts, out=inner[1:])
    within = np.arange(int(inner[-1])) - np.repeat(inner[:-1], counts)
    partitions = column.int32(np.repeat(starts, counts) + 4 * within).astype(np.int32)
    entry_type: pa.StructType = list_type.value_type
    partitions_type: pa.ListType = entry_type.field("partitions").type
    entries = pa.StructArray.from_arrays(
        [
            _string_column(column.data, listed.topics, order).cast(entry_type.field("topic").type),
            pa.ListArray.from_arrays(pa.array(inner), pa.array(partitions), type=partitions_type),
        ],
        fields=list(entry_type),
    )
    offsets, mask = out.offsets(listed.present, listed.counts)
    return pa.ListArray.from_arrays(offsets, entries, type=list_type, mask=mask)


def decode_consumer_protocols(
    subscriptions: pa.Array, assignments: pa.Array, row_type: pa.StructType
) -> ConsumerProtocolColumns:
    """Decode every (subscription, assignment) pair the path accepts (see the module docstring) into `row_type`:
    subscribed_topics, assigned_partitions, owned_partitions, subscription_generation, rack_id,
    subscription_version, assignment_version and embedded_error, as `consumer_protocol_columns` gives them."""
    sub_column, assign_column = BinaryColumn.of(subscriptions), BinaryColumn.of(assignments)
    sub = _read_subscriptions(sub_column)
    assign_payloads, assigned = _read_assignments(assign_column)
    accepted = sub.payloads.ok & assign_payloads.ok
    for data, slices in (
        (sub_column.data, sub.topics.strings),
        (sub_column.data, sub.owned.topics),
        (sub_column.data, sub.rack),
        (assign_column.data, assigned.topics),
    ):
        decline_invalid_strings(data, slices, accepted)

    out = _Output(accepted)
    topic_order = out.order(sub.topics.strings.rows)
    offsets, mask = out.offsets(sub.topics.present, sub.topics.counts)
    topics_type: pa.ListType = row_type.field("subscribed_topics").type
    topic_strings = _string_column(sub_column.data, sub.topics.strings, topic_order).cast(topics_type.value_type)
    rack_starts, rack_lengths = np.zeros(len(accepted), np.int64), np.zeros(len(accepted), np.int64)
    rack_starts[sub.rack.rows], rack_lengths[sub.rack.rows] = sub.rack.starts, sub.rack.lengths
    no_rack = sub.rack_null[accepted]
    rack_lengths = np.where(no_rack, 0, rack_lengths[accepted])
    rack_strings = string_slices(sub_column.data, rack_starts[accepted], rack_lengths)[0]
    arrays = {
        "subscribed_topics": pa.ListArray.from_arrays(offsets, topic_strings, type=topics_type, mask=mask),
        "owned_partitions": _partitions_column(sub_column, sub.owned, out, row_type.field("owned_partitions").type),
        "assigned_partitions": _partitions_column(
            assign_column, assigned, out, row_type.field("assigned_partitions").type
        ),
        "subscription_generation": pa.array(sub.generation[accepted], pa.int64(), mask=~sub.has_generation[accepted]),
        "rack_id": pc.if_else(pa.array(no_rack), pa.scalar(None, pa.string()), rack_strings),
        "subscription_version": pa.array(sub.payloads.raw_version[accepted]),
        "assignment_version": pa.array(assign_payloads.raw_version[accepted]),
        "embedded_error": pa.nulls(out.size, pa.string()),
    }
    fields = list(row_type)
    columns = [arrays[f.name].cast(f.type) for f in fields]
    return ConsumerProtocolColumns(accepted, pa.StructArray.from_arrays(columns, fields=fields))
