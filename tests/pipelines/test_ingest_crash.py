"""Exactly once under kill -9: `radar run` in a subprocess is SIGKILLed at random moments while records keep
arriving (in the suite's lane, beside the session's own tests); after a restart and a final catch-up every Kafka
record is in bronze and silver exactly once."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import REPO_ROOT, RadarConfig
from rebalance_radar.pipelines.local.broker import EmbeddedKafka
from rebalance_radar.pipelines.stages.ingest import OFFSETS_QUERY, TELEMETRY_QUERY
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import (
    CLOCK_TICKS,
    HEARTBEAT_EVENTS,
    OFFSETS_RAW,
    QUARANTINE,
    TELEMETRY_RAW,
    TELEMETRY_UNRECOGNISED,
)
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, lane_run
from tests.pipelines.ingest_support import (
    coordinates,
    create_topic,
    duplicates,
    end_offsets,
    isolated_config,
    kafka_coordinates,
    offsets_silver_coordinates,
    run_kafka_ingest_now,
    table,
    wait_for,
)

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow]

KILLS = int(os.environ.get("RADAR_CRASH_CYCLES", "2"))  # the suite: 2; an evidence run: RADAR_CRASH_CYCLES=20
STARTUP_TIMEOUT_S = 240.0  # a cold Spark JVM on a busy 2-core machine
STABILIZED = (
    "[2025-11-22 02:53:24,388] INFO [GroupCoordinator 1]: Stabilized group crash-{n} generation {n} "
    "(__consumer_offsets-12) with 2 members (kafka.coordinator.group.GroupCoordinator)"
)


class Traffic:
    """Keeps both sources growing: telemetry records produced, and a group committing offsets into
    `__consumer_offsets`, until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.stop_requested = threading.Event()
        self.produced = 0
        self.commits = 0
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self.run, name="traffic", daemon=True)

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        group = f"crash-{uuid.uuid4().hex[:8]}"
        committer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            while not self.stop_requested.is_set():
                for _ in range(10):
                    n = self.produced
                    line = STABILIZED.format(n=n).encode() if n % 3 else b"\x00\xff\xfe noise %d \x81" % n
                    producer.produce(self.topic, value=line, partition=n % 2)
                    self.produced += 1
                producer.poll(0)
                offset = TopicPartition(self.topic, self.commits % 2, self.commits)
                committer.commit(offsets=[offset], asynchronous=False)
                self.commits += 1
                time.sleep(0.05)
        except Exception as error:  # surfaced by the test, not swallowed
            self.errors.append(repr(error))
        finally:
            producer.flush(30)
            committer.close()

    def __enter__(self) -> Traffic:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop_requested.set()
        self.thread.join(60)


def delta_commits(config: RadarConfig) -> int:
    """Commits in offsets_raw's Delta log: grows once per micro-batch that reached the table."""
    location = TableCatalog(config).location(OFFSETS_RAW)
    assert location is not None
    return len(list((location / "_delta_log").glob("*.json")))  # 0 before the table exists


def kafka_checkpoint(config: RadarConfig) -> Path:
    """`radar run`'s checkpoint: one per Kafka cluster id (`pipelines.stages.ingest.kafka_checkpoint_name`)."""
    (found,) = config.checkpoint_dir.glob(f"kafka-{config.cluster}-*")
    return found


def batch_in_flight(config: RadarConfig) -> bool:
    """The offsets query had planned a batch it had not committed: the kill landed mid-batch."""
    if not config.checkpoint_dir.is_dir():
        return False
    query = kafka_checkpoint(config) / OFFSETS_QUERY
    planned = {p.name for p in (query / "offsets").glob("[0-9]*")}
    done = {p.name for p in (query / "commits").glob("[0-9]*")}
    return bool(planned - done)


def checkpoint_ends(config: RadarConfig, query: str, topic: str) -> dict[tuple[str, int], int]:
    """Where a query's last planned batch ends in `topic` (exclusive offsets), from its checkpoint."""
    offsets = kafka_checkpoint(config) / query / "offsets"
    last = max(offsets.glob("[0-9]*"), key=lambda p: int(p.name))
    source = json.loads(last.read_text().splitlines()[2])
    return {(topic, int(partition)): int(end) for partition, end in source[topic].items()}


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    try:
        return [child.pid for child in psutil.Process(pid).children()]
    except psutil.NoSuchProcess:
        return []


def kill_radar(pid: int) -> None:
    """SIGKILL `radar run`'s process group and, at the same instant, its Spark JVM's: the JVM runs in a session of
    its own (so a terminal's Ctrl-C reaches only radar), and left alone it would exit by itself, running its
    shutdown hooks, when its parent's pipe closes; a crash gives it no such chance."""
    groups = []
    for child in child_pids(pid):
        with contextlib.suppress(ProcessLookupError):  # a child that just ended
            if os.getpgid(child) == child:
                groups.append(child)
    os.killpg(pid, signal.SIGKILL)
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


@dataclass(frozen=True)
class Kills:
    """What the kill loop left: the runs' config and telemetry topic, the traffic it made, when it killed."""

    config: RadarConfig
    telemetry_topic: str
    produced: int
    commits: int
    moments: list[tuple[float, bool]]


