"""Fixed costs a user waits for (issue #11): `radar replay` of the bundled sample into a fresh data dir, then
`radar sql` and `radar detections` on it, each in a fresh subprocess, broken down into the phases the commands
mark themselves (`pipelines.runtime.phases`, `RADAR_PROFILE`); prints JSON and writes it to
`benchmarks/results/startup-<UTC start>.json` (`benchmarks.result_file`).

Phases are exclusive (a phase's time less the phases inside it), so they add up to the wall time:
`python start` is spawn -> `main` entered (interpreter + `pipelines.cli` imports), `import pipelines` the command's
lazy imports (pyspark, the pipeline modules), `jvm launch` / `spark session` / `verify formats` the session,
`* tables` table creation or registration, `* query`/`queries` the streaming queries (start to stop), `summary` /
`counts` the Spark jobs after them, `other` what the command did outside any marked phase, `shutdown` the command's
return -> process exit (the JVM's stop included).

Each round also runs the floor (`benchmarks.spark_floor`: the same session started, a 42-row Delta table written
and counted), and each command is reported against it (`ratio_to_floor`, `over_floor_s`): the host's speed moves by
a quarter between hours, and the ratio compares runs across them where seconds do not.

    python -m benchmarks.startup [--runs 3] [--warmup 1] [--commands replay,sql,detections,floor] [--sample FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.pipelines.runtime.phases import PROFILE_ENV

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "samples" / "consumer_offsets.sample.jsonl"
SQL_QUERY = "SELECT count(*) FROM offset_commits"
FLOOR = "floor"
COMMANDS = ("replay", "sql", "detections", FLOOR)


@dataclass(frozen=True)
class CommandRun:
    """One command in one fresh process: wall seconds, exclusive seconds per phase, exit code."""

    command: str
    wall_s: float
    phases: dict[str, float]
    returncode: int


def command_argv(command: str, data_dir: Path, sample: Path) -> list[str]:
    base = [sys.executable, "-m", "rebalance_radar.pipelines.cli"]
    if command == "replay":
        return [*base, "replay", "--input", str(sample), "--data-dir", str(data_dir)]
    if command == "sql":
        return [*base, "sql", SQL_QUERY, "--data-dir", str(data_dir)]
    if command == "detections":
        return [*base, "detections", "--data-dir", str(data_dir)]
    if command == FLOOR:
        return [sys.executable, "-m", "benchmarks.spark_floor", str(data_dir / FLOOR)]
    raise ValueError(f"unknown command {command}; one of {', '.join(COMMANDS)}")


def exclusive_phases(records: Sequence[dict[str, Any]], spawned: float, exited: float) -> dict[str, float]:
    """Seconds per phase name, each less the phases nested in it, plus `python start`, `other` and `shutdown`."""
    main = next((r for r in records if r["phase"] == "main"), None)
    command = next((r for r in records if r["phase"].startswith("command ")), None)
    out: dict[str, float] = {}
    if main is None or command is None:
        return {"unmarked": exited - spawned}
    out["python start"] = main["start"] - spawned
    timed = [r for r in records if r is not main and r is not command]

    def parent(record: dict[str, Any]) -> dict[str, Any] | None:
        """The smallest phase enclosing `record`, if any."""
        around = [o for o in timed if o is not record and o["start"] <= record["start"] and record["end"] <= o["end"]]
        return min(around, key=lambda o: o["end"] - o["start"], default=None)

    parents = [parent(r) for r in timed]
    for record in timed:
        children = sum(c["end"] - c["start"] for c, p in zip(timed, parents, strict=True) if p is record)
        out[record["phase"]] = out.get(record["phase"], 0.0) + (record["end"] - record["start"]) - children
    marked = sum(r["end"] - r["start"] for r, p in zip(timed, parents, strict=True) if p is None)
    out["other"] = (command["end"] - command["start"]) - marked + (command["start"] - main["end"])
    out["shutdown"] = exited - command["end"]
    return {name: round(seconds, 3) for name, seconds in out.items()}


def run_command(command: str, data_dir: Path, sample: Path, scratch: Path) -> CommandRun:
    profile = scratch / f"{command}-{time.monotonic_ns()}.jsonl"
    env = {**os.environ, PROFILE_ENV: str(profile), "PYTHONPATH": str(REPO)}
    spawned = time.time()
    done = subprocess.run(command_argv(command, data_dir, sample), env=env, cwd=REPO, capture_output=True, text=True)
    exited = time.time()
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    records = [json.loads(line) for line in profile.read_text().splitlines()] if profile.exists() else []
    return CommandRun(command, round(exited - spawned, 3), exclusive_phases(records, spawned, exited), done.returncode)


def median_phases(runs: Sequence[CommandRun]) -> dict[str, float]:
    names = dict.fromkeys(name for run in runs for name in run.phases)
    return {name: round(statistics.median(run.phases.get(name, 0.0) for run in runs), 3) for name in names}


def against_floor(runs: Sequence[CommandRun], floor_s: float | None, command: str) -> dict[str, float]:
    """A command's median wall time as a multiple of the floor's median, and its seconds beyond it."""
    if floor_s is None or command == FLOOR or floor_s <= 0:
        return {}
    median_s = statistics.median(r.wall_s for r in runs)
    return {"ratio_to_floor": round(median_s / floor_s, 3), "over_floor_s": round(median_s - floor_s, 3)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="measured rounds (each: replay into a new data dir, ...)")
    parser.add_argument("--warmup", type=int, default=1, help="rounds run first and not counted (a warm machine)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated, of " + ", ".join(COMMANDS))
    parser.add_argument("--sample", type=Path, default=SAMPLE, help="the dump replayed")
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    if any(c not in COMMANDS for c in commands):
        parser.error(f"--commands takes {', '.join(COMMANDS)}")
    if any(c in ("sql", "detections") for c in commands) and "replay" not in commands:
        commands = ["replay", *commands]  # sql and detections need tables: the replay makes them (and is reported)
    console = Console(stderr=True)
    load_before = os.getloadavg()
    results: dict[str, list[CommandRun]] = {c: [] for c in commands}
    scratch = Path(tempfile.mkdtemp(prefix="radar-startup-bench-"))
    try:
        total = args.warmup + args.runs
        for round_index in range(total):
            data_dir = scratch / f"data-{round_index}"
            for command in commands:
                label = "warm-up" if round_index < args.warmup else f"run {round_index - args.warmup + 1}/{args.runs}"
                with console.status(f"{label}: radar {command}"):
                    run = run_command(command, data_dir, args.sample.resolve(), scratch)
                console.print(f"{label}: radar {command} {run.wall_s:.1f} s (exit {run.returncode})")
                if round_index >= args.warmup:
                    results[command].append(run)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    floor = results.get(FLOOR)
    floor_s = statistics.median(r.wall_s for r in floor) if floor else None
    report = {
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "runs": args.runs,
        "commands": {
            command: {
                "median_wall_s": round(statistics.median(r.wall_s for r in runs), 3),
                "wall_s": [r.wall_s for r in runs],
                "exit_codes": sorted({r.returncode for r in runs}),
                "median_phases_s": median_phases(runs),
                **against_floor(runs, floor_s, command),
            }
            for command, runs in results.items()
            if runs
        },
    }
    print(json.dumps(report, indent=2))
    write_run_result("startup", report, args, started)
    return 0 if all(r.returncode == 0 for runs in results.values() for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
