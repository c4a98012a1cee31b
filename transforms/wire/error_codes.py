"""Kafka's error codes and names (`org.apache.kafka.common.protocol.Errors`), declared once for every layer.

Protocol responses carry the int16 code; logs, snapshots and the `heartbeat_events.error` column carry the name.
Only the codes that group, offset-commit and coordinator calls return are listed; any other code keeps its number.
"""

from __future__ import annotations

import re

ERROR_NAME_BY_CODE: dict[int, str] = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    7: "REQUEST_TIMED_OUT",
    12: "OFFSET_METADATA_TOO_LARGE",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    22: "ILLEGAL_GENERATION",
    23: "INCONSISTENT_GROUP_PROTOCOL",
    24: "INVALID_GROUP_ID",
    25: "UNKNOWN_MEMBER_ID",
    26: "INVALID_SESSION_TIMEOUT",
    27: "REBALANCE_IN_PROGRESS",
    28: "INVALID_COMMIT_OFFSET_SIZE",
    29: "TOPIC_AUTHORIZATION_FAILED",
    30: "GROUP_AUTHORIZATION_FAILED",
    35: "UNSUPPORTED_VERSION",
    42: "INVALID_REQUEST",
    68: "NON_EMPTY_GROUP",
    69: "GROUP_ID_NOT_FOUND",
    79: "MEMBER_ID_REQUIRED",
    81: "GROUP_MAX_SIZE_REACHED",
    82: "FENCED_INSTANCE_ID",
    86: "GROUP_SUBSCRIBED_TO_TOPIC",
    88: "UNSTABLE_OFFSET_COMMIT",
    100: "UNKNOWN_TOPIC_ID",
    110: "FENCED_MEMBER_EPOCH",
    111: "UNRELEASED_INSTANCE_ID",
    112: "UNSUPPORTED_ASSIGNOR",
    113: "STALE_MEMBER_EPOCH",
    128: "INVALID_REGULAR_EXPRESSION",
    130: "STREAMS_INVALID_TOPOLOGY",
    131: "STREAMS_INVALID_TOPOLOGY_EPOCH",
    132: "STREAMS_TOPOLOGY_FENCED",
}
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
