"""Names of the int8 `state` in *CurrentMemberAssignment records. The codes differ by group type: consumer and
share groups number MemberState from 0 (STABLE), streams groups from 1 (STABLE), so a code means nothing
without the record type it came from.
"""

from __future__ import annotations

_CONSUMER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}
_STREAMS_STATES = {0: "UNKNOWN", 1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS"}
MEMBER_STATES: dict[str, dict[int, str]] = {
    "consumer": _CONSUMER_STATES,
    "share": _CONSUMER_STATES,
    "streams": _STREAMS_STATES,
}


def member_state_name(group_type: str, code: int | None) -> str | None:
    """`STABLE`, `UNREVOKED_PARTITIONS`, ... for a group type's state code; unknown codes keep their number."""
    if code is None:
        return None
    states = MEMBER_STATES.get(group_type)
    if states is None:
        return None
    return states.get(code, f"UNKNOWN({code})")
