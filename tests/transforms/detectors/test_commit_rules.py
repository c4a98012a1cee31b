"""zombie_commit and offset_regression, event by event: telemetry commits, librdkafka's empty member id,
backwards commits after an owner change, commits into a group emptied by removals, and the assign() trap."""

from __future__ import annotations

import json

from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker
from tests.transforms.detectors.silver_rows import BASE_MS, CLUSTER, Member, Outcome, Silver, events_of, run

G = "orders"
A = Member("consumer-orders-1-aaa", [("orders", 0), ("orders", 1)], client_id="worker-a", host="10.0.0.1")
B = Member("rdkafka-bbb", [("orders", 2), ("orders", 3)], client_id="worker-b", host="10.0.0.2")
ALL_TO_A = Member(A.member_id, [("orders", p) for p in range(4)], client_id="worker-a", host="10.0.0.1")


def _b_expires(s: Silver, t: int) -> int:
    s.generation(G, 7, [A, B], t)
    gone = t + 20_000
    s.broker(f"Member {B.member_id} in group {G} has failed, removing it from the group.", gone)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 7 (reason: removing "
        f"member {B.member_id} on heartbeat expiration).",
        gone,
    )
    s.generation(G, 8, [ALL_TO_A], gone + 1000)
    return gone + 1000


def test_expired_member_commit_failing_with_illegal_generation_is_a_zombie() -> None:
    s = Silver()
    after = _b_expires(s, BASE_MS)
    s.agent(
        "commit_failed",
        G,
        after + 5000,
        member_id=B.member_id,
        generation=7,
        client_id="worker-b",
        host="10.0.0.2",
        error="ILLEGAL_GENERATION",
        reason="Broker: Specified group generation id is not valid",
        details={"trigger": "sync", "partitions": "orders-2,orders-3", "offsets": "120,98"},
    )
    out = run(G, s.rows, after + 10_000)
    (zombie,) = out.of_kind("zombie_commit")
    assert (zombie["member_id"], zombie["generation"], zombie["severity"]) == (B.member_id, 7, "critical")
    assert "ILLEGAL_GENERATION" in zombie["summary"] and "expired" in zombie["summary"]
    assert out.kinds() == ["heartbeat_expiration", "zombie_commit"]


def test_librdkafka_zombie_with_empty_member_id_is_attributed_by_client_and_host() -> None:
    s = Silver()
    after = _b_expires(s, BASE_MS)
    s.agent(
        "commit_failed",
        G,
        after + 5000,
        generation=-1,
        client_id="worker-b",
        host="10.0.0.2",
        error="UNKNOWN_MEMBER_ID",
        details={"partitions": "orders-2"},
    )
    (zombie,) = run(G, s.rows, after + 10_000).of_kind("zombie_commit")
    assert zombie["member_id"] == B.member_id


def test_librdkafka_zombie_attributed_by_last_member_id_detail() -> None:
    s = Silver()
    after = _b_expires(s, BASE_MS)
    s.agent("commit", G, after + 5000, client_id="other", details={"last_member_id": B.member_id})
    (zombie,) = run(G, s.rows, after + 10_000).of_kind("zombie_commit")
    assert zombie["member_id"] == B.member_id


