"""What the ingest tests share: an isolated config per test, Delta tables read by path, Kafka read as the truth.

Every test gets its own data dir and table prefix, because the run has one SparkSession whose catalog would
otherwise resolve `radar.offsets_raw` to whichever test registered it first.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.stages.ingest import IngestStage
from rebalance_radar.pipelines.stages.sources import kafka_stream
from rebalance_radar.pipelines.stages.streams import RunningQueries
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import GROUP_METADATA, GROUP_RECORDS, OFFSET_COMMITS, QUARANTINE, TableSchema
from tests.polling import wait_for as wait_for  # the tests' one poll with a deadline, long imported from here

OFFSETS_SILVER = (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS, QUARANTINE)
Coordinate = tuple[str, int, int]  # (topic, partition, offset)


def isolated_config(base: RadarConfig, data_dir: Path, **kafka: object) -> RadarConfig:
    """`base` with its own data dir, its own table names, and optional `kafka` section overrides."""
    prefix = f"t{uuid.uuid4().hex[:8]}_"
    config = base.with_data_dir(data_dir)
    storage = config.storage.model_copy(update={"table_prefix": prefix})
    return config.model_copy(update={"storage": storage, "kafka": config.kafka.model_copy(update=kafka)})


def table(spark: SparkSession, config: RadarConfig, schema: TableSchema) -> DataFrame:
    """A Delta table read by path (an empty frame when nothing was written yet)."""
    location = TableCatalog(config).location(schema)
    assert location is not None
    if not (location / "_delta_log").is_dir():
        return spark.createDataFrame([], schema.ddl)
    return spark.read.format("delta").load(str(location))


def coordinates(df: DataFrame) -> list[Coordinate]:
    """Every row's Kafka coordinates, duplicates kept (so a double write shows)."""
    return [
        (r.src_topic, r.src_partition, r.src_offset)
        for r in df.select("src_topic", "src_partition", "src_offset").collect()
    ]


def duplicates(items: Iterable[Coordinate]) -> list[Coordinate]:
    return sorted(item for item, n in Counter(items).items() if n > 1)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)


def _truth_consumer(bootstrap: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"truth-{uuid.uuid4().hex[:8]}",  # assign() only: this group never joins nor commits
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )


Partition = tuple[str, int]


def end_offsets(bootstrap: str, topics: Sequence[str]) -> dict[Partition, int]:
    """The read_committed end (last stable offset) of every partition of `topics`."""
    consumer = _truth_consumer(bootstrap)
    try:
        metadata = consumer.list_topics(timeout=10)
        return {
            (t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
            for t in topics
            for p in sorted(metadata.topics[t].partitions)
        }
    finally:
        consumer.close()


def kafka_coordinates(
    bootstrap: str, topics: Sequence[str], until: dict[Partition, int] | None = None, timeout_s: float = 60.0
) -> list[Coordinate]:
    """Every record of `topics`, read_committed from the start to `until` (default: the end now): the truth that
    the tables are compared with."""
    ends = end_offsets(bootstrap, topics)
    if until is not None:
        assert all(until.get(key, 0) <= high for key, high in ends.items()), (until, ends)
        ends = {key: until.get(key, 0) for key in ends}
    consumer = _truth_consumer(bootstrap)
    try:
        pending = {key for key, end in ends.items() if end > 0}
        found: list[Coordinate] = []
        consumer.assign([TopicPartition(t, p, 0) for t, p in pending])
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            key = (message.topic(), message.partition())
            if message.error():
                if message.error().code() == -191:  # _PARTITION_EOF: read_committed end (LSO) reached
                    pending.discard(key)
                continue
            if message.offset() < ends[key]:
                found.append((key[0], key[1], message.offset()))
            if message.offset() + 1 >= ends[key]:
                pending.discard(key)
        assert not pending, f"could not read {sorted(pending)} to their end within {timeout_s} s"
        return found
    finally:
        consumer.close()


def run_kafka_ingest_now(
    spark: SparkSession,
    config: RadarConfig,
    bootstrap: str,
    *,
    checkpoint_name: str = "ingest",
    telemetry_topics: Sequence[str] = (),
) -> RunningQueries:
    """One available-now pass of the real ingest over Kafka (both queries when telemetry topics are given), ended."""
    topics = [config.kafka.offsets_topic, *telemetry_topics]
    source = kafka_stream(spark, config, topics, bootstrap)
    queries: RunningQueries = IngestStage(
        spark,
        config,
        source,
        checkpoint_name=checkpoint_name,
        available_now=True,
        telemetry_topics=telemetry_topics,
        from_kafka=True,
    ).start()
    queries.await_all()  # raises the query's exception if it failed
    return queries


def offsets_silver_coordinates(spark: SparkSession, config: RadarConfig) -> list[Coordinate]:
    """Coordinates of every silver row of the offsets query (decoded or quarantined by the decoder)."""
    found: list[Coordinate] = []
    for schema in OFFSETS_SILVER:
        rows = table(spark, config, schema)
        if schema is QUARANTINE:
            rows = rows.where(F.col("stage") != "parse_telemetry")
        found += coordinates(rows)
    return found
