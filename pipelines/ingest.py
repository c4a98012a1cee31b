"""`__consumer_offsets` + telemetry -> bronze/silver Delta tables, as two independent streaming queries.

Offsets and telemetry run as separate queries so garbage or a flood on a telemetry topic cannot stop or slow the
offsets pipeline. Each micro-batch is decoded once (Arrow batches through `mapInArrow`) and split into the silver
tables; every table write carries (txnAppId, txnVersion) so a batch replayed after a crash is written once.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import StructType

from pipelines.config import ConfigError, RadarConfig
from pipelines.tables import TableCatalog, append_idempotent, ensure_tables
from transforms.decode import PAYLOAD_COLUMNS, decode_offsets_batches, decoded_batch_ddl
from transforms.schemas import (
    CLOCK_TICKS,
    HEARTBEAT_EVENTS,
    OFFSET_COMMITS,
    OFFSETS_RAW,
    QUARANTINE,
    TABLES,
    TELEMETRY_RAW,
    TELEMETRY_UNRECOGNISED,
    QuarantineStage,
    TableSchema,
)
from transforms.telemetry.batch import parse_telemetry_batches, parsed_batch_ddl

OFFSETS_QUERY = "radar-offsets"
TELEMETRY_QUERY = "radar-telemetry"
BatchWriter = Callable[[DataFrame, int], None]


def _with_source(df: DataFrame, config: RadarConfig) -> DataFrame:
    """Add the cluster and the Kafka coordinates every row keeps."""
    return df.select(
        F.lit(config.cluster).alias("cluster"),
        F.col("topic").alias("src_topic"),
        F.col("partition").alias("src_partition"),
        F.col("offset").alias("src_offset"),
        F.col("timestamp").alias("src_timestamp"),
        "*",
    )


def _bronze(batch: DataFrame, config: RadarConfig) -> DataFrame:
    return _with_source(batch.where(F.col("source_error").isNull()), config).withColumn(
        "ingest_date", F.to_date("src_timestamp")
    )


def _unreadable_source_rows(batch: DataFrame, config: RadarConfig) -> DataFrame:
    """Dump lines that are not dump records, as quarantine rows (stage read_dump)."""
    return _with_source(batch.where(F.col("source_error").isNotNull()), config).select(
        "cluster",
        "src_topic",
        "src_partition",
        "src_offset",
        "src_timestamp",
        F.lit(str(QuarantineStage.READ_DUMP)).alias("stage"),
        F.lit("malformed").alias("kind"),
        F.col("source_error").alias("reason"),
        F.lit(None).cast("smallint").alias("record_type"),
        F.lit(None).cast("smallint").alias("value_version"),
        F.lit(None).cast("int").alias("error_offset"),
        F.col("key"),
        F.col("value"),
    )


def split_decoded(decoded: DataFrame, config: RadarConfig) -> dict[str, DataFrame]:
    """One DataFrame per silver table from a decoded batch (`transforms.decode` output)."""
    out: dict[str, DataFrame] = {}
    for column, table in PAYLOAD_COLUMNS.items():
        rows = decoded.where(F.col("target") == table.name).select(
            F.lit(config.cluster).alias("cluster"),
            "src_topic",
            "src_partition",
            "src_offset",
            "src_timestamp",
            f"{column}.*",
        )
        if table is OFFSET_COMMITS:
            rows = rows.withColumn("commit_date", F.to_date(F.coalesce("commit_ts", "src_timestamp")))
        out[table.name] = rows.select(*table.column_names)
    return out


def spread_over_cores(rows: DataFrame) -> DataFrame:
    """Python decoding runs one worker per partition: a batch from fewer partitions than cores (a dump file, a
    one-partition topic) is spread out first, so every core decodes."""
    cores = rows.sparkSession.sparkContext.defaultParallelism
    return rows.repartition(cores) if rows.rdd.getNumPartitions() < cores else rows


def decode_offsets(batch: DataFrame) -> DataFrame:
    """Decode Kafka rows with the codec, vectorised over Arrow batches (no per-row Python UDF)."""
    ddl = decoded_batch_ddl()
    arrow_schema = to_arrow_schema(StructType.fromDDL(ddl))
    rows = batch.where(F.col("source_error").isNull()).select(
        "key", "value", "topic", "partition", "offset", "timestamp"
    )
    return spread_over_cores(rows).mapInArrow(partial(decode_offsets_batches, schema=arrow_schema), ddl)


def append_all(writes: dict[str, DataFrame], config: RadarConfig, app_id: str, batch_id: int) -> None:
    """Append one micro-batch to several tables concurrently: each Delta commit is mostly driver-side latency, so
    the tables' commits overlap instead of queueing. Every write stays idempotent on its own (txnAppId per table);
    the first failure is raised after all writes finished, and the batch is retried as a whole."""
    with ThreadPoolExecutor(max_workers=len(writes), thread_name_prefix="radar-append") as pool:
        futures = [
            pool.submit(append_idempotent, rows, config, TABLES[name], f"{app_id}:{name}", batch_id)
            for name, rows in writes.items()
        ]
    for future in futures:
        future.result()


RoutedSplit = Callable[[DataFrame, RadarConfig], dict[str, DataFrame]]


def routed_batch_writer(
    config: RadarConfig,
    app_id: str,
    route: Callable[[DataFrame], DataFrame],
    split: RoutedSplit,
    bronze: TableSchema,
    *,
    with_unreadable_source_rows: bool = False,
) -> BatchWriter:
    """A foreachBatch body: route the batch once (mapInArrow), then append bronze and every target table.

    Tables with no rows in this batch are not written: a Delta commit costs most of a second even when empty,
    and skipping a txnVersion is harmless (a replayed batch is empty for the same tables again).
    """

    def write(batch: DataFrame, batch_id: int) -> None:
        batch.persist()
        routed = route(batch).persist()
        try:
            present = {row["target"] for row in routed.select("target").distinct().collect()}
            tables = {name: rows for name, rows in split(routed, config).items() if name in present}
            if with_unreadable_source_rows:
                unreadable = _unreadable_source_rows(batch, config)
                if not unreadable.isEmpty():
                    quarantine = tables.get(QUARANTINE.name)
                    tables[QUARANTINE.name] = unreadable if quarantine is None else quarantine.unionByName(unreadable)
            if config.ingest.bronze_enabled and present:
                tables[bronze.name] = _bronze(batch, config)
            if tables:
                append_all(tables, config, app_id, batch_id)
        finally:
            routed.unpersist()
            batch.unpersist()

    return write


def offsets_batch_writer(config: RadarConfig, app_id: str = OFFSETS_QUERY) -> BatchWriter:
    """The offsets query: bronze `offsets_raw`, the silver tables, and unreadable dump lines into quarantine."""
    return routed_batch_writer(
        config, app_id, decode_offsets, split_decoded, OFFSETS_RAW, with_unreadable_source_rows=True
    )


def parse_telemetry(batch: DataFrame) -> DataFrame:
    """Parse telemetry records into heartbeat events, vectorised over Arrow batches."""
    ddl = parsed_batch_ddl()
    arrow_schema = to_arrow_schema(StructType.fromDDL(ddl))
    rows = batch.select("key", "value", "topic", "partition", "offset", "timestamp")
    return spread_over_cores(rows).mapInArrow(partial(parse_telemetry_batches, schema=arrow_schema), ddl)


def split_parsed_telemetry(parsed: DataFrame, config: RadarConfig) -> dict[str, DataFrame]:
    """heartbeat_events rows, clock ticks, per-batch counts of unrecognised records, and quarantined records."""
    source = [
        F.lit(config.cluster).alias("cluster"),
        "src_topic",
        "src_partition",
        "src_offset",
        "src_timestamp",
    ]
    events = parsed.where(F.col("target") == HEARTBEAT_EVENTS.name).select(*source, "event.*")
    unrecognised = (
        parsed.where(F.col("target") == TELEMETRY_UNRECOGNISED.name)
        .groupBy("src_topic", "unrecognised.source", "unrecognised.reason")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.min("src_timestamp").alias("first_seen"),
            F.max("src_timestamp").alias("last_seen"),
        )
        .withColumn("cluster", F.lit(config.cluster))
    )
    quarantine = parsed.where(F.col("target") == QUARANTINE.name).select(
        *source,
        "quarantine.stage",
        "quarantine.kind",
        "quarantine.reason",
        F.lit(None).cast("smallint").alias("record_type"),
        F.lit(None).cast("smallint").alias("value_version"),
        F.lit(None).cast("int").alias("error_offset"),
        "quarantine.key",
        "quarantine.value",
    )
    ticks = parsed.where(F.col("target") == CLOCK_TICKS.name).select(*source, "tick.*")
    return {
        HEARTBEAT_EVENTS.name: events.select(*HEARTBEAT_EVENTS.column_names),
        CLOCK_TICKS.name: ticks.select(*CLOCK_TICKS.column_names),
        TELEMETRY_UNRECOGNISED.name: unrecognised.select(*TELEMETRY_UNRECOGNISED.column_names),
        QUARANTINE.name: quarantine.select(*QUARANTINE.column_names),
    }


def telemetry_batch_writer(config: RadarConfig, app_id: str = TELEMETRY_QUERY) -> BatchWriter:
    """The telemetry query: bronze `telemetry_raw` and the parsed events."""
    return routed_batch_writer(config, app_id, parse_telemetry, split_parsed_telemetry, TELEMETRY_RAW)


@dataclass
class IngestQueries:
    """The running queries of one ingest; `stop()` stops them cleanly (the current batch completes)."""

    offsets: StreamingQuery
    telemetry: StreamingQuery | None

    @property
    def all(self) -> list[StreamingQuery]:
        return [q for q in (self.offsets, self.telemetry) if q is not None]

    def stop(self) -> None:
        for query in self.all:
            query.stop()

    def await_all(self) -> None:
        for query in self.all:
            query.awaitTermination()


def start_ingest(
    spark: SparkSession,
    config: RadarConfig,
    source: DataFrame,
    *,
    telemetry_source: DataFrame | None = None,
    checkpoint_name: str = "ingest",
    available_now: bool = False,
    telemetry_topics: Sequence[str] | None = None,
) -> IngestQueries:
    """Start the offsets and telemetry queries over `source` (Kafka or replay, same schema).

    With `telemetry_source`, the telemetry query reads it instead of `source`: on Kafka each query then
    subscribes only to its own topics, so telemetry volume never costs the offsets query a read.
    """
    ensure_tables(spark, config)
    checkpoints = config.checkpoint_dir / checkpoint_name
    offsets_topic = config.kafka.offsets_topic
    telemetry = tuple(config.kafka.telemetry_topics if telemetry_topics is None else telemetry_topics)

    def start(df: DataFrame, name: str, writer: BatchWriter) -> StreamingQuery:
        stream = df.writeStream.queryName(f"{name}-{checkpoint_name}").foreachBatch(writer)
        stream = stream.option("checkpointLocation", str(checkpoints / name))
        stream = (
            stream.trigger(availableNow=True)
            if available_now
            else stream.trigger(processingTime=config.ingest.trigger_interval)
        )
        return stream.start()

    # Delta's txnAppId names the checkpoint: batch ids restart at 0 in every checkpoint, so one app id for all of
    # them would make a second ingest into the same tables (another replay, `radar run` after a replay) skip its
    # first batches as already written.
    offsets_rows = source.where((F.col("topic") == offsets_topic) | F.col("source_error").isNotNull())
    offsets = start(offsets_rows, OFFSETS_QUERY, offsets_batch_writer(config, f"{OFFSETS_QUERY}@{checkpoint_name}"))
    telemetry_query = None
    if telemetry:
        rows = source if telemetry_source is None else telemetry_source
        telemetry_rows = rows.where(F.col("topic").isin(*telemetry) & F.col("source_error").isNull())
        writer = telemetry_batch_writer(config, f"{TELEMETRY_QUERY}@{checkpoint_name}")
        telemetry_query = start(telemetry_rows, TELEMETRY_QUERY, writer)
    return IngestQueries(offsets, telemetry_query)


def replay_checkpoint_name(paths: Sequence[str]) -> str:
    """One checkpoint per set of dump files: replaying the same files again writes nothing twice."""
    from pipelines.sources import replay_staging_dir

    return f"replay-{replay_staging_dir(paths).name}"


def table_counts(spark: SparkSession, config: RadarConfig) -> dict[str, int]:
    """Rows per table (for the summary users see after a run)."""
    catalog = TableCatalog(config)
    return {name: spark.table(catalog.name(table)).count() for name, table in TABLES.items()}


def run_replay(config: RadarConfig, paths: Sequence[str]) -> dict[str, int]:
    """`radar replay`: the ingest queries over dump files, to completion; returns rows per table."""
    from pipelines.session import build_spark_session
    from pipelines.sources import replay_stream

    spark = build_spark_session(config)
    source = replay_stream(spark, paths, staging_root=config.data_dir / "replay-inputs")
    queries = start_ingest(spark, config, source, checkpoint_name=replay_checkpoint_name(paths), available_now=True)
    _await_with_progress(queries)
    return table_counts(spark, config)


def _await_with_progress(queries: IngestQueries, poll_s: float = 2.0) -> None:
    """Wait for the queries, printing a running count of records read per query on stderr."""

    seen: dict[str, dict[int, int]] = {q.name: {} for q in queries.all}

    def summary() -> str:
        # recentProgress keeps only the last few batches, so accumulate by batch id
        for query in queries.all:
            for progress in query.recentProgress:
                seen[query.name][progress.batchId] = int(progress.numInputRows or 0)
        return "  read " + "; ".join(
            f"{name}: {sum(batches.values()):,} records in {len(batches)} micro-batches"
            for name, batches in seen.items()
        )

    while any(q.isActive for q in queries.all):
        print(f"\r{summary():<100}", end="", file=sys.stderr, flush=True)
        for query in queries.all:
            query.awaitTermination(poll_s)
    print(f"\r{summary():<100}", file=sys.stderr)
    for query in queries.all:
        error = query.exception()
        if error is not None:
            raise RuntimeError(f"streaming query {query.name} failed: {error}") from None


def ensure_offsets_topic(bootstrap_servers: str, offsets_topic: str, timeout_s: float = 60.0) -> None:
    """A fresh broker creates `__consumer_offsets` only when a client first looks for a group coordinator:
    ask for one, then wait until every partition of the topic has a leader, so the offsets query can start."""
    import time

    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    deadline = time.monotonic() + timeout_s
    while True:
        topic = admin.list_topics(timeout=10).topics.get(offsets_topic)
        partitions = topic.partitions.values() if topic is not None and topic.error is None else ()
        if partitions and all(p.leader >= 0 and p.error is None for p in partitions):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{offsets_topic} is not ready on {bootstrap_servers} after {timeout_s:.0f} s")
        if topic is None:
            # An offset fetch for any group makes the broker find (and so create) the group coordinator.
            consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "radar-bootstrap"})
            try:
                with contextlib.suppress(KafkaException):  # the readiness check above decides
                    consumer.committed([TopicPartition(offsets_topic, 0)], timeout=10)
            finally:
                consumer.close()
        time.sleep(0.5)


def create_topics(bootstrap_servers: str, topics: Sequence[str], partitions: int = 1) -> None:
    """Create telemetry topics that do not exist yet (the embedded broker starts empty)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    existing = set(admin.list_topics(timeout=10).topics)
    wanted = [NewTopic(t, num_partitions=partitions, replication_factor=1) for t in topics if t not in existing]
    for topic, future in admin.create_topics(wanted).items() if wanted else []:
        try:
            future.result(timeout=30)
        except Exception as exc:  # an already-existing topic is fine; anything else is not
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise RuntimeError(f"could not create topic {topic}: {exc}") from exc


