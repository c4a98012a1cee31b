"""Wall-clock phases of one `radar` command (Spark start, tables, queries, counts), for `benchmarks/startup.py`.

Fixed costs are what a user waits for before any work; guessing where they go misled us before, so the commands
mark their phases, and with `RADAR_PROFILE=FILE` set each phase is appended to FILE as one JSON line
(`{"phase", "start", "end", "pid"}`, epoch seconds). Without the variable a phase costs one dictionary lookup.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

PROFILE_ENV = "RADAR_PROFILE"


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase `name` when `RADAR_PROFILE` names a file; the phase is written even if it fails."""
    target = os.environ.get(PROFILE_ENV)
    if not target:
        yield
        return
    start = time.time()
    try:
        yield
    finally:
        line = json.dumps({"phase": name, "start": start, "end": time.time(), "pid": os.getpid()})
        with open(target, "a", encoding="utf-8") as out:
            out.write(line + "\n")


def mark(name: str) -> None:
    """A zero-length phase: a point in time (e.g. `main` entered, after the interpreter's imports)."""
    with phase(name):
        pass
