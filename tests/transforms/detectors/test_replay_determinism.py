"""The contract's core property: `advance_to` output (upserted by id) depends only on the events and the final
watermark, not on how the watermark advanced nor on the order events were accepted; snapshots change nothing."""

from __future__ import annotations

import random
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker, TrackerOutput
from tests.transforms.detectors.silver_rows import BASE_MS, CLUSTER, Member, Outcome, Silver, events_of
from tests.transforms.detectors.test_seed_scenarios import kip848_stuck_rows

G = "orders"
END_MS = BASE_MS + 900_000
THRESHOLDS = DetectorThresholds(rebalance_storm_count=2, leader_changes=2)


@cache
def incident_events() -> tuple[GroupEvent, ...]:
    """Heartbeats, an at-risk member that expires, a zombie commit, leader changes, a backwards commit, a storm."""
    s = Silver()
    t = BASE_MS
    a = Member("a-1", [("orders", 0), ("orders", 1)], client_id="ca", host="h1")
    b = Member("b-1", [("orders", 2), ("orders", 3)], client_id="cb", host="h2")
    c = Member("c-1", [("orders", 4)], client_id="cc", host="h3")
    s.generation(G, 7, [a, b, c], t, leader="a-1")
    for i in range(0, 120_000, 4000):
        s.agent("heartbeat", G, t + 500 + i, member_id="a-1", generation=7)
        s.agent("heartbeat", G, t + 700 + i, member_id="c-1", generation=7)
        if i < 30_000:
            s.agent("heartbeat", G, t + 900 + i, member_id="b-1", generation=7)
    s.commit(G, "orders", 2, 1000, t + 10_000)
    s.broker("Member b-1 in group orders has failed, removing it from the group.", t + 45_000)
    s.broker(
        "Preparing to rebalance group orders in state PreparingRebalance with old generation 7 (reason: removing "
        "member b-1 on heartbeat expiration).",
        t + 45_000,
    )
    moved = [
        Member("a-1", [("orders", 0), ("orders", 1), ("orders", 2)]),
        Member("c-1", [("orders", 3), ("orders", 4)]),
    ]
    s.generation(G, 8, moved, t + 46_000, leader="c-1")
    s.commit(G, "orders", 2, 1020, t + 47_000)
    s.agent("commit_failed", G, t + 50_000, client_id="cb", host="h2", generation=-1, error="UNKNOWN_MEMBER_ID")
    s.commit(G, "orders", 2, 990, t + 51_000)
    s.generation(G, 9, moved, t + 80_000, leader="a-1")
    s.generation(G, 10, moved, t + 100_000, leader="c-1")
    s.generation(G, 11, [*moved, Member("d-1", [], client_id="cd")], t + 110_000, leader="c-1")
    s.commit(G, "orders", 0, 50, t + 400_000)
    s.commit(G, "orders", 0, 10, t + 800_000)
    return tuple(events_of(s.rows))


def collect(outcome: Outcome, out: TrackerOutput) -> None:
    for row in out.rebalances:
        outcome.rebalances[row["rebalance_id"]] = row
    for row in out.detections:
        outcome.detections[row["detection_id"]] = row
    if out.health is not None:
        outcome.health = out.health


def drive(events: list[GroupEvent], watermarks: list[int], snapshot_between: bool = False, group: str = G) -> Outcome:
    tracker = GroupTracker(CLUSTER, group, THRESHOLDS)
    tracker.accept(events)
    outcome = Outcome({}, {}, None)
    for watermark in watermarks:
        collect(outcome, tracker.advance_to(watermark))
        if snapshot_between:
            tracker = GroupTracker.restore(tracker.snapshot(), THRESHOLDS)
    return outcome


@cache
def one_jump() -> Outcome:
    return drive(list(incident_events()), [END_MS])


def test_the_incident_history_is_rich_enough_to_mean_something() -> None:
    kinds = set(one_jump().kinds())
    expected = {"heartbeat_at_risk", "heartbeat_expiration", "zombie_commit", "rebalance_storm"}
    assert expected <= kinds, kinds
    assert {"offset_regression", "leader_instability"} <= kinds


