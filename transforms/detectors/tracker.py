"""The per-group tracker: follows one group through its generations (classic) or epochs (KIP-848/1071/932),
turns its events into rebalances, detections and a health row.

Time is event time only. `advance_to(watermark)` converts the rows the watermark has reached (`accept_packed`),
processes the buffered events up to the watermark in `event_order` and evaluates each time-based rule at its own
deadline, before any later event, so the output depends on the events and the final watermark, never on how the
watermark got there: a replay reproduces the live stream's rows (same ids, same detected_at). The live watermark
keeps moving while a group is silent because clock ticks are data (`radar.clock/1`).

A live run may also look ahead (`preview`): the rules on a copy of the state, over the buffered events the
watermark has not reached, show the detections those events open at once as `provisional`. The committed state is
untouched; when the watermark passes what the preview saw, the ordered events have confirmed each such id (its
row is output as usual) or it is withdrawn (`advance_to` outputs the withdrawal). Only output is added, so the
confirmed rows are still exactly a replay's.

Membership sources, by trust: the coordinator's records (classic GroupMetadata snapshots, KIP-848 member and
epoch records) are authoritative when present; broker log lines and client telemetry add the why (reasons,
expirations, poll timeouts, heartbeats) and, for a group seen through telemetry alone, the membership too.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from rebalance_radar.transforms.detectors.causes import decide_cause
from rebalance_radar.transforms.detectors.detections import DetectionBook, detection_row
from rebalance_radar.transforms.detectors.evidence import as_datetime, evidence_json, merge_refs, source_ref, stable_id
from rebalance_radar.transforms.detectors.facts import (
    ClientCommitted,
    Fact,
    GroupStable,
    Heartbeat,
    LeaderChanged,
    MemberCaughtUp,
    MemberDeparted,
    MemberExpired,
    MemberFencedBehind,
    OffsetCommitted,
    RebalanceAttempted,
    RebalanceCompleted,
    SyncExpired,
)
from rebalance_radar.transforms.detectors.group_events import (
    GroupEvent,
    MemberInfo,
    event_order,
    group_event_from_packed,
)
from rebalance_radar.transforms.detectors.membership import attribute
from rebalance_radar.transforms.detectors.rules import RULES, RuleContext, rules_told
from rebalance_radar.transforms.detectors.snapshot import Snapshot, decoded, encoded
from rebalance_radar.transforms.detectors.state import (
    Attempt,
    AttemptKind,
    CommittedOffset,
    CompletedRebalance,
    DepartedMember,
    DepartureKind,
    GenerationSkip,
    GroupState,
    MembershipChange,
    MemberState,
    OpenRebalance,
    OwnerChange,
    ShownProvisional,
    Signal,
    SignalKind,
    SyncExpiry,
)
from rebalance_radar.transforms.detectors.state import Departure as DepartureSeen
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.schemas import (
    GROUP_HEALTH,
    GROUP_METADATA,
    GROUP_RECORDS,
    HEARTBEAT_EVENTS,
    OFFSET_COMMITS,
    REBALANCES,
    DetectionStatus,
    HeartbeatEventKind,
    TelemetrySource,
)

K = HeartbeatEventKind
HOUR_MS = 3_600_000
OFFSETS_KEPT_MS = 7 * 24 * HOUR_MS
"""Committed offsets are remembered as long as Kafka keeps them by default (offsets.retention.minutes, 7 days)."""
PRUNE_EVERY_MS = 10_000
"""State is pruned at most this often (by event time: the same events prune at the same points on replay)."""
MEMBERSHIP_BATCH_MS = 2_000
"""KIP-848 member records written this close before an epoch bump belong to it."""
SIGNAL_LEAD_MS = 120_000
"""Poll timeouts, enforced-rebalance requests and fencing reports up to this long before a rebalance explain it."""
POLL_TIMEOUT_LATE_MS = 60_000
"""A poll timeout reported this long after its member left still explains the rebalance that removed it:
librdkafka's LeaveGroup after a max.poll.interval.ms overrun carries no reason, and the agent can only report the
overrun when the application polls again, after the rebalance may already have stabilised."""
FENCED_ERRORS = frozenset({"UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "ILLEGAL_GENERATION", "FENCED_MEMBER_EPOCH"})
EXPIRY_LIKE = frozenset({DepartureKind.EXPIRED, DepartureKind.REMOVED})
LIVENESS_ERRORS = frozenset({"REBALANCE_IN_PROGRESS"})
"""A heartbeat answered with these still reset the member's session on the coordinator: it is alive."""
HOW_WORDS: dict[DepartureKind, str] = {
    DepartureKind.LEFT: "it left the group",
    DepartureKind.EXPIRED: "it was removed on session expiry",
    DepartureKind.REMOVED: "it was removed from the group",
    DepartureKind.REPLACED: "it was replaced under its group.instance.id",
    DepartureKind.VANISHED: "it is no longer in the group",
}


MAX_ATTEMPTS = 64


RULES_TOLD = rules_told()
"""fact class -> the rules that react to it."""


def _note_change(reb: OpenRebalance, kind: MembershipChange) -> None:
    """The first membership change of a rebalance is what started it (later ones happened during it)."""
    if reb.first_change is None:
        reb.first_change = kind


def _add_attempt(reb: OpenRebalance, attempt: Attempt) -> None:
    """Record one attempt; client reports repeating the same reason (librdkafka stats every interval) count once,
    and a long stuck rebalance keeps its first attempts (the cause) and its latest ones."""
    if attempt.kind == AttemptKind.CLIENT and any(
        a.kind == AttemptKind.CLIENT and a.reason == attempt.reason for a in reb.attempts
    ):
        return
    reb.attempts.append(attempt)
    if len(reb.attempts) > MAX_ATTEMPTS:
        reb.attempts = reb.attempts[:8] + reb.attempts[-(MAX_ATTEMPTS - 8) :]


def _event_time(event: GroupEvent) -> int:
    return event.event_time_ms


@dataclass(frozen=True, slots=True)
class TrackerOutput:
    """What one `advance_to` produced: changed rebalance and detection rows, and the health row if it changed."""

    rebalances: tuple[dict[str, Any], ...]
    detections: tuple[dict[str, Any], ...]
    health: dict[str, Any] | None


