"""Rules over the sequence of generations/epochs: failing_generation, rebalance_storm, probing_rebalance_loop,
membership_flapping and leader_instability. The windowed ones resolve once their window holds no more evidence
(a deadline evaluates it)."""

from __future__ import annotations

from collections.abc import Iterable

from rebalance_radar.transforms.detectors.evidence import seconds
from rebalance_radar.transforms.detectors.facts import (
    LeaderChanged,
    MemberCaughtUp,
    MemberDeparted,
    MemberExpired,
    MemberFencedBehind,
    RebalanceAttempted,
    RebalanceCompleted,
    SyncExpired,
)
from rebalance_radar.transforms.detectors.rules.rule import Rule, RuleContext, registered
from rebalance_radar.transforms.detectors.settings import assignor_advice
from rebalance_radar.transforms.detectors.state import (
    Attempt,
    AttemptKind,
    CompletedRebalance,
    Departure,
    DepartureKind,
    GroupState,
    MemberState,
    SyncExpiry,
)
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.schemas import DetectionKind, Severity

ATTEMPTS_MIN_AGE_MS = 60_000
"""A quick scale-out also prepares several times before it settles: the first attempt must be this old."""

PLANNED_CAUSES = frozenset({"member_joined", "member_left", "enforced"})
"""Rebalances a deployment makes on purpose (scale-out/in, rolling restarts, Streams followups): not a storm."""


def unplanned(completed: CompletedRebalance) -> bool:
    """Not what a deployment does on purpose: its cause is not a join, a clean leave or a Streams followup, or a
    member was expired or removed during it (a join that replaced a dead member is a crash's, not a scale-out's:
    every cause a rebalance had counts, not only the first)."""
    return completed.cause not in PLANNED_CAUSES or bool(completed.row.get("expired"))


def client_label(identity: str) -> str:
    """`client:ID@HOST` / `instance:ID` / `member:ID` -> the name a person knows the client by."""
    label = identity.split(":", 1)[-1]
    return label.rsplit("@", 1)[0] if identity.startswith("client:") else label


def _window(history: list[CompletedRebalance], now_ms: int, window_ms: int) -> list[CompletedRebalance]:
    return [h for h in history if now_ms - h.stabilized_ms < window_ms]


