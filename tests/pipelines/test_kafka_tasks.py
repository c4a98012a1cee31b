"""How many tasks read a Kafka micro-batch: a partition's range of more than `kafka.max_records_per_task` records is
split by the source itself (a backlog decodes on every core without a shuffle), a live batch of a few records stays
one task per partition; the ingest writes every record once either way. The source polls in large fetches, and a
record larger than one is still read."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.stages.ingest import route_offsets
from rebalance_radar.pipelines.stages.sources import CONSUMER_FETCH_OPTIONS, kafka_source_options, kafka_stream
from rebalance_radar.transforms.schemas import OFFSET_COMMITS, OFFSETS_RAW
from rebalance_radar.transforms.wire.coordinator_records import encode_coordinator_record
from tests.pipelines.ingest_support import (
    coordinates,
    create_topic,
    isolated_config,
    run_kafka_ingest_now,
    table,
)

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

RECORDS = 30


def one_partition_of_commits(bootstrap: str) -> str:
    """A one-partition topic holding RECORDS OffsetCommit records (the offsets query reads it as its offsets topic)."""
    topic = f"offsets-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(RECORDS):
        key, value = encode_coordinator_record(
            1, {"group": "tasks", "topic": "orders", "partition": index}, 3, {"offset": index, "metadata": ""}
        )
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0
    return topic


def read_tasks(spark: SparkSession, config: RadarConfig, topic: str, bootstrap: str) -> list[tuple[int, int, int]]:
    """Per micro-batch of a stream over the whole topic: (tasks of the Kafka read, tasks of its routing as ingest
    runs it, records routed). Streaming: Spark's batch reads do not split by maxRecordsPerPartition."""
    seen: list[tuple[int, int, int]] = []

    def look(batch: DataFrame, _batch_id: int) -> None:
        routed = route_offsets(batch, spread=False)
        seen.append((batch.rdd.getNumPartitions(), routed.rdd.getNumPartitions(), routed.count()))

    checkpoint = config.checkpoint_dir / f"tasks-{uuid.uuid4().hex[:8]}"
    query = (
        kafka_stream(spark, config, [topic], bootstrap)
        .writeStream.foreachBatch(look)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return seen


def test_a_large_range_is_split_by_the_source_and_a_small_one_is_one_task(
    spark: SparkSession, kafka_broker: object, radar_config: RadarConfig, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers  # type: ignore[attr-defined]
    topic = one_partition_of_commits(bootstrap)
    assert radar_config.kafka.max_records_per_task == 100_000  # the default
    assert read_tasks(spark, radar_config, topic, bootstrap) == [(1, 1, RECORDS)]
    split = isolated_config(radar_config, tmp_path / "split", offsets_topic=topic, max_records_per_task=10)
    assert read_tasks(spark, split, topic, bootstrap) == [(3, 3, RECORDS)]

    run_kafka_ingest_now(spark, split, bootstrap)  # the real offsets query over the split ranges
    for schema in (OFFSETS_RAW, OFFSET_COMMITS):
        written = coordinates(table(spark, split, schema))
        assert sorted(written) == [(topic, 0, offset) for offset in range(RECORDS)], schema.name


def test_a_record_larger_than_a_fetch_is_read_with_its_neighbours(
    spark: SparkSession, kafka_broker: object, radar_config: RadarConfig
) -> None:
    """The source reads in large polls (`CONSUMER_FETCH_OPTIONS`); a record bigger than a partition's fetch size
    (a huge group's GroupMetadata) is still read, in order, with the small records around it."""
    bootstrap = kafka_broker.bootstrap_servers  # type: ignore[attr-defined]
    fetch_bytes = int(CONSUMER_FETCH_OPTIONS["kafka.max.partition.fetch.bytes"])
    topic = f"big-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"max.message.bytes": str(3 * fetch_bytes)}
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, config=config)])[topic].result(30)
    big = bytes(range(256)) * (fetch_bytes // 256 + 4096)  # larger than one fetch
    sizes = [10, len(big), 10, 7_000]
    producer = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 3 * fetch_bytes, "linger.ms": 0})
    for size in sizes:
        producer.produce(topic, value=big[:size])
        producer.flush(30)  # one record a batch: the big one arrives alone
    options = kafka_source_options(radar_config, [topic], bootstrap)
    assert options["kafka.max.partition.fetch.bytes"] == str(fetch_bytes)
    rows = (
        spark.read.format("kafka")
        .options(**{k: v for k, v in options.items() if k != "maxOffsetsPerTrigger"})
        .load()
        .selectExpr("offset", "length(value) AS size")
        .orderBy("offset")
        .collect()
    )
    assert [(r["offset"], r["size"]) for r in rows] == list(enumerate(sizes))


def test_a_new_checkpoint_starts_at_a_moment_and_a_partition_quiet_since_then_at_its_end(
    spark: SparkSession, kafka_broker: object, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """`kafka.starting_offsets` as a moment: each partition from its first record at or after it; a partition with
    none (Spark's default strategy fails the query there) starts at its end and reads what comes next."""
    bootstrap = kafka_broker.bootstrap_servers  # type: ignore[attr-defined]
    topic = f"moment-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    moment = datetime.now(UTC)
    at = int(moment.timestamp() * 1000)
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, value, timestamp in ((0, b"old-0", at - 60_000), (1, b"old-1", at - 60_000), (0, b"new-0", at)):
        producer.produce(topic, value=value, partition=partition, timestamp=timestamp)
    assert producer.flush(30) == 0
    config = isolated_config(radar_config, tmp_path / "moment", starting_offsets=moment)
    checkpoint = config.checkpoint_dir / "moment"

    def read_once() -> list[bytes]:
        seen: list[bytes] = []
        query = (
            kafka_stream(spark, config, [topic], bootstrap)
            .writeStream.foreachBatch(lambda batch, _id: seen.extend(r.value for r in batch.collect()))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return seen

    assert read_once() == [b"new-0"]
    producer.produce(topic, value=b"next-1", partition=1)
    assert producer.flush(30) == 0
    assert read_once() == [b"next-1"]
