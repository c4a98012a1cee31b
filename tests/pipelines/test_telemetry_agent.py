"""The agent never slows or blocks the poll loop: with its telemetry cluster unreachable (a closed port) a real
consumer reads as fast as a plain one, and every event that could not be queued or delivered is counted. It names
the member that overran max.poll.interval.ms, keeps what a zombie tried to commit and who it last was, and runs in
a process where Spark, Delta and Great Expectations cannot be imported."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from rebalance_radar.emitters.agent import RadarConsumer, instrument
from rebalance_radar.transforms.telemetry.json_events import RadarEventV1
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, concurrent_recording
from tests.pipelines.group_member import STATISTICS_INTERVAL_S, create_topics, read_records, start_member
from tests.polling import wait_for

RECORDS = 150_000
TELEMETRY_TIMEOUT_MS = 1000  # message.timeout.ms of the agent's producer towards the unreachable cluster
ZOMBIE_ERRORS = {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_MEMBER_EPOCH", "STALE_MEMBER_EPOCH"}


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends: connections are refused


@pytest.fixture(scope="module")
def loaded_topic(kafka_broker: Any) -> str:
    topic = f"throughput-{time.time_ns()}"
    create_topics(kafka_broker.bootstrap_servers, {topic: 1})
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "linger.ms": 20})
    payload = b"x" * 100
    for _ in range(RECORDS):
        while True:
            try:
                producer.produce(topic, payload)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(30)
    return topic


def poll_loop(consumer: Consumer, topic: str) -> tuple[float, float]:
    """Read the whole topic with poll(); returns (records/s once assigned, the longest gap between polls)."""
    consumer.subscribe([topic])
    seen = 0
    first = None
    longest = 0.0
    deadline = time.monotonic() + 60
    while seen < RECORDS and time.monotonic() < deadline:
        before = time.monotonic()
        message = consumer.poll(1.0)
        after = time.monotonic()
        if message is None or message.error() is not None:
            continue
        if first is None:
            first = after
        else:
            longest = max(longest, after - before)
        seen += 1
    elapsed = time.monotonic() - (first or time.monotonic())
    assert seen == RECORDS, f"read {seen} of {RECORDS}"
    return RECORDS / elapsed, longest


def test_unreachable_telemetry_drops_and_counts_without_slowing_the_loop(
    kafka_broker: Any, loaded_topic: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = {
        "bootstrap.servers": kafka_broker.bootstrap_servers,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
        "statistics.interval.ms": 100,
    }
    plain = Consumer({**base, "group.id": f"plain-{time.time_ns()}", "stats_cb": lambda _s: None})
    plain_rate, plain_gap = poll_loop(plain, loaded_topic)
    plain.close()

    telemetry = {
        "bootstrap.servers": f"127.0.0.1:{closed_port()}",
        "queue.buffering.max.messages": 20,
        "message.timeout.ms": TELEMETRY_TIMEOUT_MS,
        "flush.timeout.s": 0.5,
    }
    agent_consumer = instrument({**base, "group.id": f"agent-{time.time_ns()}"}, telemetry)
    assert isinstance(agent_consumer, RadarConsumer) and isinstance(agent_consumer, Consumer)
    agent_rate, agent_gap = poll_loop(agent_consumer, loaded_topic)
    # Kept, derived: the scenario is an unreachable cluster past message.timeout.ms (what was queued has expired);
    # the agent says so only when asked (poll), so there is nothing to wait for but the timeout itself.
    time.sleep(TELEMETRY_TIMEOUT_MS / 1000 + 0.2)
    agent_consumer.poll(0.1)
    started_close = time.monotonic()
    agent_consumer.close()
    close_s = time.monotonic() - started_close
    agent = agent_consumer.agent
    with capsys.disabled():
        print(
            f"\n[agent throughput] plain {plain_rate:,.0f} rec/s (max poll gap {plain_gap * 1000:.1f} ms); "
            f"with agent, telemetry down {agent_rate:,.0f} rec/s (max poll gap {agent_gap * 1000:.1f} ms); "
            f"events produced {agent.produced}, dropped {agent.dropped}, delivered {agent.delivered}; "
            f"close {close_s:.2f} s"
        )
    assert agent.delivered == 0
    assert agent.dropped > 0  # full queue and expired events are counted, never waited for
    assert agent.produced + agent.dropped >= 10  # stats every 100 ms, commits every 200 ms, the assignment
    # nothing vanishes: every queued event was delivered or, at the latest at close, counted as dropped
    assert agent.delivered + agent.dropped >= agent.produced
    # No poll call waited on telemetry (message.timeout.ms, reconnects): none took longer than poll's own 1 s
    # timeout. Both loops show an occasional fetch stall of up to ~0.9 s here, agent or not.
    assert agent_gap < 1.5
    assert close_s < 5.0


def test_wrapped_consumer_keeps_the_consumer_api(kafka_broker: Any, loaded_topic: str) -> None:
    consumer = RadarConsumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": f"api-{time.time_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "radar.telemetry.topic": f"api-telemetry-{time.time_ns()}",
        }
    )
    consumer.subscribe([loaded_topic])
    messages: list[Any] = []
    deadline = time.monotonic() + 30
    while len(messages) < 10 and time.monotonic() < deadline:
        messages += [m for m in consumer.consume(10, 1.0) if m.error() is None]
    committed = consumer.commit(message=messages[-1], asynchronous=False)
    assert committed[0].offset == messages[-1].offset() + 1
    assert consumer.committed(consumer.assignment(), timeout=10)[0].offset == committed[0].offset
    assert consumer.memberid() and consumer.list_topics(loaded_topic, timeout=10).topics
    consumer.close()
    assert consumer.agent.topic.startswith("api-telemetry-") and consumer.agent.dropped == 0


# --- issue #8: who overran, what a zombie tried to commit, and who it last was ----------------------------------


@dataclass
class OverrunRun:
    """Telemetry of one agent member that overran max.poll.interval.ms several times, and what it printed."""

    events: list[dict[str, Any]]
    lines: list[dict[str, Any]]
    topic: str


@concurrent_recording
def record_overruns(context: RecordingContext) -> OverrunRun:
    """Classic group: B polls steadily (the group never empties, so a zombie commit is refused); C (agent) stalls
    past max.poll.interval.ms after each of its assignments, three times, and commits the partitions it held."""
    bootstrap = context.bootstrap
    tag = f"overrun-{time.time_ns()}"
    topic, group, telemetry = f"work-{tag}", f"group-{tag}", f"telemetry-{tag}"
    create_topics(bootstrap, {topic: 4, telemetry: 1})
    out_dir = context.tmp_path_factory.mktemp("overruns")
    b = start_member(out_dir, "B", bootstrap, topic, group)
    members = [b]
    try:
        b.wait_for("assigned")
        c = start_member(
            out_dir,
            "C",
            bootstrap,
            topic,
            group,
            "--agent-topic",
            telemetry,
            "--max-poll-interval-ms",
            "3000",
            "--session-timeout-ms",
            "3000",
            "--stall-after-s",
            "1",
            "--stall-s",
            "4.5",
            "--stalls",
            "3",
        )
        members.append(c)
        wait_for(
            lambda: sum("commit_error" in line for line in c.lines()) >= 3, 90, f"3 refused commits of C ({c.out})"
        )
        time.sleep(1.5 * STATISTICS_INTERVAL_S)  # kept: the agent's next statistics report, after the last one
    finally:
        for member in members:
            member.stop()
    events = [json.loads(value) for value, _ in read_records(bootstrap, telemetry)]
    return OverrunRun(events, c.lines(), topic)


@pytest.fixture(scope="module")
def overruns(concurrent_recordings: ConcurrentRecordings) -> OverrunRun:
    return concurrent_recordings.result(record_overruns)  # type: ignore[no-any-return]


def _last_assignment(events: list[dict[str, Any]], before: int) -> dict[str, Any]:
    return [e for e in events[:before] if e["event"] == "assignment"][-1]


def test_every_overrun_names_the_member_that_overran(overruns: OverrunRun) -> None:
    """(a) Each poll_timeout names the member id + generation of the membership that stalled (the pair the
    member printed before stalling, from its last assignment), not the rejoin's member id with the old generation."""
    for event in overruns.events:
        RadarEventV1.model_validate(event)  # everything the agent produced is a valid radar.event/1
    stalled_as = [line["stalling_member"] for line in overruns.lines if "stalling" in line]
    indexed = [(i, e) for i, e in enumerate(overruns.events) if e["event"] == "poll_timeout"]
    assert len(stalled_as) == 3 and len(indexed) == 3, (stalled_as, indexed)
    assert [e["member_id"] for _, e in indexed] == stalled_as
    assert len(set(stalled_as)) == 3  # classic: every rejoin after leaving got a new member id
    for i, timeout in indexed:
        assigned = _last_assignment(overruns.events, i)
        assert (timeout["member_id"], timeout["generation"]) == (assigned["member_id"], assigned["generation"])
        assert timeout["error"] == "MAX_POLL_EXCEEDED"
    # the pairs existed: each is an assignment's pair
    pairs = {(e["member_id"], e["generation"]) for e in overruns.events if e["event"] == "assignment"}
    assert {(e["member_id"], e["generation"]) for _, e in indexed} <= pairs


