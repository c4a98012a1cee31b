"""Kafka error names recovered from what logs print: an `Errors` name, its message text, or its exception class.

Client logs print `error.message()` ("Specified group generation id is not valid.") or an exception class
(`(MemberIdRequiredException)`) rather than the name the `heartbeat_events.error` column holds, so the
coordinator-related messages are mapped back here (from `org.apache.kafka.common.protocol.Errors`); the names
themselves are declared in `transforms.wire.error_codes`.
"""

from __future__ import annotations

import re

from rebalance_radar.transforms.wire.error_codes import KNOWN_ERROR_NAMES, upper_snake
from rebalance_radar.transforms.wire.error_codes import ErrorCode as E

ERROR_NAME_BY_MESSAGE: dict[str, str] = {
    "Specified group generation id is not valid": E.ILLEGAL_GENERATION.name,
    "The coordinator is not aware of this member": E.UNKNOWN_MEMBER_ID.name,
    "The group is rebalancing, so a rejoin is needed": E.REBALANCE_IN_PROGRESS.name,
    # AbstractCoordinator's own wording for REBALANCE_IN_PROGRESS in SyncGroup failures.
    "The group began another rebalance": E.REBALANCE_IN_PROGRESS.name,
    "another consumer with the same group.instance.id has registered with a different member.id": (
        E.FENCED_INSTANCE_ID.name
    ),
    "The group member needs to have a valid member id before actually entering a consumer group": (
        E.MEMBER_ID_REQUIRED.name
    ),
    "The coordinator is not available": E.COORDINATOR_NOT_AVAILABLE.name,
    "This is not the correct coordinator": E.NOT_COORDINATOR.name,
    "The coordinator is loading and hence can't process requests": E.COORDINATOR_LOAD_IN_PROGRESS.name,
    "Group authorization failed": E.GROUP_AUTHORIZATION_FAILED.name,
    "The consumer group has reached its max size": E.GROUP_MAX_SIZE_REACHED.name,
    "The group member's supported protocols are incompatible": E.INCONSISTENT_GROUP_PROTOCOL.name,
    "The member epoch is stale": E.STALE_MEMBER_EPOCH.name,
    "The instance ID is still used by another member in the consumer group": E.UNRELEASED_INSTANCE_ID.name,
    "The member epoch is fenced by the group coordinator": E.FENCED_MEMBER_EPOCH.name,
    "This server does not host this topic-partition": E.UNKNOWN_TOPIC_OR_PARTITION.name,
    "The metadata field of the offset request was too large": E.OFFSET_METADATA_TOO_LARGE.name,
    "The request timed out": E.REQUEST_TIMED_OUT.name,
    # AbstractCoordinator's own wording for COORDINATOR_LOAD_IN_PROGRESS in JoinGroup failures (2.x-4.x).
    "is loading the group": E.COORDINATOR_LOAD_IN_PROGRESS.name,
    # AbstractCoordinator's own wording for FENCED_INSTANCE_ID in JoinGroup/SyncGroup failures.
    "has been fenced by another instance": E.FENCED_INSTANCE_ID.name,
    # librdkafka's `rd_kafka_err2str` texts (rdkafka.c) where they differ from Kafka's own messages.
    "Broker: Unknown member": E.UNKNOWN_MEMBER_ID.name,
    "Broker: Group rebalance in progress": E.REBALANCE_IN_PROGRESS.name,
    "Broker: Static consumer fenced by other consumer with same group.instance.id": E.FENCED_INSTANCE_ID.name,
    "Broker: Not coordinator": E.NOT_COORDINATOR.name,
    "Broker: Coordinator not available": E.COORDINATOR_NOT_AVAILABLE.name,
    "Broker: Coordinator load in progress": E.COORDINATOR_LOAD_IN_PROGRESS.name,
    "Broker: Consumer group has reached maximum size": E.GROUP_MAX_SIZE_REACHED.name,
    "Broker: Topic authorization failed": E.TOPIC_AUTHORIZATION_FAILED.name,
}

_ERROR_NAME_TOKEN = re.compile(r"\b[A-Z][A-Z_]{3,}\b")
_EXCEPTION_CLASS = re.compile(r"\b([A-Z][A-Za-z]+)Exception\b")


def error_name_from_exception(class_name: str) -> str | None:
    """`IllegalGenerationException` -> `ILLEGAL_GENERATION`, when that is a known Kafka error name."""
    stem = class_name.removesuffix("Exception").rsplit(".", 1)[-1]
    name = upper_snake(stem)
    return name if name in KNOWN_ERROR_NAMES else None


def error_name_in_text(text: str) -> str | None:
    """The Kafka error a log message names: an UPPER_SNAKE name, a known message, or an exception class."""
    for token in _ERROR_NAME_TOKEN.findall(text):
        if token in KNOWN_ERROR_NAMES:
            return token
    for message, name in ERROR_NAME_BY_MESSAGE.items():
        if message in text:
            return name
    for match in _EXCEPTION_CLASS.finditer(text):
        name = error_name_from_exception(match.group(0))
        if name is not None:
            return name
    return None
