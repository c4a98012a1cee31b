"""What the tracker tells the rules: facts about one group, established from its events.

The tracker keeps the group's state (membership, rebalances, offsets) and says what changed; each rule declares
the facts it reacts to (`Rule.reacts_to`) and decides on its own detections. A rule never sees a raw event
except through the commit facts, which carry the commit they are about.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.state import CommittedOffset, DepartedMember, MemberState, SourceRef
from rebalance_radar.transforms.lag.evaluation import LagVerdict


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A live member heartbeated (a describe snapshot listing it is not a heartbeat)."""

    member_id: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class MemberDeparted:
    """A member left the group's membership, however it went; `why` says how, for a sentence."""

    member_id: str
    at_ms: int
    why: str


@dataclass(frozen=True, slots=True)
class MemberExpired:
    """A departed member's session expired: `how` is "coordinator" (the broker said so) or "inferred"."""

    gone: DepartedMember
    at_ms: int
    how: str
    refs: tuple[SourceRef, ...]


@dataclass(frozen=True, slots=True)
class GroupStable:
    """The group is known stable at `generation` without a rebalance completing now (an inferred expiration
    confirmed after the group had already stabilised)."""

    at_ms: int
    generation: int | None


@dataclass(frozen=True, slots=True)
class RebalanceCompleted:
    """A rebalance ended in a stable generation/epoch; its row is in the group's history."""

    at_ms: int
    generation: int
    never_completed: int
    """Classic: generations skipped beyond the one a never-persisted generation explains (0 when none)."""


@dataclass(frozen=True, slots=True)
class RebalanceAttempted:
    """The open rebalance gathered one more attempt (a broker prepare)."""

    at_ms: int


@dataclass(frozen=True, slots=True)
class SyncExpired:
    """The coordinator removed members that never sent SyncGroup (`GroupState.sync_expiries` has them)."""

    at_ms: int


@dataclass(frozen=True, slots=True)
class LeaderChanged:
    """The leader changed while the previous leader stayed (`GroupState.leader_changes` has the times)."""

    at_ms: int
    refs: tuple[SourceRef, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberFencedBehind:
    """KIP-848/1071: the coordinator fenced a member for not reaching its target assignment in time."""

    member: MemberState
    at_ms: int


@dataclass(frozen=True, slots=True)
class MemberCaughtUp:
    """KIP-848/1071: a member behind its target assignment reached it."""

    member_id: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class ClientCommitted:
    """A client reported a commit or a commit failure (agent, protocol frames, client logs)."""

    event: GroupEvent


@dataclass(frozen=True, slots=True)
class OffsetCommitted:
    """`__consumer_offsets` recorded a committed offset; `previous` is the partition's high-water mark before it."""

    event: GroupEvent
    partition_key: str
    previous: CommittedOffset | None

    def moved_back_by(self) -> int:
        """How far back the commit went from the high-water mark (0 when it did not)."""
        if self.previous is None or self.event.committed_offset is None:
            return 0
        return max(0, self.previous.offset - self.event.committed_offset)


@dataclass(frozen=True, slots=True)
class EndOffsetPolled:
    """A partition's log-end offset was polled (`partition_end_offsets`); `verdict` is its lag status then."""

    event: GroupEvent
    partition_key: str
    verdict: LagVerdict


Fact = (
    Heartbeat
    | MemberDeparted
    | MemberExpired
    | GroupStable
    | RebalanceCompleted
    | RebalanceAttempted
    | SyncExpired
    | LeaderChanged
    | MemberFencedBehind
    | MemberCaughtUp
    | ClientCommitted
    | OffsetCommitted
    | EndOffsetPolled
)
