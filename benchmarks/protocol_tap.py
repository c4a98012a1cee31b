"""What the protocol tap costs the traffic it forwards: consumer throughput and group-call latency, direct vs tapped.

Why: a tap sits in the data path, so it must not slow fetches, and mirroring a group call must not delay the call.
Two embedded brokers with the same config run side by side: `direct`, and `tapped` (it advertises a tap, run as
the CLI subprocess, mirroring to a topic on `direct`). Rounds alternate the two. Per round and path: records/s of
a plain consumer reading a pre-produced topic with `poll()` per record (`fetch.queue.backoff.ms=10`, so
librdkafka's 1 s fetch backoff does not decide the number; see benchmarks/agent.py), and the median/p99 latency
of synchronous OffsetCommit calls (each one is mirrored by the tap). At the end, the tap's CPU seconds and its
exit stats (mirrored, delivered, dropped).
Run: `python -m benchmarks.protocol_tap [--records 300000] [--rounds 5] [--commits 200]`; prints JSON and writes it to
`benchmarks/results/protocol_tap-<UTC start>.json` (`benchmarks.result_file`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from benchmarks.agent import produce_topic, read_all
from benchmarks.process_tree import cpu_seconds
from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.emitters.protocol_tap import advertise_through
from rebalance_radar.pipelines.config import DEFAULT_CONF_PATH, load_config
from rebalance_radar.pipelines.local.broker import EmbeddedKafka, free_loopback_port


def consumer_config(bootstrap: str, name: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-tap-{name}-{time.time_ns()}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "fetch.queue.backoff.ms": 10,
        "log_level": 2,
    }


def read_rate(bootstrap: str, topic: str, records: int) -> float:
    consumer = Consumer(consumer_config(bootstrap, "read"))
    try:
        return read_all(consumer, topic, records, 50.0)[2]
    finally:
        consumer.close()


def commit_latencies_ms(bootstrap: str, topic: str, commits: int) -> list[float]:
    """Synchronous commits of a moving offset on partition 0, each timed from the call to its return."""
    consumer = Consumer(consumer_config(bootstrap, "commit"))
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.1)
    latencies = []
    for offset in range(1, commits + 1):
        started = time.perf_counter()
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        latencies.append((time.perf_counter() - started) * 1000)
    consumer.close()
    return latencies


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--commits", type=int, default=200)
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    config = load_config(DEFAULT_CONF_PATH, env=os.environ)
    host = config.broker.host
    tap_port = free_loopback_port(host)
    results: dict[str, dict[str, list[float]]] = {p: {"rate": [], "commit_ms": []} for p in ("direct", "tapped")}
    with tempfile.TemporaryDirectory(prefix="bench-tap-") as data_dir:
        direct = EmbeddedKafka(config.broker, Path(data_dir) / "direct", spark=config.spark)
        tapped = EmbeddedKafka(
            advertise_through(config.broker, host, tap_port), Path(data_dir) / "tapped", spark=config.spark
        )
        tap: subprocess.Popen[str] | None = None
        try:
            direct.start()
            tapped.start()
            telemetry_topic = f"bench-tap-telemetry-{time.time_ns()}"
            command = [sys.executable, "-m", "rebalance_radar.emitters.protocol_tap", "--listen", f"{host}:{tap_port}"]
            command += ["--broker", tapped.bootstrap_servers, "--bootstrap", direct.bootstrap_servers]
            command += ["--topic", telemetry_topic]
            tap = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
            assert tap.stdout is not None and "listening" in tap.stdout.readline()
            paths = {"direct": direct.bootstrap_servers, "tapped": f"{host}:{tap_port}"}
            topics = {}
            for path, bootstrap in paths.items():
                topics[path] = f"bench-tap-{path}-{time.time_ns()}"
                produce_topic(bootstrap, topics[path], args.records, args.size)
            for round_ in range(args.rounds):
                for path in ("direct", "tapped") if round_ % 2 == 0 else ("tapped", "direct"):
                    rate = read_rate(paths[path], topics[path], args.records)
                    latencies = commit_latencies_ms(paths[path], topics[path], args.commits)
                    results[path]["rate"].append(rate)
                    results[path]["commit_ms"] += latencies
                    print(
                        f"round {round_} {path}: {rate:,.0f} rec/s, commit median "
                        f"{statistics.median(latencies):.2f} ms",
                        file=sys.stderr,
                        flush=True,
                    )
            tap_cpu_s = cpu_seconds(tap.pid)
            tap.terminate()
            output, _ = tap.communicate(timeout=30)
            stopped = [json.loads(line)["stopped"] for line in output.splitlines() if line.startswith('{"stopped"')]
        finally:
            if tap is not None and tap.poll() is None:
                tap.kill()
                tap.wait(10)
            tapped.stop()
            direct.stop()
    summary = {
        path: {
            "rate_median": round(statistics.median(values["rate"])),
            "rate_min": round(min(values["rate"])),
            "rate_max": round(max(values["rate"])),
            "commit_ms_median": round(statistics.median(values["commit_ms"]), 3),
            "commit_ms_p99": round(percentile(values["commit_ms"], 0.99), 3),
        }
        for path, values in results.items()
    }
    summary["tapped"]["rate_ratio_to_direct"] = round(
        summary["tapped"]["rate_median"] / summary["direct"]["rate_median"], 3
    )
    report = {
        "records": args.records,
        "record_bytes": args.size,
        "rounds": args.rounds,
        "commits_per_round": args.commits,
        "summary": summary,
        "tap_cpu_s": round(tap_cpu_s, 2),
        "tap_stats": stopped[0] if stopped else None,
        "rates": {path: [round(r) for r in values["rate"]] for path, values in results.items()},
    }
    print(json.dumps(report, indent=1))
    write_run_result("protocol_tap", report, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
