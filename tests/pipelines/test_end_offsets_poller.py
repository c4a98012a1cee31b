"""The end-offset poller on the run's broker: a group's committed partitions get their real log-end offsets in one
`radar.end_offsets/1` record per group, read back from the telemetry topic; a deleted topic never stops a round."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from rebalance_radar.emitters.end_offsets import EndOffsetsPoller, IsolatedEndOffsetsPoller
from rebalance_radar.emitters.kafka_settings import client_settings
from rebalance_radar.transforms.telemetry.end_offsets import EndOffsetsPoll, parse_end_offsets
from rebalance_radar.transforms.telemetry.json_events import RadarEventV1
from tests.pipelines.group_member import alter_group_session_timeout, create_topics, kip848_member, read_records
from tests.polling import wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.lag]


def polls(bootstrap: str, topic: str) -> list[EndOffsetsPoll]:
    found = [parse_end_offsets(value) for value, _ in read_records(bootstrap, topic)]
    return [poll for poll in found if poll is not None]


def test_committed_partitions_get_their_end_offsets_and_a_deleted_topic_does_not_stop_a_round(
    kafka_broker: Any,
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    data, gone, telemetry, group = f"eo-data-{suffix}", f"eo-gone-{suffix}", f"eo-tel-{suffix}", f"eo-group-{suffix}"
    create_topics(bootstrap, {data: 2, gone: 1, telemetry: 1})
    producer = Producer(dict(client_settings(bootstrap)))
    for n in range(10):
        producer.produce(data, b"x", partition=n % 2)
        producer.produce(gone, b"y", partition=0)
    producer.flush(10)
    committer = Consumer({**client_settings(bootstrap), "group.id": group, "enable.auto.commit": False})
    committer.commit(
        offsets=[TopicPartition(data, 0, 2), TopicPartition(data, 1, 5), TopicPartition(gone, 0, 7)],
        asynchronous=False,
    )
    committer.close()

    poller = EndOffsetsPoller(client_settings(bootstrap), telemetry, groups=[group], emitter="radar-run@test")
    first = poller.poll_once()
    assert (first.groups, first.partitions, first.failed) == (1, 3, 0)
    admin = AdminClient(dict(client_settings(bootstrap)))  # kept: its futures fail once it is collected
    admin.delete_topics([gone])[gone].result(30)
    time.sleep(1)  # the deletion reaches the broker's metadata cache
    second = poller.poll_once()
    poller.stop()

    read = polls(bootstrap, telemetry)
    assert [p.group_id for p in read] == [group, group]
    ends = {(p.topic, p.partition): (p.end_offset, p.error) for p in read[0].partitions}
    assert ends == {(data, 0): (5, None), (data, 1): (5, None), (gone, 0): (10, None)}
    after = {(p.topic, p.partition): (p.end_offset, p.error) for p in read[1].partitions}
    assert after[(data, 0)] == (5, None) and after[(data, 1)] == (5, None)
    # The coordinator drops a deleted topic's offsets (then the partition is no longer the group's), or the poll
    # comes first and names the error: either way a status, never an end offset
    assert after.get((gone, 0), (None, "UNKNOWN_TOPIC_OR_PART"))[0] is None
    assert second.groups == 1 and poller.problem() is None


def test_the_poller_process_of_a_run_is_restarted_after_a_crash_and_says_so(kafka_broker: Any) -> None:
    """`radar run`'s poller runs in a child process (librdkafka's admin client can crash a process on a coordinator
    move): killed with SIGSEGV, as such a crash ends it, it is started again, publishes on, and the status line says
    what happened."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    data, telemetry, group = f"eo-iso-data-{suffix}", f"eo-iso-tel-{suffix}", f"eo-iso-group-{suffix}"
    create_topics(bootstrap, {data: 1, telemetry: 1})
    committer = Consumer({**client_settings(bootstrap), "group.id": group, "enable.auto.commit": False})
    committer.commit(offsets=[TopicPartition(data, 0, 0)], asynchronous=False)
    committer.close()
    poller = IsolatedEndOffsetsPoller(client_settings(bootstrap), telemetry, interval_s=0.5, groups=[group])
    with poller:
        wait_for(lambda: poller.status.get("rounds", 0) >= 1, 60, "the poller process's first round")
        crashed = poller.process
        assert crashed is not None
        killed_ms = time.time_ns() // 1_000_000
        os.kill(crashed.pid, signal.SIGSEGV)
        wait_for(lambda: poller.status.get("pid") not in (None, crashed.pid), 60, "a round of the restarted process")
        said = poller.problem() or ""
    assert [p for p in polls(bootstrap, telemetry) if p.polled_at > killed_ms]  # it published on after the restart
    assert "the end-offset poller's process died 1 time(s) (last: signal SIGSEGV" in said, said
    assert said.endswith("restarted"), said
    assert poller.process is not None and poller.process.poll() == 0  # stopped: its own clean exit
    assert {p.group_id for p in polls(bootstrap, telemetry)} == {group}


