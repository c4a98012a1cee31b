"""The vectorised paths against the codec: for any bytes, `route_offsets_batch` (the OffsetCommit fast path, the
codec for what it declines, GroupMetadata members built as columns) gives exactly the batch
`route_offsets_batch_by_rows` (the codec for every row, members row by row) gives: same rows, same columns, same
quarantine, same order."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rebalance_radar.transforms.group_metadata_columns import decode_group_metadata
from rebalance_radar.transforms.offset_commit_columns import decode_offset_commits
from rebalance_radar.transforms.offsets_batch import (
    GROUP_METADATA_COLUMN,
    OFFSET_COMMIT_COLUMN,
    decoded_batch_ddl,
    route_offsets_batch,
    route_offsets_batch_by_rows,
)
from rebalance_radar.transforms.schemas import MAX_TIMESTAMP_MS
from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.consumer_protocol import encode_assignment, encode_subscription
from rebalance_radar.transforms.wire.coordinator_records import decode_record, encode_coordinator_record
from tests.data_files import load_jsonl

Record = tuple[bytes | None, bytes | None]


@pytest.fixture(scope="module")
def arrow_schema(spark: object) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    return to_arrow_schema(StructType.fromDDL(decoded_batch_ddl()))


def _kafka_batch(records: list[Record]) -> pa.RecordBatch:
    n = len(records)
    return pa.RecordBatch.from_pydict(
        {
            "key": pa.array([k for k, _ in records], pa.binary()),
            "value": pa.array([v for _, v in records], pa.binary()),
            "topic": ["__consumer_offsets"] * n,
            "partition": pa.array([i % 5 for i in range(n)], pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([1_700_000_000_000_000 + i for i in range(n)], pa.timestamp("us", tz="UTC")),
        }
    )


def _assert_same_batch(records: list[Record], schema: pa.Schema) -> int:
    """The two routings agree on `records`; returns how many rows the fast path accepted."""
    batch = _kafka_batch(records)
    fast = route_offsets_batch(batch, schema)
    reference = route_offsets_batch_by_rows(batch, schema)
    for name in schema.names:  # Arrow equality: timestamps past year 9999 have no Python datetime
        assert fast.column(name).equals(reference.column(name)), (name, fast.column(name), reference.column(name))
    assert fast.schema == reference.schema
    accepted = decode_offset_commits(
        batch.column("key"), batch.column("value"), schema.field(OFFSET_COMMIT_COLUMN).type
    )
    return int(accepted.accepted.sum())


def _hex(text: str | None) -> bytes | None:
    return None if text is None else bytes.fromhex(text)


SHARED_VECTORS: list[Record] = [
    (_hex(v["key_hex"]), _hex(v["value_hex"]))
    for name in ("consumer_offsets_vectors.jsonl", "embedded_broker_offsets.jsonl")
    for v in load_jsonl("vectors", name)
]


def test_shared_vectors_route_the_same(arrow_schema: pa.Schema) -> None:
    accepted = _assert_same_batch(SHARED_VECTORS, arrow_schema)
    commits = sum(1 for key, _ in SHARED_VECTORS if key is not None and key[:2] in (b"\x00\x00", b"\x00\x01"))
    assert 0 < accepted <= commits  # the fast path takes part, and only offset commits


def test_real_group_metadata_records_take_the_fast_path(arrow_schema: pa.Schema) -> None:
    """Every GroupMetadata record of the shared vectors (value v1-v4, a tombstone) and those a Kafka 4.3.1 broker
    wrote for a Java consumer's group (v3) is decoded by the vectorised path, and routes as the codec routes it."""
    groups = [(k, v) for k, v in SHARED_VECTORS if k is not None and k[:2] == b"\x00\x02"]
    assert len(groups) >= 10
    _assert_same_batch(groups, arrow_schema)
    batch = _kafka_batch(groups)
    decoded = decode_group_metadata(
        batch.column("key"), batch.column("value"), arrow_schema.field(GROUP_METADATA_COLUMN).type
    )
    assert decoded.accepted.all()


TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
TIMESTAMP_MS = st.one_of(st.just(-1), st.integers(0, 2**42), st.integers(-(2**63), 2**63 - 1))


@st.composite
def offset_commit_record(draw: st.DrawFn) -> Record:
    """A well-formed OffsetCommit record of any key type and value version the codec knows (or a tombstone)."""
    key_type = draw(st.sampled_from((0, 1)))
    key = {"group": draw(TEXT), "topic": draw(TEXT), "partition": draw(st.integers(-(2**31), 2**31 - 1))}
    version = 0 if key_type == 0 else draw(st.integers(0, 4))
    if draw(st.integers(0, 9)) == 0:
        return encode_coordinator_record(key_type, key, None, None)
    value: dict[str, object] = {
        "offset": draw(st.integers(-(2**63), 2**63 - 1)),
        "metadata": draw(st.one_of(TEXT, st.text(max_size=200))),
        "commitTimestamp": draw(TIMESTAMP_MS),
    }
    if version >= 3:
        value["leaderEpoch"] = draw(st.integers(-(2**31), 2**31 - 1))
    if version == 1:
        value["expireTimestamp"] = draw(TIMESTAMP_MS)
    if version == 4 and draw(st.booleans()):
        raw = draw(st.one_of(st.just(bytes(16)), st.binary(min_size=16, max_size=16)))
        value["topicId"] = prim.uuid_to_text(raw)
    return encode_coordinator_record(key_type, key, version, value)


@st.composite
def damaged(draw: st.DrawFn, record: st.SearchStrategy[Record]) -> Record:
    """A record with its bytes cut, extended, overwritten or replaced: what the fast path must decline or decode
    exactly like the codec."""
    key, value = draw(record)
    part = draw(st.sampled_from(("key", "value")))
    raw = key if part == "key" else value
    if raw is None:
        return key, value
    how = draw(st.sampled_from(("cut", "extend", "overwrite", "null")))
    if how == "cut":
        raw = raw[: draw(st.integers(0, max(len(raw) - 1, 0)))]
    elif how == "extend":
        raw = raw + draw(st.binary(min_size=1, max_size=20))
    elif how == "overwrite" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        patch = draw(st.binary(min_size=1, max_size=4))
        raw = raw[:at] + patch + raw[at + len(patch) :]
    else:
        raw = None
    return (raw, value) if part == "key" else (key, raw)


PARTITIONS = st.lists(
    st.fixed_dictionaries({"topic": TEXT, "partitions": st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4)}),
    max_size=3,
)


