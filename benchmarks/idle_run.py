"""What an always-on `radar run` costs when nothing happens: the CPU of its processes on an idle cluster.

    python -m benchmarks.idle_run [--duration-s 180] [--sample-s 10]

`radar run` as a user starts it (a subprocess, `--conf conf/local.yml`, its own embedded broker, no groups): only
its clock ticks arrive, so the detection query runs a micro-batch every tick and the others idle. Every `--sample-s`
the CPU seconds of each of its processes (/proc): radar's Python driver, its JVM, its Python workers, and the
embedded broker, the baseline measured in the same run (a Kafka broker serving the same ticks). The figures: cores
used per sample, the steady state (the mean over the run's last third, after the JVM's warm-up) and its ratio to
the broker's.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rebalance_radar.pipelines.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.process_tree import CONF, RADAR, cpu_seconds, descendants, radar_part
from benchmarks.result_file import add_out_arguments, started_now, write_run_result

PARTS = ("jvm", "python", "python_workers", "broker")


def cpu_by_part(root: int) -> dict[str, float]:
    """The CPU seconds of `root` (radar's Python) and every process below it, by part (`radar_part`)."""
    totals = dict.fromkeys(PARTS, 0.0)
    totals["python"] = cpu_seconds(root)
    for pid, command in descendants(root).items():
        totals[radar_part(command)] += cpu_seconds(pid)
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=180.0, help="how long radar runs once it has started")
    parser.add_argument("--sample-s", type=float, default=10.0)
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    with tempfile.TemporaryDirectory(prefix="radar-idle-") as folder:
        log = Path(folder) / "radar-run.log"
        command = [*RADAR, "--conf", str(CONF), "--data-dir", str(Path(folder) / "data"), "run"]
        with log.open("w") as output:
            run = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        samples: list[dict[str, float]] = []
        try:
            began = time.monotonic()
            last, last_at = cpu_by_part(run.pid), began
            while time.monotonic() - began < args.duration_s and run.poll() is None:
                time.sleep(args.sample_s)
                now, now_at = cpu_by_part(run.pid), time.monotonic()
                cores = {part: round((now[part] - last[part]) / (now_at - last_at), 3) for part in PARTS}
                samples.append({"at_s": round(now_at - began, 1), **cores})
                print(f"idle_run: {samples[-1]}", file=sys.stderr, flush=True)
                last, last_at = now, now_at
        finally:
            os.killpg(run.pid, signal.SIGINT)
            run.wait(timeout=180)
        if len(samples) < 3:
            said = log.read_text()[-3000:]
            print(f"idle_run: radar run ended early; the end of what it said:\n{said}", file=sys.stderr)
            return 1
    steady = samples[-max(1, len(samples) // 3) :]
    steady_cores = {part: round(statistics.fmean(s[part] for s in steady), 3) for part in PARTS}
    radar_cores = sum(steady_cores[part] for part in PARTS if part != "broker")
    figures = {
        "duration_s": args.duration_s,
        "sample_s": args.sample_s,
        "samples": samples,
        "steady_cores": steady_cores,
        "steady_radar_cores": round(radar_cores, 3),
        "steady_ratio_to_broker": round(radar_cores / steady_cores["broker"], 1) if steady_cores["broker"] else None,
        "radar_cpu_s": round(sum(s[p] for s in samples for p in PARTS if p != "broker") * args.sample_s, 1),
    }
    print(figures)
    write_run_result("idle_run", figures, args, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
