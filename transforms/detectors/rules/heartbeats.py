"""heartbeat_expiration and heartbeat_at_risk: members whose session lapsed, or is about to."""

from __future__ import annotations

from collections.abc import Iterable

from rebalance_radar.transforms.detectors.evidence import seconds
from rebalance_radar.transforms.detectors.facts import (
    GroupStable,
    Heartbeat,
    MemberDeparted,
    MemberExpired,
    RebalanceCompleted,
)
from rebalance_radar.transforms.detectors.rules.rule import Rule, RuleContext, registered
from rebalance_radar.transforms.detectors.settings import SessionTimeout, session_timeout_of
from rebalance_radar.transforms.detectors.state import DepartedMember, GroupState, MemberState
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.schemas import DetectionKind, Severity


def session_timeout_words(known: SessionTimeout | int | None, thresholds: DetectorThresholds) -> str:
    """A member's session timeout for a sentence: its own when a record, its client's configuration listing or the
    broker's (KIP-848 and streams groups: `group.consumer.session.timeout.ms`, `group.streams.session.timeout.ms`)
    said it, with where it comes from (`detectors.settings.session_timeout_of`); else the default, said to be
    assumed."""
    if isinstance(known, int) and known:
        known = SessionTimeout(known)
    if isinstance(known, SessionTimeout):
        source = f" ({known.source})" if known.source else ""
        return f"its {seconds(known.ms)} session timeout{source}"
    return (
        f"the {seconds(thresholds.default_session_timeout_ms)} session timeout radar assumes (the group's is not in "
        "its records nor its client's or broker's configuration listing; set detect.thresholds."
        "default_session_timeout_ms to it, or consumer_/streams_group_session_timeout_ms for KIP-848/streams groups)"
    )


def silence_advice(silence_ms: int | None, known: SessionTimeout | None) -> str | None:
    """The silence seen against the member's known session timeout, and which setting to change: a KIP-848 or
    streams member's is the broker's (or its group's) config, not its client's."""
    if silence_ms is None or known is None:
        return None
    if known.source and known.source.startswith("the broker's group."):
        setting = known.source.removeprefix("the broker's ").split(",")[0].split(" ")[0]
        group_setting = setting.removeprefix("group.")
        return (
            f"It was silent {seconds(silence_ms)} against the broker's {setting} of {seconds(known.ms)}: under this "
            f"protocol that setting (or the group's own {group_setting}) decides, not the client's session.timeout.ms."
        )
    if known.source and known.source.startswith("the group's "):
        setting = known.source.removeprefix("the group's ").split(",")[0].split(" ")[0]
        return (
            f"It was silent {seconds(silence_ms)} against the group's own {setting} of {seconds(known.ms)}: under this "
            "protocol that group config decides, not the broker's default nor the client's session.timeout.ms."
        )
    return f"It was silent {seconds(silence_ms)} against a session.timeout.ms of {seconds(known.ms)}."


@registered
class HeartbeatAtRisk(Rule):
    """A live member's last real heartbeat (protocol frames, agent, client log; describe snapshots are not
    heartbeats) is older than `heartbeat_at_risk_fraction` of its session timeout, and older than 1.5 times the
    member's usual reporting gap: reports that come rarely (librdkafka statistics every 60 s) are not silence, and
    when that gap nears the session timeout no early warning is possible."""

    kind = DetectionKind.HEARTBEAT_AT_RISK
    severity = Severity.INFO
    member_subject = True
    thresholds = (
        "heartbeat_at_risk_fraction",
        "default_session_timeout_ms",
        "consumer_group_session_timeout_ms",
        "streams_group_session_timeout_ms",
        "incident_reopen_ms",
    )
    reacts_to = (Heartbeat, MemberDeparted)
    resolves = "on the member's next heartbeat, or when it leaves the group (an expiration then takes over)"
    remedy = (
        "if the member's process is alive, its heartbeat thread is starved (long GC pauses, CPU, a blocked network "
        "to the coordinator): look at that process now; the group rebalances if the silence reaches its session "
        "timeout."
    )

    def react(self, fact: Heartbeat | MemberDeparted, ctx: RuleContext) -> None:
        why = "heartbeats resumed" if isinstance(fact, Heartbeat) else fact.why
        for row in self.held(ctx):
            if row.member_id == fact.member_id:
                ctx.book.resolve(row.detection_id, at_ms=fact.at_ms, summary=f"{row.summary}; {why}")

    def deadlines(self, ctx: RuleContext) -> Iterable[int | None]:
        return [self.member_deadline(member, ctx.thresholds, ctx.state) for member in ctx.state.members.values()]

    @staticmethod
    def member_deadline(
        member: MemberState, thresholds: DetectorThresholds, state: GroupState | None = None
    ) -> int | None:
        """When this member's silence becomes a risk, unless that deadline was already evaluated."""
        if member.last_heartbeat_ms is None or member.at_risk_checked_for == member.last_heartbeat_ms:
            return None
        if member.heartbeat_gap_ms is None:
            return None  # one report says nothing yet about how often this member's telemetry comes
        known = session_timeout_of(state, member) if state is not None else None
        timeout = known.ms if known else member.session_timeout_ms or thresholds.default_session_timeout_ms
        allowed = max(int(timeout * thresholds.heartbeat_at_risk_fraction), int(1.5 * (member.heartbeat_gap_ms or 0)))
        if allowed >= timeout:
            return None  # heartbeats are reported too rarely (e.g. long statistics intervals) to warn before expiry
        return member.last_heartbeat_ms + allowed

    def at_deadline(self, ctx: RuleContext, now_ms: int) -> None:
        for member in sorted(ctx.state.members.values(), key=lambda m: m.member_id):
            deadline = self.member_deadline(member, ctx.thresholds, ctx.state)
            if deadline is None or deadline > now_ms or member.last_heartbeat_ms is None:
                continue
            member.at_risk_checked_for = member.last_heartbeat_ms
            self.open(
                ctx,
                (member.member_id, member.last_heartbeat_ms),
                at_ms=deadline,
                first_seen_ms=member.last_heartbeat_ms,
                summary=(
                    f"member {member.member_id} of group {ctx.state.group_id} has not heartbeated for "
                    f"{seconds(deadline - member.last_heartbeat_ms)} of "
                    f"{session_timeout_words(session_timeout_of(ctx.state, member), ctx.thresholds)}"
                ),
                refs=[member.heartbeat_ref] if member.heartbeat_ref else [],
                generation=ctx.state.generation,
                member_id=member.member_id,
            )