def test_a_stalled_poll_reports_the_background_heartbeats_until_the_overrun(overruns: OverrunRun) -> None:
    """While the application stalls (no poll: no statistics), librdkafka's background thread keeps heartbeating
    until max.poll.interval.ms (3 s here) runs out: the agent says so (`liveness=background`) for the member that
    stalled, with the poll's age, and claims nothing a second past the overrun (librdkafka has left by then)."""
    stalled_as = [line["stalling_member"] for line in overruns.lines if "stalling" in line]
    background = [
        e for e in overruns.events if e["event"] == "heartbeat" and e["details"].get("liveness") == "background"
    ]
    # every stalled membership is reported; on a loaded host a membership whose own poll loop was only starved for a
    # moment (a rejoin after an overrun) is reported too, rightly
    assert set(stalled_as) <= {e["member_id"] for e in background}, background
    assert len([e for e in background if e["member_id"] in stalled_as]) >= len(stalled_as)
    ages = [int(e["details"]["poll_age_ms"]) for e in background]
    assert all(250 <= age < 4000 for age in ages), ages  # 1 s statistics: from a quarter second on


@dataclass
class HungRevocation:
    """Telemetry of a KIP-848 agent member whose revocation callback hung, and when (its own clock) it hung."""

    events: list[dict[str, Any]]
    member_id: str
    hung_from_ms: int
    hung_s: float


