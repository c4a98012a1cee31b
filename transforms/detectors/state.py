"""What the tracker remembers about one group: members, departures, the open rebalance and recent history.

Typed and mutable on purpose: the tracker updates them event by event and snapshots them between micro-batches
(`snapshot.py`), so everything here is plain data, bounded by pruning on event time. Every class forbids unknown
fields when read back, so a renamed field fails the restore instead of silently losing state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import ConfigDict

STRICT = ConfigDict(extra="forbid")
CLASSIC_MEMBER_ID = re.compile(r"^(?P<client>.+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
"""A classic member id: the coordinator's `clientId + "-" + UUID` (both the Scala and the Java coordinator)."""


def member_identity(member_id: str, instance_id: str | None, client_id: str | None, host: str | None) -> str:
    """Who a member is across restarts: its instance id, else client id@host, else its client id (a classic member
    id is the client id, a dash and a UUID), else its id."""
    if instance_id:
        return f"instance:{instance_id}"
    if client_id and host:
        return f"client:{client_id}@{host}"
    client_id = client_id or client_id_of(member_id)
    return f"client:{client_id}" if client_id else f"member:{member_id}"


def client_id_of(member_id: str) -> str | None:
    """The client id a classic member id starts with (None for KIP-848 member ids, which are bare UUIDs)."""
    match = CLASSIC_MEMBER_ID.match(member_id)
    return match.group("client") if match else None


"""Read back strictly: a field the class does not declare is an error (a snapshot needs a migration)."""

SourceRef = dict[str, Any]
"""One evidence entry: {table, topic, partition, offset, event_time} (`evidence.source_ref`)."""


@dataclass
class MemberState:
    """A live member: identity, timeouts, where it stands (generation/epoch, assignment) and its last heartbeat."""

    __pydantic_config__ = STRICT

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
    """When radar saw it join (None for a member already there when radar first saw the group)."""
    last_heartbeat_ms: int | None = None
    heartbeat_ref: SourceRef | None = None
    assignment_ref: SourceRef | None = None
    """The record of its current assignment (KIP-848/1071), the evidence of a member behind its target."""
    heartbeat_gap_ms: int | None = None
    """The gap between its last two reported heartbeats (how often this member's telemetry reports)."""
    at_risk_checked_for: int | None = None
    """The last heartbeat time whose at-risk deadline was already evaluated."""
    behind_since_ms: int | None = None
    behind_target: int | None = None
    behind_checked: bool = False
    poll_overrun_ms: int | None = None
    """How far its last poll loop went past max.poll.interval.ms, as its client said (None: not seen)."""
    subscribed: list[str] | None = None
    """KIP-848: the topics its last member record subscribed to (None: no record seen yet)."""
    classic_in_consumer_group: bool = False
    """A classic consumer inside a KIP-848 consumer group: the session timeout it joined with is what applies."""

    def identity(self) -> str:
        return member_identity(self.member_id, self.instance_id, self.client_id, self.host)


class DepartureKind(StrEnum):
    """How a member left the group."""

    LEFT = "left"
    EXPIRED = "expired"
    REMOVED = "removed"
    REPLACED = "replaced"
    VANISHED = "vanished"
    """Missing from the next generation with no leave seen (may turn out expired)."""


@dataclass
class DepartedMember:
    """A member that left the group: how, when, and what it owned."""

    __pydantic_config__ = STRICT

    member_id: str
    how: DepartureKind
    at_ms: int
    generation: int | None = None
    instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None
    partitions: list[str] = field(default_factory=list)
    session_timeout_ms: int | None = None
    last_heartbeat_ms: int | None = None
    replaced_by: str | None = None
    refs: list[SourceRef] = field(default_factory=list)
    rebalance_id: str | None = None
    """The rebalance that removed it (its row is re-emitted when a vanished member turns out expired)."""
    poll_overrun_ms: int | None = None
    """How far its last poll loop went past max.poll.interval.ms, as its client said (None: not seen)."""
    classic_in_consumer_group: bool = False

    def identity(self) -> str:
        return member_identity(self.member_id, self.instance_id, self.client_id, self.host)


class AttemptKind(StrEnum):
    """What tried to leave the stable generation."""

    PREPARE = "prepare"
    """The coordinator's "Preparing to rebalance ... with old generation N"."""
    BUMP = "bump"
    """A KIP-848/1071 group epoch bump."""
    CLIENT = "client"
    """A client saying it is rejoining (the same reason counts once)."""
    SYNC_FAILED = "sync_failed"
    JOIN_FAILED = "join_failed"


@dataclass
class Attempt:
    """One try to leave the stable generation: a broker prepare (old generation), an epoch bump or a failed
    join/sync."""

    __pydantic_config__ = STRICT

    at_ms: int
    generation: int | None
    kind: AttemptKind
    cause: str | None = None
    reason: str | None = None
    client_reason: str | None = None
    member_id: str | None = None


