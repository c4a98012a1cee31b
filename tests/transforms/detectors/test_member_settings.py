"""A member's own settings in the detections: its client's configuration listing and the broker's group session
timeouts (`detectors.settings`), else the timeout radar assumes, said to be assumed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from rebalance_radar.emitters.agent import client_config_details
from rebalance_radar.pipelines.formats.log_files import log_records
from rebalance_radar.transforms.detectors.group_events import group_event_from_row
from rebalance_radar.transforms.detectors.settings import (
    MAX_CLIENTS,
    SessionTimeout,
    learn_client_config,
    poll_advice,
    prune_settings,
    session_timeout_of,
)
from rebalance_radar.transforms.detectors.state import GroupState, MemberState
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker
from rebalance_radar.transforms.telemetry.json_events import RadarEventV1
from rebalance_radar.transforms.telemetry.multiline import MultilineJoiner
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record
from tests.transforms.detectors.silver_rows import BASE_MS, CLUSTER, Member, Silver, events_of, log_time, run

G = "orders"
STREAMS_APP = Path(__file__).resolve().parents[2] / "data" / "streams-app"


def broker_listing(t_ms: int, consumer_session_ms: int = 10_000) -> bytes:
    """A broker's listing as `AbstractConfig.logAll` prints it (kafka-clients 3.9.1/4.3.1,
    org/apache/kafka/common/config/AbstractConfig.java: "KafkaConfig values: " NL, "\\t<key> = <value>" NL per
    setting), in the broker's `[%d] %p %m (%c)%n` layout (the logger after the message's last NL)."""
    return (
        f"[{log_time(t_ms)}] INFO KafkaConfig values: \n"
        f"\tgroup.consumer.session.timeout.ms = {consumer_session_ms}\n"
        "\tgroup.initial.rebalance.delay.ms = 3000\n"
        "\tgroup.max.session.timeout.ms = 1800000\n"
        "\tgroup.min.session.timeout.ms = 6000\n"
        "\tgroup.streams.session.timeout.ms = 10000\n"
        "\tnode.id = 1\n"
        " (org.apache.kafka.common.config.AbstractConfig)"
    ).encode()


def consumer_listing(t_ms: int, client_id: str, group: str, max_poll_interval_ms: int, max_poll_records: int) -> bytes:
    """A Java consumer's listing in the same format (ConsumerConfig, a subset of its sorted settings)."""
    return (
        f"[{log_time(t_ms)}] INFO ConsumerConfig values: \n"
        f"\tclient.id = {client_id}\n"
        f"\tgroup.id = {group}\n"
        "\tgroup.instance.id = null\n"
        "\tgroup.protocol = classic\n"
        "\theartbeat.interval.ms = 3000\n"
        f"\tmax.poll.interval.ms = {max_poll_interval_ms}\n"
        f"\tmax.poll.records = {max_poll_records}\n"
        "\tpartition.assignment.strategy = [class org.apache.kafka.clients.consumer.RangeAssignor]\n"
        "\tsession.timeout.ms = 45000\n"
        " (org.apache.kafka.common.config.AbstractConfig)"
    ).encode()


def kip848_member_fenced(s: Silver, t: int) -> int:
    """Two KIP-848 members at epoch 3; m-b's session expires at t + 50 s (the coordinator's own line)."""
    s.kip848_group(G, 3, ("m-a", "m-b"), t)
    gone = t + 50_000
    s.broker(f"[GroupId {G}] Member m-b fenced from the group because its session expired.", gone)
    s.kip848_removal(G, "m-b", 4, gone)
    return gone


def _for_group(rows: list[dict], group: str) -> list[dict]:
    """A broker's listing names no group (group_id null); its groups' trackers are told it."""
    return [{**row, "group_id": row["group_id"] or group} for row in rows]


def test_a_kip848_member_expiring_with_the_brokers_session_timeout_known_says_it() -> None:
    s = Silver()
    s._telemetry(broker_listing(BASE_MS - 60_000), BASE_MS - 60_000)
    gone = kip848_member_fenced(s, BASE_MS)
    out = run(G, _for_group(s.rows, G), gone + 60_000)
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert "its 10 s session timeout (the broker's group.consumer.session.timeout.ms)" in expiry["summary"]
    assert "assumes" not in expiry["summary"]