@cache
def kip848_events() -> tuple[GroupEvent, ...]:
    silver, _, _ = kip848_stuck_rows()
    return tuple(events_of(silver.rows))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.lists(st.integers(BASE_MS - 1000, BASE_MS + 225_000), max_size=25))
def test_kip848_output_is_the_same_whatever_the_steps(seed: int, steps: list[int]) -> None:
    events = list(kip848_events())
    end = BASE_MS + 225_000
    expected = drive(list(events), [end], group="clicks")
    assert expected.kinds() == ["failing_generation"] and len(expected.completed()) == 1
    random.Random(seed).shuffle(events)
    outcome = drive(events, [*sorted(steps), end], snapshot_between=seed % 2 == 0, group="clicks")
    assert outcome.detections == expected.detections
    assert outcome.rebalances == expected.rebalances
    assert outcome.health == expected.health


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.lists(st.integers(BASE_MS - 1000, END_MS), max_size=25))
def test_same_output_whatever_the_steps_and_the_accept_order(seed: int, steps: list[int]) -> None:
    events = list(incident_events())
    random.Random(seed).shuffle(events)
    outcome = drive(events, [*sorted(steps), END_MS], snapshot_between=seed % 2 == 0)
    expected = one_jump()
    assert outcome.detections == expected.detections
    assert outcome.rebalances == expected.rebalances
    assert outcome.health == expected.health


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(1, 200), min_size=1, max_size=6))
def test_same_output_when_events_arrive_in_batches_ahead_of_the_watermark(seed: int, cuts: list[int]) -> None:
    """Micro-batches: each batch's events are accepted, then the watermark moves to the batch's latest time."""
    events = sorted(incident_events(), key=lambda e: e.event_time_ms)
    rng = random.Random(seed)
    tracker = GroupTracker(CLUSTER, G, THRESHOLDS)
    outcome = Outcome({}, {}, None)
    start = 0
    for cut in [*sorted(cuts), len(events)]:
        batch = events[start : start + cut] if cut != len(events) else events[start:]
        start += len(batch)
        rng.shuffle(batch)
        tracker.accept(batch)
        watermark = max((e.event_time_ms for e in batch), default=BASE_MS)
        collect(outcome, tracker.advance_to(watermark))
        if start >= len(events):
            break
    collect(outcome, tracker.advance_to(END_MS))
    expected = one_jump()
    assert outcome.detections == expected.detections
    assert outcome.rebalances == expected.rebalances


def test_next_wakeup_and_expiry() -> None:
    tracker = GroupTracker(CLUSTER, G, THRESHOLDS)
    events = list(incident_events())
    tracker.accept(events)
    assert tracker.next_wakeup() == min(e.event_time_ms for e in events)
    tracker.advance_to(END_MS)
    assert not tracker.is_expired(END_MS)  # open detections keep the state
    assert len(tracker.snapshot()) < 16_000


def test_a_silent_group_wakes_at_its_deadline() -> None:
    """Nothing arrives any more: next_wakeup names the at-risk deadline, and clock ticks moving the watermark
    past it (no event of the group) are enough for the detection."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 3, [Member("solo", [("orders", 0)], session_timeout_ms=10_000)], t)
    s.agent("heartbeat", G, t + 1000, member_id="solo")
    s.agent("heartbeat", G, t + 4000, member_id="solo")
    tracker = GroupTracker(CLUSTER, G, DetectorThresholds())
    tracker.accept(events_of(s.rows))
    assert tracker.advance_to(t + 4000).detections == ()
    assert tracker.next_wakeup() == t + 4000 + 7000
    assert tracker.advance_to(t + 10_999).detections == ()
    (risk,) = tracker.advance_to(t + 11_000).detections
    assert risk["kind"] == "heartbeat_at_risk" and risk["detected_at"].timestamp() * 1000 == t + 11_000
