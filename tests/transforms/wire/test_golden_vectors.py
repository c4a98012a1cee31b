"""Golden tests: every vector in tests/data/vectors decodes to its expected value, or fails with a clean DecodeError."""

from __future__ import annotations

import json

import pytest

from rebalance_radar.transforms.wire.coordinator_records import decode_coordinator_record, encode_coordinator_record
from rebalance_radar.transforms.wire.errors import DecodeError
from rebalance_radar.transforms.wire.frames import decode_body, decode_response
from rebalance_radar.transforms.wire.json_form import (
    embedded_consumer_protocol_json,
    key_json,
    to_kafka_json,
    value_json,
)
from tests.data_files import load_jsonl

OFFSETS = load_jsonl("vectors", "consumer_offsets_vectors.jsonl")
PROTOCOL = load_jsonl("vectors", "protocol_vectors.jsonl")


def _bytes(hex_text: str | None) -> bytes | None:
    return None if hex_text is None else bytes.fromhex(hex_text)


@pytest.mark.parametrize("vector", OFFSETS, ids=[v["id"] for v in OFFSETS])
def test_consumer_offsets_vector(vector: dict) -> None:
    key, value = _bytes(vector["key_hex"]), _bytes(vector["value_hex"])
    if vector["expect_error"]:
        with pytest.raises(DecodeError) as info:
            decode_coordinator_record(key, value)
        assert info.value.kind in ("malformed", "unsupported")
        return
    record = decode_coordinator_record(key, value)
    expected = vector["expected"]
    assert to_kafka_json(record.key) == expected["key"]
    assert to_kafka_json(record.value) == expected["value"]
    assert record.record_type == vector["record_type"]
    assert record.value_version == vector.get("value_version")
    embedded = expected.get("embedded_consumer_protocol")
    if embedded is not None:
        ours = embedded_consumer_protocol_json(record)
        assert ours is not None and len(ours) == len(embedded)
        for mine, theirs in zip(ours, embedded, strict=True):
            for part in ("subscription", "assignment"):
                assert mine[part]["version"] == theirs[part]["version"]
                assert ("error" in mine[part]) == ("error" in theirs[part])


@pytest.mark.parametrize(
    "vector",
    [v for v in OFFSETS if v.get("kafka_expected_output") and isinstance(v["kafka_expected_output"], str)],
    ids=lambda v: v["id"],
)
def test_exact_formatter_text(vector: dict) -> None:
    """Where Kafka's formatter output is recorded, ours is the same text, field order included."""
    record = decode_coordinator_record(_bytes(vector["key_hex"]), _bytes(vector["value_hex"]))
    line = json.dumps({"key": key_json(record), "value": value_json(record)}, separators=(",", ":"))
    assert line == vector["kafka_expected_output"]


@pytest.mark.parametrize("vector", [v for v in OFFSETS if not v["expect_error"]], ids=lambda v: v["id"])
def test_writer_reproduces_vector_bytes(vector: dict) -> None:
    """The writer turns the decoded value back into the exact bytes Kafka wrote."""
    key, value = _bytes(vector["key_hex"]), _bytes(vector["value_hex"])
    record = decode_coordinator_record(key, value)
    assert encode_coordinator_record(record.record_type, record.key, record.value_version, record.value) == (
        key,
        value,
    )


@pytest.mark.parametrize("vector", PROTOCOL, ids=[v["id"] for v in PROTOCOL])
def test_protocol_vector(vector: dict) -> None:
    data = bytes.fromhex(vector["value_hex"])
    if vector["framing"] == "body":
        body, end = decode_body(vector["api"], vector["api_version"], vector["direction"], data)
        assert end == len(data)
        assert {"body": to_kafka_json(body)} == vector["expected"]
    else:
        assert vector["framing"] == "size+response_header"
        frame = decode_response(data, None, None, sized=True, header_version=vector["header_version"])
        assert {"header": frame.header} == vector["expected"]
        assert frame.size == vector["peer_expected"]["length"]