@st.composite
def consumer_protocol_bytes(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A member's subscription and assignment: well formed at any version, or any bytes (an error column)."""
    version = draw(st.integers(0, 3))
    subscription = {"topics": draw(st.lists(TEXT, max_size=3)), "userData": None}
    if version >= 1:
        subscription["ownedPartitions"] = draw(PARTITIONS)
    if version >= 2:
        subscription["generationId"] = draw(st.integers(-1, 2**31 - 1))
    if version >= 3:
        subscription["rackId"] = draw(st.one_of(st.none(), TEXT))
    encoded = (
        encode_subscription(version, subscription),
        encode_assignment(min(version, 1), {"assignedPartitions": draw(PARTITIONS), "userData": None}),
    )
    return draw(st.one_of(st.just(encoded), st.tuples(st.binary(max_size=30), st.binary(max_size=30))))


@st.composite
def group_metadata_record(draw: st.DrawFn) -> Record:
    """A classic group's GroupMetadata record of any value version (or a tombstone): consumer groups, other
    protocol types (connect), members with and without static ids, repeated subscriptions."""
    key = {"group": draw(TEXT)}
    if draw(st.integers(0, 9)) == 0:
        return encode_coordinator_record(2, key, None, None)
    version = draw(st.integers(0, 4))
    shared = draw(consumer_protocol_bytes())
    members = []
    for _ in range(draw(st.integers(0, 4))):
        subscription, assignment = draw(st.one_of(st.just(shared), consumer_protocol_bytes()))
        member: dict[str, object] = {
            "memberId": draw(TEXT),
            "clientId": draw(TEXT),
            "clientHost": draw(TEXT),
            "sessionTimeout": draw(st.integers(-(2**31), 2**31 - 1)),
            "subscription": subscription,
            "assignment": assignment,
        }
        if version >= 1:
            member["rebalanceTimeout"] = draw(st.integers(-(2**31), 2**31 - 1))
        if version >= 3:
            member["groupInstanceId"] = draw(st.one_of(st.none(), TEXT))
        members.append(member)
    value: dict[str, object] = {
        "protocolType": draw(st.sampled_from(("consumer", "connect", ""))),
        "generation": draw(st.integers(-(2**31), 2**31 - 1)),
        "protocol": draw(st.one_of(st.none(), TEXT)),
        "leader": draw(st.one_of(st.none(), TEXT)),
        "members": members,
    }
    if version >= 2:
        value["currentStateTimestamp"] = draw(TIMESTAMP_MS)
    return encode_coordinator_record(2, key, version, value)


RECORDS = st.lists(
    st.one_of(
        offset_commit_record(),
        damaged(offset_commit_record()),
        group_metadata_record(),
        damaged(group_metadata_record()),
        st.tuples(st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=60))),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=RECORDS)
def test_any_bytes_route_the_same(arrow_schema: pa.Schema, records: list[Record]) -> None:
    _assert_same_batch(records, arrow_schema)


@settings(max_examples=100, deadline=None)
@given(records=st.lists(offset_commit_record(), min_size=1, max_size=30))
def test_well_formed_commits_take_the_fast_path(arrow_schema: pa.Schema, records: list[Record]) -> None:
    """Well-formed commits are accepted unless a timestamp is beyond what microseconds hold (the codec's case)."""
    accepted = _assert_same_batch(records, arrow_schema)
    out_of_range = sum(1 for _, value in records if value is not None and _huge_timestamp(value))
    assert accepted >= len(records) - out_of_range


def test_a_long_compact_metadata_takes_the_fast_path(arrow_schema: pa.Schema) -> None:
    """A v4 metadata of 127 bytes or more has a two-byte varint length (found by hypothesis: the path declined it);
    a length the varint spells in three bytes is still left to the codec, and both give the reader's rows."""
    key = {"group": "g", "topic": "t", "partition": 3}
    records = [
        encode_coordinator_record(
            1, key, 4, {"offset": 7, "leaderEpoch": 1, "metadata": "m" * size, "commitTimestamp": 1_700_000_000_000}
        )
        for size in (126, 127, 300, 16_382, 16_383)
    ]
    assert _assert_same_batch(records, arrow_schema) == 4


def _huge_timestamp(value: bytes) -> bool:
    """A commit or expire timestamp whose microseconds overflow int64 (left to the codec)."""
    from rebalance_radar.transforms.wire.coordinator_records import decode_record

    key = prim.INT16.pack(1) + b"\x00\x00\x00\x00\x00\x00\x00\x00"
    data = decode_record(key, value).value or {}
    limit = MAX_TIMESTAMP_MS
    return any(data.get(name, -1) > limit for name in ("commitTimestamp", "expireTimestamp"))


def test_invalid_utf8_and_trailing_bytes_are_left_to_the_codec(arrow_schema: pa.Schema) -> None:
    key, value = encode_coordinator_record(1, {"group": "g", "topic": "t", "partition": 0}, 3, {"metadata": "ab"})
    assert value is not None
    bad_utf8 = value.replace(b"ab", b"\xff\xfe")
    records: list[Record] = [(key, value), (key, bad_utf8), (key + b"\x00", value), (key, value + b"\x00")]
    batch = _kafka_batch(records)
    fast = decode_offset_commits(batch.column("key"), batch.column("value"), arrow_schema.field("offset_commit").type)
    assert fast.accepted.tolist() == [True, False, False, False]
    _assert_same_batch(records, arrow_schema)