class MembershipChange(StrEnum):
    JOINED = "joined"
    LEFT = "left"
    EXPIRED = "expired"


@dataclass
class OpenRebalance:
    """A rebalance under way: from which generation/epoch, since when, and the evidence gathered for its cause."""

    __pydantic_config__ = STRICT

    rebalance_id: str
    from_generation: int | None
    started_ms: int
    members_before: int
    attempts: list[Attempt] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    poll_timeouts: list[str] = field(default_factory=list)
    enforced: list[str] = field(default_factory=list)
    refs: list[SourceRef] = field(default_factory=list)
    first_change: MembershipChange | None = None
    """The membership change that started it (KIP-848 epochs bump per change)."""
    started_known: bool = True
    """False when only the completion was seen (no prepare line, no epoch bump): started_at is then a guess."""
    target_logged: SourceRef | None = None
    """Without the group's records: the coordinator's last "Computed a new target assignment for epoch E" line of
    this rebalance, where it ends when the log shows no member reaching E (`Group.unlogged_reconciliation_due`)."""
    target_logged_epoch: int | None = None


@dataclass
class CompletedRebalance:
    """A finished rebalance kept for the windowed rules and re-emission of its row."""

    __pydantic_config__ = STRICT

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
    """Its `REBALANCES` row (epoch-ms times), re-emitted under the same id when a later fact changes its cause."""
    refs: list[SourceRef] = field(default_factory=list)
    """The source records that showed it (the evidence of the detections it feeds)."""


@dataclass
class GenerationSkip:
    """Persisted classic generations that skipped numbers: how many never completed, beyond the one a
    stabilised-but-never-persisted generation explains."""

    __pydantic_config__ = STRICT

    at_ms: int
    never_completed: int


@dataclass
class SyncExpiry:
    """Members the coordinator removed for never sending SyncGroup after a generation was formed."""

    __pydantic_config__ = STRICT

    at_ms: int
    generation: int | None
    member_ids: list[str]
    ref: SourceRef


@dataclass
class Departure:
    """One departure of a client (any member id it had), for crash loops."""

    __pydantic_config__ = STRICT

    at_ms: int
    identity: str
    host: str | None = None
    lived_ms: int | None = None
    """How long the member had been in the group (None when radar did not see it join)."""
    member_id: str | None = None

    def place(self) -> str:
        """Where restarts of one client come from: its host when known (a restarted process may take a new client
        id, e.g. a Kafka Streams process id), else its identity."""
        return f"host:{self.host}" if self.host else self.identity


@dataclass
class CommittedOffset:
    """A partition's highest committed offset (a backwards commit keeps the high-water mark) and its time."""

    __pydantic_config__ = STRICT

    offset: int
    at_ms: int


@dataclass
class LagCommit:
    """A commit in a partition's lag window: offset, time, lag against the newest end offset known then."""

    __pydantic_config__ = STRICT

    offset: int
    at_ms: int
    lag: int | None = None


@dataclass
class LagEnd:
    """A polled log-end offset of a partition, or the Kafka error that replaced it."""

    __pydantic_config__ = STRICT

    offset: int | None
    at_ms: int
    error: str | None = None


@dataclass
class PartitionLag:
    """A partition's sliding window of commits and end offsets (Burrow's), and its last status."""

    __pydantic_config__ = STRICT

    commits: list[LagCommit] = field(default_factory=list)
    ends: list[LagEnd] = field(default_factory=list)
    status: str | None = None


@dataclass
class RegressedPartition:
    """A partition whose committed offset went back: from which high-water mark, down to where, since when."""

    __pydantic_config__ = STRICT

    high_water: int
    lowest: int
    at_ms: int


@dataclass
class OwnerChange:
    """When a partition changed owner, and the owner it had before."""

    __pydantic_config__ = STRICT

    at_ms: int
    previous_owner: str


class SignalKind(StrEnum):
    """Facts that precede the rebalance they explain (kept a while, matched when it completes)."""

    POLL_TIMEOUT = "poll_timeout"
    ENFORCED = "enforced"
    """A Kafka Streams followup/probing rebalance, version probing or shutdown request."""
    FENCED = "fenced"
    """A client said it is no longer a member (UNKNOWN_MEMBER_ID, session timed out, partitions lost)."""
    LEFT = "left"
    JOINED = "joined"
    """KIP-848: a member record written before the epoch bump it belongs to."""
    DEPARTED = "departed"
    """KIP-848: a member removed before the epoch bump it belongs to."""
    SUBSCRIBED = "subscribed"
    """KIP-848: a member that already held an assignment changed its subscription (the epoch bump follows)."""
    TOPICS_CHANGED = "topics_changed"
    """KIP-848/1071: the subscribed topics' metadata changed (partitions added, a topic created or deleted)."""


