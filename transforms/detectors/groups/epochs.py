"""Groups of the KIP-848 protocol family: consumer (KIP-848), streams (KIP-1071) and share (KIP-932) groups. The
coordinator writes a record per member, a group epoch bumped per membership change, a target assignment epoch,
and each member's current assignment and epoch; a rebalance ends once every member reached the target epoch
with nothing left to revoke."""

from __future__ import annotations

from typing import ClassVar

from rebalance_radar.transforms.detectors.evidence import merge_refs, source_ref
from rebalance_radar.transforms.detectors.facts import MemberCaughtUp
from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.groups.group import Group, add_attempt, note_change
from rebalance_radar.transforms.detectors.state import (
    Attempt,
    AttemptKind,
    DepartureKind,
    MembershipChange,
    MemberState,
    OpenRebalance,
    Signal,
    SignalKind,
)

MEMBERSHIP_BATCH_MS = 2_000
"""Member records written this close before an epoch bump belong to it."""


class EpochGroup(Group):
    """What the three share: membership from member records, convergence on the target assignment epoch."""

    def note_records(self) -> None:
        """The group's records were seen (its type is known): anything its protocol implies follows."""

    def on_group_record(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        record = event.record_type or ""
        if event.group_type:
            st.protocol = event.group_type
            st.authoritative = True
            self.note_records()
        if record.endswith("TargetAssignmentMetadata"):
            if event.epoch is not None and not event.is_tombstone:
                st.target_epoch = event.epoch
                for member in st.members.values():
                    self._update_behind(member, now)
                self._maybe_converged(event)
        elif record.endswith("GroupPartitionMetadata"):  # 3.x consumer groups (`group_events._record_fields`)
            if not event.is_tombstone:
                self.note_metadata_hash(event.metadata_hash, now)
        elif record.endswith("GroupMetadata"):
            if event.is_tombstone:
                self.reset("Dead")
                return
            if event.epoch is None:
                return
            self.note_metadata_hash(event.metadata_hash, now)
            if st.generation is None and st.rebalance is None:
                st.generation = event.epoch
                st.group_epoch = event.epoch
                st.state = "Stable"
                return
            st.group_epoch = max(st.group_epoch or event.epoch, event.epoch)
            if event.epoch > (st.generation if st.generation is not None else -1):
                reb = st.rebalance or self._start_rebalance(now, event)
                self._absorb_membership_signals(reb, now)
                add_attempt(reb, Attempt(at_ms=now, generation=event.epoch, kind=AttemptKind.BUMP))
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
                    # KIP-848/1071 clients keep their member id across a fencing: the one that rejoins is a member
                    # again, and its next departure counts as one
                    st.departed.pop(member_id, None)
                    member = MemberState(member_id=member_id, joined_ms=now)
                    st.members[member_id] = member
                    if st.rebalance is not None:
                        st.rebalance.joined.append(member_id)
                        note_change(st.rebalance, MembershipChange.JOINED)
                    elif st.generation is not None:
                        # the epoch bump follows in the same batch
                        st.signals.append(Signal(at_ms=now, kind=SignalKind.JOINED, subject=member_id))
            member.instance_id = event.group_instance_id or member.instance_id
            member.client_id = event.client_id or member.client_id
            member.host = event.host or member.host
            member.rebalance_timeout_ms = event.rebalance_timeout_ms or member.rebalance_timeout_ms
            if event.classic_session_timeout_ms:
                member.session_timeout_ms = event.classic_session_timeout_ms
                member.classic_in_consumer_group = True
            if event.subscribed is not None:
                subscribed = list(event.subscribed)
                if member.subscribed is not None and member.subscribed != subscribed and member.generation is not None:
                    # a member that held an assignment subscribed to other topics: the epoch bump follows
                    st.signals.append(Signal(at_ms=now, kind=SignalKind.SUBSCRIBED, subject=member_id))
                member.subscribed = subscribed
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
            member.assignment_ref = source_ref(event)
            self._update_behind(member, now)
            self._maybe_converged(event)

    def _absorb_membership_signals(self, reb: OpenRebalance, now_ms: int) -> None:
        """KIP-848 writes a member's arrival/removal and the epoch bump together: join them to this rebalance."""
        st = self.state
        absorbed: list[Signal] = []
        for signal in st.signals:
            member_id = signal.subject
            if now_ms - signal.at_ms > MEMBERSHIP_BATCH_MS:
                continue
            if signal.kind == SignalKind.JOINED and member_id in st.members:
                absorbed.append(signal)
                if member_id not in reb.joined:
                    reb.joined.append(member_id)
                    note_change(reb, MembershipChange.JOINED)
            elif signal.kind == SignalKind.DEPARTED and member_id in st.departed:
                absorbed.append(signal)
                gone = st.departed[member_id]
                target = reb.expired if gone.how == DepartureKind.EXPIRED else reb.left
                counted = gone.rebalance_id is not None  # a rebalance that already completed named it
                if gone.how != DepartureKind.REPLACED and not counted and member_id not in reb.expired + reb.left:
                    target.append(member_id)
                    note_change(reb, MembershipChange.EXPIRED if target is reb.expired else MembershipChange.LEFT)
        # each arrival or removal belongs to the one epoch bump written with it, not to the next one too
        st.signals = [s for s in st.signals if s not in absorbed]

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
        if st.rebalance is None or st.group_epoch is None:
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


class ConsumerGroup(EpochGroup):
    """A KIP-848 consumer group (`group.protocol=consumer`)."""

    protocol: ClassVar[str | None] = "consumer"


class StreamsGroup(EpochGroup):
    """A KIP-1071 Kafka Streams group: its members own tasks, and Streams' own rebalances (followups, probing)
    are planned, not failures."""

    protocol: ClassVar[str | None] = "streams"

    def note_records(self) -> None:
        self.state.streams = True


class ShareGroup(EpochGroup):
    """A KIP-932 share group: members share partitions, so no member waits on another's revocation."""

    protocol: ClassVar[str | None] = "share"
