"""The live detection micro-batch alone, the process's other writes between its batches.

On a machine of few cores (the local default: 2), a gold MERGE run beside a live detection micro-batch stretched
that batch 3-4x (1 s -> 3.7-4.9 s): the detection latency's tail (benchmarks/README.md). And a MERGE that ran while
a new detection was appended to the same table failed (Delta's Serializable isolation) and was redone, 4-5 s of the
cores each time. So the writes take turns: the detection query holds the turn for its whole `foreachBatch` body
(`detection_turn`); the gold query holds it for one write at a time and the checks of `radar run` for their writes
to `alerts` (`write_turn`), so they run in the gaps between detection batches instead of beside them. A turn held
for seconds holds a detection batch that long, so what takes it is kept to single writes: the checks' view (seconds
of read jobs) and a live ingest batch's appends (tried: an ingest batch waiting for its turn beside a gold batch,
both every 60 s, held detections up to 12 s) do not take it; beside them a detection batch's job waits for the
tasks of the job ahead of it in Spark's FIFO queue, not for a whole batch.

The turn is a plain lock, first come or not: giving a waiting detection batch the turn before every waiting write
(tried) starved the writes, since a 1 s trigger leaves a gap for one write at most between detection batches: the
gold batch took 26 s, ingest batches 9-12 s, and the detections waited for those writes one gap at a time (p50
4.1 s against 2.4-2.6 s; benchmarks/README.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

Result = TypeVar("Result")

_TURN = threading.Lock()


@contextmanager
def detection_turn() -> Iterator[None]:
    """Hold the turn for a live detection micro-batch."""
    with _TURN:
        yield


@contextmanager
def write_turn() -> Iterator[None]:
    """Hold the turn for a write beside a live detection query."""
    with _TURN:
        yield


def taking_turn(write: Callable[[], Result]) -> Callable[[], Result]:
    """`write` wrapped to run holding a write's turn (the gold query's writes, one at a time)."""

    def in_turn() -> Result:
        with write_turn():
            return write()

    return in_turn
