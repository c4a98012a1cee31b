"""Incidents, not rows: a member kind is one incident per (group, kind, member identity), its instance id, else its
client id and host, else its member id. A client that keeps dying and rejoining under new member ids is one
incident with its occurrences and every occurrence's records as evidence; two clients are two incidents."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker
from tests.transforms.detectors.silver_rows import BASE_MS, CLUSTER, Member, Silver, events_of, run

G = "payments"
STEADY = (
    Member("pay-a-0001", [("p", 0)], client_id="pay-a", host="10.5.0.1"),
    Member("pay-b-0002", [("p", 1)], client_id="pay-b", host="10.5.0.2"),
)


def prepare(s: Silver, old: int, reason: str, t: int) -> None:
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation {old} (reason: {reason}).",
        t,
    )


def restart_and_expire(s: Silver, generation: int, member: Member, at: int, steady: Sequence[Member] = STEADY) -> int:
    """`member` joins (a restart, under its new member id), lives 10 s and is expired by the coordinator (its
    process died again); returns the generation after and the offset of the coordinator's removal line."""
    prepare(s, generation, f"Adding new member {member.member_id} with group instance id {member.instance_id}", at)
    s.generation(G, generation + 1, [*steady, member], at + 1000)
    (removal,) = s.broker(
        f"Member {member.member_id} in group {G} has failed, removing it from the group.", at + 11_000
    )
    prepare(s, generation + 1, f"removing member {member.member_id} on heartbeat expiration", at + 11_000)
    s.generation(G, generation + 2, list(steady), at + 12_000)
    return removal["src_offset"]


def offsets_of(row: dict[str, Any]) -> list[int]:
    return [ref["offset"] for ref in json.loads(row["evidence"])]


def test_a_crash_loop_of_one_client_is_one_expiration_incident_with_its_occurrences() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 1, list(STEADY), t)
    removals = []
    generation = 1
    for i in range(5):
        crasher = Member(f"pay-c-{i:04d}", [("p", 2)], client_id="pay-c", host="10.5.0.3")
        removals.append(restart_and_expire(s, generation, crasher, t + 10_000 + i * 15_000))
        generation += 2
    last = t + 10_000 + 4 * 15_000 + 12_000
    out = run(G, s.rows, last + 60_000)
    (expiration,) = out.of_kind("heartbeat_expiration")
    assert expiration["status"] == "open" and expiration["member_id"] == "pay-c-0004"
    assert "(5 occurrences since" in expiration["summary"]
    assert expiration["first_seen"].timestamp() * 1000 == t + 21_000, "the first removal"
    assert expiration["last_seen"].timestamp() * 1000 == last - 1000
    assert sorted(set(offsets_of(expiration)) & set(removals)) == removals, "each removal line is its evidence"
    (flapping,) = out.of_kind("membership_flapping")
    assert "crash loop" in flapping["summary"] and "pay-c" in flapping["summary"]
    assert out.kinds() == ["heartbeat_expiration", "membership_flapping"]

    # it resolves once the re-open window passed without another occurrence, still one row
    after = run(G, s.rows, last + DetectorThresholds().incident_reopen_ms + 60_000)
    (expiration,) = after.of_kind("heartbeat_expiration")
    assert expiration["status"] == "resolved" and "(5 occurrences since" in expiration["summary"]
    assert "no new occurrence within 10 min" in expiration["summary"]


