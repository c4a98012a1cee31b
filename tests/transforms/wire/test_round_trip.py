"""Round-trip properties and spec conformance for every message definition at every version.

Values are generated from the definitions themselves (`value_strategy`), so a new field or version is covered the
moment it is declared; the conformance test pins those declarations to Apache Kafka's own JSON files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.data_files import data_path
from tests.transforms.wire.codec_fuzz import INT_RANGES
from transforms.wire import primitives as prim
from transforms.wire.coordinator_records import RECORD_TYPES, decode_coordinator_record, encode_coordinator_record
from transforms.wire.frames import (
    APIS,
    decode_request,
    decode_response,
    request_header_version,
    response_header_version,
)
from transforms.wire.messages import coordinator, protocol
from transforms.wire.messages.protocol import REQUEST_HEADER, RESPONSE_HEADER
from transforms.wire.reader import read_message
from transforms.wire.spec import F, FieldSpec, M, MessageSpec, Versions
from transforms.wire.writer import write_message

ALL_MESSAGES: tuple[MessageSpec, ...] = coordinator.MESSAGES + protocol.MESSAGES
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
POINT = (F("x", "int32", "0+"), F("label", "string", "0+", nullable="0+"))
EVERY_PRIMITIVE = M(
    "EveryPrimitiveValue",
    "data",
    valid="0-1",
    flexible="1+",
    fields=(
        *(F(f"plain{t.title()}", t, "0+") for t in EVERY_TYPE),
        *(F(f"nullable{t.title()}", t, "0+", nullable="0+") for t in ("string", "bytes", "records")),
        *(F(f"arrayOf{t.title()}", f"[]{t}", "0+") for t in EVERY_TYPE),
        F("nullableArrayOfUuid", "[]uuid", "0+", nullable="0+"),
        F("nullableStruct", "Point", "0+", nullable="0+", fields=POINT),
        F("taggedUuids", "[]uuid", "1+", tag=0, tagged="1+"),
        F("taggedInt64", "int64", "1+", tag=1, tagged="1+", default=-1),
        F("taggedStruct", "Point", "1+", nullable="1+", tag=2, tagged="1+", default=None, fields=POINT),
    ),
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


# --- conformance with Apache Kafka's JSON definitions -------------------------------------------------------------

# Deliberate differences, each with its reason (see the comments on these definitions in messages/protocol.py):
# versions that left Kafka's spec with KIP-896 (Kafka 4.0) are kept because 3.x clients and brokers still send them.
ALLOWED_DIFFERENCES: frozenset[str] = frozenset(
    {
        "OffsetCommitRequest: validVersions ours 0-10, Kafka's 2-10",
        "OffsetCommitRequest.topics.partitions.commitTimestamp: only in ours (v1 only, Kafka 3.x)",
        "OffsetCommitResponse: validVersions ours 0-10, Kafka's 2-10",
        "OffsetFetchRequest: validVersions ours 0-10, Kafka's 1-10",
        "OffsetFetchResponse: validVersions ours 0-10, Kafka's 1-10",
    }
)
# Definitions tests/data/kafka-spec does not hold: ApiVersions (key 18), which a client needs to pick versions.
OURS_ONLY: frozenset[tuple[str, Any]] = frozenset({("request", 18), ("response", 18)})
_COMMENT_LINE = re.compile(r"^\s*//.*$", re.MULTILINE)


def load_kafka_definition(path: Path) -> dict[str, Any]:
    """Kafka's JSON with its `//` comment lines removed (they are not JSON)."""
    return json.loads(_COMMENT_LINE.sub("", path.read_text()))


def _kafka_definitions() -> list[dict[str, Any]]:
    folders = [data_path("kafka-spec", "coordinator"), data_path("kafka-spec", "coordinator", "removed")]
    folders.append(data_path("kafka-spec", "protocol"))
    return [load_kafka_definition(p) for folder in folders for p in sorted(folder.glob("*.json"))]


def _lower_camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def _text(versions: Versions) -> str:
    if versions.empty:
        return "none"
    if versions.high == 32767:
        return f"{versions.low}+"
    return str(versions.low) if versions.low == versions.high else f"{versions.low}-{versions.high}"


def _kafka_default(field: dict[str, Any]) -> Any:
    """The reader's value for Kafka's `default` text ("-1", "null", "false", "0x7f"), or the implicit default."""
    type_name: str = field["type"]
    # Kafka's generator reads a JSON null default as none at all (FieldSpec: `fieldDefault == null ? ""`)
    if field.get("default") is None:
        return FieldSpec("implicit", type_name, Versions.parse("0+")).default_value()
    raw = field["default"]
    if raw == "null":
        return None
    if type_name in INT_RANGES:
        return int(raw, 0) if isinstance(raw, str) else int(raw)
    if type_name == "bool":
        return raw if isinstance(raw, bool) else raw == "true"
    if type_name == "float64":
        return float(raw)
    return raw


