"""radar on a real Spark standalone cluster (a Master and two one-core Workers from pyspark's `bin/spark-class`), as
its users run it: the commands as they type them, `RADAR__SPARK__MASTER=spark://...`, the connector jars and radar's
own Python reaching the executors by Spark's own means.

- A replay writes, table by table, the rows the same replay writes on the local master, detections included.
- `radar run` against a broker detects a member stalled past its session while one Worker is killed mid-run: Spark
  reschedules the lost tasks on the other, and every commit of the group lands once.

Both run in the suite's lane (`concurrent_recordings.lane_run`: subprocesses beside the session's own tests), on one
cluster; the tests then compare and count what they wrote with the session's Spark.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.local.broker import EmbeddedKafka
from rebalance_radar.pipelines.local.standalone_cluster import StandaloneCluster
from rebalance_radar.pipelines.stages.ingest import OFFSETS_QUERY
from rebalance_radar.pipelines.stages.streams import failure_log_of
from rebalance_radar.pipelines.storage.delta_log import dataset_of
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import (
    DETECTIONS,
    DETECTOR_OUTPUT,
    OFFSET_COMMITS,
    OFFSETS_RAW,
    TABLES,
    TableSchema,
)
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, lane_run
from tests.pipelines.group_member import CoordinatorLog, create_topics, start_member
from tests.pipelines.incident_tables import IncidentTables, incident_scenario
from tests.pipelines.ingest_support import (
    coordinates,
    duplicates,
    end_offsets,
    isolated_config,
    kafka_coordinates,
    offsets_silver_coordinates,
    table,
    wait_for,
)
from tests.pipelines.radar_run_process import RadarRun, radar_command
from tests.suite_jvm import QUICK_JAVA_OPTIONS

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

RUN_TIMEOUT_S = 300.0  # a cold driver and two executors on a busy 2-core machine
# The whole replay, the cluster's first jobs among them, beside the session's own replay of the same dump: it ran
# past RUN_TIMEOUT_S while the suite's recordings loaded the host.
REPLAY_TIMEOUT_S = 600.0
# The live run's detection, on the one 1-core Worker left after the kill, its four queries beside the suite's own
# work: in a CI run its telemetry query's batches outlasted the run's default wait (docs/local-stack-traps.md).
DETECTION_TIMEOUT_S = 360.0
PROCESSING_TIME_COLUMNS = {DETECTOR_OUTPUT.name: ("staged_at",)}
"""Columns stamped with the wall clock of the micro-batch that wrote them: the same row, another time."""


def cluster_env(cluster: StandaloneCluster, **overrides: str) -> dict[str, str]:
    return os.environ | {"RADAR__SPARK__MASTER": cluster.url, **overrides}


def table_rows(config: RadarConfig, schema: TableSchema) -> Counter[tuple[Any, ...]]:
    """Every row of a local table, as a multiset, less its processing-time columns; a dump file's path is its name
    (the two replays stage their input under their own data dirs)."""
    path = TableCatalog(config).location(schema)
    if path is None or not (path / "_delta_log").is_dir():
        return Counter()
    dataset = dataset_of(path)  # in the driver: both sides read alike, with no Spark job per table
    assert dataset is not None, f"{path}: delta-rs does not read this table's files as its rows"
    dropped = PROCESSING_TIME_COLUMNS.get(schema.name, ())
    found: Counter[tuple[Any, ...]] = Counter()
    for values in dataset.to_table(columns=[c for c in dataset.schema.names if c not in dropped]).to_pylist():
        if values.get("src_file"):
            values["src_file"] = Path(values["src_file"]).name
        found[tuple(sorted((key, repr(value)) for key, value in values.items()))] += 1
    return found


@dataclass
class Outcome:
    """One part of the lane run: what it left for the test, or the exception that ended it (raised by the test)."""

    value: Any = None
    failure: BaseException | None = None

    def result(self) -> Any:
        if self.failure is not None:
            raise self.failure
        return self.value


@dataclass(frozen=True)
class LiveRun:
    """What `radar run` on the cluster left: its config, group, exit, output and the Workers alive at its end."""

    config: RadarConfig
    group: str
    returncode: int | None
    output: str
    workers_left: int


@dataclass(frozen=True)
class ClusterRuns:
    replay: Outcome  # (returncode, stderr, data dir)
    live: Outcome  # LiveRun


@lane_run
def run_on_the_cluster(context: RecordingContext) -> ClusterRuns:
    """Both commands on one standalone cluster, in the lane (`concurrent_recordings.lane_run`): the replay of the
    incident dump, then `radar run` against the run's broker with a Worker killed mid-run."""
    folder = context.tmp_path_factory.mktemp("cluster-runs")
    with StandaloneCluster(
        context.tmp_path_factory.mktemp("spark-cluster"), daemon_java_options=QUICK_JAVA_OPTIONS
    ) as cluster:
        replay, live = Outcome(), Outcome()
        try:
            replay.value = replay_on(cluster, folder)
        except Exception as failure:  # the live run still runs: its test is another test
            replay.failure = failure
        try:
            live.value = live_run_on(cluster, context, folder / "live")
        except Exception as failure:
            live.failure = failure
    return ClusterRuns(replay, live)


