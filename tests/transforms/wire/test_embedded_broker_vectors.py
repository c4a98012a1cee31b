"""Real `__consumer_offsets` records of a Kafka 4.3.1 broker decode as Kafka's own reader decodes them.

The records (tests/data/vectors/embedded_broker_offsets.jsonl) were written by the embedded broker for
confluent-kafka consumers of a classic group and of a KIP-848 (`group.protocol=consumer`) group; `expected` is what
Kafka 4.3.1's generated readers and JSON converters print for the same bytes, and `consumer_protocol` what the classic
member subscribed to and was assigned.
"""

from __future__ import annotations

from typing import Any

import pytest

from rebalance_radar.transforms.wire.consumer_protocol import decode_assignment, decode_subscription
from rebalance_radar.transforms.wire.coordinator_records import decode_coordinator_record, encode_coordinator_record
from rebalance_radar.transforms.wire.error_codes import upper_snake
from rebalance_radar.transforms.wire.json_form import to_kafka_json
from tests.data_files import load_jsonl

VECTORS = load_jsonl("vectors", "embedded_broker_offsets.jsonl")


def _bytes(hex_text: str | None) -> bytes | None:
    return None if hex_text is None else bytes.fromhex(hex_text)


def test_the_capture_covers_both_group_protocols_and_their_records() -> None:
    protocols = {v["group_protocol"] for v in VECTORS}
    record_types = {v["record_type"] for v in VECTORS}
    assert protocols == {"classic", "consumer"}
    assert record_types >= {1, 2, 3, 5, 6, 7, 8}
    assert any(v["value_hex"] is None for v in VECTORS), "KIP-848 member records end in tombstones"


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_broker_record_decodes_as_kafka_reads_it(vector: dict[str, Any]) -> None:
    record = decode_coordinator_record(_bytes(vector["key_hex"]), _bytes(vector["value_hex"]))
    assert (record.record_type, upper_snake(record.name)) == (vector["record_type"], vector["record_name"])
    assert record.value_version == vector["value_version"]
    assert (record.key_trailing_bytes, record.value_trailing_bytes) == (0, 0)
    expected = vector["expected"]
    assert to_kafka_json(record.key) == expected["key"]
    if expected["value"] is None:
        assert record.value is None
    else:
        # exactly what Kafka prints, a KIP-848 member's tagged `classicMemberMetadata: null` included
        assert to_kafka_json(record.value) == expected["value"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_writer_reproduces_the_broker_bytes(vector: dict[str, Any]) -> None:
    key, value = _bytes(vector["key_hex"]), _bytes(vector["value_hex"])
    record = decode_coordinator_record(key, value)
    assert encode_coordinator_record(record.record_type, record.key, record.value_version, record.value) == (
        key,
        value,
    )


@pytest.mark.parametrize("vector", [v for v in VECTORS if "consumer_protocol" in v["expected"]], ids=lambda v: v["id"])
def test_classic_member_subscription_and_assignment_are_what_the_client_had(vector: dict[str, Any]) -> None:
    record = decode_coordinator_record(_bytes(vector["key_hex"]), _bytes(vector["value_hex"]))
    assert record.value is not None
    (member,) = record.value["members"]
    subscription, assignment = decode_subscription(member["subscription"]), decode_assignment(member["assignment"])
    assert subscription.error is None and assignment.error is None
    assert subscription.data is not None and assignment.data is not None
    wanted = vector["expected"]["consumer_protocol"]
    assert subscription.data["topics"] == wanted["subscribed_topics"]
    assert assignment.data["assignedPartitions"] == wanted["assigned_partitions"]