@registered
class FailingGeneration(Rule):
    """The group cannot leave a generation for a stable successor, in any of these ways:
    - attempts: >= `failing_generation_attempts` distinct tries to leave the stable generation (broker prepares
      with their old generation, failed joins/syncs) within the window and no stable successor, the first one at
      least a minute old;
    - stuck: a rebalance open longer than the members' rebalance timeout plus a grace;
    - skips: persisted classic generations skipping numbers beyond the one a stabilised-but-never-persisted
      generation explains (N -> N+2 is healthy), adding up to `failing_generation_skips` over >= 2 transitions;
    - unsynced: >= `failing_generation_attempts` removals "on pending sync request expiration" (members that joined
      and never sent SyncGroup) within the window; the leader completes each generation in between, so a stable
      successor does not end it. It covers the leader that never syncs too, which a log-only view cannot see
      otherwise (the coordinator logs "Stabilized group" before the leader's sync);
    - KIP-848/1071: a member behind the target-assignment epoch (or with partitions pending revocation) for longer
      than its rebalance timeout."""

    kind = DetectionKind.FAILING_GENERATION
    severity = Severity.CRITICAL
    member_subject = True
    thresholds = (
        "failing_generation_attempts",
        "failing_generation_window_ms",
        "failing_generation_skips",
        "rebalance_stuck_grace_ms",
        "default_rebalance_timeout_ms",
        "incident_reopen_ms",
    )
    reacts_to = (
        RebalanceAttempted,
        SyncExpired,
        RebalanceCompleted,
        MemberFencedBehind,
        MemberCaughtUp,
        MemberDeparted,
    )
    resolves = (
        "group-wide: when a stable generation/epoch is reached (members failing to send SyncGroup: when the window "
        "holds no such removal); per KIP-848/1071 member: when it catches up with the target assignment or leaves"
    )
    remedy = (
        "find the member that does not rejoin or sync in time (the evidence names the attempts): every member must "
        "rejoin within the rebalance timeout (max.poll.interval.ms; a KIP-848 member must revoke within it), and a "
        "member that keeps updating its metadata (a Kafka Streams application) restarts the rebalance each time."
    )

    def react(self, fact: object, ctx: RuleContext) -> None:
        if isinstance(fact, RebalanceAttempted):
            self._check_attempts(ctx, fact.at_ms)
        elif isinstance(fact, SyncExpired):
            self._check_sync_expiries(ctx, fact.at_ms)
        elif isinstance(fact, RebalanceCompleted):
            self._resolve_group_wide(ctx, fact.at_ms, fact.generation)
            if fact.never_completed > 0:
                self._check_skips(ctx, fact.at_ms)
        elif isinstance(fact, MemberFencedBehind):
            self._check_member_behind(ctx, fact.member, fact.at_ms, fenced=True)
        elif isinstance(fact, MemberCaughtUp):
            self._resolve_member(ctx, fact.member_id, fact.at_ms, "it caught up")
        elif isinstance(fact, MemberDeparted):
            self._resolve_member(ctx, fact.member_id, fact.at_ms, fact.why)

    # --- deadlines -------------------------------------------------------------------------------------------

    def deadlines(self, ctx: RuleContext) -> Iterable[int | None]:
        st, th = ctx.state, ctx.thresholds
        out = [self._behind_deadline(member, th) for member in st.members.values()]
        out.append(self._attempts_deadline(ctx))
        if st.sync_failing_id in st.detections and st.sync_expiries:
            out.append(st.sync_expiries[-1].at_ms + th.failing_generation_window_ms)
        return out

    def at_deadline(self, ctx: RuleContext, now_ms: int) -> None:
        for member in sorted(ctx.state.members.values(), key=lambda m: m.member_id):
            self._check_member_behind(ctx, member, now_ms)
        self._check_attempts(ctx, now_ms)
        st = ctx.state
        sync_id = st.sync_failing_id
        last_expiry = st.sync_expiries[-1].at_ms if st.sync_expiries else None
        window_ms = ctx.thresholds.failing_generation_window_ms
        if sync_id in st.detections and (last_expiry is None or now_ms - last_expiry >= window_ms):
            row = st.detections[sync_id]
            ctx.book.resolve(row.detection_id, at_ms=now_ms, summary=f"{row.summary}; every member has synced since")
            st.sync_failing_id = None

    # --- attempts and stuck rebalances -----------------------------------------------------------------------

    @staticmethod
    def rebalance_timeout(state: GroupState, thresholds: DetectorThresholds) -> int:
        timeouts = [m.rebalance_timeout_ms for m in state.members.values() if m.rebalance_timeout_ms]
        return max(timeouts) if timeouts else thresholds.default_rebalance_timeout_ms

    def _attempts_deadline(self, ctx: RuleContext) -> int | None:
        """When the attempts rule (and the stuck rule) must next be looked at for the open rebalance."""
        st, th = ctx.state, ctx.thresholds
        reb = st.rebalance
        if reb is None or not reb.started_known or self._failing_id(st) is not None:
            return None
        deadlines = [reb.started_ms + self.rebalance_timeout(st, th) + th.rebalance_stuck_grace_ms]
        attempts = sorted(a.at_ms for a in reb.attempts)
        if len(attempts) >= th.failing_generation_attempts:
            deadlines.append(attempts[0] + ATTEMPTS_MIN_AGE_MS)
        return min(deadlines)

    def _failing_id(self, state: GroupState) -> str | None:
        reb = state.rebalance
        if reb is None:
            return None
        for row in state.detections.values():
            if row.kind == self.kind.value and row.member_id is None and row.generation == reb.from_generation:
                return row.detection_id
        return None

    @staticmethod
    def _attempt_generations(state: GroupState, now_ms: int, thresholds: DetectorThresholds) -> list[Attempt]:
        reb = state.rebalance
        if reb is None:
            return []
        # Each "Preparing to rebalance ... with old generation N" line is an attempt: the coordinator logs one per
        # rebalance it starts, so the same N again means the last one never completed (seed 001: "logged repeatedly
        # with the same generation_id ... the rebalances are failing"). Clients' failed joins/syncs of a generation
        # are the same attempt seen from each member: one per generation.
        seen: dict[tuple[int | None, int], Attempt] = {}
        prepares: dict[int | None, int] = {}
        for attempt in reb.attempts:
            if now_ms - attempt.at_ms > thresholds.failing_generation_window_ms:
                continue
            if attempt.kind == AttemptKind.PREPARE:
                repeat = prepares.get(attempt.generation, 0)
                prepares[attempt.generation] = repeat + 1
                seen.setdefault((attempt.generation, repeat), attempt)
            elif attempt.kind in (AttemptKind.SYNC_FAILED, AttemptKind.JOIN_FAILED):
                seen.setdefault((attempt.generation, 0), attempt)
        return list(seen.values())

    def _check_attempts(self, ctx: RuleContext, now_ms: int) -> None:
        """Repeated attempts or a rebalance stuck past its timeout -> failing_generation for the old generation."""
        st, th = ctx.state, ctx.thresholds
        reb = st.rebalance
        if reb is None or not reb.started_known:
            return
        open_id = self._failing_id(st)
        attempts = self._attempt_generations(st, now_ms, th)
        first = min((a.at_ms for a in attempts), default=now_ms)
        stuck_after = self.rebalance_timeout(st, th) + th.rebalance_stuck_grace_ms
        if len(attempts) >= th.failing_generation_attempts and now_ms - first >= ATTEMPTS_MIN_AGE_MS:
            generations = sorted({a.generation for a in attempts if a.generation is not None})
            summary = (
                f"group {st.group_id} tried {len(attempts)} times to leave generation {reb.from_generation} "
                f"without reaching a stable successor (attempts from generations {generations})"
            )
            repeated = [g for g in generations if sum(1 for a in attempts if a.generation == g) > 1]
            reasons = list(dict.fromkeys(a.reason for a in attempts if a.kind == AttemptKind.PREPARE and a.reason))
            if repeated:
                summary += f"; the coordinator prepared a rebalance from generation {repeated[0]} again and again"
            if reasons:
                more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
                summary += f"; its reasons: {reasons[-1]}{more}"
        elif now_ms - reb.started_ms >= stuck_after:
            summary = (
                f"group {st.group_id} has been rebalancing away from generation {reb.from_generation} for "
                f"{seconds(now_ms - reb.started_ms)}, past its {seconds(stuck_after)} rebalance timeout"
            )
        else:
            return
        if open_id is not None:
            ctx.book.update(open_id, at_ms=now_ms, summary=summary, refs=reb.refs)
            return
        self.open(
            ctx,
            (reb.rebalance_id,),
            at_ms=now_ms,
            first_seen_ms=reb.started_ms,
            summary=summary,
            refs=reb.refs,
            generation=reb.from_generation,
        )

    def _resolve_group_wide(self, ctx: RuleContext, now_ms: int, generation: int | None) -> None:
        """A stable generation/epoch was reached: the group-wide detections end (not the one of members failing to
        sync: generations keep stabilising between its removals)."""
        for row in self.held(ctx):
            if row.member_id is None and row.detection_id != ctx.state.sync_failing_id:
                ctx.book.resolve(row.detection_id, at_ms=now_ms, summary=f"{row.summary}; stable at {generation}")

    # --- skipped generations ---------------------------------------------------------------------------------

    def _check_skips(self, ctx: RuleContext, now_ms: int) -> None:
        """Persisted generations skipping numbers, repeatedly (one skip-by-one per transition is the healthy trap)."""
        st, th = ctx.state, ctx.thresholds
        window = [s for s in st.skips if now_ms - s.at_ms <= th.failing_generation_window_ms and s.never_completed > 0]
        total = sum(s.never_completed for s in window)
        if len(window) < 2 or total < th.failing_generation_skips:
            return
        skipped_at = {s.at_ms for s in window}
        self.open(
            ctx,
            ("skips", window[0].at_ms),
            at_ms=now_ms,
            first_seen_ms=window[0].at_ms,
            summary=(
                f"group {st.group_id} persisted generations skipping numbers {len(window)} times within "
                f"{seconds(th.failing_generation_window_ms)}: {total} rebalances never "
                f"completed (now at generation {st.generation})"
            ),
            refs=[ref for h in st.history if h.stabilized_ms in skipped_at for ref in h.refs],
            generation=st.generation,
        )

    # --- members that never sync -----------------------------------------------------------------------------

    def _check_sync_expiries(self, ctx: RuleContext, now_ms: int) -> None:
        """Members that join and never send SyncGroup, generation after generation: each generation the leader
        completes is torn down again when the coordinator removes them on pending sync request expiration."""
        st, th = ctx.state, ctx.thresholds
        window: list[SyncExpiry] = [e for e in st.sync_expiries if now_ms - e.at_ms <= th.failing_generation_window_ms]
        generations = sorted({e.generation for e in window if e.generation is not None})
        already = st.sync_failing_id is not None and st.sync_failing_id in st.detections
        if not already and len(window) < th.failing_generation_attempts:
            return
        members = list(dict.fromkeys(m for e in window for m in e.member_ids))  # in the order they were removed
        named = ", ".join(members[:3]) + (f" and {len(members) - 3} more" if len(members) > 3 else "")
        summary = (
            f"group {st.group_id} rebalanced {len(window)} times in {seconds(now_ms - window[0].at_ms)} because "
            f"members joined and never sent SyncGroup ({named}): the coordinator removed them on pending sync request "
            f"expiration after generations {', '.join(str(g) for g in generations)}"
        )
        refs = [e.ref for e in window]
        if already and st.sync_failing_id is not None:
            ctx.book.update(st.sync_failing_id, at_ms=now_ms, summary=summary, refs=refs)
            return
        st.sync_failing_id = self.open(
            ctx,
            ("sync", window[0].at_ms),
            at_ms=now_ms,
            first_seen_ms=window[0].at_ms,
            summary=summary,
            refs=refs,
            generation=window[0].generation,
        )

    # --- KIP-848/1071 members behind their target assignment -------------------------------------------------

    @staticmethod
    def _behind_deadline(member: MemberState, thresholds: DetectorThresholds) -> int | None:
        if member.behind_since_ms is None or member.behind_checked:
            return None
        return member.behind_since_ms + (member.rebalance_timeout_ms or thresholds.default_rebalance_timeout_ms)

    def _check_member_behind(self, ctx: RuleContext, member: MemberState, now_ms: int, *, fenced: bool = False) -> None:
        """A member still behind the target assignment (or not revoking) past its rebalance timeout; `fenced`: the
        coordinator just fenced it for exactly that ("failed to transition from epoch E within T ms")."""
        deadline = self._behind_deadline(member, ctx.thresholds)
        if deadline is None or member.behind_since_ms is None:
            return
        if fenced:
            deadline = min(deadline, now_ms)
        elif deadline > now_ms:
            return
        member.behind_checked = True
        st = ctx.state
        what = (
            f"still holds {len(member.pending)} {'tasks' if st.protocol == 'streams' else 'partitions'} pending "
            "revocation"
            if member.pending
            else f"is at epoch {member.generation} ({member.member_state})"
        )
        self.open(
            ctx,
            (member.member_id, member.behind_target),
            at_ms=deadline,
            first_seen_ms=member.behind_since_ms,
            summary=(
                f"member {member.member_id} of group {st.group_id} {what} while the target assignment is at epoch "
                f"{member.behind_target}, for {seconds(deadline - member.behind_since_ms)} (its rebalance timeout)"
            ),
            refs=[member.assignment_ref] if member.assignment_ref else (st.rebalance.refs if st.rebalance else []),
            generation=member.behind_target,
            member_id=member.member_id,
            advice=(
                f"Member {member.member_id} did not reach its assignment within its rebalance timeout: its poll loop "
                "or its onPartitionsRevoked callback (a Streams task's close) is blocked."
            ),
        )

    def _resolve_member(self, ctx: RuleContext, member_id: str, now_ms: int, why: str) -> None:
        for row in self.held(ctx):
            if row.member_id == member_id:
                ctx.book.resolve(row.detection_id, at_ms=now_ms, summary=f"{row.summary}; {why}")


