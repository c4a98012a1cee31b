"""Routing of `__consumer_offsets` records into the silver tables: Arrow record batches of Kafka rows in, one
routed row out per input row, so counts reconcile (rows in = offset_commits + group_metadata + group_records +
quarantine).

Runs inside Spark's `mapInArrow` (no per-row Python UDF): each record is decoded by the codec's front door
(`transforms.wire.coordinator_records.decode_record`), each output row names its `target` table and fills the
struct column for that table (`DECODED_OFFSETS_BATCH` in transforms/schemas.py); `pipelines.stages.ingest` splits the
batch into the Delta tables.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from rebalance_radar.transforms.cyclic_gc import cyclic_gc_paused
from rebalance_radar.transforms.group_metadata_columns import decode_group_metadata
from rebalance_radar.transforms.member_columns import member_row, members_array
from rebalance_radar.transforms.offset_commit_columns import decode_offset_commits
from rebalance_radar.transforms.schemas import (
    DECODED_OFFSETS_BATCH,
    GROUP_METADATA,
    MAX_TIMESTAMP_MS,
    OFFSET_COMMITS,
    QuarantineStage,
    quarantine_row,
)
from rebalance_radar.transforms.wire.coordinator_records import DecodedRecord, decode_record
from rebalance_radar.transforms.wire.errors import DecodeError
from rebalance_radar.transforms.wire.json_form import to_kafka_json
from rebalance_radar.transforms.wire.member_states import member_state_name

PAYLOAD_COLUMNS: tuple[str, ...] = tuple(p.column for p in DECODED_OFFSETS_BATCH.payloads)
TARGET_OF_PAYLOAD: dict[str, str] = {p.column: p.table.name for p in DECODED_OFFSETS_BATCH.payloads}
# the payload the vectorised path fills (transforms.offset_commit_columns)
OFFSET_COMMIT_COLUMN: str = next(p.column for p in DECODED_OFFSETS_BATCH.payloads if p.table is OFFSET_COMMITS)
GROUP_METADATA_COLUMN: str = next(p.column for p in DECODED_OFFSETS_BATCH.payloads if p.table is GROUP_METADATA)


def decoded_batch_ddl() -> str:
    """Spark DDL of `route_offsets_batches` output: Kafka coordinates, target table, one struct per table."""
    return DECODED_OFFSETS_BATCH.ddl


def _ts(ms: int | None) -> int | None:
    """Milliseconds since the epoch as Arrow/Spark microseconds; Kafka's -1 means 'not set'. A value no timestamp
    column can hold is bad bytes (quarantined), not a failed batch."""
    if ms is None or ms < 0:
        return None
    if ms > MAX_TIMESTAMP_MS:
        raise DecodeError(f"timestamp {ms} ms is beyond what a timestamp column holds", offset=0, part="value")
    return ms * 1000


def _first(data: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in data:
            return data[name]
    return None


class _BatchBuilder:
    """Column lists for one output batch; one `append` call per input row. `group_metadata` rows hold the reader's
    member dicts (`_routed_row`): built member by member (`member_row`, the reference) or, `columnar_members`, as
    columns at once (`members_array`)."""

    def __init__(self, schema: pa.Schema, *, columnar_members: bool = False) -> None:
        self.schema = schema
        self.columnar_members = columnar_members
        self.targets: list[str] = []
        self.payloads: dict[str, list[dict[str, Any] | None]] = {column: [] for column in PAYLOAD_COLUMNS}

    def append(self, payload_column: str, row: dict[str, Any]) -> None:
        self.targets.append(TARGET_OF_PAYLOAD[payload_column])
        for column, values in self.payloads.items():
            values.append(row if column == payload_column else None)

    def build(self, source: pa.RecordBatch) -> pa.RecordBatch:
        arrays = _coordinates(source, self.schema)
        arrays.append(pa.array(self.targets, pa.string()))
        for column in PAYLOAD_COLUMNS:
            rows, struct_type = self.payloads[column], self.schema.field(column).type
            if column == GROUP_METADATA_COLUMN:
                arrays.append(self._group_metadata(rows, struct_type))
            else:
                arrays.append(pa.array(rows, type=struct_type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _group_metadata(self, rows: list[dict[str, Any] | None], struct_type: pa.StructType) -> pa.Array:
        if not self.columnar_members:
            return pa.array([None if r is None else _with_member_rows(r) for r in rows], type=struct_type)
        members_type = struct_type.field("members").type
        others = pa.array(rows, type=pa.struct([f for f in struct_type if f.name != "members"]))
        members = members_array(
            [(None, None) if r is None else (r["members"], r["protocol_type"]) for r in rows], members_type
        )
        children = [members if f.name == "members" else others.field(f.name) for f in struct_type]
        return pa.StructArray.from_arrays(children, fields=list(struct_type), mask=others.is_null())


def _quarantine_row(exc: DecodeError, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    record_type = exc.record_type if exc.record_type is not None and -32768 <= exc.record_type < 32768 else None
    return quarantine_row(
        QuarantineStage.DECODE_OFFSETS,
        str(exc.kind),
        exc.message,
        record_type=record_type,
        value_version=exc.version,
        error_offset=exc.offset,
        key=key,
        value=value,
    )


def _with_member_rows(row: dict[str, Any]) -> dict[str, Any]:
    """A `group_metadata` row of `_routed_row` with its members as `member_row` gives them."""
    members = row["members"]
    if members is None:
        return row
    return {**row, "members": [member_row(m, row["protocol_type"]) for m in members]}


def route_offsets_row(key: bytes | None, value: bytes | None) -> tuple[str, dict[str, Any]]:
    """Route one `__consumer_offsets` record: (payload column, row). Never raises for bad bytes."""
    column, row = _route_record(key, value)
    return column, (_with_member_rows(row) if column == GROUP_METADATA_COLUMN else row)


def _route_record(key: bytes | None, value: bytes | None) -> tuple[str, dict[str, Any]]:
    """`route_offsets_row`, with a `group_metadata` row's members left as the reader's dicts."""
    decoded = decode_record(key, value)
    if decoded.error is not None:
        return "quarantine", _quarantine_row(decoded.error, key, value)
    try:
        return _routed_row(decoded)
    except DecodeError as exc:  # a decoded field no column can hold
        record_type = decoded.record_type.id if decoded.record_type is not None else None
        error = exc.with_context(record_type=record_type, version=decoded.value_version, part="value")
        return "quarantine", _quarantine_row(error, key, value)


def _routed_row(decoded: DecodedRecord) -> tuple[str, dict[str, Any]]:
    """The payload column and row of a record that decoded (a `group_metadata` row's members: the reader's dicts)."""
    record_type, key_data, data, version = decoded.record_type, decoded.key, decoded.value, decoded.value_version
    assert record_type is not None and key_data is not None  # a record without error has a decoded key
    tombstone = data is None
    type_id = record_type.id
    if type_id in (0, 1):
        d = data or {}
        return "offset_commit", {
            "group_id": key_data["group"],
            "topic": key_data["topic"],
            "partition": key_data["partition"],
            "committed_offset": d.get("offset"),
            "leader_epoch": d.get("leaderEpoch", -1) if not tombstone else None,
            "metadata": d.get("metadata"),
            "commit_ts": _ts(d.get("commitTimestamp")),
            "expire_ts": _ts(d.get("expireTimestamp")),
            "topic_id": d.get("topicId"),
            "is_tombstone": tombstone,
            "key_version": type_id,
            "value_version": version,
        }
    if type_id == 2:
        d = data or {}
        members = d.get("members")
        return GROUP_METADATA_COLUMN, {
            "group_id": key_data["group"],
            "protocol_type": d.get("protocolType"),
            "generation": d.get("generation"),
            "protocol": d.get("protocol"),
            "leader": d.get("leader"),
            "state_ts": _ts(d.get("currentStateTimestamp")),
            "member_count": None if members is None else len(members),
            "members": members,
            "is_tombstone": tombstone,
            "value_version": version,
        }
    return "group_record", {
        "group_id": key_data.get("groupId"),
        "group_type": record_type.group_type,
        "record_type": record_type.name,
        "record_type_id": type_id,
        "key_version": type_id,
        "value_version": version,
        "epoch": None if data is None else _first(data, "epoch", "assignmentEpoch", "memberEpoch"),
        "member_id": key_data.get("memberId"),
        "member_state": None if data is None else member_state_name(record_type.group_type, data.get("state")),
        "is_tombstone": tombstone,
        "payload": None if data is None else json.dumps(to_kafka_json(data), separators=(",", ":")),
    }


def route_offsets_batch_by_rows(
    batch: pa.RecordBatch, schema: pa.Schema, *, columnar_members: bool = False
) -> pa.RecordBatch:
    """Route one Arrow batch row by row through the codec's front door (the reference the fast path must match,
    with members row by row too)."""
    builder = _BatchBuilder(schema, columnar_members=columnar_members)
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    for key, value in zip(keys, values, strict=True):
        column, row = _route_record(key, value)
        builder.append(column, row)
    return builder.build(batch)


def route_offsets_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Route one Arrow batch of Kafka rows (key, value, topic, partition, offset, timestamp): OffsetCommit records
    the vectorised path accepts become columns at once, every other row goes through the codec row by row; the
    output keeps the input's row order. The cyclic garbage collector waits until the batch is done
    (`cyclic_gc_paused`)."""
    with cyclic_gc_paused():
        return _route_offsets_batch(batch, schema)


