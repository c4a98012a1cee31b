"""Detection query cost: first-batch latency of the stateful query and rows/s through the per-group processor.

    PYTHONPATH=$PWD python benchmarks/detect.py [--rows 100000] [--groups 200] [--stand-in]

Synthetic heartbeat_events rows (members of many groups, 10 ms apart in event time) are written to a fresh data
dir, then the detection query runs once (availableNow). `--stand-in` binds the minimal test tracker instead of
`transforms.detectors` (to measure the Spark side alone). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from pipelines.config import RadarConfig, load_config
from pipelines.detect import TrackerBinding, default_binding, start_detect
from pipelines.session import build_spark_session
from pipelines.tables import TableCatalog, ensure_tables
from transforms.schemas import DETECTIONS, HEARTBEAT_EVENTS


def write_heartbeats(spark: SparkSession, config: RadarConfig, rows: int, groups: int, start_ms: int) -> None:
    """`rows` heartbeat rows in one Delta commit: 5 members per group, 10 ms apart in event time."""
    ts = F.timestamp_millis(F.lit(start_ms) + F.col("id") * 10)
    frame = spark.range(rows).select(
        F.lit(config.cluster).alias("cluster"),
        F.lit("radar.telemetry").alias("src_topic"),
        F.lit(0).alias("src_partition"),
        F.col("id").alias("src_offset"),
        ts.alias("src_timestamp"),
        ts.alias("event_time"),
        F.concat(F.lit("g"), (F.col("id") % groups).cast("string")).alias("group_id"),
        F.concat(F.lit("m"), (F.col("id") % (groups * 5)).cast("string")).alias("member_id"),
        F.lit(None).cast("string").alias("group_instance_id"),
        F.lit(3).alias("generation"),
        F.lit(None).cast("int").alias("member_epoch"),
        F.lit("heartbeat").alias("event"),
        F.lit(None).cast("string").alias("error"),
        F.lit(None).cast("string").alias("reason"),
        F.lit("bench").alias("client_id"),
        F.lit("host").alias("host"),
        F.lit("json").alias("source"),
        F.create_map().cast("map<string,string>").alias("details"),
    )
    location = TableCatalog(config).location(HEARTBEAT_EVENTS)
    frame.select(*HEARTBEAT_EVENTS.column_names).write.format("delta").mode("append").save(str(location))


def run_query(spark: SparkSession, config: RadarConfig, binding: TrackerBinding, name: str) -> dict[str, Any]:
    started = time.perf_counter()
    query = start_detect(spark, config, checkpoint_name=name, available_now=True, binding=binding)
    first_batch_s = None
    while query.isActive:
        if first_batch_s is None and query.lastProgress is not None:
            first_batch_s = time.perf_counter() - started
        query.awaitTermination(0.05)
    wall_s = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"detection query failed: {query.exception()}")
    progress = [p for p in query.recentProgress]
    rows = sum(int(p.numInputRows or 0) for p in progress)
    batch_ms = sum(int(p.durationMs.get("triggerExecution", 0)) for p in progress)
    return {
        "wall_s": round(wall_s, 2),
        "first_batch_done_s": round(first_batch_s or wall_s, 2),
        "batches": len(progress),
        "input_rows": rows,
        "batches_ms": batch_ms,
        "rows_per_s": round(rows / (batch_ms / 1000), 1) if batch_ms else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--stand-in", action="store_true", help="bind the minimal test tracker")
    args = parser.parse_args()
    if args.stand_in:
        from tests.pipelines.detect_tracker_stand_in import (
            StandInThresholds,
            StandInTracker,
            group_event_from_row,
        )

        binding = TrackerBinding(StandInTracker, group_event_from_row, StandInThresholds)
    else:
        binding = default_binding()
    config = load_config().with_data_dir(Path(tempfile.mkdtemp(prefix="radar-bench-detect-")))
    spark = build_spark_session(config)
    ensure_tables(spark, config)
    start_ms = 1_763_880_000_000
    write_heartbeats(spark, config, 100, 10, start_ms)
    small = run_query(spark, config, binding, "small")  # the first stateful query of this JVM
    write_heartbeats(spark, config, args.rows, args.groups, start_ms + 10_000)
    large = run_query(spark, config, binding, "large")  # a fresh checkpoint: reads both appends
    detections = spark.read.format("delta").load(str(TableCatalog(config).location(DETECTIONS))).count()
    result = {
        "tracker": "stand-in" if args.stand_in else "transforms.detectors",
        "rows": args.rows,
        "groups": args.groups,
        "first_query_100_rows": small,
        "throughput": large,
        "detections": detections,
        "data_dir": str(config.data_dir),
    }
    json.dump(result, sys.stdout, indent=2)
    print()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