def test_without_the_brokers_listing_a_kip848_members_timeout_is_assumed_not_its_clients() -> None:
    s = Silver()
    # its client's listing says session.timeout.ms = 45000: a KIP-848 coordinator does not use it
    s._telemetry(consumer_listing(BASE_MS - 5000, "m-b", G, 300_000, 500), BASE_MS - 5000)
    gone = kip848_member_fenced(s, BASE_MS)
    (expiry,) = run(G, s.rows, gone + 60_000).of_kind("heartbeat_expiration")
    assert "the 45 s session timeout radar assumes" in expiry["summary"]
    assert "its 45 s" not in expiry["summary"]


def test_a_zombie_commits_remedy_cites_its_clients_own_max_poll_interval_and_records() -> None:
    a = Member("consumer-orders-1-aaa", [("orders", 0), ("orders", 1)], client_id="worker-a", host="10.0.0.1")
    b = Member("rdkafka-bbb", [("orders", 2), ("orders", 3)], client_id="worker-b", host="10.0.0.2")
    s = Silver()
    t = BASE_MS
    s._telemetry(consumer_listing(t - 5000, "worker-b", G, 300_000, 2000), t - 5000)
    s.generation(G, 7, [a, b], t)
    gone = t + 20_000
    s.broker(f"Member {b.member_id} in group {G} has failed, removing it from the group.", gone)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 7 (reason: removing "
        f"member {b.member_id} on heartbeat expiration).",
        gone,
    )
    s.generation(G, 8, [dataclasses.replace(a, partitions=[("orders", p) for p in range(4)])], gone + 1000)
    s.agent(
        "commit_failed",
        G,
        gone + 6000,
        member_id=b.member_id,
        generation=7,
        client_id="worker-b",
        host="10.0.0.2",
        error="ILLEGAL_GENERATION",
        details={"trigger": "sync", "partitions": "orders-2,orders-3", "offsets": "120,98"},
    )
    (zombie,) = run(G, s.rows, gone + 10_000).of_kind("zombie_commit")
    assert (
        "What to do: Its max.poll.interval.ms is 300000 (5 min) and its max.poll.records 2000 (its client's "
        "configuration)" in zombie["summary"]
    )


def test_a_streams_apps_own_listings_reach_its_groups_tracker_and_name_its_protocol() -> None:
    lines = [line for line in (STREAMS_APP / "healthy-H1.log").read_bytes().splitlines() if line.strip()]
    joiner = MultilineJoiner(flush_timeout_s=float("inf"))
    records = [event for line in lines for event in joiner.feed(line, 0.0)] + joiner.drain()
    s = Silver()
    for record in records:
        if parse_telemetry_record(record, 0).recognised:
            s._telemetry(record, BASE_MS)
    group = "streams-healthy-1796203474784619073"
    tracker = GroupTracker(CLUSTER, group, DetectorThresholds())
    events = [e for e in events_of(s.rows) if e.group_id == group]
    tracker.accept(events)
    tracker.advance_to(max(e.event_time_ms for e in events) + 3_600_000)  # the log's own times (2026-12-02)
    settings = tracker.state.client_settings
    assert set(settings) == {"healthy-H1", "healthy-H1-StreamThread-1-consumer"}
    assert settings["healthy-H1"].protocol == "streams"  # StreamsConfig's group.protocol decides ...
    assert settings["healthy-H1-StreamThread-1-consumer"].protocol == "classic"  # ... over its consumer's
    assert settings["healthy-H1-StreamThread-1-consumer"].max_poll_interval_ms == 300_000


def test_listings_are_bounded_and_pruned_unless_a_member_names_them() -> None:
    state = GroupState(cluster=CLUSTER, group_id=G)
    row = Silver()._telemetry(consumer_listing(BASE_MS, "c-0", G, 300_000, 500), BASE_MS)[0]
    listing = group_event_from_row(row)
    assert listing is not None
    for i in range(MAX_CLIENTS + 10):
        learn_client_config(state, dataclasses.replace(listing, client_id=f"c-{i}", event_time_ms=BASE_MS + i))
    assert len(state.client_settings) == MAX_CLIENTS and "c-0" not in state.client_settings
    state.members["m"] = MemberState(member_id="m", client_id="c-20")
    prune_settings(state, BASE_MS + 10_000_000, keep_ms=60_000)
    assert set(state.client_settings) == {"c-20"}


