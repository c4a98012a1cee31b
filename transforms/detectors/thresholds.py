"""Every threshold the detectors use, with its default, in one frozen value (`conf/*.yml` overrides)."""

from __future__ import annotations

from dataclasses import dataclass, field

MINUTE_MS = 60_000
RADAR_CONF = "radar's conf"
"""Who gave the broker's group session timeouts when `detect.thresholds` set them."""
CLUSTER_ANSWER = "the cluster's DescribeConfigs answer"
"""Who told the detection what the cluster applies, asked live before it started."""


@dataclass(frozen=True)
class DetectorThresholds:
    """Detector thresholds; durations in milliseconds.

    Kafka defaults are used where a record does not say: classic members carry their session/rebalance
    timeouts, KIP-848/1071 members only their rebalance timeout (the session timeout is a group config).
    """

    failing_generation_attempts: int = 3
    """failing_generation: rebalance attempts (broker prepares, failed syncs) since the last stable generation."""
    failing_generation_window_ms: int = 10 * MINUTE_MS
    """failing_generation: the attempts and the persisted generation skips must fall within this window."""
    failing_generation_skips: int = 3
    """failing_generation: generations never completed (beyond one per transition, the never-persisted trap)."""
    rebalance_stuck_grace_ms: int = 30_000
    """failing_generation: an open rebalance older than the members' rebalance timeout plus this is stuck."""
    zombie_commit_errors: tuple[str, ...] = (
        "ILLEGAL_GENERATION",
        "UNKNOWN_MEMBER_ID",
        "FENCED_INSTANCE_ID",
        "STALE_MEMBER_EPOCH",
        "FENCED_MEMBER_EPOCH",
    )
    """zombie_commit: commit failures that mean "you are no longer the member you think you are"."""
    zombie_after_owner_change_ms: int = 2 * MINUTE_MS
    """zombie_commit: a backwards commit this soon after the partition changed owner is the old owner's."""
    zombie_empty_group_ms: int = 10 * MINUTE_MS
    """zombie_commit: commits into a group left Empty by removals count this long after it emptied."""
    departed_member_ttl_ms: int = 30 * MINUTE_MS
    """Departed members are remembered this long (attribution of zombies, inferred expirations)."""
    heartbeat_at_risk_fraction: float = 0.7
    """heartbeat_at_risk: fraction of the session timeout a live member's last heartbeat may age."""
    default_session_timeout_ms: int = 45_000
    """Session timeout when no record carries one (Kafka 3.0+ default; KIP-848 group.consumer.session.timeout.ms)."""
    consumer_group_session_timeout_ms: int | None = None
    """The broker's group.consumer.session.timeout.ms, when known to the operator: every KIP-848 member's session
    timeout but a classic member's, whose record carries its own (None: from the broker's configuration listing in
    its log, else assumed)."""
    streams_group_session_timeout_ms: int | None = None
    """The broker's group.streams.session.timeout.ms, likewise for streams groups (KIP-1071)."""
    group_session_timeouts_from: str = field(default=RADAR_CONF, metadata={"learnt": True})
    """Where the two above came from, for the sentences: radar's conf, or what the detection read from the broker
    before it started (`pipelines.stages.broker_settings`). Not a conf key."""
    group_session_timeout_overrides: tuple[tuple[str, int | None, int | None], ...] = field(
        default=(), metadata={"learnt": True}
    )
    """(group id, consumer.session.timeout.ms, streams.session.timeout.ms) of the groups that set their own (Kafka 4.x
    group configs, which win over the broker's), as the cluster said when the detection started. Not a conf key."""
    group_configs_read_at_ms: int = field(default=0, metadata={"learnt": True})
    """When the cluster gave those (epoch ms; 0: it was not asked): a group's `group_config` event from later in the
    run is newer and stands, an older one gives way to the answer. Not a conf key."""
    default_rebalance_timeout_ms: int = 300_000
    """Rebalance timeout when no record carries one (max.poll.interval.ms default)."""
    rebalance_storm_count: int = 5
    """rebalance_storm: more than this many unplanned rebalances (not a clean join/leave nor a Streams followup)."""
    rebalance_storm_window_ms: int = 10 * MINUTE_MS
    probing_interval_ms: int = 10 * MINUTE_MS
    """probing_rebalance_loop: Kafka Streams probing.rebalance.interval.ms."""
    probing_tolerance_ms: int = 90_000
    """probing_rebalance_loop: how far a gap may stray from the interval (the rebalance's own duration, jitter)."""
    probing_repeats: int = 3
    """probing_rebalance_loop: consecutive rebalances spaced by the interval (so repeats - 1 gaps)."""
    flapping_window_ms: int = 10 * MINUTE_MS
    flapping_alternations: int = 4
    """membership_flapping: member count changes by one, alternating direction, at least this many times."""
    flapping_same_identity: int = 2
    """membership_flapping: and one client (instance id, else client id@host) departed at least this often."""
    crash_loop_departures: int = 3
    """membership_flapping (crash loop): members of one client (its host, else its identity) that departed soon
    after they joined, at least this often within flapping_window_ms: a process that keeps dying and restarting
    (seed 001, "Failing/Replacing StreamThreads"), whatever member ids it takes and whether the count moves."""
    crash_loop_lifetime_ms: int = 3 * MINUTE_MS
    """membership_flapping (crash loop): a member that departs this soon after it joined died young (its death is
    noticed up to a session timeout later); members a deployment restarts had lived long before."""
    leader_changes: int = 3
    """leader_instability: leader changes while the previous leader stayed in the group, within the window."""
    leader_window_ms: int = 10 * MINUTE_MS
    offset_regression_min_delta: int = 1
    """offset_regression: how far back a committed offset must move."""
    inferred_expiry_window_ms: int = 2 * MINUTE_MS
    """heartbeat_expiration: a vanished member's client reporting UNKNOWN_MEMBER_ID this soon after confirms it."""
    incident_quiet_ms: int = 10 * MINUTE_MS
    """zombie_commit, heartbeat_expiration, offset_regression resolve after this long without new evidence (when
    their own end, a stable generation or a catch-up commit, is not seen first)."""
    incident_reopen_ms: int = 10 * MINUTE_MS
    """Member incidents (heartbeats, zombie commits, a member behind its target): the same member identity (instance
    id, else client id and host, else member id) seen again this soon after its incident's last occurrence is another
    occurrence of that incident, re-opened if it had resolved; a recurring incident resolves only after this long
    without one. The crash-loop window (flapping_window_ms): a client that dies and rejoins within it is one loop."""
    group_idle_ttl_ms: int = 24 * 60 * MINUTE_MS
    """A group silent this long, with nothing open, may drop its state."""
    history_ms: int = 60 * MINUTE_MS
    """How long completed rebalances are kept (rebalances_1h and the windowed rules)."""
    lag_window_commits: int = 10
    """lag_stalled, lag_growing: commits per partition in the sliding window (Burrow's storage `intervals` default)."""
    lag_min_distance_ms: int = 1000
    """lag: a commit this soon after the previous one replaces it in the window (Burrow's sample `min-distance`)."""
    lag_min_commits: int = 3
    """lag: fewer commits in the window decide nothing but OK (Burrow calls one commit with lag a STALL)."""
    lag_allowed: int = 0
    """lag: a lag at or below this is no lag (Burrow's `allowed-lag` default)."""
    lag_rebalance_grace_ms: int = 30_000
    """lag: a pause that holds a rebalance still going on, or ended this recently, is `rebalancing`, not a stall:
    members resume fetching and commit again only after the rebalance (and their first auto-commit period)."""
