"""A group as the tracker models it: members, departures, rebalances and what clients and brokers said about
them. `Group` holds what every protocol shares (telemetry, departures, rebalance rows and causes); a subclass per
protocol, as Kafka's group coordinator has one, adds how its records say membership changed:
`classic.ClassicGroup` (GroupMetadata snapshots per generation) and `epochs.ConsumerGroup` / `StreamsGroup` /
`ShareGroup` (KIP-848/1071/932 member and epoch records). A group seen through telemetry alone is a `Group`.

A group object keeps no state of its own: everything is in `GroupState` (snapshotted), so the tracker picks the
class for the group's protocol at each event. Rules are told what changed (`facts.py`) and decide on detections.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from rebalance_radar.transforms.detectors.causes import decide_cause
from rebalance_radar.transforms.detectors.detections import DetectionBook
from rebalance_radar.transforms.detectors.evidence import as_datetime, evidence_json, merge_refs, source_ref, stable_id
from rebalance_radar.transforms.detectors.facts import (
    ClientCommitted,
    Fact,
    GroupStable,
    Heartbeat,
    LeaderChanged,
    MemberDeparted,
    MemberExpired,
    MemberFencedBehind,
    OffsetCommitted,
    RebalanceAttempted,
    RebalanceCompleted,
    SyncExpired,
)
from rebalance_radar.transforms.detectors.group_events import GroupEvent, MemberInfo
from rebalance_radar.transforms.detectors.membership import attribute
from rebalance_radar.transforms.detectors.settings import (
    learn_broker_config,
    learn_client_config,
    learn_group_config,
    note_poll_overrun,
    prune_settings,
    session_timeout_of,
)
from rebalance_radar.transforms.detectors.state import (
    Attempt,
    AttemptKind,
    CommittedOffset,
    CompletedRebalance,
    DepartedMember,
    Departure,
    DepartureKind,
    GenerationSkip,
    GroupState,
    MembershipChange,
    MemberState,
    OpenRebalance,
    OwnerChange,
    Signal,
    SignalKind,
    SyncExpiry,
)
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.schemas import REBALANCES, HeartbeatEventKind, TelemetrySource

ALIVE_WITHIN_MS = 1_000
"""A member heard from this shortly before its removal was not removed for silence (its timeout unknown)."""

K = HeartbeatEventKind
HOUR_MS = 3_600_000
OFFSETS_KEPT_MS = 7 * 24 * HOUR_MS
"""Committed offsets are remembered as long as Kafka keeps them by default (offsets.retention.minutes, 7 days)."""
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
EPOCH_PROTOCOLS = frozenset({"consumer", "streams"})
"""Coordinator lines of these protocols' groups (KIP-848, KIP-1071): a member keeps its member id across a fencing,
and the group epoch and each member's epoch say when a rebalance converged."""
TOPOLOGY_SET_UP_PHASES = frozenset({"initialized", "validated", "internal_topics_missing", "metadata_hash"})
"""KIP-1071 topology lines after which the coordinator bumps the group epoch with no member joining or leaving."""
EPOCH_BATCH_MS = 2_000
"""A join logged this close before an epoch bump is the change the bump is for."""
UNLOGGED_RECONCILIATION_MS = 6_000
"""A KIP-848 member heartbeats every group.consumer.heartbeat.interval.ms (5 s by default) and its first heartbeat
after a new target assignment changes its assignment state (a joining member's own heartbeat at once, within
`EPOCH_BATCH_MS`): a coordinator log that shows no member's new state this long after a target assignment does not
carry them (a 4.x consumer group's are DEBUG lines), and its rebalances end at their target assignments."""


def logged_group_protocol(event: GroupEvent) -> str | None:
    """The protocol of the group a coordinator line is about: its own word for the group where it says it (a classic
    member "joins the consumer group using the classic protocol"), else the protocol the line names."""
    return event.detail("group_protocol") or event.detail("protocol")


