"""Live recordings that wait on Kafka's clocks (members stalled past session timeouts, overruns of
max.poll.interval.ms) started together on the run's broker the first time one of them is needed, so the suite
waits for the longest of them rather than their sum. Each is registered by the test module that reads it and
started only when that module has selected tests; they use their own groups, topics and telemetry topics, and
read back only their own groups' events, so they do not see each other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from pipelines.config import RadarConfig


@dataclass
class RecordingContext:
    """What a recording runs against, and what it leaves running for its module to stop (members that must stay
    up until the module has read the broker: static members send no LeaveGroup)."""

    bootstrap: str
    log_file: Any  # the run's broker log
    config: RadarConfig
    tmp_path_factory: pytest.TempPathFactory
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
    """Registers a module's recording; its module reads it with `ConcurrentRecordings.result(recorder)`."""
    RECORDERS.append(recorder)
    return recorder


class ConcurrentRecordings:
    """The recordings of the selected modules, all started at once in their own threads."""

    def __init__(self, context: RecordingContext, selected_modules: set[str]) -> None:
        self.context = context
        chosen = [recorder for recorder in RECORDERS if recorder.__module__ in selected_modules]
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(chosen)), thread_name_prefix="recording")
        self._futures: dict[Recorder, Future[Any]] = {
            recorder: self._pool.submit(recorder, context) for recorder in chosen
        }

    def result(self, recorder: Recorder, timeout_s: float = 600.0) -> Any:
        """The recording's result (its exception, raised here, fails the module's tests)."""
        if recorder not in self._futures:
            raise KeyError(f"{recorder.__qualname__} was not started: is its module among the selected tests?")
        return self._futures[recorder].result(timeout=timeout_s)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.context.teardown()


def started_recordings(
    selected_modules: set[str],
    bootstrap: str,
    log_file: Any,
    config: RadarConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ConcurrentRecordings]:
    """For the session fixture: starts the selected recordings, and at the end waits for them and stops what they
    left running."""
    recordings = ConcurrentRecordings(RecordingContext(bootstrap, log_file, config, tmp_path_factory), selected_modules)
    try:
        yield recordings
    finally:
        recordings.close()