def test_a_storms_remedy_names_the_eager_assignor_its_members_clients_list_first() -> None:
    s = Silver()
    t = BASE_MS
    s._telemetry(consumer_listing(t - 5000, "consumer-orders-1", G, 300_000, 500), t - 5000)
    members = [Member(f"consumer-orders-1-{i}", [("orders", i)]) for i in range(2)]
    for i in range(7):  # the same members again and again: unplanned rebalances
        s.generation(G, 10 + i, members, t + i * 60_000)
    (storm,) = run(G, s.rows, t + 400_000).of_kind("rebalance_storm")
    assert (
        "Its members' clients list RangeAssignor first in partition.assignment.strategy (their configuration)"
        in storm["summary"]
    )
    without = Silver()
    for i in range(7):
        without.generation(G, 10 + i, members, t + i * 60_000)
    (storm,) = run(G, without.rows, t + 400_000).of_kind("rebalance_storm")
    assert "partition.assignment.strategy (their" not in storm["summary"]


def test_the_agents_own_settings_reach_the_tracker_as_its_members_session_timeout() -> None:
    conf = {"group.id": G, "client.id": "worker-b", "session.timeout.ms": 12000, "max.poll.interval.ms": 60000}
    details = client_config_details(conf)
    assert details["partition.assignment.strategy"] == "range,roundrobin"  # librdkafka's default where unset
    event = RadarEventV1.model_validate(
        {
            "schema": "radar.event/1",
            "event": "client_config",
            "ts": BASE_MS,
            "group_id": G,
            "client_id": "worker-b",
            "host": "10.0.0.2",
            "details": {"observed_by": "agent", **details},
        }
    )
    s = Silver()
    s._telemetry(event.to_json_bytes(), BASE_MS)
    state = GroupState(cluster=CLUSTER, group_id=G)
    (listing,) = events_of(s.rows)
    learn_client_config(state, listing)
    member = MemberState(member_id="rdkafka-bbb", client_id="worker-b", host="10.0.0.2")
    assert session_timeout_of(state, member) == SessionTimeout(12000, "its client's session.timeout.ms")
    assert "its max.poll.interval.ms is 60000 (60 s) (its client" in (poll_advice(state, member) or "").lower()
    # the coordinator records the client's address, the agent its host name: the client id decides
    as_the_broker_saw_it = MemberState(member_id="rdkafka-bbb", client_id="worker-b", host="/10.0.0.2")
    assert session_timeout_of(state, as_the_broker_saw_it) == SessionTimeout(12000, "its client's session.timeout.ms")
    assert session_timeout_of(state, MemberState(member_id="rdkafka-ccc", client_id="worker-c")) is None


def test_the_brokers_session_timeout_given_in_radars_conf_is_used_until_its_listing_is_seen() -> None:
    s = Silver()
    gone = kip848_member_fenced(s, BASE_MS)
    conf = DetectorThresholds(consumer_group_session_timeout_ms=15_000)
    (expiry,) = run(G, s.rows, gone + 60_000, conf).of_kind("heartbeat_expiration")
    assert (
        "its 15 s session timeout (the broker's group.consumer.session.timeout.ms, from radar's conf)"
        in (expiry["summary"])
    )
    listed = Silver()
    listed._telemetry(broker_listing(BASE_MS - 60_000, consumer_session_ms=10_000), BASE_MS - 60_000)
    gone = kip848_member_fenced(listed, BASE_MS)
    (expiry,) = run(G, _for_group(listed.rows, G), gone + 60_000, conf).of_kind("heartbeat_expiration")
    assert "its 10 s session timeout (the broker's group.consumer.session.timeout.ms)" in expiry["summary"]
    assert "It was silent" not in expiry["summary"] or "against the broker's" in expiry["summary"]


