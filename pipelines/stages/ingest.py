"""`__consumer_offsets` + telemetry -> bronze/silver Delta tables, as two independent streaming queries.

Offsets and telemetry run as separate queries so garbage or a flood on a telemetry topic cannot stop or slow the
offsets pipeline. Each micro-batch is decoded once (Arrow batches through `mapInArrow`) and split into the silver
tables; every table write leaves out the records the table holds already, so a batch replayed after a crash is
written once (`pipelines.storage.tables.append_new_records`).

This module holds what is ingest-specific (which rows each query reads, routing, splitting into tables); queries,
triggers, the multi-table writer and the stage lifecycle are `pipelines.stages.streams`'.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import StructType

from rebalance_radar.pipelines.config import ConfigError, RadarConfig
from rebalance_radar.pipelines.runtime.phases import phase
from rebalance_radar.pipelines.stages.streams import (
    BatchTables,
    BatchWriter,
    RunningQueries,
    SplitBatch,
    Stage,
    TableWriter,
    Trigger,
    failure_log_of,
    start_query,
)
from rebalance_radar.pipelines.storage.tables import TableCatalog, count_if_exists, ensure_tables_in_background
from rebalance_radar.transforms.offsets_batch import route_offsets_batches
from rebalance_radar.transforms.schemas import (
    DECODED_OFFSETS_BATCH,
    OFFSET_COMMITS,
    OFFSETS_RAW,
    PARSED_TELEMETRY_BATCH,
    QUARANTINE,
    QUARANTINE_PAYLOAD,
    ROUTED_SOURCE_COLUMNS,
    SOURCE_COLUMNS,
    TABLES,
    TELEMETRY_RAW,
    TELEMETRY_UNRECOGNISED,
    QuarantineStage,
    RoutedBatch,
    TableSchema,
)
from rebalance_radar.transforms.telemetry.batch import parse_telemetry_batches

OFFSETS_QUERY = "radar-offsets"
TELEMETRY_QUERY = "radar-telemetry"
KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")  # what the routing reads
_ROUTED_SOURCE_NAMES = tuple(c.name for c in ROUTED_SOURCE_COLUMNS)


def offsets_rows(source: DataFrame, config: RadarConfig) -> DataFrame:
    """The rows the offsets query reads from a source: the offsets topic's records, and unreadable dump lines (which
    it quarantines)."""
    return source.where((F.col("topic") == config.kafka.offsets_topic) | F.col("source_error").isNotNull())


def source_columns(config: RadarConfig) -> list[Column]:
    """The cluster and the Kafka coordinates of a routed batch, as every row keeps them (`SOURCE_COLUMNS`)."""
    return [F.lit(config.cluster).alias("cluster"), *(F.col(name) for name in _ROUTED_SOURCE_NAMES)]


def _with_source(df: DataFrame, config: RadarConfig) -> DataFrame:
    """Source rows (Kafka's column names) with the cluster and the Kafka coordinates every row keeps."""
    coordinates = [
        F.col(kafka).alias(name) for kafka, name in zip(KAFKA_COLUMNS[2:], _ROUTED_SOURCE_NAMES, strict=True)
    ]
    return df.select(F.lit(config.cluster).alias("cluster"), *coordinates, "*")


def _bronze(batch: DataFrame, config: RadarConfig) -> DataFrame:
    return _with_source(batch.where(F.col("source_error").isNull()), config).withColumn(
        "ingest_date", F.to_date("src_timestamp")
    )


def _unreadable_source_rows(batch: DataFrame, config: RadarConfig) -> DataFrame:
    """Dump lines that are not dump records, as quarantine rows (stage read_dump)."""
    given = {
        "stage": F.lit(str(QuarantineStage.READ_DUMP)),
        "kind": F.lit("malformed"),
        "reason": F.col("source_error"),
        "key": F.col("key"),
        "value": F.col("value"),
        "src_file": F.col("source_file"),
        "src_line": F.col("source_line"),
    }
    payload = [given.get(c.name, F.lit(None).cast(c.ddl)).alias(c.name) for c in QUARANTINE_PAYLOAD]
    rows = _with_source(batch.where(F.col("source_error").isNotNull()), config)
    return rows.select(*(c.name for c in SOURCE_COLUMNS), *payload)


_ONCE = "_radar_once"  # the dedup key of `distinct_records`, dropped before anything is written


def distinct_records(batch: DataFrame) -> DataFrame:
    """A record read twice in one micro-batch (a dump file and its copy, replayed together) once; dump lines that
    are no record are kept, each is its own line. Across batches, `pipelines.storage.tables.append_new_records` does it.

    One pass over the batch (not a union of two filtered reads): the batch is not cached before this, so a union
    would read the source (Kafka, or the dump text) twice."""
    record = F.struct("topic", "partition", "offset", F.lit(None).cast("bigint").alias("line"))
    line = F.struct(
        F.lit(None).cast("string").alias("topic"),
        F.lit(None).cast("int").alias("partition"),
        F.lit(None).cast("bigint").alias("offset"),
        F.monotonically_increasing_id().alias("line"),  # unique: every unreadable line is kept
    )
    once = F.when(F.col("source_error").isNull(), record).otherwise(line)
    return batch.withColumn(_ONCE, once).dropDuplicates([_ONCE]).drop(_ONCE)


def holds_repeated_records(batch: DataFrame) -> bool:
    """Whether a record (topic, partition, offset) comes more than once in the batch: one aggregate over its
    coordinates alone, where `distinct_records` moves every row with its bytes."""
    coordinates = ("topic", "partition", "offset")
    readable = batch.where(F.col("source_error").isNull()).select(*coordinates)
    return not readable.groupBy(*coordinates).count().where(F.col("count") > 1).isEmpty()


def _held(df: DataFrame, held: list[DataFrame]) -> DataFrame:
    cached = df.persist()
    held.append(cached)
    return cached


def records_once(batch: DataFrame, held: list[DataFrame]) -> DataFrame:
    """A replay batch with each record once, cached (added to `held`). A batch of fewer partitions than cores (one
    file) goes through `distinct_records`, whose shuffle also spreads its rows over the cores for the decode. A
    batch of dump pieces parsed side by side (`sources.PIECES_TOGETHER`) keeps its rows where they were parsed:
    only their coordinates are aggregated, and the rows move only when a record does come twice."""
    if batch.rdd.getNumPartitions() < batch.sparkSession.sparkContext.defaultParallelism:
        return _held(distinct_records(batch), held)
    parsed = _held(batch, held)
    return _held(distinct_records(parsed), held) if holds_repeated_records(parsed) else parsed


def split_routed(routed: DataFrame, config: RadarConfig, contract: RoutedBatch) -> dict[str, DataFrame]:
    """One DataFrame per target table of a routed batch: the source columns, then the target's payload struct."""
    out: dict[str, DataFrame] = {}
    for payload in contract.payloads:
        rows = routed.where(F.col("target") == payload.table.name).select(
            *source_columns(config), f"{payload.column}.*"
        )
        out[payload.table.name] = rows
    return out


def split_decoded(decoded: DataFrame, config: RadarConfig) -> dict[str, DataFrame]:
    """One DataFrame per silver table from a decoded batch (`transforms.offsets_batch` output)."""
    out = split_routed(decoded, config, DECODED_OFFSETS_BATCH)
    commits = out[OFFSET_COMMITS.name]
    out[OFFSET_COMMITS.name] = commits.withColumn("commit_date", F.to_date(F.coalesce("commit_ts", "src_timestamp")))
    return {name: rows.select(*TABLES[name].column_names) for name, rows in out.items()}


def spread_over_cores(rows: DataFrame) -> DataFrame:
    """Python decoding runs one worker per partition: a batch from fewer partitions than cores (a dump file) is
    spread out first, so every core decodes. (A Kafka batch is not: its source splits a large range itself, and a
    live batch of a few records would pay a shuffle for nothing.)"""
    cores = rows.sparkSession.sparkContext.defaultParallelism
    return rows.repartition(cores) if rows.rdd.getNumPartitions() < cores else rows


def _map_in_arrow(
    rows: DataFrame, contract: RoutedBatch, batches: Callable[..., Iterator[object]], *, spread: bool = True
) -> DataFrame:
    """Route Kafka rows through a `mapInArrow` body producing `contract` (no per-row Python UDF). `spread=False`
    inside a streaming plan (the detection query's), where a micro-batch's partition count cannot be asked."""
    arrow_schema = to_arrow_schema(StructType.fromDDL(contract.ddl))
    kafka_rows = rows.select(*KAFKA_COLUMNS)
    return (spread_over_cores(kafka_rows) if spread else kafka_rows).mapInArrow(
        partial(batches, schema=arrow_schema), contract.ddl
    )


def route_offsets(batch: DataFrame, *, spread: bool = True) -> DataFrame:
    """Decode Kafka rows with the codec and route them to their silver tables, vectorised over Arrow batches."""
    readable = batch.where(F.col("source_error").isNull())
    return _map_in_arrow(readable, DECODED_OFFSETS_BATCH, route_offsets_batches, spread=spread)


def parse_telemetry(batch: DataFrame, *, spread: bool = True) -> DataFrame:
    """Parse telemetry records into heartbeat events, vectorised over Arrow batches."""
    return _map_in_arrow(batch, PARSED_TELEMETRY_BATCH, parse_telemetry_batches, spread=spread)


def split_parsed_telemetry(parsed: DataFrame, config: RadarConfig) -> dict[str, DataFrame]:
    """heartbeat_events rows, per-batch counts of unrecognised records, and quarantined records."""
    out = split_routed(parsed, config, PARSED_TELEMETRY_BATCH)
    out[TELEMETRY_UNRECOGNISED.name] = (
        out[TELEMETRY_UNRECOGNISED.name]
        .groupBy("cluster", "src_topic", "source", "reason")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.min("src_timestamp").alias("first_seen"),
            F.max("src_timestamp").alias("last_seen"),
        )
    )
    return {name: rows.select(*TABLES[name].column_names) for name, rows in out.items()}


