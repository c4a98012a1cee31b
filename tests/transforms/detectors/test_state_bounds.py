"""A group's tracker state stays bounded through a day of churn: what it keeps is pruned on event time, so a monitor
that runs for months holds as much per group at hour 24 as at hour 3 (issue #51's soak measures the store around it).
"""

from __future__ import annotations

import json
import zlib

from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker
from tests.transforms.detectors.silver_rows import BASE_MS, CLUSTER, Silver, events_of
from tests.transforms.detectors.test_healthy_fleet import ClassicGroup

HOUR = 3_600_000
STEP = 30_000


def test_a_day_of_rolling_restarts_commits_and_heartbeats_keeps_the_snapshot_flat() -> None:
    silver = Silver()
    group = ClassicGroup(silver, "orders", 6)
    group.members = [group.new_member(f"10.0.0.{i}") for i in range(1, 4)]
    group.persist(BASE_MS)
    tracker = GroupTracker(CLUSTER, "orders", DetectorThresholds())
    taken = 0
    sizes: dict[int, int] = {}
    detections = 0
    for t in range(BASE_MS + STEP, BASE_MS + 24 * HOUR + 1, STEP):
        if (t - BASE_MS) % (20 * 60_000) == 0:  # a rolling restart: every member replaced by a new member id
            for old in list(group.members):
                group.leave(old, t)
                group.join(group.new_member(old.host), t + 5_000)
        group.tick(t)
        if (t - BASE_MS) % (10 * 60_000) == 0:
            tracker.accept(events_of(silver.rows[taken:]))
            taken = len(silver.rows)
            detections += len(tracker.advance_to(t - 60_000).detections)
        if (t - BASE_MS) % HOUR == 0:
            sizes[(t - BASE_MS) // HOUR] = len(tracker.snapshot())
    state = json.loads(zlib.decompress(tracker.snapshot()))["state"]

    assert detections == 0, "a healthy day raised detections"
    early = max(sizes[h] for h in range(2, 7))
    late = max(sizes[h] for h in range(18, 25))
    assert late <= early * 1.2, f"the snapshot grew from {early} to {late} bytes: {sizes}"
    assert len(state["members"]) == 3
    # what is kept for the windowed rules is bounded by their windows, not by the day's 72 restarts x 3 members
    assert len(state["departed"]) <= 3 * 2
    assert len(state["history"]) <= 64
