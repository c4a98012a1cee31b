"""heartbeat_expiration and heartbeat_at_risk: members whose session lapsed, or is about to.

heartbeat_expiration opens on the broker's own removal line (classic "has failed, removing it" / "on heartbeat
expiration", KIP-848 "fenced ... session expired"), or is inferred for a member that vanished from the next
generation without a leave when its own client then reports UNKNOWN_MEMBER_ID / a session timeout / lost
partitions, or whose last heartbeat was already older than its session timeout. It resolves when the group
has stabilised without the member (the summary then names the generation change).

heartbeat_at_risk opens when a live member's last real heartbeat (protocol frames, agent, client log; describe
snapshots are not heartbeats) is older than `heartbeat_at_risk_fraction` of its session timeout, and older than
1.5 times the member's usual reporting gap (reports that come rarely, e.g. librdkafka statistics every 60 s, are
not silence; when that gap nears the session timeout no early warning is possible); it resolves on the next
heartbeat or when the member leaves the group (an expiration then takes over).
"""

from __future__ import annotations

from typing import Any

from rebalance_radar.transforms.detectors.detections import DetectionBook
from rebalance_radar.transforms.detectors.evidence import seconds
from rebalance_radar.transforms.detectors.state import DepartedMember, GroupState, MemberState
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.schemas import DetectionKind

KIND = DetectionKind.HEARTBEAT_EXPIRATION
AT_RISK = DetectionKind.HEARTBEAT_AT_RISK


def _expiry_summary(state: GroupState, gone: DepartedMember, next_generation: int | None, how: str) -> str:
    timeout = gone.session_timeout_ms
    if gone.last_heartbeat_ms is not None and timeout:
        silence = f"was silent {seconds(gone.at_ms - gone.last_heartbeat_ms)} against its {seconds(timeout)} session"
        silence += " timeout"
    elif timeout:
        silence = f"missed its {seconds(timeout)} session timeout"
    else:
        silence = "missed its session timeout"
    change = f"generation {gone.generation} -> {next_generation}" if next_generation is not None else "rebalancing"
    return f"member {gone.member_id} of group {state.group_id} {silence} and was removed ({how}); {change}"


def open_expiration(
    state: GroupState, book: DetectionBook, gone: DepartedMember, at_ms: int, how: str, refs: list[dict[str, Any]]
) -> str:
    """Open the heartbeat_expiration of a departed member (broker line or confirmed inference)."""
    return book.open(
        KIND,
        (gone.member_id, gone.generation),
        at_ms=at_ms,
        first_seen_ms=gone.last_heartbeat_ms or gone.at_ms,
        summary=_expiry_summary(state, gone, None, how),
        refs=gone.refs + refs,
        generation=gone.generation,
        member_id=gone.member_id,
    )


def resolve_expirations(state: GroupState, book: DetectionBook, at_ms: int, generation: int | None) -> None:
    """The group stabilised: each open expiration of a member no longer in it resolves, naming the change."""
    for row in book.open_of_kind(KIND):
        member = row["member_id"]
        gone = state.departed.get(member)
        if gone is None or member in state.members:
            continue
        how = "inferred" if "inferred" in row["summary"] else "coordinator"
        book.resolve(row["detection_id"], at_ms=at_ms, summary=_expiry_summary(state, gone, generation, how))


def heartbeat_deadline(member: MemberState, thresholds: DetectorThresholds) -> int | None:
    """When this member's silence becomes a risk, unless that deadline was already evaluated."""
    if member.last_heartbeat_ms is None or member.at_risk_checked_for == member.last_heartbeat_ms:
        return None
    if member.heartbeat_gap_ms is None:
        return None  # one report says nothing yet about how often this member's telemetry comes
    timeout = member.session_timeout_ms or thresholds.default_session_timeout_ms
    allowed = max(int(timeout * thresholds.heartbeat_at_risk_fraction), int(1.5 * (member.heartbeat_gap_ms or 0)))
    if allowed >= timeout:
        return None  # heartbeats are reported too rarely (e.g. long statistics intervals) to warn before expiry
    return member.last_heartbeat_ms + allowed


def check_at_risk(
    state: GroupState, book: DetectionBook, member: MemberState, now_ms: int, thresholds: DetectorThresholds
) -> None:
    """At the member's deadline: still silent and still a member -> heartbeat_at_risk."""
    deadline = heartbeat_deadline(member, thresholds)
    if deadline is None or deadline > now_ms or member.last_heartbeat_ms is None:
        return
    member.at_risk_checked_for = member.last_heartbeat_ms
    timeout = member.session_timeout_ms or thresholds.default_session_timeout_ms
    book.open(
        AT_RISK,
        (member.member_id, member.last_heartbeat_ms),
        at_ms=deadline,
        first_seen_ms=member.last_heartbeat_ms,
        summary=(
            f"member {member.member_id} of group {state.group_id} has not heartbeated for "
            f"{seconds(deadline - member.last_heartbeat_ms)} of its {seconds(timeout)} session timeout"
        ),
        refs=[member.heartbeat_ref] if member.heartbeat_ref else [],
        generation=state.generation,
        member_id=member.member_id,
    )


def resolve_at_risk(book: DetectionBook, member_id: str, at_ms: int, why: str) -> None:
    for row in book.open_of_kind(AT_RISK):
        if row["member_id"] == member_id:
            book.resolve(row["detection_id"], at_ms=at_ms, summary=f"{row['summary']}; {why}")
