"""The commands' compositions: `radar run` (ingest + detection + the clock, live) and `radar replay` (ingest,
then detection, each to completion, then a summary of the detections).

Kept apart from `pipelines.stages.ingest` and `pipelines.stages.detect`, which each own one stage: this module only
decides which stages a command runs, in which order, and what it prints at the end.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import OWN_GROUP_PREFIX, ConfigError, RadarConfig
from rebalance_radar.pipelines.runtime.console import PlainTicker
from rebalance_radar.pipelines.runtime.phases import phase
from rebalance_radar.pipelines.runtime.run_status import RunStatusFile
from rebalance_radar.pipelines.stages.broker_settings import CONF_KEYS
from rebalance_radar.pipelines.stages.detect import DetectStage, KafkaDetectorSources, seal_replay_time
from rebalance_radar.pipelines.stages.ingest import (
    IngestStage,
    ingest_dumps,
    kafka_checkpoint_name,
    replay_checkpoint_name,
    table_counts,
)
from rebalance_radar.pipelines.stages.streams import run_until_stopped, start_stages, stop_stages
from rebalance_radar.pipelines.storage.delta_log import DRIVER_READ_MAX_BYTES, rows_from_files
from rebalance_radar.pipelines.storage.tables import TableCatalog, count_if_exists, log_says_empty
from rebalance_radar.transforms.schemas import DETECTIONS

if TYPE_CHECKING:
    from rebalance_radar.emitters.end_offsets import IsolatedEndOffsetsPoller

SUMMARY_EXAMPLES = 5


@dataclass(frozen=True)
class DetectionSummary:
    """What a run found: detections per (kind, severity), and the newest few one-sentence summaries."""

    by_kind_and_severity: dict[tuple[str, str], int]
    examples: tuple[str, ...]

    @property
    def total(self) -> int:
        return sum(self.by_kind_and_severity.values())

    def lines(self) -> list[str]:
        if not self.total:
            return ["no detections"]
        counts = ", ".join(
            f"{kind} ({severity}): {n}" for (kind, severity), n in sorted(self.by_kind_and_severity.items())
        )
        return [f"{self.total} detection(s): {counts}", *(f"  - {example}" for example in self.examples)]


def summarise_detections(spark: SparkSession, config: RadarConfig) -> DetectionSummary:
    """The gold detections of `config.cluster`, counted by kind and severity, with the first few summaries. A table
    whose Delta log says it is empty is not read, and a small one is read from its files
    (`delta_log.rows_from_files`): Spark took two jobs and a snapshot, ~1.9 s of a cold JVM."""
    if log_says_empty(config, DETECTIONS):
        return DetectionSummary({}, ())
    catalog = TableCatalog(config)
    location = catalog.location(DETECTIONS)
    stored = None if location is None else rows_from_files(location, SUMMARY_COLUMNS, max_bytes=DRIVER_READ_MAX_BYTES)
    if stored is not None:
        return _summary_of_rows(stored.filter(pc.equal(stored["cluster"], config.cluster)))
    rows = spark.table(catalog.name(DETECTIONS)).where(F.col("cluster") == F.lit(config.cluster))
    counts = {(r["kind"], r["severity"]): int(r["count"]) for r in rows.groupBy("kind", "severity").count().collect()}
    first = rows.orderBy("detected_at", "detection_id").select("summary").limit(SUMMARY_EXAMPLES).collect()
    return DetectionSummary(counts, tuple(str(r["summary"]) for r in first))


SUMMARY_COLUMNS = ("cluster", "kind", "severity", "detected_at", "detection_id", "summary")


def _summary_of_rows(rows: pa.Table) -> DetectionSummary:
    """The summary of detection rows already in the driver, ordered as Spark's `orderBy` (nulls first)."""
    counts: dict[tuple[str, str], int] = {}
    for kind, severity in zip(rows["kind"].to_pylist(), rows["severity"].to_pylist(), strict=True):
        counts[(kind, severity)] = counts.get((kind, severity), 0) + 1
    # in Python, not `pc.sort_indices`: pyarrow 25 deprecated its null placement for all keys (a warning users saw),
    # and the per-key form is not in older pyarrow; a run's detections are few
    detected_at, detection_ids = rows["detected_at"].to_pylist(), rows["detection_id"].to_pylist()
    order = sorted(
        range(rows.num_rows),
        key=lambda i: tuple(
            (value is not None, value if value is not None else 0) for value in (detected_at[i], detection_ids[i])
        ),
    )
    summaries = rows["summary"].to_pylist()
    return DetectionSummary(counts, tuple(str(summaries[i]) for i in order[:SUMMARY_EXAMPLES]))


