"""Batch decoding of `__consumer_offsets` (what runs inside mapInArrow): routing, columns, reconciliation."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from rebalance_radar.pipelines.local.sample_dump import sample_records
from rebalance_radar.transforms.offsets_batch import decoded_batch_ddl, route_offsets_batch, route_offsets_row
from rebalance_radar.transforms.schemas import MEMBER_COLUMNS
from rebalance_radar.transforms.wire.consumer_protocol import encode_assignment, encode_subscription
from rebalance_radar.transforms.wire.coordinator_records import encode_coordinator_record
from tests.cyclic_collections import cyclic_collections


@pytest.fixture(scope="module")
def arrow_schema(spark: object) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    return to_arrow_schema(StructType.fromDDL(decoded_batch_ddl()))


def _kafka_batch(records: list[tuple[bytes | None, bytes | None]]) -> pa.RecordBatch:
    n = len(records)
    return pa.RecordBatch.from_pydict(
        {
            "key": pa.array([k for k, _ in records], pa.binary()),
            "value": pa.array([v for _, v in records], pa.binary()),
            "topic": ["__consumer_offsets"] * n,
            "partition": pa.array([i % 3 for i in range(n)], pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([1_700_000_000_000_000 + i for i in range(n)], pa.timestamp("us", tz="UTC")),
        }
    )


def test_every_input_row_is_routed_exactly_once(arrow_schema: pa.Schema) -> None:
    records = [(r.key, r.value) for r in sample_records() if r.is_coordinator_record]
    out = route_offsets_batch(_kafka_batch(records), arrow_schema)
    assert out.num_rows == len(records)
    targets = out.column("target").to_pylist()
    counts = {t: targets.count(t) for t in set(targets)}
    assert counts == {"offset_commits": 7, "group_metadata": 5, "group_records": 22, "quarantine": 5}
    # the Kafka coordinates survive
    assert out.column("src_offset").to_pylist() == list(range(len(records)))
    for i, target in enumerate(targets):
        payloads = {
            c: out.column(c)[i].as_py() for c in ("offset_commit", "group_metadata", "group_record", "quarantine")
        }
        filled = [c for c, v in payloads.items() if v is not None]
        assert len(filled) == 1, (i, target, filled)


def test_offset_commit_columns() -> None:
    key, value = encode_coordinator_record(
        1,
        {"group": "g", "topic": "t", "partition": 4},
        4,
        {
            "offset": 42,
            "leaderEpoch": 3,
            "metadata": "m",
            "commitTimestamp": 1_700_000_000_123,
            "topicId": "MKXx1fIkQy2J9jXHhK8m1w",
        },
    )
    target, row = route_offsets_row(key, value)
    assert target == "offset_commit"
    assert row | {} == {
        "group_id": "g",
        "topic": "t",
        "partition": 4,
        "committed_offset": 42,
        "leader_epoch": 3,
        "metadata": "m",
        "commit_ts": 1_700_000_000_123_000,
        "expire_ts": None,
        "topic_id": "MKXx1fIkQy2J9jXHhK8m1w",
        "is_tombstone": False,
        "key_version": 1,
        "value_version": 4,
    }
    _, tombstone = route_offsets_row(key, None)
    assert tombstone["is_tombstone"] is True and tombstone["committed_offset"] is None


def test_group_metadata_members_carry_decoded_consumer_protocol() -> None:
    member = {
        "memberId": "m-1",
        "groupInstanceId": None,
        "clientId": "c-1",
        "clientHost": "/10.0.0.1",
        "rebalanceTimeout": 300000,
        "sessionTimeout": 45000,
        "subscription": encode_subscription(
            3,
            {
                "topics": ["orders", "refunds"],
                "ownedPartitions": [{"topic": "orders", "partitions": [1]}],
                "generationId": 6,
                "rackId": "r1",
            },
        ),
        "assignment": encode_assignment(1, {"assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}]}),
    }
    key, value = encode_coordinator_record(
        2,
        {"group": "g"},
        3,
        {
            "protocolType": "consumer",
            "generation": 7,
            "protocol": "range",
            "leader": "m-1",
            "currentStateTimestamp": 1_700_000_000_000,
            "members": [member],
        },
    )
    target, row = route_offsets_row(key, value)
    assert target == "group_metadata"
    assert row["generation"] == 7 and row["member_count"] == 1
    m = row["members"][0]
    assert m["subscribed_topics"] == ["orders", "refunds"]
    assert m["assigned_partitions"] == [{"topic": "orders", "partitions": [0, 1]}]
    assert m["owned_partitions"] == [{"topic": "orders", "partitions": [1]}]
    assert (m["subscription_generation"], m["rack_id"], m["embedded_error"]) == (6, "r1", None)
    # the member row fills exactly the declared member struct (transforms.schemas.MEMBER_COLUMNS)
    assert set(m) == {c.name for c in MEMBER_COLUMNS}


def test_kip848_record_keeps_payload_json_and_epoch() -> None:
    key, value = encode_coordinator_record(
        8,
        {"groupId": "g", "memberId": "m"},
        0,
        {
            "memberEpoch": 5,
            "previousMemberEpoch": 4,
            "state": 0,
            "assignedPartitions": [],
            "partitionsPendingRevocation": [],
        },
    )
    target, row = route_offsets_row(key, value)
    assert target == "group_record"
    assert (row["group_type"], row["record_type"], row["epoch"], row["member_id"]) == (
        "consumer",
        "ConsumerGroupCurrentMemberAssignment",
        5,
        "m",
    )
    assert json.loads(row["payload"])["previousMemberEpoch"] == 4
    assert row["member_state"] == "STABLE"


@pytest.mark.parametrize(
    ("record_type", "code", "name"),
    [(8, 1, "UNREVOKED_PARTITIONS"), (22, 1, "STABLE"), (22, 2, "UNREVOKED_TASKS"), (14, 2, "UNRELEASED_PARTITIONS")],
)
def test_member_state_codes_depend_on_group_type(record_type: int, code: int, name: str) -> None:
    from rebalance_radar.pipelines.local.sample_dump import example_value
    from rebalance_radar.transforms.wire.coordinator_records import RECORD_TYPES

    rt = RECORD_TYPES[record_type]
    value = example_value(rt.value, 0) | {"state": code}
    key, raw = encode_coordinator_record(record_type, example_value(rt.key, 0), 0, value)
    _, row = route_offsets_row(key, raw)
    assert row["member_state"] == name


@pytest.mark.parametrize(
    ("key", "value", "kind"),
    [
        (None, b"\x00\x00", "malformed"),
        (b"\x00\x63\x00\x00", b"\x00\x00", "unsupported"),
        (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01", b"\x00\x07", "unsupported"),
        (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01", b"\x00\x03\x00", "malformed"),
    ],
)
def test_bad_records_are_quarantined_with_a_reason(key: bytes | None, value: bytes, kind: str) -> None:
    target, row = route_offsets_row(key, value)
    assert target == "quarantine"
    assert row["kind"] == kind and row["reason"] and row["stage"] == "decode_offsets"
    assert row["value"] == value and row["key"] == key


def _group_of_unique_members(group: int) -> tuple[bytes, bytes | None]:
    """A GroupMetadata record whose members' subscriptions and assignments are their own (as in a real group)."""
    members = []
    for i in range(10):
        owned = [{"topic": f"orders-{group}", "partitions": [i, i + 10]}]
        members.append(
            {
                "memberId": f"consumer-{group}-{i}",
                "groupInstanceId": None,
                "clientId": f"consumer-{i}",
                "clientHost": "/10.0.0.1",
                "rebalanceTimeout": 300_000,
                "sessionTimeout": 45_000,
                "subscription": encode_subscription(1, {"topics": [f"orders-{group}"], "ownedPartitions": owned}),
                "assignment": encode_assignment(1, {"assignedPartitions": owned}),
            }
        )
    value = {
        "protocolType": "consumer",
        "generation": group,
        "protocol": "range",
        "leader": "consumer-0",
        "currentStateTimestamp": 1_700_000_000_000,
        "members": members,
    }
    return encode_coordinator_record(2, {"group": f"g{group}"}, 3, value)


def test_no_cyclic_collection_runs_while_a_batch_is_routed(arrow_schema: pa.Schema) -> None:
    """A batch's members are hundreds of thousands of acyclic dicts and lists: the cyclic collector, which walked
    them all at every collection, waits until the batch is done, and is on again after (also after a failure)."""
    import gc

    batch = _kafka_batch([_group_of_unique_members(g) for g in range(2_000)])
    with cyclic_collections() as collections:
        routed = route_offsets_batch(batch, arrow_schema)
    assert gc.isenabled()
    without_offsets = batch.drop_columns(["offset"])
    with pytest.raises(KeyError):
        route_offsets_batch(without_offsets, arrow_schema)
    assert gc.isenabled()
    assert len(collections) <= 1  # at most the one due as the collector comes back on (291 without the pause)
    members = routed.column("group_metadata").to_pylist()
    assert [m["member_id"] for m in members[7]["members"]] == [f"consumer-7-{i}" for i in range(10)]
    assert members[7]["members"][3]["assigned_partitions"] == [{"topic": "orders-7", "partitions": [3, 13]}]
