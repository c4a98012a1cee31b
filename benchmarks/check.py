"""The checks' cost: `run_checks` wall time over freshly ingested tables, and the ingest's micro-batch durations
with and without the checks running beside it in the same session (as `radar run` schedules them); prints JSON and
writes it to `benchmarks/results/check-<UTC start>.json` (`benchmarks.result_file`).

The ingest reads N dump files of `__consumer_offsets` records; the replay source unions one stream per file, so
an available-now run may take them all in one micro-batch (measured: 6 files -> 1 batch): compare the totals, and
prefer a live run for per-batch numbers. Detections and group_health rows for G groups are written directly
(no heartbeat events: the freshness rule has no rows here).

    python -m benchmarks.check [--files 10] [--records-per-file 20000] [--interval 2] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from benchmarks.ingest import BASE_TS, Record, realistic_mix
from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.pipelines.checks.check import CheckSchedule, run_checks
from rebalance_radar.pipelines.config import RadarConfig, load_config
from rebalance_radar.pipelines.formats.dump import DumpRecord, dump_line
from rebalance_radar.pipelines.stages.ingest import IngestStage
from rebalance_radar.pipelines.stages.sources import replay_stream
from rebalance_radar.pipelines.storage.tables import TableCatalog, ensure_tables
from rebalance_radar.transforms.schemas import DETECTIONS, GROUP_HEALTH, Severity


def write_dumps(records: list[Record], files: int, folder: Path) -> list[Path]:
    """`files` dump files, each a distinct slice of offsets (records are never the same record twice)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    per_file = len(records) // files
    for index in range(files):
        path = folder / f"part-{index:03d}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for offset in range(index * per_file, (index + 1) * per_file):
                key, value = records[offset]
                out.write(dump_line(DumpRecord("__consumer_offsets", 0, offset, BASE_TS, key, value)) + "\n")
        paths.append(path)
    return paths


def write_gold(spark: SparkSession, config: RadarConfig, groups: int) -> None:
    """Detections (every 10th group with an open critical one) and group_health rows for `groups` groups."""
    ensure_tables(spark, config, [DETECTIONS, GROUP_HEALTH])
    catalog = TableCatalog(config)
    now = datetime.now(UTC)
    detections = [
        {
            "cluster": config.cluster,
            "detection_id": f"d{g}",
            "kind": "zombie_commit",
            "group_id": f"bench-group-{g}",
            "severity": str(Severity.CRITICAL if g % 10 == 0 else Severity.WARNING),
            "status": "open",
            "first_seen": now,
        }
        for g in range(groups)
    ]
    health = [
        {"cluster": config.cluster, "group_id": f"bench-group-{g}", "state": "Stable", "members": 10}
        for g in range(groups)
    ]
    for table, rows in ((DETECTIONS, detections), (GROUP_HEALTH, health)):
        data = [tuple(row.get(c) for c in table.column_names) for row in rows]
        location = catalog.location(table)
        spark.createDataFrame(data, table.ddl).write.format("delta").mode("overwrite").save(str(location))


def batch_durations(spark: SparkSession, config: RadarConfig, paths: list[Path], name: str) -> dict[str, Any]:
    """Ingest the files to completion; the offsets query's micro-batch durations (triggerExecution, ms)."""
    source = replay_stream(spark, [str(p) for p in paths], staging_root=config.data_dir / "staging" / name)
    started = time.perf_counter()
    stage = IngestStage(spark, config, source, checkpoint_name=name, available_now=True, telemetry_topics=())
    queries = stage.start()
    queries.await_all()
    seconds = time.perf_counter() - started
    (query,) = queries.all
    durations = [p["durationMs"]["triggerExecution"] for p in query.recentProgress if p["numInputRows"] > 0]
    return {
        "seconds": round(seconds, 2),
        "batches": len(durations),
        "batch_ms_median": round(statistics.median(durations)) if durations else None,
        "batch_ms_mean": round(statistics.fmean(durations)) if durations else None,
        "batch_ms_max": max(durations) if durations else None,
    }


def run(config: RadarConfig, files: int, per_file: int, interval_s: float, groups: int) -> dict[str, Any]:
    from rebalance_radar.pipelines.runtime.session import build_spark_session

    config = config.model_copy(update={"spark": config.spark.model_copy(update={"connectors": ("delta",)})})
    spark = build_spark_session(config)
    records, _mix = realistic_mix(files * per_file * 2 + 2000)
    base = config.data_dir
    warm = config.with_data_dir(base / "warm")
    batch_durations(spark, warm, write_dumps(records[-2000:], 2, base / "dumps" / "warm"), "warm")
    write_gold(spark, warm, groups)
    run_checks(spark, warm, env={})  # GX and its Spark jobs warm before timing

    result: dict[str, Any] = {"files": files, "records_per_file": per_file, "interval_s": interval_s, "groups": groups}
    slices = [records[i * files * per_file : (i + 1) * files * per_file] for i in range(2)]
    without = config.with_data_dir(base / "without")
    write_gold(spark, without, groups)
    result["ingest_without_checks"] = batch_durations(
        spark, without, write_dumps(slices[0], files, base / "dumps" / "without"), "without"
    )
    with_checks = config.with_data_dir(base / "with")
    write_gold(spark, with_checks, groups)
    dumps = write_dumps(slices[1], files, base / "dumps" / "with")
    with CheckSchedule(spark, with_checks, interval_s=interval_s) as schedule:
        result["ingest_with_checks"] = batch_durations(spark, with_checks, dumps, "with")
    result["checks_during_ingest"] = {
        "runs": len(schedule.reports),
        "errors": schedule.errors,
        "run_s": [round(r.duration_s, 2) for r in schedule.reports],
    }
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        report = run_checks(spark, with_checks, env={})
        timings.append(round(time.perf_counter() - started, 2))
    result["run_checks_s"] = {"runs": timings, "median": statistics.median(timings)}
    result["last_report"] = {r.rule: r.status for r in report.results}
    base_ms, with_ms = (result[k]["batch_ms_median"] for k in ("ingest_without_checks", "ingest_with_checks"))
    result["batch_ms_median_ratio_with_vs_without"] = round(with_ms / base_ms, 3) if base_ms and with_ms else None
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--records-per-file", type=int, default=20_000)
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between scheduled check runs")
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--conf", default="conf/local.yml")
    parser.add_argument("--data-dir", default=None, help="default: a temporary folder, removed afterwards")
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    with tempfile.TemporaryDirectory(prefix="radar-bench-check-") as scratch:
        config = load_config(args.conf).with_data_dir(Path(args.data_dir or scratch))
        result = run(config, args.files, args.records_per_file, args.interval, args.groups)
        print(json.dumps(result, indent=2))
    write_run_result("check", result, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