def test_a_groups_own_session_timeout_wins_over_the_brokers_listing_and_radars_conf() -> None:
    """Kafka 4.x group configs: the coordinator applies the group's consumer.session.timeout.ms, not the broker's;
    another group keeps the broker's."""
    s = Silver()
    s._telemetry(broker_listing(BASE_MS - 60_000, consumer_session_ms=10_000), BASE_MS - 60_000)
    gone = kip848_member_fenced(s, BASE_MS)
    told = DetectorThresholds(
        consumer_group_session_timeout_ms=15_000,
        group_session_timeout_overrides=((G, 8_000, None), ("other", 3_000, None)),
    )
    (expiry,) = run(G, _for_group(s.rows, G), gone + 60_000, told).of_kind("heartbeat_expiration")
    expected = (
        "its 8 s session timeout (the group's consumer.session.timeout.ms, from the cluster's DescribeConfigs answer)"
    )
    assert expected in expiry["summary"], expiry["summary"]
    elsewhere = DetectorThresholds(group_session_timeout_overrides=(("other", 3_000, None),))
    (expiry,) = run(G, _for_group(s.rows, G), gone + 60_000, elsewhere).of_kind("heartbeat_expiration")
    assert "its 10 s session timeout (the broker's group.consumer.session.timeout.ms)" in expiry["summary"]


def test_a_group_override_taken_off_is_gone_when_the_tracker_restarts_without_it() -> None:
    state = GroupState(cluster=CLUSTER, group_id=G, protocol="consumer")
    told = DetectorThresholds(group_session_timeout_overrides=((G, 8_000, None),))
    tracker = GroupTracker(CLUSTER, G, told, state)
    member = MemberState(member_id="m-a")
    assert session_timeout_of(tracker.state, member) == SessionTimeout(
        8_000, "the group's consumer.session.timeout.ms, from the cluster's DescribeConfigs answer"
    )
    restored = GroupTracker.restore(tracker.snapshot(), DetectorThresholds())
    assert restored.state.group_config is None
    assert session_timeout_of(restored.state, member) is None  # assumed again, as the cluster no longer says it


def test_a_zombies_remedy_says_how_long_its_poll_loop_took_when_its_client_said_it() -> None:
    a = Member("consumer-orders-1-aaa", [("orders", 0), ("orders", 1)], client_id="worker-a", host="10.0.0.1")
    b = Member("rdkafka-bbb", [("orders", 2), ("orders", 3)], client_id="worker-b", host="10.0.0.2")
    s = Silver()
    t = BASE_MS
    s._telemetry(consumer_listing(t - 5000, "worker-b", G, 300_000, 2000), t - 5000)
    s.generation(G, 7, [a, b], t)
    gone = t + 20_000
    s.broker(f"Member {b.member_id} in group {G} has failed, removing it from the group.", gone)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 7 (reason: removing "
        f"member {b.member_id} on heartbeat expiration).",
        gone,
    )
    s.generation(G, 8, [dataclasses.replace(a, partitions=[("orders", p) for p in range(4)])], gone + 1000)
    # librdkafka's MAXPOLL warning (rdkafka_cgrp.c v1.6-v2.x), shipped JSON-wrapped with the group and host
    maxpoll = (
        f"%4|{(gone + 5000) / 1000:.3f}|MAXPOLL|worker-b#consumer-1| [thrd:main]: Application maximum poll interval "
        "(300000ms) "
        "exceeded by 12000ms (adjust max.poll.interval.ms for long-running message processing): leaving group"
    )
    wrapped = {"message": maxpoll, "group_id": G, "host": "10.0.0.2"}
    s._telemetry(json.dumps(wrapped).encode(), gone + 5000)
    s.agent(
        "commit_failed",
        G,
        gone + 6000,
        member_id=b.member_id,
        generation=7,
        client_id="worker-b",
        host="10.0.0.2",
        error="ILLEGAL_GENERATION",
        details={"trigger": "sync", "partitions": "orders-2,orders-3", "offsets": "120,98"},
    )
    (zombie,) = run(G, s.rows, gone + 10_000).of_kind("zombie_commit")
    assert (
        "Its max.poll.interval.ms is 300000 (5 min) and its max.poll.records 2000 (its client's configuration), "
        "and it took 312 s between polls" in zombie["summary"]
    )


def _streams_app_rows(*names: str) -> list[dict]:
    s = Silver()
    for name in names:
        for _, time_ms, record in log_records((STREAMS_APP / name).read_bytes(), 0):
            if parse_telemetry_record(record, time_ms).recognised:
                s._telemetry(record, time_ms)
    return s.rows


