"""Rules over the sequence of generations/epochs: failing_generation, rebalance_storm, probing_rebalance_loop,
membership_flapping and leader_instability.

failing_generation (resolves when the group reaches a stable generation/epoch again, or the member catches up):
- attempts: >= `failing_generation_attempts` distinct tries to leave the stable generation (broker prepares
  with their old generation, failed joins/syncs) within the window and no stable successor, the first one at
  least a minute old (a quick scale-out also prepares several times before it settles);
- stuck: a rebalance open longer than the members' rebalance timeout plus a grace;
- skips: persisted classic generations skipping numbers beyond the one a stabilised-but-never-persisted
  generation explains (N -> N+2 is healthy), adding up to `failing_generation_skips` over >= 2 transitions;
- unsynced: >= `failing_generation_attempts` removals "on pending sync request expiration" (members that joined and
  never sent SyncGroup) within the window; the leader completes each generation in between, so a stable successor
  does not end it: it resolves once the window holds no such removal. It covers the leader that never syncs too,
  which a log-only view cannot see otherwise (the coordinator logs "Stabilized group" before the leader's sync);
- KIP-848/1071: a member behind the target-assignment epoch (or with partitions pending revocation) for longer
  than its rebalance timeout.
The windowed rules resolve once their window holds no more evidence (a deadline evaluates it).
"""

from __future__ import annotations

from typing import Any

from rebalance_radar.transforms.detectors.detections import DetectionBook
from rebalance_radar.transforms.detectors.evidence import seconds
from rebalance_radar.transforms.detectors.state import CompletedRebalance, GroupState, MemberState
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.schemas import DetectionKind

FAILING = DetectionKind.FAILING_GENERATION
STORM = DetectionKind.REBALANCE_STORM
PROBING = DetectionKind.PROBING_REBALANCE_LOOP
FLAPPING = DetectionKind.MEMBERSHIP_FLAPPING
LEADER = DetectionKind.LEADER_INSTABILITY
ATTEMPTS_MIN_AGE_MS = 60_000


def rebalance_timeout(state: GroupState, thresholds: DetectorThresholds) -> int:
    timeouts = [m.rebalance_timeout_ms for m in state.members.values() if m.rebalance_timeout_ms]
    return max(timeouts) if timeouts else thresholds.default_rebalance_timeout_ms


def _attempt_generations(state: GroupState, now_ms: int, thresholds: DetectorThresholds) -> list[dict]:
    reb = state.rebalance
    if reb is None:
        return []
    recent = [a for a in reb.attempts if now_ms - a["at_ms"] <= thresholds.failing_generation_window_ms]
    seen: dict[object, dict] = {}
    for attempt in recent:
        if attempt["kind"] in ("prepare", "sync_failed", "join_failed"):
            seen.setdefault(attempt.get("generation"), attempt)
    return list(seen.values())


def attempts_deadline(state: GroupState, thresholds: DetectorThresholds) -> int | None:
    """When the attempts rule (and the stuck rule) must next be looked at for the open rebalance."""
    reb = state.rebalance
    if reb is None or not reb.started_known:
        return None
    deadlines = []
    failing_id = _failing_id(state)
    if failing_id is None:
        deadlines.append(reb.started_ms + rebalance_timeout(state, thresholds) + thresholds.rebalance_stuck_grace_ms)
        attempts = sorted(a["at_ms"] for a in reb.attempts)
        if len(attempts) >= thresholds.failing_generation_attempts:
            deadlines.append(attempts[0] + ATTEMPTS_MIN_AGE_MS)
    return min(deadlines) if deadlines else None


def _failing_id(state: GroupState) -> str | None:
    reb = state.rebalance
    if reb is None:
        return None
    for row in state.detections.values():
        if row["kind"] == FAILING.value and row.get("member_id") is None and row["generation"] == reb.from_generation:
            return row["detection_id"]
    return None


