"""End-to-end replay (ingest and detection) against the same records persisted untouched into one Delta table, in
the same run, on a local master and on a standalone cluster started here from pyspark's own `bin/spark-class`.

    python -m benchmarks.replay [--records 400000] [--fixed-records 100000] [--masters 'local[2]' standalone]

Issue #50 asks a replay for 40k records/s at the margin: the records of the large replay beyond the small one over
the extra seconds, so the fixed cost of a replay (tables, queries, the last micro-batches) is taken out. Each replay
is `radar replay`'s own code (`run_replay`: ingest queries, sealed time, detection query, incidents, summary, counts)
on a dump of `benchmarks.ingest`'s realistic mix, one record a millisecond, into a data dir of its own, in a session
warmed by a small replay first; its phases come from `RADAR_PROFILE`. The baseline, `raw_delta`, is the same dump's
records parsed and written untouched into one Delta table (`benchmarks.ingest.timed_passthrough`), in the same
process. The design's floor, `floor`, on the same dumps in the same process: the offsets query's rows decoded and
routed with nothing written (`benchmarks.ingest.dump_decode`), plus the replayed detector rows through Spark's
stateful Python operator with a processor that only parses each row (`benchmarks.operator_floor`, row flavour): what
a replay could not beat were every write, every rule and every fixed cost free, so `ceiling_...` says whether a
target is within the design's reach. `rules_alone` (`benchmarks.operator_floor.rules_alone`): the large replay's
detector rows through the trackers in this process, outside Spark, on one core: the rules' own cost per core.
`standalone` is a Master and `--workers` Workers of one core each on this machine; each master's run is a child
process of its own (a session's master is fixed for its JVM). Prints one JSON object and writes it to
`benchmarks/results/replay-<UTC start>.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.ingest import (
    dump_decode,
    isolated,
    marginal,
    measured,
    progress,
    realistic_mix,
    timed_floor,
    timed_passthrough,
    write_dump,
)
from benchmarks.operator_floor import floor_query, rules_alone
from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from benchmarks.spark_masters import MASTERS_HELP, STANDALONE, child_figures, each_master
from rebalance_radar.pipelines.config import RadarConfig, load_config
from rebalance_radar.pipelines.runtime.phases import PROFILE_ENV

TARGET_MARGINAL_RECORDS_PER_S = 40_000
RECORD_STEP_MS = 1  # a record a millisecond: the dump spans event time as a fleet's commits do


def timed_replay(config: RadarConfig, dump: Path, profile: Path) -> dict[str, Any]:
    """`radar replay`'s own code on `dump`, into `config`'s data dir: its wall seconds, and seconds per phase."""
    from rebalance_radar.pipelines.cli.monitor import run_replay

    profile.unlink(missing_ok=True)
    os.environ[PROFILE_ENV] = str(profile)
    started = time.perf_counter()
    try:
        counts, summary = run_replay(config, [str(dump)])
    finally:
        seconds = time.perf_counter() - started
        os.environ.pop(PROFILE_ENV, None)
    phases: dict[str, float] = defaultdict(float)
    for line in profile.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        phases[entry["phase"]] += entry["end"] - entry["start"]
    return {
        "seconds": round(seconds, 2),
        "phases_s": {name: round(value, 2) for name, value in phases.items()},
        "rows": counts,
        "detections": summary.total,
    }


def run(config: RadarConfig, count: int, fixed_count: int) -> dict[str, Any]:
    """Every timed run of one master, in this process's one session."""
    from rebalance_radar.pipelines.runtime.session import build_spark_session
    from rebalance_radar.pipelines.stages.sources import replay_stream

    records, mix = realistic_mix(max(count, fixed_count))
    result: dict[str, Any] = {"master": config.spark.master, "mix": dict(mix)}
    spark = build_spark_session(config)
    profile = config.data_dir / "profile.jsonl"
    warm = config.data_dir / "warmup.jsonl"  # the JVM, the Python workers and Delta warm before any timing
    write_dump(records[:2_000], warm, step_ms=RECORD_STEP_MS)
    timed_replay(isolated(config, "warmup"), warm, profile)
    progress(f"{config.spark.master}: warm")
    for label, size in (("fixed", fixed_count), ("large", count)):
        dump = config.data_dir / f"{label}.jsonl"
        write_dump(records[:size], dump, step_ms=RECORD_STEP_MS)
        raw = timed_passthrough(spark, replay_stream(spark, [dump]), isolated(config, f"{label}_raw"), label)
        replayed = isolated(config, label)
        replay = timed_replay(replayed, dump, profile)
        decode = timed_floor(replay_stream(spark, [dump]), isolated(config, f"{label}_floor"), label, dump_decode, size)
        operator = floor_query(spark, replayed, "rows", label)
        floor = measured(decode["seconds"] + operator["wall_s"], size)
        floor |= {"ingest_decode_s": decode["seconds"], "operator_parse_s": operator["wall_s"]}
        replay["records"] = size
        replay["records_per_s"] = round(size / replay["seconds"])
        detect_s = replay["phases_s"].get("detect query")
        replay["detect_query_records_per_s"] = round(size / detect_s) if detect_s else None
        result[label] = {"raw_delta": raw, "replay": replay, "floor": floor}
        if label == "large":
            result[label]["rules_alone"] = rules_alone(spark, replayed)
        progress(f"{config.spark.master}: {label} {result[label]}")
    fixed, large = result["fixed"], result["large"]
    result["replay_marginal_records_per_s"] = marginal(fixed["replay"], large["replay"])
    result["raw_delta_marginal_records_per_s"] = marginal(fixed["raw_delta"], large["raw_delta"])
    result["ceiling_marginal_records_per_s"] = marginal(fixed["floor"], large["floor"])
    ratio = large["replay"]["records_per_s"] / large["raw_delta"]["records_per_s"]
    result["ratio_replay_to_raw_delta"] = round(ratio, 3)
    cores = spark.sparkContext.defaultParallelism
    result["cores"] = cores
    result["replay_marginal_records_per_s_per_core"] = (
        round(result["replay_marginal_records_per_s"] / cores) if result["replay_marginal_records_per_s"] else None
    )
    result["target"] = {"replay_marginal_records_per_s": TARGET_MARGINAL_RECORDS_PER_S}
    spark.stop()
    return result