RoutedSplit = Callable[[DataFrame, RadarConfig], dict[str, DataFrame]]


def routed_source_ranges(routed: DataFrame, config: RadarConfig) -> dict[str, list[Row]]:
    """Per target table of a routed batch, the source offsets its rows cover per (cluster, topic, partition), as
    `tables.source_ranges` gives them; the tables absent from the batch are absent. One Spark job for every
    table (it also says which tables have rows), where each table's write used to run its own."""
    found: dict[str, list[Row]] = {}
    rows = (
        routed.groupBy("target", "src_topic", "src_partition")
        .agg(F.min("src_offset").alias("low"), F.max("src_offset").alias("high"))
        .collect()
    )
    for r in rows:
        found.setdefault(r["target"], []).append(
            Row(
                cluster=config.cluster,
                src_topic=r["src_topic"],
                src_partition=r["src_partition"],
                low=r["low"],
                high=r["high"],
            )
        )
    return found


def _spanning(ranges: Mapping[str, list[Row]]) -> list[Row]:
    """The offsets all tables' rows of a Kafka batch cover together, per (cluster, topic, partition)."""
    spans: dict[tuple[object, object, object], Row] = {}
    for rows in ranges.values():
        for r in rows:
            key = (r["cluster"], r["src_topic"], r["src_partition"])
            known = spans.get(key)
            spans[key] = (
                r
                if known is None
                else Row(
                    cluster=r["cluster"],
                    src_topic=r["src_topic"],
                    src_partition=r["src_partition"],
                    low=min(known["low"], r["low"]),
                    high=max(known["high"], r["high"]),
                )
            )
    return list(spans.values())


