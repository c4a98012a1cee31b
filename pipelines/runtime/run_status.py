"""What a `radar run` is doing, in a small file of its data dir (`logs/run-status.json`), rewritten every few
seconds: which queries run, when each last finished a micro-batch, what fails. `radar check` (another process)
reads it, so an operator sees that a run is alive and whole, or that it stopped and why, without its terminal."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

RUN_STATUS_FILE = Path("logs") / "run-status.json"
STATUS_EVERY_S = 5.0
STALE_AFTER_S = 60.0
"""A status not rewritten for this long belongs to a run that no longer runs (killed, or its host gone)."""


class QueryStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    active: bool
    batches: int
    records: int = 0
    last_batch_at: str | None = None
    batch_ms: int | None = None  # the newest micro-batch's duration
    state_rows: int | None = None  # a stateful query's state now: rows, the store's memory, its size on disk
    state_memory_bytes: int | None = None
    state_sst_bytes: int | None = None


class RunStatus(BaseModel):
    """One `radar run`'s state: `running`, `stopped` (asked to) or `failed` (`error`: the sentence it ended with)."""

    model_config = ConfigDict(frozen=True)

    pid: int
    host: str
    started_at: str
    updated_at: str
    state: str
    queries: tuple[QueryStatus, ...] = ()
    problems: tuple[str, ...] = ()
    error: str | None = None

    def age_s(self, now: datetime | None = None) -> float:
        updated = datetime.fromisoformat(self.updated_at)
        return ((now or datetime.now(UTC)) - updated).total_seconds()

    def lines(self, now: datetime | None = None) -> list[str]:
        """The status as `radar check` says it."""
        age = self.age_s(now)
        who = f"radar run (pid {self.pid} on {self.host}, since {self.started_at})"
        if self.state == "running" and age > STALE_AFTER_S:
            return [
                f"{who} has not reported for {age:.0f} s: it was killed or hangs; its last queries: "
                + ", ".join(q.name for q in self.queries)
            ]
        if self.state != "running":
            return [f"{who} {self.state} at {self.updated_at}" + (f": {self.error}" if self.error else "")]
        running = [q for q in self.queries if q.active]
        stopped = [q.name for q in self.queries if not q.active]
        lines = [f"{who} is running {len(running)} of {len(self.queries)} queries:"]
        for query in self.queries:
            last = f", last micro-batch at {query.last_batch_at}" if query.last_batch_at else ", no micro-batch yet"
            lines.append(f"  {query.name}: {'running' if query.active else 'STOPPED'}, {query.batches} batches{last}")
        if stopped:
            lines.append(f"  not running: {', '.join(stopped)}")
        lines.extend(f"  FAILING: {problem}" for problem in self.problems)
        return lines


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class RunStatusFile:
    """Writes one run's status (atomically: a reader never sees half a file); failures to write are ignored after
    one line (a read-only data dir cannot hold it, and the run must go on)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / RUN_STATUS_FILE
        self.started_at = _now()
        self._last = 0.0
        self._broken = False

    def write(
        self,
        state: str,
        queries: Sequence[QueryStatus],
        problems: Sequence[str] = (),
        error: str | None = None,
        *,
        force: bool = False,
    ) -> None:
        if self._broken or (not force and time.monotonic() - self._last < STATUS_EVERY_S):
            return
        self._last = time.monotonic()
        status = RunStatus(
            pid=os.getpid(),
            host=socket.gethostname(),
            started_at=self.started_at,
            updated_at=_now(),
            state=state,
            queries=tuple(queries),
            problems=tuple(problems),
            error=error,
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(".json.partial")
            partial.write_text(status.model_dump_json(indent=1))
            partial.replace(self.path)
        except OSError as failure:
            self._broken = True
            print(
                f"radar run: cannot write its status to {self.path} ({failure.strerror}); going on without it",
                file=sys.stderr,
            )


def read_run_status(data_dir: Path) -> RunStatus | None:
    """The last status a run of this data dir wrote; None when no run wrote one (or it cannot be read)."""
    path = data_dir / RUN_STATUS_FILE
    try:
        return RunStatus.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None