def test_a_real_streams_crash_loops_expirations_name_the_brokers_streams_session_timeout_once_known() -> None:
    # tests/data/streams-app: a Kafka Streams 4.3.1 app (group.protocol=streams) killed and restarted on a 4.3.1
    # broker whose group.streams.session.timeout.ms radar's embedded broker set (pipelines/local/broker.py)
    rows = _streams_app_rows("broker.log", "crash-loop-C0.log")
    group = "streams-crash-loop-1796203475227139239"
    until = max(int(r["event_time"].timestamp() * 1000) for r in rows if r["event_time"] is not None) + 600_000
    assumed = run(group, rows, until).of_kind("heartbeat_expiration")
    assert assumed and all("radar assumes" in d["summary"] for d in assumed)
    known = run(group, rows, until, DetectorThresholds(streams_group_session_timeout_ms=10_000))
    expiries = known.of_kind("heartbeat_expiration")
    assert len(expiries) == len(assumed)
    assert all(
        "its 10 s session timeout (the broker's group.streams.session.timeout.ms, from radar's conf)" in d["summary"]
        for d in expiries
    )


def test_the_silence_advice_names_the_setting_that_decides_whoever_told_it() -> None:
    from rebalance_radar.transforms.detectors.rules.heartbeats import silence_advice

    broker = SessionTimeout(
        6_000, "the broker's group.consumer.session.timeout.ms, from the cluster's DescribeConfigs answer"
    )
    said = silence_advice(7_000, broker)
    assert said is not None and "against the broker's group.consumer.session.timeout.ms of 6 s" in said
    assert "(or the group's own consumer.session.timeout.ms) decides" in said, said  # no comma from the source
    own = SessionTimeout(8_000, "the group's streams.session.timeout.ms, from the cluster's DescribeConfigs answer")
    said = silence_advice(9_000, own)
    assert said is not None and "against the group's own streams.session.timeout.ms of 8 s" in said, said
    assert silence_advice(9_000, SessionTimeout(10_000, "its client's session.timeout.ms")) == (
        "It was silent 9 s against a session.timeout.ms of 10 s."
    )


def group_config_event(s: Silver, t_ms: int, consumer_session_ms: int | None) -> None:
    """A `group_config` event as radar's poller publishes it (`EndOffsetsPoller.publish_group_configs`)."""
    details = {} if consumer_session_ms is None else {"consumer.session.timeout.ms": str(consumer_session_ms)}
    event = RadarEventV1.model_validate(
        {"schema": "radar.event/1", "event": "group_config", "ts": t_ms, "group_id": G, "details": details}
    )
    s._telemetry(event.to_json_bytes(), t_ms)


def test_a_group_config_said_during_the_run_wins_over_the_answer_at_start_and_an_older_one_does_not() -> None:
    """A group that sets its own session timeout after the detection started (or is created then) is told by the
    poller's `group_config` event; one that drops it, too; an event older than the start's answer gives way."""
    read_at = BASE_MS - 120_000
    start = DetectorThresholds(group_configs_read_at_ms=read_at)
    set_later = Silver()
    set_later._telemetry(broker_listing(BASE_MS - 300_000, consumer_session_ms=10_000), BASE_MS - 300_000)
    group_config_event(set_later, BASE_MS - 30_000, 8_000)
    gone = kip848_member_fenced(set_later, BASE_MS)
    (expiry,) = run(G, _for_group(set_later.rows, G), gone + 60_000, start).of_kind("heartbeat_expiration")
    own = "its 8 s session timeout (the group's consumer.session.timeout.ms, from the cluster's DescribeConfigs answer)"
    assert own in expiry["summary"], expiry["summary"]

    told_at_start = DetectorThresholds(
        group_session_timeout_overrides=((G, 8_000, None),), group_configs_read_at_ms=read_at
    )
    dropped = Silver()
    dropped._telemetry(broker_listing(BASE_MS - 300_000, consumer_session_ms=10_000), BASE_MS - 300_000)
    group_config_event(dropped, BASE_MS - 30_000, None)
    gone = kip848_member_fenced(dropped, BASE_MS)
    (expiry,) = run(G, _for_group(dropped.rows, G), gone + 60_000, told_at_start).of_kind("heartbeat_expiration")
    assert "its 10 s session timeout (the broker's group.consumer.session.timeout.ms)" in expiry["summary"]

    older = Silver()
    group_config_event(older, read_at - 60_000, 3_000)
    gone = kip848_member_fenced(older, BASE_MS)
    (expiry,) = run(G, older.rows, gone + 60_000, told_at_start).of_kind("heartbeat_expiration")
    assert own in expiry["summary"], expiry["summary"]