def routed_batch_tables(
    config: RadarConfig,
    route: Callable[[DataFrame], DataFrame],
    split: RoutedSplit,
    bronze: TableSchema,
    *,
    with_unreadable_source_rows: bool = False,
    records_may_repeat: bool = True,
) -> BatchTables:
    """A stage's tables of one micro-batch: route the batch once (mapInArrow, cached while the tables are
    written), then bronze and every target table that received rows.

    `records_may_repeat=False` for a Kafka source: a Kafka micro-batch reads each offset once, so the in-batch
    dedup (a shuffle per micro-batch) is left out; a replay batch may bring a dump and its copy together."""

    @contextmanager
    def tables_of(source_batch: DataFrame) -> Iterator[SplitBatch]:
        held: list[DataFrame] = []  # cached while the tables are written, then released
        try:
            batch = records_once(source_batch, held) if records_may_repeat else _held(source_batch, held)
            routed = _held(route(batch), held)
            ranges = routed_source_ranges(routed, config)
            # bronze holds exactly the records routed (each gives at least one routed row, quarantined ones too),
            # so its offsets need no Spark job of their own; taken before quarantine's are set aside below
            bronze_ranges = _spanning(ranges)
            tables = {name: rows for name, rows in split(routed, config).items() if name in ranges}
            if with_unreadable_source_rows:
                unreadable = _unreadable_source_rows(batch, config)
                if not unreadable.isEmpty():
                    quarantine = tables.get(QUARANTINE.name)
                    tables[QUARANTINE.name] = unreadable if quarantine is None else quarantine.unionByName(unreadable)
                    ranges.pop(QUARANTINE.name, None)  # its dump lines have no offsets: the write finds its own
            if config.ingest.bronze_enabled and ranges:
                tables[bronze.name] = _bronze(batch, config)
                ranges[bronze.name] = bronze_ranges
            yield SplitBatch(tables, ranges)
        finally:
            for cached in held:
                cached.unpersist()

    return tables_of


