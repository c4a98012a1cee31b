"""Kafka's error codes and names (`org.apache.kafka.common.protocol.Errors`), declared once for every layer.

Protocol responses carry the int16 code; logs, snapshots and the `heartbeat_events.error` column carry the name.
Only the codes that group, offset-commit and coordinator calls return are listed; any other code keeps its number.
"""

from __future__ import annotations

import re
from enum import IntEnum


class ErrorCode(IntEnum):
    """The codes, named as Kafka names them; `ErrorCode.ILLEGAL_GENERATION.name` is the text logs and columns use."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    REQUEST_TIMED_OUT = 7
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 128
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132


ERROR_NAME_BY_CODE: dict[int, str] = {int(code): code.name for code in ErrorCode}
KNOWN_ERROR_NAMES: frozenset[str] = frozenset(ERROR_NAME_BY_CODE.values())

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def error_name(code: int | None) -> str | None:
    """Kafka's name for an error code; None for no error, `ERROR_<code>` for a code outside the table."""
    if not code:
        return None
    return ERROR_NAME_BY_CODE.get(code, f"ERROR_{code}")


def upper_snake(camel: str) -> str:
    """Kafka's enum spelling of a CamelCase name: `IllegalGeneration` -> `ILLEGAL_GENERATION`.

    Exception classes and JSON states (`NotReady`) are CamelCase where `Errors` and the admin enums are UPPER_SNAKE.
    """
    return _CAMEL_BOUNDARY.sub("_", camel).upper()
