"""One JSON file per benchmark run in `benchmarks/results/`: the run's figures in one envelope.

The envelope says when and where a figure was measured, so runs compare across days and hosts:
`benchmark` (the script), `date` (UTC, ISO-8601, when the run started), `commit` (`git rev-parse HEAD`, null outside
a checkout) and `dirty` (tracked files changed beside it), `cores` (`os.cpu_count()`), `machine`
(`platform.platform()`), `python`, `command` (the process's argv) and `figures` (what the script prints on stdout).
The default file is `benchmarks/results/<benchmark>-<UTC start, YYYYMMDDTHHMMSSZ>.json`; `--out PATH` writes it
elsewhere, `--no-out` writes none (a run whose parent writes the result, as `ingest --masters` does).

A figure transcribed from the journal of earlier sessions is written through the same envelope, with its own date,
commit, cores, machine and command, `"transcribed": true` and the journal section it comes from (`source`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPO = RESULTS_DIR.parent.parent
STAMP = "%Y%m%dT%H%M%SZ"


def started_now() -> datetime:
    """The start of a run, for its `date` and its file name."""
    return datetime.now(UTC)


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def head_commit() -> str | None:
    """The checkout's HEAD, or None outside a git checkout (an unpacked archive, no git)."""
    return _git("rev-parse", "HEAD") or None


def tree_dirty() -> bool | None:
    """Whether tracked files differ from HEAD (the figures are then of code the commit does not hold alone)."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return None if status is None else bool(status)


def default_path(name: str, started: datetime) -> Path:
    return RESULTS_DIR / f"{name}-{started.astimezone(UTC).strftime(STAMP)}.json"


def envelope(name: str, figures: Mapping[str, Any], *, started: datetime, **fields: Any) -> dict[str, Any]:
    """The result of one run; `fields` override or add to the measured ones (a transcription names its own)."""
    record: dict[str, Any] = {
        "benchmark": name,
        "date": started.astimezone(UTC).isoformat(timespec="seconds"),
        "commit": head_commit(),
        "dirty": tree_dirty(),
        "cores": os.cpu_count(),
        "machine": platform.platform(),
        "python": platform.python_version(),
        "command": list(sys.orig_argv),
    }
    record.update(fields)
    record["figures"] = dict(figures)
    return record


def write_result(
    name: str,
    figures: Mapping[str, Any],
    *,
    started: datetime | None = None,
    out: Path | None = None,
    **fields: Any,
) -> Path:
    """Write `figures` in the envelope to `out` (default: `results/<name>-<start>.json`); returns the path."""
    started = started or started_now()
    path = Path(out) if out is not None else default_path(name, started)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = envelope(name, figures, started=started, **fields)
    path.write_text(json.dumps(record, indent=1, default=str, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def add_out_arguments(parser: argparse.ArgumentParser) -> None:
    """`--out PATH` and `--no-out`, the same in every script."""
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the result file (default: benchmarks/results/<benchmark>-<UTC start>.json)",
    )
    parser.add_argument("--no-out", action="store_true", help="print the figures only, write no result file")


def write_run_result(
    name: str, figures: Mapping[str, Any], args: argparse.Namespace, started: datetime, **fields: Any
) -> Path | None:
    """A script's last step: its figures into the result file its `--out`/`--no-out` ask for, the path on stderr."""
    if args.no_out:
        return None
    path = write_result(name, figures, started=started, out=args.out, **fields)
    print(f"{name}: result in {path}", file=sys.stderr)
    return path
