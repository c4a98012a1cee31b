"""The live detection micro-batch alone, the process's other writes between its batches.

On a machine of few cores (the local default: 2), a gold MERGE run beside a live detection micro-batch stretched
that batch several times over: the detection latency's tail (the benchmarks' journal, `benchmarks/results/`). And a
MERGE that ran while a new detection was appended to the same table failed (Delta's Serializable isolation) and was
redone, seconds of the cores each time. So the writes take turns: the detection
query holds the turn for its whole `foreachBatch` body (`detection_turn`); the gold query holds it for one write at a
time and the checks of `radar run` for their writes to `alerts` (`write_turn`), so they run in the gaps between
detection batches instead of beside them.

A waiting detection batch goes before every waiting write: it waits for the write in progress only. With a plain
lock, the gold query's three writers took it one after another while a detection batch waited 9.3 s for all of
them (a live run). What takes the turn is kept to single, rare writes: with every live ingest batch's appends
taking it too (tried), five writers shared the gaps between detection batches, the gold batch took 26 s, ingest
batches 9-12 s, and detections waited on them. The checks' view (read jobs) and ingest's appends (small jobs every
10 s) do not take it; beside them a detection batch's job waits for the tasks of the job ahead of it in Spark's
FIFO queue, not for a whole batch.

The detection batch lends the turn. A micro-batch fixes its Kafka offsets when it starts, before its body waits
for the turn: a record that arrived during a write went to the batch after the waiting one, one more batch of
latency (a live run: decided at +225.8 s, shown at +233.3 s behind a 1.5 s MERGE). So a detection batch that ends
while writes wait hands the turn to one of them and returns only once that write is done; the next batch then
starts after the write, with the records that came meanwhile, and holds the turn for `LEND_GRACE_S` before any
write may take it unlent. Writes are not starved: one is lent the turn after every detection batch, and while no
detection batch runs (a replay, an idle query) a write takes it once `LEND_GRACE_S` has passed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

LEND_GRACE_S = 2.0
"""After a detection batch lent the turn, or let go of it, a write waits this long for the next detection batch to
lend it instead of taking it: the next batch is due at once (it waited for the write) and should fix its offsets
before a write starts, not behind it."""

LEND_WAIT_MAX_S = 120.0
"""A detection batch waits at most this long for the write it lent the turn to (a bound, not an expected time: a
write that cannot get the turn, say behind another detection query of the process, must not hold it forever)."""


class _Turn:
    """One holder at a time; detection batches waiting go before writes waiting; a detection batch that ends while
    writes wait lends the turn to one of them and waits for it to be done."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._held = False
        self._detections_waiting = 0
        self._writes_waiting = 0
        self._lending = False  # a detection batch waits for the write it lent the turn to
        self._lent = False  # that write has not taken it yet
        self._writes_done = 0
        self._detection_left_at = float("-inf")  # monotonic time the last detection batch let go of the turn

    def _write_may_go(self) -> bool:
        if self._held or self._detections_waiting:
            return False
        if self._lending:
            return self._lent  # the one write lent the turn; the others wait for the next detection batch
        return time.monotonic() - self._detection_left_at >= LEND_GRACE_S

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
                self._writes_waiting += 1
                try:
                    while not self._write_may_go():
                        # held or lent elsewhere: woken by the change; else by the grace's end
                        left = LEND_GRACE_S - (time.monotonic() - self._detection_left_at)
                        busy = self._held or self._lending or self._detections_waiting
                        self._changed.wait(timeout=None if busy else max(left, 0.01))
                finally:
                    self._writes_waiting -= 1
                self._lent = False
            self._held = True
        try:
            yield
        finally:
            with self._changed:
                self._held = False
                if detection:
                    self._lend_after_detection()
                else:
                    self._writes_done += 1
                self._changed.notify_all()

    def _lend_after_detection(self) -> None:
        """A detection batch's end (the condition held): lend the turn to one waiting write and wait for it."""
        if self._writes_waiting:
            done_before = self._writes_done
            self._lending = self._lent = True
            self._changed.notify_all()
            self._changed.wait_for(lambda: self._writes_done > done_before, timeout=LEND_WAIT_MAX_S)
            self._lending = self._lent = False
        self._detection_left_at = time.monotonic()


_TURN = _Turn()


def detection_turn() -> AbstractContextManager[None]:
    """Hold the turn for a live detection micro-batch (before any write waiting for it)."""
    return _TURN.held(detection=True)


def write_turn() -> AbstractContextManager[None]:
    """Hold the turn for a write beside a live detection query (after every detection batch waiting for it)."""
    return _TURN.held(detection=False)
