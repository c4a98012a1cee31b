"""The vectorised ConsumerProtocol path (transforms/consumer_protocol_columns.py) against the reference
(`member_columns.consumer_protocol_columns`, the schema-driven reader): the rows it accepts are the reference's
rows, what it declines it only declines, and well-formed payloads of every version are accepted."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rebalance_radar.transforms.binary_column import MAX_LISTED
from rebalance_radar.transforms.consumer_protocol_columns import decode_consumer_protocols
from rebalance_radar.transforms.member_columns import (
    MEMBER_KAFKA_FIELDS,
    consumer_protocol_columns,
    member_row,
    members_array,
)
from rebalance_radar.transforms.offsets_batch import GROUP_METADATA_COLUMN, decoded_batch_ddl
from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    encode_assignment,
    encode_subscription,
)
from rebalance_radar.transforms.wire.coordinator_records import decode_record
from tests.data_files import load_jsonl

Pair = tuple[bytes | None, bytes | None]


@pytest.fixture(scope="module")
def member_type(spark: object) -> pa.StructType:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    schema = to_arrow_schema(StructType.fromDDL(decoded_batch_ddl()))
    return schema.field(GROUP_METADATA_COLUMN).type.field("members").type.value_type


def _decoded_type(member_type: pa.StructType) -> pa.StructType:
    copied = {name for name, _ in MEMBER_KAFKA_FIELDS}
    return pa.struct([f for f in member_type if f.name not in copied])


def _accepted_as_reference(pairs: list[Pair], member_type: pa.StructType) -> int:
    """Every accepted pair's row equals the reference's; returns how many were accepted."""
    row_type = _decoded_type(member_type)
    fast = decode_consumer_protocols(
        pa.array([s for s, _ in pairs], pa.binary()), pa.array([a for _, a in pairs], pa.binary()), row_type
    )
    assert len(fast.accepted) == len(pairs)
    expected = pa.array(
        [consumer_protocol_columns(*pair) for pair, ok in zip(pairs, fast.accepted, strict=True) if ok], type=row_type
    )
    assert fast.rows.type == row_type
    assert fast.rows.equals(expected), (fast.rows.to_pylist(), expected.to_pylist())
    return int(fast.accepted.sum())


TEXT = st.text(st.characters(codec="utf-8"), max_size=30)
PARTITIONS = st.lists(
    st.fixed_dictionaries({"topic": TEXT, "partitions": st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5)}),
    max_size=4,
)
USER_DATA = st.one_of(st.none(), st.binary(max_size=12))


@st.composite
def well_formed(draw: st.DrawFn) -> Pair:
    """A subscription and an assignment of any version Kafka has written (v0-v3), or a newer one (read as v3,
    trailing fields ignored, as Kafka's ConsumerProtocol does)."""
    version = draw(st.integers(0, 3))
    subscription: dict[str, object] = {"topics": draw(st.lists(TEXT, max_size=4)), "userData": draw(USER_DATA)}
    if version >= 1:
        subscription["ownedPartitions"] = draw(PARTITIONS)
    if version >= 2:
        subscription["generationId"] = draw(st.integers(-(2**31), 2**31 - 1))
    if version >= 3:
        subscription["rackId"] = draw(st.one_of(st.none(), TEXT))
    assignment = {"assignedPartitions": draw(PARTITIONS), "userData": draw(USER_DATA)}
    sub = encode_subscription(version, subscription)
    assign = encode_assignment(draw(st.integers(0, 3)), assignment)
    if version == 3 and draw(st.booleans()):  # a future version: a bigger number and fields appended
        sub = prim.INT16.pack(draw(st.integers(4, 2**15 - 1))) + sub[2:] + draw(st.binary(max_size=8))
    return sub, assign


@st.composite
def damaged(draw: st.DrawFn) -> Pair:
    """A well-formed pair with one payload cut, extended, overwritten, replaced or null."""
    sub, assign = draw(well_formed())
    which = draw(st.booleans())
    raw = sub if which else assign
    how = draw(st.sampled_from(("cut", "extend", "overwrite", "null", "any")))
    if how == "cut":
        raw = raw[: draw(st.integers(0, max(len(raw) - 1, 0)))]
    elif how == "extend":
        raw = raw + draw(st.binary(min_size=1, max_size=10))
    elif how == "overwrite":
        at = draw(st.integers(0, len(raw) - 1))
        patch = draw(st.binary(min_size=1, max_size=4))
        raw = raw[:at] + patch + raw[at + len(patch) :]
    elif how == "null":
        raw = None
    else:
        raw = draw(st.binary(max_size=30))
    return (raw, assign) if which else (sub, raw)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs=st.lists(st.one_of(well_formed(), damaged()), max_size=25))