def offsets_batch_writer(
    config: RadarConfig,
    app_id: str = OFFSETS_QUERY,
    *,
    from_kafka: bool = False,
    tables_ready: Future[None] | None = None,
) -> BatchWriter:
    """The offsets query: bronze `offsets_raw`, the silver tables, and unreadable dump lines into quarantine (a
    Kafka source has no dump lines: `from_kafka` leaves that check and the in-batch dedup out, and the spread over
    cores, as the source splits a large range itself: `kafka.max_records_per_task`)."""
    tables_of = routed_batch_tables(
        config,
        partial(route_offsets, spread=not from_kafka),
        split_decoded,
        OFFSETS_RAW,
        with_unreadable_source_rows=not from_kafka,
        records_may_repeat=not from_kafka,
    )
    writer = TableWriter(config, app_id, persist_batch=False, tables_ready=tables_ready)  # routed_batch_tables caches
    return writer.foreach_batch(tables_of)


def telemetry_batch_writer(
    config: RadarConfig,
    app_id: str = TELEMETRY_QUERY,
    *,
    from_kafka: bool = False,
    tables_ready: Future[None] | None = None,
) -> BatchWriter:
    """The telemetry query: bronze `telemetry_raw` and the parsed events (from Kafka without a spread over cores,
    as `offsets_batch_writer`)."""
    tables_of = routed_batch_tables(
        config,
        partial(parse_telemetry, spread=not from_kafka),
        split_parsed_telemetry,
        TELEMETRY_RAW,
        records_may_repeat=not from_kafka,
    )
    writer = TableWriter(config, app_id, persist_batch=False, tables_ready=tables_ready)  # routed_batch_tables caches
    return writer.foreach_batch(tables_of)