@registered
class RebalanceStorm(Rule):
    """More than `rebalance_storm_count` unplanned rebalances (expirations, poll timeouts, failed or unexplained
    rebalances) within the window; a rolling restart's joins and clean leaves do not count."""

    kind = DetectionKind.REBALANCE_STORM
    severity = Severity.WARNING
    thresholds = ("rebalance_storm_count", "rebalance_storm_window_ms")
    reacts_to = (RebalanceCompleted,)
    resolves = "when the storm window holds no unplanned rebalance any more"
    remedy = (
        "fix the causes listed; meanwhile, with an eager assignor every rebalance stops the whole group: the "
        "cooperative-sticky assignor, or group.protocol=consumer (KIP-848), moves only the partitions that change."
    )

    def react(self, fact: RebalanceCompleted, ctx: RuleContext) -> None:
        st, th, now_ms = ctx.state, ctx.thresholds, fact.at_ms
        window = _window(st.history, now_ms, th.rebalance_storm_window_ms)
        recent = [h for h in window if unplanned(h)]
        if len(recent) <= th.rebalance_storm_count:
            return
        already = self.held(ctx)
        for row in already:
            ctx.book.update(row.detection_id, at_ms=now_ms)
        if already:
            return
        first = recent[0]
        expired = sum(len(h.row.get("expired") or []) for h in recent)
        self.open(
            ctx,
            (first.rebalance_id,),
            at_ms=now_ms,
            first_seen_ms=first.started_ms,
            summary=(
                f"group {st.group_id} rebalanced {len(recent)} times within "
                f"{seconds(th.rebalance_storm_window_ms)} (generation {first.from_generation} -> "
                f"{st.generation}) without a planned membership change; causes: "
                f"{', '.join(sorted({h.cause for h in recent}))}"
                + (f"; {expired} members expired or removed during them" if expired else "")
            ),
            refs=[ref for h in recent for ref in h.refs],
            generation=st.generation,
            advice=assignor_advice(st),
        )

    @staticmethod
    def _last_unplanned(state: GroupState) -> int | None:
        times = [h.stabilized_ms for h in state.history if unplanned(h)]
        return times[-1] if times else None

    def deadlines(self, ctx: RuleContext) -> Iterable[int | None]:
        last = self._last_unplanned(ctx.state) if self.holds_any(ctx) else None
        return () if last is None else (last + ctx.thresholds.rebalance_storm_window_ms,)

    def at_deadline(self, ctx: RuleContext, now_ms: int) -> None:
        last = self._last_unplanned(ctx.state)
        for row in self.held(ctx):
            if last is None or now_ms - last >= ctx.thresholds.rebalance_storm_window_ms:
                ctx.book.resolve(row.detection_id, at_ms=now_ms, summary=f"{row.summary}; quiet since")


