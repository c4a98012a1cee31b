"""Kafka error names recovered from what logs print: an `Errors` name, its message text, or its exception class.

Client logs print `error.message()` ("Specified group generation id is not valid.") or an exception class
(`(MemberIdRequiredException)`) rather than the name the `heartbeat_events.error` column holds, so the
coordinator-related messages are mapped back here (from `org.apache.kafka.common.protocol.Errors`); the names
themselves are declared in `transforms.wire.error_codes`.
"""

from __future__ import annotations

import re

from transforms.wire.error_codes import KNOWN_ERROR_NAMES, upper_snake

ERROR_NAME_BY_MESSAGE: dict[str, str] = {
    "Specified group generation id is not valid": "ILLEGAL_GENERATION",
    "The coordinator is not aware of this member": "UNKNOWN_MEMBER_ID",
    "The group is rebalancing, so a rejoin is needed": "REBALANCE_IN_PROGRESS",
    # AbstractCoordinator's own wording for REBALANCE_IN_PROGRESS in SyncGroup failures.
    "The group began another rebalance": "REBALANCE_IN_PROGRESS",
    "another consumer with the same group.instance.id has registered with a different member.id": (
        "FENCED_INSTANCE_ID"
    ),
    "The group member needs to have a valid member id before actually entering a consumer group": (
        "MEMBER_ID_REQUIRED"
    ),
    "The coordinator is not available": "COORDINATOR_NOT_AVAILABLE",
    "This is not the correct coordinator": "NOT_COORDINATOR",
    "The coordinator is loading and hence can't process requests": "COORDINATOR_LOAD_IN_PROGRESS",
    "Group authorization failed": "GROUP_AUTHORIZATION_FAILED",
    "The group has reached its maximum size": "GROUP_MAX_SIZE_REACHED",
    "The group member's supported protocols are incompatible": "INCONSISTENT_GROUP_PROTOCOL",
    "The member epoch is stale": "STALE_MEMBER_EPOCH",
    "The member epoch is fenced by the group coordinator": "FENCED_MEMBER_EPOCH",
    "This server does not host this topic-partition": "UNKNOWN_TOPIC_OR_PARTITION",
    "The metadata field of the offset request was too large": "OFFSET_METADATA_TOO_LARGE",
    "The request timed out": "REQUEST_TIMED_OUT",
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
