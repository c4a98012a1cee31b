"""Round-trip properties and spec conformance for every message definition at every version.

Values are generated from the definitions themselves (`value_strategy`), so a new field or version is covered the
moment it is declared; the conformance test pins those declarations to Apache Kafka's own JSON files.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.coordinator_records import (
    RECORD_TYPES,
    decode_coordinator_record,
    encode_coordinator_record,
)
from rebalance_radar.transforms.wire.frames import (
    APIS,
    decode_request,
    decode_response,
    request_header_version,
    response_header_version,
)
from rebalance_radar.transforms.wire.messages import (
    COORDINATOR_MESSAGES,
    DEFINITIONS,
    PROTOCOL_MESSAGES,
    REQUEST_HEADER,
    RESPONSE_HEADER,
    message,
)
from rebalance_radar.transforms.wire.reader import read_message
from rebalance_radar.transforms.wire.spec import (
    FieldSpec,
    MessageSpec,
    Versions,
    field_from_definition,
    message_from_definition,
    read_definition,
)
from rebalance_radar.transforms.wire.writer import write_message
from tests.transforms.wire.codec_fuzz import INT_RANGES

ALL_MESSAGES: tuple[MessageSpec, ...] = COORDINATOR_MESSAGES + PROTOCOL_MESSAGES
MAX_STRING_CHARS = 12  # short keeps generation fast; non-ASCII code points still reach 4 UTF-8 bytes each
MAX_BYTES = 24
MAX_ARRAY = 3

ROUND_TRIP = settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Any Unicode scalar value (no surrogates: they have no UTF-8 form), so multi-byte encodings are exercised.
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=MAX_STRING_CHARS)


def _primitive_strategy(type_name: str) -> st.SearchStrategy[Any]:
    if type_name in INT_RANGES:
        lo, hi = INT_RANGES[type_name]
        return st.integers(lo, hi)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.floats(allow_nan=False)  # NaN != NaN would fail equality, not the codec
    if type_name == "uuid":
        return st.binary(min_size=16, max_size=16).map(prim.uuid_to_text)
    if type_name == "string":
        return TEXT
    if type_name in ("bytes", "records"):
        return st.binary(max_size=MAX_BYTES)
    raise AssertionError(f"no strategy for primitive type {type_name}")


def _field_strategy(
    spec: MessageSpec, version: int, f: FieldSpec, *, not_default: bool = False
) -> st.SearchStrategy[Any]:
    """Any value the field may hold at `version`, null included where the version allows it.

    With `not_default` (tagged fields) the default is excluded by construction where it is null or an empty array,
    so generation needs no rejection sampling; other defaults (a tagged struct's empty struct) are filtered out.
    """
    default = spec.absent_value(f, version) if not_default else f.default_value()
    if f.is_struct:
        element = value_strategy(spec, version, spec.struct_fields(f))
    else:
        element = _primitive_strategy(f.element_type)
    if f.is_array:
        strategy = st.lists(element, min_size=1 if not_default and default == [] else 0, max_size=MAX_ARRAY)
    else:
        strategy = element
    if version in f.nullable and not (not_default and default is None):
        strategy = st.none() | strategy
    if not_default and default is not None and default != []:
        strategy = strategy.filter(lambda v: v != default)
    return strategy


def value_strategy(
    spec: MessageSpec, version: int, fields: tuple[FieldSpec, ...] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """Values of `spec` at `version` in the reader's form: fields absent at the version are left out, tagged
    fields are either left out or differ from their default (the writer omits defaults, so the reader does too)."""
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for f in spec.fields if fields is None else fields:
        if not f.present_in(version):
            continue
        if f.tagged_in(version):
            optional[f.name] = _field_strategy(spec, version, f, not_default=True)
        else:
            required[f.name] = _field_strategy(spec, version, f)
    return st.fixed_dictionaries(required, optional=optional)


def _versions(messages: tuple[MessageSpec, ...]) -> list[tuple[MessageSpec, int]]:
    return [(m, v) for m in messages for v in m.valid]


@pytest.mark.parametrize(("spec", "version"), _versions(ALL_MESSAGES), ids=lambda x: getattr(x, "name", str(x)))
@ROUND_TRIP
@given(data=st.data())
def test_message_round_trip(spec: MessageSpec, version: int, data: st.DataObject) -> None:
    value = data.draw(value_strategy(spec, version))
    encoded = write_message(spec, version, value)
    assert read_message(spec, version, encoded) == (value, len(encoded))


@pytest.mark.parametrize(
    ("spec", "version"), [(m, m.valid.high) for m in ALL_MESSAGES], ids=lambda x: getattr(x, "name", str(x))
)
@settings(ROUND_TRIP, max_examples=5)
@given(data=st.data(), prefix=st.binary(max_size=4), suffix=st.binary(max_size=4))
def test_message_decodes_inside_a_larger_buffer(
    spec: MessageSpec, version: int, data: st.DataObject, prefix: bytes, suffix: bytes
) -> None:
    """`pos`/`end` are honoured: bytes around the message are neither read nor required."""
    value = data.draw(value_strategy(spec, version))
    encoded = write_message(spec, version, value)
    buffer = prefix + encoded + suffix
    assert read_message(spec, version, buffer, len(prefix), len(prefix) + len(encoded)) == (
        value,
        len(prefix) + len(encoded),
    )


EVERY_TYPE = ("bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string", "bytes")
POINT = [
    {"name": "X", "type": "int32", "versions": "0+"},
    {"name": "Label", "type": "string", "versions": "0+", "nullableVersions": "0+"},
]
# A definition in Kafka's JSON words, read by the same interpreter as Kafka's own files.
EVERY_PRIMITIVE = message_from_definition(
    {
        "name": "EveryPrimitiveValue",
        "type": "data",
        "validVersions": "0-1",
        "flexibleVersions": "1+",
        "fields": [
            *({"name": f"Plain{t.title()}", "type": t, "versions": "0+"} for t in EVERY_TYPE),
            *(
                {"name": f"Nullable{t.title()}", "type": t, "versions": "0+", "nullableVersions": "0+"}
                for t in ("string", "bytes", "records")
            ),
            *({"name": f"ArrayOf{t.title()}", "type": f"[]{t}", "versions": "0+"} for t in EVERY_TYPE),
            {"name": "NullableArrayOfUuid", "type": "[]uuid", "versions": "0+", "nullableVersions": "0+"},
            {"name": "NullableStruct", "type": "Point", "versions": "0+", "nullableVersions": "0+", "fields": POINT},
            {"name": "TaggedUuids", "type": "[]uuid", "versions": "1+", "tag": 0, "taggedVersions": "1+"},
            {
                "name": "TaggedInt64",
                "type": "int64",
                "versions": "1+",
                "tag": 1,
                "taggedVersions": "1+",
                "default": "-1",
            },
            {
                "name": "TaggedStruct",
                "type": "Point",
                "versions": "1+",
                "nullableVersions": "1+",
                "tag": 2,
                "taggedVersions": "1+",
                "default": "null",
                "fields": POINT,
            },
        ],
    }
)


@pytest.mark.parametrize("version", [0, 1])
@settings(ROUND_TRIP, max_examples=60)
@given(data=st.data())
def test_every_primitive_and_array_type_round_trips(version: int, data: st.DataObject) -> None:
    """Types the Kafka definitions here do not use yet (uuid/bool/float64 arrays...) still round-trip."""
    value = data.draw(value_strategy(EVERY_PRIMITIVE, version))
    encoded = write_message(EVERY_PRIMITIVE, version, value)
    assert read_message(EVERY_PRIMITIVE, version, encoded) == (value, len(encoded))


COORDINATOR_VERSIONS = [(t.id, v) for t in RECORD_TYPES.values() for v in t.value.valid]


@pytest.mark.parametrize(("record_type", "value_version"), COORDINATOR_VERSIONS)
@ROUND_TRIP
@given(data=st.data(), tombstone=st.booleans())
def test_coordinator_record_round_trip(
    record_type: int, value_version: int, data: st.DataObject, tombstone: bool
) -> None:
    rt = RECORD_TYPES[record_type]
    key = data.draw(value_strategy(rt.key, rt.key.valid.low))
    value = None if tombstone else data.draw(value_strategy(rt.value, value_version))
    key_bytes, value_bytes = encode_coordinator_record(record_type, key, value_version, value)
    assert key_bytes[:2] == record_type.to_bytes(2, "big", signed=True)
    record = decode_coordinator_record(key_bytes, value_bytes)
    assert (record.record_type, record.name, record.key, record.value) == (record_type, rt.name, key, value)
    assert record.value_version == (None if tombstone else value_version)
    assert record.is_tombstone == tombstone
    assert (record.key_trailing_bytes, record.value_trailing_bytes) == (0, 0)


REQUEST_VERSIONS = [(api.key, v) for api in APIS.values() for v in api.request.valid]
RESPONSE_VERSIONS = [(api.key, v) for api in APIS.values() for v in api.response.valid]


@pytest.mark.parametrize(("api_key", "api_version"), REQUEST_VERSIONS)
@ROUND_TRIP
@given(data=st.data())
def test_framed_request_round_trip(api_key: int, api_version: int, data: st.DataObject) -> None:
    """[int32 size] + request header (v1/v2 by flexibility) + body decodes to what was written."""
    api = APIS[api_key]
    header_version = request_header_version(api, api_version)
    header = data.draw(value_strategy(REQUEST_HEADER, header_version))
    header |= {"requestApiKey": api_key, "requestApiVersion": api_version}
    body = data.draw(value_strategy(api.request, api_version))
    payload = write_message(REQUEST_HEADER, header_version, header) + write_message(api.request, api_version, body)
    frame = decode_request(prim.INT32.pack(len(payload)) + payload)
    assert (frame.api_key, frame.api_name, frame.api_version) == (api_key, api.name, api_version)
    assert (frame.header, frame.body) == (header, body)
    assert (frame.size, frame.trailing_bytes) == (len(payload), 0)


@pytest.mark.parametrize(("api_key", "api_version"), RESPONSE_VERSIONS)
@ROUND_TRIP
@given(data=st.data())
def test_framed_response_round_trip(api_key: int, api_version: int, data: st.DataObject) -> None:
    api = APIS[api_key]
    header_version = response_header_version(api, api_version)
    header = data.draw(value_strategy(RESPONSE_HEADER, header_version))
    body = data.draw(value_strategy(api.response, api_version))
    payload = write_message(RESPONSE_HEADER, header_version, header) + write_message(api.response, api_version, body)
    frame = decode_response(prim.INT32.pack(len(payload)) + payload, api_key, api_version)
    assert (frame.header, frame.body, frame.size, frame.trailing_bytes) == (header, body, len(payload), 0)


# --- the definitions are Kafka's JSON ----------------------------------------------------------------------------

# How `definitions/radar/` widens Kafka's files, each with its reason (the header of each file there): versions that
# left Kafka's spec with KIP-896 (Kafka 4.0) are read because 3.x clients and brokers still send them.
ALLOWED_DIFFERENCES: frozenset[str] = frozenset(
    {
        "OffsetCommitRequest: validVersions ours 0-10, Kafka's 2-10",
        "OffsetCommitRequest.topics.partitions.commitTimestamp: only in ours (v1 only, Kafka 3.x)",
        "OffsetCommitResponse: validVersions ours 0-10, Kafka's 2-10",
        "OffsetFetchRequest: validVersions ours 0-10, Kafka's 1-10",
        "OffsetFetchResponse: validVersions ours 0-10, Kafka's 1-10",
    }
)


def load_kafka_definition(*parts: str) -> dict[str, Any]:
    return read_definition(DEFINITIONS.joinpath(*parts).read_text())


def _text(versions: Versions) -> str:
    if versions.empty:
        return "none"
    if versions.high == 32767:
        return f"{versions.low}+"
    return str(versions.low) if versions.low == versions.high else f"{versions.low}-{versions.high}"


def _compare_fields(
    where: str,
    ours: tuple[FieldSpec, ...],
    theirs: list[dict[str, Any]],
    our_spec: MessageSpec,
    their_structs: dict[str, list[dict[str, Any]]],
    out: list[str],
) -> None:
    by_name = {f.name: f for f in ours}
    for their_data in theirs:
        their = field_from_definition(their_data)
        mine = by_name.pop(their.name, None)
        if mine is None:
            out.append(f"{where}.{their.name}: missing from ours")
            continue
        pairs = {
            "type": (mine.type, their.type),
            "versions": (_text(mine.versions), _text(their.versions)),
            "nullableVersions": (_text(mine.nullable), _text(their.nullable)),
            "taggedVersions": (_text(mine.tagged), _text(their.tagged)),
            "tag": (mine.tag, their.tag),
            "flexibleVersions": tuple(None if f.flexible is None else _text(f.flexible) for f in (mine, their)),
            "default": ((mine.has_default, mine.default), (their.has_default, their.default)),
        }
        for attribute, (a, b) in pairs.items():
            if a != b:
                out.append(f"{where}.{their.name}: {attribute} ours {a!r}, Kafka's {b!r}")
        if mine.is_struct:
            sub_theirs = their_data.get("fields") or their_structs.get(their.element_type)
            if sub_theirs is None:
                out.append(f"{where}.{their.name}: Kafka's struct {their.type} not found")
                continue
            _compare_fields(
                f"{where}.{their.name}", our_spec.struct_fields(mine), sub_theirs, our_spec, their_structs, out
            )
    for name, mine in by_name.items():
        out.append(f"{where}.{name}: only in ours (v{_text(mine.versions)} only, Kafka 3.x)")


def spec_differences(ours: MessageSpec, theirs: dict[str, Any]) -> list[str]:
    """Every way a definition differs from Kafka's file, one readable line each."""
    out: list[str] = []
    header = {
        "name": (ours.name, theirs["name"]),
        "type": (ours.kind, theirs["type"]),
        "apiKey": (ours.api_key, theirs.get("apiKey")),
        "validVersions": (_text(ours.valid), _text(Versions.parse(theirs["validVersions"]))),
        "flexibleVersions": (_text(ours.flexible), _text(Versions.parse(theirs["flexibleVersions"]))),
    }
    for attribute, (a, b) in header.items():
        if a != b:
            out.append(f"{ours.name}: {attribute} ours {a}, Kafka's {b}")
    their_structs = {s["name"]: s["fields"] for s in theirs.get("commonStructs", [])}
    _compare_fields(ours.name, ours.fields, theirs["fields"], ours, their_structs, out)
    return out


def test_every_definition_file_is_read_and_keys_pair_with_values_and_requests_with_responses() -> None:
    folders = {"coordinator": COORDINATOR_MESSAGES, "protocol": PROTOCOL_MESSAGES}
    for folder, read in folders.items():
        names = sorted(
            e.name.removesuffix(".json") for e in DEFINITIONS.joinpath(folder).iterdir() if e.name.endswith(".json")
        )
        if folder == "coordinator":
            names += sorted(e.name.removesuffix(".json") for e in DEFINITIONS.joinpath(folder, "removed").iterdir())
        assert sorted(m.name for m in read) == sorted(names), folder
    keys = {m.api_key for m in COORDINATOR_MESSAGES if m.kind == "coordinator-key"}
    assert keys == {m.api_key for m in COORDINATOR_MESSAGES if m.kind == "coordinator-value"}
    assert keys == set(RECORD_TYPES) == set(range(24))  # 0-23, the two removed types (9, 18) included
    requests = {m.api_key for m in PROTOCOL_MESSAGES if m.kind == "request"}
    assert requests == {m.api_key for m in PROTOCOL_MESSAGES if m.kind == "response"} == set(APIS)
    assert {8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 68, 69, 76, 77, 88, 89} <= requests


def test_the_widened_protocol_files_differ_from_kafkas_only_as_they_say() -> None:
    widened = sorted(e.name for e in DEFINITIONS.joinpath("radar").iterdir() if e.name.endswith(".json"))
    assert widened  # else this test compares nothing
    differences = set()
    for name in widened:
        ours = message(name.removesuffix(".json"))
        assert ours == message_from_definition(load_kafka_definition("radar", name))  # the codec reads ours
        differences |= set(spec_differences(ours, load_kafka_definition("protocol", name)))
    assert sorted(differences - ALLOWED_DIFFERENCES) == [], "undocumented differences from Kafka's definitions"
    assert sorted(ALLOWED_DIFFERENCES - differences) == [], "allowed differences that no longer exist"


def test_kafkas_json_words_become_the_interpreters() -> None:
    """Kafka's generator rules, as `message_from_definition` reads them: UpperCamel names in lowerCamel, a tagged-only
    field's versions from its tagged versions, the text "null" a null default but a JSON null no default at all,
    numbers from their text, common structs by name."""
    value = message("ConsumerGroupCurrentMemberAssignmentValue")
    epochs = value.structs["TopicPartitions"][2]
    assert (epochs.name, epochs.type, epochs.tag, epochs.has_default) == ("assignmentEpochs", "[]int32", 0, False)
    assert (epochs.versions, epochs.tagged, epochs.nullable) == (Versions.parse("0+"),) * 3
    offset = message("OffsetCommitValue")
    leader_epoch = next(f for f in offset.fields if f.name == "leaderEpoch")
    assert (leader_epoch.versions, leader_epoch.has_default, leader_epoch.default) == (Versions.parse("3+"), True, -1)
    join = message("JoinGroupRequest")
    instance = next(f for f in join.fields if f.name == "groupInstanceId")
    assert (instance.has_default, instance.default, instance.nullable) == (True, None, Versions.parse("5+"))
    header = message("RequestHeader")
    client_id = next(f for f in header.fields if f.name == "clientId")
    assert client_id.flexible == Versions.parse("none")  # a field-level override: never a compact string
    assert (header.kind, header.api_key, message("ConsumerProtocolAssignment").kind) == ("header", None, "data")


def test_conformance_check_notices_a_drifted_definition() -> None:
    """The comparison itself can fail: a changed version range, nullability or tag is reported."""
    theirs = load_kafka_definition("coordinator", "OffsetCommitValue.json")
    drifted = MessageSpec(
        name="OffsetCommitValue",
        kind="coordinator-value",
        api_key=1,
        valid=Versions.parse("0-4"),
        flexible=Versions.parse("4+"),
        fields=(
            FieldSpec("offset", "int64", Versions.parse("0+")),
            FieldSpec("leaderEpoch", "int32", Versions.parse("2+"), default=-1, has_default=True),
            FieldSpec("metadata", "string", Versions.parse("0+"), nullable=Versions.parse("0+")),
            FieldSpec("commitTimestamp", "int64", Versions.parse("0+")),
            FieldSpec("expireTimestamp", "int64", Versions.parse("1"), default=-1, has_default=True),
            FieldSpec("topicId", "uuid", Versions.parse("4+"), tag=1, tagged=Versions.parse("4+")),
        ),
    )
    assert spec_differences(drifted, theirs) == [
        "OffsetCommitValue.leaderEpoch: versions ours '2+', Kafka's '3+'",
        "OffsetCommitValue.metadata: nullableVersions ours '0+', Kafka's 'none'",
        "OffsetCommitValue.topicId: tag ours 1, Kafka's 0",
    ]