def _route_offsets_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    keys, values = batch.column("key"), batch.column("value")
    commits = decode_offset_commits(keys, values, schema.field(OFFSET_COMMIT_COLUMN).type)
    rest = ~commits.accepted
    if not rest.any():  # a batch of offset commits only (the common case while catching up): no merge
        arrays = _coordinates(batch, schema)
        arrays.append(pa.repeat(pa.scalar(TARGET_OF_PAYLOAD[OFFSET_COMMIT_COLUMN], pa.string()), batch.num_rows))
        arrays += [
            commits.rows if column == OFFSET_COMMIT_COLUMN else pa.nulls(batch.num_rows, schema.field(column).type)
            for column in PAYLOAD_COLUMNS
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
    others = pa.array(rest)
    groups = decode_group_metadata(keys.filter(others), values.filter(others), schema.field(GROUP_METADATA_COLUMN).type)
    group_accepted = np.zeros(batch.num_rows, bool)
    group_accepted[np.flatnonzero(rest)[groups.accepted]] = True
    # each vectorised path fills its own payload column; the codec routes the rows neither accepted
    fast = (
        (OFFSET_COMMIT_COLUMN, commits.accepted, commits.rows),
        (GROUP_METADATA_COLUMN, group_accepted, groups.rows),
    )
    slow = rest & ~group_accepted
    arrays = _coordinates(batch, schema)
    by_rows = (
        route_offsets_batch_by_rows(batch.filter(pa.array(slow)), schema, columnar_members=True) if slow.any() else None
    )
    # per payload column: the fast path's rows first, then the codec's; one `take` puts each row in its place
    targets: list[pa.Array] = []
    target_index = np.full(batch.num_rows, -1, np.int64)
    taken = 0
    for column, accepted, rows in fast:
        targets.append(pa.repeat(pa.scalar(TARGET_OF_PAYLOAD[column], pa.string()), len(rows)))
        target_index[accepted] = taken + np.arange(len(rows))
        taken += len(rows)
    if by_rows is not None:
        targets.append(by_rows.column("target"))
        target_index[slow] = taken + np.arange(int(slow.sum()))
    arrays.append(pa.concat_arrays(targets).take(pa.array(target_index)))
    for column in PAYLOAD_COLUMNS:
        parts: list[pa.Array] = []
        index = np.full(batch.num_rows, -1, np.int64)
        for fast_column, accepted, rows in fast:
            if fast_column == column:
                parts.append(rows)
                index[accepted] = np.arange(len(rows))
        if by_rows is not None:
            index[slow] = sum(len(p) for p in parts) + np.arange(int(slow.sum()))
            parts.append(by_rows.column(column))
        if not parts:
            arrays.append(pa.nulls(batch.num_rows, schema.field(column).type))
            continue
        arrays.append(pa.concat_arrays(parts).take(pa.array(index, mask=index < 0)))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _coordinates(batch: pa.RecordBatch, schema: pa.Schema) -> list[pa.Array]:
    """The Kafka coordinates of every row (topic, partition, offset, timestamp) as the output schema types them."""
    return [
        batch.column(name).cast(schema.field(i).type)
        for i, name in enumerate(("topic", "partition", "offset", "timestamp"))
    ]


def route_offsets_batches(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The `mapInArrow` function body: every input batch becomes one routed output batch."""
    for batch in batches:
        yield route_offsets_batch(batch, schema)
