"""Ingest throughput: dump -> silver and broker -> silver on a realistic `__consumer_offsets` mix, against a
pass-through of the same records (same source, same Delta sink, no decode) in the same run; prints JSON and writes
it to `benchmarks/results/ingest-<UTC start>.json` (`benchmarks.result_file`; `--out PATH`, `--no-out`).

Target (issue #50): Kafka -> bronze + silver at >= 0.5x "Kafka -> raw Delta", the same rows written untouched into
one Delta table in the same run (`broker_passthrough`, `ratio_broker_decode_vs_passthrough`). Issue #11's targets
against Kafka -> `noop` (0.6x) and for a dump (100k records/s at the margin) are retired; `broker_noop` and the dump
runs are still measured, as they locate the cost.
`--warm-rounds N` repeats the Kafka runs N more times in the same JVM (`broker_warm`): the first large batch of a JVM
pays its JIT compilation, which a long-running monitor pays once.
`..._floors` are the offsets query's rows taken as far as the design takes them before it writes anything, into
`noop` inside the same `foreachBatch`: Kafka through the Arrow exchange with Python and nothing done there
(`exchange_noop`), Kafka decoded and routed (`decode_noop`); a dump parsed (`parse_noop`), and parsed, its repeats
dropped, decoded and routed (`decode_noop`). No write can make ingest faster than its floor, so `ceiling` says what
the ratios could reach if every Delta write cost nothing; `ceiling.ratio_to_raw_delta` also keeps bronze's write,
the baseline's own (the floor plus what the pass-through spends beyond `noop`): what the design could reach were
silver's writes free. `decode_plain_appends` decodes as the floor does and writes bronze and every silver table as a
bare Delta append (no transaction id, no offset bookkeeping, no checks): `ceiling.ratio_to_raw_delta_plain_appends`
is what the design reaches with its tables written at Delta's own cost.
`dump_replay_ingest` is the large dump's ingest as `radar replay` runs it: the offsets and telemetry queries over the
same files (`ingest_dumps`); `dump_to_silver`, like every other run, times the offsets query alone.
Every timed run writes into its own empty tables; "marginal" is the large run's records beyond a small run of the
same kind over the extra seconds (the fixed cost of a run taken out).
The broker cannot take writes into its own `__consumer_offsets`, so broker -> silver produces the same key/value
bytes into an ordinary topic and points the offsets query at it (`kafka.offsets_topic`).

    python -m benchmarks.ingest --records 300000 [--data-dir DIR] [--conf conf/local.yml] [--warm-rounds 4]
    python -m benchmarks.ingest --records 100000 --masters 'local[2]' standalone --catch-up 2000000 \\
        --catch-up-caps 100000 400000

`--write-dump PATH` writes the mix of `--records` as a dump file and stops: a large replay, end to end, is then
`python -m benchmarks.startup --runs 2 --warmup 0 --commands replay --sample PATH` (its phases: the ingest queries,
the detection query).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery
from pyspark.sql.types import StructType

from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from benchmarks.spark_masters import MASTERS_HELP, STANDALONE, child_figures, each_master
from rebalance_radar.pipelines.config import RadarConfig, load_config
from rebalance_radar.pipelines.formats.dump import DumpRecord, dump_line
from rebalance_radar.pipelines.local.sample_dump import consumer_members, example_value
from rebalance_radar.pipelines.stages.ingest import (
    KAFKA_COLUMNS,
    OFFSETS_QUERY,
    IngestStage,
    ingest_dumps,
    offsets_rows,
    records_once,
    route_offsets,
)
from rebalance_radar.pipelines.stages.sources import kafka_stream, replay_stream
from rebalance_radar.pipelines.storage.tables import TableCatalog, ensure_tables
from rebalance_radar.transforms.offsets_batch import decoded_batch_ddl, route_offsets_batch
from rebalance_radar.transforms.schemas import OFFSETS_RAW
from rebalance_radar.transforms.wire.consumer_protocol import encode_assignment, encode_subscription
from rebalance_radar.transforms.wire.coordinator_records import RECORD_TYPES, encode_coordinator_record

BASE_TS = 1_763_780_000_000
TOPIC_ID = "MKXx1fIkQy2J9jXHhK8m1w"
KIP848_TYPES = (3, 4, 5, 6, 7, 8)
Record = tuple[bytes, bytes | None]


TARGET_RATIO_TO_RAW_DELTA = 0.5  # issue #50: Kafka -> bronze + silver against Kafka -> raw Delta
WARM = "broker_warm_"  # the same Kafka runs again in the same JVM (`--warm-rounds`): its JIT no longer cold
GROUP_STATES = 4096  # distinct GroupMetadata records: 41k member payloads, past the decoder's 16k-entry cache


def generation_members(generation: int, count: int, version: int) -> list[dict[str, Any]]:
    """A consumer group's members as one generation of it persists them (the sample's members, `consumer_members`,
    with that generation's payloads): each subscription carries the generation and the partitions owned in it (Java
    clients since 2.4/2.8 send both), so no two generations share a payload."""
    members = consumer_members(count, version)
    for i, member in enumerate(members):
        owned = [{"topic": "orders", "partitions": [i, count + generation]}]
        subscription = encode_subscription(
            3 if version >= 4 else 1,
            {"topics": ["orders"], "userData": None, "ownedPartitions": owned}
            | ({"generationId": generation, "rackId": f"eu-west-1{'abc'[i % 3]}"} if version >= 4 else {}),
        )
        assigned = [{"topic": "orders", "partitions": [i, count + generation + 1]}]
        member["memberId"] = f"consumer-payments-{i}-{generation:08x}"
        member["subscription"] = subscription
        member["assignment"] = encode_assignment(0, {"assignedPartitions": assigned, "userData": None})
    return members


def realistic_mix(count: int, seed: int = 1) -> tuple[list[Record], Counter[str]]:
    """~90% OffsetCommit v3/v4, ~10% GroupMetadata v3/v4 with 10 consumer members, ~0.5% KIP-848 records.

    Every GroupMetadata record of a real cluster is a new generation whose members' payloads it has not written
    before; `GROUP_STATES` distinct ones, cycled, keep the decoder from answering from its cache (as it could with a
    few dozen reused records, as this mix did until 2026-11-28)."""
    rng = random.Random(seed)
    group_metadata = []
    for index in range(GROUP_STATES):
        version = 3 + index % 2
        value = {
            "protocolType": "consumer",
            "generation": 1 + index,
            "protocol": "range",
            "leader": f"consumer-payments-0-{1 + index:08x}",
            "currentStateTimestamp": BASE_TS,
            "members": generation_members(1 + index, 10, version),
        }
        group_metadata.append(encode_coordinator_record(2, {"group": f"bench-group-{index % 64}"}, version, value))
    kip848 = []
    for record_type in KIP848_TYPES:
        spec = RECORD_TYPES[record_type]
        key = example_value(spec.key, spec.key.valid.low)
        kip848.append(
            encode_coordinator_record(
                record_type, key, spec.value.valid.high, example_value(spec.value, spec.value.valid.high)
            )
        )
    coordinates = [{"group": f"bench-group-{g}", "topic": f"topic-{t}", "partition": p}
                   for g in range(200) for t in range(4) for p in range(12)]  # fmt: skip
    keys = [encode_coordinator_record(1, key, None, None)[0] for key in coordinates]
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
            value = {
                "offset": index,
                "leaderEpoch": 5,
                "metadata": "",
                "commitTimestamp": BASE_TS + index,
                "topicId": TOPIC_ID,
            }
            _, encoded = encode_coordinator_record(1, {"group": "g", "topic": "t", "partition": 0}, version, value)
            records.append((keys[index % len(keys)], encoded))
            mix["offset_commit_v3_v4"] += 1
    return records, mix


def passthrough_writer(path: Path) -> Callable[[DataFrame, int], None]:
    """The baseline sink: the raw rows into one Delta table, idempotent like the real one, no decode."""

    def write(batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("key", "value", "topic", "partition", "offset", "timestamp")
        rows.write.format("delta").mode("append").option("txnAppId", "passthrough").option("txnVersion", batch_id).save(
            str(path)
        )

    return write


def delta_rows(spark: SparkSession, path: Path) -> int:
    """Rows in a Delta table (0 before it exists): what a run really wrote, counted outside the timing."""
    return spark.read.format("delta").load(str(path)).count() if (path / "_delta_log").is_dir() else 0


def run_to_end(writer: DataStreamWriter, checkpoint: Path) -> tuple[float, StreamingQuery]:
    """A query started with an available-now trigger and waited for: its seconds from start to termination."""
    started = time.perf_counter()
    query = writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    query.awaitTermination()
    return time.perf_counter() - started, query


def input_rows(query: StreamingQuery) -> int:
    return sum(p["numInputRows"] for p in query.recentProgress)


def timed_passthrough(
    spark: SparkSession, source: DataFrame, config: RadarConfig, name: str, *, ended: list[float] | None = None
) -> dict[str, Any]:
    """Same source filter as the offsets query, written raw; timed from start to termination (the epoch time of
    which is appended to `ended`, when given)."""
    path = config.data_dir / "passthrough" / name
    writer = offsets_rows(source, config).writeStream.foreachBatch(passthrough_writer(path))
    seconds, _ = run_to_end(writer, config.checkpoint_dir / f"passthrough-{name}")
    if ended is not None:
        ended.append(time.time())
    return measured(seconds, delta_rows(spark, path))


def timed_noop(source: DataFrame, config: RadarConfig, name: str) -> dict[str, Any]:
    """The issue's own pass-through: the same rows read and dropped by Spark's `noop` sink (no write at all), so
    the ratio to it says what reading costs against everything ingest does; timed from start to termination."""
    writer = offsets_rows(source, config).writeStream.format("noop")
    seconds, query = run_to_end(writer, config.checkpoint_dir / f"noop-{name}")
    return measured(seconds, input_rows(query))


FloorBody = Callable[[DataFrame, list[DataFrame]], DataFrame]  # a batch, and the list of what it caches


def _batches_unchanged(batches: Iterator[Any]) -> Iterator[Any]:
    """A `mapInArrow` body that passes its input on: the Arrow exchange with Python, nothing done there."""
    yield from batches


def kafka_exchange(batch: DataFrame, held: list[DataFrame]) -> DataFrame:
    """A Kafka batch's columns to the Python workers and back, nothing done there: what `mapInArrow` costs."""
    rows = batch.select(*KAFKA_COLUMNS)
    return rows.mapInArrow(_batches_unchanged, rows.schema)


