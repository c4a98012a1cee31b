"""Detection cost: live detection latency on the embedded broker, and rows/s through the per-group processor.

    PYTHONPATH=$PWD python benchmarks/detect.py --live [--duration-s 150] [--stalls 6]
    PYTHONPATH=$PWD python benchmarks/detect.py [--rows 100000] [--groups 200]

`--live`: `radar run`'s stages in-process (embedded broker, log shipper, clock ticks every second, ingest and
detection with a 1 s trigger, the expectation checks every `checks.interval_s`), a healthy fleet (several groups
scaling out and restarting cleanly) for the whole run, and one member SIGSTOPped past its session timeout
`--stalls` times (each an expiry, then a zombie commit). `RADAR__CHECKS__IN_RUN=false` leaves the checks out: the
detection pipeline alone.
Latency per detection = when its row first became queryable in gold (the commit time of the first Delta version
holding it, read from the log after the run; a live run shows it `provisional` first, and `confirmed` is the same for
its first open/resolved version) minus `detected_at`,
the event time of the record that decided it (the broker's log line / the refused commit), i.e. produce of the
deciding record -> queryable, shipper lag included. Also: events/s through the detection query, state bytes per
group (state store memory / keys), and the healthy fleet's detection count (expected 0).

Without `--live`:
synthetic heartbeat_events rows (members of many groups, 10 ms apart in event time) are written to a fresh data
dir, then the detection query (the real `transforms.detectors` tracker) runs once (availableNow), and again with
`FloorTracker` bound in its place (`floor`: Spark's stateful Python operator reading every row and keeping nothing,
what detection costs before any rule runs; `ratio_to_floor` says what the rules add). Prints one JSON object.

Either way the JSON is also written to `benchmarks/results/detect-<UTC start>.json` (`benchmarks.result_file`; its
`mode` is `live` or `throughput`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.streaming import StreamingQuery

from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.pipelines.config import RadarConfig, load_config
from rebalance_radar.pipelines.runtime.local_runtime import codegen_compilations
from rebalance_radar.pipelines.runtime.session import build_spark_session
from rebalance_radar.pipelines.stages.detect import TrackerBinding, default_binding, start_detect
from rebalance_radar.pipelines.storage.tables import TableCatalog, ensure_tables
from rebalance_radar.transforms.schemas import DETECTIONS, HEARTBEAT_EVENTS


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
    query = start_detect(spark, config, checkpoint_name=name, available_now=True, binding=binding).detection_query
    first_batch_s = None
    while query.isActive:
        if first_batch_s is None and query.lastProgress is not None:
            first_batch_s = time.perf_counter() - started
        query.awaitTermination(0.05)
    wall_s = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"detection query failed: {query.exception()}")
    return {"first_batch_done_s": round(first_batch_s or wall_s, 2), **query_figures(query, wall_s)}


def query_figures(query: StreamingQuery, wall_s: float) -> dict[str, Any]:
    """An ended query's wall time, batches, input rows and rows/s over its batches' own time (from its progress)."""
    progress = list(query.recentProgress)
    rows = sum(int(p.numInputRows or 0) for p in progress)
    batch_ms = sum(int(p.durationMs.get("triggerExecution", 0)) for p in progress)
    return {
        "wall_s": round(wall_s, 2),
        "batches": len(progress),
        "input_rows": rows,
        "batches_ms": batch_ms,
        "rows_per_s": round(rows / (batch_ms / 1000), 1) if batch_ms else None,
    }


class FloorTracker:
    """The tracker's contract (`TrackerBinding`) with no rules: each packed row is parsed, as the real tracker parses
    it when the watermark reaches it, and nothing is kept or emitted."""

    def __init__(self, cluster: str, group_id: str, thresholds: Any) -> None:
        self.rows = 0

    @classmethod
    def restore(cls, snapshot: bytes, thresholds: Any) -> FloorTracker:
        return cls("", "", thresholds)

    def snapshot(self) -> bytes:
        return b""

    def accept_packed(self, rows: Any) -> None:
        for _, text in rows:
            json.loads(text)
            self.rows += 1

    def next_wakeup(self) -> None:
        return None

    def is_expired(self, watermark_ms: int) -> bool:
        return False

    def advance_to(self, watermark_ms: int) -> None:
        return None

    def preview(self) -> tuple[()]:
        return ()


LIVE_INCIDENT_KINDS = ("heartbeat_at_risk", "heartbeat_expiration", "zombie_commit")


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 3)


def phases_p50(progress: list[Any]) -> dict[str, float | None]:
    """The median of each `durationMs` phase Spark reports (latestOffset, queryPlanning, addBatch, walCommit...)."""
    names = sorted({name for p in progress for name in p.durationMs})
    return {name: percentile([float(p.durationMs.get(name, 0)) for p in progress], 0.5) for name in names}


def first_commit_of_each_detection(
    location: Path,
) -> tuple[dict[str, float], dict[str, float], dict[str, dict[str, Any]]]:
    """When each detection first became queryable (any status: a live run shows it `provisional` first) and when
    confirmed (`open`/`resolved`): the commit time (`commitInfo.timestamp`) of the first Delta version whose added
    files hold it so, read from the log and the parquet files, so measuring adds no Spark job beside the pipeline
    (a reader polling the table every 0.25 s cost the 2 cores a job each time). Also each id's last row."""
    import pyarrow.parquet as pq

    first_seen: dict[str, float] = {}
    first_confirmed: dict[str, float] = {}
    rows_of: dict[str, dict[str, Any]] = {}
    for commit in sorted((location / "_delta_log").glob("*.json"), key=lambda path: int(path.stem)):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        committed_ms = next(a["commitInfo"]["timestamp"] for a in actions if "commitInfo" in a)
        for action in actions:
            if "add" not in action:
                continue
            for row in pq.read_table(location / action["add"]["path"]).to_pylist():
                first_seen.setdefault(row["detection_id"], committed_ms / 1000)
                if row["status"] in ("open", "resolved"):
                    first_confirmed.setdefault(row["detection_id"], committed_ms / 1000)
                rows_of[row["detection_id"]] = row
    return first_seen, first_confirmed, rows_of


