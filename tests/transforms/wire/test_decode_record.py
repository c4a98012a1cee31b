"""The codec's one front door for `__consumer_offsets` records: key, value and tombstone handled once, failures as
data; `radar decode`'s JSON form and the ingest's routing agree because both go through it."""

from __future__ import annotations

import pytest

from rebalance_radar.transforms.offsets_batch import route_offsets_row
from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.coordinator_records import (
    decode_coordinator_record,
    decode_record,
    encode_coordinator_record,
)
from rebalance_radar.transforms.wire.errors import DecodeError
from rebalance_radar.transforms.wire.json_form import coordinator_record_json

MEMBER_KEY = {"groupId": "g", "memberId": "m"}
MEMBER_VALUE = {
    "instanceId": None,
    "rackId": None,
    "clientId": "c",
    "clientHost": "/10.0.0.1",
    "subscribedTopicNames": ["orders"],
    "subscribedTopicRegex": None,
    "serverAssignor": "uniform",
    "rebalanceTimeoutMs": 300000,
    "sessionTimeoutMs": 45000,
    "classicMemberMetadata": None,
}
COMMIT = encode_coordinator_record(1, {"group": "g", "topic": "t", "partition": 0}, 3, {"offset": 7, "metadata": ""})


def test_decoded_record_and_tombstone() -> None:
    decoded = decode_record(*COMMIT)
    assert decoded.error is None and not decoded.is_tombstone
    assert decoded.record == decode_coordinator_record(*COMMIT)
    tombstone = decode_record(COMMIT[0], None)
    assert tombstone.is_tombstone and tombstone.value_version is None and tombstone.key == decoded.key


@pytest.mark.parametrize(
    ("key", "value", "kind", "keeps_key"),
    [
        (None, b"\x00\x00", "malformed", False),  # a coordinator record always has a key
        (prim.INT16.pack(99) + b"\x00", None, "unsupported", False),  # unknown record type
        (COMMIT[0], prim.INT16.pack(99) + bytes(8), "unsupported", True),  # value version newer than the codec
        (COMMIT[0], COMMIT[1][:5], "malformed", True),  # truncated value
    ],
)
def test_failures_are_data_and_agree_everywhere(
    key: bytes | None, value: bytes | None, kind: str, keeps_key: bool
) -> None:
    decoded = decode_record(key, value)
    assert decoded.error is not None and decoded.error.kind == kind
    assert (decoded.key is not None) == keeps_key
    with pytest.raises(DecodeError):
        _ = decoded.record
    line = coordinator_record_json(key, value)
    assert line["error"] == {"kind": kind, "message": decoded.error.message}
    assert (line["key"] is not None) == keeps_key and line["value"] is None
    target, row = route_offsets_row(key, value)
    assert (target, row["kind"], row["reason"]) == ("quarantine", kind, decoded.error.message)


def test_absent_tagged_fields_are_omitted_as_kafka_prints_them() -> None:
    """Kafka's JSON converters leave out a tagged field the record does not carry; one that is present is printed,
    null included: Kafka's default for `classicMemberMetadata` is the empty struct (its JSON `"default": null` is
    no default to the generator), so a KIP-848 member's null is written as tag 0 and printed as null."""
    without = {name: value for name, value in MEMBER_VALUE.items() if name != "classicMemberMetadata"}
    key, value = encode_coordinator_record("ConsumerGroupMemberMetadata", MEMBER_KEY, 0, without)
    data = coordinator_record_json(key, value)["value"]["data"]
    assert "classicMemberMetadata" not in data and data["clientId"] == "c"
    empty = {"sessionTimeoutMs": 0, "supportedProtocols": []}  # Kafka's `new ClassicMemberMetadata()`: not written
    assert encode_coordinator_record(
        "ConsumerGroupMemberMetadata", MEMBER_KEY, 0, without | {"classicMemberMetadata": empty}
    ) == (key, value)
    key, null_value = encode_coordinator_record("ConsumerGroupMemberMetadata", MEMBER_KEY, 0, MEMBER_VALUE)
    # one tagged field: tag 0, one byte, the null marker; as the 4.3.1 broker wrote it (the vectors, record 06)
    assert null_value.endswith(bytes([1, 0, 1, 0]))
    assert coordinator_record_json(key, null_value)["value"]["data"]["classicMemberMetadata"] is None
    classic = {"sessionTimeoutMs": 45000, "supportedProtocols": []}
    key, value = encode_coordinator_record(
        "ConsumerGroupMemberMetadata", MEMBER_KEY, 0, MEMBER_VALUE | {"classicMemberMetadata": classic}
    )
    assert coordinator_record_json(key, value)["value"]["data"]["classicMemberMetadata"] == classic

    partitions = {"topicId": "MKXx1fIkQy2J9jXHhK8m1w", "partitions": [0, 1]}
    current = {
        "memberEpoch": 7,
        "previousMemberEpoch": 6,
        "state": 0,
        "assignedPartitions": [partitions],
        "partitionsPendingRevocation": [],
    }
    key, value = encode_coordinator_record("ConsumerGroupCurrentMemberAssignment", MEMBER_KEY, 0, current)
    assert coordinator_record_json(key, value)["value"]["data"]["assignedPartitions"] == [partitions]
    with_epochs = [partitions | {"assignmentEpochs": [7, 7]}]
    key, value = encode_coordinator_record(
        "ConsumerGroupCurrentMemberAssignment", MEMBER_KEY, 0, current | {"assignedPartitions": with_epochs}
    )
    assert coordinator_record_json(key, value)["value"]["data"]["assignedPartitions"] == with_epochs