@dataclass
class Signal:
    __pydantic_config__ = STRICT

    at_ms: int
    kind: SignalKind
    subject: str
    """The member id, or the text of an enforced rebalance's reason."""


@dataclass
class HeldDetection:
    """An open detection as the state holds it (epoch-ms times); `detections.detection_row` gives its row."""

    __pydantic_config__ = STRICT

    detection_id: str
    kind: str
    severity: str
    generation: int | None
    member_id: str | None
    topic: str | None
    partition: int | None
    first_seen: int
    last_seen: int
    detected_at: int
    status: str
    resolved_at: int | None
    summary: str
    refs: list[SourceRef]
    incident_of: str | None = None
    """The member identity whose later occurrences update this detection instead of opening new ones."""
    remedy: str | None = None
    """What to do about it (the rule's advice, with the member's own settings where radar knows them)."""
    occurrences: int = 1
    occurrence_ids: list[str] = field(default_factory=list)
    """The ids its occurrences would have had (each counted once, however often it is seen again)."""
    ending: str | None = None
    """A recurring incident whose latest occurrence ended (its rule's closing sentence): it stays open until
    `incident_reopen_ms` passes without another occurrence, then resolves with this sentence."""
    evidence_seen: int | None = None
    """Source records seen behind it (`refs` keeps the first and the latest of them); None: as many as `refs`."""


@dataclass
class ShownProvisional:
    """A detection shown ahead of the watermark, until the watermark passes `horizon_ms` (confirmed or
    withdrawn)."""

    __pydantic_config__ = STRICT

    horizon_ms: int
    """The newest event time the preview saw."""
    row: HeldDetection


@dataclass
class ClientSettings:
    """A client's own settings, from the configuration listing it logged at start (`client_config`)."""

    __pydantic_config__ = STRICT

    client_id: str
    at_ms: int
    config: str
    """The listing's config class: `ConsumerConfig`, `StreamsConfig` (a Streams application's own settings)."""
    instance_id: str | None = None
    host: str | None = None
    protocol: str | None = None
    """Its group.protocol: classic, consumer (KIP-848) or streams (KIP-1071)."""
    session_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None
    max_poll_interval_ms: int | None = None
    max_poll_records: int | None = None
    assignor: str | None = None
    """partition.assignment.strategy, simple class names (`RangeAssignor, CooperativeStickyAssignor`)."""


@dataclass
class BrokerSettings:
    """The group settings the coordinator enforces, from a broker's `KafkaConfig values:` listing (`broker_config`)."""

    __pydantic_config__ = STRICT

    at_ms: int
    consumer_session_timeout_ms: int | None = None
    """group.consumer.session.timeout.ms: the session timeout of every KIP-848 member."""
    streams_session_timeout_ms: int | None = None
    """group.streams.session.timeout.ms: the session timeout of every KIP-1071 member."""
    classic_min_session_timeout_ms: int | None = None
    classic_max_session_timeout_ms: int | None = None
    initial_rebalance_delay_ms: int | None = None
    from_conf: bool = False
    """Given from outside the group's own events (`detect.thresholds`: radar's conf, or what the detection read
    from the broker at start), not from a listing this tracker saw: a listing seen replaces it."""
    told_by: str | None = None
    """Who gave it when `from_conf` (`DetectorThresholds.group_session_timeouts_from`)."""


@dataclass
class GroupConfig:
    """The session timeouts a group sets on itself (Kafka 4.x group configs), which the coordinator applies instead of
    the broker's; as the cluster said when the detection started, or later in the run (both None: it sets none)."""

    __pydantic_config__ = STRICT

    consumer_session_timeout_ms: int | None = None
    """consumer.session.timeout.ms: its KIP-848 members' session timeout."""
    streams_session_timeout_ms: int | None = None
    """streams.session.timeout.ms: its KIP-1071 members' session timeout."""
    told_by: str = ""
    at_ms: int = 0
    """When the cluster said so: its answer when the detection started, or a `group_config` event of the run."""