def kafka_decode(batch: DataFrame, held: list[DataFrame]) -> DataFrame:
    """A Kafka batch decoded and routed as the offsets query does it, before the cache and the writes."""
    return route_offsets(batch, spread=False)


def timed_plain_appends(source: DataFrame, config: RadarConfig, name: str) -> dict[str, Any]:
    """The offsets query's tables written as bare Delta appends: each Kafka batch decoded and routed once (cached,
    as the offsets query caches it), then bronze and every silver table appended to a table of its own with no
    transaction id, no offset bookkeeping and no checks: what the writes themselves cost beside the decode."""
    from rebalance_radar.pipelines.stages.ingest import split_decoded

    root = config.data_dir / "plain_appends" / name
    table_s: Counter[str] = Counter()  # each table's appends, one after another

    def append_all(batch: DataFrame, batch_id: int) -> None:
        records = batch.persist()  # read from Kafka once, as the offsets query holds its batch
        routed = route_offsets(records, spread=False).persist()
        try:
            received = {row["target"] for row in routed.select("target").distinct().collect()}  # one job, as ingest's
            tables = {table: rows for table, rows in split_decoded(routed, config).items() if table in received}
            for table, rows in {**tables, OFFSETS_RAW.name: records}.items():
                started = time.perf_counter()
                rows.write.format("delta").mode("append").save(str(root / table))
                table_s[table] += time.perf_counter() - started
        finally:
            routed.unpersist()
            records.unpersist()

    writer = offsets_rows(source, config).writeStream.foreachBatch(append_all)
    seconds, query = run_to_end(writer, config.checkpoint_dir / f"plain-appends-{name}")
    return measured(seconds, input_rows(query)) | {"append_s": {t: round(v, 2) for t, v in table_s.most_common()}}