class IngestStage(Stage):
    """The offsets and telemetry queries over `source` (Kafka or replay, same schema).

    With `telemetry_source`, the telemetry query reads it instead of `source`: on Kafka each query then
    subscribes only to its own topics, so telemetry volume never costs the offsets query a read.
    """

    name = "ingest"

    def __init__(
        self,
        spark: SparkSession,
        config: RadarConfig,
        source: DataFrame,
        *,
        telemetry_source: DataFrame | None = None,
        checkpoint_name: str = "ingest",
        available_now: bool = False,
        telemetry_topics: Sequence[str] | None = None,
        from_kafka: bool = False,
        telemetry_from_every_other_topic: bool = False,
    ) -> None:
        super().__init__()
        # a replay: every record not of the offsets topic is telemetry (a dump's other topics, replayed log files),
        # never silently left out because its topic is not configured
        self.telemetry_from_every_other_topic = telemetry_from_every_other_topic
        self.from_kafka = from_kafka  # sources from `kafka_stream`: no repeated record within a batch, no dump lines
        self.spark, self.config, self.source, self.telemetry_source = spark, config, source, telemetry_source
        self.checkpoint_name = checkpoint_name
        self.trigger = Trigger(available_now, config.ingest.trigger_interval)
        topics = config.kafka.telemetry_topics if telemetry_topics is None else telemetry_topics
        self.telemetry_topics = tuple(topics)

    def stream(self) -> tuple[Path, str]:
        return self.config.checkpoint_dir, self.checkpoint_name

    def _start(self, rows: DataFrame, query: str, writer: Callable[[str], BatchWriter]) -> StreamingQuery:
        # Delta's txnAppId names the checkpoint (see `TableWriter`): another replay, or `radar run` after a
        # replay, into the same tables must not skip its first batches as already written.
        checkpoints = self.config.checkpoint_dir / self.checkpoint_name
        app_id = f"{query}@{self.checkpoint_name}"
        return start_query(rows, f"{query}-{self.checkpoint_name}", checkpoints / query, writer(app_id), self.trigger)

    def start_queries(self) -> RunningQueries:
        tables = ensure_tables_in_background(self.spark, self.config)  # waited for by the writes, and below
        offsets_topic = self.config.kafka.offsets_topic
        writer = partial(offsets_batch_writer, self.config, from_kafka=self.from_kafka, tables_ready=tables)
        started = [self._start(offsets_rows(self.source, self.config), OFFSETS_QUERY, writer)]
        if self.telemetry_topics or self.telemetry_from_every_other_topic:
            rows = self.source if self.telemetry_source is None else self.telemetry_source
            wanted = (
                F.col("topic") != offsets_topic
                if self.telemetry_from_every_other_topic
                else F.col("topic").isin(*self.telemetry_topics)
            )
            telemetry_rows = rows.where(wanted & F.col("source_error").isNull())
            writer = partial(telemetry_batch_writer, self.config, from_kafka=self.from_kafka, tables_ready=tables)
            started.append(self._start(telemetry_rows, TELEMETRY_QUERY, writer))
        running = RunningQueries(tuple(started), failure_log_of(self.config))
        # The queries start up and read their first batch meanwhile; the stage counts as started once its tables
        # exist, as callers read them (a run's status, tests polling a table). A failure stops the queries.
        try:
            tables.result()
        except BaseException:
            running.stop()
            raise
        return running


DATA_DIR_MARK = ".data-dir"
"""In the checkpoint dir: its absolute path when radar last used it (`set_aside_moved_replay_checkpoints`)."""


def set_aside_moved_replay_checkpoints(config: RadarConfig) -> Path | None:
    """A data dir moved or copied: Spark's file-source checkpoints (a replay's) name the files they read by absolute
    path, under the old data dir (`Wrong basePath`), so the replay checkpoints are moved aside, said in one line, and
    the dumps are read again: the tables' record keys keep every record once, and the detections' ids are the
    same. Kafka and Delta sources record offsets and table ids, which a move leaves true. Returns where they went."""
    checkpoints = config.checkpoint_dir
    here = str(checkpoints.resolve())
    mark = checkpoints / DATA_DIR_MARK
    before = mark.read_text().strip() if mark.is_file() else None
    aside = None
    if before is not None and before != here:
        stale = sorted(p for p in checkpoints.glob("replay-*") if p.is_dir())
        if stale:
            aside = checkpoints / "moved" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            aside.mkdir(parents=True)
            for folder in stale:
                folder.rename(aside / folder.name)
            print(
                f"radar replay: this data dir was at {before.removesuffix('/checkpoints')}; the replay checkpoints "
                f"there name files under that path, so they are set aside in {aside} and the dumps are read again "
                "(no record is written twice)",
                file=sys.stderr,
            )
    checkpoints.mkdir(parents=True, exist_ok=True)
    mark.write_text(here + "\n")
    return aside