@dataclass
class GroupState:
    """Everything about one group the rules need, pruned by event time."""

    __pydantic_config__ = STRICT

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
    log_protocol: str | None = None
    """Without the group's records: the KIP-848/1071 protocol its coordinator's lines name (`consumer`, `streams`),
    which decides whose session timeout its members have."""
    topology_epoch: int | None = None
    """KIP-1071: the topology epoch the coordinator last initialized or validated (from its log; None: not seen)."""
    metadata_hash: int | None = None
    """KIP-848/1071: the subscribed topics' metadata as the coordinator last wrote it (4.1+ its hash in the group
    record and in "Bumped group epoch to E with metadata hash H"; 3.x a digest of its partition metadata record)."""
    log_shows_member_epochs: bool | None = None
    """Without the group's records: whether its coordinator's log shows a member's "new assignment state" (3.7-3.9
    and streams groups at INFO; a 4.x consumer group's only at DEBUG); None until a rebalance told."""
    members: dict[str, MemberState] = field(default_factory=dict)
    generation_members: list[str] = field(default_factory=list)
    departed: dict[str, DepartedMember] = field(default_factory=dict)
    rebalance: OpenRebalance | None = None
    history: list[CompletedRebalance] = field(default_factory=list)
    skips: list[GenerationSkip] = field(default_factory=list)
    leader_changes: list[int] = field(default_factory=list)
    sync_expiries: list[SyncExpiry] = field(default_factory=list)
    crash_loops: dict[str, str] = field(default_factory=dict)
    """place (`Departure.place`) -> the open membership_flapping detection of its crash loop."""
    sync_failing_id: str | None = None
    """The open failing_generation detection those removals raised (it outlives the generations in between)."""
    departures: list[Departure] = field(default_factory=list)
    offsets: dict[str, CommittedOffset] = field(default_factory=dict)
    """topic-partition -> its committed offset."""
    owner_changed: dict[str, OwnerChange] = field(default_factory=dict)
    regressed: dict[str, RegressedPartition] = field(default_factory=dict)
    """topic-partition -> its regression, while the group's offset_regression incident is open."""
    regression_id: str | None = None
    """The group's open offset_regression detection: one incident for every partition that went back."""
    """topic-partition -> its last owner change."""
    empty_by_removal_ms: int | None = None
    removed_partitions: dict[str, str] = field(default_factory=dict)
    """partition -> member id of the removed owner, while the group is Empty after removals."""
    signals: list[Signal] = field(default_factory=list)
    lag: dict[str, PartitionLag] = field(default_factory=dict)
    """topic-partition -> its lag window (`detectors.lag_windows`)."""
    client_settings: dict[str, ClientSettings] = field(default_factory=dict)
    """client id -> its configuration listing (`detectors.settings`), pruned with the members it names."""
    broker_settings: BrokerSettings | None = None
    """The coordinator's group settings, from its broker's configuration listing (None: not seen)."""
    group_config: GroupConfig | None = None
    """The session timeouts the group sets on itself, which win over the broker's (None: none, or not asked)."""
    detections: dict[str, HeldDetection] = field(default_factory=dict)
    """Open detections by id."""
    ended_incidents: dict[str, HeldDetection] = field(default_factory=dict)
    """Resolved member incidents by id, kept `incident_reopen_ms` after their last occurrence: the same member
    identity seen again re-opens its incident (same id, one row) instead of opening another."""
    provisional: dict[str, ShownProvisional] = field(default_factory=dict)
    """Detections shown ahead of the watermark (`GroupTracker.preview`), by id."""
    last_event_ms: int | None = None
    pruned_ms: int | None = None
    deadlines_done_ms: int | None = None
    """Every deadline up to this event time has been evaluated (each deadline is evaluated once, in time order)."""

    def identity_of(self, member_id: str) -> str:
        """Who a (former) member is across restarts (`member_identity`), from what the group knows of it. A client
        id and host that two members hold at once (consumers of one process with one configured client.id: both
        live, or both in one generation) names neither: each is then its member id. A restart is never in the
        generation of the member it replaces. A member known without its host (a member id its client dropped at
        once) takes the one host its client id is known on in this group."""
        known = self.members.get(member_id) or self.departed.get(member_id)
        if known is None:
            return member_identity(member_id, None, None, None)
        identity = known.identity()
        if known.instance_id:
            return identity
        everyone = [*self.members.values(), *self.departed.values()]
        client = known.client_id or client_id_of(member_id)
        if client and not known.host:  # a member id its client dropped at once was never reported with its host
            hosts = {o.host for o in everyone if o.host and (o.client_id or client_id_of(o.member_id)) == client}
            if len(hosts) == 1:
                identity = member_identity(member_id, None, client, hosts.pop())
        live = isinstance(known, MemberState)
        for other in everyone:
            if other.member_id == member_id or other.instance_id or other.identity() != identity:
                continue
            together = live and isinstance(other, MemberState)
            if together or (known.generation is not None and other.generation == known.generation):
                return f"member:{member_id}"
        return identity

    def signals_of(self, kind: SignalKind, since_ms: int, until_ms: int) -> list[str]:
        """The subjects of the signals of `kind` in [since_ms, until_ms], oldest first."""
        return [s.subject for s in self.signals if since_ms <= s.at_ms <= until_ms and s.kind == kind]