def test_sliced_arrow_input_is_read_at_its_offset(arrow_schema: pa.Schema) -> None:
    records = [
        encode_coordinator_record(1, {"group": f"g{i}", "topic": "orders", "partition": i}, 3, {"offset": i})
        for i in range(10)
    ]
    batch = _kafka_batch(records).slice(3, 4)
    out = route_offsets_batch(batch, arrow_schema)
    assert [row["group_id"] for row in out.column("offset_commit").to_pylist()] == ["g3", "g4", "g5", "g6"]
    assert out.to_pylist() == route_offsets_batch_by_rows(batch, arrow_schema).to_pylist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(group_metadata_record(), min_size=1, max_size=12))
def test_well_formed_group_metadata_takes_the_fast_path(arrow_schema: pa.Schema, records: list[Record]) -> None:
    """GroupMetadata records of every value version (tombstones, other protocol types, odd member payloads) are
    accepted by the vectorised path unless a timestamp is beyond what microseconds hold, and route the same."""
    _assert_same_batch(records, arrow_schema)
    batch = _kafka_batch(records)
    groups = decode_group_metadata(
        batch.column("key"), batch.column("value"), arrow_schema.field(GROUP_METADATA_COLUMN).type
    )
    out_of_range = sum(1 for _, value in records if value is not None and _huge_group_timestamp(value))
    assert int(groups.accepted.sum()) >= len(records) - out_of_range


def _huge_group_timestamp(value: bytes) -> bool:
    version = int.from_bytes(value[:2], "big", signed=True)
    if version < 2:
        return False
    decoded = decode_record(prim.INT16.pack(2) + prim.INT16.pack(1) + b"g", value).value or {}
    return decoded.get("currentStateTimestamp", -1) > MAX_TIMESTAMP_MS


def test_group_metadata_and_commits_alone_need_no_row_by_row_pass(arrow_schema: pa.Schema) -> None:
    """A batch of only well-formed commits and GroupMetadata records: both vectorised paths, nothing else."""
    commit = encode_coordinator_record(1, {"group": "g", "topic": "t", "partition": 0}, 3, _COMMIT_VALUE)
    group = encode_coordinator_record(2, {"group": "g"}, 3, _GROUP_VALUE)
    tombstone = encode_coordinator_record(2, {"group": "g"}, None, None)
    assert _assert_same_batch([commit, group, tombstone, commit, group], arrow_schema) == 2
    batch = _kafka_batch([commit, group, tombstone])
    groups = decode_group_metadata(
        batch.column("key"), batch.column("value"), arrow_schema.field(GROUP_METADATA_COLUMN).type
    )
    assert groups.accepted.tolist() == [False, True, True]


_COMMIT_VALUE = {"offset": 7, "leaderEpoch": 1, "metadata": "", "commitTimestamp": 1_700_000_000_000}
_GROUP_VALUE = {
    "protocolType": "consumer",
    "generation": 4,
    "protocol": "range",
    "leader": "m-1",
    "currentStateTimestamp": 1_700_000_000_000,
    "members": [
        {
            "memberId": "m-1",
            "groupInstanceId": None,
            "clientId": "c",
            "clientHost": "/10.0.0.1",
            "rebalanceTimeout": 300_000,
            "sessionTimeout": 45_000,
            "subscription": encode_subscription(3, {"topics": ["t"], "ownedPartitions": [], "rackId": None}),
            "assignment": encode_assignment(0, {"assignedPartitions": [{"topic": "t", "partitions": [0]}]}),
        }
    ],
}