def replay_checkpoint_name(paths: Sequence[str]) -> str:
    """One checkpoint per set of dump files: replaying the same files again writes nothing twice."""
    from rebalance_radar.pipelines.stages.sources import replay_staging_dir

    return f"replay-{replay_staging_dir(paths).name}"


def kafka_checkpoint_name(config: RadarConfig, cluster_id: str) -> str:
    """One checkpoint per Kafka cluster (by its id): offsets of one cluster mean nothing on another.

    Another Kafka cluster under the same logical name (a wiped or rebuilt broker) is refused: its offsets start
    again, and the tables' record key (cluster, src_topic, src_partition, src_offset) would take its new records
    for ones already written. The user names it as a new logical cluster instead.
    """
    name = f"kafka-{config.cluster}-{cluster_id}"
    others = sorted(
        p.name.removeprefix(f"kafka-{config.cluster}-")
        for p in config.checkpoint_dir.glob(f"kafka-{config.cluster}-*")
        if p.name != name
    )
    if others and not (config.checkpoint_dir / name).exists():
        raise ConfigError(
            f"cluster {config.cluster!r} is now Kafka cluster {cluster_id} (before: {', '.join(others)}): a wiped or "
            "rebuilt cluster starts its offsets again, and its records would be taken for ones already in the "
            f"tables. Give it a new name (`cluster:` in the conf, or RADAR__CLUSTER=...), or use a new --data-dir."
        )
    return name


def table_counts(spark: SparkSession, config: RadarConfig) -> dict[str, int]:
    """Rows per table (for the summary users see after a run): from the Delta log where it can say
    (`count_if_exists`), else a scan of the table by name (which fails loudly for a table that is not there)."""
    catalog = TableCatalog(config)
    counts = {name: count_if_exists(spark, config, table) for name, table in TABLES.items()}
    return {
        name: count if count is not None else spark.table(catalog.name(TABLES[name])).count()
        for name, count in counts.items()
    }


def ingest_dumps(spark: SparkSession, config: RadarConfig, paths: Sequence[str]) -> None:
    """The ingest stage over dump files, to completion (one checkpoint per set of files); then the copies of large
    dumps it read in pieces are deleted (`pipelines.stages.sources.PIECE_BYTES`)."""
    from rebalance_radar.pipelines.stages.sources import remove_pieces, replay_files

    set_aside_moved_replay_checkpoints(config)
    staging_root = config.data_dir / "replay-inputs"
    files = replay_files(spark, paths, staging_root=staging_root)
    stage = IngestStage(
        spark,
        config,
        files.records(),
        # the telemetry query skips a dump of offsets records only rather than parse it all to keep nothing
        telemetry_source=files.records(other_than_topic=config.kafka.offsets_topic),
        checkpoint_name=replay_checkpoint_name(paths),
        available_now=True,
        telemetry_from_every_other_topic=True,  # as the dump format says; replayed log files included
    )
    with phase("ingest queries"), stage:
        stage.queries.await_with_progress("radar replay", unit="input files")  # a row of a file stream is a file
    remove_pieces(paths, staging_root)


def run_ingest_replay(config: RadarConfig, paths: Sequence[str]) -> dict[str, int]:
    """Ingest only (no detection) over dump files, to completion; returns rows per table. `radar replay` is
    `pipelines.cli.monitor.run_replay`, which adds detection."""
    from rebalance_radar.pipelines.formats.dump import check_dump_files
    from rebalance_radar.pipelines.runtime.session import build_spark_session

    check_dump_files(paths)  # before Spark: a typo must not cost a session start
    spark = build_spark_session(config)
    ingest_dumps(spark, config, paths)
    return table_counts(spark, config)