def check_failing_attempts(state: GroupState, book: DetectionBook, now_ms: int, thresholds: DetectorThresholds) -> None:
    """Repeated attempts or a rebalance stuck past its timeout -> failing_generation for the old generation."""
    reb = state.rebalance
    if reb is None or not reb.started_known:
        return
    open_id = _failing_id(state)
    attempts = _attempt_generations(state, now_ms, thresholds)
    first = min((a["at_ms"] for a in attempts), default=now_ms)
    stuck_after = rebalance_timeout(state, thresholds) + thresholds.rebalance_stuck_grace_ms
    if len(attempts) >= thresholds.failing_generation_attempts and now_ms - first >= ATTEMPTS_MIN_AGE_MS:
        generations = sorted({a["generation"] for a in attempts if a.get("generation") is not None})
        summary = (
            f"group {state.group_id} tried {len(attempts)} times to leave generation {reb.from_generation} "
            f"without reaching a stable successor (attempts from generations {generations})"
        )
    elif now_ms - reb.started_ms >= stuck_after:
        summary = (
            f"group {state.group_id} has been rebalancing away from generation {reb.from_generation} for "
            f"{seconds(now_ms - reb.started_ms)}, past its {seconds(stuck_after)} rebalance timeout"
        )
    else:
        return
    if open_id is not None:
        book.update(open_id, at_ms=now_ms, summary=summary, refs=reb.refs)
        return
    book.open(
        FAILING,
        (reb.rebalance_id,),
        at_ms=now_ms,
        first_seen_ms=reb.started_ms,
        summary=summary,
        refs=reb.refs,
        generation=reb.from_generation,
    )


def check_skips(state: GroupState, book: DetectionBook, now_ms: int, thresholds: DetectorThresholds) -> None:
    """Persisted generations skipping numbers, repeatedly (one skip-by-one per transition is the healthy trap)."""
    window = [s for s in state.skips if now_ms - s[0] <= thresholds.failing_generation_window_ms and s[1] > 0]
    if len(window) < 2 or sum(s[1] for s in window) < thresholds.failing_generation_skips:
        return
    book.open(
        FAILING,
        ("skips", window[0][0]),
        at_ms=now_ms,
        first_seen_ms=window[0][0],
        summary=(
            f"group {state.group_id} persisted generations skipping numbers {len(window)} times within "
            f"{seconds(thresholds.failing_generation_window_ms)}: {sum(s[1] for s in window)} rebalances never "
            f"completed (now at generation {state.generation})"
        ),
        refs=[],
        generation=state.generation,
    )


def _sync_window(state: GroupState, now_ms: int, thresholds: DetectorThresholds) -> list[list[Any]]:
    return [e for e in state.sync_expiries if now_ms - e[0] <= thresholds.failing_generation_window_ms]


def check_sync_expiries(state: GroupState, book: DetectionBook, now_ms: int, thresholds: DetectorThresholds) -> None:
    """Members that join and never send SyncGroup, generation after generation: each generation the leader
    completes is torn down again when the coordinator removes them on pending sync request expiration. The
    generations in between do stabilise, so this detection ends only once the window holds no such removal."""
    window = _sync_window(state, now_ms, thresholds)
    generations = sorted({e[1] for e in window if e[1] is not None})
    if state.sync_failing_id not in state.detections and len(window) < thresholds.failing_generation_attempts:
        return
    members = list(dict.fromkeys(m for e in window for m in e[2]))  # in the order they were removed
    named = ", ".join(members[:3]) + (f" and {len(members) - 3} more" if len(members) > 3 else "")
    summary = (
        f"group {state.group_id} rebalanced {len(window)} times in {seconds(now_ms - window[0][0])} because members "
        f"joined and never sent SyncGroup ({named}): the coordinator removed them on pending sync request "
        f"expiration after generations {', '.join(str(g) for g in generations)}"
    )
    if state.sync_failing_id in state.detections:
        book.update(state.sync_failing_id, at_ms=now_ms, summary=summary, refs=[e[3] for e in window])
        return
    state.sync_failing_id = book.open(
        FAILING,
        ("sync", window[0][0]),
        at_ms=now_ms,
        first_seen_ms=window[0][0],
        summary=summary,
        refs=[e[3] for e in window],
        generation=window[0][1],
    )


def resolve_failing(book: DetectionBook, now_ms: int, generation: int | None) -> None:
    """A stable generation/epoch was reached: the group-wide failing_generation detections end (not the one of
    members failing to sync: generations keep stabilising between its removals)."""
    for row in book.open_of_kind(FAILING):
        if row.get("member_id") is None and row["detection_id"] != book.state.sync_failing_id:
            book.resolve(row["detection_id"], at_ms=now_ms, summary=f"{row['summary']}; stable at {generation}")


def behind_deadline(member: MemberState, thresholds: DetectorThresholds) -> int | None:
    if member.behind_since_ms is None or member.behind_checked:
        return None
    return member.behind_since_ms + (member.rebalance_timeout_ms or thresholds.default_rebalance_timeout_ms)


