"""Classic groups (the JoinGroup/SyncGroup protocol): the coordinator persists a GroupMetadata snapshot of each
generation (members, leader, assignment), so membership changes are the difference between two generations."""

from __future__ import annotations

from typing import ClassVar

from rebalance_radar.transforms.detectors.group_events import GroupEvent, MemberInfo
from rebalance_radar.transforms.detectors.groups.group import Group
from rebalance_radar.transforms.detectors.state import DepartureKind, MemberState, OpenRebalance


class ClassicGroup(Group):
    """A classic group; its records are GroupMetadata snapshots (`on_group_metadata`)."""

    protocol: ClassVar[str | None] = "classic"
    rebalancing_state: ClassVar[str] = "PreparingRebalance"

    def departed_generation(self, member: MemberState | None) -> int | None:
        """The generation the member was last seen in (else the group's)."""
        return (member.generation if member else None) or self.state.generation

    def note_departure(self, member_id: str, how: DepartureKind, now_ms: int) -> None:
        """Nothing yet: the next generation's snapshot shows who is gone."""

    def leave_starts_rebalance(self) -> bool:
        return not self.state.authoritative

    def membership_change(
        self, reb: OpenRebalance, event: GroupEvent, after: dict[str, MemberInfo] | None, new_generation: int
    ) -> tuple[list[str], list[str], list[str], list[str]]:
        """The difference between the last generation and the new one; a static member's new id under the same
        group.instance.id replaces it (no join, no departure), and a member gone with no leave seen may turn out
        expired."""
        st = self.state
        now = event.event_time_ms
        before = list(st.generation_members)
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
            instance = info.instance_id if info else (st.members[new_id].instance_id if new_id in st.members else None)
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
        return after_ids, joined, left, expired

    def never_completed(self, skipped: int) -> int:
        """N -> N+2 is healthy (a stabilised generation that was never persisted); more were never completed."""
        return skipped - 2 if skipped > 2 else 0

    def subscription_changed(self, reb: OpenRebalance, after: dict[str, MemberInfo] | None, now_ms: int) -> bool:
        if after is None:
            return False
        return len({tuple(i.subscribed) for i in after.values() if i.subscribed}) > 1

    def skipped_for_cause(self, skipped: int) -> int:
        return skipped

    def note_leader(self, leader: str | None, after_ids: list[str], now_ms: int) -> None:
        """A new leader while the previous one stayed in the group is a leadership change (the leader rule
        judges it when the rebalance completes)."""
        st = self.state
        if leader and st.leader and leader != st.leader and st.leader in after_ids:
            st.leader_changes.append(now_ms)

    def on_group_metadata(self, event: GroupEvent) -> None:
        st = self.state
        now = event.event_time_ms
        if event.is_tombstone:
            self.reset("Dead")
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
            for member in st.members.values():
                member.joined_ms = None  # already there when radar first saw the group
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
