"""Where detection's time goes, on the same rows in one process: Spark's stateful Python operator, its mechanics, rules.

    python -m benchmarks.operator_floor [--rows 400000] [--groups 200]
    python -m benchmarks.operator_floor --from-data-dir DIR   # the rows of a replay: `radar replay --data-dir DIR`

Issue #50 asks detection for 50k records/s per core; this says whether the operator itself allows it, and which part
of the detection query costs what. The rows: synthetic `heartbeat_events` (as `benchmarks.detect` writes them), or,
with `--from-data-dir`, a copy of the detector's source tables of a replayed data dir (a replay of `benchmarks.ingest
--write-dump`'s mix is what the issue's figure is about). They are read and packed as the detection query reads them
(`detector_input`, `packed_detector_input`), grouped by its key, and handed to a processor of each operator flavour,
`transformWithState` (rows) and `transformWithStateInPandas` (pandas frames), that parses every packed row
(`json.loads`, as the tracker does) and keeps and emits nothing; `noop` sink, availableNow. Each flavour runs twice
(the first run also warms its code); the figures are the second runs. Then the detection query itself runs on the
same rows with `benchmarks.detect.FloorTracker` (its mechanics: watermark, event-time timers, each key's rows kept in
state until the watermark reaches them, the routed output), then with the real trackers (the rules, the gold writes).
Prints one JSON object and writes it to `benchmarks/results/operator_floor-<UTC start>.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark import cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.stateful_processor import TimerValues

from benchmarks.detect import FloorTracker, query_figures, run_query, write_heartbeats
from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.pipelines.config import RadarConfig, load_config
from rebalance_radar.pipelines.runtime.session import build_spark_session
from rebalance_radar.pipelines.stages.detect import (
    DETECTOR_KEY,
    DETECTOR_ROW,
    DETECTOR_TIME,
    SOURCE_TABLES,
    TrackerBinding,
    default_binding,
    detector_input,
    packed_detector_input,
)
from rebalance_radar.pipelines.storage.tables import TableCatalog, ensure_tables

OUTPUT_DDL = "parsed LONG"
# The processors below go to the executors by value: a cluster's executors have radar's package (`addPyFile`), not
# the checkout's `benchmarks`.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


class RowsFloor(StatefulProcessor):
    """The row flavour: each row a `Row`, each packed text parsed; nothing kept, nothing emitted."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        pass

    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues: TimerValues) -> Iterator[Row]:  # noqa: N802, N803
        for row in rows:
            json.loads(row[DETECTOR_ROW])
        return iter(())

    def close(self) -> None:
        pass


