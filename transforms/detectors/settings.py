"""A member's own settings, where radar knows them: its client's configuration listing (`client_config`), the
coordinator's group settings from its broker's listing (`broker_config`), or what its records carried.

Why: a sentence about a member should say its timeout, not a default. A classic member's session timeout is the one
its client asked for (JoinGroup, the GroupMetadata record, its `session.timeout.ms`); a KIP-848 or streams member's is
the broker's `group.consumer.session.timeout.ms` / `group.streams.session.timeout.ms` (a client's own
`session.timeout.ms` is not used under those protocols). What radar does not know is said to be assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance_radar.transforms.detectors.evidence import seconds
from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.state import (
    BrokerSettings,
    ClientSettings,
    DepartedMember,
    GroupConfig,
    GroupState,
    MemberState,
)
from rebalance_radar.transforms.detectors.thresholds import CLUSTER_ANSWER, RADAR_CONF, DetectorThresholds
from rebalance_radar.transforms.schemas import GROUP_CONSUMER_SESSION_TIMEOUT, GROUP_STREAMS_SESSION_TIMEOUT

MAX_CLIENTS = 256
"""Listings kept per group at most (the newest): a crash loop of clients with generated ids logs one per start."""


@dataclass(frozen=True, slots=True)
class SessionTimeout:
    """A member's session timeout and where radar learnt it (None: its own records or frames carried it)."""

    ms: int
    source: str | None = None


def _ms(event: GroupEvent, key: str) -> int | None:
    text = event.detail(key) or ""
    return int(text) if text.isdigit() and int(text) > 0 else None


def learn_client_config(state: GroupState, event: GroupEvent) -> None:
    """Keep a client's listing of this group by its client id (a restart's listing replaces the last one)."""
    if not event.client_id:
        return
    state.client_settings[event.client_id] = ClientSettings(
        client_id=event.client_id,
        at_ms=event.event_time_ms,
        config=event.detail("config") or "",
        instance_id=event.group_instance_id,
        host=event.host,
        protocol=event.detail("group.protocol"),
        session_timeout_ms=_ms(event, "session.timeout.ms"),
        heartbeat_interval_ms=_ms(event, "heartbeat.interval.ms"),
        max_poll_interval_ms=_ms(event, "max.poll.interval.ms"),
        max_poll_records=_ms(event, "max.poll.records"),
        assignor=event.detail("partition.assignment.strategy"),
    )
    if len(state.client_settings) > MAX_CLIENTS:
        newest = sorted(state.client_settings.values(), key=lambda s: s.at_ms)[-MAX_CLIENTS:]
        state.client_settings = {s.client_id: s for s in newest}


BROKER_CONFIG_KEYS: dict[str, str] = {
    "consumer_session_timeout_ms": "group.consumer.session.timeout.ms",
    "streams_session_timeout_ms": "group.streams.session.timeout.ms",
    "classic_min_session_timeout_ms": "group.min.session.timeout.ms",
    "classic_max_session_timeout_ms": "group.max.session.timeout.ms",
    "initial_rebalance_delay_ms": "group.initial.rebalance.delay.ms",
}
"""`BrokerSettings` field -> the broker config a `broker_config` event names it by."""


def learn_broker_config(state: GroupState, event: GroupEvent) -> None:
    """Keep the coordinator's group settings from its broker's listing, or from radar's poller, which names only the
    session timeouts: a setting the event leaves out stays as an earlier listing said it."""
    seen = state.broker_settings if state.broker_settings is not None and not state.broker_settings.from_conf else None
    values = {name: _ms(event, key) for name, key in BROKER_CONFIG_KEYS.items()}
    if seen is not None:
        values = {name: getattr(seen, name) if value is None else value for name, value in values.items()}
    state.broker_settings = BrokerSettings(at_ms=event.event_time_ms, **values)


