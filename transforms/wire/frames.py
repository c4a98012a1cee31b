"""Group-protocol frames as a tap or proxy sees them: optional int32 size, request/response header, body.

A request header names its API and version; a response header carries only the correlation id, so a response is
decoded with the API and version of the request it answers (pair them by correlation id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.errors import DecodeError, DecodeErrorKind
from rebalance_radar.transforms.wire.messages import PROTOCOL_MESSAGES, REQUEST_HEADER, RESPONSE_HEADER
from rebalance_radar.transforms.wire.reader import read_message
from rebalance_radar.transforms.wire.spec import MessageSpec

Direction = Literal["request", "response"]


@dataclass(frozen=True)
class Api:
    """One group-protocol API: its key, name and request/response definitions."""

    key: int
    name: str
    request: MessageSpec
    response: MessageSpec

    def spec(self, direction: Direction) -> MessageSpec:
        return self.request if direction == "request" else self.response


def _apis() -> dict[int, Api]:
    requests = {m.api_key: m for m in PROTOCOL_MESSAGES if m.kind == "request"}
    responses = {m.api_key: m for m in PROTOCOL_MESSAGES if m.kind == "response"}
    return {k: Api(k, requests[k].short_name, requests[k], responses[k]) for k in sorted(requests)}  # type: ignore[type-var]


APIS: dict[int, Api] = _apis()
APIS_BY_NAME: dict[str, Api] = {a.name: a for a in APIS.values()}


@dataclass(frozen=True)
class ProtocolFrame:
    """A decoded frame: which API and version, its header (if framed with one) and body."""

    api_key: int | None
    api_name: str | None
    api_version: int | None
    direction: Direction
    header: dict[str, Any] | None
    body: dict[str, Any] | None
    size: int | None = None
    trailing_bytes: int = 0


def api_of(api: int | str) -> Api:
    found = APIS_BY_NAME.get(api) if isinstance(api, str) else APIS.get(api)
    if found is None:
        raise DecodeError(f"API {api} is not a group-protocol API this codec knows", kind=DecodeErrorKind.UNSUPPORTED)
    return found


def request_header_version(api: Api, api_version: int) -> int:
    """Flexible request versions use header v2 (tagged fields), others v1."""
    return 2 if api.request.is_flexible(api_version) else 1


API_VERSIONS_KEY = 18


def response_header_version(api: Api, api_version: int) -> int:
    """Flexible response versions use header v1 (tagged fields), others v0; ApiVersions answers always with v0,
    whatever its version, so a client that does not know the broker's versions yet can read it (Kafka's
    generated `ApiMessageType.responseHeaderVersion` says the same)."""
    if api.key == API_VERSIONS_KEY:
        return 0
    return 1 if api.response.is_flexible(api_version) else 0


def decode_body(
    api: int | str, api_version: int, direction: Direction, data: bytes, pos: int = 0
) -> tuple[dict[str, Any], int]:
    """Decode a bare request/response body; returns the body and the position after it."""
    spec = api_of(api).spec(direction)
    try:
        return read_message(spec, api_version, data, pos)
    except DecodeError as exc:
        raise exc.with_context(version=api_version, part=f"{spec.name} body") from None


def _read_size(data: bytes, sized: bool) -> tuple[int | None, int]:
    if not sized:
        return None, 0
    if len(data) < 4:
        raise prim.truncated(0, 4, len(data), "frame size")
    return prim.INT32.unpack_from(data, 0)[0], 4


def decode_request(data: bytes, *, sized: bool = True, with_body: bool = True) -> ProtocolFrame:
    """A request frame: [int32 size] + request header + body; the header says which API and version."""
    size, pos = _read_size(data, sized)
    if len(data) < pos + 4:
        raise prim.truncated(pos, 4, len(data), "request api key and version")
    api_key = prim.INT16.unpack_from(data, pos)[0]
    api_version = prim.INT16.unpack_from(data, pos + 2)[0]
    api = api_of(api_key)
    if api_version not in api.request.valid:
        raise DecodeError(
            f"{api.name} request version {api_version} is not known to this codec",
            kind=DecodeErrorKind.UNSUPPORTED,
            version=api_version,
            offset=pos,
        )
    header, pos = read_message(REQUEST_HEADER, request_header_version(api, api_version), data, pos)
    body = None
    if with_body:
        body, pos = decode_body(api_key, api_version, "request", data, pos)
    return ProtocolFrame(api_key, api.name, api_version, "request", header, body, size, len(data) - pos)


def decode_response(
    data: bytes,
    api: int | str | None,
    api_version: int | None,
    *,
    sized: bool = True,
    header_version: int | None = None,
) -> ProtocolFrame:
    """A response frame: [int32 size] + response header + body, read with the request's API and version.

    With `api=None` only the header is read (the body's type is unknown without the request).
    """
    size, pos = _read_size(data, sized)
    if api is None or api_version is None:
        header, pos = read_message(RESPONSE_HEADER, header_version or 0, data, pos)
        return ProtocolFrame(None, None, None, "response", header, None, size, len(data) - pos)
    known = api_of(api)
    hv = response_header_version(known, api_version) if header_version is None else header_version
    header, pos = read_message(RESPONSE_HEADER, hv, data, pos)
    body, pos = decode_body(known.key, api_version, "response", data, pos)
    return ProtocolFrame(known.key, known.name, api_version, "response", header, body, size, len(data) - pos)