@lane_run
def kill_radar_runs(context: RecordingContext) -> Kills:
    """`radar run` started and SIGKILLed `KILLS` times while records keep arriving, in the suite's lane
    (`concurrent_recordings.lane_run`): the catch-up and the counts are the test's, on the session's Spark."""
    bootstrap = context.bootstrap
    folder = context.tmp_path_factory.mktemp("ingest-crash")
    telemetry_topic = f"radar.telemetry.crash-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, telemetry_topic, 2)
    config = isolated_config(context.config, folder / "data", telemetry_topics=(telemetry_topic,))
    env = os.environ | {
        "RADAR__KAFKA__BOOTSTRAP_SERVERS": bootstrap,
        "RADAR__KAFKA__TELEMETRY_TOPICS": f"[{telemetry_topic}]",
        "RADAR__KAFKA__MAX_OFFSETS_PER_TRIGGER": "300",  # many small batches: more moments to be killed in
        "RADAR__INGEST__TRIGGER_INTERVAL": "1 second",  # back to back, not one small batch per 10 s default trigger
        # the truth below counts the telemetry it produced and radar's clock ticks; the end-offset polls radar run
        # also publishes there are the lag tests' subject, not this one's
        "RADAR__LAG__ENABLED": "false",
    }
    command = [
        sys.executable,
        "-m",
        "rebalance_radar.pipelines.cli",
        "--conf",
        "conf/local.yml",
        "--data-dir",
        str(config.data_dir),
        "run",
    ]
    moments: list[tuple[float, bool]] = []
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with Traffic(bootstrap, telemetry_topic) as traffic:
            for attempt in range(KILLS):
                log_path = folder / f"run-{attempt}.log"
                with log_path.open("wb") as log:
                    process = subprocess.Popen(
                        command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                    )
                processes.append(process)
                if attempt == 0:  # first: a random moment after a batch reached the tables
                    wait_for(
                        lambda: process.poll() is not None or delta_commits(config) > 1,  # noqa: B023
                        STARTUP_TIMEOUT_S,
                        f"run {attempt} to write a batch (log: {log_path})",
                    )
                    delay = random.uniform(0.0, 3.0)
                else:  # then: a random moment once the queries run, typically inside the replayed batch
                    wait_for(
                        lambda: process.poll() is not None or "ingesting from" in log_path.read_text(),  # noqa: B023
                        STARTUP_TIMEOUT_S,
                        f"run {attempt} to start its queries (log: {log_path})",
                    )
                    delay = random.uniform(2.0, 15.0)
                assert process.poll() is None, log_path.read_text()[-3000:]
                time.sleep(delay)
                kill_radar(process.pid)  # the Python driver and its Spark JVM, no shutdown hooks
                process.wait(30)
                moments.append((round(delay, 2), batch_in_flight(config)))
    finally:
        for process in processes:
            if process.poll() is None:
                kill_radar(process.pid)
                process.wait(30)
    assert not traffic.errors, traffic.errors
    return Kills(config, telemetry_topic, traffic.produced, traffic.commits, moments)


@pytest.fixture(scope="module")
def kills(concurrent_recordings: ConcurrentRecordings) -> Kills:
    return concurrent_recordings.result(kill_radar_runs, timeout_s=1200)  # type: ignore[no-any-return]


def test_sigkill_loses_and_duplicates_nothing(spark: SparkSession, kafka_broker: EmbeddedKafka, kills: Kills) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    config, telemetry_topic = kills.config, kills.telemetry_topic
    print(
        f"kills (seconds after a batch, batch in flight): {kills.moments}; "
        f"{kills.produced} telemetry records, {kills.commits} commits"
    )

    # restart and catch up: the same checkpoint, to the end of both topics
    written = end_offsets(bootstrap, ["__consumer_offsets", telemetry_topic])
    run_kafka_ingest_now(
        spark, config, bootstrap, checkpoint_name=kafka_checkpoint(config).name, telemetry_topics=(telemetry_topic,)
    )
    # Records keep arriving in __consumer_offsets (the ingest's own driver group, expiring killed members): the
    # truth is everything up to where the checkpoints end, and they end at or after everything written before.
    reached = checkpoint_ends(config, OFFSETS_QUERY, "__consumer_offsets")
    reached |= checkpoint_ends(config, TELEMETRY_QUERY, telemetry_topic)
    assert all(reached[key] >= end for key, end in written.items()), (reached, written)
    truth = kafka_coordinates(bootstrap, ["__consumer_offsets", telemetry_topic], until=reached)
    offsets_truth = {c for c in truth if c[0] == "__consumer_offsets"}
    telemetry_truth = {c for c in truth if c[0] == telemetry_topic}
    # `radar run` also writes its clock ticks (radar.clock/1) to the first telemetry topic: they land in clock_ticks
    ticks = coordinates(table(spark, config, CLOCK_TICKS).where(F.col("src_topic") == telemetry_topic))
    assert duplicates(ticks) == [] and set(ticks) <= telemetry_truth
    assert len(telemetry_truth) == kills.produced + len(ticks) and len(offsets_truth) >= kills.commits

    bronze = coordinates(table(spark, config, OFFSETS_RAW)) + coordinates(table(spark, config, TELEMETRY_RAW))
    assert duplicates(bronze) == []
    assert set(bronze) == set(truth)

    offsets_silver = offsets_silver_coordinates(spark, config)
    assert duplicates(offsets_silver) == []
    assert set(offsets_silver) == offsets_truth

    events = coordinates(table(spark, config, HEARTBEAT_EVENTS).where(F.col("src_topic") == telemetry_topic))
    garbage = coordinates(table(spark, config, QUARANTINE).where(F.col("src_topic") == telemetry_topic))
    counted = table(spark, config, TELEMETRY_UNRECOGNISED).where(F.col("src_topic") == telemetry_topic)
    unrecognised = counted.agg(F.sum("records")).first()[0] or 0
    assert duplicates(events + garbage) == []
    assert len(events) + len(garbage) + unrecognised + len(ticks) == len(telemetry_truth)
    assert set(events) | set(garbage) <= telemetry_truth
    assert len(events) == sum(1 for n in range(kills.produced) if n % 3)
