"""Why a group rebalanced: one `RebalanceCause` per rebalance, decided from the evidence of its window, and in its
`cause_detail` every other cause the rebalance had (the joins, leaves and expiries it took in while running).

Order of trust: the coordinator's own "reason: ..." of the first attempt (both coordinators' wording, parsed into
`details.cause` by the broker-log parser), unless it only says a member rejoined; then what the window shows:
expirations, poll timeouts, Streams-enforced rebalances, departures, joins, subscription changes (a member's, then
the subscribed topics' own: KIP-848's metadata hash), a failed predecessor. Mid-rebalance expirations carry no reason
line, so they never override the first attempt's cause.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance_radar.transforms.detectors.state import AttemptKind, MembershipChange, OpenRebalance
from rebalance_radar.transforms.schemas import RebalanceCause

_BROKER_CAUSES = {c.value for c in RebalanceCause} - {RebalanceCause.UNKNOWN.value}

# librdkafka `rebalance_reason` / Java client texts that name a cause.
_CLIENT_TEXT_CAUSES: tuple[tuple[str, RebalanceCause], ...] = (
    ("max.poll.interval.ms", RebalanceCause.POLL_TIMEOUT),
    ("poll timeout", RebalanceCause.POLL_TIMEOUT),
    ("session timed out", RebalanceCause.HEARTBEAT_EXPIRATION),
    ("subscription", RebalanceCause.SUBSCRIPTION_CHANGE),
    ("metadata", RebalanceCause.SUBSCRIPTION_CHANGE),
)


@dataclass(frozen=True, slots=True)
class CauseDecision:
    """The cause and the text (a reason line or a summary of the evidence) that decided it."""

    cause: RebalanceCause
    detail: str


_CHANGE_CAUSES: tuple[tuple[RebalanceCause, str], ...] = (
    (RebalanceCause.HEARTBEAT_EXPIRATION, "expired"),
    (RebalanceCause.MEMBER_LEFT, "left"),
    (RebalanceCause.MEMBER_JOINED, "joined"),
)
"""The causes a membership change of each kind is, with the word `cause_detail` names its members by."""


def decide_cause(
    rebalance: OpenRebalance,
    *,
    joined: list[str],
    left: list[str],
    expired: list[str],
    subscription_changed: bool,
    skipped_generations: int,
    topics_changed: bool,
) -> CauseDecision:
    """The cause of a rebalance, and in its detail every other cause it had: a KIP-848/1071 rebalance that does not
    converge takes each later join, leave and expiry (one per epoch bump) into itself, and the first one alone would
    hide, say, the expirations of a crash loop behind the join that started it."""
    decision = _first_cause(
        rebalance,
        joined=joined,
        left=left,
        expired=expired,
        subscription_changed=subscription_changed,
        topics_changed=topics_changed,
        skipped_generations=skipped_generations,
    )
    explained = {
        RebalanceCause.POLL_TIMEOUT: "left",
        RebalanceCause.HEARTBEAT_EXPIRATION: "expired",
        RebalanceCause.MEMBER_LEFT: "left",
        RebalanceCause.MEMBER_JOINED: "joined",
    }.get(decision.cause)
    members = {"expired": expired, "left": left, "joined": joined}
    others = [
        f"{cause.value} ({word}: {', '.join(sorted(members[word]))})"
        for cause, word in _CHANGE_CAUSES
        if members[word] and word != explained
    ]
    if not others:
        return decision
    also = "also " + "; ".join(others)
    return CauseDecision(decision.cause, f"{decision.detail}; {also}" if decision.detail else also)


def _first_cause(
    rebalance: OpenRebalance,
    *,
    joined: list[str],
    left: list[str],
    expired: list[str],
    subscription_changed: bool,
    skipped_generations: int,
    topics_changed: bool,
) -> CauseDecision:
    """The one cause of a rebalance from its attempts and its membership change."""
    first_broker = next((a for a in rebalance.attempts if a.kind == AttemptKind.PREPARE), None)
    if first_broker is not None and first_broker.cause in _BROKER_CAUSES:
        client_reason = (first_broker.client_reason or "").lower()
        if first_broker.cause == RebalanceCause.MEMBER_LEFT.value and (
            "poll timeout" in client_reason or first_broker.member_id in rebalance.poll_timeouts
        ):
            return CauseDecision(RebalanceCause.POLL_TIMEOUT, first_broker.reason or "")
        return CauseDecision(RebalanceCause(first_broker.cause), first_broker.reason or "")
    poll_timeouts = [m for m in rebalance.poll_timeouts if m in left or m in expired or not (left or expired)]
    first = rebalance.first_change
    if first == MembershipChange.JOINED and joined:
        return CauseDecision(RebalanceCause.MEMBER_JOINED, f"joined: {', '.join(sorted(joined))}")
    if first == MembershipChange.LEFT and left:
        if poll_timeouts:
            return CauseDecision(RebalanceCause.POLL_TIMEOUT, f"poll timeout: {', '.join(sorted(poll_timeouts))}")
        return CauseDecision(RebalanceCause.MEMBER_LEFT, f"left: {', '.join(sorted(left))}")
    if first == MembershipChange.EXPIRED and expired:
        return CauseDecision(RebalanceCause.HEARTBEAT_EXPIRATION, f"expired: {', '.join(sorted(expired))}")
    if expired:
        return CauseDecision(RebalanceCause.HEARTBEAT_EXPIRATION, f"expired: {', '.join(sorted(expired))}")
    if poll_timeouts:
        return CauseDecision(RebalanceCause.POLL_TIMEOUT, f"poll timeout: {', '.join(sorted(poll_timeouts))}")
    if rebalance.enforced:
        return CauseDecision(RebalanceCause.ENFORCED, rebalance.enforced[0])
    for attempt in rebalance.attempts:
        text = (attempt.reason or "").lower()
        if attempt.kind == AttemptKind.CLIENT and text:
            for needle, cause in _CLIENT_TEXT_CAUSES:
                if needle in text:
                    return CauseDecision(cause, attempt.reason or "")
    if left:
        return CauseDecision(RebalanceCause.MEMBER_LEFT, f"left: {', '.join(sorted(left))}")
    if joined:
        return CauseDecision(RebalanceCause.MEMBER_JOINED, f"joined: {', '.join(sorted(joined))}")
    if subscription_changed:
        return CauseDecision(RebalanceCause.SUBSCRIPTION_CHANGE, "members' subscriptions changed")
    if topics_changed:
        return CauseDecision(
            RebalanceCause.SUBSCRIPTION_CHANGE,
            "the subscribed topics changed (partitions added, or a topic created or deleted)",
        )
    if skipped_generations > 1 or any(a.kind == AttemptKind.SYNC_FAILED for a in rebalance.attempts):
        return CauseDecision(RebalanceCause.FAILED_PREVIOUS, "the previous rebalance attempt did not complete")
    if first_broker is not None and first_broker.reason:
        return CauseDecision(RebalanceCause.UNKNOWN, first_broker.reason)
    return CauseDecision(RebalanceCause.UNKNOWN, "")