@registered
class ProbingRebalanceLoop(Rule):
    """A Kafka Streams group rebalancing every probing.rebalance.interval.ms, again and again: warmup tasks are
    not catching up."""

    kind = DetectionKind.PROBING_REBALANCE_LOOP
    severity = Severity.WARNING
    thresholds = ("probing_interval_ms", "probing_tolerance_ms", "probing_repeats")
    reacts_to = (RebalanceCompleted,)
    resolves = "when no rebalance follows within the probing interval plus its tolerance"
    remedy = (
        "warmup tasks are not catching up with their changelogs: raise max.warmup.replicas or num.standby.replicas, "
        "or acceptable.recovery.lag, and check the restore throughput of the instances receiving them."
    )

    def react(self, fact: RebalanceCompleted, ctx: RuleContext) -> None:
        st, th = ctx.state, ctx.thresholds
        if not st.streams:
            return
        run = self._probing_run(st, th)
        if len(run) < th.probing_repeats:
            return
        self.open(
            ctx,
            (run[0].rebalance_id,),
            at_ms=fact.at_ms,
            first_seen_ms=run[0].started_ms,
            summary=(
                f"Kafka Streams group {st.group_id} rebalanced {len(run)} times, each about "
                f"{seconds(th.probing_interval_ms)} after the previous (probing rebalances: warmup tasks are "
                f"not catching up)"
            ),
            refs=[ref for h in run for ref in h.refs],
            generation=st.generation,
        )

    @staticmethod
    def _probing_run(state: GroupState, thresholds: DetectorThresholds) -> list[CompletedRebalance]:
        """The trailing run of rebalances spaced by the probing interval (within tolerance)."""
        run: list[CompletedRebalance] = []
        for completed in reversed(state.history):
            if not run:
                run.append(completed)
                continue
            gap = run[-1].started_ms - completed.started_ms
            if abs(gap - thresholds.probing_interval_ms) <= thresholds.probing_tolerance_ms:
                run.append(completed)
            else:
                break
        return list(reversed(run))

    def deadlines(self, ctx: RuleContext) -> Iterable[int | None]:
        th = ctx.thresholds
        if not ctx.state.history or not self.holds_any(ctx):
            return ()
        return (ctx.state.history[-1].started_ms + th.probing_interval_ms + th.probing_tolerance_ms + 1,)

    def at_deadline(self, ctx: RuleContext, now_ms: int) -> None:
        if not ctx.state.history:
            return
        limit = ctx.thresholds.probing_interval_ms + ctx.thresholds.probing_tolerance_ms
        for row in self.held(ctx):
            if now_ms - ctx.state.history[-1].started_ms > limit:
                ctx.book.resolve(row.detection_id, at_ms=now_ms, summary=f"{row.summary}; the probing stopped")


