"""What the tracker remembers about one group: members, departures, the open rebalance and recent history.

These are mutable on purpose: the tracker updates them event by event and snapshots them as JSON between
micro-batches (`as_json` / `from_json`), so everything here is plain data, bounded by pruning on event time.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

T = TypeVar("T")


def _plain(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def _from_json(cls: type[T], data: dict[str, Any]) -> T:
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class MemberState:
    """A live member: identity, timeouts, where it stands (generation/epoch, assignment) and its last heartbeat."""

    member_id: str
    instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    generation: int | None = None
    """Classic: the generation it was last seen in; KIP-848/1071: its member epoch."""
    member_state: str | None = None
    partitions: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    joined_ms: int | None = None
    last_heartbeat_ms: int | None = None
    heartbeat_ref: dict[str, Any] | None = None
    heartbeat_gap_ms: int | None = None
    """The gap between its last two reported heartbeats (how often this member's telemetry reports)."""
    at_risk_checked_for: int | None = None
    """The last heartbeat time whose at-risk deadline was already evaluated."""
    behind_since_ms: int | None = None
    behind_target: int | None = None
    behind_checked: bool = False

    def identity(self) -> str:
        """Who the member is across restarts: its instance id, else client id@host, else its id."""
        if self.instance_id:
            return f"instance:{self.instance_id}"
        if self.client_id and self.host:
            return f"client:{self.client_id}@{self.host}"
        return f"member:{self.member_id}"


@dataclass
class DepartedMember:
    """A member that left the group: how (left, expired, removed, replaced, vanished), when, and what it owned."""

    member_id: str
    how: str
    at_ms: int
    generation: int | None = None
    instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None
    partitions: list[str] = field(default_factory=list)
    session_timeout_ms: int | None = None
    last_heartbeat_ms: int | None = None
    replaced_by: str | None = None
    refs: list[dict[str, Any]] = field(default_factory=list)
    rebalance_id: str | None = None
    """The rebalance that removed it (its row is re-emitted when a vanished member turns out expired)."""


@dataclass
class Attempt:
    """One try to leave the stable generation: a broker prepare (old generation) or a failed join/sync."""

    at_ms: int
    generation: int | None
    kind: str
    cause: str | None = None
    reason: str | None = None
    member_id: str | None = None


@dataclass
class OpenRebalance:
    """A rebalance under way: from which generation/epoch, since when, and the evidence gathered for its cause."""

    rebalance_id: str
    from_generation: int | None
    started_ms: int
    members_before: int
    attempts: list[dict[str, Any]] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    poll_timeouts: list[str] = field(default_factory=list)
    enforced: list[str] = field(default_factory=list)
    refs: list[dict[str, Any]] = field(default_factory=list)
    first_change: str | None = None
    """joined | left | expired: the membership change that started it (KIP-848 epochs bump per change)."""
    started_known: bool = True
    """False when only the completion was seen (no prepare line, no epoch bump): started_at is then a guess."""


@dataclass
class CompletedRebalance:
    """A finished rebalance kept for the windowed rules and re-emission of its row."""

    rebalance_id: str
    started_ms: int
    stabilized_ms: int
    from_generation: int | None
    generation: int | None
    members_before: int
    members_after: int
    leader: str | None
    cause: str
    streams: bool
    row: dict[str, Any]


@dataclass
class GroupState:
    """Everything about one group the rules need, pruned by event time."""

    cluster: str
    group_id: str
    protocol: str | None = None
    protocol_name: str | None = None
    state: str | None = None
    generation: int | None = None
    group_epoch: int | None = None
    target_epoch: int | None = None
    leader: str | None = None
    leader_client: str | None = None
    """Client id of the last Streams leader seen assigning (log-only view of leadership)."""
    authoritative: bool = False
    """Membership comes from the coordinator's records (else from telemetry alone)."""
    streams: bool = False
    members: dict[str, MemberState] = field(default_factory=dict)
    generation_members: list[str] = field(default_factory=list)
    departed: dict[str, DepartedMember] = field(default_factory=dict)
    rebalance: OpenRebalance | None = None
    history: list[CompletedRebalance] = field(default_factory=list)
    skips: list[list[int]] = field(default_factory=list)
    """[time, generations never completed beyond the one a never-persisted generation explains]."""
    leader_changes: list[int] = field(default_factory=list)
    sync_expiries: list[list[Any]] = field(default_factory=list)
    """[time, generation, member ids, source ref]: members the coordinator removed for never sending SyncGroup."""
    sync_failing_id: str | None = None
    """The open failing_generation detection those removals raised (it outlives the generations in between)."""
    departures: list[list[Any]] = field(default_factory=list)
    """[time, identity] of every departure, for crash-loop detection."""
    offsets: dict[str, list[int]] = field(default_factory=dict)
    """topic-partition -> [committed offset, time]."""
    owner_changed: dict[str, list[Any]] = field(default_factory=dict)
    """topic-partition -> [time the owner changed, previous owner member id]."""
    empty_by_removal_ms: int | None = None
    removed_partitions: dict[str, str] = field(default_factory=dict)
    """partition -> member id of the removed owner, while the group is Empty after removals."""
    signals: list[list[Any]] = field(default_factory=list)
    """[time, kind, member id or text]: poll timeouts, Streams-enforced rebalances, clients told they were fenced;
    they precede the rebalance they explain, so they are kept a while and matched when it completes."""
    detections: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Open detections by id (JSON-ready rows with epoch-ms times)."""
    provisional: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Detections shown ahead of the watermark (`GroupTracker.preview`), by id: {"horizon": the newest event time
    the preview saw, "row": the row shown}, until the watermark passes the horizon (confirmed or withdrawn)."""
    last_event_ms: int | None = None
    pruned_ms: int | None = None
    deadlines_done_ms: int | None = None
    """Every deadline up to this event time has been evaluated (each deadline is evaluated once, in time order)."""

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready view (shared, not copied: it is serialised at once). `dataclasses.asdict` gives the same
        data but deep-copies every nested value, a large share of a snapshot's cost."""
        data = _plain(self)
        data["members"] = {k: _plain(v) for k, v in self.members.items()}
        data["departed"] = {k: _plain(v) for k, v in self.departed.items()}
        data["rebalance"] = _plain(self.rebalance) if self.rebalance is not None else None
        data["history"] = [_plain(h) for h in self.history]
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> GroupState:
        state = _from_json(GroupState, data)
        state.members = {k: _from_json(MemberState, v) for k, v in data.get("members", {}).items()}
        state.departed = {k: _from_json(DepartedMember, v) for k, v in data.get("departed", {}).items()}
        state.rebalance = _from_json(OpenRebalance, data["rebalance"]) if data.get("rebalance") else None
        state.history = [_from_json(CompletedRebalance, h) for h in data.get("history", [])]
        return state