def dump_parse(batch: DataFrame, held: list[DataFrame]) -> DataFrame:
    """A dump's batch as parsed (the parse is the source's `mapInArrow`)."""
    return batch


def dump_decode(batch: DataFrame, held: list[DataFrame]) -> DataFrame:
    """A dump's batch parsed, each record once (`records_once`, cached as the offsets query caches it), spread,
    decoded and routed as the offsets query does it."""
    return route_offsets(records_once(batch, held))


def timed_floor(
    source: DataFrame, config: RadarConfig, name: str, body: FloorBody, records: int | None = None
) -> dict[str, Any]:
    """The offsets query's rows through `body` into `noop` in a `foreachBatch`, as ingest runs its batches: its cost
    with nothing written; timed from start to termination. `records`: the records a dump source holds (its progress
    counts files); a Kafka source's progress counts its records."""

    def into_noop(batch: DataFrame, batch_id: int) -> None:
        held: list[DataFrame] = []
        try:
            body(batch, held).write.format("noop").mode("overwrite").save()
        finally:
            for cached in held:
                cached.unpersist()

    writer = offsets_rows(source, config).writeStream.foreachBatch(into_noop)
    seconds, query = run_to_end(writer, config.checkpoint_dir / f"floor-{name}")
    return measured(seconds, records if records is not None else input_rows(query))