def test_each_occurrence_contributes_its_records_and_only_them() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 1, list(STEADY), t)
    generation = 1
    for i in range(5):
        crasher = Member(f"pay-c-{i:04d}", [("p", 2)], client_id="pay-c", host="10.5.0.3")
        restart_and_expire(s, generation, crasher, t + 10_000 + i * 15_000)
        generation += 2
    (expiration,) = run(G, s.rows, t + 200_000).of_kind("heartbeat_expiration")
    (one,) = run(G, s.rows[: len(s.rows) // 5], t + 200_000).of_kind("heartbeat_expiration")
    assert len(offsets_of(expiration)) == 5 * len(offsets_of(one))


def test_two_clients_expiring_are_two_incidents() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 1, list(STEADY), t)
    restart_and_expire(s, 1, Member("pay-c-0001", [("p", 2)], client_id="pay-c", host="10.5.0.3"), t + 10_000)
    restart_and_expire(s, 3, Member("pay-d-0001", [("p", 2)], client_id="pay-d", host="10.5.0.4"), t + 25_000)
    out = run(G, s.rows, t + 100_000)
    expirations = out.of_kind("heartbeat_expiration")
    assert [d["member_id"] for d in expirations] == ["pay-c-0001", "pay-d-0001"]
    assert all("occurrences" not in d["summary"] for d in expirations)


def test_two_live_members_sharing_a_client_id_and_host_are_not_one_identity() -> None:
    """Consumers of one process with one configured client.id: both in the group at once, so that client id and
    host name neither of them; each expiration is its own incident."""
    s = Silver()
    t = BASE_MS
    twins = [Member(f"app-{n}", [("p", n)], client_id="app", host="10.5.0.9") for n in (1, 2)]
    s.generation(G, 1, [*STEADY, *twins], t)
    for twin in twins:
        s.broker(f"Member {twin.member_id} in group {G} has failed, removing it from the group.", t + 20_000)
    prepare(s, 1, f"removing member {twins[0].member_id} on heartbeat expiration", t + 20_000)
    s.generation(G, 2, list(STEADY), t + 21_000)
    expirations = run(G, s.rows, t + 100_000).of_kind("heartbeat_expiration")
    assert sorted(d["member_id"] for d in expirations) == ["app-1", "app-2"]


def test_a_static_member_keeps_its_identity_across_restarts_on_another_host() -> None:
    """group.instance.id is who it is: rescheduled on another host with a new member id, its next expiration is
    the same incident."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 1, list(STEADY), t)
    first = Member("static-c-1", [("p", 2)], instance_id="pay-c", client_id="pay-c", host="10.5.0.3")
    second = Member("static-c-2", [("p", 2)], instance_id="pay-c", client_id="pay-c", host="10.5.0.7")
    restart_and_expire(s, 1, first, t + 10_000)
    restart_and_expire(s, 3, second, t + 70_000)
    (expiration,) = run(G, s.rows, t + 150_000).of_kind("heartbeat_expiration")
    assert expiration["member_id"] == "static-c-2" and "(2 occurrences since" in expiration["summary"]


def test_the_same_client_after_the_reopen_window_is_a_new_incident() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 1, list(STEADY), t)
    window = DetectorThresholds().incident_reopen_ms
    restart_and_expire(s, 1, Member("pay-c-0001", [("p", 2)], client_id="pay-c", host="10.5.0.3"), t + 10_000)
    restart_and_expire(s, 3, Member("pay-c-0002", [("p", 2)], client_id="pay-c", host="10.5.0.3"), t + window + 60_000)
    out = run(G, s.rows, t + 2 * window)
    first, second = out.of_kind("heartbeat_expiration")
    assert first["status"] == "resolved" and first["member_id"] == "pay-c-0001"
    assert second["member_id"] == "pay-c-0002" and "occurrences" not in second["summary"]


def test_a_resolved_incident_reopens_under_its_own_id_within_the_window() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 1, list(STEADY), t)
    restart_and_expire(s, 1, Member("pay-c-0001", [("p", 2)], client_id="pay-c", host="10.5.0.3"), t + 10_000)
    (resolved,) = run(G, s.rows, t + 60_000).of_kind("heartbeat_expiration")
    assert resolved["status"] == "resolved"
    restart_and_expire(s, 3, Member("pay-c-0002", [("p", 2)], client_id="pay-c", host="10.5.0.3"), t + 120_000)
    (reopened,) = run(G, s.rows, t + 200_000, steps=[t + 60_000]).of_kind("heartbeat_expiration")
    assert reopened["detection_id"] == resolved["detection_id"]
    assert reopened["status"] == "open" and reopened["resolved_at"] is None
    assert "(2 occurrences since" in reopened["summary"]


def test_a_member_that_keeps_nearly_missing_its_session_is_one_at_risk_incident() -> None:
    """Heartbeat gaps (GC pauses) that come back again and again: each opens and resolves on the next heartbeat,
    and the second is the same incident, open until the re-open window passes without a third."""
    s = Silver()
    t = BASE_MS
    member = Member("pay-c-0001", [("p", 2)], client_id="pay-c", host="10.5.0.3")
    s.generation(G, 7, [*STEADY, member], t)
    beats = [1000, 2000, 10_500, 11_500, 20_000, 21_000]  # two 8.5 s gaps of a 10 s session
    for at in beats:
        s.agent("heartbeat", G, t + at, member_id=member.member_id, generation=7, client_id="pay-c", host="10.5.0.3")
    thresholds = DetectorThresholds(heartbeat_at_risk_fraction=0.5)
    (risk,) = run(G, s.rows, t + 25_000, thresholds).of_kind("heartbeat_at_risk")
    assert risk["status"] == "open" and "(2 occurrences since" in risk["summary"]
    assert risk["first_seen"].timestamp() * 1000 == t + 2000
    # silent again from 21 s: a third occurrence of the same incident
    (again,) = run(G, s.rows, t + 30_000, thresholds).of_kind("heartbeat_at_risk")
    assert again["detection_id"] == risk["detection_id"] and "(3 occurrences since" in again["summary"]


def test_a_version_2_snapshot_s_open_expiration_takes_the_next_occurrence() -> None:
    """Version 2 held member detections without their identity (zombie_commit aside): the v2 -> v3 migration gives
    them their member's, so a restored tracker counts the client's next expiration in the incident it had open."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 1, list(STEADY), t)
    restart_and_expire(s, 1, Member("pay-c-0001", [("p", 2)], client_id="pay-c", host="10.5.0.3"), t + 10_000)
    cut = len(s.rows) - 2  # after the removal line, before the generation without it
    restart_and_expire(s, 3, Member("pay-c-0002", [("p", 2)], client_id="pay-c", host="10.5.0.3"), t + 25_000)
    events = [e for e in events_of(s.rows) if e.group_id == G]
    tracker = GroupTracker(CLUSTER, G, DetectorThresholds())
    tracker.accept(events[:cut])
    (opened,) = tracker.advance_to(t + 21_500).detections
    data = json.loads(zlib.decompress(tracker.snapshot()))
    for row in data["state"]["detections"].values():  # as version 2 wrote it
        for name in ("incident_of", "ending", "evidence_seen"):
            del row[name]
    del data["state"]["ended_incidents"]
    data["v"] = 2
    restored = GroupTracker.restore(zlib.compress(json.dumps(data).encode()), DetectorThresholds())
    restored.accept(events[cut:])
    out = restored.advance_to(t + 60_000).detections
    rows = {r["detection_id"]: r for r in out if r["kind"] == "heartbeat_expiration"}
    assert list(rows) == [opened["detection_id"]] and "(2 occurrences since" in rows[opened["detection_id"]]["summary"]


def test_a_member_id_its_client_dropped_at_once_joins_the_clients_incident() -> None:
    """Seen in the demo (librdkafka, classic): a zombie rejoined, its client dropped the new member id at once for
    another, and the coordinator expired the dropped one a session later. That member never reached a generation
    record nor the agent, so only its id (the client id, a dash, a UUID) names its client, not its host: it takes
    the one host its client is known on in the group, and is the same incident as the client's first expiration."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 1, list(STEADY), t)
    first = Member("pay-c-0e1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", [("p", 2)], client_id="pay-c", host="10.5.0.3")
    restart_and_expire(s, 1, first, t + 10_000)
    dropped = "pay-c-5f6e7d8c-9b0a-4c1d-8e2f-3a4b5c6d7e8f"
    prepare(s, 3, f"Adding new member {dropped} with group instance id None; client reason: not provided", t + 30_000)
    s.broker(f"Member {dropped} in group {G} has failed, removing it from the group.", t + 33_000)
    s.generation(G, 4, list(STEADY), t + 33_500)
    (expiration,) = run(G, s.rows, t + 90_000).of_kind("heartbeat_expiration")
    assert "(2 occurrences since" in expiration["summary"], expiration["summary"]
    assert expiration["member_id"] == dropped