def settings_from_conf(state: GroupState, thresholds: DetectorThresholds) -> None:
    """The broker's group session timeouts the thresholds give (radar's conf, or what the detection read from the
    broker at start), unless the broker's own listing was seen in this group's events; and the group's own, which
    win over both (Kafka 4.x group configs, read from the cluster at start)."""
    consumer, streams = thresholds.consumer_group_session_timeout_ms, thresholds.streams_group_session_timeout_ms
    if (consumer or streams) and (state.broker_settings is None or state.broker_settings.from_conf):
        state.broker_settings = BrokerSettings(
            at_ms=0,
            consumer_session_timeout_ms=consumer,
            streams_session_timeout_ms=streams,
            from_conf=True,
            told_by=thresholds.group_session_timeouts_from,
        )
    elif not (consumer or streams) and state.broker_settings is not None and state.broker_settings.from_conf:
        state.broker_settings = None  # taken out of the conf since
    current, read_at = state.group_config, thresholds.group_configs_read_at_ms
    if current is not None and current.at_ms > read_at:
        return  # the cluster said it during the run, after what it said at start (`learn_group_config`)
    own = next((o for o in thresholds.group_session_timeout_overrides if o[0] == state.group_id), None)
    # as the cluster said at this start: an override taken off the group since is gone
    state.group_config = None if own is None else GroupConfig(own[1], own[2], CLUSTER_ANSWER, read_at)


def learn_group_config(state: GroupState, event: GroupEvent) -> None:
    """The group's own session timeouts as radar's poller found them while the run went on (a group created, or its
    configs altered, after the detection started); an event older than the one kept changes nothing."""
    if state.group_config is not None and state.group_config.at_ms > event.event_time_ms:
        return
    state.group_config = GroupConfig(
        _ms(event, GROUP_CONSUMER_SESSION_TIMEOUT),
        _ms(event, GROUP_STREAMS_SESSION_TIMEOUT),
        CLUSTER_ANSWER,
        event.event_time_ms,
    )


def prune_settings(state: GroupState, now_ms: int, keep_ms: int) -> None:
    """Listings of clients that are no (former) member and older than `keep_ms` go: a listing is logged once, at
    start, so one of a live member is kept however old."""
    named = {m.client_id for m in (*state.members.values(), *state.departed.values()) if m.client_id}
    state.client_settings = {
        client_id: settings
        for client_id, settings in state.client_settings.items()
        if client_id in named or now_ms - settings.at_ms <= keep_ms
    }


def settings_of(state: GroupState, member: MemberState | DepartedMember) -> ClientSettings | None:
    """The listing of a member's client: by its group.instance.id, else its client id. Hosts are not compared: the
    coordinator records a client's address (`/10.0.0.2`) where a shipper or the agent names its host, and a fleet
    that shares one client id (Java's default `consumer-<group>-<n>`) is normally deployed with one configuration."""
    if member.instance_id:
        for settings in state.client_settings.values():
            if settings.instance_id == member.instance_id:
                return settings
    return state.client_settings.get(member.client_id) if member.client_id else None


def group_protocol(state: GroupState) -> str | None:
    """The group's protocol: from its records, else from its coordinator's lines (KIP-848/1071), else from its
    clients' listings (a Streams application's own `group.protocol` decides for its consumers, which print
    `classic`)."""
    if state.protocol or state.log_protocol:
        return state.protocol or state.log_protocol
    protocols = {s.protocol for s in state.client_settings.values() if s.config == "StreamsConfig" and s.protocol}
    protocols = protocols or {s.protocol for s in state.client_settings.values() if s.protocol}
    return protocols.pop() if len(protocols) == 1 else None