def test_a_groups_own_session_timeout_set_and_dropped_while_radar_runs_is_published_as_it_changes(
    kafka_broker: Any,
) -> None:
    """Kafka 4.x group configs altered while the poller runs (`kafka-configs --entity-type groups --alter`): the first
    round says the group's configs as they are (none), each change one `group_config` event, no change nothing."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    data, telemetry, group = f"gc-data-{suffix}", f"gc-tel-{suffix}", f"gc-group-{suffix}"
    create_topics(bootstrap, {data: 1, telemetry: 1})
    settings = client_settings(bootstrap)
    poller = EndOffsetsPoller(settings, telemetry, groups=[group], emitter="radar-run@test", group_configs_every_s=0)
    try:
        with kip848_member(settings, group, data):
            sent = [poller.publish_group_configs()]
            alter_group_session_timeout(settings, group, 8_000)
            sent += [poller.publish_group_configs(), poller.publish_group_configs()]
            alter_group_session_timeout(settings, group, None)
            sent.append(poller.publish_group_configs())
    finally:
        poller.stop()
    events = [RadarEventV1.model_validate_json(value) for value, _ in read_records(bootstrap, telemetry)]
    assert sent == [1, 1, 0, 1]
    assert [(e.event, e.group_id) for e in events] == [("group_config", group)] * 3
    assert [e.details for e in events] == [{}, {"consumer.session.timeout.ms": "8000"}, {}]


def test_the_brokers_group_session_timeouts_are_published_to_each_group_when_they_change(kafka_broker: Any) -> None:
    """The first configs round reads the broker's values (the detection asked the same at its start) and publishes
    nothing; values that differ later (a rolling restart with a new group.consumer.session.timeout.ms: Kafka reads
    it only at start) are one `broker_config` event per group; the same values again, nothing. Not when radar's
    conf states them."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    telemetry, groups = f"bc-tel-{suffix}", [f"bc-a-{suffix}", f"bc-b-{suffix}"]
    create_topics(bootstrap, {telemetry: 1})
    settings = client_settings(bootstrap)
    poller = EndOffsetsPoller(settings, telemetry, emitter="radar-run@test")
    told = EndOffsetsPoller(settings, telemetry, emitter="radar-run@test", watch_broker_configs=False)
    try:
        sent = [poller.publish_broker_config_change(groups)]
        running = dict(poller.broker_configs or {})
        restarted = {**running, "group.consumer.session.timeout.ms": running["group.consumer.session.timeout.ms"] + 1}
        sent += [poller.publish_broker_configs(restarted, groups), poller.publish_broker_configs(restarted, groups)]
        assert told.publish_broker_config_change(groups) == 0 and told.broker_configs is None
    finally:
        poller.stop()
        told.stop()
    # the embedded broker's own value (conf/local.yml), as DescribeConfigs answers it
    assert running["group.consumer.session.timeout.ms"] == kafka_broker.broker.group_consumer_session_timeout_ms
    assert sent == [0, 2, 0]
    # a reader's first join on the shared broker can take longer than read_records' default 2 s of quiet
    events = [RadarEventV1.model_validate_json(v) for v, _ in read_records(bootstrap, telemetry, idle_s=8.0)]
    assert sorted((e.event, e.group_id) for e in events) == [("broker_config", g) for g in groups]
    assert all(e.details == {name: str(ms) for name, ms in restarted.items()} for e in events)