def test_assign_mode_commit_nobody_can_attribute_is_not_a_zombie() -> None:
    """A standalone assign() consumer: refused while the group lives, accepted once it is Empty."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A], t)
    s.commit(G, "orders", 0, 500, t + 1000)
    s.agent(
        "commit_failed", G, t + 2000, generation=-1, client_id="backfill", host="10.9.9.9", error="UNKNOWN_MEMBER_ID"
    )
    s.broker(
        f"[Group {G}] Member {A.member_id} has left group through explicit `LeaveGroup` request; client reason: "
        "the consumer is being closed",
        t + 3000,
    )
    s.generation(G, 8, [], t + 3100)
    s.commit(G, "orders", 3, 10, t + 4000)  # accepted now that the group is Empty: a partition nobody lost
    out = run(G, s.rows, t + 60_000)
    assert out.kinds() == []
    (rebalance,) = out.completed()
    assert (rebalance["cause"], rebalance["left"], rebalance["members_after"]) == ("member_left", [A.member_id], 0)


def test_commit_into_group_emptied_by_removal_for_a_partition_the_removed_member_owned() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [B], t)
    s.broker(f"Member {B.member_id} in group {G} has failed, removing it from the group.", t + 20_000)
    s.generation(G, 8, [], t + 20_100)
    s.commit(G, "orders", 2, 4242, t + 25_000)
    out = run(G, s.rows, t + 60_000)
    (zombie,) = out.of_kind("zombie_commit")
    assert (zombie["member_id"], zombie["topic"], zombie["partition"]) == (B.member_id, "orders", 2)
    assert '"table":"offset_commits"' in zombie["evidence"]


def test_backwards_commit_right_after_owner_change_is_the_old_owners_zombie() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A, B], t)
    s.commit(G, "orders", 2, 1000, t + 1000)
    s.broker(f"Member {B.member_id} in group {G} has failed, removing it from the group.", t + 20_000)
    s.generation(G, 8, [ALL_TO_A], t + 21_000)
    s.commit(G, "orders", 2, 1010, t + 22_000)  # the new owner moves on
    s.commit(G, "orders", 2, 990, t + 23_000)  # the zombie commits its stale position
    out = run(G, s.rows, t + 60_000)
    (zombie,) = out.of_kind("zombie_commit")
    assert (zombie["member_id"], zombie["partition"]) == (B.member_id, 2)
    assert "moved back from 1010 to 990" in zombie["summary"]
    assert "offset_regression" not in out.kinds()


def test_backwards_commit_long_after_any_rebalance_is_an_offset_regression_that_resolves() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A], t)
    s.commit(G, "orders", 0, 5000, t + 1000)
    s.commit(G, "orders", 0, 100, t + 600_000)
    out = run(G, s.rows, t + 700_000)
    (regression,) = out.of_kind("offset_regression")
    assert regression["status"] == "open" and "orders-0 from 5000 to 100" in regression["summary"]
    s.commit(G, "orders", 0, 5001, t + 800_000)
    (regression,) = run(G, s.rows, t + 900_000).of_kind("offset_regression")
    assert regression["status"] == "resolved"


def test_live_member_commit_with_stale_generation_and_fencing_error() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A, B], t)
    s.generation(G, 8, [A, B], t + 10_000)
    s.client(
        "worker-b",
        G,
        "Offset commit failed on partition orders-2 at offset 77: The provided member is not known in the current "
        "generation. ILLEGAL_GENERATION",
        t + 11_000,
        level="WARN",
    )
    out = run(G, s.rows, t + 20_000)
    assert out.kinds() == []  # a client log without generation is not evidence of staleness on its own
    s.agent("commit_failed", G, t + 12_000, member_id=B.member_id, generation=7, error="ILLEGAL_GENERATION")
    (zombie,) = run(G, s.rows, t + 20_000).of_kind("zombie_commit")
    assert "sent generation/epoch 7, the group is at 8" in zombie["summary"]


def test_zombie_resolves_once_it_stops_and_the_idle_group_state_may_go() -> None:
    s = Silver()
    after = _b_expires(s, BASE_MS)
    s.agent("commit_failed", G, after + 5000, member_id=B.member_id, generation=7, error="ILLEGAL_GENERATION")
    s.agent("commit_failed", G, after + 65_000, member_id=B.member_id, generation=7, error="ILLEGAL_GENERATION")
    thresholds = DetectorThresholds(incident_quiet_ms=300_000, group_idle_ttl_ms=3_600_000)
    (zombie,) = run(G, s.rows, after + 300_000, thresholds).of_kind("zombie_commit")
    assert zombie["status"] == "open"
    assert int(zombie["last_seen"].timestamp() * 1000) == after + 65_000
    (zombie,) = run(G, s.rows, after + 400_000, thresholds).of_kind("zombie_commit")
    assert zombie["status"] == "resolved"
    assert int(zombie["resolved_at"].timestamp() * 1000) == after + 65_000 + 300_000
    tracker = GroupTracker(CLUSTER, G, thresholds)
    tracker.accept(events_of(s.rows))
    tracker.advance_to(after + 400_000)
    assert not tracker.is_expired(after + 400_000)
    assert tracker.is_expired(after + 65_000 + 3_600_001)


def test_fenced_commit_from_a_member_silent_past_its_session_before_the_group_moved_on() -> None:
    """Offsets and agent only: B froze, the coordinator already dropped it, the next generation is not persisted
    yet; B wakes and its commit fails with UNKNOWN_MEMBER_ID."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A, B], t)
    for i in range(0, 30_000, 3000):
        s.agent("heartbeat", G, t + i, member_id=A.member_id, generation=7)
        if i <= 6000:
            s.agent("heartbeat", G, t + i, member_id=B.member_id, generation=7)
    s.agent("commit_failed", G, t + 25_000, member_id=B.member_id, generation=7, error="UNKNOWN_MEMBER_ID")
    out = run(G, s.rows, t + 30_000)
    (zombie,) = out.of_kind("zombie_commit")
    assert zombie["member_id"] == B.member_id and "silent 19 s, past its 10 s session timeout" in zombie["summary"]