def check_member_behind(
    state: GroupState,
    book: DetectionBook,
    member: MemberState,
    now_ms: int,
    thresholds: DetectorThresholds,
    *,
    fenced: bool = False,
) -> None:
    """KIP-848/1071: a member still behind the target assignment (or not revoking) past its rebalance timeout;
    `fenced`: the coordinator just fenced it for exactly that ("failed to transition from epoch E within T ms")."""
    deadline = behind_deadline(member, thresholds)
    if deadline is None or member.behind_since_ms is None:
        return
    if fenced:
        deadline = min(deadline, now_ms)
    elif deadline > now_ms:
        return
    member.behind_checked = True
    what = (
        f"still holds {len(member.pending)} {'tasks' if state.protocol == 'streams' else 'partitions'} pending "
        "revocation"
        if member.pending
        else f"is at epoch {member.generation} ({member.member_state})"
    )
    book.open(
        FAILING,
        (member.member_id, member.behind_target),
        at_ms=deadline,
        first_seen_ms=member.behind_since_ms,
        summary=(
            f"member {member.member_id} of group {state.group_id} {what} while the target assignment is at epoch "
            f"{member.behind_target}, for {seconds(deadline - member.behind_since_ms)} (its rebalance timeout)"
        ),
        refs=[],
        generation=member.behind_target,
        member_id=member.member_id,
    )


def resolve_member_behind(book: DetectionBook, member_id: str, now_ms: int, why: str) -> None:
    for row in book.open_of_kind(FAILING):
        if row.get("member_id") == member_id:
            book.resolve(row["detection_id"], at_ms=now_ms, summary=f"{row['summary']}; {why}")


def _window(history: list[CompletedRebalance], now_ms: int, window_ms: int) -> list[CompletedRebalance]:
    return [h for h in history if now_ms - h.stabilized_ms < window_ms]


PLANNED_CAUSES = frozenset({"member_joined", "member_left", "enforced"})
"""Rebalances a deployment makes on purpose (scale-out/in, rolling restarts, Streams followups): not a storm."""


def check_storm(state: GroupState, book: DetectionBook, now_ms: int, thresholds: DetectorThresholds) -> None:
    """More than `rebalance_storm_count` unplanned rebalances (expirations, poll timeouts, failed or unexplained
    rebalances) within the window; a rolling restart's joins and clean leaves do not count."""
    recent = [
        h for h in _window(state.history, now_ms, thresholds.rebalance_storm_window_ms) if h.cause not in PLANNED_CAUSES
    ]
    if len(recent) <= thresholds.rebalance_storm_count:
        return
    already = book.open_of_kind(STORM)
    for row in already:
        book.update(row["detection_id"], at_ms=now_ms)
    if already:
        return
    first = recent[0]
    book.open(
        STORM,
        (first.rebalance_id,),
        at_ms=now_ms,
        first_seen_ms=first.started_ms,
        summary=(
            f"group {state.group_id} rebalanced {len(recent)} times within "
            f"{seconds(thresholds.rebalance_storm_window_ms)} (generation {first.from_generation} -> "
            f"{state.generation}) without a planned membership change; causes: "
            f"{', '.join(sorted({h.cause for h in recent}))}"
        ),
        refs=[],
        generation=state.generation,
    )


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


def check_probing(state: GroupState, book: DetectionBook, now_ms: int, thresholds: DetectorThresholds) -> None:
    """Kafka Streams groups rebalancing every probing.rebalance.interval.ms, again and again."""
    if not state.streams:
        return
    run = _probing_run(state, thresholds)
    if len(run) < thresholds.probing_repeats:
        return
    book.open(
        PROBING,
        (run[0].rebalance_id,),
        at_ms=now_ms,
        first_seen_ms=run[0].started_ms,
        summary=(
            f"Kafka Streams group {state.group_id} rebalanced {len(run)} times, each about "
            f"{seconds(thresholds.probing_interval_ms)} after the previous (probing rebalances: warmup tasks are "
            f"not catching up)"
        ),
        refs=[],
        generation=state.generation,
    )


def probing_deadline(state: GroupState, thresholds: DetectorThresholds) -> int | None:
    if not any(row["kind"] == PROBING.value for row in state.detections.values()) or not state.history:
        return None
    return state.history[-1].started_ms + thresholds.probing_interval_ms + thresholds.probing_tolerance_ms + 1