def replay_on(cluster: StandaloneCluster, folder: Path) -> tuple[int, str, Path]:
    dump = incident_scenario().write(folder / "incidents.jsonl")  # the local replay's file name, as its rows say
    data_dir = folder / "on-the-cluster"
    done = subprocess.run(
        radar_command("replay", "--input", str(dump), "--data-dir", str(data_dir)),
        cwd=folder,
        env=cluster_env(cluster),
        capture_output=True,
        text=True,
        timeout=REPLAY_TIMEOUT_S,
    )
    return done.returncode, done.stderr, data_dir


def live_run_on(cluster: StandaloneCluster, context: RecordingContext, folder: Path) -> LiveRun:
    from rebalance_radar.emitters.log_shipper import start_shipper

    folder.mkdir(parents=True)
    bootstrap = context.bootstrap
    tag = uuid.uuid4().hex[:8]
    topic, group, telemetry = f"work-cluster-{tag}", f"group-cluster-{tag}", f"telemetry-cluster-{tag}"
    create_topics(bootstrap, {topic: 2, telemetry: 1})
    config = isolated_config(context.config, folder / "data", telemetry_topics=(telemetry,))
    env = cluster_env(
        cluster,
        RADAR__KAFKA__BOOTSTRAP_SERVERS=bootstrap,
        RADAR__KAFKA__TELEMETRY_TOPICS=f"[{telemetry}]",
        RADAR__KAFKA__STARTING_OFFSETS="latest",  # the shared broker's history is other tests'
        RADAR__INGEST__TRIGGER_INTERVAL="2 seconds",
    )
    shipper = start_shipper(context.log_file, bootstrap, telemetry, from_start=False)
    members = []
    try:
        with RadarRun(config, env, folder / "run.log") as run:
            wait_for(
                lambda: not run.alive() or started_from_latest(config),
                RUN_TIMEOUT_S,
                f"the offsets query to resolve `latest` (log: {run.log_path})",
            )
            a = start_member(folder, "A", bootstrap, topic, group, "--session-timeout-ms", "3000")
            members.append(a)
            a.wait_for("assigned", 60)
            b = start_member(folder, "B", bootstrap, topic, group, "--session-timeout-ms", "3000")
            members.append(b)
            b.wait_for("assigned", 60)
            time.sleep(2)  # kept, the scenario: the group works a moment before the machine is lost
            cluster.kill_worker(0)  # a machine lost mid-run: its executor's tasks go to the other Worker
            coordinator = CoordinatorLog(context.log_file)
            a.signal(signal.SIGSTOP)  # A stalls past its 3 s session: the coordinator expires it
            coordinator.wait_expired(group)
            a.signal(signal.SIGCONT)
            a.wait_for("commit_error", 30)
            refused_at = next(i for i, line in enumerate(a.lines()) if "commit_error" in line)
            a.wait_for("assigned", 30, after=refused_at)  # A back in the group: it leaves it cleanly below
            for member in members:
                member.stop()
            run.wait_for_detection(group, DETECTION_TIMEOUT_S)
            written = end_offsets(bootstrap, ["__consumer_offsets"])

            def caught_up() -> bool:  # the offsets query has committed a batch past what the group wrote
                ends = committed_ends(config)
                return not run.alive() or all(ends.get(key, 0) >= end for key, end in written.items())

            wait_for(caught_up, 120, f"the offsets query to pass {written} (log: {run.log_path})", poll_s=2)
            workers_left = cluster.alive_workers()
    finally:
        shipper.stop()
        for member in members:
            member.stop()
    return LiveRun(config, group, run.returncode, run.output, workers_left)


@pytest.fixture(scope="module")
def cluster_runs(concurrent_recordings: ConcurrentRecordings) -> ClusterRuns:
    return concurrent_recordings.result(run_on_the_cluster, timeout_s=1500)  # type: ignore[no-any-return]


