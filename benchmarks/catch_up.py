"""`radar run` catching up on a backlog of the offsets topic, against Kafka -> raw Delta of the same backlog.

    python -m benchmarks.catch_up [--records 3000000] [--partitions 4]

Issue #50's side-by-side: a monitor started on a `__consumer_offsets` backlog, read from the start. The broker takes
no writes into its own `__consumer_offsets`, so the backlog (`benchmarks.ingest`'s realistic mix) goes into an
ordinary topic that radar reads as its offsets topic (`kafka.offsets_topic`), on an embedded broker this script
starts. `radar run` is started as a user starts it (a subprocess, `--conf conf/local.yml`, its own data dir);
it has caught up when every query of it that reads the backlog has committed a micro-batch ending at the backlog's
end (its checkpoint's `offsets/` and `commits/` logs). The baseline, in the same run and in a process of its own:
Spark persisting the same records untouched into one Delta table (`benchmarks.ingest.timed_passthrough`). For each:
the seconds from the process's start to caught up, records/s, records per CPU-second of its processes (the
Python driver, its JVM, its Python workers; not the broker) and their peak resident memory, sampled every
`--sample-s`. Prints one JSON object and writes it to `benchmarks/results/catch_up-<UTC start>.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.ingest import produce, progress, realistic_mix, timed_passthrough
from benchmarks.process_tree import CONF, RADAR, cpu_seconds, descendants, radar_part, rss_bytes
from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.pipelines.config import RadarConfig, load_config

CAUGHT_UP_TIMEOUT_S = 1800.0


class TreeSamples:
    """A process and the processes below it (less a broker among them), sampled: CPU seconds and peak memory."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak_rss_bytes = 0
        self.cpu_s = 0.0
        self._cpu_by_pid: dict[int, float] = {}

    def sample(self) -> None:
        pids = [self.root, *(pid for pid, command in descendants(self.root).items() if radar_part(command) != "broker")]
        self.peak_rss_bytes = max(self.peak_rss_bytes, sum(rss_bytes(pid) for pid in pids))
        for pid in pids:  # a process that has ended keeps the CPU it was last seen with
            self._cpu_by_pid[pid] = max(self._cpu_by_pid.get(pid, 0.0), cpu_seconds(pid))
        self.cpu_s = sum(self._cpu_by_pid.values())


def committed_end(checkpoint: Path, topic: str) -> int | None:
    """The sum over `topic`'s partitions of the end offsets of the query's last committed micro-batch; None when the
    query does not read `topic` or has committed nothing yet."""
    commits = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*") if p.name.isdigit()]
    if not commits:
        return None
    offsets_file = checkpoint / "offsets" / str(max(commits))
    if not offsets_file.is_file():
        return None
    for line in offsets_file.read_text(encoding="utf-8").splitlines()[2:]:  # a version, the metadata, each source
        try:
            source = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(source, dict) and topic in source:
            return sum(int(offset) for offset in source[topic].values())
    return None


def backlog_readers(data_dir: Path, topic: str) -> dict[str, int | None]:
    """Every query checkpoint under `data_dir` whose offset log names `topic`: its committed end (`committed_end`)."""
    found: dict[str, int | None] = {}
    for offsets in data_dir.rglob("offsets"):
        checkpoint = offsets.parent
        if not (checkpoint / "commits").is_dir():
            continue
        logs = sorted((p for p in offsets.glob("[0-9]*") if p.name.isdigit()), key=lambda p: int(p.name))
        if logs and topic in logs[-1].read_text(encoding="utf-8"):
            found[str(checkpoint.relative_to(data_dir))] = committed_end(checkpoint, topic)
    return found


def figures_of(seconds: float, records: int, tree: TreeSamples) -> dict[str, Any]:
    return {
        "catch_up_s": round(seconds, 1),
        "records_per_s": round(records / seconds),
        "cpu_s": round(tree.cpu_s, 1),
        "records_per_cpu_s": round(records / tree.cpu_s) if tree.cpu_s else None,
        "peak_rss_mib": round(tree.peak_rss_bytes / 2**20),
    }


def radar_run(
    bootstrap: str, topic: str, telemetry: str, records: int, folder: Path, sample_s: float
) -> dict[str, Any]:
    """`radar run` from its start until it has caught up on the backlog, then stopped (Ctrl-C)."""
    data_dir = folder / "radar-data"
    env = os.environ | {
        "RADAR__KAFKA__BOOTSTRAP_SERVERS": bootstrap,
        "RADAR__KAFKA__OFFSETS_TOPIC": topic,
        "RADAR__KAFKA__TELEMETRY_TOPICS": f"[{telemetry}]",
        "RADAR__KAFKA__STARTING_OFFSETS": "earliest",
    }
    command = [*RADAR, "--conf", str(CONF), "--data-dir", str(data_dir), "run"]
    log = folder / "radar-run.log"
    with log.open("w") as output:
        started = time.monotonic()
        run = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    tree = TreeSamples(run.pid)
    readers: dict[str, int | None] = {}
    try:
        while True:
            tree.sample()
            readers = backlog_readers(data_dir, topic)
            if len(readers) >= 2 and all(end == records for end in readers.values()):
                break  # the ingest query and the detection query: both read the offsets topic
            if run.poll() is not None or time.monotonic() - started > CAUGHT_UP_TIMEOUT_S:
                said = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"radar run did not catch up (readers {readers}); the end of what it said:\n{said}")
            time.sleep(sample_s)
        seconds = time.monotonic() - started
        tree.sample()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGINT)
            run.wait(timeout=180)
    return figures_of(seconds, records, tree) | {"queries": sorted(readers)}