@registered
class MembershipFlapping(Rule):
    """A crash loop: a client that keeps dying and rejoining. Seen either way it shows:
    - members of one client (its host, else its identity) that depart soon after joining, again and again, whatever
      member ids they take and whether or not the member count moves (a restart joins with a new member id, and
      the dead one is expired or dropped in the same rebalance);
    - or the member count bouncing n <-> n+1 while the same client keeps departing."""

    kind = DetectionKind.MEMBERSHIP_FLAPPING
    severity = Severity.WARNING
    thresholds = (
        "flapping_window_ms",
        "flapping_alternations",
        "flapping_same_identity",
        "crash_loop_departures",
        "crash_loop_lifetime_ms",
    )
    reacts_to = (RebalanceCompleted, MemberDeparted, MemberExpired)
    resolves = "when its window passes without a new rebalance (a crash loop: without another short-lived member)"
    remedy = (
        "the process keeps crashing and restarting: read its own logs for the crash; until it is fixed each restart "
        "costs the group a rebalance, which static membership (group.instance.id, with a session.timeout.ms longer "
        "than a restart) avoids."
    )

    def react(self, fact: RebalanceCompleted | MemberDeparted | MemberExpired, ctx: RuleContext) -> None:
        if isinstance(fact, MemberDeparted | MemberExpired):
            self._check_crash_loops(ctx, fact.at_ms)
        else:
            self._check_alternation(ctx, fact.at_ms)

    # --- crash loops: short-lived members of one client ------------------------------------------------------

    @staticmethod
    def _short_lived(state: GroupState, thresholds: DetectorThresholds, now_ms: int) -> dict[str, list[Departure]]:
        """place -> the deaths within the window of members that had joined shortly before: the coordinator removed
        them (session expiry, fencing, not rejoining in time). A member that left with a LeaveGroup was closed,
        as a scale-in or a test's clean shutdown closes it, however soon after it joined."""
        by_place: dict[str, list[Departure]] = {}
        for departure in state.departures:
            young = departure.lived_ms is not None and departure.lived_ms <= thresholds.crash_loop_lifetime_ms
            gone = state.departed.get(departure.member_id or "")
            died = gone is not None and gone.how in (DepartureKind.EXPIRED, DepartureKind.REMOVED)
            if young and died and now_ms - departure.at_ms < thresholds.flapping_window_ms:
                by_place.setdefault(departure.place(), []).append(departure)
        return by_place

    def _check_crash_loops(self, ctx: RuleContext, now_ms: int) -> None:
        st, th = ctx.state, ctx.thresholds
        for place, deaths in sorted(self._short_lived(st, th, now_ms).items()):
            if len(deaths) < th.crash_loop_departures:
                continue
            where = place.split(":", 1)[1]
            lived = max(d.lived_ms or 0 for d in deaths)
            clients = list(dict.fromkeys(client_label(d.identity) for d in deaths))
            named = ", ".join(clients[:3]) + (f" and {len(clients) - 3} more" if len(clients) > 3 else "")
            who = f"a client on host {where} ({named})" if place.startswith("host:") else f"client {named}"
            summary = (
                f"{who} keeps dying and rejoining group {st.group_id} (crash loop): {len(deaths)} of its members "
                f"were removed within {seconds(lived)} of joining in the last {seconds(th.flapping_window_ms)}; "
                f"the last was {deaths[-1].member_id}"
            )
            refs = [ref for d in deaths if d.member_id in st.departed for ref in st.departed[d.member_id].refs]
            open_id = st.crash_loops.get(place)
            if open_id is None or open_id not in st.detections:
                # the count already bounced for the same loop: that incident becomes this loop's, one row not two
                bouncing = [r.detection_id for r in self.held(ctx) if r.detection_id not in st.crash_loops.values()]
                open_id = bouncing[0] if bouncing else None
            if open_id is not None:
                st.crash_loops[place] = open_id
                ctx.book.update(open_id, at_ms=now_ms, summary=summary, refs=refs)
                continue
            st.crash_loops[place] = self.open(
                ctx,
                ("crash_loop", place, deaths[0].at_ms),
                at_ms=now_ms,
                first_seen_ms=deaths[0].at_ms,
                summary=summary,
                refs=refs,
                generation=st.generation,
                member_id=deaths[-1].member_id,
            )

    # --- the member count bouncing ---------------------------------------------------------------------------

    def _check_alternation(self, ctx: RuleContext, now_ms: int) -> None:
        st, th = ctx.state, ctx.thresholds
        recent = _window(st.history, now_ms, th.flapping_window_ms)
        run = 0
        previous_sign = 0
        for completed in recent:
            delta = completed.members_after - completed.members_before
            sign = delta if abs(delta) == 1 else 0
            run = run + 1 if sign and sign == -previous_sign else (1 if sign else 0)
            previous_sign = sign
        if run < th.flapping_alternations:
            return
        counts: dict[str, int] = {}
        for departure in st.departures:
            if now_ms - departure.at_ms < th.flapping_window_ms:
                counts[departure.identity] = counts.get(departure.identity, 0) + 1
        looping = sorted(i for i, n in counts.items() if n >= th.flapping_same_identity)
        if not looping:
            return
        first = recent[-run]
        summary = (
            f"group {st.group_id} membership bounced {run} times between "
            f"{min(first.members_before, first.members_after)} and "
            f"{max(first.members_before, first.members_after)} members; "
            f"{', '.join(i.split(':', 1)[1] for i in looping)} keeps leaving and rejoining (crash loop?)"
        )
        refs = [ref for completed in recent[-run:] for ref in completed.refs]
        loop_ids = [i for i in st.crash_loops.values() if i in st.detections]
        if loop_ids:  # the same loop, already an incident: one row, not two
            ctx.book.update(loop_ids[0], at_ms=now_ms, refs=refs)
            return
        self.open(
            ctx,
            (first.rebalance_id,),
            at_ms=now_ms,
            first_seen_ms=first.started_ms,
            summary=summary,
            refs=refs,
            generation=st.generation,
        )

    # --- resolution ------------------------------------------------------------------------------------------

    def deadlines(self, ctx: RuleContext) -> Iterable[int | None]:
        st, th = ctx.state, ctx.thresholds
        if not self.holds_any(ctx):
            return ()
        out: list[int] = []
        if st.history:
            out.append(st.history[-1].stabilized_ms + th.flapping_window_ms)
        for place, detection_id in st.crash_loops.items():
            deaths = [d.at_ms for d in st.departures if d.place() == place]
            if detection_id in st.detections and deaths:
                out.append(max(deaths) + th.flapping_window_ms)
        return out

    def at_deadline(self, ctx: RuleContext, now_ms: int) -> None:
        st, th = ctx.state, ctx.thresholds
        loops = {detection_id: place for place, detection_id in st.crash_loops.items()}
        young = self._short_lived(st, th, now_ms) if loops else {}
        history = st.history
        last = history[-1].stabilized_ms if history else None
        for row in self.held(ctx):
            place = loops.get(row.detection_id)
            if place is not None:
                if not young.get(place):
                    ctx.book.resolve(row.detection_id, at_ms=now_ms, summary=f"{row.summary}; no restart since")
                    del st.crash_loops[place]
            elif last is None or now_ms - last >= th.flapping_window_ms:
                ctx.book.resolve(row.detection_id, at_ms=now_ms, summary=f"{row.summary}; quiet since")
        st.crash_loops = {p: i for p, i in st.crash_loops.items() if i in st.detections}