def run_per_master(args: argparse.Namespace) -> dict[str, Any]:
    """One child process per master (`benchmarks.spark_masters`)."""
    runs: dict[str, Any] = {}
    for label, url in each_master(args.masters, args.workers):
        command = [sys.executable, "-m", "benchmarks.replay", "--records", str(args.records)]
        command += ["--fixed-records", str(args.fixed_records), "--conf", args.conf, "--no-out", "--master", url]
        runs[label] = child_figures(command, label)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument(
        "--fixed-records",
        type=int,
        default=100_000,
        help="the small replay: the marginal rate is the large replay's records beyond it",
    )
    parser.add_argument(
        "--masters",
        nargs="+",
        default=None,
        help=MASTERS_HELP,
    )
    parser.add_argument("--workers", type=int, default=2, help=f"the Workers of '{STANDALONE}', one core each")
    parser.add_argument("--master", default=None, help="this process's Spark master (default: the config's)")
    parser.add_argument("--conf", default="conf/local.yml")
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    if args.masters:
        figures = run_per_master(args)
    else:
        config = load_config(args.conf)
        if args.master:
            config = config.model_copy(update={"spark": config.spark.model_copy(update={"master": args.master})})
        with tempfile.TemporaryDirectory(prefix="radar-bench-replay-") as folder:
            figures = run(config.with_data_dir(Path(folder)), args.records, args.fixed_records)
    print(json.dumps(figures, indent=2))
    write_run_result("replay", figures, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
