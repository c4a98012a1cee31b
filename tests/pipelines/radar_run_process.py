"""`radar run` as a user runs it, for the end-to-end tests: a subprocess started with the README's command, waited on
until its queries run, asked for a detection of a group, and stopped with the user's Ctrl-C (SIGINT)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType

from deltalake import DeltaTable

from rebalance_radar.pipelines.config import REPO_ROOT, RadarConfig
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import DETECTIONS
from tests.pipelines.ingest_support import wait_for

CONF = REPO_ROOT / "conf" / "local.yml"
START_TIMEOUT_S = 300.0  # a cold driver (and executors) on a busy 2-core machine
STOP_TIMEOUT_S = 120.0
SUPERVISED_FAILURE = "Python worker failed to connect back."
"""Spark 4.1's fixed 10 s wait for a new Python worker, exceeded on a loaded host (docs/local-stack-traps.md)."""


def radar_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "rebalance_radar.pipelines.cli", "--conf", str(CONF), *args]


def radar_without_a_jvm(*args: str) -> subprocess.CompletedProcess[str]:
    """A reading command run where no JVM can start (JAVA_HOME points nowhere): it must answer without one."""
    return subprocess.run(
        radar_command(*args),
        env={**os.environ, "JAVA_HOME": "/nonexistent-so-no-jvm-can-start", "COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=120,
    )


class RadarRun:
    """`with RadarRun(config, env, log) as run:` a running `radar run` into `config`'s data dir; `returncode` and
    `output` once the block is left (the run stopped by SIGINT, as Ctrl-C does)."""

    def __init__(self, config: RadarConfig, env: dict[str, str], log_path: Path) -> None:
        self.config, self.env, self.log_path = config, env, log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.restarted_after: list[str] = []
        """The sentences runs ended with before `supervise` started radar again."""

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def alive(self) -> bool:
        return self.returncode is None

    def _start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                radar_command("--data-dir", str(self.config.data_dir), "run"),
                cwd=self.log_path.parent,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def supervise(self) -> bool:
        """What a user's supervisor does with a run that ended on Spark's fixed 10 s wait for a new Python worker
        (`SUPERVISED_FAILURE`; its sentence says "start radar again"): starts it again, once, its checkpoints
        resuming. True when it did; the log says so."""
        if self.alive() or self.restarted_after:
            return False
        said = [line for line in self.output.splitlines() if SUPERVISED_FAILURE in line]
        if not said:
            return False
        self.restarted_after.append(said[-1])
        with self.log_path.open("a") as log:
            log.write(f"--- the test's supervisor starts radar run again after: {said[-1]}\n")
        self._start()
        return True

    def __enter__(self) -> RadarRun:
        self.log_path.write_bytes(b"")
        self._start()
        try:
            wait_for(
                lambda: not self.alive() or "ingesting from" in self.output,
                START_TIMEOUT_S,
                f"radar run to start its queries (log: {self.log_path})",
            )
            assert self.alive(), self.output[-3000:]
        except BaseException:
            self.__exit__()
            raise
        return self

    def wait_for_detection(self, group: str, timeout_s: float = 150.0) -> None:
        """Until the gold `detections` table has a row of `group` (or the run ended: then it fails, with its log).
        Read with `deltalake`, no JVM: a lane run (`concurrent_recordings.lane_run`) waits here beside the session's
        own Spark work."""

        def detected() -> bool:
            if not self.alive() and self.supervise():
                return False
            location = TableCatalog(self.config).location(DETECTIONS)
            if not self.alive() or location is None or not (location / "_delta_log").is_dir():
                return not self.alive()
            rows = DeltaTable(str(location)).to_pyarrow_table(columns=["group_id"], filters=[("group_id", "=", group)])
            return rows.num_rows > 0

        wait_for(detected, timeout_s, f"a detection of {group} (log: {self.log_path})", poll_s=2)
        assert self.alive(), self.output[-3000:]

    def __exit__(
        self,
        kind: type[BaseException] | None = None,
        error: BaseException | None = None,
        trace: TracebackType | None = None,
    ) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)  # the user's Ctrl-C: stop within the bound
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
