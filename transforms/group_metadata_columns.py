"""The vectorised path for classic groups' GroupMetadata records (key record type 2, value v0-v4, tombstones too),
decoded over whole Arrow buffers straight into the `group_metadata` output columns, members included.

One record in ten on a busy cluster is a GroupMetadata record, and each carries every member of its group: read
record by record through the reader, its member dicts were most of what the `mapInArrow` body still spent after
the OffsetCommit path. Here each field is read for every record at once (`binary_column.FieldCursor`), the
members element by element across the records that still have one, and the members' ConsumerProtocol payloads go
to `consumer_protocol_columns` in one call. As the OffsetCommit path, it *accepts* only what it decodes exactly as
the reader would (key and value ending where their last field ends, strict UTF-8, no tagged fields in v4, a
timestamp a column can hold, at most `binary_column.MAX_LISTED` members) and declines the rest to
`transforms.wire.coordinator_records.decode_record`, the single source of truth: it never quarantines.
tests/transforms/test_offset_commit_columns.py proves both paths give the same batches.
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
    byte_slices,
    decline_invalid_strings,
    string_slices,
)
from rebalance_radar.transforms.member_columns import MEMBER_KAFKA_FIELDS, consumer_protocol_array
from rebalance_radar.transforms.schemas import MAX_TIMESTAMP_MS
from rebalance_radar.transforms.wire.consumer_protocol import CONSUMER_PROTOCOL_TYPE

_GROUP_METADATA_KEY_TYPE = 2
_NEWEST_VERSION = 4  # GroupMetadataValue v0-v4 (v4 flexible)


@dataclass(frozen=True)
class GroupMetadataColumns:
    """What the path decoded: `accepted[i]` for every input row, and the `group_metadata` structs of the accepted
    rows, in input order."""

    accepted: np.ndarray
    rows: pa.StructArray


class _Strings:
    """One string field per row (start, length, null) filled for the rows that have it."""

    def __init__(self, n: int) -> None:
        self.starts = np.zeros(n, np.int64)
        self.lengths = np.zeros(n, np.int64)
        self.null = np.ones(n, bool)

    def fill(self, slices: Slices, null: np.ndarray) -> None:
        self.starts[slices.rows] = slices.starts
        self.lengths[slices.rows] = slices.lengths
        self.null[slices.rows] = null


class _Members:
    """Members read across records, one entry per member in the order read (list position by list position)."""

    def __init__(self) -> None:
        self.parts: list[dict[str, np.ndarray]] = []

    def add(self, **columns: np.ndarray) -> None:
        self.parts.append(columns)

    def joined(self) -> dict[str, np.ndarray]:
        names = ("row", "member_id", "member_id_len", "instance", "instance_len", "instance_null", "client_id")
        names += ("client_id_len", "client_host", "client_host_len", "rebalance", "rebalance_present", "session")
        names += ("subscription", "subscription_len", "assignment", "assignment_len")
        if not self.parts:
            return {name: np.empty(0, bool if name.endswith(("_null", "_present")) else np.int64) for name in names}
        return {name: np.concatenate([p[name] for p in self.parts]) for name in names}


class _ValueReader:
    """Reads GroupMetadataValue fields for chosen rows into per-row arrays and a member list."""

    def __init__(self, cursor: FieldCursor, version: np.ndarray) -> None:
        n = len(version)
        self.cursor = cursor
        self.version = version
        self.protocol_type, self.protocol, self.leader = _Strings(n), _Strings(n), _Strings(n)
        self.generation = np.zeros(n, np.int64)
        self.state_ms = np.full(n, -1, np.int64)
        self.member_count = np.zeros(n, np.int64)
        self.members = _Members()

    def _string(self, rows: np.ndarray, compact: bool, nullable: bool) -> tuple[Slices, np.ndarray]:
        return self.cursor.length_prefixed(rows, wide=False, nullable=nullable, compact=compact)

    def read(self, rows: np.ndarray, compact: bool) -> None:
        c = self.cursor
        self.protocol_type.fill(*self._string(rows, compact, False))
        self.generation[rows] = c.int32(rows)
        self.protocol.fill(*self._string(rows, compact, True))
        self.leader.fill(*self._string(rows, compact, True))
        with_state = rows[self.version[rows] >= 2]
        self.state_ms[with_state] = c.int64(with_state)
        counts = np.zeros(len(self.version), np.int64)
        counts[rows] = c.count(rows, 1, compact=compact)
        self.member_count[rows] = counts[rows]
        for j in range(int(counts.max(initial=0))):
            active = np.flatnonzero(c.ok & (counts > j))
            if not len(active):
                break
            self._member(active, compact)
        if compact:
            c.no_tagged_fields(rows)

    def _member(self, active: np.ndarray, compact: bool) -> None:
        c = self.cursor
        member_id, _ = self._string(active, compact, False)
        instance = np.zeros(len(active), np.int64), np.zeros(len(active), np.int64), np.ones(len(active), bool)
        static = np.flatnonzero(self.version[active] >= 3)
        if len(static):
            slices, null = self._string(active[static], compact, True)
            instance[0][static], instance[1][static], instance[2][static] = slices.starts, slices.lengths, null
        client_id, _ = self._string(active, compact, False)
        client_host, _ = self._string(active, compact, False)
        rebalance = np.zeros(len(active), np.int64)
        rebalance_present = self.version[active] >= 1
        with_rebalance = np.flatnonzero(rebalance_present)
        if len(with_rebalance):
            rebalance[with_rebalance] = c.int32(active[with_rebalance])
        session = c.int32(active)
        subscription, _ = c.length_prefixed(active, wide=True, nullable=False, compact=compact)
        assignment, _ = c.length_prefixed(active, wide=True, nullable=False, compact=compact)
        if compact:
            c.no_tagged_fields(active)
        self.members.add(
            row=active,
            member_id=member_id.starts,
            member_id_len=member_id.lengths,
            instance=instance[0],
            instance_len=instance[1],
            instance_null=instance[2],
            client_id=client_id.starts,
            client_id_len=client_id.lengths,
            client_host=client_host.starts,
            client_host_len=client_host.lengths,
            rebalance=rebalance,
            rebalance_present=rebalance_present,
            session=session,
            subscription=subscription.starts,
            subscription_len=subscription.lengths,
            assignment=assignment.starts,
            assignment_len=assignment.lengths,
        )


def _nullable_strings(data: np.ndarray, field: _Strings, rows: np.ndarray, absent: np.ndarray) -> pa.Array:
    null = field.null[rows] | absent
    strings = string_slices(data, field.starts[rows], np.where(null, 0, field.lengths[rows]))[0]
    return pc.if_else(pa.array(null), pa.scalar(None, pa.string()), strings) if null.any() else strings


def decode_group_metadata(keys: pa.Array, values: pa.Array, row_type: pa.StructType) -> GroupMetadataColumns:
    """Decode every GroupMetadata record the path accepts (see the module docstring) into `row_type` (the
    `group_metadata` struct of `DECODED_OFFSETS_BATCH`), members as `member_columns.members_array` gives them."""
    k, v = BinaryColumn.of(keys), BinaryColumn.of(values)
    n = len(k.starts)
    key_type = np.where(k.valid & (k.ends - k.starts >= 4), k.int16(k.starts), -1)
    key = FieldCursor(k, key_type == _GROUP_METADATA_KEY_TYPE, k.starts + 2)
    group, _ = key.length_prefixed(np.flatnonzero(key.ok), wide=False, nullable=False)
    key.ok &= key.pos == k.ends
    group_starts, group_lengths = np.zeros(n, np.int64), np.zeros(n, np.int64)
    group_starts[group.rows], group_lengths[group.rows] = group.starts, group.lengths

    tombstone = ~v.valid
    version = np.where(v.valid & (v.ends - v.starts >= 2), v.int16(v.starts), -1)
    value = FieldCursor(v, key.ok & (tombstone | ((version >= 0) & (version <= _NEWEST_VERSION))), v.starts + 2)
    reader = _ValueReader(value, version)
    live = value.ok & ~tombstone
    reader.read(np.flatnonzero(live & (version < 4)), compact=False)
    reader.read(np.flatnonzero(live & (version == 4)), compact=True)
    accepted = value.ok & (tombstone | (value.pos == v.ends)) & (reader.state_ms <= MAX_TIMESTAMP_MS)

    members = reader.members.joined()
    member_rows = members["row"]
    every_row = np.arange(n)
    decline_invalid_strings(k.data, Slices(every_row, group_starts, group_lengths), accepted)
    for field in (reader.protocol_type, reader.protocol, reader.leader):
        lengths = np.where(field.null, 0, field.lengths)
        decline_invalid_strings(v.data, Slices(every_row, field.starts, lengths), accepted)
    for name in ("member_id", "instance", "client_id", "client_host"):
        decline_invalid_strings(v.data, Slices(member_rows, members[name], members[f"{name}_len"]), accepted)

    rows = np.flatnonzero(accepted)
    dead = tombstone[rows]
    kept = np.flatnonzero(accepted[member_rows])
    kept = kept[np.argsort(member_rows[kept], kind="stable")]  # row by row, each row's members in list order
    m = {name: column[kept] for name, column in members.items()}
    protocol_type = _nullable_strings(v.data, reader.protocol_type, rows, dead)
    consumer = np.asarray(pc.fill_null(pc.equal(protocol_type, CONSUMER_PROTOCOL_TYPE), False))
    position = np.cumsum(accepted) - 1  # a row's position among the accepted rows
    arrays = {
        "group_id": string_slices(k.data, group_starts[rows], group_lengths[rows])[0],
        "protocol_type": protocol_type,
        "generation": pa.array(reader.generation[rows], pa.int64(), mask=dead),
        "protocol": _nullable_strings(v.data, reader.protocol, rows, dead),
        "leader": _nullable_strings(v.data, reader.leader, rows, dead),
        "state_ts": pa.array(
            np.maximum(reader.state_ms[rows], 0) * 1000,
            pa.timestamp("us", tz="UTC"),
            mask=dead | (reader.state_ms[rows] < 0),
        ),
        "member_count": pa.array(reader.member_count[rows], pa.int64(), mask=dead),
        "members": _members_column(v, m, consumer[position[m["row"]]], rows, dead, row_type.field("members").type),
        "is_tombstone": pa.array(dead),
        "value_version": pa.array(version[rows], pa.int64(), mask=dead),
    }
    fields = list(row_type)
    columns = [arrays[f.name].cast(f.type) for f in fields]
    return GroupMetadataColumns(accepted, pa.StructArray.from_arrays(columns, fields=fields))


def _members_column(
    v: BinaryColumn,
    m: dict[str, np.ndarray],
    consumer: np.ndarray,
    rows: np.ndarray,
    dead: np.ndarray,
    list_type: pa.ListType,
) -> pa.Array:
    """The accepted rows' `members` lists (null for a tombstone); consumer groups' members with their
    Subscription/Assignment decoded (`consumer_protocol_array`), the others' decoded columns null."""
    member_type: pa.StructType = list_type.value_type
    subscriptions = byte_slices(v.data, m["subscription"], m["subscription_len"])
    assignments = byte_slices(v.data, m["assignment"], m["assignment_len"])
    copied = {
        "memberId": string_slices(v.data, m["member_id"], m["member_id_len"])[0],
        "groupInstanceId": pc.if_else(
            pa.array(m["instance_null"]),
            pa.scalar(None, pa.string()),
            string_slices(v.data, m["instance"], np.where(m["instance_null"], 0, m["instance_len"]))[0],
        ),
        "clientId": string_slices(v.data, m["client_id"], m["client_id_len"])[0],
        "clientHost": string_slices(v.data, m["client_host"], m["client_host_len"])[0],
        "rebalanceTimeout": pa.array(m["rebalance"], pa.int64(), mask=~m["rebalance_present"]),
        "sessionTimeout": pa.array(m["session"], pa.int64()),
        "subscription": subscriptions,
        "assignment": assignments,
    }
    by_name = {name: copied[kafka_field] for name, kafka_field in MEMBER_KAFKA_FIELDS}
    decoded_type = pa.struct([f for f in member_type if f.name not in by_name])
    if consumer.all():  # the usual batch: every member's payloads are the ConsumerProtocol's
        spread = consumer_protocol_array(subscriptions, assignments, decoded_type)
    else:
        which = pa.array(np.flatnonzero(consumer))
        decoded = consumer_protocol_array(subscriptions.take(which), assignments.take(which), decoded_type)
        spread_index = np.full(len(consumer), -1, np.int64)
        spread_index[which.to_numpy()] = np.arange(len(which))
        spread = decoded.take(pa.array(spread_index, mask=spread_index < 0))
    by_name.update(zip((f.name for f in decoded_type), spread.flatten(), strict=True))
    values = pa.StructArray.from_arrays([by_name[f.name].cast(f.type) for f in member_type], fields=list(member_type))
    counts = np.bincount(np.searchsorted(rows, m["row"]), minlength=len(rows)) if len(rows) else np.zeros(0, np.int64)
    offsets = np.zeros(len(rows) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values, type=list_type, mask=pa.array(dead))
