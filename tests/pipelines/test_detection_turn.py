"""The turn a live detection micro-batch and the process's other writes share (`pipelines.detection_turn`)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pipelines.detection_turn import detection_turn, taking_turn, write_turn


def test_a_waiting_detection_batch_goes_before_every_waiting_write() -> None:
    """A gold write holds the turn; another write, then a detection batch, come to wait for it. When it ends the
    detection batch goes first: it waits for the write in progress only, never for a queue of writes (a live run
    with a plain lock: a detection batch waited 9.3 s for the gold query's three writes)."""
    order: list[str] = []
    release = threading.Event()

    def first_write() -> None:
        order.append("first write")
        release.wait(10)

    def detection_batch() -> None:
        with detection_turn():
            order.append("detection batch")

    with ThreadPoolExecutor(max_workers=3) as pool:
        holding = pool.submit(taking_turn(first_write))
        while not order:
            time.sleep(0.01)
        waiting_write = pool.submit(taking_turn(lambda: order.append("second write")))
        time.sleep(0.2)  # the second write waits first
        waiting_detection = pool.submit(detection_batch)
        time.sleep(0.2)
        assert order == ["first write"]  # both wait while the turn is held
        release.set()
        for future in (holding, waiting_write, waiting_detection):
            future.result(timeout=10)
    assert order == ["first write", "detection batch", "second write"]


def test_one_holder_at_a_time_and_the_turn_is_given_back_after_a_failure() -> None:
    """Writes and detection batches from many threads never overlap; a write that raises gives the turn back."""
    inside = 0
    most_inside = 0
    guard = threading.Lock()

    def hold(detection: bool) -> None:
        nonlocal inside, most_inside
        with detection_turn() if detection else write_turn():
            with guard:
                inside += 1
                most_inside = max(most_inside, inside)
            time.sleep(0.005)
            with guard:
                inside -= 1

    def failing_write() -> None:
        raise RuntimeError("a MERGE failed")

    with pytest.raises(RuntimeError, match="a MERGE failed"):
        taking_turn(failing_write)()
    with ThreadPoolExecutor(max_workers=8) as pool:
        for future in [pool.submit(hold, i % 3 == 0) for i in range(60)]:
            future.result(timeout=30)
    assert most_inside == 1
    with write_turn():  # free again
        pass
