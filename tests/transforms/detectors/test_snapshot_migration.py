"""A tracker restores the snapshots the previous snapshot version wrote and goes on as if it had never stopped.

`data/tracker-snapshots-v1.json` holds snapshots written by version 1 of the snapshot (the tracker at commit
8ac910f, before its state was typed): three scenarios cut at several watermarks (classic incidents with a preview
shown, a KIP-848 group stuck reconciling, a healthy fleet of classic, KIP-848 and Streams groups with events still
buffered). Each is restored by today's tracker and advanced to the end; its output must be the output of a tracker
that ran the same events without stopping (but the evidence version 1 never kept, see `output_of`), and the state
it goes on with writes and reads back as it is.
"""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.snapshot import decoded
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker, TrackerOutput
from tests.transforms.detectors import test_healthy_fleet as fleet
from tests.transforms.detectors import test_replay_determinism as incidents
from tests.transforms.detectors.silver_rows import BASE_MS, CLUSTER, events_of

WRITTEN = Path(__file__).parent / "data" / "tracker-snapshots-v1.json"
END_MS = BASE_MS + 4 * 3_600_000


@cache
def cuts() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(WRITTEN.read_text())["cuts"])


@cache
def scenario(name: str, group: str) -> tuple[tuple[GroupEvent, ...], DetectorThresholds]:
    if name == "incidents":
        return incidents.incident_events(), incidents.THRESHOLDS
    if name == "kip848_stuck":
        return incidents.kip848_events(), incidents.THRESHOLDS
    silver, _ = fleet.build_fleet()
    return tuple(e for e in events_of(silver.rows) if e.group_id == group), DetectorThresholds()


def output_of(out: TrackerOutput) -> tuple[Any, ...]:
    """The rows, but a detection's evidence and summary: version 1 kept no evidence for completed rebalances and
    members' assignments, nor the facts a remedy's advice names, and a migration cannot invent them; and a summary
    is the wording of the version that opened the detection (it changes between versions, which is no restore's
    business). The incidents themselves (ids, kinds, statuses, members, times) must be the same."""
    detections = tuple({k: v for k, v in row.items() if k not in ("evidence", "summary")} for row in out.detections)
    return (out.rebalances, detections, out.health)


def test_the_written_snapshots_are_version_1_and_cover_every_protocol() -> None:
    written = json.loads(WRITTEN.read_text())
    assert written["snapshot_version"] == 1
    assert {c["scenario"] for c in cuts()} == {"incidents", "kip848_stuck", "healthy_fleet"}
    assert len(cuts()) >= 10


@pytest.mark.parametrize("index", range(11))
def test_a_version_1_snapshot_restores_and_goes_on_as_an_uninterrupted_tracker(index: int) -> None:
    cut = cuts()[index]
    events, thresholds = scenario(cut["scenario"], cut["group"])
    restored = GroupTracker.restore(base64.b64decode(cut["snapshot"]), thresholds)
    uninterrupted = GroupTracker(CLUSTER, cut["group"], thresholds)
    uninterrupted.accept(list(events))
    uninterrupted.advance_to(cut["watermark_ms"])
    if cut["scenario"] != "healthy_fleet":
        uninterrupted.preview()  # the cut was taken after a preview: its provisional rows are in the state
    # versions 1 and 2 kept no resolved incidents to re-open (a migration cannot invent them, as it cannot invent
    # evidence): from the cut on, the uninterrupted tracker goes on without them too
    uninterrupted.state.ended_incidents.clear()
    for watermark in (cut["watermark_ms"] + 60_000, END_MS):
        expected = output_of(uninterrupted.advance_to(watermark))
        assert output_of(restored.advance_to(watermark)) == expected
    again = decoded(restored.snapshot())  # what the migration gave is a state this version writes and reads
    assert again.state == restored.state and again.buffer == restored._buffer