def test_a_group_config_learnt_during_the_run_survives_the_trackers_restore() -> None:
    """The tracker is restored from its snapshot every micro-batch with the start's thresholds: what the cluster
    said later stays."""
    s = Silver()
    group_config_event(s, BASE_MS, 8_000)
    start = DetectorThresholds(group_configs_read_at_ms=BASE_MS - 120_000)
    tracker = GroupTracker(CLUSTER, G, start, GroupState(cluster=CLUSTER, group_id=G, protocol="consumer"))
    tracker.accept(events_of(s.rows))
    tracker.advance_to(BASE_MS + 10_000)
    restored = GroupTracker.restore(tracker.snapshot(), start)
    assert session_timeout_of(restored.state, MemberState(member_id="m-a")) == SessionTimeout(
        8_000, "the group's consumer.session.timeout.ms, from the cluster's DescribeConfigs answer"
    )
    # the next start's answer is newer than the event: it decides (here, no override any more)
    later = DetectorThresholds(group_configs_read_at_ms=BASE_MS + 60_000)
    assert GroupTracker.restore(tracker.snapshot(), later).state.group_config is None


def test_a_broker_session_timeout_changed_by_a_rolling_restart_reaches_the_tracker_from_the_poller() -> None:
    """Kafka reads group.consumer.session.timeout.ms at a broker's start only; the detection asked the cluster when
    it started (6 s), and brokers restarted later with 9 s: radar's poller publishes a `broker_config` event for
    each group (`EndOffsetsPoller.publish_broker_configs`), and it wins over the start's answer, through a restore."""
    start = DetectorThresholds(
        consumer_group_session_timeout_ms=6_000, group_session_timeouts_from="the cluster's DescribeConfigs answer"
    )
    s = Silver()
    event = RadarEventV1.model_validate(
        {
            "schema": "radar.event/1",
            "event": "broker_config",
            "ts": BASE_MS - 30_000,
            "group_id": G,
            "reason": "described by radar-end-offsets@test",
            "details": {"group.consumer.session.timeout.ms": "9000", "group.streams.session.timeout.ms": "45000"},
        }
    )
    s._telemetry(event.to_json_bytes(), BASE_MS - 30_000)
    gone = kip848_member_fenced(s, BASE_MS)
    (expiry,) = run(G, _for_group(s.rows, G), gone + 60_000, start, steps=[BASE_MS]).of_kind("heartbeat_expiration")
    assert "its 9 s session timeout (the broker's group.consumer.session.timeout.ms)" in expiry["summary"], expiry[
        "summary"
    ]
    unchanged = Silver()
    gone = kip848_member_fenced(unchanged, BASE_MS)
    (expiry,) = run(G, _for_group(unchanged.rows, G), gone + 60_000, start).of_kind("heartbeat_expiration")
    assert (
        "its 6 s session timeout (the broker's group.consumer.session.timeout.ms, from the cluster's"
        in expiry["summary"]
    ), expiry["summary"]


def test_the_pollers_broker_config_event_keeps_what_an_earlier_listing_said_of_other_settings() -> None:
    """The poller names only the session timeouts: the broker's listing's group.initial.rebalance.delay.ms and the
    classic bounds stay, the session timeout is the poller's."""
    s = Silver()
    s._telemetry(broker_listing(BASE_MS - 300_000, consumer_session_ms=10_000), BASE_MS - 300_000)
    event = RadarEventV1.model_validate(
        {
            "schema": "radar.event/1",
            "event": "broker_config",
            "ts": BASE_MS,
            "group_id": G,
            "details": {"group.consumer.session.timeout.ms": "9000", "group.streams.session.timeout.ms": "45000"},
        }
    )
    s._telemetry(event.to_json_bytes(), BASE_MS)
    tracker = GroupTracker(CLUSTER, G, DetectorThresholds())
    tracker.accept(events_of(_for_group(s.rows, G)))
    tracker.advance_to(BASE_MS + 10_000)
    kept = tracker.state.broker_settings
    assert kept is not None
    assert (kept.consumer_session_timeout_ms, kept.streams_session_timeout_ms) == (9_000, 45_000)
    assert (kept.initial_rebalance_delay_ms, kept.classic_min_session_timeout_ms) == (3_000, 6_000)
    assert kept.classic_max_session_timeout_ms == 1_800_000