QUICK_START_MAX_DUMP_BYTES = 64 * 1024 * 1024
"""Dump files up to this size (~200k records) replay as a short command (on a local master, in a JVM tuned to start
fast): start-up dominates their replay; a bigger backlog keeps the JIT that is faster in steady state."""


def replayed_bytes(paths: Sequence[str]) -> int:
    """The size of a replay's input files: what tells a short or tiny replay (below) before Spark starts."""
    return sum(Path(path).stat().st_size for path in paths)


def short_replay(paths: Sequence[str]) -> bool:
    """Whether replaying `paths` is a short job (see `QUICK_START_MAX_DUMP_BYTES`)."""
    return replayed_bytes(paths) <= QUICK_START_MAX_DUMP_BYTES


def run_replay(config: RadarConfig, paths: Sequence[str]) -> tuple[dict[str, int], DetectionSummary]:
    """`radar replay`: ingest the dump files to completion, seal the dump's time (see `pipelines.stages.detect`), run
    detection to completion, and print the detections found; returns (rows per table, the summary)."""
    from rebalance_radar.pipelines.formats.dump import check_dump_files
    from rebalance_radar.pipelines.runtime.session import build_spark_session

    check_dump_files(paths)  # before Spark: a typo must not cost a session start
    # a short replay's time is mostly the JVM's cold start
    with PlainTicker.waiting("radar replay", "starting Spark"):
        spark = build_spark_session(config, quick_start=short_replay(paths))
    ingest_dumps(spark, config, paths)
    with phase("seal replay time"):
        seal_replay_time(spark, config)
    detect_stage = DetectStage(spark, config, checkpoint_name=replay_checkpoint_name(paths), available_now=True)
    with phase("detect query"), detect_stage as detect:
        detect.queries.await_with_progress("radar replay")
    with phase("incidents"):
        from rebalance_radar.pipelines.stages.incidents import refresh_incidents

        refresh_incidents(spark, config)  # across groups, from the gold rows the detection wrote
    with phase("summary"):
        summary = summarise_detections(spark, config)
    for line in summary.lines():
        print(f"radar replay: {line}", file=sys.stderr)
    with phase("counts"):
        return table_counts(spark, config), summary


def lag_poller(config: RadarConfig, settings: Mapping[str, Any]) -> IsolatedEndOffsetsPoller | None:
    """The end-offset poller of a live run (`lag.enabled`), in a process of its own (a librdkafka admin-client crash
    must not end the run), publishing to the first telemetry topic; radar's own source groups are left out unless
    `detect.include_own_groups`. It also publishes the broker's group session timeouts when they change, unless
    radar's conf states them."""
    from rebalance_radar.emitters.end_offsets import IsolatedEndOffsetsPoller

    if not config.lag.enabled or not config.kafka.telemetry_topics:
        return None
    return IsolatedEndOffsetsPoller(
        settings,
        config.kafka.telemetry_topics[0],
        interval_s=config.lag.poll_interval_s,
        left_out_prefix=None if config.detect.include_own_groups else OWN_GROUP_PREFIX,
        watch_broker_configs=not any(key in config.detect.threshold_overrides() for key in CONF_KEYS),
    )


