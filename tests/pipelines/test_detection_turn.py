"""The turn a live detection micro-batch and the process's other writes share (`pipelines.detection_turn`)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pipelines.detection_turn import detection_turn, taking_turn, write_turn


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