def run_live(duration_s: float, stalls: int, settle_s: float = 0.0) -> dict[str, Any]:
    """The live measurement (see the module docstring)."""
    import signal
    from contextlib import ExitStack

    from rebalance_radar.emitters.kafka_settings import client_settings
    from rebalance_radar.emitters.log_shipper import start_shipper
    from rebalance_radar.pipelines.local.broker import EmbeddedKafka
    from rebalance_radar.pipelines.local.scenarios import MemberProcess, ScenarioError
    from rebalance_radar.pipelines.local.topics import create_topics, ensure_offsets_topic
    from rebalance_radar.pipelines.stages.clock import ClockTickEmitter
    from rebalance_radar.pipelines.stages.detect import DetectStage, KafkaDetectorSources
    from rebalance_radar.pipelines.stages.ingest import IngestStage
    from rebalance_radar.pipelines.stages.sources import kafka_stream
    from rebalance_radar.pipelines.stages.streams import start_stages
    from tests.pipelines.group_member import create_topics as create_work_topics
    from tests.pipelines.group_member import start_member

    config = load_config().with_data_dir(Path(tempfile.mkdtemp(prefix="radar-bench-detect-live-")))
    telemetry = config.kafka.telemetry_topics[0]
    out_dir = config.data_dir / "members"
    out_dir.mkdir(parents=True)
    members: list[MemberProcess] = []
    with ExitStack() as stack:
        broker = stack.enter_context(EmbeddedKafka(config.broker, config.data_dir, spark=config.spark))
        bootstrap = broker.bootstrap_servers
        create_topics(bootstrap, [telemetry])
        stack.callback(start_shipper(broker.log_file, bootstrap, telemetry).stop)
        ensure_offsets_topic(bootstrap, config.kafka.offsets_topic)
        spark = build_spark_session(config)
        source = kafka_stream(spark, config, [config.kafka.offsets_topic], bootstrap)
        telemetry_source = kafka_stream(spark, config, [telemetry], bootstrap)
        ingest = IngestStage(
            spark, config, source, telemetry_source=telemetry_source, checkpoint_name="bench", from_kafka=True
        )
        detect = DetectStage(
            spark, config, checkpoint_name="bench", kafka=KafkaDetectorSources(source, telemetry_source)
        )
        stack.enter_context(
            ClockTickEmitter(client_settings(bootstrap), telemetry, interval_ms=config.detect.tick_interval_ms)
        )
        queries = start_stages(stack, [ingest, detect])
        if config.checks.in_run:  # as `radar run`: the expectation checks beside the queries
            from rebalance_radar.pipelines.checks.check import CheckSchedule

            checks = stack.enter_context(CheckSchedule(spark, config))
        detect_query = detect.detection_query
        location = str(TableCatalog(config).location(DETECTIONS))
        started = time.monotonic()
        while detect_query.lastProgress is None or not (Path(location) / "_delta_log").is_dir():
            queries.raise_failures()  # a query that died (e.g. a Python worker that never connected back) ends it
            if time.monotonic() - started > 600:
                raise RuntimeError("the detection query made no progress in 10 minutes")
            time.sleep(1)
        warmup_s = time.monotonic() - started
        compiled_at_warm = codegen_compilations(spark)

        def member(group: str, topic: str, name: str, *extra: str, protocol: str = "classic") -> MemberProcess:
            process = start_member(out_dir, f"{group}-{name}-{len(members)}", bootstrap, topic, group, *extra,
                                    protocol=protocol)  # fmt: skip
            members.append(process)
            return process

        try:
            fleet = {f"fleet-{i}": f"fleet-topic-{i}" for i in range(3)}
            create_work_topics(bootstrap, {**dict.fromkeys(fleet.values(), 4), "incident-topic": 4})
            # the tests' members close after 120 s (`--run-s`): these stay for the whole run, or a longer run's
            # incident group is empty from then on (its later stalls stopped nothing)
            whole_run = ("--run-s", f"{settle_s + duration_s + 60:.0f}")
            for index, (group, topic) in enumerate(fleet.items()):
                member(group, topic, "f1", *whole_run, protocol="consumer" if index == 2 else "classic")
            incident_a = member("incident", "incident-topic", "A", "--agent-topic", telemetry, *whole_run)
            incident_a.wait_for("assigned", 60)
            member("incident", "incident-topic", "B", *whole_run).wait_for("assigned", 60)
            began = time.monotonic()
            cycle = 0
            stalled = 0
            skipped = 0
            seen_before_stall = 0  # A's output lines before its last stall: it must be assigned again after them
            while time.monotonic() - began < settle_s + duration_s:
                # the fleet: scale one group out, then close its newest member cleanly (LeaveGroup)
                group, topic = list(fleet.items())[cycle % len(fleet)]
                extra = member(group, topic, f"f{cycle + 2}", protocol="consumer" if group == "fleet-2" else "classic")
                # the incident, once the monitor has settled: A silent past its 3 s session, resumed, refused; only
                # once A is in the group again (a stall of a member not in the group shows nothing)
                if time.monotonic() - began >= settle_s and stalled < stalls:
                    waited = time.monotonic()
                    try:
                        incident_a.wait_for("assigned", timeout_s=30.0, after=seen_before_stall)
                    except ScenarioError:
                        skipped += 1
                        time.sleep(max(0.0, 14.0 - (time.monotonic() - waited)))
                    else:
                        seen_before_stall = len(incident_a.lines())
                        stalled += 1
                        time.sleep(2.0)
                        incident_a.signal(signal.SIGSTOP)
                        time.sleep(6.0)
                        incident_a.signal(signal.SIGCONT)
                        time.sleep(6.0)
                else:
                    time.sleep(14.0)
                extra.stop()
                queries.raise_failures()
                cycle += 1
            time.sleep(15.0)  # let the last detections through
            queries.raise_failures()  # a query that died during the run (the gold query's MERGE, say) voids it
        finally:
            for process in members:
                process.stop()
        compiled_in_run = codegen_compilations(spark) - compiled_at_warm
        progress = [p for p in detect_query.recentProgress]
        ingest_progress = [p for query in ingest.queries.all for p in query.recentProgress]
        queries.stop()
    first_seen, first_confirmed, rows_of = first_commit_of_each_detection(Path(location))

    latencies: dict[str, list[float]] = {}
    confirmed: list[float] = []
    slowest: list[tuple[float, str]] = []
    for detection_id, row in rows_of.items():
        if row["group_id"] != "incident" or row["status"] == "withdrawn":
            continue
        decided = row["detected_at"].replace(tzinfo=UTC).timestamp()
        latencies.setdefault(row["kind"], []).append(first_seen[detection_id] - decided)
        slowest.append((round(first_seen[detection_id] - decided, 2), row["kind"]))
        if detection_id in first_confirmed:
            confirmed.append(first_confirmed[detection_id] - decided)
    every = [v for values in latencies.values() for v in values]
    decided_by_records = [v for k, values in latencies.items() if k != "heartbeat_at_risk" for v in values]
    state = [p.stateOperators[0] for p in progress if p.stateOperators]
    last_state = state[-1] if state else None
    rows_in = sum(int(p.numInputRows or 0) for p in progress)
    busy_ms = sum(int(p.durationMs.get("triggerExecution", 0)) for p in progress)
    fleet_detections = [
        r for r in rows_of.values() if str(r["group_id"]).startswith("fleet-") and r["status"] != "withdrawn"
    ]
    withdrawn = [r for r in rows_of.values() if r["status"] == "withdrawn"]
    return {
        "mode": "live",
        "duration_s": duration_s,
        "settle_s": settle_s,
        "stall_cycles": stalls,
        "stalls_done": stalled,
        "stalls_skipped_a_not_rejoined": skipped,
        "warmup_s": round(warmup_s, 1),
        "latency_s": {
            "all": {"n": len(every), "p50": percentile(every, 0.5), "p95": percentile(every, 0.95)},
            "confirmed": {"n": len(confirmed), "p50": percentile(confirmed, 0.5), "p95": percentile(confirmed, 0.95)},
            "decided_by_a_record": {
                "n": len(decided_by_records),
                "p50": percentile(decided_by_records, 0.5),
                "p95": percentile(decided_by_records, 0.95),
            },
            "by_kind": {
                k: {"n": len(v), "p50": percentile(v, 0.5), "p95": percentile(v, 0.95)} for k, v in latencies.items()
            },
            "slowest_five": sorted(slowest, reverse=True)[:5],  # the tail is a few detections: which kinds
        },
        "detect_query": {
            "batches_in_recent_progress": len(progress),
            "input_rows": rows_in,
            "busy_ms": busy_ms,
            "events_per_s": round(rows_in / (busy_ms / 1000), 1) if busy_ms else None,
            "batch_ms_p50": percentile([float(p.durationMs.get("triggerExecution", 0)) for p in progress], 0.5),
            "phases_ms_p50": phases_p50(progress),
        },
        "ingest_queries": {
            "batches_in_recent_progress": len(ingest_progress),
            "batch_ms_p50": percentile(
                [float(p.durationMs.get("triggerExecution", 0)) for p in ingest_progress if p.numInputRows], 0.5
            ),
            "phases_ms_p50_batches_with_rows": phases_p50([p for p in ingest_progress if p.numInputRows]),
        },
        "codegen_compilations_after_warmup": compiled_in_run,
        "state": None
        if last_state is None
        else {
            "keys": last_state.numRowsTotal,
            "memory_used_bytes": last_state.memoryUsedBytes,
            "bytes_per_key": round(last_state.memoryUsedBytes / last_state.numRowsTotal, 1)
            if last_state.numRowsTotal
            else None,
            "custom_metrics": dict(last_state.customMetrics or {}),
        },
        "healthy_fleet": {
            "groups": 3,
            "detections": len(fleet_detections),
            "kinds": sorted({r["kind"] for r in fleet_detections}),
        },
        "incident_detections": sorted(
            {r["kind"] for r in rows_of.values() if r["group_id"] == "incident" and r["status"] != "withdrawn"}
        ),
        "withdrawn": {"n": len(withdrawn), "kinds": sorted({r["kind"] for r in withdrawn})},
        "check_runs": None
        if not config.checks.in_run
        else {
            "n": len(checks.reports),
            "failed": len(checks.errors),
            "seconds": [round(r.duration_s, 2) for r in checks.reports],
        },
        "still_provisional": sum(1 for r in rows_of.values() if r["status"] == "provisional"),
        "data_dir": str(config.data_dir),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--live", action="store_true", help="live latency on the embedded broker (see above)")
    parser.add_argument("--duration-s", type=float, default=150.0)
    parser.add_argument("--stalls", type=int, default=6)
    parser.add_argument(
        "--settle-s",
        type=float,
        default=60.0,
        help="live: the healthy fleet alone this long before the first stall (a monitor measured once it has run a "
        "minute, not in its JVM's first compilations and first-of-a-kind jobs; 0 = stall at once, as before)",
    )
    add_out_arguments(parser)
    args = parser.parse_args()
    started = started_now()
    if args.live:
        live = run_live(args.duration_s, args.stalls, args.settle_s)
        json.dump(live, sys.stdout, indent=2, default=str)
        print()
        write_run_result("detect", live, args, started, mode="live")
        return 0
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
    floor = run_query(spark, config, TrackerBinding(FloorTracker, binding.thresholds), "floor")  # the same rows
    result = {
        "tracker": "rebalance_radar.transforms.detectors",
        "rows": args.rows,
        "groups": args.groups,
        "first_query_100_rows": small,
        "throughput": large,
        "floor": floor,
        "ratio_to_floor": round(large["rows_per_s"] / floor["rows_per_s"], 3)
        if large["rows_per_s"] and floor["rows_per_s"]
        else None,
        "cores": os.cpu_count(),
        "floor_rows_per_s_per_core": round(floor["rows_per_s"] / (os.cpu_count() or 1), 1)
        if floor["rows_per_s"]
        else None,
        "detections": detections,
        "data_dir": str(config.data_dir),
    }
    json.dump(result, sys.stdout, indent=2)
    print()
    spark.stop()
    write_run_result("detect", result, args, started, mode="throughput")
    return 0


if __name__ == "__main__":
    sys.exit(main())