def raw_delta_run(bootstrap: str, topic: str, records: int, folder: Path, sample_s: float) -> dict[str, Any]:
    """The baseline in a child process (`--raw-delta-of`), measured from outside as `radar_run` is."""
    command = [sys.executable, "-m", "benchmarks.catch_up", "--raw-delta-of", topic, "--bootstrap", bootstrap]
    command += ["--data-dir", str(folder / "raw-data"), "--no-out"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    tree = TreeSamples(child.pid)
    while child.poll() is None:
        tree.sample()
        time.sleep(sample_s)
    out = child.stdout.read() if child.stdout else ""
    if child.returncode != 0:
        raise RuntimeError(f"the raw Delta run exited {child.returncode}; its stderr is above")
    inside = json.loads(out)
    if inside["records"] != records:
        raise RuntimeError(f"the raw Delta run wrote {inside['records']} rows of {records}")
    # caught up when its query ended (its row count and exit after it are not catching up); its CPU includes them
    return figures_of(inside["process_s"], records, tree) | {"query_s": inside["seconds"], "cpu_includes_count": True}


def raw_delta_child(config: RadarConfig, topic: str, bootstrap: str) -> dict[str, Any]:
    """Inside the baseline's process: its session, then the topic read from the start into one Delta table."""
    from rebalance_radar.pipelines.runtime.session import build_spark_session
    from rebalance_radar.pipelines.stages.sources import kafka_stream

    spark = build_spark_session(config)
    own = config.model_copy(update={"kafka": config.kafka.model_copy(update={"offsets_topic": topic})})
    ended: list[float] = []
    done = timed_passthrough(spark, kafka_stream(spark, own, [topic], bootstrap), own, "catch_up", ended=ended)
    return done | {"process_s": round(ended[0] - psutil.Process().create_time(), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3_000_000)
    parser.add_argument("--partitions", type=int, default=4, help="the backlog topic's partitions")
    parser.add_argument("--sample-s", type=float, default=0.5)
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the run's files here (default: removed)")
    parser.add_argument("--raw-delta-of", default=None, help=argparse.SUPPRESS)  # the baseline's own process
    parser.add_argument("--bootstrap", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, default=None, help=argparse.SUPPRESS)
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    if args.raw_delta_of:
        config = load_config(CONF).with_data_dir(args.data_dir)
        print(json.dumps(raw_delta_child(config, args.raw_delta_of, args.bootstrap)))
        return 0
    started = started_now()
    from rebalance_radar.pipelines.local.broker import EmbeddedKafka
    from rebalance_radar.pipelines.local.topics import create_topics

    config = load_config(CONF)
    with tempfile.TemporaryDirectory(prefix="radar-bench-catch-up-") as scratch:
        folder = args.work_dir or Path(scratch)  # kept when named: radar run's log, its data dir, the broker's
        folder.mkdir(parents=True, exist_ok=True)
        with EmbeddedKafka(config.broker, folder / "broker", spark=config.spark) as broker:
            bootstrap = broker.bootstrap_servers
            tag = int(time.time())
            topic, telemetry = f"bench.backlog.{tag}", f"bench.telemetry.{tag}"
            create_topics(bootstrap, [topic], partitions=args.partitions)
            create_topics(bootstrap, [telemetry])
            records, mix = realistic_mix(args.records)
            began = time.perf_counter()
            produce(bootstrap, topic, records)
            progress(f"catch_up: produced {len(records)} records in {time.perf_counter() - began:.1f} s")
            del records
            raw = raw_delta_run(bootstrap, topic, args.records, folder, args.sample_s)
            progress(f"catch_up: raw Delta {raw}")
            radar = radar_run(bootstrap, topic, telemetry, args.records, folder, args.sample_s)
            progress(f"catch_up: radar run {radar}")
    figures = {
        "records": args.records,
        "partitions": args.partitions,
        "mix": dict(mix),
        "max_offsets_per_trigger": config.kafka.max_offsets_per_trigger,
        "raw_delta": raw,
        "radar_run": radar,
        "ratio_radar_to_raw_delta": round(radar["records_per_s"] / raw["records_per_s"], 3),
    }
    print(json.dumps(figures, indent=2))
    write_run_result("catch_up", figures, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