def test_cooperative_member_committing_what_it_revokes_is_healthy() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [ALL_TO_A], t)
    s.generation(G, 8, [A, B], t + 10_000)  # orders-2 and orders-3 move to B
    s.agent("commit", G, t + 10_050, member_id=A.member_id, generation=8, details={"partitions": "orders-2,orders-3"})
    assert run(G, s.rows, t + 60_000).kinds() == []
    s.agent(
        "commit_failed",
        G,
        t + 30_000,
        member_id=A.member_id,
        generation=8,
        error="UNKNOWN_MEMBER_ID",
        details={"partitions": "orders-2"},
    )
    (zombie,) = run(G, s.rows, t + 60_000).of_kind("zombie_commit")
    assert "does not own orders-2" in zombie["summary"]


def test_kip848_stale_member_epoch_of_a_live_member_is_a_retried_race() -> None:
    s = Silver()
    t = BASE_MS
    s.record("ConsumerGroupMetadata", {"groupId": G}, {"epoch": 5, "metadataHash": 0}, t)
    s.record("ConsumerGroupMemberMetadata", {"groupId": G, "memberId": "k-a"}, {"clientId": "k-a"}, t)
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": G, "memberId": "k-a"},
        {"memberEpoch": 5, "previousMemberEpoch": 4, "state": 0},
        t,
    )
    s.agent("commit_failed", G, t + 1000, member_id="k-a", member_epoch=4, error="STALE_MEMBER_EPOCH")
    assert run(G, s.rows, t + 60_000).kinds() == []
    s.agent("commit_failed", G, t + 2000, member_id="k-a", member_epoch=4, error="FENCED_MEMBER_EPOCH")
    (zombie,) = run(G, s.rows, t + 60_000).of_kind("zombie_commit")
    assert "sent generation/epoch 4, the group is at 5" in zombie["summary"]


# --- the resumed zombie whose client already rejoined (CI: test_telemetry_broker_4x, run 11) --------------------

B_REJOINED = Member("rdkafka-bbb-2", [("orders", 2), ("orders", 3)], client_id="worker-b", host="10.0.0.2")
A_HALF = Member(A.member_id, [("orders", 0), ("orders", 1)], client_id="worker-a", host="10.0.0.1")


def _b_expires_and_rejoins(s: Silver, t: int) -> int:
    """B expires out of generation 7; its process resumes and rejoins as a new member id in generation 9."""
    after = _b_expires(s, t)
    s.generation(G, 9, [A_HALF, B_REJOINED], after + 2000)
    return after + 2000


def _reported_after_the_rejoin(kind: str, generation: int, error: str | None = None, **details: str) -> Outcome:
    """B expires and rejoins as B_REJOINED (generation 9); then a commit event naming B_REJOINED, with
    `last_member_id` the evicted B: the shape librdkafka's rejoin pair gives (see the module docstring)."""
    s = Silver()
    rejoined = _b_expires_and_rejoins(s, BASE_MS)
    details = {"partitions": "orders-2,orders-3", "last_member_id": B.member_id, "last_generation": "7", **details}
    who = {"member_id": B_REJOINED.member_id, "client_id": B_REJOINED.client_id, "host": B_REJOINED.host}
    s.agent(kind, G, rejoined + 300, **who, generation=generation, error=error, details=details)
    return run(G, s.rows, rejoined + 10_000)


def test_zombie_commit_reported_under_the_rejoined_member_id_names_the_evicted_member() -> None:
    """librdkafka's group metadata pairs the rejoin's new member id (from MEMBER_ID_REQUIRED) with the old
    generation: a commit failure may name the live rejoined member while its generation and `last_member_id`
    are the evicted one's. The generation decides: the zombie is the member of generation 7."""
    out = _reported_after_the_rejoin("commit_failed", 7, "UNKNOWN_MEMBER_ID", trigger="sync", offsets="0,0")
    (zombie,) = out.of_kind("zombie_commit")
    assert (zombie["member_id"], zombie["generation"]) == (B.member_id, 7)
    assert "expired from the group" in zombie["summary"] and B_REJOINED.member_id not in zombie["summary"]


def test_illegal_generation_commit_under_the_rejoined_id_names_the_evicted_member() -> None:
    (zombie,) = _reported_after_the_rejoin("commit_failed", 7, "ILLEGAL_GENERATION").of_kind("zombie_commit")
    assert (zombie["member_id"], zombie["generation"]) == (B.member_id, 7)


def test_rejoined_member_committing_in_its_own_generation_is_not_sent_to_its_former_self() -> None:
    """`last_member_id` alone does not redirect: a commit in the named member's own generation is its own."""
    assert _reported_after_the_rejoin("commit", 9).kinds() == ["heartbeat_expiration"]