def timed_ingest(
    spark: SparkSession,
    source: DataFrame,
    config: RadarConfig,
    name: str,
    *,
    records: int,
    from_kafka: bool = False,
) -> dict[str, Any]:
    """The real offsets query (decode + bronze + every silver table), timed from start to termination; the tables
    are created before the clock starts (the pass-through's one table is created by its first write). Its rate is
    by the rows bronze gained, or by `records` (the records the source holds) when bronze is turned off."""
    bronze = TableCatalog(config).location(OFFSETS_RAW)
    assert bronze is not None
    ensure_tables(spark, config)
    before = delta_rows(spark, bronze)
    started = time.perf_counter()
    stage = IngestStage(
        spark, config, source, checkpoint_name=name, available_now=True, telemetry_topics=(), from_kafka=from_kafka
    )
    queries = stage.start()
    queries.await_all()
    seconds = time.perf_counter() - started
    written = delta_rows(spark, bronze) - before if config.ingest.bronze_enabled else records
    result = measured(seconds, written)
    batches = [p for q in queries for p in q.recentProgress if OFFSETS_QUERY in q.name and p["numInputRows"]]
    if batches:
        result["micro_batches"] = len(batches)
        phases = sorted({name for p in batches for name in p["durationMs"]})
        result["batch_phases_s_p50"] = {  # Spark's own account of a micro-batch (addBatch = the foreachBatch body)
            name: round(statistics.median(p["durationMs"].get(name, 0) for p in batches) / 1000, 2) for name in phases
        }
    return result


def timed_replay(spark: SparkSession, dump: Path, config: RadarConfig) -> dict[str, Any]:
    """The replay's ingest as `radar replay` runs it (`ingest_dumps`: the offsets query and the telemetry query over
    the same files), timed from start to termination; the tables are created before the clock starts."""
    bronze = TableCatalog(config).location(OFFSETS_RAW)
    assert bronze is not None
    ensure_tables(spark, config)
    started = time.perf_counter()
    ingest_dumps(spark, config, [str(dump)])
    return measured(time.perf_counter() - started, delta_rows(spark, bronze))


def isolated(config: RadarConfig, name: str) -> RadarConfig:
    """A config whose tables, checkpoints and table names are `name`'s own: each timed run writes into empty
    tables, as a replay into a new data dir or `radar run` on a new cluster does (the restart path, where the
    tables hold some of the batch, is what the replay and crash tests cover)."""
    own = config.with_data_dir(config.data_dir / name)
    return own.model_copy(update={"storage": own.storage.model_copy(update={"table_prefix": f"{name}_"})})


