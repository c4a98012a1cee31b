"""Live recordings that wait on Kafka's clocks (members stalled past session timeouts, overruns of
max.poll.interval.ms) started together on the run's broker, so the suite waits for the longest of them rather than
their sum. Each is registered by the test module that reads it and started only when that module has selected
tests; they use their own groups, topics and telemetry topics, and read back only their own groups' events, so
they do not see each other.

When any is selected, the broker and the recordings start in a thread as the session starts (`BrokerInBackground`)
and the tests that start no JVM run first (`tests/conftest.py`): the recordings' minute of waiting on Kafka's
clocks passes beside them, on the core a single pytest process leaves idle, rather than in the setup of the first
module that reads one.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import psutil
import pytest

from rebalance_radar.pipelines.config import RadarConfig


@dataclass
class RecordingContext:
    """What a recording runs against, and what it leaves running for its module to stop (members that must stay
    up until the module has read the broker: static members send no LeaveGroup). `progress` takes the start lines
    of the brokers a recording starts: written to stderr, they would land in whichever test captures it then."""

    bootstrap: str
    log_file: Any  # the run's broker log
    config: RadarConfig
    tmp_path_factory: pytest.TempPathFactory
    progress: TextIO = field(default_factory=io.StringIO)
    _teardowns: list[Callable[[], None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def at_teardown(self, stop: Callable[[], None]) -> None:
        """`stop` runs when the session ends, also when the module that reads the recording never ran."""
        with self._lock:
            self._teardowns.append(stop)

    def teardown(self) -> None:
        with self._lock:
            stops, self._teardowns = self._teardowns, []
        for stop in reversed(stops):
            stop()


Recorder = Callable[[RecordingContext], Any]

RECORDERS: list[Recorder] = []


def concurrent_recording(recorder: Recorder) -> Recorder:
    """Registers a module's recording; its module reads it with `ConcurrentRecordings.result(recorder)`, after the
    session's own tests (`tests/conftest.py`): the session does not wait for a recording still running."""
    RECORDERS.append(recorder)
    return recorder


BESIDE_THE_LANE: list[Recorder] = []


def concurrent_recording_beside_the_lane(recorder: Recorder) -> Recorder:
    """A recording the lane does not wait for: its timing holds with the lane's processes beside it (they yield the
    cores to it, `LANE_NICE`), and it is the longest, so the lane starts when the others end."""
    BESIDE_THE_LANE.append(recorder)
    return concurrent_recording(recorder)


READ_EARLY: list[Recorder] = []


def concurrent_recording_read_early(recorder: Recorder) -> Recorder:
    """A recording that leaves members up until its module has read it (the module stops them): the module is
    placed before the session's own tests, so the members do not take the cores for the whole run."""
    READ_EARLY.append(recorder)
    return concurrent_recording(recorder)


LANE: list[Recorder] = []


def lane_run(recorder: Recorder) -> Recorder:
    """Registers a module's run of radar subprocesses (a cluster, a crash loop): the lane runs them one at a time
    once the recordings are done, beside the tests of the run's own session, yielding the cores to them
    (`LANE_NICE`) and taking what they leave waiting on Spark's triggers and Kafka's timeouts; its module reads it
    with `ConcurrentRecordings.result(recorder)` and is placed last, so the lane has had the run's length to finish
    it. A reader that comes before the lane has started it runs it itself (`ConcurrentRecordings.result`)."""
    LANE.append(recorder)
    return recorder


def registered_modules() -> set[str]:
    """The modules whose recordings or lane runs start with the session."""
    return {recorder.__module__ for recorder in (*RECORDERS, *LANE)}