HUNG_REVOKE_S = 5.0


@concurrent_recording
def record_hung_revocation(context: RecordingContext) -> HungRevocation:
    """KIP-848 group: A (agent) holds 4 partitions; B joins, and A's revocation callback hangs 5 s (inside poll, as
    confluent-kafka serves callbacks), well within its 10 s max.poll.interval.ms: the coordinator keeps it."""
    bootstrap = context.bootstrap
    tag = f"hung-revoke-{time.time_ns()}"
    topic, group, telemetry = f"work-{tag}", f"group-{tag}", f"telemetry-{tag}"
    create_topics(bootstrap, {topic: 4, telemetry: 1})
    out_dir = context.tmp_path_factory.mktemp("hung-revoke")
    options = ("--max-poll-interval-ms", "10000", "--block-revoke-s", str(HUNG_REVOKE_S))
    a = start_member(out_dir, "A", bootstrap, topic, group, "--agent-topic", telemetry, *options, protocol="consumer")
    members = [a]
    try:
        a.wait_for("assigned", 60)
        members.append(start_member(out_dir, "B", bootstrap, topic, group, protocol="consumer"))
        a.wait_for("blocking_revoke", 60)
        hung_from_ms = time.time_ns() // 1_000_000
        a.wait_for("revoked", HUNG_REVOKE_S + 30)
        time.sleep(1.5 * STATISTICS_INTERVAL_S)
    finally:
        for member in members:
            member.stop()
    events = [json.loads(value) for value, _ in read_records(bootstrap, telemetry)]
    member_id = next(line["member"] for line in a.lines() if "assigned" in line)  # KIP-848: the client's for good
    return HungRevocation(events, member_id, hung_from_ms, HUNG_REVOKE_S)


@pytest.fixture(scope="module")
def hung_revocation(concurrent_recordings: ConcurrentRecordings) -> HungRevocation:
    return concurrent_recordings.result(record_hung_revocation)  # type: ignore[no-any-return]


