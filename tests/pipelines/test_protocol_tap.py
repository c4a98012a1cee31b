"""Evidence for the protocol tap: real clients talk to a real broker through it (the broker advertises the tap), the
tap mirrors their group calls as `radar.frame/1` exchanges, and those parse into the group's joins, syncs,
heartbeats, commits and leaves with the right members and generations/epochs — while every record still arrives."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from rebalance_radar.emitters.agent import parse_group_metadata
from rebalance_radar.emitters.protocol_tap import FrameScanner, advertise_through
from rebalance_radar.pipelines.local.broker import EmbeddedKafka, free_loopback_port
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, concurrent_recording
from tests.pipelines.group_member import create_topics

RECORDS = 400
TAP_START_TIMEOUT_S = 20.0


@dataclass
class Tapped:
    """A broker that advertises a tap, the tap process in front of it, and where the tap mirrors to."""

    broker: EmbeddedKafka
    tap: subprocess.Popen[str]
    tap_address: str
    telemetry_bootstrap: str
    telemetry_topic: str


@dataclass
class Member:
    """One in-process consumer and what it saw: assignments, consumed values, identity at each commit."""

    name: str
    consumer: Consumer
    assignments: list[list[int]] = field(default_factory=list)
    values: list[bytes] = field(default_factory=list)
    commit_identities: list[Any] = field(default_factory=list)
    member_ids: set[str] = field(default_factory=set)

    def subscribe(self, topic: str) -> None:
        def assigned(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            self.assignments.append(sorted(p.partition for p in partitions))
            self.member_ids.add(consumer.memberid())

        self.consumer.subscribe([topic], on_assign=assigned)

    def step(self, consumer_protocol: bool = False) -> None:
        """One short consume; a non-empty batch is committed synchronously (the generation/epoch is noted)."""
        batch = [m for m in self.consumer.consume(100, 0.05) if m.error() is None]
        if not batch:
            return
        self.values += [m.value() for m in batch]
        identity = parse_group_metadata(self.consumer.consumer_group_metadata(), consumer_protocol)
        self.consumer.commit(asynchronous=False)
        self.commit_identities.append(identity)
        if identity is not None and identity.member_id:
            self.member_ids.add(identity.member_id)


def consumer_config(bootstrap: str, group: str, name: str, protocol: str) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "log_level": 3,
    }
    if protocol == "classic":
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    return config


def poll_until(members: list[Member], done: Any, timeout_s: float, consumer_protocol: bool = False) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"timed out: {[(m.name, m.assignments, len(m.values)) for m in members]}"
        for member in members:
            member.step(consumer_protocol)


def produce(bootstrap: str, topic: str, tag: str) -> set[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = {f"{tag}-{i}".encode() for i in range(RECORDS)}
    for i, value in enumerate(sorted(values)):
        producer.produce(topic, value, partition=i % 2)
    assert producer.flush(30) == 0
    return values


def read_mirrored(bootstrap: str, topic: str, expected: int, timeout_s: float = 30.0) -> list[tuple[bytes, int]]:
    """The telemetry topic's records (one partition, assigned: no group join to wait for), and 1 s more."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.time_ns()}", "log_level": 3})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    records: list[tuple[bytes, int]] = []
    deadline = time.monotonic() + timeout_s
    extra_until = None
    while time.monotonic() < deadline and (extra_until is None or time.monotonic() < extra_until):
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            records.append((message.value(), message.timestamp()[1]))
        if extra_until is None and len(records) >= expected:
            extra_until = time.monotonic() + 1.0  # anything beyond what the tap says it delivered shows up too
    consumer.close()
    return records


@contextmanager
def tapped_broker(context: RecordingContext) -> Iterator[Tapped]:
    """A second embedded broker advertising a tap port, the tap (`radar tap`, a subprocess), telemetry on the
    session broker."""
    host = context.config.broker.host
    tap_port = free_loopback_port(host)
    telemetry_topic = f"tap-telemetry-{time.time_ns()}"
    create_topics(context.bootstrap, {telemetry_topic: 1})
    broker = EmbeddedKafka(
        advertise_through(context.config.broker, host, tap_port),
        context.tmp_path_factory.mktemp("tapped"),
        spark=context.config.spark,
        progress=context.progress,
    )
    tap: subprocess.Popen[str] | None = None
    try:
        broker.start()
        tap = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rebalance_radar.pipelines.cli",
                "tap",
                "--listen",
                f"{host}:{tap_port}",
                "--broker",
                broker.bootstrap_servers,
                "--bootstrap",
                context.bootstrap,
                "--topic",
                telemetry_topic,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert tap.stdout is not None
        first = tap.stdout.readline()
        assert "listening" in first, f"tap did not start: {first}{tap.stdout.read() if tap.poll() else ''}"
        yield Tapped(broker, tap, f"{host}:{tap_port}", context.bootstrap, telemetry_topic)
    finally:
        if tap is not None and tap.poll() is None:
            tap.kill()
            tap.wait(10)
        broker.stop()