def test_accepted_rows_are_the_references(member_type: pa.StructType, pairs: list[Pair]) -> None:
    _accepted_as_reference(pairs, member_type)


@settings(max_examples=100, deadline=None)
@given(pairs=st.lists(well_formed(), min_size=1, max_size=20))
def test_well_formed_payloads_are_accepted(member_type: pa.StructType, pairs: list[Pair]) -> None:
    assert _accepted_as_reference(pairs, member_type) == len(pairs)


def _pair(topics: list[str], assigned_topic: str = "t") -> Pair:
    return (
        encode_subscription(3, {"topics": topics, "userData": None, "ownedPartitions": [], "rackId": "r1"}),
        encode_assignment(1, {"assignedPartitions": [{"topic": assigned_topic, "partitions": [0, 1]}]}),
    )


def test_what_the_reader_would_repair_or_refuse_is_declined(member_type: pa.StructType) -> None:
    good = _pair(["orders", "payments"])
    bad_utf8 = (good[0].replace(b"orders", b"ord\xffrs"), good[1])
    negative_count = (prim.INT16.pack(0) + prim.INT32.pack(-1) + prim.INT32.pack(-1), good[1])
    pairs: list[Pair] = [good, bad_utf8, (None, good[1]), (good[0], None), (b"\x00", good[1]), negative_count]
    row_type = _decoded_type(member_type)
    fast = decode_consumer_protocols(
        pa.array([s for s, _ in pairs], pa.binary()), pa.array([a for _, a in pairs], pa.binary()), row_type
    )
    assert fast.accepted.tolist() == [True, False, False, False, False, False]
    assert fast.rows.to_pylist()[0]["subscribed_topics"] == ["orders", "payments"]
    assert consumer_protocol_columns(*bad_utf8)["subscribed_topics"] == ["ord\ufffdrs", "payments"]
    assert consumer_protocol_columns(*negative_count)["embedded_error"]


def test_a_list_longer_than_the_path_reads_goes_to_the_reader(member_type: pa.StructType) -> None:
    long = _pair([f"topic-{i}" for i in range(MAX_LISTED + 1)])
    pairs = [_pair(["a"]), long, _pair(["b", "c"], assigned_topic="u")]
    assert _accepted_as_reference(pairs, member_type) == 2
    assert _accepted_as_reference([], member_type) == 0


def test_members_array_merges_both_paths_in_order(member_type: pa.StructType) -> None:
    """A batch's members whose payloads the path declines in part: the same list column as member by member."""
    long = _pair([f"topic-{i}" for i in range(MAX_LISTED + 1)])
    broken = (b"\x00\x01\x00", _pair(["x"])[1])
    members = [
        {"memberId": f"m{i}", "clientId": "c", "clientHost": "/h", "sessionTimeout": 10, "subscription": s}
        | {"assignment": a}
        for i, (s, a) in enumerate([_pair(["a"]), long, broken, _pair(["a"]), _pair(["d"])])
    ]
    list_type = pa.list_(member_type)
    groups = [(members[:3], CONSUMER_PROTOCOL_TYPE), (None, None), (members[3:], CONSUMER_PROTOCOL_TYPE)]
    expected = pa.array(
        [None if m is None else [member_row(x, p) for x in m] for m, p in groups],
        type=list_type,
    )
    assert members_array(groups, list_type).equals(expected)


def _consumer_members(vectors_file: str) -> list[Pair]:
    pairs: list[Pair] = []
    for vector in load_jsonl("vectors", vectors_file):
        if not vector.get("key_hex") or not vector.get("value_hex"):
            continue
        decoded = decode_record(bytes.fromhex(vector["key_hex"]), bytes.fromhex(vector["value_hex"]))
        if decoded.record_type is None or decoded.record_type.id != 2 or not decoded.value:
            continue
        if decoded.value.get("protocolType") == CONSUMER_PROTOCOL_TYPE:
            pairs += [(m["subscription"], m["assignment"]) for m in decoded.value["members"]]
    return pairs


def test_a_real_java_consumers_member_takes_the_path(member_type: pa.StructType) -> None:
    """The member a Java consumer wrote through the embedded broker (subscription v3, assignment v0) is decoded
    by the path; the shared vectors' members (placeholder bytes, not the ConsumerProtocol) are declined to the
    reader, which reports why."""
    real = _consumer_members("embedded_broker_offsets.jsonl")
    assert real, "the embedded broker's records hold a consumer member"
    assert _accepted_as_reference(real, member_type) == len(real)
    placeholders = _consumer_members("consumer_offsets_vectors.jsonl")
    assert placeholders
    assert _accepted_as_reference(placeholders, member_type) == 0
    assert all(consumer_protocol_columns(*pair)["embedded_error"] for pair in placeholders)
