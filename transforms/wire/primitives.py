"""Kafka's primitive wire types, read and written with bounds checks.

Readers take `(buf, pos, end)` and return `(value, new_pos)`; they raise only `DecodeError`, and never allocate
more than the remaining bytes justify. Writers append to a bytearray.
"""

from __future__ import annotations

import base64
import binascii
import struct

from rebalance_radar.transforms.wire.errors import DecodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")

STRUCT_CODES: dict[str, str] = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "uuid": "16s",
}
MAX_STRING_LENGTH = 0x7FFF


def truncated(pos: int, need: int, end: int, what: str) -> DecodeError:
    return DecodeError(f"truncated {what}: needs {need} bytes, {max(end - pos, 0)} left", offset=pos)


_URL_SAFE = bytes.maketrans(b"+/", b"-_")


def uuid_to_text(raw: bytes) -> str:
    """Kafka's JSON form of a uuid: URL-safe base64 without padding (Uuid.toString).

    `b2a_base64` + one translate (that also drops the padding) is what `urlsafe_b64encode().rstrip()` does, in fewer
    steps: every OffsetCommit v4 carries a uuid."""
    return binascii.b2a_base64(raw, newline=False).translate(_URL_SAFE, b"=").decode("ascii")


def uuid_from_text(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"a Kafka uuid is 16 bytes, {text!r} decodes to {len(raw)}")
    return raw


def read_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Unsigned varint (at most 5 bytes, as Kafka's ByteUtils.readUnsignedVarint)."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise DecodeError("truncated unsigned varint", offset=pos)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint is longer than 5 bytes", offset=pos)


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _length_prefix(buf: bytes, pos: int, end: int, compact: bool, wide: bool) -> tuple[int, int]:
    """A length: compact = uvarint-1; else int16 (strings) or int32 (bytes, arrays). -1 means null."""
    if compact:
        n, pos = read_uvarint(buf, pos, end)
        return n - 1, pos
    if wide:
        if pos + 4 > end:
            raise truncated(pos, 4, end, "length")
        return INT32.unpack_from(buf, pos)[0], pos + 4
    if pos + 2 > end:
        raise truncated(pos, 2, end, "length")
    return INT16.unpack_from(buf, pos)[0], pos + 2


def read_string(buf: bytes, pos: int, end: int, compact: bool, nullable: bool, name: str) -> tuple[str | None, int]:
    """A (compact) string; invalid UTF-8 is replaced, as Kafka's reader does."""
    start = pos
    n, pos = _length_prefix(buf, pos, end, compact, wide=False)
    if n < 0:
        if nullable:
            return None, pos
        raise DecodeError(f"non-nullable field {name} was serialized as null", offset=start)
    if n > MAX_STRING_LENGTH:
        raise DecodeError(f"string field {name} had invalid length {n}", offset=start)
    if pos + n > end:
        raise truncated(pos, n, end, f"string {name}")
    return buf[pos : pos + n].decode("utf-8", "replace"), pos + n


def read_bytes(buf: bytes, pos: int, end: int, compact: bool, nullable: bool, name: str) -> tuple[bytes | None, int]:
    start = pos
    n, pos = _length_prefix(buf, pos, end, compact, wide=True)
    if n < 0:
        if nullable:
            return None, pos
        raise DecodeError(f"non-nullable field {name} was serialized as null", offset=start)
    if pos + n > end:
        raise truncated(pos, n, end, f"bytes {name}")
    return buf[pos : pos + n], pos + n


def read_array_length(
    buf: bytes, pos: int, end: int, compact: bool, nullable: bool, name: str, min_element_size: int
) -> tuple[int | None, int]:
    """An array's element count, refused when the remaining bytes cannot hold that many elements."""
    start = pos
    n, pos = _length_prefix(buf, pos, end, compact, wide=True)
    if n < 0:
        if nullable:
            return None, pos
        raise DecodeError(f"non-nullable field {name} was serialized as null", offset=start)
    if n * max(min_element_size, 1) > end - pos:
        raise DecodeError(f"array {name} claims {n} elements but only {end - pos} bytes remain", offset=start)
    return n, pos


def write_length(out: bytearray, n: int, compact: bool, wide: bool) -> None:
    if compact:
        write_uvarint(out, n + 1)
    elif wide:
        out += INT32.pack(n)
    else:
        out += INT16.pack(n)


def write_string(out: bytearray, value: str | None, compact: bool) -> None:
    if value is None:
        write_length(out, -1, compact, wide=False)
        return
    raw = value.encode("utf-8")
    if len(raw) > MAX_STRING_LENGTH:
        raise ValueError(f"string of {len(raw)} bytes exceeds Kafka's limit of {MAX_STRING_LENGTH}")
    write_length(out, len(raw), compact, wide=False)
    out += raw


def write_bytes(out: bytearray, value: bytes | None, compact: bool) -> None:
    if value is None:
        write_length(out, -1, compact, wide=True)
        return
    write_length(out, len(value), compact, wide=True)
    out += value
