"""`__consumer_offsets` records: the int16 record type in the key picks the key and value definitions.

Framing (Kafka's CoordinatorRecordSerde): key = int16 record type + key message at version 0 (never flexible);
value = int16 value version + value message at that version; a null value is a tombstone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.errors import DecodeError, DecodeErrorKind
from rebalance_radar.transforms.wire.messages import COORDINATOR_MESSAGES
from rebalance_radar.transforms.wire.reader import read_message
from rebalance_radar.transforms.wire.spec import MessageSpec
from rebalance_radar.transforms.wire.writer import write_message


@dataclass(frozen=True)
class RecordType:
    """One coordinator record type: its id (the key prefix), name, key and value definitions."""

    id: int
    name: str
    key: MessageSpec
    value: MessageSpec

    @property
    def group_type(self) -> str:
        """Which kind of group writes it: offsets, classic, consumer (KIP-848), share (KIP-932), streams."""
        if self.id in (0, 1):
            return "offsets"
        if self.id == 2:
            return "classic"
        for prefix, kind in (("ConsumerGroup", "consumer"), ("ShareGroup", "share"), ("StreamsGroup", "streams")):
            if self.name.startswith(prefix):
                return kind
        return "unknown"


def _record_types() -> dict[int, RecordType]:
    keys = {m.api_key: m for m in COORDINATOR_MESSAGES if m.kind == "coordinator-key"}
    values = {m.api_key: m for m in COORDINATOR_MESSAGES if m.kind == "coordinator-value"}
    if keys.keys() != values.keys():
        raise RuntimeError(f"coordinator keys and values disagree: {sorted(keys.keys() ^ values.keys())}")
    return {
        api_key: RecordType(api_key, keys[api_key].short_name, keys[api_key], values[api_key])
        for api_key in sorted(keys)  # type: ignore[type-var]
    }


RECORD_TYPES: dict[int, RecordType] = _record_types()
RECORD_TYPES_BY_NAME: dict[str, RecordType] = {t.name: t for t in RECORD_TYPES.values()}


class CoordinatorRecord(NamedTuple):
    """A decoded `__consumer_offsets` record. `value is None` means tombstone.

    Immutable like a frozen dataclass, but built several times faster: a frozen dataclass's `__init__` (one
    `object.__setattr__` per field) cost a quarter of decoding an OffsetCommit record."""

    record_type: int
    name: str
    key: dict[str, Any]
    value_version: int | None
    value: dict[str, Any] | None
    key_trailing_bytes: int = 0
    value_trailing_bytes: int = 0

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


def record_type_of(key: bytes) -> RecordType:
    """The record type named by a key's int16 prefix; unknown types are `unsupported`, not malformed."""
    if key is None or len(key) < 2:
        raise DecodeError("key is shorter than its 2-byte record type", offset=0, part="key")
    type_id = prim.INT16.unpack_from(key, 0)[0]
    record_type = RECORD_TYPES.get(type_id)
    if record_type is None:
        raise DecodeError(
            f"unknown record type {type_id}",
            kind=DecodeErrorKind.UNSUPPORTED,
            record_type=type_id,
            offset=0,
            part="key",
        )
    return record_type


def decode_coordinator_key(key: bytes) -> tuple[RecordType, dict[str, Any], int]:
    """The record type, the decoded key and the number of trailing key bytes."""
    record_type = record_type_of(key)
    try:
        data, end = read_message(record_type.key, record_type.key.valid.low, key, 2)
    except DecodeError as exc:
        raise exc.with_context(record_type=record_type.id, part="key") from None
    return record_type, data, len(key) - end


def decode_coordinator_value(record_type: RecordType, value: bytes) -> tuple[int, dict[str, Any], int]:
    """The value version, the decoded value and the number of trailing value bytes."""
    if len(value) < 2:
        raise DecodeError(
            "value is shorter than its 2-byte version", offset=0, record_type=record_type.id, part="value"
        )
    version = prim.INT16.unpack_from(value, 0)[0]
    if version < 0:
        raise DecodeError(
            f"negative value version {version}", offset=0, record_type=record_type.id, version=version, part="value"
        )
    try:
        data, end = read_message(record_type.value, version, value, 2)
    except DecodeError as exc:
        raise exc.with_context(record_type=record_type.id, version=version, part="value") from None
    return version, data, len(value) - end


class DecodedRecord(NamedTuple):
    """What one `__consumer_offsets` record decodes to, never an exception: the front door to the codec that
    `radar decode`, the ingest's routing and the JSON form all go through (key, value and tombstone handled here).

    `error` is set when the record did not decode; the key stays when the key decoded and the value did not.
    """

    record_type: RecordType | None
    key: dict[str, Any] | None
    value_version: int | None
    value: dict[str, Any] | None
    error: DecodeError | None
    key_trailing_bytes: int = 0
    value_trailing_bytes: int = 0

    @property
    def is_tombstone(self) -> bool:
        """A decoded record without a value (the group or commit was deleted)."""
        return self.error is None and self.value is None

    @property
    def record(self) -> CoordinatorRecord:
        """The decoded record; raises the `DecodeError` for a record that did not decode."""
        if self.error is not None:
            raise self.error
        assert self.record_type is not None and self.key is not None
        return CoordinatorRecord(
            self.record_type.id,
            self.record_type.name,
            self.key,
            self.value_version,
            self.value,
            self.key_trailing_bytes,
            self.value_trailing_bytes,
        )


def decode_record(key: bytes | None, value: bytes | None) -> DecodedRecord:
    """Decode one `__consumer_offsets` record (`value is None`: a tombstone); bad bytes become `error`."""
    if key is None:
        error = DecodeError("record has no key; every coordinator record is keyed", offset=0, part="key")
        return DecodedRecord(None, None, None, None, error)
    try:
        record_type, key_data, key_trailing = decode_coordinator_key(key)
    except DecodeError as exc:
        return DecodedRecord(None, None, None, None, exc)
    if value is None:
        return DecodedRecord(record_type, key_data, None, None, None, key_trailing)
    try:
        version, value_data, value_trailing = decode_coordinator_value(record_type, value)
    except DecodeError as exc:
        return DecodedRecord(record_type, key_data, None, None, exc, key_trailing)
    return DecodedRecord(record_type, key_data, version, value_data, None, key_trailing, value_trailing)


def decode_coordinator_record(key: bytes, value: bytes | None) -> CoordinatorRecord:
    """Decode one `__consumer_offsets` record; raises only `DecodeError`."""
    return decode_record(key, value).record


def encode_coordinator_record(
    record_type: int | str, key: dict[str, Any], value_version: int | None, value: dict[str, Any] | None
) -> tuple[bytes, bytes | None]:
    """Bytes of a coordinator record (tests and the simulator; production paths only read)."""
    rt = RECORD_TYPES_BY_NAME[record_type] if isinstance(record_type, str) else RECORD_TYPES[record_type]
    key_bytes = prim.INT16.pack(rt.id) + write_message(rt.key, rt.key.valid.low, key)
    if value is None or value_version is None:
        return key_bytes, None
    return key_bytes, prim.INT16.pack(value_version) + write_message(rt.value, value_version, value)