def run_live(config: RadarConfig, *, stop_after_s: float | None = None) -> dict[str, int]:
    """`radar run`: ingest + detection + the clock-tick emitter against the configured cluster, or the embedded
    broker when no bootstrap is configured; until Ctrl-C / SIGTERM / `stop_after_s` (the current micro-batches
    complete, then the clock, the queries and the broker stop). Returns rows per table."""
    from rebalance_radar.pipelines.local.broker import EmbeddedKafka
    from rebalance_radar.pipelines.local.topics import create_topics, ensure_offsets_topic
    from rebalance_radar.pipelines.runtime.session import build_spark_session, on_databricks
    from rebalance_radar.pipelines.stages.clock import ClockTickEmitter
    from rebalance_radar.pipelines.stages.source_gaps import SourceGapRecorder
    from rebalance_radar.pipelines.stages.sources import cluster_client_settings, kafka_cluster_id, kafka_stream

    with ExitStack() as stack:
        bootstrap = config.kafka.bootstrap_servers
        if not bootstrap and on_databricks():
            raise ConfigError(
                "kafka.bootstrap_servers is empty: on Databricks radar reads your cluster, it does not start an "
                "embedded broker; set RADAR__KAFKA__BOOTSTRAP_SERVERS in the job or bootstrap_servers in the conf."
            )
        if not config.kafka.telemetry_topics:
            raise ConfigError(
                "kafka.telemetry_topics is empty: radar run writes its clock ticks to the first telemetry topic "
                "(detections of silent groups depend on them); name at least one topic."
            )
        if not bootstrap:
            # keep_storage: the broker's records outlive the run, as the checkpoint that points into them does
            broker = EmbeddedKafka(config.broker, config.data_dir, spark=config.spark, keep_storage=True)
            stack.enter_context(broker)
            bootstrap = broker.bootstrap_servers
            create_topics(bootstrap, config.kafka.telemetry_topics)
            from rebalance_radar.emitters.log_shipper import (
                start_shipper,  # the embedded coordinator's log is telemetry
            )

            stack.callback(start_shipper(broker.log_file, bootstrap, config.kafka.telemetry_topics[0]).stop)
            ensure_offsets_topic(bootstrap, config.kafka.offsets_topic)
        with PlainTicker.waiting("radar run", "starting Spark"):
            spark = build_spark_session(config)
        telemetry_topics = list(config.kafka.telemetry_topics)
        source = kafka_stream(spark, config, [config.kafka.offsets_topic], bootstrap)
        telemetry_source = kafka_stream(spark, config, telemetry_topics, bootstrap)
        checkpoint = kafka_checkpoint_name(config, kafka_cluster_id(spark, config, bootstrap))
        ingest = IngestStage(
            spark, config, source, telemetry_source=telemetry_source, checkpoint_name=checkpoint, from_kafka=True
        )
        settings = cluster_client_settings(spark, config, bootstrap)
        detect = DetectStage(
            spark,
            config,
            checkpoint_name=checkpoint,
            kafka=KafkaDetectorSources(source, telemetry_source),
            cluster=settings,
        )
        clock = ClockTickEmitter(
            settings,
            telemetry_topics[0],
            interval_ms=config.detect.tick_interval_ms,
        )
        stack.enter_context(clock)  # entered before the stages: stopped after their last micro-batch
        end_offsets = lag_poller(config, settings)
        if end_offsets is not None:
            stack.enter_context(end_offsets)
        gap_recorder = stack.enter_context(SourceGapRecorder(spark, config))  # offsets moving back are rows
        stages = [ingest, detect]
        queries = start_stages(stack, stages)
        if config.checks.in_run:  # expectations -> alerts every checks.interval_s, beside the queries
            from rebalance_radar.pipelines.checks.check import CheckSchedule

            stack.enter_context(CheckSchedule(spark, config))
        print(
            f"radar run: ingesting from {bootstrap} into {config.data_dir}, detecting, a clock tick every "
            f"{config.detect.tick_interval_ms} ms; Ctrl-C to stop",
            file=sys.stderr,
        )
        detections = partial(count_if_exists, spark, config, DETECTIONS)
        verbose = config.spark.log_level != "ERROR"
        run_until_stopped(
            queries,
            label="radar run",
            stop_after_s=stop_after_s,
            detections=detections,
            verbose=verbose,
            problems=lambda: [
                problem
                for problem in (clock.problem(), end_offsets.problem() if end_offsets is not None else None)
                if problem
            ],
            status_file=RunStatusFile(config.data_dir),  # what `radar check` says of this run
            on_progress=gap_recorder.note,
        )
        stop_stages(stages)  # the summary and counts below then include the detection stage's drained gold rows
        summary = summarise_detections(spark, config)
        for line in summary.lines():
            print(f"radar run: {line}", file=sys.stderr)
        return table_counts(spark, config)
