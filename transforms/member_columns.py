"""The members of a classic GroupMetadata record (`group_metadata.members`): one reference row per member, and the
same members of a whole Arrow batch as columns at once.

A GroupMetadata record carries every member of its group: a Python dict per member, built field by field and then
read back by Arrow, was the largest cost of decoding one (10 members a record: 10.5k records/s on one core with
those dicts, 20.2k without).
The columnar build hands the reader's member dicts to Arrow as they are (one struct conversion, Kafka's field
names), decodes each distinct (subscription, assignment) pair once and spreads it with a `take`, and renames the
fields to `MEMBER_COLUMNS`. `member_row` stays the reference, and tests/transforms/test_offset_commit_columns.py
proves the two give the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

from rebalance_radar.transforms.consumer_protocol_columns import decode_consumer_protocols
from rebalance_radar.transforms.schemas import MEMBER_COLUMNS
from rebalance_radar.transforms.wire.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
)

# Member columns copied from the GroupMetadata member as is (the others come from `consumer_protocol_columns`).
MEMBER_KAFKA_FIELDS: tuple[tuple[str, str], ...] = tuple(
    (c.name, c.kafka_field) for c in MEMBER_COLUMNS if c.kafka_field
)
_COPIED = frozenset(name for name, _ in MEMBER_KAFKA_FIELDS)


def _partitions(items: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if items is None:
        return None
    return [{"topic": t.get("topic"), "partitions": t.get("partitions")} for t in items]


@lru_cache(maxsize=16_384)
def consumer_protocol_columns(subscription: bytes | None, assignment: bytes | None) -> dict[str, Any]:
    """A member's decoded subscription/assignment as member columns (read-only: the result is shared).

    Cached by the bytes themselves: every rebalance rewrites the whole group with mostly unchanged members, so
    the same payloads come back generation after generation.
    """
    sub = decode_subscription(subscription)
    assigned = decode_assignment(assignment)
    errors = [f"{part}: {d.error}" for part, d in (("subscription", sub), ("assignment", assigned)) if d.error]
    sub_data, assign_data = sub.data or {}, assigned.data or {}
    return {
        "subscribed_topics": sub_data.get("topics"),
        "owned_partitions": _partitions(sub_data.get("ownedPartitions")),
        "subscription_generation": sub_data.get("generationId"),
        "rack_id": sub_data.get("rackId"),
        "assigned_partitions": _partitions(assign_data.get("assignedPartitions")),
        "subscription_version": sub.version,
        "assignment_version": assigned.version,
        "embedded_error": "; ".join(errors) or None,
    }


def member_row(member: dict[str, Any], protocol_type: str | None) -> dict[str, Any]:
    """One `group_metadata.members` struct, field by field from `MEMBER_COLUMNS` (the reference)."""
    row: dict[str, Any] = {name: member.get(kafka_field) for name, kafka_field in MEMBER_KAFKA_FIELDS}
    if protocol_type == CONSUMER_PROTOCOL_TYPE:
        row.update(consumer_protocol_columns(row["subscription"], row["assignment"]))
    return row


def consumer_protocol_array(
    subscriptions: pa.Array, assignments: pa.Array, decoded_type: pa.StructType
) -> pa.StructArray:
    """The decoded columns of each (subscription, assignment) pair of two binary arrays: the vectorised path's rows,
    and the reference's (`consumer_protocol_columns`) for the pairs it declined, in input order."""
    fast = decode_consumer_protocols(subscriptions, assignments, decoded_type)
    declined = np.flatnonzero(~fast.accepted)
    if not len(declined):
        return fast.rows
    which = pa.array(declined)
    pairs = zip(subscriptions.take(which).to_pylist(), assignments.take(which).to_pylist(), strict=True)
    by_reader = pa.array([consumer_protocol_columns(s, a) for s, a in pairs], type=decoded_type)
    index = np.empty(len(subscriptions), np.int64)
    index[fast.accepted] = np.arange(len(fast.rows))
    index[declined] = len(fast.rows) + np.arange(len(declined))
    return pa.concat_arrays([fast.rows, by_reader]).take(pa.array(index))


def members_array(groups: Sequence[tuple[list[dict[str, Any]] | None, str | None]], list_type: pa.ListType) -> pa.Array:
    """The `members` column of a batch: one list per (reader's member dicts or None, protocol type) in `groups`,
    each member as `member_row` would give it."""
    member_type: pa.StructType = list_type.value_type
    offsets = [0]
    absent: list[bool] = []
    flat: list[dict[str, Any]] = []
    protocol_index: list[int | None] = []
    pairs: dict[tuple[bytes | None, bytes | None], int] = {}
    for members, protocol_type in groups:
        absent.append(members is None)
        if members is None:
            offsets.append(len(flat))
            continue
        flat.extend(members)
        offsets.append(len(flat))
        if protocol_type == CONSUMER_PROTOCOL_TYPE:
            protocol_index.extend(
                pairs.setdefault((m.get("subscription"), m.get("assignment")), len(pairs)) for m in members
            )
        else:
            protocol_index.extend([None] * len(members))
    kafka_names = dict(MEMBER_KAFKA_FIELDS)
    copied_type = pa.struct([member_type.field(name).with_name(kafka_names[name]) for name in kafka_names])
    copied = pa.array(flat, type=copied_type)  # the reader's dicts as they are: missing fields are null
    decoded_type = pa.struct([f for f in member_type if f.name not in _COPIED])
    decoded = consumer_protocol_array(
        pa.array([s for s, _ in pairs], pa.binary()), pa.array([a for _, a in pairs], pa.binary()), decoded_type
    )
    spread = decoded.take(pa.array(protocol_index, pa.int32())).flatten()  # null index: a non-consumer member
    by_name = dict(zip((f.name for f in decoded_type), spread, strict=True))
    by_name.update(zip(kafka_names, copied.flatten(), strict=True))
    values = pa.StructArray.from_arrays([by_name[f.name] for f in member_type], fields=list(member_type))
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), values, type=list_type, mask=pa.array(absent, pa.bool_())
    )
