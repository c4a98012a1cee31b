"""Kafka's JSON conventions for decoded values (what its console formatters print): bytes as base64,
uuids as URL-safe base64 (already so in decoded values), field names in camelCase.
"""

from __future__ import annotations

import base64
from typing import Any

from rebalance_radar.transforms.wire.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
)
from rebalance_radar.transforms.wire.coordinator_records import CoordinatorRecord, decode_record


def to_kafka_json(value: Any) -> Any:
    """A decoded value with bytes rendered as standard base64, ready for `json.dumps`."""
    if isinstance(value, dict):
        return {k: to_kafka_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_kafka_json(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def key_json(record: CoordinatorRecord) -> dict[str, Any]:
    """`{"type": T, "data": {...}}` as Kafka's OffsetsMessageFormatter / GroupMetadataMessageFormatter print."""
    return {"type": record.record_type, "data": to_kafka_json(record.key)}


def value_json(record: CoordinatorRecord) -> dict[str, Any] | None:
    """`{"version": V, "data": {...}}`, or None for a tombstone."""
    if record.value is None:
        return None
    return {"version": record.value_version, "data": to_kafka_json(record.value)}


def embedded_consumer_protocol_json(record: CoordinatorRecord) -> list[dict[str, Any]] | None:
    """Decoded subscription/assignment of each classic member whose group speaks the `consumer` protocol."""
    value = record.value
    if record.record_type != 2 or value is None or value.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return None
    return [
        {
            "subscription": decode_subscription(member.get("subscription")).as_json(),
            "assignment": decode_assignment(member.get("assignment")).as_json(),
        }
        for member in value.get("members") or []
    ]


def coordinator_record_json(key: bytes | None, value: bytes | None, *, embedded: bool = False) -> dict[str, Any]:
    """The `radar decode` view of one `__consumer_offsets` record: key, value and error (never raises).

    A record that fails to decode keeps its key when the key decoded, and says why in `error`. Tagged fields a
    record does not carry are absent, as in Kafka's own JSON converters (the codec leaves them out).
    """
    decoded = decode_record(key, value)
    out: dict[str, Any] = {"key": None, "value": None, "error": None}
    if decoded.record_type is not None:
        out["key"] = {"type": decoded.record_type.id, "data": to_kafka_json(decoded.key)}
    if decoded.error is not None:
        out["error"] = {"kind": str(decoded.error.kind), "message": decoded.error.message}
        return out
    record = decoded.record
    out["value"] = value_json(record)
    if record.key_trailing_bytes or record.value_trailing_bytes:
        out["trailing_bytes"] = {"key": record.key_trailing_bytes, "value": record.value_trailing_bytes}
    if embedded:
        members = embedded_consumer_protocol_json(record)
        if members is not None:
            out["embedded_consumer_protocol"] = members
    return out
