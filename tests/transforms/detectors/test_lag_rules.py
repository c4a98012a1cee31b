"""lag_stalled and lag_growing through the tracker: end-offset polls (`radar.end_offsets/1` rows) judged against
the group's commits, a stall inside a rebalance called `rebalancing` (with the rebalance's id), one after it
linked to it, and `group_lag` rows with the group's total and maximum."""

from __future__ import annotations

from typing import Any

import pytest

from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker
from rebalance_radar.transforms.schemas import PARTITION_END_OFFSETS, LagStatus
from rebalance_radar.transforms.telemetry.end_offsets import (
    EndOffsetsPoll,
    PartitionEndOffset,
    end_offsets_record,
    parse_end_offsets,
)
from rebalance_radar.transforms.wire.coordinator_records import encode_coordinator_record
from tests.transforms.detectors.silver_rows import BASE_MS, CLUSTER, TELEMETRY_TOPIC, Member, Silver, events_of

pytestmark = pytest.mark.lag

G = "orders"
A = Member("consumer-orders-1-aaa", [("orders", 0), ("orders", 1)], client_id="worker-a", host="10.0.0.1")
S = 1000


def poll(s: Silver, group: str, t_ms: int, **ends: int | str) -> None:
    """One `radar.end_offsets/1` record through its parser, as the telemetry parser routes it (one row a partition);
    `ends`: "orders_0"=1234 or "orders_1"="UNKNOWN_TOPIC_OR_PART"."""
    parts = []
    for name, value in ends.items():
        topic, partition = name.rsplit("_", 1)
        if isinstance(value, str):
            parts.append(PartitionEndOffset(topic, int(partition), None, value))
        else:
            parts.append(PartitionEndOffset(topic, int(partition), value))
    parsed = parse_end_offsets(end_offsets_record(EndOffsetsPoll(t_ms, "radar-run@test", group, tuple(parts))))
    assert parsed is not None
    for part in parsed.partitions:
        row = s._base(PARTITION_END_OFFSETS.name, TELEMETRY_TOPIC, 0, t_ms)
        row.update(group_id=group, topic=part.topic, partition=part.partition, end_offset=part.end_offset)
        row.update(error=part.error)
        s.rows.append(row)


def run_lag(rows: list[dict[str, Any]], until_ms: int) -> tuple[dict[str, dict], list[dict]]:
    tracker = GroupTracker(CLUSTER, G, DetectorThresholds())
    tracker.accept(e for e in events_of(rows) if e.group_id == G)
    out = tracker.advance_to(until_ms)
    return {d["detection_id"]: d for d in out.detections}, list(out.lag)


def committing_then_silent(s: Silver, until_ms: int, *, end_growth: int = 50) -> None:
    """Commits every 5 s for 30 s (offset +10 each), then none while the topic keeps growing; polls every 10 s."""
    s.generation(G, 3, [A], BASE_MS)
    poll(s, G, BASE_MS + 500, orders_0=0)
    for i in range(7):
        s.commit(G, "orders", 0, 10 * i, BASE_MS + 1000 + i * 5 * S)
    t, end = BASE_MS + 10 * S, 10
    while t <= until_ms:
        poll(s, G, t, orders_0=end)
        t, end = t + 10 * S, end + end_growth


def test_a_consumer_that_stops_committing_while_its_topic_grows_is_stalled() -> None:
    s = Silver()
    committing_then_silent(s, BASE_MS + 130 * S)  # STOP once no end offset of the window shows it caught up
    detections, lag = run_lag(s.rows, BASE_MS + 130 * S)
    stalled = [d for d in detections.values() if d["kind"] == "lag_stalled"]
    assert len(stalled) == 1 and stalled[0]["status"] == "open"
    assert (stalled[0]["topic"], stalled[0]["partition"]) == ("orders", 0)
    assert "STOP" in stalled[0]["summary"] and "What to do" in stalled[0]["summary"]
    last = max(lag, key=lambda r: r["measured_at"])
    assert last["lag_status"] == LagStatus.STOP
    assert last["lag"] == last["end_offset"] - 60 and last["committed_offset"] == 60
    assert (last["group_total_lag"], last["group_max_lag"]) == (last["lag"], last["lag"])


def test_a_pause_inside_a_rebalance_is_rebalancing_and_names_it() -> None:
    s = Silver()
    committing_then_silent(s, BASE_MS + 130 * S)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 3 "
        f"(__consumer_offsets-12) (reason: Adding new member consumer-orders-2-bbb).",
        BASE_MS + 32 * S,
    )
    detections, lag = run_lag(s.rows, BASE_MS + 130 * S)
    assert not [d for d in detections.values() if d["kind"] == "lag_stalled"]
    late = [r for r in lag if r["measured_at"].timestamp() * 1000 >= BASE_MS + 120 * S]  # Burrow's STOP by then
    assert late and all(r["lag_status"] == LagStatus.REBALANCING for r in late)
    assert all(r["rebalance_id"] for r in late)