@dataclass
class TapRun:
    """Everything the scenario produced: the members, the tap's exit stats, the parsed mirrored events."""

    classic_group: str
    kip848_group: str
    a: Member
    b: Member
    k: Member
    produced: set[bytes]
    generation_after_leave: int
    stats: dict[str, Any]
    records: int
    events: list[Any]
    unrecognised: list[str]

    def of(self, group: str, kind: str, member_id: str | None = None) -> list[Any]:
        return [
            e
            for e in self.events
            if e.group_id == group and e.event.value == kind and (member_id is None or e.member_id == member_id)
        ]


@concurrent_recording
def record_tap_run(context: RecordingContext) -> TapRun:
    """Members bootstrapping through the tap in front of a second broker: classic join, sync, commits and leave,
    then a KIP-848 member; the tap's exit stats and what it mirrored to the session broker's telemetry topic."""
    with tapped_broker(context) as tapped:
        return tapped_run(tapped)


@pytest.fixture(scope="module")
def run(concurrent_recordings: ConcurrentRecordings) -> TapRun:
    return concurrent_recordings.result(record_tap_run)  # type: ignore[no-any-return]


def tapped_run(tapped: Tapped) -> TapRun:
    tag = f"tap-{time.time_ns()}"
    topic, classic_group, kip848_group = f"work-{tag}", f"classic-{tag}", f"kip848-{tag}"
    bootstrap = tapped.tap_address  # every client bootstraps through the tap and is sent back to it
    create_topics(bootstrap, {topic: 2})
    a = Member("tap-a", Consumer(consumer_config(bootstrap, classic_group, "tap-a", "classic")))
    b = Member("tap-b", Consumer(consumer_config(bootstrap, classic_group, "tap-b", "classic")))
    k = Member("tap-k", Consumer(consumer_config(bootstrap, kip848_group, "tap-k", "consumer")))
    members = [a, b, k]
    try:
        a.subscribe(topic)
        poll_until([a], lambda: a.assignments, 30)
        b.subscribe(topic)
        poll_until([a, b], lambda: a.assignments[-1] and b.assignments and b.assignments[-1], 30)
        produced = produce(bootstrap, topic, tag)
        poll_until([a, b], lambda: len(a.values) + len(b.values) >= RECORDS, 30)
        settle = time.monotonic() + 1.5  # three heartbeat intervals
        poll_until([a, b], lambda: time.monotonic() > settle, 10)
        before_leave = len(a.assignments)
        b.consumer.close()  # LeaveGroup; a is given both partitions in the next generation
        members.remove(b)
        poll_until([a], lambda: len(a.assignments) > before_leave and a.assignments[-1] == [0, 1], 30)
        identity = parse_group_metadata(a.consumer.consumer_group_metadata(), False)
        assert identity is not None and identity.generation is not None
        generation_after_leave = identity.generation
        a.consumer.close()
        members.remove(a)

        k.subscribe(topic)
        poll_until([k], lambda: len(k.values) >= RECORDS, 45, consumer_protocol=True)
        settle = time.monotonic() + 2.5  # past the broker's 1 s group.consumer.heartbeat.interval.ms, twice
        poll_until([k], lambda: time.monotonic() > settle, 10, consumer_protocol=True)
        k.consumer.close()
        members.remove(k)
    finally:
        for member in members:
            member.consumer.close()
    tapped.tap.terminate()
    output, _ = tapped.tap.communicate(timeout=30)
    stopped = [json.loads(line) for line in output.splitlines() if line.startswith('{"stopped"')]
    assert stopped, f"tap printed no exit stats: {output[-2000:]}"
    events: list[Any] = []
    unrecognised: list[str] = []
    records = read_mirrored(tapped.telemetry_bootstrap, tapped.telemetry_topic, stopped[0]["stopped"]["delivered"])
    for value, stamp in records:
        outcome = parse_telemetry_record(value, stamp)
        events.extend(outcome.events)
        if not outcome.recognised:
            unrecognised.append(outcome.reason or "")
    return TapRun(
        classic_group,
        kip848_group,
        a,
        b,
        k,
        produced,
        generation_after_leave,
        stopped[0]["stopped"],
        len(records),
        events,
        unrecognised,
    )


def test_scanner_finds_the_same_frames_in_any_chunking() -> None:
    frames = [b"\x00\x00\x00\x0a" + bytes([0, 12, 0, 4, 0, 0, 0, n]) + b"zz" for n in range(3)]
    frames.insert(1, b"\x00\x00\x00\x08" + bytes([0, 1, 0, 4, 0, 0, 0, 9]))  # Fetch: skipped, not kept
    stream = b"".join(frames)
    for chunk in (1, 3, 7, len(stream)):
        kept: list[bytes] = []
        scanner = FrameScanner(8, lambda head: head[:2] == b"\x00\x0c", kept.append)
        for start in range(0, len(stream), chunk):
            scanner.feed(stream[start : start + chunk])
        assert kept == [frames[0], frames[2], frames[3]] and not scanner.broken


