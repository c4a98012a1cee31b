"""Ingest throughput: dump -> silver and broker -> silver on a realistic `__consumer_offsets` mix, against a
pass-through of the same records (same source, same Delta sink, no decode) in the same run; prints JSON.

Target (DESIGN §9): >= 300k records/s on 2 cores, and decode+write >= 0.5x the pass-through.
The broker cannot take writes into its own `__consumer_offsets`, so broker -> silver produces the same key/value
bytes into an ordinary topic and points the offsets query at it (`kafka.offsets_topic`).

    python -m benchmarks.ingest --records 300000 [--data-dir DIR] [--conf conf/local.yml]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from pipelines.config import RadarConfig, load_config
from pipelines.dump import DumpRecord, dump_line
from pipelines.ingest import IngestStage
from pipelines.local.sample_dump import consumer_members, example_value
from pipelines.sources import kafka_stream, replay_stream
from pipelines.tables import TableCatalog
from transforms.offsets_batch import decoded_batch_ddl, route_offsets_batch
from transforms.schemas import OFFSETS_RAW
from transforms.wire.coordinator_records import RECORD_TYPES, encode_coordinator_record

BASE_TS = 1_763_780_000_000
TOPIC_ID = "MKXx1fIkQy2J9jXHhK8m1w"
KIP848_TYPES = (3, 4, 5, 6, 7, 8)
Record = tuple[bytes, bytes | None]


def realistic_mix(count: int, seed: int = 1) -> tuple[list[Record], Counter[str]]:
    """~90% OffsetCommit v3/v4, ~10% GroupMetadata v3/v4 with 10 consumer members, ~0.5% KIP-848 records."""
    rng = random.Random(seed)
    group_metadata = []
    for index in range(64):  # distinct group states, reused: the decoder's cost does not depend on repetition
        version = 3 + index % 2
        value = {"protocolType": "consumer", "generation": 1 + index, "protocol": "range",
                 "leader": "consumer-payments-0-5f0c9a9e", "currentStateTimestamp": BASE_TS,
                 "members": consumer_members(10, version)}
        group_metadata.append(encode_coordinator_record(2, {"group": f"bench-group-{index}"}, version, value))
    kip848 = []
    for record_type in KIP848_TYPES:
        spec = RECORD_TYPES[record_type]
        key = example_value(spec.key, spec.key.valid.low)
        kip848.append(encode_coordinator_record(record_type, key, spec.value.valid.high,
                                                example_value(spec.value, spec.value.valid.high)))
    keys = [encode_coordinator_record(1, {"group": f"bench-group-{g}", "topic": f"topic-{t}", "partition": p}, None,
                                      None)[0] for g in range(200) for t in range(4) for p in range(12)]
    mix: Counter[str] = Counter()
    records: list[Record] = []
    for index in range(count):
        draw = rng.random()
        if draw < 0.005:
            records.append(kip848[index % len(kip848)])
            mix["kip848"] += 1
        elif draw < 0.105:
            records.append(group_metadata[index % len(group_metadata)])
            mix["group_metadata_v3_v4_10_members"] += 1
        else:
            version = 3 + index % 2
            value = {"offset": index, "leaderEpoch": 5, "metadata": "", "commitTimestamp": BASE_TS + index,
                     "topicId": TOPIC_ID}
            _, encoded = encode_coordinator_record(1, {"group": "g", "topic": "t", "partition": 0}, version, value)
            records.append((keys[index % len(keys)], encoded))
            mix["offset_commit_v3_v4"] += 1
    return records, mix


def passthrough_writer(path: Path) -> Callable[[DataFrame, int], None]:
    """The baseline sink: the raw rows into one Delta table, idempotent like the real one, no decode."""

    def write(batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("key", "value", "topic", "partition", "offset", "timestamp")
        rows.write.format("delta").mode("append").option("txnAppId", "passthrough").option(
            "txnVersion", batch_id
        ).save(str(path))

    return write


def delta_rows(spark: SparkSession, path: Path) -> int:
    """Rows in a Delta table (0 before it exists): what a run really wrote, counted outside the timing."""
    return spark.read.format("delta").load(str(path)).count() if (path / "_delta_log").is_dir() else 0


def timed_passthrough(spark: SparkSession, source: DataFrame, config: RadarConfig, name: str) -> dict[str, Any]:
    """Same source filter as the offsets query, written raw; timed from start to termination."""
    rows = source.where((F.col("topic") == config.kafka.offsets_topic) | F.col("source_error").isNotNull())
    path = config.data_dir / "passthrough" / name
    started = time.perf_counter()
    query = (
        rows.writeStream.foreachBatch(passthrough_writer(path))
        .option("checkpointLocation", str(config.checkpoint_dir / f"passthrough-{name}"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return measured(time.perf_counter() - started, delta_rows(spark, path))


def timed_ingest(
    spark: SparkSession, source: DataFrame, config: RadarConfig, name: str, *, from_kafka: bool = False
) -> dict[str, Any]:
    """The real offsets query (decode + bronze + every silver table), timed from start to termination."""
    bronze = TableCatalog(config).location(OFFSETS_RAW)
    assert bronze is not None
    before = delta_rows(spark, bronze)
    started = time.perf_counter()
    stage = IngestStage(
        spark, config, source, checkpoint_name=name, available_now=True, telemetry_topics=(), from_kafka=from_kafka
    )
    queries = stage.start()
    queries.await_all()
    seconds = time.perf_counter() - started
    return measured(seconds, delta_rows(spark, bronze) - before)


def measured(seconds: float, records: int) -> dict[str, Any]:
    return {"records": records, "seconds": round(seconds, 2), "records_per_s": round(records / seconds)}


def python_decode_only(records: list[Record], limit: int = 50_000) -> dict[str, Any]:
    """The decoder alone on one core (no Spark, no Delta): the ceiling of mapInArrow per Python worker."""
    sample = records[:limit]
    batch = pa.RecordBatch.from_pydict(
        {
            "key": pa.array([k for k, _ in sample], pa.binary()),
            "value": pa.array([v for _, v in sample], pa.binary()),
            "topic": pa.array(["__consumer_offsets"] * len(sample)),
            "partition": pa.array([0] * len(sample), pa.int32()),
            "offset": pa.array(range(len(sample)), pa.int64()),
            "timestamp": pa.array([BASE_TS * 1000] * len(sample), pa.timestamp("us", tz="UTC")),
        }
    )
    schema = to_arrow_schema(StructType.fromDDL(decoded_batch_ddl()))
    started = time.perf_counter()
    route_offsets_batch(batch, schema)
    return measured(time.perf_counter() - started, len(sample))


def write_dump(records: list[Record], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for offset, (key, value) in enumerate(records):
            out.write(dump_line(DumpRecord("__consumer_offsets", offset % 2, offset // 2, BASE_TS, key, value)) + "\n")


def produce(bootstrap: str, topic: str, records: list[Record]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 1_000_000, "compression.type": "lz4"})
    for index, (key, value) in enumerate(records):
        while True:
            try:
                producer.produce(topic, key=key, value=value, partition=index % 2)
                break
            except BufferError:
                producer.poll(0.1)
    if producer.flush(120) != 0:
        raise RuntimeError("could not produce every benchmark record")


def run(config: RadarConfig, count: int) -> dict[str, Any]:
    from pipelines.local.broker import EmbeddedKafka
    from pipelines.local.topics import create_topics
    from pipelines.session import build_spark_session

    records, mix = realistic_mix(count)
    result: dict[str, Any] = {"records": count, "mix": dict(mix)}
    with ExitStack() as stack:
        spark = build_spark_session(config)
        result["python_decode_only"] = python_decode_only(records)  # needs a session only to parse the DDL
        warm = config.data_dir / "warmup" / "warm.jsonl"  # JVM, Python workers and Delta warm before timing
        write_dump(records[:2000], warm)
        timed_ingest(spark, replay_stream(spark, [warm]), config.model_copy(), "warmup")

        dump = config.data_dir / "dump" / "bench.jsonl"
        write_dump(records, dump)
        result["dump_passthrough"] = timed_passthrough(spark, replay_stream(spark, [dump]), config, "dump")
        result["dump_to_silver"] = timed_ingest(spark, replay_stream(spark, [dump]), config, "dump")

        bootstrap = config.kafka.bootstrap_servers
        if not bootstrap:
            broker = stack.enter_context(EmbeddedKafka(config.broker, config.data_dir, spark=config.spark))
            bootstrap = broker.bootstrap_servers
        topic = f"bench.offsets.{int(time.time())}"
        create_topics(bootstrap, [topic], partitions=2)
        produce(bootstrap, topic, records)
        kafka_config = config.model_copy(update={"kafka": config.kafka.model_copy(update={"offsets_topic": topic})})
        result["broker_passthrough"] = timed_passthrough(
            spark, kafka_stream(spark, kafka_config, [topic], bootstrap), kafka_config, "broker"
        )
        result["broker_to_silver"] = timed_ingest(
            spark, kafka_stream(spark, kafka_config, [topic], bootstrap), kafka_config, "broker", from_kafka=True
        )
        result["max_offsets_per_trigger"] = config.kafka.max_offsets_per_trigger
    for kind in ("dump", "broker"):
        result[f"ratio_{kind}_decode_vs_passthrough"] = round(
            result[f"{kind}_to_silver"]["records_per_s"] / result[f"{kind}_passthrough"]["records_per_s"], 3
        )
    result["target"] = {"records_per_s": 300_000, "ratio": 0.5}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--conf", default="conf/local.yml")
    parser.add_argument("--data-dir", default=None, help="default: a temporary folder, removed afterwards")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="radar-bench-") as scratch:
        config = load_config(args.conf).with_data_dir(Path(args.data_dir or scratch))
        print(json.dumps(run(config, args.records), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