def run_ingest(config: RadarConfig, *, stop_after_s: float | None = None) -> dict[str, int]:
    """`radar run`: against the configured cluster, or the embedded broker when no bootstrap is configured.

    Runs until interrupted (Ctrl-C / SIGTERM: the current micro-batch completes, queries and broker stop).
    """
    import signal
    import time
    from contextlib import ExitStack

    from pipelines.local.broker import EmbeddedKafka
    from pipelines.session import build_spark_session, on_databricks
    from pipelines.sources import kafka_stream

    with ExitStack() as stack:
        bootstrap = config.kafka.bootstrap_servers
        if not bootstrap and on_databricks():
            raise ConfigError(
                "kafka.bootstrap_servers is empty: on Databricks radar reads your cluster, it does not start an "
                "embedded broker; set RADAR__KAFKA__BOOTSTRAP_SERVERS in the job or bootstrap_servers in the conf."
            )
        if not bootstrap:
            broker = stack.enter_context(EmbeddedKafka(config.broker, config.data_dir, spark=config.spark))
            bootstrap = broker.bootstrap_servers
            create_topics(bootstrap, config.kafka.telemetry_topics)
            if config.kafka.telemetry_topics:  # the embedded broker's coordinator log is telemetry: ship it
                from pipelines.local.log_shipper import start_shipper

                stack.callback(start_shipper(broker.log_file, bootstrap, config.kafka.telemetry_topics[0]).stop)
            ensure_offsets_topic(bootstrap, config.kafka.offsets_topic)
        spark = build_spark_session(config)
        telemetry_topics = list(config.kafka.telemetry_topics)
        source = kafka_stream(spark, config, [config.kafka.offsets_topic], bootstrap)
        telemetry_source = kafka_stream(spark, config, telemetry_topics, bootstrap) if telemetry_topics else None
        queries = start_ingest(
            spark, config, source, telemetry_source=telemetry_source, checkpoint_name=f"kafka-{config.cluster}"
        )
        stopping = False

        def request_stop(signum: int, _frame: object) -> None:
            nonlocal stopping
            stopping = True

        previous = signal.signal(signal.SIGTERM, request_stop)
        print(f"radar run: ingesting from {bootstrap} into {config.data_dir}; Ctrl-C to stop", file=sys.stderr)
        started = time.monotonic()
        try:
            while not stopping and all(q.isActive for q in queries.all):
                if stop_after_s is not None and time.monotonic() - started > stop_after_s:
                    break
                queries.offsets.awaitTermination(1.0)
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
            print("radar run: stopping queries ...", file=sys.stderr)
            queries.stop()
        for query in queries.all:
            if query.exception() is not None:
                raise RuntimeError(f"streaming query {query.name} failed: {query.exception()}")
        return table_counts(spark, config)
