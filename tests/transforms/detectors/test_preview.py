"""`GroupTracker.preview`: a live run's look at the events ahead of the watermark. A detection the buffered events
open is shown at once as `provisional`; when the watermark passes what the preview saw, the ordered events confirm
it (the same id, as a replay writes it) or it is withdrawn. Previews add output only: the confirmed rows are
exactly those of a tracker that never previews, whatever the arrival order and the micro-batches."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker
from rebalance_radar.transforms.schemas import DETECTION_STATUS_RANK, DetectionStatus
from tests.transforms.detectors.silver_rows import BASE_MS, CLUSTER, Member, Silver, events_of
from tests.transforms.detectors.test_replay_determinism import END_MS, THRESHOLDS, G, incident_events, one_jump

LATENESS_MS = 2000
A = Member("a-1", [("orders", 0)], client_id="ca")
B = Member("b-1", [("orders", 1)], client_id="cb")


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def upserted(table: dict[str, dict[str, Any]], rows: tuple[dict[str, Any], ...]) -> None:
    """What the gold MERGE keeps per id (`pipelines.stages.detect._not_older`): the status's rank first, then the
    times."""

    def version(row: dict[str, Any]) -> tuple[Any, ...]:
        resolved = row["status"] == DetectionStatus.RESOLVED
        return (
            DETECTION_STATUS_RANK[DetectionStatus(row["status"])],
            row["last_seen"],
            resolved,
            row["resolved_at"] or datetime.min.replace(tzinfo=row["last_seen"].tzinfo),
        )

    for row in rows:
        held = table.get(row["detection_id"])
        if held is None or version(row) >= version(held):
            table[row["detection_id"]] = row


def silent_member_rows() -> tuple[list[GroupEvent], list[GroupEvent]]:
    """Generation 7 [a, b] (10 s session timeout: at risk after 7 s of silence), agent heartbeats every 3 s to
    t+60 s. Returns the events without b's heartbeats at t+13 s and t+16 s, and those two, kept out to arrive late."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A, B], t)
    for beat in range(t + 1000, t + 61_000, 3000):
        s.agent("heartbeat", G, beat, member_id=A.member_id, generation=7, client_id=A.client_id)
        s.agent("heartbeat", G, beat, member_id=B.member_id, generation=7, client_id=B.client_id)
    events = events_of(s.rows)
    late = [e for e in events if e.member_id == B.member_id and e.event_time_ms in (t + 13_000, t + 16_000)]
    assert len(late) == 2
    return [e for e in events if e not in late], late


def test_a_detection_is_shown_before_the_watermark_and_confirmed_under_the_same_id() -> None:
    tracker = GroupTracker(CLUSTER, G, THRESHOLDS)
    tracker.accept(incident_events())
    assert all(d["kind"] != "heartbeat_expiration" for d in tracker.advance_to(BASE_MS + 30_000).detections)
    shown = {d["detection_id"]: d for d in tracker.preview()}
    expiry = [d for d in shown.values() if d["kind"] == "heartbeat_expiration"]
    assert [d["member_id"] for d in expiry] == ["b-1"], shown
    assert {d["status"] for d in shown.values()} == {str(DetectionStatus.PROVISIONAL)}
    assert tracker.preview() == ()  # each id is shown once
    # a round trip through the snapshot (the operator's state between micro-batches) keeps what was shown
    tracker = GroupTracker.restore(tracker.snapshot(), THRESHOLDS)
    confirmed = {d["detection_id"]: d for d in tracker.advance_to(END_MS).detections}
    assert set(shown) <= set(confirmed)
    assert {d["status"] for d in confirmed.values()} <= {str(DetectionStatus.OPEN), str(DetectionStatus.RESOLVED)}
    assert confirmed[expiry[0]["detection_id"]]["detected_at"] == expiry[0]["detected_at"]
    assert tracker.state.provisional == {}


def test_a_late_heartbeat_withdraws_a_provisional_heartbeat_at_risk() -> None:
    """b's heartbeats at t+13 s and t+16 s arrive after the preview: b was never 7 s silent, so the at-risk shown
    for its silence after t+10 s is withdrawn when the watermark passes the preview's horizon, and nothing is
    confirmed for b."""
    events, late = silent_member_rows()
    tracker = GroupTracker(CLUSTER, G, DetectorThresholds())
    tracker.accept(events)
    assert tracker.advance_to(BASE_MS + 5000).detections == ()
    (shown,) = tracker.preview()
    assert (shown["kind"], shown["member_id"], shown["status"]) == ("heartbeat_at_risk", "b-1", "provisional")
    assert ms(shown["detected_at"]) == BASE_MS + 10_000 + 7000
    tracker.accept(late)
    assert tracker.advance_to(BASE_MS + 30_000).detections == ()  # the horizon (t+58 s) is not passed yet
    (withdrawn,) = tracker.advance_to(BASE_MS + 60_000).detections
    assert withdrawn["detection_id"] == shown["detection_id"]
    assert withdrawn["status"] == str(DetectionStatus.WITHDRAWN)
    assert withdrawn["summary"].startswith("withdrawn") and shown["summary"] in withdrawn["summary"]
    assert tracker.state.provisional == {}