def session_timeout_of(state: GroupState, member: MemberState | DepartedMember) -> SessionTimeout | None:
    """A member's session timeout where radar knows it; None when it does not."""
    protocol = group_protocol(state)
    broker = state.broker_settings
    told = ""
    if broker is not None and broker.from_conf:
        told = f", from {broker.told_by or RADAR_CONF}"
    if member.classic_in_consumer_group:
        protocol = "classic"  # its own JoinGroup's timeout applies, not the consumer group's
    own = state.group_config
    if protocol == "consumer" and own is not None and own.consumer_session_timeout_ms:
        told = f"the group's consumer.session.timeout.ms, from {own.told_by}"
        return SessionTimeout(own.consumer_session_timeout_ms, told)
    if protocol == "streams" and own is not None and own.streams_session_timeout_ms:
        told = f"the group's streams.session.timeout.ms, from {own.told_by}"
        return SessionTimeout(own.streams_session_timeout_ms, told)
    if protocol == "consumer" and broker is not None and broker.consumer_session_timeout_ms:
        return SessionTimeout(
            broker.consumer_session_timeout_ms, f"the broker's group.consumer.session.timeout.ms{told}"
        )
    if protocol == "streams" and broker is not None and broker.streams_session_timeout_ms:
        return SessionTimeout(broker.streams_session_timeout_ms, f"the broker's group.streams.session.timeout.ms{told}")
    if member.session_timeout_ms:
        return SessionTimeout(member.session_timeout_ms)
    if protocol in ("consumer", "streams"):
        return None  # the client's own session.timeout.ms is not what the coordinator applies
    settings = settings_of(state, member)
    if settings is not None and settings.session_timeout_ms:
        return SessionTimeout(settings.session_timeout_ms, "its client's session.timeout.ms")
    return None


def note_poll_overrun(member: MemberState | DepartedMember, event: GroupEvent) -> None:
    """A poll timeout whose client said by how much it overran (librdkafka, the KIP-848 Java client)."""
    exceeded = _ms(event, "exceeded_ms")
    if exceeded is not None:
        member.poll_overrun_ms = exceeded


def poll_advice(state: GroupState, member: MemberState | DepartedMember) -> str | None:
    """The member's poll bounds for a remedy: its client's max.poll.interval.ms and max.poll.records (and the time
    its loop took, when its client said by how much it overran), else the rebalance timeout a classic member joined
    with (its max.poll.interval.ms); None when neither is known."""
    settings = settings_of(state, member)
    overrun = member.poll_overrun_ms
    if settings is not None and settings.max_poll_interval_ms:
        interval = settings.max_poll_interval_ms
        records = f" and its max.poll.records {settings.max_poll_records}" if settings.max_poll_records else ""
        took = f", and it took {(interval + overrun) / 1000:.0f} s between polls" if overrun else ""
        return (
            f"Its max.poll.interval.ms is {interval} ({seconds(interval)}){records} (its client's configuration)"
            f"{took}: one poll's records must be processed within that."
        )
    if overrun:
        return f"Its poll loop went {seconds(overrun)} past its max.poll.interval.ms, as its client said."
    if isinstance(member, MemberState) and member.rebalance_timeout_ms and state.protocol == "classic":
        joined = seconds(member.rebalance_timeout_ms)
        return f"Its max.poll.interval.ms (the rebalance timeout it joined with) is {joined}."
    return None


EAGER_ASSIGNORS = frozenset({"RangeAssignor", "RoundRobinAssignor", "StickyAssignor"})
"""The Java client's eager assignors (every rebalance revokes every partition first)."""


def assignor_advice(state: GroupState) -> str | None:
    """A classic group whose members' clients listed an eager assignor first: the Java client uses the first
    assignor every member supports, so the default `[RangeAssignor, CooperativeStickyAssignor]` stays eager."""
    if group_protocol(state) not in (None, "classic"):
        return None
    firsts = {
        settings.assignor.split(", ")[0]
        for settings in state.client_settings.values()
        if settings.config == "ConsumerConfig" and settings.assignor
    }
    eager = sorted(firsts & EAGER_ASSIGNORS)
    if not eager:
        return None
    return (
        f"Its members' clients list {', '.join(eager)} first in partition.assignment.strategy (their configuration), "
        "so each rebalance is stop-the-world: remove it from the list in a second rolling bounce, as Kafka's upgrade "
        "notes for the cooperative-sticky assignor say."
    )