def test_a_hung_revocation_callback_reports_the_background_heartbeats(hung_revocation: HungRevocation) -> None:
    """The application's callback runs inside poll, yet librdkafka counts it as time away from poll and keeps
    heartbeating: the agent reports background heartbeats through the hang (no statistics are served meanwhile),
    so radar never reads the hang as a member whose heartbeats stopped (seen in the demo before: a
    `heartbeat_at_risk` for a member the coordinator later fenced for its rebalance timeout, not its session)."""
    run = hung_revocation
    hang = (run.hung_from_ms, run.hung_from_ms + int(run.hung_s * 1000) - 500)
    beats = sorted(e["ts"] for e in run.events if e["event"] == "heartbeat" and e["member_id"] == run.member_id)
    during = [ts for ts in beats if hang[0] <= ts <= hang[1]]
    assert during, (hang, beats)
    gaps = [later - earlier for earlier, later in zip([hang[0], *during], [*during, hang[1]], strict=True)]
    assert max(gaps) <= 2.5 * STATISTICS_INTERVAL_S * 1000, (gaps, hang, beats)
    background = [
        e
        for e in run.events
        if e["event"] == "heartbeat" and e["details"].get("liveness") == "background" and hang[0] <= e["ts"] <= hang[1]
    ]
    assert background and max(int(e["details"]["poll_age_ms"]) for e in background) >= 2000, background


def test_zombie_commit_keeps_its_offsets_and_who_it_last_was(overruns: OverrunRun) -> None:
    """(b) a synchronous commit that raised carries the partitions and offsets it tried to commit; (c) commit
    events name the member id and generation last held while assigned, whatever librdkafka holds by then."""
    refused = [line["commit_error"] for line in overruns.lines if "commit_error" in line]
    indexed = [(i, e) for i, e in enumerate(overruns.events) if e["event"] == "commit_failed"]
    assert len(indexed) >= 3 and len(refused) >= 3
    for i, failed in indexed:
        details = failed["details"]
        assert failed["error"] in ZOMBIE_ERRORS and details["trigger"] == "sync"
        assigned = _last_assignment(overruns.events, i)
        partitions = details["partitions"].split(",")
        assert partitions and set(partitions) <= {f"{overruns.topic}-{p}" for p in range(4)}
        assert details["offsets"].split(",") == ["0"] * len(partitions)  # what the member committed: offset 0
        assert details["partitions"] == assigned["details"]["partitions"]  # the partitions it still held
        assert (details["last_member_id"], details["last_generation"]) == (
            assigned["member_id"],
            str(assigned["generation"]),
        )
    commits = [e for e in overruns.events if e["event"] == "commit"]
    assert commits and all(
        (e["details"]["last_member_id"], e["details"]["last_generation"]) == (e["member_id"], str(e["generation"]))
        for e in commits
    )


# --- the agent without Spark, Delta or Great Expectations ----------------------------------------------------

NO_SPARK_SCRIPT = """
import importlib.abc, json, sys, time

BLOCKED = ("pyspark", "delta", "great_expectations", "pipelines")


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: the agent must not need it")
        return None


sys.meta_path.insert(0, Blocker())
from rebalance_radar.emitters.agent import RadarConsumer

bootstrap, topic, telemetry = sys.argv[1:4]
consumer = RadarConsumer({
    "bootstrap.servers": bootstrap, "group.id": topic + "-group", "auto.offset.reset": "earliest",
    "enable.auto.commit": False, "statistics.interval.ms": 200, "radar.telemetry.topic": telemetry,
})
consumer.subscribe([topic])
seen, deadline = [], time.monotonic() + 30
while len(seen) < 20 and time.monotonic() < deadline:
    message = consumer.poll(0.5)
    if message is not None and message.error() is None:
        seen.append(message)
committed = consumer.commit(message=seen[-1], asynchronous=False)
consumer.close()
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"pyspark", "delta", "great_expectations", "pipelines"})
print(json.dumps({"read": len(seen), "committed": committed[0].offset, "produced": consumer.agent.produced,
                  "delivered": consumer.agent.delivered, "dropped": consumer.agent.dropped, "loaded": loaded}))
"""


def test_agent_runs_in_a_process_without_spark_delta_or_great_expectations(kafka_broker: Any, tmp_path: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic, telemetry = f"no-spark-{time.time_ns()}", f"no-spark-telemetry-{time.time_ns()}"
    create_topics(bootstrap, {topic: 1, telemetry: 1})
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce(topic, f"r{i}".encode())
    assert producer.flush(30) == 0
    script = tmp_path / "no_spark.py"
    script.write_text(NO_SPARK_SCRIPT)
    root = str(Path(__file__).resolve().parents[2])  # this checkout, whatever is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(script), bootstrap, topic, telemetry], capture_output=True, text=True, timeout=90, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["read"] == 20 and result["committed"] == 20 and result["loaded"] == []
    assert result["dropped"] == 0 and result["delivered"] == result["produced"] > 0
    kinds = {json.loads(value)["event"] for value, _ in read_records(bootstrap, telemetry, idle_s=1.0)}
    assert {"assignment", "commit"} <= kinds