def with_offsets_topic(config: RadarConfig, topic: str, cap: int | None = None) -> RadarConfig:
    update: dict[str, Any] = {"offsets_topic": topic}
    if cap is not None:
        update["max_offsets_per_trigger"] = cap
    return config.model_copy(update={"kafka": config.kafka.model_copy(update=update)})


def marginal(small: dict[str, Any], large: dict[str, Any]) -> int | None:
    """Records/s of the records beyond the small run: the rate once the fixed cost of a run is paid."""
    extra_s = large["seconds"] - small["seconds"]
    return round((large["records"] - small["records"]) / extra_s) if extra_s > 0 else None


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


def write_dump(records: list[Record], path: Path, *, step_ms: int = 0) -> None:
    """The records as a dump of two partitions; the n-th record's timestamp `BASE_TS + n * step_ms` (0: all one
    instant, which decoding does not mind; a replay's detection runs on event time)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for offset, (key, value) in enumerate(records):
            record = DumpRecord("__consumer_offsets", offset % 2, offset // 2, BASE_TS + offset * step_ms, key, value)
            out.write(dump_line(record) + "\n")


def produce(bootstrap: str, topic: str, records: list[Record]) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "compression.type": "lz4",
        }
    )
    for index, (key, value) in enumerate(records):
        while True:
            try:
                producer.produce(topic, key=key, value=value, partition=index % 2)
                break
            except BufferError:
                producer.poll(0.1)
    if producer.flush(120) != 0:
        raise RuntimeError("could not produce every benchmark record")


def run(
    config: RadarConfig, count: int, fixed_count: int, catch_up: int, caps: list[int], warm_rounds: int = 0
) -> dict[str, Any]:
    from rebalance_radar.pipelines.local.broker import EmbeddedKafka
    from rebalance_radar.pipelines.local.topics import create_topics
    from rebalance_radar.pipelines.runtime.session import build_spark_session

    records, mix = realistic_mix(max(count, catch_up))
    result: dict[str, Any] = {"master": config.spark.master, "records": count, "mix": dict(mix)}
    with ExitStack() as stack:
        spark = build_spark_session(config)
        result["python_decode_only"] = python_decode_only(records)  # needs a session only to parse the DDL
        warm = config.data_dir / "warmup.jsonl"  # JVM, Python workers and Delta warm before timing
        write_dump(records[:2000], warm)
        timed_ingest(spark, replay_stream(spark, [warm]), isolated(config, "warmup"), "warmup", records=2_000)
        progress(f"{config.spark.master}: warm")

        for label, size in (("dump_fixed", fixed_count), ("dump", count)):
            dump = config.data_dir / f"{label}.jsonl"
            write_dump(records[:size], dump)
            if label == "dump":
                result["dump_passthrough"] = timed_passthrough(
                    spark, replay_stream(spark, [dump]), isolated(config, "dump_passthrough"), "dump"
                )
            result[f"{label}_to_silver"] = timed_ingest(
                spark, replay_stream(spark, [dump]), isolated(config, label), label, records=size
            )
            progress(f"{config.spark.master}: {label} {result[f'{label}_to_silver']}")
            result[f"{label}_floors"] = {
                floor: timed_floor(
                    replay_stream(spark, [dump]), isolated(config, f"{label}_{floor}"), label, body, records=size
                )
                for floor, body in (("parse_noop", dump_parse), ("decode_noop", dump_decode))
            }
            progress(f"{config.spark.master}: {label} floors {result[f'{label}_floors']}")
            if label == "dump":  # both ingest queries, as a user's replay runs them
                result["dump_replay_ingest"] = timed_replay(spark, dump, isolated(config, "dump_replay"))
                progress(f"{config.spark.master}: dump replay ingest {result['dump_replay_ingest']}")

        bootstrap = config.kafka.bootstrap_servers
        if not bootstrap:
            broker = stack.enter_context(EmbeddedKafka(config.broker, config.data_dir, spark=config.spark))
            bootstrap = broker.bootstrap_servers
        topics = {"broker_fixed": (fixed_count, None), "broker": (count, None)}
        topics |= {f"{WARM}{round_}": (count, None) for round_ in range(1, warm_rounds + 1)}
        topics |= {f"catch_up_{cap}": (catch_up, cap) for cap in caps if catch_up}
        named = {label: f"bench.{label}.{int(time.time())}" for label in topics}
        create_topics(bootstrap, list(named.values()), partitions=2)
        for label, (size, cap) in topics.items():
            started = time.perf_counter()
            produce(bootstrap, named[label], records[:size])
            progress(f"{config.spark.master}: produced {size} records in {time.perf_counter() - started:.1f} s")
            own = with_offsets_topic(isolated(config, label), named[label], cap)
            stream = kafka_stream(spark, own, [named[label]], bootstrap)
            if label == "broker":
                result["broker_noop"] = timed_noop(stream, own, "broker")
                result["broker_passthrough"] = timed_passthrough(spark, stream, own, "broker")
            if label.startswith(WARM):
                noop = timed_noop(stream, own, label)
                ingested = timed_ingest(spark, stream, own, label, records=size, from_kafka=True)
                floor = timed_floor(stream, own, label, kafka_decode)
                result.setdefault("broker_warm", []).append(
                    {"noop_s": noop["seconds"], "to_silver_s": ingested["seconds"], "decode_noop_s": floor["seconds"],
                     "ratio_decode_vs_noop": round(noop["seconds"] / ingested["seconds"], 3),
                     "ceiling_ratio": round(noop["seconds"] / floor["seconds"], 3)}
                )  # fmt: skip
                progress(f"{config.spark.master}: {label} {result['broker_warm'][-1]}")
                continue
            key = f"{label}_to_silver" if not label.startswith("catch_up") else label
            result[key] = timed_ingest(spark, stream, own, label, records=size, from_kafka=True)
            progress(f"{config.spark.master}: {label} {result[key]}")
            if label == "broker":
                result["broker_floors"] = {
                    floor: timed_floor(stream, own, f"{label}_{floor}", body)
                    for floor, body in (("exchange_noop", kafka_exchange), ("decode_noop", kafka_decode))
                }
                result["broker_floors"]["decode_plain_appends"] = timed_plain_appends(stream, own, label)
                progress(f"{config.spark.master}: {label} floors {result['broker_floors']}")
        result["max_offsets_per_trigger"] = config.kafka.max_offsets_per_trigger
    for kind in ("dump", "broker"):
        result[f"ratio_{kind}_decode_vs_passthrough"] = round(
            result[f"{kind}_to_silver"]["records_per_s"] / result[f"{kind}_passthrough"]["records_per_s"], 3
        )
        result[f"{kind}_marginal_records_per_s"] = marginal(
            result[f"{kind}_fixed_to_silver"], result[f"{kind}_to_silver"]
        )
    result["ratio_broker_decode_vs_noop"] = round(  # the issue's own definition of the ratio
        result["broker_to_silver"]["records_per_s"] / result["broker_noop"]["records_per_s"], 3
    )
    first_ceiling = round(result["broker_noop"]["seconds"] / result["broker_floors"]["decode_noop"]["seconds"], 3)
    warm_ceilings = [warm["ceiling_ratio"] for warm in result.get("broker_warm", [])]
    result["ceiling"] = {  # the targets' numbers were every write free: the floors against the same baselines
        # the first round's `noop` is the JVM's first large Kafka read, its floor runs later, warmer: the warm
        # rounds (each its noop, ingest and floor in a row) compare like with like
        "ratio_to_noop": round(statistics.median(warm_ceilings), 3) if warm_ceilings else first_ceiling,
        "ratio_to_noop_first_round": first_ceiling,
        "dump_marginal_records_per_s": marginal(
            result["dump_fixed_floors"]["decode_noop"], result["dump_floors"]["decode_noop"]
        ),
        "dump_parse_marginal_records_per_s": marginal(
            result["dump_fixed_floors"]["parse_noop"], result["dump_floors"]["parse_noop"]
        ),
    }
    floor_s = result["broker_floors"]["decode_noop"]["seconds"]
    raw_delta_s = result["broker_passthrough"]["seconds"]
    bronze_write_s = max(raw_delta_s - result["broker_noop"]["seconds"], 0.0)
    result["ceiling"]["ratio_to_raw_delta_writes_free"] = round(raw_delta_s / floor_s, 3)
    result["ceiling"]["ratio_to_raw_delta"] = round(raw_delta_s / (floor_s + bronze_write_s), 3)
    plain_s = result["broker_floors"]["decode_plain_appends"]["seconds"]
    result["ceiling"]["ratio_to_raw_delta_plain_appends"] = round(raw_delta_s / plain_s, 3)
    result["target"] = {"ratio_broker_decode_vs_passthrough": TARGET_RATIO_TO_RAW_DELTA}
    return result


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_per_master(args: argparse.Namespace) -> dict[str, Any]:
    """One child process per Spark master (a session's master is fixed for its JVM), each a whole run."""
    runs: dict[str, Any] = {}
    for label, master in each_master(args.masters, args.workers):
        command = [
            sys.executable,
            "-m",
            "benchmarks.ingest",
            "--records",
            str(args.records),
            "--fixed-records",
            str(args.fixed_records),
            "--conf",
            args.conf,
            "--master",
            master,
            "--warm-rounds",
            str(args.warm_rounds),
            "--no-out",  # the parent writes one result for all masters
        ]
        if len(runs) == len(args.masters) - 1:  # the last master's run
            command += ["--catch-up", str(args.catch_up), "--catch-up-caps", *map(str, args.catch_up_caps)]
        else:
            command += ["--catch-up", "0"]
        runs[label] = child_figures(command, label)
    if len(runs) > 1:
        labels = list(runs)
        first, last = runs[labels[0]], runs[labels[-1]]
        runs["scaling"] = {
            f"{kind}_to_silver_{labels[-1]}_vs_{labels[0]}": round(
                last[f"{kind}_to_silver"]["records_per_s"] / first[f"{kind}_to_silver"]["records_per_s"], 2
            )
            for kind in ("dump", "broker")
        }
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument(
        "--fixed-records",
        type=int,
        default=2_000,
        help="a small run of each kind: the marginal rate is the large run's records beyond it",
    )
    parser.add_argument("--catch-up", type=int, default=0, help="a backlog of this many records on the broker")
    parser.add_argument(
        "--catch-up-caps",
        type=int,
        nargs="+",
        default=[100_000],
        help="maxOffsetsPerTrigger values the backlog is drained with, one run each",
    )
    parser.add_argument("--masters", nargs="+", default=None, help=MASTERS_HELP)
    parser.add_argument("--workers", type=int, default=2, help=f"the Workers of '{STANDALONE}', one core each")
    parser.add_argument(
        "--warm-rounds",
        type=int,
        default=0,
        help="after the timed Kafka runs, this many more of the same size (noop, then bronze + silver) in the same JVM",
    )
    parser.add_argument("--master", default=None, help="the Spark master of this run (default: the config's)")
    parser.add_argument("--conf", default="conf/local.yml")
    parser.add_argument("--data-dir", default=None, help="default: a temporary folder, removed afterwards")
    parser.add_argument("--write-dump", type=Path, default=None, help="write the mix as a dump file here, and stop")
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    if args.write_dump is not None:
        records, mix = realistic_mix(args.records)
        write_dump(records, args.write_dump)
        size = args.write_dump.stat().st_size
        print(json.dumps({"dump": str(args.write_dump), "records": len(records), "mix": dict(mix), "bytes": size}))
        return 0
    if args.masters:
        runs = run_per_master(args)
        print(json.dumps(runs, indent=2))
        write_run_result("ingest", runs, args, started)
        return 0
    with tempfile.TemporaryDirectory(prefix="radar-bench-") as scratch:
        config = load_config(args.conf).with_data_dir(Path(args.data_dir or scratch))
        if args.master:
            config = config.model_copy(update={"spark": config.spark.model_copy(update={"master": args.master})})
        result = run(config, args.records, args.fixed_records, args.catch_up, args.catch_up_caps, args.warm_rounds)
        print(json.dumps(result, indent=2))
    write_run_result("ingest", result, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