def test_a_replay_on_the_cluster_writes_the_rows_the_local_master_writes(
    radar_config: RadarConfig,
    cluster_runs: ClusterRuns,
    incident_tables: IncidentTables,
) -> None:
    returncode, stderr, data_dir = cluster_runs.replay.result()
    assert returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr[-3000:]
    compared = []
    for schema in TABLES.values():
        local = table_rows(radar_config.with_data_dir(incident_tables.data_dir), schema)
        clustered = table_rows(radar_config.with_data_dir(data_dir), schema)
        assert clustered == local, f"{schema.name}: {len(clustered)} rows on the cluster, {len(local)} locally"
        compared.append((schema.name, sum(local.values())))
    held = dict(compared)
    assert held[DETECTIONS.name] >= 3 and held[OFFSETS_RAW.name] > 0, held  # the incidents were found, on both


def test_radar_run_on_the_cluster_detects_a_stalled_member_and_loses_nothing_when_a_worker_dies(
    spark: SparkSession, kafka_broker: EmbeddedKafka, cluster_runs: ClusterRuns
) -> None:
    run: LiveRun = cluster_runs.live.result()
    config, group, bootstrap = run.config, run.group, kafka_broker.bootstrap_servers
    failures = failure_log_of(config)  # a failed query's whole error (the output has its first sentence)
    assert run.returncode == 0, run.output[-3000:] + (failures.read_text()[-6000:] if failures.is_file() else "")
    assert "Traceback" not in run.output, run.output[-3000:]
    assert run.workers_left == 1  # the run went on with the Worker it had left
    detected = table(spark, config, DETECTIONS).where(f"group_id = '{group}'").collect()
    assert {r["kind"] for r in detected} & {"heartbeat_expiration", "zombie_commit"}, [r.asDict() for r in detected]
    # every __consumer_offsets record from where the run started to where its last committed batch ended, once, and
    # none past its last planned batch (a stop between a batch's writes and its commit leaves that batch's rows: the
    # next start redoes the batch, and the tables' idempotent writes keep each record once)
    started = initial_offsets(config)

    def records_until(ends: dict[tuple[str, int], int]) -> set[tuple[str, int, int]]:
        read = kafka_coordinates(bootstrap, ["__consumer_offsets"], until=ends)
        return {c for c in read if c[2] >= started.get((c[0], c[1]), 0)}

    truth, planned = records_until(committed_ends(config)), records_until(committed_ends(config, log="offsets"))
    bronze = coordinates(table(spark, config, OFFSETS_RAW))
    assert duplicates(bronze) == [] and truth <= set(bronze) <= planned
    silver = offsets_silver_coordinates(spark, config)
    assert duplicates(silver) == [] and truth <= set(silver) <= planned
    assert table(spark, config, OFFSET_COMMITS).where(f"group_id = '{group}'").count() > 0


def offsets_checkpoint(config: RadarConfig) -> Path:
    (found,) = config.checkpoint_dir.glob(f"kafka-{config.cluster}-*")
    return found / OFFSETS_QUERY


def committed_ends(config: RadarConfig, log: str = "commits") -> dict[tuple[str, int], int]:
    """Where the offsets query's last committed batch ends (exclusive offsets), from its checkpoint; with `log`
    "offsets", where its last planned batch ends."""
    if not config.checkpoint_dir.is_dir() or not list(config.checkpoint_dir.glob(f"kafka-{config.cluster}-*")):
        return {}
    query = offsets_checkpoint(config)
    done = [int(p.name) for p in (query / log).glob("[0-9]*")]
    if not done:
        return {}
    source = json.loads((query / "offsets" / str(max(done))).read_text().splitlines()[2])
    return {(topic, int(p)): int(end) for topic, ends in source.items() for p, end in ends.items()}


def started_from_latest(config: RadarConfig) -> bool:
    """Whether the offsets query has resolved `latest` (the offsets it starts from, `initial_offsets`)."""
    found = list(config.checkpoint_dir.glob(f"kafka-{config.cluster}-*")) if config.checkpoint_dir.is_dir() else []
    return len(found) == 1 and (found[0] / OFFSETS_QUERY / "sources" / "0" / "0").is_file()


def initial_offsets(config: RadarConfig) -> dict[tuple[str, int], int]:
    """Where the offsets query started (`startingOffsets: latest`, resolved when it first ran)."""
    text = (offsets_checkpoint(config) / "sources" / "0" / "0").read_text()
    source = json.loads(text[text.index("{") :])
    return {(topic, int(p)): int(start) for topic, starts in source.items() for p, start in starts.items()}