def test_expired_java_member_commit_async_failing_is_a_zombie() -> None:
    """B's classic Java client, after the coordinator expired it, reports a failed `commitAsync()` through the default
    callback (ConsumerCoordinator 2.x-4.x, ERROR: "Offset commit with offsets {} failed"); no member id in the line,
    so the client id attributes it."""
    s = Silver()
    after = _b_expires(s, BASE_MS)
    s.client(
        "worker-b",
        G,
        "Offset commit with offsets {orders-2=OffsetAndMetadata{offset=120, leaderEpoch=null, metadata=''}, "
        "orders-3=OffsetAndMetadata{offset=98, leaderEpoch=null, metadata=''}} failed",
        after + 5000,
        level="ERROR",
    )
    out = run(G, s.rows, after + 10_000)
    (zombie,) = out.of_kind("zombie_commit")
    assert zombie["member_id"] == B.member_id
    assert "expired" in zombie["summary"]


def test_expired_java_member_whose_client_refuses_its_own_commit_is_a_zombie() -> None:
    """When the classic Java client's heartbeat learns of the eviction before the application commits, the client
    refuses the commit itself (ConsumerCoordinator, INFO: "Failing OffsetCommit request since the consumer is not
    part of an active group"): no error code, no request to the broker, yet a commit attempt of an expired member.
    The summary says it failed and why, not that it was sent."""
    s = Silver()
    after = _b_expires(s, BASE_MS)
    s.client(
        "worker-b", G, "Failing OffsetCommit request since the consumer is not part of an active group", after + 5000
    )
    out = run(G, s.rows, after + 10_000)
    (zombie,) = out.of_kind("zombie_commit")
    assert zombie["member_id"] == B.member_id
    assert "a commit failed (consumer is not part of an active group) because it was expired" in zombie["summary"]


def test_a_reset_of_many_partitions_is_one_regression_incident_with_each_lowest_offset() -> None:
    """A group's offsets set back from 10 to 1 on 50 partitions, then consumed up again: one incident, which
    names how far back each partition went (not the last of its many backwards commits), resolved once every
    partition passed its high-water mark."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A], t)
    for p in range(50):
        s.commit(G, "orders", p, 10, t + 1000)
    for p in range(50):
        s.commit(G, "orders", p, 1, t + 600_000 + p)
    for offset in range(2, 10):  # consuming again, still below the mark
        for p in range(50):
            s.commit(G, "orders", p, offset, t + 600_000 + offset * 1000 + p)
    out = run(G, s.rows, t + 650_000)
    (regression,) = out.of_kind("offset_regression")
    assert regression["status"] == "open" and regression["partition"] is None and regression["topic"] == "orders"
    assert "offsets of 50 partitions" in regression["summary"]
    assert "orders-0 from 10 to 1" in regression["summary"] and "to 9" not in regression["summary"]
    for p in range(50):
        s.commit(G, "orders", p, 11, t + 700_000 + p)
    (regression,) = run(G, s.rows, t + 800_000).of_kind("offset_regression")
    assert regression["status"] == "resolved" and regression["summary"].split(". What to do:")[0].endswith("caught up")


def test_a_member_that_keeps_coming_back_as_a_zombie_is_one_incident_with_its_occurrences() -> None:
    """Each time it overruns max.poll.interval.ms the member is removed, its stale commit is refused, and it rejoins
    under a new member id: one critical incident for the client, not one per member id."""
    s = Silver()
    t = BASE_MS
    generation = 7
    member = B
    s.generation(G, generation, [A, member], t)
    for i in range(3):
        at = t + 10_000 + i * 60_000
        s.generation(G, generation + 1, [ALL_TO_A], at)  # it is gone
        s.agent(
            "commit_failed",
            G,
            at + 2000,
            member_id=member.member_id,
            generation=generation,
            client_id="worker-b",
            host="10.0.0.2",
            error="ILLEGAL_GENERATION",
            details={"partitions": "orders-2"},
        )
        member = Member(f"rdkafka-b{i}", [("orders", 2), ("orders", 3)], client_id="worker-b", host="10.0.0.2")
        generation += 2
        s.generation(G, generation, [A, member], at + 30_000)  # back, under a new member id
    out = run(G, s.rows, t + 200_000)
    (zombie,) = out.of_kind("zombie_commit")
    # the row names the member of its latest occurrence; first_seen is the first one's
    assert zombie["member_id"] == "rdkafka-b1" and zombie["status"] == "open"
    assert zombie["first_seen"].timestamp() * 1000 == t + 12_000
    assert "(3 occurrences since" in zombie["summary"] and "rdkafka-b1" in zombie["summary"]
    assert len(json.loads(zombie["evidence"])) == 3
