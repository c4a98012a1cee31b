"""What each piece of the local master's tuning saves a user (issue #50): `radar replay` of the bundled sample into a
fresh data dir, in a fresh process, with every piece on, and with one piece turned off at a time; prints JSON and
writes it to `benchmarks/results/local_tuning-<UTC start>.json` (`benchmarks.result_file`; `--out PATH` elsewhere).

A piece stays in `pipelines.runtime.local_runtime` only if turning it off costs at least `KEEP_ABOVE` (10 %) of the
replay's wall time. Variants run in alternating order, round after round, so a slow spell of the host touches all of
them; each variant is reported by its median and its ratio to the all-on median of the same run.

Pieces are turned off through the config a user has (`spark.local_tuning`, `spark.extra_conf`), so the benchmark
runs unchanged against the code before a piece is removed and after.

    python -m benchmarks.local_tuning [--rounds 3] [--variants all,no_worker_daemon,...] [--sample FILE]
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.result_file import add_out_arguments, started_now, write_run_result

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "samples" / "consumer_offsets.sample.jsonl"
KEEP_ABOVE = 0.10
ALL_ON = "all_on"

# Each variant: the environment that turns one piece off (RADAR__ overrides, as a user would set them).
VARIANTS: dict[str, dict[str, str]] = {
    ALL_ON: {},
    # the worker daemon module and its preloaded imports
    "no_worker_daemon": {"RADAR__SPARK__LOCAL_TUNING__WORKER_DAEMON": "false"},
    # Hadoop's local file system without a `chmod` process per file
    "no_shell_free_fs": {"RADAR__SPARK__LOCAL_TUNING__SHELL_FREE_FS": "false"},
    # C1-only JIT for a short command's JVM
    "no_quick_start": {"RADAR__SPARK__LOCAL_TUNING__QUICK_START": "false"},
    # JVM <-> Python workers over Unix sockets
    "no_unix_sockets": {"RADAR__SPARK__LOCAL_TUNING__UNIX_SOCKETS": "false"},
    # a short command's class-data archive (AppCDS)
    "no_class_archive": {"RADAR__SPARK__LOCAL_TUNING__CLASS_ARCHIVE": "false"},
    # checkpoint files renamed through Hadoop's FileSystem, not FileContext
    "no_checkpoint_rename": {"RADAR__SPARK__LOCAL_TUNING__CHECKPOINT_RENAME": "false"},
}


def replay_seconds(env_overrides: dict[str, str], sample: Path, scratch: Path) -> float:
    """Wall seconds of one `radar replay` of `sample` into a new data dir, spawn to exit; fails on a non-zero exit."""
    data_dir = Path(tempfile.mkdtemp(prefix="replay-", dir=scratch))
    argv = [
        sys.executable,
        "-m",
        "rebalance_radar.pipelines.cli",
        "replay",
        "--input",
        str(sample),
        "--data-dir",
        str(data_dir),
    ]
    started = time.monotonic()
    done = subprocess.run(argv, env={**os.environ, **env_overrides}, capture_output=True, text=True, cwd=REPO)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"radar replay failed ({done.returncode}) with {env_overrides}: {done.stderr[-2000:]}")
    return elapsed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="all-on replays first, not counted (caches, jars)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--sample", type=Path, default=SAMPLE)
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    names = [name.strip() for name in args.variants.split(",") if name.strip()]
    unknown = [name for name in names if name not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    if ALL_ON not in names:
        names.insert(0, ALL_ON)
    console = Console(stderr=True)
    times: dict[str, list[float]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="radar-local-tuning-") as scratch:
        for _ in range(args.warmup):
            replay_seconds({}, args.sample, Path(scratch))
        with console.status("") as status:
            for round_number in range(args.rounds):
                order = names if round_number % 2 == 0 else list(reversed(names))
                for name in order:
                    status.update(f"round {round_number + 1}/{args.rounds}: {name}")
                    times[name].append(replay_seconds(VARIANTS[name], args.sample, Path(scratch)))
                    console.print(f"round {round_number + 1} {name}: {times[name][-1]:.2f} s")
    base = statistics.median(times[ALL_ON])
    result: dict[str, Any] = {"sample": str(args.sample), "rounds": args.rounds, "keep_above": KEEP_ABOVE}
    result["variants"] = {
        name: {
            "replay_s": [round(t, 3) for t in runs],
            "median_s": round(statistics.median(runs), 3),
            "ratio_to_all_on": round(statistics.median(runs) / base, 3),
            # what the piece saves: the replay without it, against all on
            "piece_saves": round(1 - base / statistics.median(runs), 3),
        }
        for name, runs in times.items()
    }
    result["keep"] = sorted(
        name.removeprefix("no_")
        for name, row in result["variants"].items()
        if name != ALL_ON and row["piece_saves"] >= KEEP_ABOVE
    )
    print(json.dumps(result, indent=2))
    write_run_result("local_tuning", result, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