def _compare_fields(
    where: str,
    ours: tuple[FieldSpec, ...],
    theirs: list[dict[str, Any]],
    our_spec: MessageSpec,
    their_structs: dict[str, list[dict[str, Any]]],
    out: list[str],
) -> None:
    by_name = {f.name: f for f in ours}
    for their in theirs:
        name = _lower_camel(their["name"])
        mine = by_name.pop(name, None)
        if mine is None:
            out.append(f"{where}.{name}: missing from ours")
            continue
        if name != mine.name or not re.fullmatch(r"[a-z][A-Za-z0-9]*", mine.name):
            out.append(f"{where}.{name}: our name {mine.name!r} is not lowerCamelCase")
        # Kafka lets a tagged-only field omit "versions"; its generator then uses the tagged versions.
        their_versions = their.get("versions", their.get("taggedVersions"))
        pairs = {
            "type": (mine.type, their["type"]),
            "versions": (_text(mine.versions), _text(Versions.parse(their_versions))),
            "nullableVersions": (_text(mine.nullable), _text(Versions.parse(their.get("nullableVersions")))),
            "taggedVersions": (_text(mine.tagged), _text(Versions.parse(their.get("taggedVersions")))),
            "tag": (mine.tag, their.get("tag")),
            "flexibleVersions": (
                None if mine.flexible is None else _text(mine.flexible),
                None if "flexibleVersions" not in their else _text(Versions.parse(their["flexibleVersions"])),
            ),
        }
        # A struct without a default is the empty struct (`MessageSpec.absent_value`), not compared here.
        if not mine.is_struct or mine.is_array or their.get("default") is not None:
            pairs["default"] = (mine.default_value(), _kafka_default(their))
        for attribute, (a, b) in pairs.items():
            if a != b:
                out.append(f"{where}.{name}: {attribute} ours {a!r}, Kafka's {b!r}")
        if mine.is_struct:
            sub_theirs = their.get("fields") or their_structs.get(their["type"].removeprefix("[]"))
            if sub_theirs is None:
                out.append(f"{where}.{name}: Kafka's struct {their['type']} not found")
                continue
            _compare_fields(f"{where}.{name}", our_spec.struct_fields(mine), sub_theirs, our_spec, their_structs, out)
    for name, mine in by_name.items():
        out.append(f"{where}.{name}: only in ours (v{_text(mine.versions)} only, Kafka 3.x)")


def spec_differences(ours: MessageSpec, theirs: dict[str, Any]) -> list[str]:
    """Every way our definition differs from Kafka's, one readable line each."""
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


def _kafka_identity(definition: dict[str, Any]) -> tuple[str, Any]:
    """Keys and values pair by apiKey; requests/responses by apiKey too; headers and data by name."""
    kind = definition["type"]
    return (kind, definition["apiKey"] if "apiKey" in definition else definition["name"])


def _our_identity(spec: MessageSpec) -> tuple[str, Any]:
    return (spec.kind, spec.api_key if spec.api_key is not None else spec.name)


def test_every_definition_matches_kafka_json() -> None:
    kafka = {_kafka_identity(d): d for d in _kafka_definitions()}
    ours = {_our_identity(m): m for m in ALL_MESSAGES}
    assert len(ours) == len(ALL_MESSAGES), "two of our definitions share an identity"
    assert sorted(ours.keys() - kafka.keys() - OURS_ONLY, key=str) == [], "definitions without a Kafka JSON file"
    assert ours.keys() >= OURS_ONLY, "an ours-only definition that no longer exists"
    assert sorted(kafka.keys() - ours.keys(), key=str) == [], "Kafka JSON files without a definition of ours"
    differences = {
        line
        for identity, spec in ours.items()
        if identity not in OURS_ONLY
        for line in spec_differences(spec, kafka[identity])
    }
    assert sorted(differences - ALLOWED_DIFFERENCES) == [], "undocumented differences from Kafka's definitions"
    assert sorted(ALLOWED_DIFFERENCES - differences) == [], "allowed differences that no longer exist"


def test_conformance_check_notices_a_drifted_definition() -> None:
    """The comparison itself can fail: a changed version range, nullability or tag is reported."""
    theirs = load_kafka_definition(data_path("kafka-spec", "coordinator", "OffsetCommitValue.json"))
    drifted = M(
        "OffsetCommitValue",
        "coordinator-value",
        api_key=1,
        valid="0-4",
        flexible="4+",
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