def test_forwarded_traffic_is_unaffected(run: TapRun) -> None:
    assert set(run.a.values) | set(run.b.values) == run.produced
    assert set(run.k.values) == run.produced and len(run.k.values) == RECORDS
    assert run.stats["bytes_to_client"] > RECORDS * 10 and run.stats["requests"] > run.stats["group_requests"] > 0


def test_every_group_exchange_is_mirrored_delivered_and_parsed(run: TapRun, capsys: pytest.CaptureFixture[str]) -> None:
    stats = run.stats
    with capsys.disabled():
        kinds = sorted({f"{e.details['api']}:{e.event.value}" for e in run.events})
        print(f"\n[protocol tap] {json.dumps(stats)}\n[protocol tap] events: {', '.join(kinds)}")
    assert stats["dropped"] == 0 and stats["desynced"] == 0 and stats["oversize"] == 0
    assert stats["delivered"] == stats["produced"] == run.records > 0
    assert not run.unrecognised, run.unrecognised[:5]
    assert {"JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "LeaveGroup", "ConsumerGroupHeartbeat"} <= set(
        stats["by_api"]
    )
    assert {e.source.value for e in run.events} == {"protocol"}
    assert all(e.details["observed"] == "exchange" for e in run.events)


def test_classic_join_sync_heartbeat_commit_and_leave(run: TapRun) -> None:
    group = run.classic_group
    (a_id,) = run.a.member_ids
    (b_id,) = run.b.member_ids
    joins = run.of(group, "join")
    assert {a_id, b_id} <= {e.member_id for e in joins}
    assert all(e.client_id in ("tap-a", "tap-b") for e in joins)
    generations = sorted({e.generation for e in joins if e.generation is not None})
    assert len(generations) >= 3 and generations[-1] == run.generation_after_leave  # a; a+b; a after b left
    for member_id in (a_id, b_id):
        synced = {e.generation for e in run.of(group, "sync", member_id)}
        assigned = run.of(group, "assignment", member_id)
        assert synced and assigned and {e.generation for e in assigned} <= synced
        assert all(e.details["assignment"].startswith("work-") for e in assigned)
    (after_leave,) = [e for e in run.of(group, "assignment", a_id) if e.generation == run.generation_after_leave]
    assert after_leave.details["assigned_partitions"] == "2"
    beats = run.of(group, "heartbeat")
    assert {a_id, b_id} <= {e.member_id for e in beats} and all(e.generation in generations for e in beats)
    for member in (run.a, run.b):
        commits = run.of(group, "commit", next(iter(member.member_ids)))
        noted = {identity.generation for identity in member.commit_identities if identity is not None}
        assert commits and {e.generation for e in commits} == noted  # the generation on the wire = the client's
    assert run.of(group, "leave", b_id) and run.of(group, "leave", a_id)
    # Members learn of a rebalance from their heartbeat; a first JoinGroup is answered with a member id to use;
    # while the coordinator moves or loads (fresh broker), clients are told to look it up again.
    coordinator_moving = {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"}
    assert {e.error for e in run.of(group, "heartbeat_failed")} <= {"REBALANCE_IN_PROGRESS"} | coordinator_moving
    assert {e.error for e in run.of(group, "join_failed")} <= {"MEMBER_ID_REQUIRED"} | coordinator_moving
    assert not run.of(group, "commit_failed")


def test_kip848_heartbeats_join_with_epoch_zero_and_leave_with_minus_one(run: TapRun) -> None:
    group = run.kip848_group
    (k_id,) = run.k.member_ids
    (join,) = run.of(group, "join")
    assert join.member_id == k_id and join.details["sent_member_epoch"] == "0" and join.member_epoch >= 1
    assert join.details["api"] == "ConsumerGroupHeartbeat" and join.client_id == "tap-k"
    beats = run.of(group, "heartbeat", k_id)
    assert len(beats) >= 2 and all(e.member_epoch >= join.member_epoch for e in beats)
    assigned = run.of(group, "assignment", k_id)
    assert assigned and max(int(e.details["assigned_partitions"]) for e in assigned) == 2
    epochs = {identity.member_epoch for identity in run.k.commit_identities if identity is not None}
    commits = run.of(group, "commit", k_id)
    assert commits and {e.generation for e in commits} == epochs  # OffsetCommit carries the member epoch
    (leave,) = run.of(group, "leave", k_id)
    assert leave.details["sent_member_epoch"] == "-1"