def test_a_stall_that_outlasts_the_rebalance_grace_opens_and_names_the_rebalance() -> None:
    s = Silver()
    committing_then_silent(s, BASE_MS + 160 * S)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 3 "
        f"(__consumer_offsets-12) (reason: Adding new member consumer-orders-2-bbb).",
        BASE_MS + 32 * S,
    )
    s.generation(G, 4, [A], BASE_MS + 40 * S)
    detections, _ = run_lag(s.rows, BASE_MS + 160 * S)
    stalled = [d for d in detections.values() if d["kind"] == "lag_stalled"]
    assert len(stalled) == 1
    assert "rebalance" in stalled[0]["summary"] and "generation 4" in stalled[0]["summary"]


def test_a_consumer_that_resumes_resolves_its_stall() -> None:
    s = Silver()
    committing_then_silent(s, BASE_MS + 130 * S)
    s.commit(G, "orders", 0, 1000, BASE_MS + 135 * S)
    poll(s, G, BASE_MS + 140 * S, orders_0=1000)
    detections, lag = run_lag(s.rows, BASE_MS + 140 * S)
    stalled = [d for d in detections.values() if d["kind"] == "lag_stalled"]
    assert [d["status"] for d in stalled] == ["resolved"]
    assert max(lag, key=lambda r: r["measured_at"])["lag"] == 0


def test_a_deleted_partition_and_a_recreated_topic_are_statuses_without_numbers() -> None:
    s = Silver()
    s.generation(G, 3, [A], BASE_MS)
    poll(s, G, BASE_MS + 500, orders_0=0, orders_1=0)
    for i in range(4):
        s.commit(G, "orders", 0, 100 + i, BASE_MS + 1000 + i * 5 * S)
        s.commit(G, "orders", 1, 100 + i, BASE_MS + 1000 + i * 5 * S)
    poll(s, G, BASE_MS + 30 * S, orders_0=7, orders_1="UNKNOWN_TOPIC_OR_PART")
    detections, lag = run_lag(s.rows, BASE_MS + 30 * S)
    last = {r["partition"]: r for r in lag if r["measured_at"].timestamp() * 1000 == BASE_MS + 30 * S}
    assert (last[0]["lag_status"], last[0]["lag"]) == (LagStatus.BEYOND_END, None)
    assert (last[1]["lag_status"], last[1]["lag"]) == (LagStatus.PARTITION_GONE, None)
    assert last[0]["group_total_lag"] is None and last[0]["group_max_lag"] is None
    assert not detections or all(d["kind"] not in ("lag_stalled", "lag_growing") for d in detections.values())


def test_a_consumer_slower_than_its_producer_is_growing() -> None:
    s = Silver()
    s.generation(G, 3, [A], BASE_MS)
    poll(s, G, BASE_MS + 500, orders_0=0)
    for i in range(8):  # commits +10 every 5 s, the end +30 every 5 s: lag never decreases
        t = BASE_MS + 1000 + i * 5 * S
        poll(s, G, t - 100, orders_0=30 * i + 30)
        s.commit(G, "orders", 0, 10 * i, t)
    poll(s, G, BASE_MS + 41 * S, orders_0=300)
    detections, _ = run_lag(s.rows, BASE_MS + 41 * S)
    assert [d["kind"] for d in detections.values()] == ["lag_growing"]


def test_offsets_deleted_under_a_stalled_partition_end_it_as_gone_and_resolve_the_stall() -> None:
    s = Silver()
    committing_then_silent(s, BASE_MS + 130 * S)
    key, _ = encode_coordinator_record("OffsetCommit", {"group": G, "topic": "orders", "partition": 0}, None, None)
    s._decoded(key, None, BASE_MS + 135 * S)  # the coordinator's tombstone: the topic was deleted
    detections, lag = run_lag(s.rows, BASE_MS + 140 * S)
    last = max(lag, key=lambda r: r["measured_at"])
    assert (last["lag_status"], last["lag"], last["end_offset"]) == (LagStatus.PARTITION_GONE, None, None)
    stalled = [d for d in detections.values() if d["kind"] == "lag_stalled"]
    assert [d["status"] for d in stalled] == ["resolved"] and "partition_gone" in stalled[0]["summary"]
