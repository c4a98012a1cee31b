"""The turn a live detection micro-batch and the process's other writes share (`pipelines.stages.detection_turn`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

import rebalance_radar.pipelines.stages.detection_turn as detection_turn_module
from rebalance_radar.pipelines.stages.detection_turn import LEND_GRACE_S, detection_turn, write_turn
from tests.polling import wait_for


def waiting() -> tuple[int, int]:
    """How many writes and detection batches wait for the turn now (read from the turn itself)."""
    turn = detection_turn_module._TURN
    return turn._writes_waiting, turn._detections_waiting


def taking_turn(write: Callable[[], None]) -> Callable[[], None]:
    """`write` run holding a write's turn, as the gold query runs its writes (`detect.merge_gold`)."""

    def in_turn() -> None:
        with write_turn():
            write()

    return in_turn


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
        wait_for(lambda: bool(order), 10, "the first write to take the turn", poll_s=0.005)
        waiting_write = pool.submit(taking_turn(lambda: order.append("second write")))
        wait_for(lambda: waiting() == (1, 0), 10, "the second write to wait first", poll_s=0.005)
        waiting_detection = pool.submit(detection_batch)
        wait_for(lambda: waiting() == (1, 1), 10, "the detection batch to wait too", poll_s=0.005)
        assert order == ["first write"]  # both wait while the turn is held
        release.set()
        for future in (holding, waiting_write, waiting_detection):
            future.result(timeout=10)
    assert order == ["first write", "detection batch", "second write"]


def test_one_holder_at_a_time_and_the_turn_is_given_back_after_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes and detection batches from many threads never overlap; a write that raises gives the turn back. (A
    short grace: with eight threads, writes fill the pool between detection batches and wait it out each time.)"""
    monkeypatch.setattr(detection_turn_module, "LEND_GRACE_S", 0.05)
    inside = 0
    most_inside = 0
    guard = threading.Lock()

    def hold(detection: bool) -> None:
        nonlocal inside, most_inside
        with detection_turn() if detection else write_turn():
            with guard:
                inside += 1
                most_inside = max(most_inside, inside)
            time.sleep(0.005)  # kept, the scenario: a holder that takes a moment (overlaps would show)
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


def test_a_detection_batch_lends_the_turn_to_one_waiting_write_and_the_next_batch_goes_before_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A micro-batch fixes its Kafka offsets before its body waits for the turn, so a batch that waited behind a
    write missed what arrived during it. A detection batch that ends while writes wait lends the turn to one write
    and returns once it is done; the next detection batch, due at once, goes before the other waiting writes
    (they wait for the next lend, or for `LEND_GRACE_S` without one: long here, so a slow host cannot reorder)."""
    monkeypatch.setattr(detection_turn_module, "LEND_GRACE_S", 30.0)
    order: list[str] = []
    guard = threading.Lock()

    def note(what: str) -> None:
        with guard:
            order.append(what)

    def write(name: str) -> None:
        note(f"{name} starts")
        time.sleep(0.2)  # kept, the scenario: a write that takes a while (the batch waits for the one it lent to)
        note(f"{name} ends")

    with ThreadPoolExecutor(max_workers=2) as pool:
        with detection_turn():
            note("batch 1")
            writes = [pool.submit(taking_turn(lambda n=name: write(n))) for name in ("write A", "write B")]
            wait_for(lambda: waiting() == (2, 0), 10, "both writes to wait", poll_s=0.005)
            assert order == ["batch 1"]
        note("batch 1 returned")
        with detection_turn():  # the next batch, at once
            note("batch 2")
        note("batch 2 returned")
        for future in writes:
            future.result(timeout=10)
    first = order[1].removesuffix(" starts")
    second = "write B" if first == "write A" else "write A"
    assert order == [
        "batch 1",
        f"{first} starts",
        f"{first} ends",  # lent: batch 1 returns after it
        "batch 1 returned",
        "batch 2",  # before the other write, still within the grace
        f"{second} starts",  # lent by batch 2
        f"{second} ends",
        "batch 2 returned",
    ]


def test_a_write_takes_the_turn_unlent_once_no_detection_batch_came_within_the_grace() -> None:
    """Writes are not starved by a detection query gone quiet (or absent: a replay): past `LEND_GRACE_S` after the
    last detection batch, a write takes the turn without a lend."""
    with detection_turn():
        pass
    started = time.monotonic()
    with write_turn():
        waited = time.monotonic() - started
    assert LEND_GRACE_S - 0.05 <= waited < LEND_GRACE_S + 1.0
    started = time.monotonic()
    with write_turn():  # no detection batch since: at once
        assert time.monotonic() - started < 0.5
