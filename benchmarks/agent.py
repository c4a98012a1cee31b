"""Consumer-loop throughput with and without the radar agent, on one pre-produced topic.

Why: the agent must not cost the application throughput, and must cost nothing more when its telemetry cluster
is down. Variants, each reading the whole topic with a fresh group and a `poll()` per record:
- `plain`: confluent-kafka `Consumer`;
- `agent_up`: `RadarConsumer`, telemetry to a topic on the same cluster;
- `agent_down`: `RadarConsumer`, telemetry bootstrap on a closed port (events queue, then expire as drops).
All variants share one consumer config (statistics every `--stats-interval-ms`, auto commit every 200 ms; plain
gets a no-op stats_cb), so the difference is the agent's own work. Rounds rotate the variant order.

Per run: `assign_s` (subscribe -> partitions assigned: the group join), `first_record_s` (assigned -> first record:
the offset lookup and first fetch), `rate` = records/s from the first record to the last (warm-up excluded), and
every pause > `--gap-ms` between consecutive records (record index, ms) — which shows whether a stall is the first
fetch or happens in the steady state — `rate_without_gaps`, and `cpu_us_per_record` (this process's CPU time, all
librdkafka threads included, per record: what the agent costs, whatever else loads a shared machine).

Finding: the ~0.9 s stall is not warm-up (the first record comes ~0.11 s after the assignment in every run; only
the process's first group join is slow, ~0.6-2 s, as it creates `__consumer_offsets`). It comes mid-read, after
100k+ records, once or twice per 300k: librdkafka stops fetching when its local queue passes `queued.min.messages`
(100000) and postpones the next fetch by `fetch.queue.backoff.ms` (1000 ms default); a Python loop drains the queue
in ~0.15 s and then waits out the rest. `-X fetch.queue.backoff.ms=10` removes it.
Runs its own embedded broker unless `--bootstrap` is given.
Run: `python -m benchmarks.agent [--records 300000] [--rounds 5] [--bootstrap HOST:PORT]`; prints JSON and writes it
to `benchmarks/results/agent-<UTC start>.json` (`benchmarks.result_file`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.emitters.agent import RadarConsumer

VARIANTS = ("plain", "agent_up", "agent_down")
POLL_TIMEOUT_S = 1.0
RUN_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class RunResult:
    """One variant reading the whole topic once."""

    variant: str
    round: int
    records: int
    assign_s: float
    first_record_s: float
    rate: float
    rate_without_gaps: float
    cpu_us_per_record: float
    longest_gap_ms: float
    gaps: list[tuple[int, float]]
    agent: dict[str, int] | None = None


@dataclass
class VariantSummary:
    """Median/min/max over rounds of one variant."""

    rate_median: float = 0.0
    rate_min: float = 0.0
    rate_max: float = 0.0
    ratio_to_plain: float = 0.0
    rate_without_gaps_median: float = 0.0
    rate_without_gaps_min: float = 0.0
    rate_without_gaps_max: float = 0.0
    ratio_to_plain_without_gaps: float = 0.0
    cpu_us_per_record_median: float = 0.0
    cpu_ratio_to_plain: float = 0.0
    first_record_s_median: float = 0.0
    assign_s_median: float = 0.0
    longest_gap_ms_max: float = 0.0
    gaps_after_first_record: int = 0
    agent_totals: dict[str, int] = field(default_factory=dict)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed when the block ends: connections are refused


def produce_topic(bootstrap: str, topic: str, records: int, size: int) -> float:
    """Create a one-partition topic and fill it; returns the seconds it took."""
    started = time.monotonic()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
    payload = b"x" * size
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, payload)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60) != 0:
        raise RuntimeError("the benchmark topic could not be filled")
    return time.monotonic() - started


def read_all(consumer: Consumer, topic: str, records: int, gap_ms: float) -> tuple[float, float, float, float, list]:
    """(assign_s, first_record_s, rate, rate without the gaps, gaps) for one full read with poll() per record."""
    assigned_at: list[float] = []
    subscribed = time.monotonic()
    consumer.subscribe([topic], on_assign=lambda _c, _p: assigned_at.append(time.monotonic()))
    seen, first, last = 0, 0.0, 0.0
    gaps: list[tuple[int, float]] = []
    deadline = subscribed + RUN_TIMEOUT_S
    while seen < records and time.monotonic() < deadline:
        message = consumer.poll(POLL_TIMEOUT_S)
        if message is None or message.error() is not None:
            continue
        now = time.monotonic()
        if seen == 0:
            first = now
        elif (now - last) * 1000 > gap_ms:
            gaps.append((seen, round((now - last) * 1000, 1)))
        last = now
        seen += 1
    if seen < records:
        raise RuntimeError(f"read {seen} of {records} records within {RUN_TIMEOUT_S:.0f} s")
    assign = (assigned_at[0] if assigned_at else first) - subscribed
    first_record = first - (assigned_at[0] if assigned_at else subscribed)
    paused = sum(ms for _, ms in gaps) / 1000
    return assign, first_record, (records - 1) / (last - first), (records - 1) / (last - first - paused), gaps


def make_consumer(variant: str, base: dict[str, Any], telemetry_bootstrap: str, telemetry_topic: str) -> Consumer:
    config = {**base, "group.id": f"bench-{variant}-{time.time_ns()}"}
    if variant == "plain":
        return Consumer({**config, "stats_cb": lambda _stats: None})
    if variant == "agent_up":
        return RadarConsumer(config, {"bootstrap.servers": telemetry_bootstrap, "topic": telemetry_topic})
    telemetry_down = {
        "bootstrap.servers": f"127.0.0.1:{closed_port()}",
        "topic": telemetry_topic,
        "message.timeout.ms": 1000,
        "flush.timeout.s": 0.5,
    }
    return RadarConsumer(config, telemetry_down)


def run_variant(variant: str, round_: int, args: argparse.Namespace, bootstrap: str, topic: str) -> RunResult:
    base = {
        "bootstrap.servers": bootstrap,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
        "statistics.interval.ms": args.stats_interval_ms,
        "log_level": 2,
        **args.consumer_settings,
    }
    consumer = make_consumer(variant, base, bootstrap, f"{topic}-telemetry")
    cpu_started = time.process_time()
    assign, first_record, rate, busy_rate, gaps = read_all(consumer, topic, args.records, args.gap_ms)
    cpu_us = (time.process_time() - cpu_started) * 1e6 / args.records
    agent = None
    if isinstance(consumer, RadarConsumer):
        if variant == "agent_down":
            time.sleep(1.1)  # past message.timeout.ms: what was queued has expired and is counted as dropped
            consumer.poll(0.1)
        started_close = time.monotonic()
        consumer.close()
        telemetry = consumer.agent
        agent = {
            "produced": telemetry.produced,
            "delivered": telemetry.delivered,
            "dropped": telemetry.dropped,
            "queued_at_close": telemetry.queued,
            "close_ms": round((time.monotonic() - started_close) * 1000),
        }
    else:
        consumer.close()
    longest = max((ms for _, ms in gaps), default=0.0)
    return RunResult(
        variant, round_, args.records, assign, first_record, rate, busy_rate, round(cpu_us, 3), longest, gaps, agent
    )


def summarise(results: list[RunResult]) -> dict[str, VariantSummary]:
    summaries: dict[str, VariantSummary] = {}
    for variant in VARIANTS:
        runs = [r for r in results if r.variant == variant]
        rates = [r.rate for r in runs]
        busy = [r.rate_without_gaps for r in runs]
        totals: dict[str, int] = {}
        for run in runs:
            for key, value in (run.agent or {}).items():
                if key != "close_ms":
                    totals[key] = totals.get(key, 0) + value
        summaries[variant] = VariantSummary(
            rate_median=round(statistics.median(rates)),
            rate_min=round(min(rates)),
            rate_max=round(max(rates)),
            rate_without_gaps_median=round(statistics.median(busy)),
            rate_without_gaps_min=round(min(busy)),
            rate_without_gaps_max=round(max(busy)),
            cpu_us_per_record_median=round(statistics.median(r.cpu_us_per_record for r in runs), 3),
            first_record_s_median=round(statistics.median(r.first_record_s for r in runs), 3),
            assign_s_median=round(statistics.median(r.assign_s for r in runs), 3),
            longest_gap_ms_max=max(r.longest_gap_ms for r in runs),
            gaps_after_first_record=sum(len(r.gaps) for r in runs),
            agent_totals=totals,
        )
    plain, plain_busy = summaries["plain"].rate_median, summaries["plain"].rate_without_gaps_median
    for summary in summaries.values():
        summary.ratio_to_plain = round(summary.rate_median / plain, 3)
        summary.ratio_to_plain_without_gaps = round(summary.rate_without_gaps_median / plain_busy, 3)
        plain_cpu = summaries["plain"].cpu_us_per_record_median
        summary.cpu_ratio_to_plain = round(summary.cpu_us_per_record_median / plain_cpu, 3)
    return summaries


def benchmark(args: argparse.Namespace, bootstrap: str, log: Callable[[str], None]) -> dict[str, Any]:
    topic = f"bench-agent-{time.time_ns()}"
    produce_s = produce_topic(bootstrap, topic, args.records, args.size)
    log(f"produced {args.records} x {args.size} B in {produce_s:.1f} s")
    results: list[RunResult] = []
    for round_ in range(args.rounds):
        order = VARIANTS[round_ % len(VARIANTS) :] + VARIANTS[: round_ % len(VARIANTS)]
        for variant in order:
            result = run_variant(variant, round_, args, bootstrap, topic)
            log(
                f"round {round_} {variant}: {result.rate:,.0f} rec/s, assign {result.assign_s:.2f} s, "
                f"without gaps {result.rate_without_gaps:,.0f}, cpu {result.cpu_us_per_record:.2f} us/rec, "
                f"first record {result.first_record_s:.3f} s, "
                f"gaps {result.gaps}"
            )
            results.append(result)
    return {
        "records": args.records,
        "record_bytes": args.size,
        "rounds": args.rounds,
        "stats_interval_ms": args.stats_interval_ms,
        "gap_ms": args.gap_ms,
        "consumer_settings": args.consumer_settings,
        "summary": {variant: asdict(summary) for variant, summary in summarise(results).items()},
        "runs": [asdict(r) for r in results],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stats-interval-ms", type=int, default=100)
    parser.add_argument("--gap-ms", type=float, default=50.0, help="report pauses between records above this")
    parser.add_argument("--bootstrap", default=None, help="an existing cluster (default: start an embedded broker)")
    parser.add_argument(
        "-X", dest="consumer_setting", action="append", default=[], help="consumer key=value for every variant"
    )
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    args.consumer_settings = dict(pair.split("=", 1) for pair in args.consumer_setting)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.bootstrap:
        report = benchmark(args, args.bootstrap, log)
    else:
        from rebalance_radar.pipelines.config import DEFAULT_CONF_PATH, load_config
        from rebalance_radar.pipelines.local.broker import EmbeddedKafka

        config = load_config(DEFAULT_CONF_PATH, env=os.environ)
        with (
            tempfile.TemporaryDirectory(prefix="bench-agent-") as data_dir,
            EmbeddedKafka(config.broker, Path(data_dir), spark=config.spark) as broker,
        ):
            report = benchmark(args, broker.bootstrap_servers, log)
    print(json.dumps(report, indent=1))
    write_run_result("agent", report, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