def test_without_the_late_heartbeat_the_same_at_risk_is_confirmed() -> None:
    events, _ = silent_member_rows()
    tracker = GroupTracker(CLUSTER, G, DetectorThresholds())
    tracker.accept(events)
    (shown,) = tracker.preview()
    confirmed = [d for d in tracker.advance_to(BASE_MS + 60_000).detections if d["member_id"] == "b-1"]
    # b heartbeats again at t+19 s: the ordered events open the same id and resolve it
    assert [(d["detection_id"], d["status"]) for d in confirmed] == [(shown["detection_id"], "resolved")]
    table: dict[str, dict[str, Any]] = {}
    upserted(table, (shown,))
    upserted(table, tuple(confirmed))
    upserted(table, (shown,))  # a provisional row never replaces a confirmed one (a redone micro-batch)
    assert table[shown["detection_id"]]["status"] == "resolved"


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    cuts=st.lists(st.integers(1, 20), min_size=1, max_size=12),
    delays=st.integers(0, 3 * LATENESS_MS),
    history=st.sampled_from(["incidents", "late heartbeats"]),
    lateness=st.sampled_from([LATENESS_MS, 10_000]),
)
def test_previews_change_no_confirmed_row_whatever_the_arrival(
    seed: int, cuts: list[int], delays: int, history: str, lateness: int
) -> None:
    """Events arrive up to `delays` ms after their event time (b's two held-out heartbeats of `silent_member_rows`
    4-10 s), in micro-batches; the watermark of each batch is the newest event time of the batches before,
    minus `lateness`, and an event below it is dropped (as Spark drops it). (A late event can withdraw what a
    preview showed only when the deciding moment is within `lateness` of the preview's horizon: with 2 s and
    heartbeats 3 s apart that never happens here, hence the longer lateness too.) A tracker that previews after every
    batch and one that never does, fed the same accepted events: the same confirmed rows; every provisional id is
    settled at the end; nothing is withdrawn where nothing arrived out of order."""
    rng = random.Random(seed)
    if history == "incidents":
        events, late = list(incident_events()), []
    else:
        events, late = silent_member_rows()
    delay = {id(e): rng.randint(0, delays) for e in events} | {id(e): rng.randint(4000, 10_000) for e in late}
    arrivals = sorted([*events, *late], key=lambda e: e.event_time_ms + delay[id(e)])
    previewing = GroupTracker(CLUSTER, G, THRESHOLDS)
    plain = GroupTracker(CLUSTER, G, THRESHOLDS)
    table: dict[str, dict[str, Any]] = {}
    plain_rows: dict[str, dict[str, Any]] = {}
    newest, start = 0, 0
    for cut in [*cuts, len(arrivals)]:
        batch = arrivals[start : start + cut]
        start += len(batch)
        watermark = newest - lateness if newest else 0
        accepted = [e for e in batch if e.event_time_ms >= watermark]
        newest = max([newest, *(e.event_time_ms for e in accepted)])
        for tracker in (previewing, plain):
            tracker.accept(accepted)
        if watermark > 0:
            upserted(table, previewing.advance_to(watermark).detections)
            plain_rows.update({d["detection_id"]: d for d in plain.advance_to(watermark).detections})
        upserted(table, previewing.preview())
        previewing = GroupTracker.restore(previewing.snapshot(), THRESHOLDS)
        if start >= len(arrivals):
            break
    upserted(table, previewing.advance_to(END_MS).detections)
    plain_rows.update({d["detection_id"]: d for d in plain.advance_to(END_MS).detections})
    confirmed = {i: d for i, d in table.items() if d["status"] in ("open", "resolved")}
    assert confirmed == plain_rows
    assert previewing.state.provisional == {}
    assert {d["status"] for d in table.values()} <= {"open", "resolved", "withdrawn"}
    if delays == 0 and history == "incidents":  # in event order: nothing withdrawn, and a replay's output
        assert "withdrawn" not in {d["status"] for d in table.values()}
        assert plain_rows == one_jump().detections