def _task_id(partition: str) -> str:
    """`0-1` (a streams member's task as records spell it) -> `0_1` (as Kafka Streams prints it)."""
    subtopology, _, number = partition.rpartition("-")
    return f"{subtopology}_{number}" if subtopology else partition


def _task_partition(task: str) -> str:
    """`0_1` -> `0-1`, the inverse of `_task_id`."""
    subtopology, _, number = task.rpartition("_")
    return f"{subtopology}-{number}" if subtopology else task


def note_change(reb: OpenRebalance, kind: MembershipChange) -> None:
    """The first membership change of a rebalance is what started it (later ones happened during it)."""
    if reb.first_change is None:
        reb.first_change = kind


def add_attempt(reb: OpenRebalance, attempt: Attempt) -> None:
    """Record one attempt; client reports repeating the same reason (librdkafka stats every interval) count once,
    and a long stuck rebalance keeps its first attempts (the cause) and its latest ones."""
    if attempt.kind == AttemptKind.CLIENT and any(
        a.kind == AttemptKind.CLIENT and a.reason == attempt.reason for a in reb.attempts
    ):
        return
    reb.attempts.append(attempt)
    if len(reb.attempts) > MAX_ATTEMPTS:
        reb.attempts = reb.attempts[:8] + reb.attempts[-(MAX_ATTEMPTS - 8) :]


