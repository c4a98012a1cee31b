"""Kafka's JSON conventions for decoded values (what its console formatters print): bytes as base64,
uuids as URL-safe base64 (already so in decoded values), field names in camelCase.
"""

from __future__ import annotations

import base64
from typing import Any

from transforms.wire.consumer_protocol import CONSUMER_PROTOCOL_TYPE, decode_assignment, decode_subscription
from transforms.wire.coordinator_records import CoordinatorRecord, decode_coordinator_key, decode_coordinator_value
from transforms.wire.errors import DecodeError


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


def decoded_record_json(key: bytes | None, value: bytes | None, *, embedded: bool = False) -> dict[str, Any]:
    """The `radar decode` view of one `__consumer_offsets` record: key, value and error (never raises).

    A record that fails to decode keeps its key when the key decoded, and says why in `error`.
    """
    out: dict[str, Any] = {"key": None, "value": None, "error": None}
    try:
        record_type, key_data, key_trailing = decode_coordinator_key(key)  # type: ignore[arg-type]
    except DecodeError as exc:
        out["error"] = {"kind": str(exc.kind), "message": exc.message}
        return out
    out["key"] = {"type": record_type.id, "data": to_kafka_json(key_data)}
    if value is None:
        return out
    try:
        version, value_data, value_trailing = decode_coordinator_value(record_type, value)
    except DecodeError as exc:
        out["error"] = {"kind": str(exc.kind), "message": exc.message}
        return out
    record = CoordinatorRecord(
        record_type.id, record_type.name, key_data, version, value_data, key_trailing, value_trailing
    )
    out["value"] = value_json(record)
    if key_trailing or value_trailing:
        out["trailing_bytes"] = {"key": key_trailing, "value": value_trailing}
    if embedded:
        members = embedded_consumer_protocol_json(record)
        if members is not None:
            out["embedded_consumer_protocol"] = members
    return out
