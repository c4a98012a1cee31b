"""The `radar.frame/1` envelope: how a protocol tap ships Kafka group-protocol frames as telemetry records.

Declared once, beside the codec: the tap (`encode_frame_envelope`) writes it, the telemetry detector
(`transforms.telemetry.protocol_frames`) reads it with `decode_frame_envelope`, then decodes the frames inside with
`transforms.wire.frames`.

Envelope `radar.frame/1` (the whole Kafka record value; big-endian; the record key is free for the tap):

    offset size  field
    0      4     magic b"\\xffRF1"    0xFF never occurs in UTF-8, so no text record is ever mistaken for a frame
    4      1     kind                0 = request, 1 = response, 2 = exchange (request + its response)
    5      1     framing             0 = as on the wire (int32 size + header + body), 1 = header + body,
                                     2 = body only (no header: the tap decoded it already)
    6      2     api_key             int16; for a response, the API of the request it answers
    8      2     api_version         int16; for a response, the version of the request it answers
    10     8     time_ms             int64 epoch ms of the capture; -1 = use the Kafka record timestamp
    18     2+n   peer                int16 length (-1 = null) + UTF-8: the client's address as the tap saw it
    ..     2+n   client_id           int16 length (-1 = null) + UTF-8: for frames without a request header
    ..           payload             kind 0/1: the frame; kind 2: int32 request length + request frame,
                                     then the response frame
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from rebalance_radar.transforms.wire.errors import DecodeError

MAGIC = b"\xffRF1"
KIND_REQUEST, KIND_RESPONSE, KIND_EXCHANGE = 0, 1, 2
FRAMING_SIZED, FRAMING_HEADER, FRAMING_BODY = 0, 1, 2
_FIXED = struct.Struct(">4sBBhhq")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class FrameEnvelope:
    """One `radar.frame/1` record, unpacked but not yet decoded."""

    kind: int
    framing: int
    api_key: int
    api_version: int
    time_ms: int
    peer: str | None
    client_id: str | None
    request: bytes | None
    response: bytes | None


def _write_text(out: bytearray, text: str | None) -> None:
    if text is None:
        out += _INT16.pack(-1)
        return
    raw = text.encode("utf-8")
    out += _INT16.pack(len(raw)) + raw


def encode_frame_envelope(
    *,
    api_key: int,
    api_version: int,
    request: bytes | None = None,
    response: bytes | None = None,
    framing: int = FRAMING_SIZED,
    time_ms: int = -1,
    peer: str | None = None,
    client_id: str | None = None,
) -> bytes:
    """The record value a tap emits for a request, a response, or both (an exchange)."""
    if request is None and response is None:
        raise ValueError("a frame envelope needs a request, a response or both")
    kind = (
        KIND_EXCHANGE
        if request is not None and response is not None
        else KIND_REQUEST
        if response is None
        else KIND_RESPONSE
    )
    out = bytearray(_FIXED.pack(MAGIC, kind, framing, api_key, api_version, time_ms))
    _write_text(out, peer)
    _write_text(out, client_id)
    if kind == KIND_EXCHANGE:
        assert request is not None and response is not None
        out += _INT32.pack(len(request)) + request + response
    else:
        out += request if request is not None else response  # type: ignore[operator]
    return bytes(out)


def _read_text(data: bytes, pos: int) -> tuple[str | None, int]:
    if len(data) < pos + 2:
        raise DecodeError("envelope truncated in a string length", offset=pos, part="radar.frame/1")
    (length,) = _INT16.unpack_from(data, pos)
    pos += 2
    if length < 0:
        return None, pos
    if len(data) < pos + length:
        raise DecodeError("envelope truncated in a string", offset=pos, part="radar.frame/1")
    return data[pos : pos + length].decode("utf-8", errors="replace"), pos + length


def decode_frame_envelope(data: bytes) -> FrameEnvelope:
    """Unpack the envelope; a DecodeError says what is wrong with it (the frames inside are not read yet)."""
    if len(data) < _FIXED.size:
        raise DecodeError("envelope shorter than its fixed header", offset=len(data), part="radar.frame/1")
    magic, kind, framing, api_key, api_version, time_ms = _FIXED.unpack_from(data, 0)
    if magic != MAGIC:
        raise DecodeError("not a radar.frame/1 envelope", offset=0, part="radar.frame/1")
    if kind not in (KIND_REQUEST, KIND_RESPONSE, KIND_EXCHANGE) or framing not in (
        FRAMING_SIZED,
        FRAMING_HEADER,
        FRAMING_BODY,
    ):
        raise DecodeError(f"unknown kind {kind} or framing {framing}", offset=4, part="radar.frame/1")
    peer, pos = _read_text(data, _FIXED.size)
    client_id, pos = _read_text(data, pos)
    request = response = None
    if kind == KIND_EXCHANGE:
        if len(data) < pos + 4:
            raise DecodeError("envelope truncated in the request length", offset=pos, part="radar.frame/1")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or len(data) < pos + length:
            raise DecodeError("request length beyond the record", offset=pos, part="radar.frame/1")
        request, response = data[pos : pos + length], data[pos + length :]
    elif kind == KIND_REQUEST:
        request = data[pos:]
    else:
        response = data[pos:]
    return FrameEnvelope(kind, framing, api_key, api_version, time_ms, peer, client_id, request, response)