@registered
class HeartbeatExpiration(Rule):
    """The broker's own removal line (classic "has failed, removing it" / "on heartbeat expiration", KIP-848
    "fenced ... session expired"), or inferred: a member vanished from the next generation without a leave and its
    own client then reported UNKNOWN_MEMBER_ID, a session timeout or lost partitions, or its last heartbeat was
    already older than its session timeout (a heartbeat after a longer silence is a paused client waking, whose
    session had expired: the one before the silence counts)."""

    kind = DetectionKind.HEARTBEAT_EXPIRATION
    severity = Severity.WARNING
    member_subject = True
    thresholds = (
        "default_session_timeout_ms",
        "consumer_group_session_timeout_ms",
        "streams_group_session_timeout_ms",
        "inferred_expiry_window_ms",
        "incident_quiet_ms",
        "incident_reopen_ms",
    )
    reacts_to = (MemberExpired, RebalanceCompleted, GroupStable)
    resolves = "when the group has stabilised without the member (or after incident_quiet_ms)"
    remedy = (
        "if the process died, find why in its own logs; if it was alive (GC pauses, network), raise session.timeout.ms "
        "above the silence seen or fix the pauses; for planned restarts, static membership (group.instance.id with a "
        "session.timeout.ms longer than a restart) keeps the partitions without a rebalance."
    )
    quiet_resolved = True

    def react(self, fact: MemberExpired | RebalanceCompleted | GroupStable, ctx: RuleContext) -> None:
        if isinstance(fact, MemberExpired):
            gone = fact.gone
            silence = gone.at_ms - gone.last_heartbeat_ms if gone.last_heartbeat_ms is not None else None
            advice = silence_advice(silence, session_timeout_of(ctx.state, gone))
            self.open(
                ctx,
                (gone.member_id, gone.generation),
                advice=advice,
                at_ms=fact.at_ms,
                first_seen_ms=gone.last_heartbeat_ms or gone.at_ms,
                summary=self.summary(ctx.state, gone, None, fact.how, ctx.thresholds),
                refs=[*gone.refs, *fact.refs],
                generation=gone.generation,
                member_id=gone.member_id,
            )
            return
        for row in self.held(ctx):
            gone = ctx.state.departed.get(row.member_id or "")
            if gone is None or row.member_id in ctx.state.members:
                continue
            how = "inferred" if "inferred" in row.summary else "coordinator"
            ctx.book.resolve(
                row.detection_id,
                at_ms=fact.at_ms,
                summary=self.summary(ctx.state, gone, fact.generation, how, ctx.thresholds),
            )

    @staticmethod
    def summary(
        state: GroupState, gone: DepartedMember, next_generation: int | None, how: str, thresholds: DetectorThresholds
    ) -> str:
        timeout = session_timeout_words(session_timeout_of(state, gone), thresholds)
        if gone.last_heartbeat_ms is not None:
            silence = f"was silent {seconds(gone.at_ms - gone.last_heartbeat_ms)} against {timeout}"
        else:
            silence = f"missed {timeout}"
        change = f"generation {gone.generation} -> {next_generation}" if next_generation is not None else "rebalancing"
        return f"member {gone.member_id} of group {state.group_id} {silence} and was removed ({how}); {change}"