class Group:
    """What every protocol shares; the protocol hooks below are what a subclass changes."""

    protocol: ClassVar[str | None] = None
    rebalancing_state: ClassVar[str] = "Reconciling"
    """The `group_health.state` shown while a rebalance is open."""

    def __init__(
        self,
        state: GroupState,
        book: DetectionBook,
        thresholds: DetectorThresholds,
        rebalance_rows: dict[str, dict[str, Any]],
        tell: Callable[[Fact], None],
    ) -> None:
        self.state = state
        self.book = book
        self.thresholds = thresholds
        self._rebalance_rows = rebalance_rows
        self._tell = tell

    # --- protocol hooks --------------------------------------------------------------------------------------

    def departed_generation(self, member: MemberState | None) -> int | None:
        """The generation/epoch a departing member is remembered in: the group's (KIP-848 member epochs are not
        generations)."""
        return self.state.generation

    def note_departure(self, member_id: str, how: DepartureKind, now_ms: int) -> None:
        """A member's record went away: each departure is a membership change of the open rebalance (or of the
        epoch bump that follows in the same batch). Classic groups see departures in the next generation."""
        st = self.state
        if st.rebalance is not None:
            target = st.rebalance.expired if how == DepartureKind.EXPIRED else st.rebalance.left
            if how != DepartureKind.REPLACED and member_id not in target:
                target.append(member_id)
                change = MembershipChange.EXPIRED if target is st.rebalance.expired else MembershipChange.LEFT
                note_change(st.rebalance, change)
        else:
            st.signals.append(Signal(at_ms=now_ms, kind=SignalKind.DEPARTED, subject=member_id))

    def leave_starts_rebalance(self) -> bool:
        """A member's LeaveGroup opens a rebalance (classic groups with records: the next generation shows it)."""
        return True

    def membership_change(
        self, reb: OpenRebalance, event: GroupEvent, after: dict[str, MemberInfo] | None, new_generation: int
    ) -> tuple[list[str], list[str], list[str], list[str]]:
        """(members after, joined, left, expired) of a completing rebalance: the changes gathered while it was
        open. A member that joined and was gone again before it converged (a crash loop's restart) still joined; one
        that left or expired and came back under its member id (KIP-848/1071 keep it) still left or expired."""
        st = self.state
        after_ids = sorted(st.members)
        joined = list(dict.fromkeys(reb.joined))
        left = list(dict.fromkeys(reb.left))
        expired = list(dict.fromkeys(reb.expired))
        for m in left + expired:
            if m in st.departed:
                st.departed[m].rebalance_id = reb.rebalance_id
        return after_ids, joined, left, expired

    def members_after(self, after_ids: list[str], after: dict[str, MemberInfo] | None, event: GroupEvent) -> int:
        """The new generation's size: its members' records say it, else a classic coordinator's "Stabilized group G
        generation N with K members" (it counts members whose joins its log did not name), else the ids radar knows."""
        counted = event.detail("member_count") if after is None else None
        return int(counted) if counted and counted.isdigit() else len(after_ids)

    def never_completed(self, skipped: int) -> int:
        """Generations skipped beyond the one a never-persisted generation explains (classic only)."""
        return 0

    def subscription_changed(self, reb: OpenRebalance, after: dict[str, MemberInfo] | None, now_ms: int) -> bool:
        """KIP-848: a member that held an assignment subscribed to other topics, just before the rebalance or during
        it, as its member record (every version) or the coordinator's log (3.7-3.9, at INFO) says."""
        return bool(self.state.signals_of(SignalKind.SUBSCRIBED, reb.started_ms - SIGNAL_LEAD_MS, now_ms))

    def skipped_for_cause(self, skipped: int) -> int:
        return 1

    def note_leader(self, leader: str | None, after_ids: list[str], now_ms: int) -> None:
        """The leader a completed generation names (classic records only)."""

    def _emit_rebalance(self, row: dict[str, Any]) -> None:
        """Queue a REBALANCES row; rows are kept with epoch-ms times (JSON state), output with datetimes."""
        out = dict(row)
        for name in ("started_at", "stabilized_at"):
            out[name] = as_datetime(out[name])
        self._rebalance_rows[row["rebalance_id"]] = out

    def on_offset_commit(self, event: GroupEvent) -> None:
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

    def prune(self, now_ms: int) -> None:
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
        prune_settings(st, now_ms, th.departed_member_ttl_ms)

    def _rebalance_id(self, from_generation: int | None, started_ms: int) -> str:
        st = self.state
        key = from_generation if from_generation is not None else f"t{started_ms}"
        return stable_id(st.cluster, st.group_id, st.protocol, key)

    def _start_rebalance(
        self, now_ms: int, event: GroupEvent | None, *, known: bool = True, members_before: int | None = None
    ) -> OpenRebalance:
        st = self.state
        if members_before is None:
            members_before = self._generation_size()
        reb = OpenRebalance(
            rebalance_id=self._rebalance_id(st.generation, now_ms),
            from_generation=st.generation,
            started_ms=now_ms,
            members_before=members_before,
            started_known=known,
            refs=[source_ref(event)] if event is not None else [],
        )
        st.rebalance = reb
        if known:
            self._emit_rebalance(self._rebalance_row(reb, None))
        return reb

    def _generation_size(self) -> int:
        """The current generation's member count: from the coordinator's log alone, what its last "Stabilized ...
        with K members" counted (it may name fewer), so a count radar could not name does not read as a bounce."""
        st = self.state
        last = st.history[-1] if st.history else None
        if last is not None and not st.authoritative and last.generation == st.generation:
            return last.members_after
        return len(st.generation_members) if st.generation_members else len(st.members)

    def _ensure_rebalance(self, event: GroupEvent) -> OpenRebalance:
        return self.state.rebalance or self._start_rebalance(event.event_time_ms, event)

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
            generation=self.departed_generation(member),
            instance_id=member.instance_id if member else None,
            client_id=member.client_id if member else (event.client_id if event else None),
            host=member.host if member else (event.host if event else None),
            partitions=list(member.partitions) if member else [],
            session_timeout_ms=member.session_timeout_ms if member else None,  # None: not known
            last_heartbeat_ms=self._last_heard_in_session(member) if member else None,
            refs=refs,
            poll_overrun_ms=member.poll_overrun_ms if member else None,
            classic_in_consumer_group=member.classic_in_consumer_group if member else False,
        )
        st.departed[member_id] = gone
        if how != DepartureKind.REPLACED:
            identity = member.identity() if member else MemberState(member_id=member_id).identity()
            lived = now_ms - member.joined_ms if member is not None and member.joined_ms is not None else None
            host = member.host if member else (event.host if event else None)
            st.departures.append(
                Departure(at_ms=now_ms, identity=identity, host=host, lived_ms=lived, member_id=member_id)
            )
        self._tell(MemberDeparted(member_id, now_ms, HOW_WORDS[how]))
        self.note_departure(member_id, how, now_ms)
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
                topics_changed=False,
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
            "topology_epoch": st.topology_epoch if st.streams else None,
            "assignment": self._streams_assignment() if completed and st.streams else None,
        }
        return {name: row.get(name) for name in REBALANCES.column_names}

    def _streams_assignment(self) -> dict[str, str]:
        """Each member's active tasks in Streams' spelling (`0_1`); records hold them as `subtopology-partition`."""
        return {m.member_id: ",".join(_task_id(p) for p in m.partitions) for m in self.state.members.values()}

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
        previous_owner = {p: m.member_id for m in st.members.values() for p in m.partitions}
        after_ids, joined, left, expired = self.membership_change(reb, event, after, new_generation)
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
        never_completed = self.never_completed(skipped)
        if never_completed:
            st.skips.append(GenerationSkip(at_ms=now, never_completed=never_completed))
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
            subscription_changed=self.subscription_changed(reb, after, now),
            topics_changed=bool(st.signals_of(SignalKind.TOPICS_CHANGED, reb.started_ms - EPOCH_BATCH_MS, now)),
            skipped_generations=self.skipped_for_cause(skipped),
        )
        self.note_leader(leader, after_ids, now)
        st.leader = leader or (st.leader if st.leader in after_ids else None)
        members_after = self.members_after(after_ids, after, event)
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
            refs=list(reb.refs),
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
        fenced = not self._heard_shortly_before(gone, removed_by_ms) and any(
            s.kind == SignalKind.FENCED and s.subject == gone.member_id and s.at_ms >= removed_by_ms - SIGNAL_LEAD_MS
            for s in st.signals
        )
        if gone.how == DepartureKind.VANISHED and (silent or fenced):
            gone.how = DepartureKind.EXPIRED
            self._tell(MemberExpired(gone, now_ms, "inferred", ()))
            if st.rebalance is not None and gone.member_id in st.rebalance.left:
                st.rebalance.left.remove(gone.member_id)
                st.rebalance.expired.append(gone.member_id)

    def reset(self, state_name: str) -> None:
        st = self.state
        st.members = {}
        st.generation_members = []
        st.generation = None
        st.group_epoch = None
        st.target_epoch = None
        st.rebalance = None
        st.state = state_name

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

    def on_telemetry(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        kind = event.event
        broker = event.source == TelemetrySource.BROKER_LOG.value
        if broker and event.detail("protocol") == "streams":
            st.streams = True
        if broker and logged_group_protocol(event) in EPOCH_PROTOCOLS:
            st.log_protocol = logged_group_protocol(event)
        self._learn_timeouts(event)
        if kind == K.CLIENT_CONFIG:
            learn_client_config(st, event)
        elif kind == K.BROKER_CONFIG:
            learn_broker_config(st, event)
        elif kind == K.GROUP_CONFIG:
            learn_group_config(st, event)
        elif kind == K.HEARTBEAT or (kind == K.HEARTBEAT_FAILED and event.error in LIVENESS_ERRORS):
            self._on_heartbeat(event)
        elif kind in (K.COMMIT, K.COMMIT_FAILED):
            self._tell(ClientCommitted(event))
        elif kind == K.MEMBER_EXPIRED and broker:
            if event.member_id and event.detail("pending") != "true":
                self._on_broker_expiry(event)
                self._maybe_emptied(event)
        elif kind == K.LEAVE:
            self._on_leave(event)
            self._maybe_emptied(event)
        elif kind == K.MEMBER_REMOVED:
            self._on_removed(event)
            self._maybe_emptied(event)
        elif kind == K.JOIN:
            self._on_join(event)
        elif kind == K.SUBSCRIPTION and broker:
            member = st.members.get(event.member_id or "")
            if member is not None and member.generation is not None:  # not a new member's first subscription
                st.signals.append(Signal(at_ms=now, kind=SignalKind.SUBSCRIBED, subject=member.member_id))
        elif kind == K.REBALANCE_PREPARE:
            self._note_topology_epoch(event.detail("validated_topology_epoch"))
            self._on_prepare(event)
        elif kind == K.TOPOLOGY:
            phase = event.detail("topology_phase")
            if phase in ("initialized", "validated"):
                self._note_topology_epoch(event.detail("topology_epoch"))
            if phase in TOPOLOGY_SET_UP_PHASES:
                # the coordinator bumps the group epoch once a topology is validated or its topics' metadata
                # changed: a rebalance it plans, like a Streams followup, unless members came or went
                epoch = event.detail("topology_epoch")
                what = f"topology {phase.replace('_', ' ')}" + (f" (topology epoch {epoch})" if epoch else "")
                st.signals.append(Signal(at_ms=now, kind=SignalKind.ENFORCED, subject=what))
        elif kind in (K.SYNC_FAILED, K.JOIN_FAILED):
            if st.rebalance is not None and event.error != "MEMBER_ID_REQUIRED":
                attempt_kind = AttemptKind.SYNC_FAILED if kind == K.SYNC_FAILED else AttemptKind.JOIN_FAILED
                add_attempt(
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
            if who is not None:
                note_poll_overrun(who, event)
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
        elif kind == K.ASSIGNMENT and broker and event.member_epoch is not None and not st.authoritative:
            self._on_member_epoch(event)
        elif kind == K.ASSIGNMENT and broker and event.detail("target_assignment_epoch") and not st.authoritative:
            # "Computed a new target assignment for epoch E": the only line that shows the bump of a departure
            epoch = int(event.detail("target_assignment_epoch") or 0)
            self._on_epoch_bump(event, epoch)
            self._on_logged_target(event, epoch)
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
            self._tell(LeaderChanged(event.event_time_ms, (source_ref(event),)))

    def _on_heartbeat(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        member = self._telemetry_member(event)
        if member is None and event.member_id and not st.authoritative and event.member_id not in st.departed:
            member = MemberState(member_id=event.member_id, generation=event.generation)  # first seen, not joined
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
            gone.refs = [source_ref(event)]
            st.departed[member_id] = gone
        if st.rebalance is not None:
            if member_id in st.rebalance.left:
                st.rebalance.left.remove(member_id)
            if member_id not in st.rebalance.expired:
                st.rebalance.expired.append(member_id)
                note_change(st.rebalance, MembershipChange.EXPIRED)
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

    def _last_heard_in_session(self, member: MemberState) -> int | None:
        """Its last heartbeat its session can have taken. One that came after a silence longer than its session
        timeout is a paused client's first act on waking (a GC pause, SIGSTOP): the session had expired in the
        silence, so the heartbeat before it is the last sign of life."""
        last, gap = member.last_heartbeat_ms, member.heartbeat_gap_ms
        known = session_timeout_of(self.state, member)
        if last is not None and gap is not None and known is not None and gap > known.ms:
            return last - gap
        return last

    def _heard_shortly_before(self, gone: DepartedMember, removed_ms: int) -> bool:
        """Its heartbeats were seen within half its session timeout of its removal (within a second when radar does
        not know the timeout): it was removed for something else (a rebalance or revocation timeout, an
        administrator), so its client's "fenced" is no session expiry."""
        if gone.last_heartbeat_ms is None:
            return False
        known = session_timeout_of(self.state, gone)
        return removed_ms - gone.last_heartbeat_ms < (known.ms / 2 if known is not None else ALIVE_WITHIN_MS)

    def _on_fenced_report(self, event: GroupEvent) -> None:
        """A client says it is no longer a member (UNKNOWN_MEMBER_ID, session timed out, partitions lost)."""
        st = self.state
        now = event.event_time_ms
        who = attribute(st, event)
        if who is None:
            return
        st.signals.append(Signal(at_ms=now, kind=SignalKind.FENCED, subject=who.member_id))
        window = self.thresholds.inferred_expiry_window_ms
        if (
            isinstance(who, DepartedMember)
            and who.how == DepartureKind.VANISHED
            and now - who.at_ms <= window
            and not self._heard_shortly_before(who, who.at_ms)
        ):
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
            if self.leave_starts_rebalance():
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
        broker = event.source == TelemetrySource.BROKER_LOG.value
        # a consumer group's member joins with its own protocol: a classic one too (from 3.9 on)
        epoch_join = broker and not st.authoritative and logged_group_protocol(event) in EPOCH_PROTOCOLS
        if epoch_join and event.member_id in st.departed and event.member_id not in st.members:
            st.departed.pop(event.member_id)  # fenced earlier, back under the same member id
        known = event.member_id in st.members or event.member_id in st.departed
        if not st.authoritative and broker and not known:
            st.members[event.member_id] = MemberState(
                member_id=event.member_id, joined_ms=now, instance_id=event.group_instance_id
            )
            if st.rebalance is not None:
                st.rebalance.joined.append(event.member_id)
                note_change(st.rebalance, MembershipChange.JOINED)
            elif epoch_join or not (event.detail("rejoin") or event.detail("metadata_update")):
                # the epoch bump, or the classic "Preparing to rebalance", for this join follows on its own line (a
                # member radar first sees rejoining was in the group already: no join of it)
                st.signals.append(Signal(at_ms=now, kind=SignalKind.JOINED, subject=event.member_id))
        member = st.members.get(event.member_id)
        if member is not None and broker:  # a streams member's metadata line names its client and host
            member.client_id = member.client_id or event.client_id
            member.host = member.host or event.host
            if epoch_join and event.detail("protocol") == "classic":
                member.classic_in_consumer_group = True

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
                members_before = None
                if st.generation is None:  # the group as radar first sees it: without the join this prepares for
                    joining = {g.subject for g in self._recent_joins(now)} | {self._prepared_join(event)}
                    st.generation = old_generation
                    st.generation_members = sorted(m for m in st.members if m not in joining)
                    members_before = len(st.generation_members)
                if old_generation is not None and st.generation is not None and old_generation < st.generation:
                    return  # a line older than what the records already showed
                reb = self._start_rebalance(now, event, members_before=members_before)
            if not st.authoritative:
                self._absorb_joins(reb, now, every=False)  # the join this prepares for, logged just before it
                joining = self._prepared_join(event)
                if joining and joining not in st.members and joining not in st.departed:  # its join line not logged
                    st.members[joining] = MemberState(
                        member_id=joining, joined_ms=now, instance_id=event.group_instance_id
                    )
                    reb.joined.append(joining)
                    note_change(reb, MembershipChange.JOINED)
            add_attempt(
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
            elif event.detail("cause") == "member_left" and event.member_id in st.members and not st.authoritative:
                # "Removing member M on LeaveGroup" is its leave, also when its "has left group" line is missing
                self._on_leave(event)
            return
        if event.source == TelemetrySource.BROKER_LOG.value and not st.authoritative:
            hashed = event.detail("metadata_hash")
            self.note_metadata_hash(int(hashed) if hashed and hashed.lstrip("-").isdigit() else None, now)
            self._on_epoch_bump(event, int(event.detail("group_epoch") or 0))
            return
        if st.rebalance is not None:
            add_attempt(
                st.rebalance,
                Attempt(at_ms=now, generation=event.generation, kind=AttemptKind.CLIENT, reason=event.reason),
            )

    def note_metadata_hash(self, value: int | None, now_ms: int) -> None:
        """The subscribed topics' metadata the coordinator wrote with an epoch bump: a change explains a bump in which
        no member came, went or changed its subscription (partitions added, a topic created or deleted)."""
        st = self.state
        if value is None:
            return
        if st.metadata_hash is not None and value != st.metadata_hash:
            st.signals.append(Signal(at_ms=now_ms, kind=SignalKind.TOPICS_CHANGED, subject=str(value)))
        st.metadata_hash = value

    def _on_epoch_bump(self, event: GroupEvent, epoch: int) -> None:
        """KIP-848/1071 seen through the coordinator's log alone (no group records): "Bumped (streams) group epoch to
        E" or the target assignment computed for E (a departure's bump is logged only that way) opens a rebalance,
        with the joins logged just before it; its members' "new assignment state" lines close it
        (`_on_member_epoch`)."""
        st = self.state
        now = event.event_time_ms
        if st.generation is not None and epoch <= st.generation:
            return  # a line older than what the group already showed
        st.group_epoch = max(st.group_epoch or epoch, epoch)
        forming = st.generation is None and st.rebalance is None
        if forming:
            st.generation = epoch - 1
        reb = st.rebalance or self._start_rebalance(now, event)
        # the first bump seen takes every join before it: a streams group's founder joins, then its first logged
        # bump waits for the topology's topics to be checked (seconds on a loaded broker)
        self._absorb_joins(reb, now, every=forming)
        if not any(a.kind == AttemptKind.BUMP and a.generation == epoch for a in reb.attempts):
            add_attempt(reb, Attempt(at_ms=now, generation=epoch, kind=AttemptKind.BUMP))
        reb.refs = merge_refs(reb.refs, [source_ref(event)])

    def _on_logged_target(self, event: GroupEvent, epoch: int) -> None:
        """A consumer group's target assignment, in a log that hides its members' new assignment states (4.x), is
        where its rebalance ends as far as the log can tell; until the log showed whether it hides them, the line is
        kept for `unlogged_reconciliation_due`. Streams groups log their members' states at INFO."""
        st = self.state
        reb = st.rebalance
        if reb is None or st.log_protocol != "consumer" or st.log_shows_member_epochs:
            return
        if st.generation is not None and epoch <= st.generation:
            return  # a line older than what the group already showed
        if st.log_shows_member_epochs is False:
            self._complete(event, epoch, None, None)
        else:
            reb.target_logged = source_ref(event)
            reb.target_logged_epoch = epoch

    def unlogged_reconciliation_due(self) -> int | None:
        """When the open rebalance, seen through a coordinator log that shows no member's assignment state, ends at
        its last target assignment (None: it ends on its members' lines, or it is not open)."""
        st = self.state
        reb = st.rebalance
        if reb is None or reb.target_logged is None or st.authoritative or st.log_shows_member_epochs is not None:
            return None
        wait = EPOCH_BATCH_MS if reb.joined else UNLOGGED_RECONCILIATION_MS
        return int(reb.target_logged["event_time"]) + wait

    def end_unlogged_reconciliation(self, now_ms: int) -> None:
        """The log shows the target assignment but never a member reaching it: the rebalance ends at that line, as
        far as the log can tell (its members' convergence is not in it)."""
        st = self.state
        due = self.unlogged_reconciliation_due()
        reb = st.rebalance
        if due is None or due > now_ms or reb is None or reb.target_logged is None:
            return
        st.log_shows_member_epochs = False
        ref, epoch = reb.target_logged, reb.target_logged_epoch
        at = GroupEvent(
            event_time_ms=int(ref["event_time"]),
            src_table=str(ref["table"]),
            group_id=st.group_id,
            cluster=st.cluster,
            src_topic=ref.get("topic"),
            src_partition=ref.get("partition"),
            src_offset=ref.get("offset"),
        )
        self._complete(at, epoch if epoch is not None else (st.group_epoch or 0), None, None)

    def _absorb_joins(self, reb: OpenRebalance, now_ms: int, *, every: bool) -> None:
        """From the coordinator's log alone: the joins logged just before the bump (KIP-848/1071) or the "Preparing to
        rebalance" (classic) that opened `reb` (`every`: all not yet taken) are its joins, each taken once."""
        st = self.state
        absorbed: set[str] = set()
        for signal in self._recent_joins(now_ms, every=every):
            member_id = signal.subject
            if member_id in st.members and member_id not in reb.joined:
                reb.joined.append(member_id)
                note_change(reb, MembershipChange.JOINED)
                absorbed.add(member_id)
        if absorbed:
            st.signals = [g for g in st.signals if not (g.kind == SignalKind.JOINED and g.subject in absorbed)]

    @staticmethod
    def _prepared_join(event: GroupEvent) -> str | None:
        """The member a classic "Preparing to rebalance ... (reason: Adding new member M ...)" adds: the only trace of
        its join where the coordinator logs joins at DEBUG (a Scala coordinator's "Pending dynamic member ...")."""
        return event.member_id if event.detail("new_member") == "true" else None

    def _recent_joins(self, now_ms: int, *, every: bool = False) -> list[Signal]:
        """The joins the coordinator logged up to `EPOCH_BATCH_MS` before `now_ms` (`every`: all up to it) that no
        rebalance has taken yet."""
        return [
            g
            for g in self.state.signals
            if g.kind == SignalKind.JOINED
            and (0 <= now_ms - g.at_ms <= EPOCH_BATCH_MS or (every and g.at_ms <= now_ms))
        ]

    def _note_topology_epoch(self, printed: str | None) -> None:
        """KIP-1071: a topology epoch the coordinator initialized or validated (-1: none validated yet)."""
        if printed is not None and printed.lstrip("-").isdigit() and int(printed) >= 0:
            self.state.streams = True
            self.state.topology_epoch = max(self.state.topology_epoch or 0, int(printed))

    def _maybe_emptied(self, event: GroupEvent) -> None:
        """KIP-848/1071 from the coordinator's log alone: the last member's departure ends the rebalance with the group
        empty (no member is left to log a new assignment state; the removal bumped the group epoch once more)."""
        st = self.state
        reb = st.rebalance
        if (
            reb is None
            or st.members
            or st.authoritative
            or event.source != TelemetrySource.BROKER_LOG.value
            or event.detail("protocol") not in EPOCH_PROTOCOLS
        ):
            return
        base = max(st.group_epoch or 0, reb.from_generation or 0)
        self._complete(event, base + 1, {}, None)

    def _on_member_epoch(self, event: GroupEvent) -> None:
        """KIP-848/1071 from the coordinator's log alone: "Member M new assignment state: epoch=E, ..., state=S"; the
        open rebalance ends once every member it knows is STABLE at the group epoch."""
        st = self.state
        member_id = event.member_id or ""
        if not member_id or member_id in st.departed:
            return
        member = st.members.get(member_id)
        if member is None:
            member = MemberState(member_id=member_id, joined_ms=event.event_time_ms)
            st.members[member_id] = member
        st.log_shows_member_epochs = True
        member.generation = event.member_epoch
        member.member_state = event.detail("member_state")
        tasks = event.detail("active_tasks")
        if tasks is not None:  # streams: the tasks the coordinator now gives it, spelled as its records do
            member.partitions = sorted(_task_partition(t) for t in tasks.split(",") if t)
        reb = st.rebalance
        if reb is None or st.group_epoch is None:
            return
        if reb.from_generation is not None and st.group_epoch <= reb.from_generation:
            return  # the bump for this change is still to come
        if all(m.generation == st.group_epoch and m.member_state == "STABLE" for m in st.members.values()):
            self._complete(event, st.group_epoch, None, None)
