"""The ConsumerProtocol Subscription/Assignment that classic `consumer` groups carry as opaque bytes in
GroupMetadata members (and JoinGroup/SyncGroup frames).

As Kafka's ConsumerProtocol does, a version newer than the codec knows is read as the newest known version
(the format only appends fields), and a negative version is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.errors import DecodeError
from rebalance_radar.transforms.wire.messages import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from rebalance_radar.transforms.wire.reader import read_message
from rebalance_radar.transforms.wire.spec import MessageSpec
from rebalance_radar.transforms.wire.writer import write_message

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True)
class EmbeddedDecode:
    """One embedded payload: its raw version, and the decoded data or the reason it could not be decoded."""

    version: int | None
    data: dict[str, Any] | None = None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version}
        if self.error is not None:
            out["error"] = self.error
        else:
            out["data"] = self.data
        return out


def _decode_embedded(spec: MessageSpec, payload: bytes | None) -> EmbeddedDecode:
    if payload is None:
        return EmbeddedDecode(None, error="null payload")
    if len(payload) < 2:
        return EmbeddedDecode(None, error="payload is shorter than its 2-byte version")
    version = prim.INT16.unpack_from(payload, 0)[0]
    if version < 0:
        return EmbeddedDecode(version, error=f"unsupported {spec.name} version {version}")
    try:
        data, _ = read_message(spec, min(version, spec.valid.high), payload, 2)
    except DecodeError as exc:
        return EmbeddedDecode(version, error=str(exc))
    return EmbeddedDecode(version, data)


def decode_subscription(payload: bytes | None) -> EmbeddedDecode:
    """Topics, userData, ownedPartitions, generationId and rackId of a member's subscription."""
    return _decode_embedded(CONSUMER_PROTOCOL_SUBSCRIPTION, payload)


def decode_assignment(payload: bytes | None) -> EmbeddedDecode:
    """Assigned partitions and userData of a member's assignment."""
    return _decode_embedded(CONSUMER_PROTOCOL_ASSIGNMENT, payload)


def encode_subscription(version: int, data: dict[str, Any]) -> bytes:
    return prim.INT16.pack(version) + write_message(CONSUMER_PROTOCOL_SUBSCRIPTION, version, data)


def encode_assignment(version: int, data: dict[str, Any]) -> bytes:
    return prim.INT16.pack(version) + write_message(CONSUMER_PROTOCOL_ASSIGNMENT, version, data)