@registered
class LeaderInstability(Rule):
    """The leader changed repeatedly while the previous leaders stayed in the group."""

    kind = DetectionKind.LEADER_INSTABILITY
    severity = Severity.WARNING
    thresholds = ("leader_changes", "leader_window_ms")
    reacts_to = (RebalanceCompleted, LeaderChanged)
    resolves = "when its window passes without a new leader change"
    remedy = (
        "the leaders fail to complete their assignment (a slow or failing assignor, an overloaded Kafka Streams "
        "leader): read the leaders' logs around the changes."
    )

    def react(self, fact: RebalanceCompleted | LeaderChanged, ctx: RuleContext) -> None:
        st, th, now_ms = ctx.state, ctx.thresholds, fact.at_ms
        fact_refs = list(fact.refs) if isinstance(fact, LeaderChanged) else []
        recent = [t for t in st.leader_changes if now_ms - t < th.leader_window_ms]
        if len(recent) < th.leader_changes:
            return
        self.open(
            ctx,
            ("leader", recent[0]),
            at_ms=now_ms,
            first_seen_ms=recent[0],
            summary=(
                f"group {st.group_id} changed leader {len(recent)} times within "
                f"{seconds(th.leader_window_ms)} while the previous leaders stayed members (now {st.leader})"
            ),
            refs=[*(ref for h in st.history if h.stabilized_ms in recent for ref in h.refs), *fact_refs],
            generation=st.generation,
        )

    def deadlines(self, ctx: RuleContext) -> Iterable[int | None]:
        if not ctx.state.leader_changes or not self.holds_any(ctx):
            return ()
        return (ctx.state.leader_changes[-1] + ctx.thresholds.leader_window_ms,)

    def at_deadline(self, ctx: RuleContext, now_ms: int) -> None:
        changes = ctx.state.leader_changes
        for row in self.held(ctx):
            if not changes or now_ms - changes[-1] >= ctx.thresholds.leader_window_ms:
                ctx.book.resolve(row.detection_id, at_ms=now_ms)