def check_flapping(state: GroupState, book: DetectionBook, now_ms: int, thresholds: DetectorThresholds) -> None:
    """Member count bouncing n <-> n+1 while the same client keeps departing: a crash loop."""
    recent = _window(state.history, now_ms, thresholds.flapping_window_ms)
    run = 0
    previous_sign = 0
    for completed in recent:
        delta = completed.members_after - completed.members_before
        sign = delta if abs(delta) == 1 else 0
        run = run + 1 if sign and sign == -previous_sign else (1 if sign else 0)
        previous_sign = sign
    if run < thresholds.flapping_alternations:
        return
    counts: dict[str, int] = {}
    for at_ms, identity in state.departures:
        if now_ms - at_ms < thresholds.flapping_window_ms:
            counts[identity] = counts.get(identity, 0) + 1
    looping = sorted(i for i, n in counts.items() if n >= thresholds.flapping_same_identity)
    if not looping:
        return
    first = recent[-run]
    book.open(
        FLAPPING,
        (first.rebalance_id,),
        at_ms=now_ms,
        first_seen_ms=first.started_ms,
        summary=(
            f"group {state.group_id} membership bounced {run} times between "
            f"{min(first.members_before, first.members_after)} and "
            f"{max(first.members_before, first.members_after)} members; "
            f"{', '.join(i.split(':', 1)[1] for i in looping)} keeps leaving and rejoining (crash loop?)"
        ),
        refs=[],
        generation=state.generation,
    )


def check_leader(state: GroupState, book: DetectionBook, now_ms: int, thresholds: DetectorThresholds) -> None:
    """The leader changed repeatedly while the previous leaders stayed in the group."""
    recent = [t for t in state.leader_changes if now_ms - t < thresholds.leader_window_ms]
    if len(recent) < thresholds.leader_changes:
        return
    book.open(
        LEADER,
        ("leader", recent[0]),
        at_ms=now_ms,
        first_seen_ms=recent[0],
        summary=(
            f"group {state.group_id} changed leader {len(recent)} times within "
            f"{seconds(thresholds.leader_window_ms)} while the previous leaders stayed members (now {state.leader})"
        ),
        refs=[],
        generation=state.generation,
    )


def window_deadline(state: GroupState, thresholds: DetectorThresholds) -> int | None:
    """When an open windowed detection (storm, flapping, leader) may have run out of evidence."""
    out: list[int] = []
    kinds = {row["kind"] for row in state.detections.values()}
    if STORM.value in kinds:
        unplanned = [h.stabilized_ms for h in state.history if h.cause not in PLANNED_CAUSES]
        if unplanned:
            out.append(unplanned[-1] + thresholds.rebalance_storm_window_ms)
    if FLAPPING.value in kinds and state.history:
        out.append(state.history[-1].stabilized_ms + thresholds.flapping_window_ms)
    if LEADER.value in kinds and state.leader_changes:
        out.append(state.leader_changes[-1] + thresholds.leader_window_ms)
    if state.sync_failing_id in state.detections and state.sync_expiries:
        out.append(state.sync_expiries[-1][0] + thresholds.failing_generation_window_ms)
    return min(out) if out else None


def resolve_windows(state: GroupState, book: DetectionBook, now_ms: int, thresholds: DetectorThresholds) -> None:
    """Storm, flapping, leader and probing detections resolve once their window holds no new evidence."""
    last_rebalance = state.history[-1].stabilized_ms if state.history else None
    unplanned = [h.stabilized_ms for h in state.history if h.cause not in PLANNED_CAUSES]
    last_unplanned = unplanned[-1] if unplanned else None
    sync_id = state.sync_failing_id
    last_expiry = state.sync_expiries[-1][0] if state.sync_expiries else None
    if sync_id in state.detections and (
        last_expiry is None or now_ms - last_expiry >= thresholds.failing_generation_window_ms
    ):
        row = state.detections[sync_id]
        book.resolve(sync_id, at_ms=now_ms, summary=f"{row['summary']}; every member has synced since")
        state.sync_failing_id = None
    for row in list(state.detections.values()):
        kind = row["kind"]
        if kind == STORM.value:
            if last_unplanned is None or now_ms - last_unplanned >= thresholds.rebalance_storm_window_ms:
                book.resolve(row["detection_id"], at_ms=now_ms, summary=f"{row['summary']}; quiet since")
        elif kind == FLAPPING.value:
            if last_rebalance is None or now_ms - last_rebalance >= thresholds.flapping_window_ms:
                book.resolve(row["detection_id"], at_ms=now_ms, summary=f"{row['summary']}; quiet since")
        elif kind == LEADER.value:
            if not state.leader_changes or now_ms - state.leader_changes[-1] >= thresholds.leader_window_ms:
                book.resolve(row["detection_id"], at_ms=now_ms)
        elif kind == PROBING.value and state.history:
            limit = thresholds.probing_interval_ms + thresholds.probing_tolerance_ms
            if now_ms - state.history[-1].started_ms > limit:
                book.resolve(row["detection_id"], at_ms=now_ms, summary=f"{row['summary']}; the probing stopped")
