"""Soak: `radar run` through a day of a fleet's commits, played fast through the live path, with `radar maintain`
in the loop; are memory, state, files per table and micro-batch time flat?

    PYTHONPATH=$PWD python benchmarks/soak.py [--simulated-hours 24] [--wall-minutes 20] [--groups 40]

The embedded broker, and `radar run` as a user starts it (a subprocess, `--conf conf/local.yml`), reading its
offsets topic from `soak.consumer_offsets`: this script produces there what a fleet's coordinator would write to
`__consumer_offsets` (clients may not produce to the real one), OffsetCommit records of `--groups` groups x
`--partitions` partitions every `--commit-interval-s` and a new generation of each group every
`--rebalance-every-min`, all in simulated time (record timestamps and commit timestamps) that runs
`simulated-hours / wall-minutes` times faster than the wall clock, from the start on. Every `--maintain-every-min`
(wall) `radar maintain` runs beside it. Every `--sample-s`: the RSS of radar's Python driver, its JVM (driver and
executor on a local master) and its Python workers (/proc), each query's newest micro-batch time and state
(`logs/run-status.json`), and the live files and rows of every table (Delta logs).

Writes JSON (samples, and the first and last quarter's means of each curve with their ratio) in the envelope of
`benchmarks.result_file` to `benchmarks/results/soak-<UTC start>.json` (or `--out`), and beside it an HTML plot
(altair) of the curves and a PNG of it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from rebalance_radar.pipelines.config import REPO_ROOT, load_config
from rebalance_radar.pipelines.local.broker import EmbeddedKafka
from rebalance_radar.pipelines.local.topics import create_topics
from rebalance_radar.pipelines.runtime.run_status import read_run_status
from rebalance_radar.pipelines.storage.delta_log import live_files, record_count
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import TABLES
from rebalance_radar.transforms.wire.coordinator_records import encode_coordinator_record

OFFSETS_TOPIC = "soak.consumer_offsets"
sys.path.insert(0, str(REPO_ROOT))
from benchmarks.ingest import generation_members  # noqa: E402 - the same members the ingest benchmark writes
from benchmarks.process_tree import CONF, RADAR, descendants, radar_part, rss_bytes  # noqa: E402 - as the line above
from benchmarks.result_file import default_path, started_now, write_result  # noqa: E402 - as the line above


class Fleet:
    """What the groups' coordinator would write, in simulated time."""

    def __init__(self, groups: int, partitions: int, commit_interval_s: float, rebalance_every_min: float) -> None:
        self.groups, self.partitions = groups, partitions
        self.commit_interval_ms = int(commit_interval_s * 1000)
        self.rebalance_every_ms = int(rebalance_every_min * 60_000)
        self.offsets = {(g, p): 0 for g in range(groups) for p in range(partitions)}
        self.generation = dict.fromkeys(range(groups), 1)
        self.rng = random.Random(7)

    def records_at(self, sim_ms: int, previous_ms: int) -> list[tuple[bytes, bytes | None, int]]:
        """(key, value, timestamp) of what happened in (previous_ms, sim_ms]."""
        out = []
        ticks = range(previous_ms // self.commit_interval_ms + 1, sim_ms // self.commit_interval_ms + 1)
        for tick in ticks:
            at = tick * self.commit_interval_ms
            if at % self.rebalance_every_ms < self.commit_interval_ms:  # every group rolls a generation
                for g in range(self.groups):
                    self.generation[g] += 1
                    value = {
                        "protocolType": "consumer",
                        "generation": self.generation[g],
                        "protocol": "range",
                        "leader": f"consumer-payments-0-{self.generation[g]:08x}",
                        "currentStateTimestamp": at,
                        "members": generation_members(self.generation[g], 3, 4),
                    }
                    key, body = encode_coordinator_record(2, {"group": f"soak-{g}"}, 4, value)
                    out.append((key, body, at))
            for (g, p), offset in self.offsets.items():
                self.offsets[(g, p)] = offset + self.rng.randint(50, 150)
                key, body = encode_coordinator_record(
                    1,
                    {"group": f"soak-{g}", "topic": "orders", "partition": p},
                    3,
                    {"offset": self.offsets[(g, p)], "leaderEpoch": 0, "metadata": "", "commitTimestamp": at},
                )
                out.append((key, body, at))
        return out


def create_offsets_topic(bootstrap: str) -> None:
    """The fleet's offsets topic, taking record timestamps ahead of the broker's clock (simulated time runs ahead;
    Kafka 4 refuses timestamps more than an hour ahead by default)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = NewTopic(OFFSETS_TOPIC, 4, 1, config={"message.timestamp.after.max.ms": str(2**63 - 1)})
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held until the futures resolve
    for future in admin.create_topics([topic]).values():
        future.result(timeout=30)


def sample(run_pid: int, config: Any, started: float, sim_hours: float) -> dict[str, Any]:
    below = descendants(run_pid)
    jvm = [pid for pid, cmd in below.items() if radar_part(cmd) == "jvm"]
    workers = [pid for pid, cmd in below.items() if radar_part(cmd) == "python_workers"]
    row: dict[str, Any] = {
        "wall_s": round(time.monotonic() - started, 1),
        "simulated_h": round(sim_hours, 3),
        "driver_python_rss_mb": round(rss_bytes(run_pid) / 2**20, 1),
        "jvm_rss_mb": round(sum(rss_bytes(p) for p in jvm) / 2**20, 1),
        "workers_rss_mb": round(sum(rss_bytes(p) for p in workers) / 2**20, 1),
    }
    status = read_run_status(config.data_dir)
    for query in status.queries if status is not None else ():
        short = query.name.split("-kafka-")[0].removeprefix("radar-")
        row[f"batch_ms.{short}"] = query.batch_ms
        if query.state_rows is not None:
            row[f"state_rows.{short}"] = query.state_rows
            row[f"state_memory_kb.{short}"] = round((query.state_memory_bytes or 0) / 1024, 1)
            row[f"state_sst_kb.{short}"] = round((query.state_sst_bytes or 0) / 1024, 1)
    catalog = TableCatalog(config)
    for name, table in TABLES.items():
        location = catalog.location(table)
        if location is not None and (location / "_delta_log").is_dir():
            files = live_files(location)
            row[f"files.{name}"] = len(files) if files is not None else None
            row[f"rows.{name}"] = record_count(location)
    return row


def quarter_means(samples: list[dict[str, Any]], key: str) -> dict[str, float | None]:
    values = [s[key] for s in samples if isinstance(s.get(key), int | float)]
    if len(values) < 8:
        return {"first_quarter": None, "last_quarter": None, "ratio": None}
    quarter = len(values) // 4
    first, last = statistics.fmean(values[:quarter]), statistics.fmean(values[-quarter:])
    ratio = round(last / first, 3) if first else None
    return {"first_quarter": round(first, 1), "last_quarter": round(last, 1), "ratio": ratio}


def plot(samples: list[dict[str, Any]], path: Path) -> None:
    import altair as alt
    import pandas as pd

    long = []
    for s in samples:
        for key, value in s.items():
            if key in ("wall_s", "simulated_h") or not isinstance(value, int | float):
                continue
            family = key.split(".")[0] if "." in key else "memory (MB)" if key.endswith("_mb") else "records"
            long.append({"simulated_h": s["simulated_h"], "series": key, "family": family, "value": value})
    data = pd.DataFrame(long)
    chart = (
        alt.Chart(data)
        .mark_line()
        .encode(
            x=alt.X("simulated_h:Q", title="simulated hours"),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("series:N", legend=alt.Legend(columns=2, labelLimit=260)),
        )
        .properties(width=520, height=160)
        .facet(row=alt.Row("family:N", title=None), columns=1)
        .resolve_scale(y="independent", color="independent")
        .properties(title="radar run soak: memory, micro-batch time, state and files per table")
    )
    chart.save(str(path), inline=True)  # offline: the Vega bundle in the page, as the report's (vl-convert)
    chart.save(str(path.with_suffix(".png")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--simulated-hours", type=float, default=24.0)
    parser.add_argument("--wall-minutes", type=float, default=20.0)
    parser.add_argument("--groups", type=int, default=40)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--commit-interval-s", type=float, default=10.0)
    parser.add_argument("--rebalance-every-min", type=float, default=60.0)
    parser.add_argument(
        "--maintain-every-min",
        type=float,
        default=5.0,
        help="wall minutes; 0: no outside maintain (auto compaction only)",
    )
    parser.add_argument("--sample-s", type=float, default=15.0)
    parser.add_argument("--out", default=None, help="JSON (default: benchmarks/results/soak-<UTC start>.json)")
    args = parser.parse_args()

    started = started_now()
    out = Path(args.out) if args.out else default_path("soak", started)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="radar-soak-"))
    config = load_config(CONF).with_data_dir(work / "data")
    speed = args.simulated_hours * 3600 / (args.wall_minutes * 60)
    with EmbeddedKafka(config.broker, work / "broker", spark=config.spark) as broker:
        bootstrap = broker.bootstrap_servers
        create_offsets_topic(bootstrap)
        create_topics(bootstrap, list(config.kafka.telemetry_topics))
        env = {
            **os.environ,
            "RADAR__KAFKA__BOOTSTRAP_SERVERS": bootstrap,
            "RADAR__KAFKA__OFFSETS_TOPIC": OFFSETS_TOPIC,
            "PYTHONPATH": str(REPO_ROOT),
        }
        log = (work / "run.log").open("wb")
        run = subprocess.Popen(
            [*RADAR, "--conf", str(CONF), "--data-dir", str(config.data_dir), "run"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 400
        while "ingesting from" not in (work / "run.log").read_text(errors="replace"):
            if run.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"radar run did not start: {(work / 'run.log').read_text(errors='replace')[-3000:]}")
            time.sleep(1)
        print(f"soak: radar run started (data dir {config.data_dir}); {speed:.0f}x simulated time", file=sys.stderr)

        fleet = Fleet(args.groups, args.partitions, args.commit_interval_s, args.rebalance_every_min)
        producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 50, "queue.buffering.max.messages": 1_000_000}
        )
        sim_start = int(time.time() * 1000) + 60_000  # ahead of the wall clock, so the clock ticks never lead
        started = time.monotonic()
        samples: list[dict[str, Any]] = []
        produced = 0
        maintains: list[dict[str, Any]] = []
        stop = threading.Event()

        def maintain_loop() -> None:
            while not stop.wait(args.maintain_every_min * 60):
                began = time.monotonic()
                done = subprocess.run(
                    [*RADAR, "--conf", str(CONF), "--data-dir", str(config.data_dir), "maintain"],
                    env=env, capture_output=True, text=True, check=False,
                )  # fmt: skip
                maintains.append({"at_wall_s": round(began - started, 1), "seconds": round(time.monotonic() - began, 1),
                                  "rc": done.returncode, "tail": done.stderr.strip().splitlines()[-1:]})  # fmt: skip

        maintainer = threading.Thread(target=maintain_loop, daemon=True)
        if args.maintain_every_min > 0:
            maintainer.start()
        previous_sim = 0
        next_sample = 0.0
        try:
            while (elapsed := time.monotonic() - started) < args.wall_minutes * 60:
                sim_ms = int(elapsed * speed * 1000)
                for key, value, at in fleet.records_at(sim_ms, previous_sim):
                    producer.produce(OFFSETS_TOPIC, key=key, value=value, timestamp=sim_start + at)
                    produced += 1
                producer.poll(0)
                previous_sim = sim_ms
                if elapsed >= next_sample:
                    row = sample(run.pid, config, started, sim_ms / 3_600_000)
                    row["produced"] = produced
                    samples.append(row)
                    next_sample = elapsed + args.sample_s
                    print(f"soak: {json.dumps(row)}", file=sys.stderr, flush=True)
                if run.poll() is not None:
                    raise SystemExit(f"radar run ended: {(work / 'run.log').read_text(errors='replace')[-3000:]}")
                time.sleep(0.2)
        finally:
            stop.set()
            if maintainer.is_alive():
                maintainer.join(timeout=600)  # a maintain under way finishes, and is counted
            producer.flush(30)
            stop_began = time.monotonic()
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGINT)
            code = run.wait(300)
            stop_s = time.monotonic() - stop_began
            log.close()
    curves = sorted({k for s in samples for k in s if k not in ("wall_s", "simulated_h")})
    result = {
        "args": vars(args),
        "simulated_speed": round(speed, 1),
        "records_produced": produced,
        "stop_s": round(stop_s, 1),
        "exit_code": code,
        "maintain_runs": maintains,
        "flat": {key: quarter_means(samples, key) for key in curves},
        "samples": samples,
    }
    write_result("soak", result, started=started, out=out)
    plot(samples, out.with_suffix(".html"))
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
    print(f"soak: {out} and {out.with_suffix('.html')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