class PandasFloor(StatefulProcessor):
    """The pandas flavour: the key's rows as pandas frames, each packed text parsed; nothing kept, nothing emitted."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        pass

    def handleInputRows(  # noqa: N802
        self,
        key: Any,
        rows: Iterator[pd.DataFrame],
        timerValues: TimerValues,  # noqa: N803
    ) -> Iterator[pd.DataFrame]:
        for frame in rows:
            for text in frame[DETECTOR_ROW]:
                json.loads(text)
        return iter(())

    def close(self) -> None:
        pass


def floor_query(spark: SparkSession, config: RadarConfig, flavour: str, name: str) -> dict[str, Any]:
    """One availableNow run of `flavour` over every row of the sources, from a checkpoint of its own."""
    grouped = packed_detector_input(detector_input(spark, config)).groupBy(*DETECTOR_KEY)
    frame: DataFrame
    if flavour == "rows":
        frame = grouped.transformWithState(RowsFloor(), OUTPUT_DDL, "Append", "None")
    else:
        frame = grouped.transformWithStateInPandas(PandasFloor(), OUTPUT_DDL, "Append", "None")
    checkpoint = config.data_dir / "floor-checkpoints" / name
    started = time.perf_counter()
    query = (
        frame.writeStream.format("noop")
        .queryName(f"floor-{name}")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    wall_s = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the {flavour} floor query failed: {query.exception()}")
    return {"flavour": flavour, **query_figures(query, wall_s)}


def rules_alone(spark: SparkSession, config: RadarConfig) -> dict[str, Any]:
    """The trackers alone, outside Spark, on one core: every detector row of `config`'s tables (packed as the
    detection query packs them), each group's rows given to its tracker in one go and decided at the newest event
    time, in this process. No operator, no state store, no timers, no output rows written; its CPU seconds are what
    the rules and the parsing of each row cost, the floor of detection in Python per core."""
    packed = packed_detector_input(detector_input(spark, config, streaming=False)).toArrow().to_pylist()
    binding = default_binding()
    thresholds = binding.thresholds(**config.detect.threshold_overrides())
    by_key: dict[tuple[str, str], list[tuple[int, str]]] = {}
    newest = 0
    for row in packed:
        time_ms = row[DETECTOR_TIME]
        if time_ms is None:
            continue
        newest = max(newest, time_ms)
        if row["group_id"] is not None:  # the clock's rows only move time
            by_key.setdefault((row["cluster"], row["group_id"]), []).append((time_ms, row[DETECTOR_ROW]))
    started_cpu, started = time.process_time(), time.perf_counter()
    emitted = 0
    for (cluster, group_id), rows in by_key.items():
        tracker = binding.tracker(cluster, group_id, thresholds)
        tracker.accept_packed(rows)
        output = tracker.advance_to(newest)
        emitted += len(output.rebalances) + len(output.detections) + len(output.lag)
    cpu_s = time.process_time() - started_cpu
    rows_in = sum(len(rows) for rows in by_key.values())
    started_parse = time.process_time()
    for rows in by_key.values():  # what the operator's parse-only floor already spends on these rows
        for _, text in rows:
            json.loads(text)
    parse_cpu_s = time.process_time() - started_parse
    return {
        "rows": rows_in,
        "groups": len(by_key),
        "cpu_s": round(cpu_s, 2),
        "parse_cpu_s": round(parse_cpu_s, 2),
        "wall_s": round(time.perf_counter() - started, 2),
        "rows_per_cpu_s": round(rows_in / cpu_s) if cpu_s else None,
        "rows_emitted": emitted,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument(
        "--from-data-dir",
        type=Path,
        default=None,
        help="a replayed data dir: its detector source tables are copied and used instead of synthetic heartbeats",
    )
    add_out_arguments(parser)
    args = parser.parse_args()
    started = started_now()
    config = load_config().with_data_dir(Path(tempfile.mkdtemp(prefix="radar-bench-operator-floor-")))
    if args.from_data_dir is not None:
        replayed = load_config().with_data_dir(args.from_data_dir.resolve())
        for table in SOURCE_TABLES.values():
            shutil.copytree(TableCatalog(replayed).location(table), TableCatalog(config).location(table))
    spark = build_spark_session(config)
    ensure_tables(spark, config)
    if args.from_data_dir is None:
        write_heartbeats(spark, config, args.rows, args.groups, 1_763_880_000_000)
    runs = []
    for flavour in ("rows", "pandas", "rows", "pandas"):
        runs.append(floor_query(spark, config, flavour, f"{flavour}-{len(runs)}"))
        print(json.dumps(runs[-1]), file=sys.stderr)
    rows_run, pandas_run = runs[2], runs[3]
    # the detection query's own mechanics (watermark, event-time timers, each key's rows kept in its state until the
    # watermark reaches them, the routed output) around a tracker that also only parses each row
    floor_tracker = run_query(spark, config, TrackerBinding(FloorTracker, default_binding().thresholds), "floor")
    print(json.dumps(floor_tracker), file=sys.stderr)
    detection = run_query(spark, config, default_binding(), "detection")
    print(json.dumps(detection), file=sys.stderr)
    cores = os.cpu_count() or 1
    result = {
        "rows": rows_run["input_rows"],
        "source": str(args.from_data_dir) if args.from_data_dir is not None else f"{args.groups} groups' heartbeats",
        "runs": runs,
        "rows_flavour_rows_per_s": rows_run["rows_per_s"],
        "pandas_flavour_rows_per_s": pandas_run["rows_per_s"],
        "pandas_to_rows_ratio": round(pandas_run["rows_per_s"] / rows_run["rows_per_s"], 3)
        if rows_run["rows_per_s"] and pandas_run["rows_per_s"]
        else None,
        "detection_query_floor": floor_tracker,
        "detection": detection,
        "detection_to_detection_query_floor_ratio": round(detection["rows_per_s"] / floor_tracker["rows_per_s"], 3)
        if detection["rows_per_s"] and floor_tracker["rows_per_s"]
        else None,
        "rows_flavour_to_detection_query_floor_ratio": round(rows_run["rows_per_s"] / floor_tracker["rows_per_s"], 3)
        if rows_run["rows_per_s"] and floor_tracker["rows_per_s"]
        else None,
        "cores": cores,
        "pandas_rows_per_s_per_core": round(pandas_run["rows_per_s"] / cores, 1) if pandas_run["rows_per_s"] else None,
        "data_dir": str(config.data_dir),
    }
    json.dump(result, sys.stdout, indent=2)
    print()
    spark.stop()
    write_run_result("operator_floor", result, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
