"""Every detector test runs twice: with the tracker kept in memory, and with it read back from its snapshot before
every `advance_to`, as the streaming query does each micro-batch (`pipelines.stages.detect.GroupTrackerProcessor`:
restore, accept, advance, snapshot). A fact the snapshot drops shows as a test that passes in memory only (it did:
an Empty group's GroupMetadata lost its empty member list, and the healthy fleet then raised detections)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rebalance_radar.transforms.detectors.tracker import GroupTracker, TrackerOutput


@pytest.fixture(autouse=True, params=["in memory", "restored before every advance"])
def tracker_lifetime(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "restored before every advance":
        advance_to = GroupTracker.advance_to

        def restored_then_advanced(self: GroupTracker, watermark_ms: int) -> TrackerOutput:
            restored = GroupTracker.restore(self.snapshot(), self.thresholds)
            vars(self).update(vars(restored))  # the same object the test holds, as a new process would rebuild it
            return advance_to(self, watermark_ms)

        monkeypatch.setattr(GroupTracker, "advance_to", restored_then_advanced)
    yield request.param
