"""The live detection micro-batch alone, the process's other writes between its batches.

On a machine of few cores (the local default: 2), a gold MERGE run beside a live detection micro-batch stretched
that batch 3-4x (1 s -> 3.7-4.9 s): the detection latency's tail (benchmarks/README.md). And a MERGE that ran while
a new detection was appended to the same table failed (Delta's Serializable isolation) and was redone, 4-5 s of the
cores each time. So the writes take turns: the detection query holds the turn for its whole `foreachBatch` body
(`detection_turn`); the gold query holds it for one write at a time and the checks of `radar run` for their writes
to `alerts` (`write_turn`), so they run in the gaps between detection batches instead of beside them.

A waiting detection batch goes before every waiting write: it waits for the write in progress only. With a plain
lock, the gold query's three writers took it one after another while a detection batch waited 9.3 s for all of
them (a live run). The writes are not starved: between two detection batches (the commit, the next trigger, its
planning) no detection batch waits, and a waiting write takes the turn then, one write per gap. That holds while
few writers take turns: with every live ingest batch's appends taking it too (tried), five writers shared those
gaps, the gold batch took 26 s, ingest batches 9-12 s, and detections waited on them. So what takes the turn is
kept to single, rare writes: the checks' view (seconds of read jobs) and ingest's appends (small jobs every 10 s)
do not take it; beside them a detection batch's job waits for the tasks of the job ahead of it in Spark's FIFO
queue, not for a whole batch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TypeVar

Result = TypeVar("Result")


class _Turn:
    """One holder at a time; detection batches waiting go before writes waiting."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._held = False
        self._detections_waiting = 0

    @contextmanager
    def held(self, *, detection: bool) -> Iterator[None]:
        with self._changed:
            if detection:
                self._detections_waiting += 1
                try:
                    self._changed.wait_for(lambda: not self._held)
                finally:
                    self._detections_waiting -= 1
            else:
                self._changed.wait_for(lambda: not self._held and not self._detections_waiting)
            self._held = True
        try:
            yield
        finally:
            with self._changed:
                self._held = False
                self._changed.notify_all()


_TURN = _Turn()


def detection_turn() -> AbstractContextManager[None]:
    """Hold the turn for a live detection micro-batch (before any write waiting for it)."""
    return _TURN.held(detection=True)


def write_turn() -> AbstractContextManager[None]:
    """Hold the turn for a write beside a live detection query (after every detection batch waiting for it)."""
    return _TURN.held(detection=False)


def taking_turn(write: Callable[[], Result]) -> Callable[[], Result]:
    """`write` wrapped to run holding a write's turn (the gold query's writes, one at a time)."""

    def in_turn() -> Result:
        with write_turn():
            return write()

    return in_turn