class ConcurrentRecordings:
    """The recordings of the selected modules, all started at once in their own threads."""

    def __init__(self, context: RecordingContext, selected_modules: set[str]) -> None:
        self.context = context
        chosen = [recorder for recorder in RECORDERS if recorder.__module__ in selected_modules]
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(chosen)), thread_name_prefix="recording")
        self._futures: dict[Recorder, Future[Any]] = {
            recorder: self._pool.submit(recorder, context) for recorder in chosen
        }
        recordings = [future for recorder, future in self._futures.items() if recorder not in BESIDE_THE_LANE]
        self._recordings = recordings
        self._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lane")
        self._lane_runs = [r for r in LANE if r.__module__ in selected_modules]
        for recorder in self._lane_runs:
            self._futures[recorder] = self._lane.submit(self._after, recordings, recorder, context)
        self._lane_sessions = LaneSessions() if self._lane_runs else None

    @staticmethod
    def _after(recordings: list[Future[Any]], recorder: Recorder, context: RecordingContext) -> Any:
        """A lane run, once the recordings whose waits on Kafka's clocks must not share the cores are done."""
        wait(recordings)
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LANE_NICE)  # inherited by what it starts
        return recorder(context)

    def result(self, recorder: Recorder, timeout_s: float = 600.0) -> Any:
        """The recording's result (its exception, raised here, fails the module's tests). A lane run the lane has
        not started is run here, at once; while the lane runs the one asked for, this thread runs the lane's last
        waiting one meanwhile (its reader comes later), rather than leave a core idle while the lane ends alone."""
        if recorder not in self._futures:
            raise KeyError(f"{recorder.__qualname__} was not started: is its module among the selected tests?")
        if recorder in self._lane_runs:
            self._run_here(recorder)
            while not self._futures[recorder].done() and any(self._run_here(r) for r in reversed(self._lane_runs)):
                pass
        return self._futures[recorder].result(timeout=timeout_s)

    def _run_here(self, recorder: Recorder) -> bool:
        """Runs a lane run in this thread if the lane has not started it (its future cancelled, a new one set)."""
        if not self._futures[recorder].cancel():
            return False
        wait(self._recordings)
        here: Future[Any] = Future()
        self._futures[recorder] = here
        try:
            here.set_result(recorder(self.context))
        except Exception as failure:  # raised to its reader, as the lane's future would
            here.set_exception(failure)
        return True

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._lane.shutdown(wait=True)
        if self._lane_sessions is not None:
            self._lane_sessions.stop()
        self.context.teardown()


LANE_NICE = 5
"""The lane's processes yield the cores to the session's tests (the run's longer path) and take what those leave while
they wait: the lane's thread runs at this nice value, which every process it starts inherits."""
AUTOGROUP = Path("/proc/self/autogroup")


class LaneSessions:
    """Where the kernel schedules each session as one group (`sched_autogroup`, Linux), a process of the lane that
    starts a session of its own (a radar JVM, a standalone cluster) would take a group's share whatever its nice
    value: each such session of a process at `LANE_NICE` below this one is given the group nice value too."""

    def __init__(self, interval_s: float = 0.5) -> None:
        self._stop = threading.Event()
        self._interval_s = interval_s
        self._done: set[int] = set()
        self._thread = threading.Thread(target=self._run, name="lane-sessions", daemon=True)
        if AUTOGROUP.is_file():
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.renice()

    def renice(self) -> None:
        for process in psutil.Process().children(recursive=True):
            try:
                if process.pid in self._done or os.getsid(process.pid) != process.pid or process.nice() != LANE_NICE:
                    continue
                Path(f"/proc/{process.pid}/autogroup").write_text(f"{LANE_NICE}\n")
                self._done.add(process.pid)
            except (OSError, psutil.Error):  # gone, or asked again too soon (the kernel's rate limit): the next round
                pass

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)


class BrokerInBackground:
    """The run's broker, then the selected recordings on it, started in a thread of their own; `broker()` and
    `recordings()` wait for them (and raise what the start raised). The thread stays until `close()`: the broker is
    told to die with the thread that started it (`PR_SET_PDEATHSIG`), not with the process."""

    def __init__(
        self, config: RadarConfig, selected_modules: set[str], tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        from rebalance_radar.pipelines.local.broker import EmbeddedKafka

        self.progress = io.StringIO()  # the broker's start lines (see `RecordingContext`)
        self._broker = EmbeddedKafka(config.broker, config.data_dir, spark=config.spark, progress=self.progress)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="broker")
        self._started: Future[ConcurrentRecordings] = self._thread.submit(
            self._start, config, selected_modules, tmp_path_factory
        )

    def _start(
        self, config: RadarConfig, selected_modules: set[str], tmp_path_factory: pytest.TempPathFactory
    ) -> ConcurrentRecordings:
        self._broker.start()
        context = RecordingContext(
            self._broker.bootstrap_servers, self._broker.log_file, config, tmp_path_factory, self.progress
        )
        return ConcurrentRecordings(context, selected_modules)

    def broker(self, timeout_s: float = 600.0) -> Any:
        self._started.result(timeout=timeout_s)
        return self._broker

    def recordings(self, timeout_s: float = 600.0) -> ConcurrentRecordings:
        return self._started.result(timeout=timeout_s)

    def close(self) -> None:
        """Waits for the recordings, stops what they left running, then the broker (in its thread)."""
        try:
            if self._started.exception() is None:
                self._started.result().close()
        finally:
            self._thread.submit(self._broker.stop).result()
            self._thread.shutdown(wait=True)
