"""Every message the codec knows, read from Apache Kafka's own JSON message definitions (package data under
`definitions/`, byte for byte as Kafka ships them; see `definitions/SOURCE.md`) by `spec.message_from_definition`.

- `definitions/coordinator/` (and `removed/`, types gone from trunk that old logs still hold): the records the
  group coordinator writes to `__consumer_offsets`, keys and values paired by `apiKey`.
- `definitions/protocol/`: the group-protocol requests and responses, their headers, and the ConsumerProtocol
  subscription/assignment embedded in classic GroupMetadata members.
- `definitions/radar/`: Kafka-format files that replace a protocol file of the same name, each saying why in its
  header (the versions KIP-896 removed in Kafka 4.0, which 3.x clients still send).

A new Kafka version is a copy of its JSON files into these folders, and the tests.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

from rebalance_radar.transforms.wire.spec import MessageSpec, message_from_definition, read_definition

DEFINITIONS: Traversable = files("rebalance_radar.transforms.wire").joinpath("definitions")


def _definitions(folder: Traversable) -> dict[str, MessageSpec]:
    """The folder's messages by file name (without `.json`), in name order; works from a zip (a cluster's
    executors import the driver's code from one)."""
    found = sorted((entry for entry in folder.iterdir() if entry.name.endswith(".json")), key=lambda e: e.name)
    return {
        entry.name.removesuffix(".json"): message_from_definition(read_definition(entry.read_text())) for entry in found
    }


def _protocol_messages() -> tuple[MessageSpec, ...]:
    kafka = _definitions(DEFINITIONS / "protocol")
    widened = _definitions(DEFINITIONS / "radar")
    unknown = widened.keys() - kafka.keys()
    if unknown:
        raise RuntimeError(f"definitions/radar/ widens files protocol/ does not hold: {sorted(unknown)}")
    return tuple((kafka | widened).values())


COORDINATOR_MESSAGES: tuple[MessageSpec, ...] = (
    *_definitions(DEFINITIONS / "coordinator").values(),
    *_definitions(DEFINITIONS / "coordinator" / "removed").values(),
)
PROTOCOL_MESSAGES: tuple[MessageSpec, ...] = _protocol_messages()
_BY_NAME: dict[str, MessageSpec] = {m.name: m for m in (*COORDINATOR_MESSAGES, *PROTOCOL_MESSAGES)}


def message(name: str) -> MessageSpec:
    """A definition by Kafka's name for it (`"GroupMetadataValue"`, `"JoinGroupRequest"`)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no Kafka message definition named {name}") from None


REQUEST_HEADER = message("RequestHeader")
RESPONSE_HEADER = message("ResponseHeader")
CONSUMER_PROTOCOL_SUBSCRIPTION = message("ConsumerProtocolSubscription")
CONSUMER_PROTOCOL_ASSIGNMENT = message("ConsumerProtocolAssignment")