class GroupTracker:
    """State and rules of one (cluster, group_id); see the module docstring for the time model."""

    def __init__(self, cluster: str, group_id: str, thresholds: DetectorThresholds) -> None:
        self.thresholds = thresholds
        self.state = GroupState(cluster=cluster, group_id=group_id)
        self.book = DetectionBook(self.state)
        self._context = RuleContext(self.state, self.book, thresholds)
        self._buffer: list[GroupEvent] = []
        # Rows not yet converted to events: (event time ms, packed text), see `accept_packed`.
        self._arrivals: list[tuple[int, str]] = []
        self._rebalance_rows: dict[str, dict[str, Any]] = {}
        self._touched = False
        self._sorted = True

    # --- contract --------------------------------------------------------------------------------------------

    @classmethod
    def restore(cls, snapshot: bytes, thresholds: DetectorThresholds) -> GroupTracker:
        restored = decoded(snapshot)
        state = restored.state
        tracker = cls(state.cluster, state.group_id, thresholds)
        tracker.state = state
        tracker.book = DetectionBook(state)
        tracker._context = RuleContext(state, tracker.book, thresholds)
        tracker._buffer = restored.buffer
        tracker._arrivals = restored.arrivals
        tracker._sorted = False
        return tracker

    def snapshot(self) -> bytes:
        """The state, the events not yet processed (bounded by pruning on event time) and the packed rows not
        yet converted (`accept_packed`), as they came (`snapshot.py`, versioned)."""
        return encoded(Snapshot(self.state, self._buffer, self._arrivals))

    def accept(self, events: Iterable[GroupEvent]) -> None:
        before = len(self._buffer)
        self._buffer.extend(events)
        self._sorted = self._sorted and len(self._buffer) == before

    def accept_packed(self, rows: Iterable[tuple[int, str]]) -> None:
        """This group's rows as the detection query packs them: (event time ms, `group_event_from_packed`'s text).
        Each is converted to its event only when the watermark reaches it (or a preview needs it): until then the
        snapshot keeps the text. In a replay's first micro-batch the watermark is 0 and every event waits, and
        writing and reading back events was 37 % of a large replay's detection CPU."""
        self._arrivals.extend(rows)

    def _convert_arrivals(self, until_ms: int | None) -> None:
        """The arrivals at or before `until_ms` (None: all) into the event buffer; rows that say nothing drop."""
        if not self._arrivals:
            return
        cluster, group_id = self.state.cluster, self.state.group_id
        events, waiting = [], []
        for time_ms, text in self._arrivals:
            if until_ms is not None and time_ms > until_ms:
                waiting.append((time_ms, text))
                continue
            event = group_event_from_packed(cluster, group_id, text)
            if event is not None:
                events.append(event)
        self._arrivals = waiting
        self.accept(events)

    def next_wakeup(self) -> int | None:
        times = [e.event_time_ms for e in self._buffer]
        if self._arrivals:
            times.append(min(time_ms for time_ms, _ in self._arrivals))
        deadline = self._next_deadline()
        if deadline is not None:
            times.append(deadline)
        return min(times) if times else None

    def is_expired(self, watermark_ms: int) -> bool:
        last = self.state.last_event_ms
        return (
            not self._buffer
            and not self._arrivals
            and not self.state.detections
            and not self.state.provisional
            and last is not None
            and watermark_ms - last > self.thresholds.group_idle_ttl_ms
        )

    def advance_to(self, watermark_ms: int) -> TrackerOutput:
        self._convert_arrivals(watermark_ms)
        self._run_to(watermark_ms)
        rebalances = tuple(self._rebalance_rows[k] for k in sorted(self._rebalance_rows))
        self._rebalance_rows = {}
        detections = self.book.rows()
        if self.state.provisional:
            detections += self._settle_provisional(watermark_ms, {row["detection_id"] for row in detections})
        health = self._health_row() if self._touched else None
        self._touched = False
        return TrackerOutput(rebalances=rebalances, detections=detections, health=health)

    def _run_to(self, watermark_ms: int) -> None:
        """Process the buffered events up to the watermark and every deadline due on the way, in time order."""
        if not self._sorted:
            self._buffer.sort(key=event_order)
            self._sorted = True
        split = bisect_right(self._buffer, watermark_ms, key=_event_time)
        ready, self._buffer = self._buffer[:split], self._buffer[split:]
        index = 0
        while True:
            next_time = ready[index].event_time_ms if index < len(ready) else None
            deadline = self._next_deadline()
            if deadline is not None and deadline <= watermark_ms and (next_time is None or deadline < next_time):
                self._evaluate_deadlines(deadline)
                continue
            if next_time is None:
                break
            self._process(ready[index])
            index += 1

    def preview(self) -> tuple[dict[str, Any], ...]:
        """The detections the buffered events (ahead of the watermark) open, as `provisional` rows: the rules run
        on a copy of the state up to the newest buffered event, as if no earlier-timed event were still to come.
        Each id is shown once; `advance_to` confirms or withdraws it when the watermark passes that horizon."""
        if not self._buffer and not self._arrivals:
            return ()
        ahead = GroupTracker.restore(self.snapshot(), self.thresholds)
        ahead._convert_arrivals(None)
        if not ahead._buffer:
            return ()
        horizon = max(e.event_time_ms for e in ahead._buffer)
        ahead._run_to(horizon)
        shown = []
        for detection_id, changed in sorted(ahead.book.changed.items()):
            if detection_id in self.state.detections or detection_id in self.state.provisional:
                continue
            row = replace(changed, status=DetectionStatus.PROVISIONAL.value, resolved_at=None)
            self.state.provisional[detection_id] = ShownProvisional(horizon_ms=horizon, row=row)
            shown.append(detection_row(self.state, row))
        return tuple(shown)

    def _settle_provisional(self, watermark_ms: int, output_ids: set[str]) -> tuple[dict[str, Any], ...]:
        """Provisional ids the ordered events opened (in this output or still open) are confirmed; those whose
        horizon the watermark has passed without being opened are withdrawn (the row shown, marked so)."""
        withdrawn = []
        for detection_id in sorted(self.state.provisional):
            if detection_id in output_ids or detection_id in self.state.detections:
                del self.state.provisional[detection_id]
            elif self.state.provisional[detection_id].horizon_ms <= watermark_ms:
                shown = self.state.provisional.pop(detection_id).row
                row = replace(
                    shown,
                    status=DetectionStatus.WITHDRAWN.value,
                    summary=f"withdrawn (events that arrived late did not bear it out): {shown.summary}",
                )
                withdrawn.append(detection_row(self.state, row))
        return tuple(withdrawn)

    # --- output ----------------------------------------------------------------------------------------------

    def _health_row(self) -> dict[str, Any]:
        st = self.state
        last = st.last_event_ms or 0
        recent = [h for h in st.history if last - HOUR_MS < h.stabilized_ms <= last]
        state_name = st.state
        if st.rebalance is not None:
            state_name = "PreparingRebalance" if st.protocol == "classic" else "Reconciling"
        row = {
            "cluster": st.cluster,
            "group_id": st.group_id,
            "group_protocol": st.protocol,
            "state": state_name,
            "generation": st.generation,
            "members": len(st.members),
            "last_rebalance_at": as_datetime(st.history[-1].stabilized_ms) if st.history else None,
            "rebalances_1h": len(recent),
            "open_detections": len(st.detections),
            "last_event_at": as_datetime(st.last_event_ms),
        }
        return {name: row.get(name) for name in GROUP_HEALTH.column_names}

    def _emit_rebalance(self, row: dict[str, Any]) -> None:
        """Queue a REBALANCES row; rows are kept with epoch-ms times (JSON state), output with datetimes."""
        out = dict(row)
        for name in ("started_at", "stabilized_at"):
            out[name] = as_datetime(out[name])
        self._rebalance_rows[row["rebalance_id"]] = out

    # --- deadlines -------------------------------------------------------------------------------------------

    def _next_deadline(self) -> int | None:
        done = self.state.deadlines_done_ms
        soonest = None
        for rule in RULES:
            for deadline in rule.deadlines(self._context):
                if deadline is None or (done is not None and deadline <= done):
                    continue
                if soonest is None or deadline < soonest:
                    soonest = deadline
        return soonest

    def _evaluate_deadlines(self, now_ms: int) -> None:
        self._touched = True
        self.state.deadlines_done_ms = now_ms
        for rule in RULES:
            rule.at_deadline(self._context, now_ms)

    def _tell(self, fact: Fact) -> None:
        """Every rule that reacts to this fact, in registration order."""
        for rule in RULES_TOLD.get(type(fact), ()):
            rule.react(fact, self._context)

    # --- events ----------------------------------------------------------------------------------------------

    def _process(self, event: GroupEvent) -> None:
        st = self.state
        self._touched = True
        now = event.event_time_ms
        st.last_event_ms = max(st.last_event_ms or now, now)
        if event.src_table == GROUP_METADATA.name:
            self._on_group_metadata(event)
        elif event.src_table == GROUP_RECORDS.name:
            self._on_group_record(event)
        elif event.src_table == HEARTBEAT_EVENTS.name:
            self._on_telemetry(event)
        elif event.src_table == OFFSET_COMMITS.name:
            self._on_offset_commit(event)
        if st.pruned_ms is None or now - st.pruned_ms >= PRUNE_EVERY_MS:
            st.pruned_ms = now
            self._prune(now)

    def _on_offset_commit(self, event: GroupEvent) -> None:
        """`__consumer_offsets`: the partition's high-water mark moves (a backwards commit keeps it, so a later
        catch-up is seen), then the rules judge the commit against the mark it had."""
        st = self.state
        key = f"{event.topic}-{event.partition}"
        if event.is_tombstone or event.committed_offset is None:
            st.offsets.pop(key, None)
            return
        now = event.event_time_ms
        previous = st.offsets.get(key)
        if previous is not None and previous.offset > event.committed_offset:
            st.offsets[key] = CommittedOffset(offset=previous.offset, at_ms=now)
        else:
            st.offsets[key] = CommittedOffset(offset=event.committed_offset, at_ms=now)
        self._tell(OffsetCommitted(event, key, previous))

    def _prune(self, now_ms: int) -> None:
        st, th = self.state, self.thresholds
        keep = max(th.failing_generation_window_ms, th.rebalance_storm_window_ms, th.flapping_window_ms)
        keep = max(keep, th.leader_window_ms, SIGNAL_LEAD_MS)
        st.departed = {k: d for k, d in st.departed.items() if now_ms - d.at_ms <= th.departed_member_ttl_ms}
        horizon = max(th.history_ms, th.probing_interval_ms * (th.probing_repeats + 1))
        st.history = [h for h in st.history if now_ms - h.stabilized_ms <= horizon][-64:]
        st.skips = [s for s in st.skips if now_ms - s.at_ms <= keep]
        st.leader_changes = [t for t in st.leader_changes if now_ms - t <= keep]
        st.sync_expiries = [e for e in st.sync_expiries if now_ms - e.at_ms <= keep]
        st.departures = [d for d in st.departures if now_ms - d.at_ms <= keep][-256:]
        st.signals = [s for s in st.signals if now_ms - s.at_ms <= keep][-256:]
        st.offsets = {k: v for k, v in st.offsets.items() if now_ms - v.at_ms <= OFFSETS_KEPT_MS}
        window = th.zombie_after_owner_change_ms
        st.owner_changed = {k: v for k, v in st.owner_changed.items() if now_ms - v.at_ms <= window}
        if st.empty_by_removal_ms is not None and now_ms - st.empty_by_removal_ms > th.zombie_empty_group_ms:
            st.empty_by_removal_ms = None
            st.removed_partitions = {}

    # --- membership helpers ----------------------------------------------------------------------------------

    def _rebalance_id(self, from_generation: int | None, started_ms: int) -> str:
        st = self.state
        key = from_generation if from_generation is not None else f"t{started_ms}"
        return stable_id(st.cluster, st.group_id, st.protocol, key)

    def _start_rebalance(self, now_ms: int, event: GroupEvent | None, *, known: bool = True) -> OpenRebalance:
        st = self.state
        reb = OpenRebalance(
            rebalance_id=self._rebalance_id(st.generation, now_ms),
            from_generation=st.generation,
            started_ms=now_ms,
            members_before=len(st.generation_members) if st.generation_members else len(st.members),
            started_known=known,
            refs=[source_ref(event)] if event is not None else [],
        )
        st.rebalance = reb
        if known:
            self._emit_rebalance(self._rebalance_row(reb, None))
        return reb

    def _depart(self, member_id: str, now_ms: int, how: DepartureKind, event: GroupEvent | None) -> DepartedMember:
        st = self.state
        member = st.members.pop(member_id, None)
        known = st.departed.get(member_id)
        refs = [source_ref(event)] if event is not None else []
        if known is not None:
            upgrade = how in EXPIRY_LIKE and known.how in (DepartureKind.VANISHED, DepartureKind.LEFT)
            if upgrade or (how == DepartureKind.LEFT and known.how == DepartureKind.VANISHED):
                known.how = how
            known.refs = merge_refs(known.refs, refs)
            return known
        gone = DepartedMember(
            member_id=member_id,
            how=how,
            at_ms=now_ms,
            generation=(member.generation if member and st.protocol == "classic" else None) or st.generation,
            instance_id=member.instance_id if member else None,
            client_id=member.client_id if member else (event.client_id if event else None),
            host=member.host if member else (event.host if event else None),
            partitions=list(member.partitions) if member else [],
            session_timeout_ms=(member.session_timeout_ms if member else None)
            or self.thresholds.default_session_timeout_ms,
            last_heartbeat_ms=member.last_heartbeat_ms if member else None,
            refs=refs,
        )
        st.departed[member_id] = gone
        if how != DepartureKind.REPLACED:
            identity = member.identity() if member else f"member:{member_id}"
            st.departures.append(DepartureSeen(at_ms=now_ms, identity=identity))
        self._tell(MemberDeparted(member_id, now_ms, HOW_WORDS[how]))
        if st.rebalance is not None and st.protocol != "classic":
            target = st.rebalance.expired if how == DepartureKind.EXPIRED else st.rebalance.left
            if how != DepartureKind.REPLACED and member_id not in target:
                target.append(member_id)
                change = MembershipChange.EXPIRED if target is st.rebalance.expired else MembershipChange.LEFT
                _note_change(st.rebalance, change)
        elif st.protocol != "classic":
            st.signals.append(Signal(at_ms=now_ms, kind=SignalKind.DEPARTED, subject=member_id))
        return gone

    def _replace(self, old_id: str, new_id: str | None, now_ms: int, event: GroupEvent | None) -> None:
        """A static member came back under the same group.instance.id: not a departure, not a join."""
        st = self.state
        old = st.members.get(old_id)
        gone = self._depart(old_id, now_ms, DepartureKind.REPLACED, event)
        gone.how = DepartureKind.REPLACED
        gone.replaced_by = new_id
        if st.rebalance is not None:
            for listed in (st.rebalance.left, st.rebalance.expired):
                if old_id in listed:
                    listed.remove(old_id)
        if new_id is None:
            return
        if new_id not in st.members:
            st.members[new_id] = MemberState(
                member_id=new_id,
                instance_id=gone.instance_id,
                client_id=gone.client_id,
                host=gone.host,
                session_timeout_ms=old.session_timeout_ms if old else None,
                rebalance_timeout_ms=old.rebalance_timeout_ms if old else None,
                generation=old.generation if old else st.generation,
                partitions=list(gone.partitions),
                joined_ms=now_ms,
            )
        st.generation_members = [new_id if m == old_id else m for m in st.generation_members]
        if st.leader == old_id:
            st.leader = new_id
        if st.rebalance is not None and new_id in st.rebalance.joined:
            st.rebalance.joined.remove(new_id)

    def _member_from_info(self, info: MemberInfo, generation: int | None, now_ms: int) -> MemberState:
        st = self.state
        member = st.members.get(info.member_id) or MemberState(member_id=info.member_id, joined_ms=now_ms)
        member.instance_id = info.instance_id or member.instance_id
        member.client_id = info.client_id or member.client_id
        member.host = info.host or member.host
        member.session_timeout_ms = info.session_timeout_ms or member.session_timeout_ms
        member.rebalance_timeout_ms = info.rebalance_timeout_ms or member.rebalance_timeout_ms
        member.generation = generation
        if info.partitions or not member.partitions:
            member.partitions = list(info.partitions)
        return member

    # --- rebalance completion --------------------------------------------------------------------------------

    def _rebalance_row(
        self,
        reb: OpenRebalance,
        completed: CompletedRebalance | None,
        *,
        joined: list[str] | None = None,
        left: list[str] | None = None,
        expired: list[str] | None = None,
        detail: str | None = None,
    ) -> dict[str, Any]:
        st = self.state
        decision = None
        if completed is None:
            decision = decide_cause(
                reb,
                joined=reb.joined,
                left=reb.left,
                expired=reb.expired,
                subscription_changed=False,
                skipped_generations=0,
            )
        row = {
            "cluster": st.cluster,
            "group_id": st.group_id,
            "rebalance_id": reb.rebalance_id,
            "group_protocol": st.protocol,
            "from_generation": reb.from_generation,
            "generation": completed.generation if completed else None,
            "started_at": reb.started_ms,
            "stabilized_at": completed.stabilized_ms if completed else None,
            "duration_ms": (completed.stabilized_ms - reb.started_ms) if completed and reb.started_known else None,
            "members_before": reb.members_before,
            "members_after": completed.members_after if completed else None,
            "joined": sorted(joined if joined is not None else reb.joined),
            "left": sorted(left if left is not None else reb.left),
            "expired": sorted(expired if expired is not None else reb.expired),
            "leader": completed.leader if completed else st.leader,
            "cause": completed.cause if completed else decision.cause.value if decision else None,
            "cause_detail": detail if completed else decision.detail if decision else None,
            "evidence": evidence_json(reb.refs),
        }
        return {name: row.get(name) for name in REBALANCES.column_names}

    def _complete(
        self,
        event: GroupEvent,
        new_generation: int,
        after: dict[str, MemberInfo] | None,
        leader: str | None,
    ) -> None:
        st = self.state
        now = event.event_time_ms
        reb = st.rebalance or self._start_rebalance(now, None, known=False)
        if not reb.started_known:
            reb.started_ms = now
        reb.refs = merge_refs(reb.refs, [source_ref(event)])
        classic = st.protocol == "classic"
        before = list(st.generation_members) if classic else []
        previous_owner = {p: m.member_id for m in st.members.values() for p in m.partitions}
        if classic:
            after_ids = list(after) if after is not None else sorted(st.members)
            joined = [m for m in after_ids if m not in before]
            gone = [m for m in before if m not in after_ids]
            by_instance = {}
            for m in gone:
                known = st.members.get(m) or st.departed.get(m)
                if known is not None and known.instance_id:
                    by_instance[known.instance_id] = m
            for new_id in list(joined):
                info = after.get(new_id) if after is not None else None
                instance = (
                    info.instance_id if info else (st.members[new_id].instance_id if new_id in st.members else None)
                )
                old_id = by_instance.get(instance) if instance else None
                if old_id is not None and old_id in gone:
                    self._replace(old_id, new_id, now, event)
                    joined.remove(new_id)
                    gone.remove(old_id)
            left, expired = [], []
            for m in gone:
                gone_member = st.departed.get(m)
                if gone_member is None or gone_member.how == DepartureKind.VANISHED:
                    gone_member = self._classify_vanished(m, reb, now, event)
                if gone_member.how == DepartureKind.REPLACED:
                    continue
                gone_member.rebalance_id = reb.rebalance_id
                (expired if gone_member.how == DepartureKind.EXPIRED else left).append(m)
            if after is not None:
                members: dict[str, MemberState] = {}
                for member_id, info in after.items():
                    members[member_id] = self._member_from_info(info, new_generation, now)
                st.members = members
            else:
                for member in st.members.values():
                    member.generation = new_generation
        else:
            after_ids = sorted(st.members)
            joined = [m for m in reb.joined if m in st.members]
            left = [m for m in reb.left if m not in st.members]
            expired = [m for m in reb.expired if m not in st.members]
            for m in left + expired:
                if m in st.departed:
                    st.departed[m].rebalance_id = reb.rebalance_id
        # owner changes: a later backwards commit right after them is the old owner's
        for member in st.members.values():
            for p in member.partitions:
                old_owner = previous_owner.get(p)
                if old_owner is not None and old_owner != member.member_id:
                    st.owner_changed[p] = OwnerChange(at_ms=now, previous_owner=old_owner)
        for m in left + expired:
            gone_member = st.departed.get(m)
            for p in gone_member.partitions if gone_member else []:
                if p not in st.owner_changed:
                    st.owner_changed[p] = OwnerChange(at_ms=now, previous_owner=m)
        stable_from = reb.from_generation if reb.from_generation is not None else st.generation
        skipped = new_generation - stable_from if stable_from is not None else 1
        never_completed = skipped - 2 if classic and skipped > 2 else 0
        if never_completed:
            st.skips.append(GenerationSkip(at_ms=now, never_completed=never_completed))
        subscription_changed = False
        if classic and after is not None:
            subscribed = {tuple(i.subscribed) for i in after.values() if i.subscribed}
            subscription_changed = len(subscribed) > 1
        reb.poll_timeouts = sorted(
            set(reb.poll_timeouts) | set(st.signals_of(SignalKind.POLL_TIMEOUT, reb.started_ms - SIGNAL_LEAD_MS, now))
        )
        reb.enforced = reb.enforced + [
            s for s in st.signals_of(SignalKind.ENFORCED, reb.started_ms - SIGNAL_LEAD_MS, now) if s not in reb.enforced
        ]
        decision = decide_cause(
            reb,
            joined=joined,
            left=left,
            expired=expired,
            subscription_changed=subscription_changed,
            skipped_generations=skipped if classic else 1,
        )
        if leader and st.leader and leader != st.leader and st.leader in after_ids and classic:
            st.leader_changes.append(now)
        st.leader = leader or (st.leader if st.leader in after_ids else None)
        members_after = len(after_ids)
        completed = CompletedRebalance(
            rebalance_id=reb.rebalance_id,
            started_ms=reb.started_ms,
            stabilized_ms=now,
            from_generation=reb.from_generation,
            generation=new_generation,
            members_before=reb.members_before,
            members_after=members_after,
            leader=st.leader,
            cause=decision.cause.value,
            streams=st.streams,
            row={},
        )
        completed.row = self._rebalance_row(
            reb, completed, joined=joined, left=left, expired=expired, detail=decision.detail
        )
        self._emit_rebalance(completed.row)
        st.history.append(completed)
        st.rebalance = None
        st.generation = new_generation
        st.group_epoch = max(st.group_epoch or new_generation, new_generation)
        st.generation_members = list(after_ids)
        if after_ids:
            st.state = "Stable"
            st.empty_by_removal_ms = None
            st.removed_partitions = {}
        else:
            st.state = "Empty"
            gone_ids = [m for m in left + expired if m in st.departed]
            removed = [m for m in gone_ids if st.departed[m].how in EXPIRY_LIKE]
            if removed and len(removed) == len(gone_ids):
                st.empty_by_removal_ms = now
                st.removed_partitions = {p: m for m in removed for p in st.departed[m].partitions}
        self._tell(RebalanceCompleted(at_ms=now, generation=new_generation, never_completed=never_completed))

    def _classify_vanished(self, member_id: str, reb: OpenRebalance, now_ms: int, event: GroupEvent) -> DepartedMember:
        """A member of the last generation missing from the new one with no leave seen: expired or just gone?"""
        gone = self._depart(member_id, now_ms, DepartureKind.VANISHED, event)
        self._infer_expiry(gone, reb.started_ms, now_ms)
        return gone

    def _infer_expiry(self, gone: DepartedMember, removed_by_ms: int, now_ms: int) -> None:
        """A member gone without a leave: expired if it was already silent past its session timeout when it was
        removed, or if its own client reported being fenced (UNKNOWN_MEMBER_ID, session timed out, lost)."""
        st = self.state
        timeout = gone.session_timeout_ms or self.thresholds.default_session_timeout_ms
        silent = gone.last_heartbeat_ms is not None and removed_by_ms - gone.last_heartbeat_ms > timeout
        fenced = any(
            s.kind == SignalKind.FENCED and s.subject == gone.member_id and s.at_ms >= removed_by_ms - SIGNAL_LEAD_MS
            for s in st.signals
        )
        if gone.how == DepartureKind.VANISHED and (silent or fenced):
            gone.how = DepartureKind.EXPIRED
            self._tell(MemberExpired(gone, now_ms, "inferred", ()))
            if st.rebalance is not None and gone.member_id in st.rebalance.left:
                st.rebalance.left.remove(gone.member_id)
                st.rebalance.expired.append(gone.member_id)

    # --- classic GroupMetadata -------------------------------------------------------------------------------

    def _on_group_metadata(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        if event.is_tombstone:
            self._reset("Dead")
            return
        if event.generation is None or event.members is None:
            return
        st.protocol = "classic"
        st.authoritative = True
        st.protocol_name = event.protocol or st.protocol_name
        if event.protocol == "stream":
            st.streams = True
        after = {m.member_id: m for m in event.members}
        if st.generation is None:
            if st.rebalance is not None and (st.rebalance.from_generation or -1) < event.generation:
                st.generation_members = sorted(st.members)
                self._complete(event, event.generation, after, event.leader)
                return
            st.generation = event.generation
            st.members = {mid: self._member_from_info(info, event.generation, now) for mid, info in after.items()}
            st.generation_members = sorted(after)
            st.leader = event.leader
            st.state = "Stable" if after else "Empty"
            return
        if event.generation < st.generation:
            return
        if event.generation == st.generation:
            self._same_generation(event, after)
            return
        self._complete(event, event.generation, after, event.leader)

    def _same_generation(self, event: GroupEvent, after: dict[str, MemberInfo]) -> None:
        """A rewrite of the current generation: a static member replaced without a rebalance, or a refresh."""
        st = self.state
        now = event.event_time_ms
        for new_id, info in after.items():
            if new_id in st.members or not info.instance_id:
                continue
            old_id = next(
                (
                    m.member_id
                    for m in st.members.values()
                    if m.instance_id == info.instance_id and m.member_id not in after
                ),
                None,
            )
            if old_id is None:
                old_id = next(
                    (
                        d.member_id
                        for d in st.departed.values()
                        if d.how == DepartureKind.REPLACED
                        and d.instance_id == info.instance_id
                        and d.replaced_by is None
                    ),
                    None,
                )
            if old_id is not None:
                self._replace(old_id, new_id, now, event)
        for new_id, info in after.items():
            self._member_from_info(info, st.generation, now)
            st.members[new_id] = self._member_from_info(info, st.generation, now)
        st.leader = event.leader or st.leader

    def _reset(self, state_name: str) -> None:
        st = self.state
        st.members = {}
        st.generation_members = []
        st.generation = None
        st.group_epoch = None
        st.target_epoch = None
        st.rebalance = None
        st.state = state_name

    # --- KIP-848 / KIP-1071 / KIP-932 records ----------------------------------------------------------------

    def _on_group_record(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        record = event.record_type or ""
        if event.group_type:
            st.protocol = event.group_type
            st.authoritative = True
            if event.group_type == "streams":
                st.streams = True
        if record.endswith("TargetAssignmentMetadata"):
            if event.epoch is not None and not event.is_tombstone:
                st.target_epoch = event.epoch
                for member in st.members.values():
                    self._update_behind(member, now)
                self._maybe_converged(event)
        elif record.endswith("GroupMetadata"):
            if event.is_tombstone:
                self._reset("Dead")
                return
            if event.epoch is None:
                return
            if st.generation is None and st.rebalance is None:
                st.generation = event.epoch
                st.group_epoch = event.epoch
                st.state = "Stable"
                return
            st.group_epoch = max(st.group_epoch or event.epoch, event.epoch)
            if event.epoch > (st.generation if st.generation is not None else -1):
                reb = st.rebalance or self._start_rebalance(now, event)
                self._absorb_membership_signals(reb, now)
                _add_attempt(reb, Attempt(at_ms=now, generation=event.epoch, kind=AttemptKind.BUMP))
                reb.refs = merge_refs(reb.refs, [source_ref(event)])
            self._maybe_converged(event)
        elif record.endswith("MemberMetadata"):
            member_id = event.member_id
            if member_id is None:
                return
            if event.is_tombstone:
                if member_id in st.members:
                    recent_leave = any(s.kind == SignalKind.LEFT and s.subject == member_id for s in st.signals)
                    gone = self._depart(
                        member_id, now, DepartureKind.LEFT if recent_leave else DepartureKind.VANISHED, event
                    )
                    self._infer_expiry(gone, now, now)
                return  # the epoch bump of this removal follows in the same batch: convergence is judged there
            member = st.members.get(member_id)
            if member is None:
                replaced = next(
                    (
                        m.member_id
                        for m in st.members.values()
                        if event.group_instance_id and m.instance_id == event.group_instance_id
                    ),
                    None,
                )
                if replaced is None and event.group_instance_id:
                    replaced = self._recently_departed_instance(event.group_instance_id, now)
                if replaced is not None:
                    self._replace(replaced, member_id, now, event)
                    member = st.members[member_id]
                else:
                    member = MemberState(member_id=member_id, joined_ms=now)
                    st.members[member_id] = member
                    if st.rebalance is not None:
                        st.rebalance.joined.append(member_id)
                        _note_change(st.rebalance, MembershipChange.JOINED)
                    elif st.generation is not None:
                        # the epoch bump follows in the same batch
                        st.signals.append(Signal(at_ms=now, kind=SignalKind.JOINED, subject=member_id))
            member.instance_id = event.group_instance_id or member.instance_id
            member.client_id = event.client_id or member.client_id
            member.host = event.host or member.host
            member.rebalance_timeout_ms = event.rebalance_timeout_ms or member.rebalance_timeout_ms
        elif record.endswith("CurrentMemberAssignment"):
            member_id = event.member_id
            if member_id is None or event.is_tombstone:
                return
            member = st.members.get(member_id)
            if member is None:
                if member_id in st.departed:
                    return
                member = MemberState(member_id=member_id, joined_ms=now)
                st.members[member_id] = member
            member.generation = event.epoch
            member.member_state = event.member_state
            member.partitions = list(event.partitions)
            member.pending = list(event.pending)
            self._update_behind(member, now)
            self._maybe_converged(event)

    def _absorb_membership_signals(self, reb: OpenRebalance, now_ms: int) -> None:
        """KIP-848 writes a member's arrival/removal and the epoch bump together: join them to this rebalance."""
        st = self.state
        for signal in st.signals:
            member_id = signal.subject
            if now_ms - signal.at_ms > MEMBERSHIP_BATCH_MS:
                continue
            if signal.kind == SignalKind.JOINED and member_id in st.members and member_id not in reb.joined:
                reb.joined.append(member_id)
                _note_change(reb, MembershipChange.JOINED)
            elif signal.kind == SignalKind.DEPARTED and member_id in st.departed:
                how = st.departed[member_id].how
                target = reb.expired if how == DepartureKind.EXPIRED else reb.left
                if how != DepartureKind.REPLACED and member_id not in reb.expired + reb.left:
                    target.append(member_id)
                    _note_change(reb, MembershipChange.EXPIRED if target is reb.expired else MembershipChange.LEFT)

    def _recently_departed_instance(self, instance_id: str, now_ms: int) -> str | None:
        """A member of this instance id removed in the same coordinator batch: the new one replaces it."""
        for gone in self.state.departed.values():
            if (
                gone.instance_id == instance_id
                and gone.how != DepartureKind.REPLACED
                and now_ms - gone.at_ms <= MEMBERSHIP_BATCH_MS
            ):
                identity = f"instance:{instance_id}"
                self.state.departures = [
                    d for d in self.state.departures if not (d.at_ms == gone.at_ms and d.identity == identity)
                ]
                self.state.signals = [
                    sig
                    for sig in self.state.signals
                    if not (sig.kind == SignalKind.DEPARTED and sig.subject == gone.member_id)
                ]
                return gone.member_id
        return None

    def _ensure_rebalance(self, event: GroupEvent) -> OpenRebalance:
        return self.state.rebalance or self._start_rebalance(event.event_time_ms, event)

    def _update_behind(self, member: MemberState, now_ms: int) -> None:
        st = self.state
        target = st.target_epoch
        away = member.generation is not None and member.generation < 0  # -2: a static member temporarily gone
        behind = not away and (
            bool(member.pending)
            or (target is not None and member.generation is not None and member.generation < target)
        )
        if behind and member.behind_since_ms is None:
            member.behind_since_ms = now_ms
            member.behind_target = target
            member.behind_checked = False
        elif not behind and member.behind_since_ms is not None:
            member.behind_since_ms = None
            member.behind_target = None
            self._tell(MemberCaughtUp(member.member_id, now_ms))

    def _maybe_converged(self, event: GroupEvent) -> None:
        """KIP-848/1071: the rebalance ends once every member reached the target epoch with nothing to revoke."""
        st = self.state
        if st.rebalance is None or st.group_epoch is None or st.protocol == "classic":
            return
        if st.rebalance.from_generation is not None and st.group_epoch <= st.rebalance.from_generation:
            return  # the epoch bump that goes with this membership change is still to come
        if st.members:
            if st.target_epoch is None or st.target_epoch < st.group_epoch:
                return
            for member in st.members.values():
                if member.generation != st.target_epoch or member.pending:
                    return
        self._complete(event, st.group_epoch, None, None)

    # --- telemetry -------------------------------------------------------------------------------------------

    def _telemetry_member(self, event: GroupEvent) -> MemberState | None:
        st = self.state
        if event.member_id and event.member_id in st.members:
            return st.members[event.member_id]
        if event.member_id:
            return None
        if event.client_id:
            matches = [
                m
                for m in st.members.values()
                if m.client_id == event.client_id and (event.host is None or m.host in (None, event.host))
            ]
            if len(matches) == 1:
                return matches[0]
        return None

    def _on_telemetry(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        kind = event.event
        broker = event.source == TelemetrySource.BROKER_LOG.value
        self._learn_timeouts(event)
        if kind == K.HEARTBEAT or (kind == K.HEARTBEAT_FAILED and event.error in LIVENESS_ERRORS):
            self._on_heartbeat(event)
        elif kind in (K.COMMIT, K.COMMIT_FAILED):
            self._tell(ClientCommitted(event))
        elif kind == K.MEMBER_EXPIRED and broker:
            if event.member_id and event.detail("pending") != "true":
                self._on_broker_expiry(event)
        elif kind == K.LEAVE:
            self._on_leave(event)
        elif kind == K.MEMBER_REMOVED:
            self._on_removed(event)
        elif kind == K.JOIN:
            self._on_join(event)
        elif kind == K.REBALANCE_PREPARE:
            self._on_prepare(event)
        elif kind in (K.SYNC_FAILED, K.JOIN_FAILED):
            if st.rebalance is not None and event.error != "MEMBER_ID_REQUIRED":
                attempt_kind = AttemptKind.SYNC_FAILED if kind == K.SYNC_FAILED else AttemptKind.JOIN_FAILED
                _add_attempt(
                    st.rebalance,
                    Attempt(at_ms=now, generation=event.generation, kind=attempt_kind, member_id=event.member_id),
                )
                st.rebalance.refs = merge_refs(st.rebalance.refs, [source_ref(event)])
        elif kind in (K.HEARTBEAT_FAILED, K.SESSION_TIMEOUT):
            # a "stale" refusal answers a heartbeat of a generation the client has already left behind: it is
            # still a member (the Java client logs "..., ignoring the error")
            if kind == K.SESSION_TIMEOUT or (event.error in FENCED_ERRORS and event.detail("stale") != "true"):
                self._on_fenced_report(event)
        elif kind == K.POLL_TIMEOUT:
            who = attribute(st, event) or self._telemetry_member(event)
            member_id = who.member_id if who else event.member_id or ""
            st.signals.append(Signal(at_ms=now, kind=SignalKind.POLL_TIMEOUT, subject=member_id))
            if isinstance(who, DepartedMember):
                self._reattribute_to_poll_timeout(who, event)
        elif kind in (K.FOLLOWUP_REBALANCE, K.PROBING_REBALANCE, K.VERSION_PROBING, K.SHUTDOWN_REQUESTED):
            st.streams = True
            st.signals.append(Signal(at_ms=now, kind=SignalKind.ENFORCED, subject=event.reason or str(kind)))
        elif kind in (K.REBALANCE_STABLE, K.GROUP_EMPTY):
            if broker and not st.authoritative and event.generation is not None:
                after = {} if kind == K.GROUP_EMPTY else None
                if st.generation is None or event.generation > st.generation:
                    if st.generation is None and st.rebalance is None:
                        st.generation = event.generation
                        st.state = "Empty" if kind == K.GROUP_EMPTY else "Stable"
                    else:
                        self._complete(event, event.generation, after, st.leader)
        elif kind == K.ASSIGNMENT and broker and event.detail("leader") == "true" and not st.authoritative:
            st.leader = event.member_id or st.leader
        elif kind == K.ASSIGNMENT and event.detail("change") == "leader_assigning" and event.client_id:
            self._on_leader_assigning(event)

    def _learn_timeouts(self, event: GroupEvent) -> None:
        """Timeouts a client announced (JoinGroup frames carry session/rebalance timeouts in details)."""
        if not event.details or (
            "session_timeout_ms" not in event.details and "rebalance_timeout_ms" not in event.details
        ):
            return
        member = self._telemetry_member(event)
        if member is None:
            return
        for key in ("session_timeout_ms", "rebalance_timeout_ms"):
            text = event.detail(key) or ""
            if text.isdigit() and int(text) > 0:
                setattr(member, key, int(text))

    def _on_leader_assigning(self, event: GroupEvent) -> None:
        """Streams' "N client nodes and M consumers participating in this rebalance": the leader's own line.

        With no GroupMetadata records it is the only view of who leads; a new leader while the previous leader's
        client is still around (nothing says it left) is a leadership disruption (seed 001, "Unstable Group
        Leaders"). With records, the persisted leader decides instead.
        """
        st = self.state
        st.streams = True
        previous = st.leader_client
        st.leader_client = event.client_id
        if st.authoritative or previous is None or previous == event.client_id:
            return
        departed_clients = {d.client_id for d in st.departed.values() if d.how != DepartureKind.REPLACED}
        if previous not in departed_clients:
            st.leader_changes.append(event.event_time_ms)
            st.leader = event.client_id
            self._tell(LeaderChanged(event.event_time_ms))

    def _on_heartbeat(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        member = self._telemetry_member(event)
        if member is None and event.member_id and not st.authoritative and event.member_id not in st.departed:
            member = MemberState(member_id=event.member_id, joined_ms=now, generation=event.generation)
            st.members[event.member_id] = member
        if member is None:
            return
        member.client_id = member.client_id or event.client_id
        member.host = member.host or event.host
        member.instance_id = member.instance_id or event.group_instance_id
        if event.detail("snapshot"):
            return  # a describe response lists members; it is not a heartbeat of theirs
        if member.last_heartbeat_ms is None or now >= member.last_heartbeat_ms:
            if member.last_heartbeat_ms is not None and now > member.last_heartbeat_ms:
                member.heartbeat_gap_ms = now - member.last_heartbeat_ms
            member.last_heartbeat_ms = now
            member.heartbeat_ref = source_ref(event)
        self._tell(Heartbeat(member.member_id, now))

    def _on_broker_expiry(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        member_id = event.member_id or ""
        if st.rebalance is None and (member_id in st.members or not st.authoritative):
            self._start_rebalance(now, event)
        if member_id in st.members or member_id in st.departed:
            gone = self._depart(member_id, now, DepartureKind.EXPIRED, event)
        else:
            gone = DepartedMember(member_id=member_id, how=DepartureKind.EXPIRED, at_ms=now, generation=st.generation)
            gone.session_timeout_ms = self.thresholds.default_session_timeout_ms
            gone.refs = [source_ref(event)]
            st.departed[member_id] = gone
        if st.rebalance is not None:
            if member_id in st.rebalance.left:
                st.rebalance.left.remove(member_id)
            if member_id not in st.rebalance.expired:
                st.rebalance.expired.append(member_id)
                _note_change(st.rebalance, MembershipChange.EXPIRED)
            st.rebalance.refs = merge_refs(st.rebalance.refs, [source_ref(event)])
        self._tell(MemberExpired(gone, now, "coordinator", (source_ref(event),)))
        self._reemit_departure_rebalance(gone)

    def _reemit_departure_rebalance(self, gone: DepartedMember) -> None:
        """A member counted as left by an already-completed rebalance turned out expired: fix that row."""
        if gone.rebalance_id is None:
            return
        for completed in self.state.history:
            if completed.rebalance_id != gone.rebalance_id:
                continue
            row = dict(completed.row)
            left = [m for m in row["left"] if m != gone.member_id]
            expired = sorted(set(row["expired"]) | {gone.member_id})
            row.update(left=left, expired=expired)
            if row["cause"] in ("member_left", "unknown"):
                row.update(cause="heartbeat_expiration", cause_detail=f"expired: {', '.join(expired)}")
                completed.cause = "heartbeat_expiration"
            completed.row = row
            self._emit_rebalance(row)

    def _reattribute_to_poll_timeout(self, gone: DepartedMember, event: GroupEvent) -> None:
        """A poll timeout reported after its member's LeaveGroup was already counted by a completed rebalance
        (librdkafka: the leave carries no reason and the overrun is reported at the next poll): that rebalance
        was caused by the poll timeout. Its row is re-emitted under the same id, so the MERGE updates it."""
        now = event.event_time_ms
        if (
            gone.rebalance_id is None
            or gone.how not in (DepartureKind.LEFT, DepartureKind.VANISHED)
            or now - gone.at_ms > POLL_TIMEOUT_LATE_MS
        ):
            return
        for completed in self.state.history:
            if completed.rebalance_id != gone.rebalance_id:
                continue
            row = dict(completed.row)
            if gone.member_id not in row["left"] or row["cause"] not in ("member_left", "unknown"):
                return
            row.update(cause="poll_timeout", cause_detail=f"poll timeout: {gone.member_id}")
            entries = json.loads(row["evidence"] or "[]") + json.loads(evidence_json([source_ref(event)]))
            row["evidence"] = json.dumps(entries, separators=(",", ":"))
            completed.cause = "poll_timeout"
            completed.row = row
            self._emit_rebalance(row)
            return

    def _on_fenced_report(self, event: GroupEvent) -> None:
        """A client says it is no longer a member (UNKNOWN_MEMBER_ID, session timed out, partitions lost)."""
        st = self.state
        now = event.event_time_ms
        who = attribute(st, event)
        if who is None:
            return
        st.signals.append(Signal(at_ms=now, kind=SignalKind.FENCED, subject=who.member_id))
        window = self.thresholds.inferred_expiry_window_ms
        if isinstance(who, DepartedMember) and who.how == DepartureKind.VANISHED and now - who.at_ms <= window:
            who.how = DepartureKind.EXPIRED
            self._tell(MemberExpired(who, now, "inferred", (source_ref(event),)))
            self._reemit_departure_rebalance(who)
            if st.rebalance is None:
                self._tell(GroupStable(now, st.generation))

    def _on_leave(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        if event.detail("temporary") == "true" or event.detail("static_leave") == "true":
            return
        member_id = event.member_id
        if not member_id:
            return
        st.signals.append(Signal(at_ms=now, kind=SignalKind.LEFT, subject=member_id))
        # the Java client's "... due to consumer poll timeout has expired", or the coordinator quoting that client
        # reason ("Removing member M on LeaveGroup; client reason: consumer poll timeout has expired")
        poll_timeout = event.detail("cause") == "poll_timeout" or "poll timeout" in (event.reason or "").lower()
        if poll_timeout:
            st.signals.append(Signal(at_ms=now, kind=SignalKind.POLL_TIMEOUT, subject=member_id))
        if member_id in st.members:
            if st.protocol != "classic" or not st.authoritative:
                self._ensure_rebalance(event)
            self._depart(member_id, now, DepartureKind.LEFT, event)
        elif member_id in st.departed and st.departed[member_id].how == DepartureKind.VANISHED:
            st.departed[member_id].how = DepartureKind.LEFT
            if poll_timeout:
                self._reattribute_to_poll_timeout(st.departed[member_id], event)

    def _on_removed(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        if event.detail("cause") == "static_member_replaced" and event.member_id:
            self._replace(event.member_id, event.detail("new_member_id"), now, event)
            return
        if event.detail("change") == "lost":
            self._on_fenced_report(event)
            return
        removed = [event.member_id] if event.member_id else []
        if event.detail("members"):
            removed = [m.strip(" [],") for m in (event.detail("members") or "").split(",") if m.strip(" [],")]
        reason = (event.reason or "").lower()
        for member_id in removed:
            if member_id in st.members:
                if "failed to transition" in reason or "revoke" in reason or "rebalance timeout" in reason:
                    member = st.members[member_id]
                    member.behind_since_ms = member.behind_since_ms or now
                    member.behind_target = member.behind_target or st.target_epoch
                    self._tell(MemberFencedBehind(member, now))
                self._depart(member_id, now, DepartureKind.REMOVED, event)

    def _on_join(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        replaced = event.detail("replaced_member_id")
        if replaced:
            self._replace(replaced, event.member_id, now, event)
            return
        if event.detail("rebalance") == "false" or not event.member_id:
            return
        known = event.member_id in st.members or event.member_id in st.departed
        if not st.authoritative and event.source == TelemetrySource.BROKER_LOG.value and not known:
            st.members[event.member_id] = MemberState(
                member_id=event.member_id, joined_ms=now, instance_id=event.group_instance_id
            )
            if st.rebalance is not None:
                st.rebalance.joined.append(event.member_id)
                _note_change(st.rebalance, MembershipChange.JOINED)

    def _on_prepare(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        if event.source == TelemetrySource.BROKER_LOG.value and event.detail("group_epoch") is None:
            old_generation = event.generation
            unsynced = event.detail("sync_expired_members")
            if unsynced:
                st.sync_expiries.append(
                    SyncExpiry(
                        at_ms=now, generation=old_generation, member_ids=unsynced.split(","), ref=source_ref(event)
                    )
                )
                self._tell(SyncExpired(now))
            reb = st.rebalance
            if reb is None:
                if st.generation is None:
                    st.generation = old_generation
                    st.generation_members = sorted(st.members)
                if old_generation is not None and st.generation is not None and old_generation < st.generation:
                    return  # a line older than what the records already showed
                reb = self._start_rebalance(now, event)
            _add_attempt(
                reb,
                Attempt(
                    at_ms=now,
                    generation=old_generation,
                    kind=AttemptKind.PREPARE,
                    cause=event.detail("cause"),
                    reason=event.reason,
                    client_reason=event.detail("client_reason"),
                    member_id=event.member_id,
                ),
            )
            reb.refs = merge_refs(reb.refs, [source_ref(event)])
            self._emit_rebalance(self._rebalance_row(reb, None))  # the cause so far, while it is under way
            self._tell(RebalanceAttempted(now))
            expired = st.departed.get(event.member_id or "")
            if (
                event.detail("cause") == "heartbeat_expiration"
                and event.member_id
                and not (expired is not None and expired.how == DepartureKind.EXPIRED)
            ):
                # the coordinator's "removing member M on heartbeat expiration" is its removal on expiry, also when
                # its "Member M ... has failed" line is missing (an excerpt grepped for "Preparing to rebalance")
                self._on_broker_expiry(event)
            return
        if st.rebalance is not None:
            _add_attempt(
                st.rebalance,
                Attempt(at_ms=now, generation=event.generation, kind=AttemptKind.CLIENT, reason=event.reason),
            )
