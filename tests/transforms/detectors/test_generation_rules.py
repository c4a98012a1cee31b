"""failing_generation, rebalance_storm, probing_rebalance_loop, membership_flapping, leader_instability and the
cause of every rebalance, event by event."""

from __future__ import annotations

import json

from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from tests.transforms.detectors.silver_rows import BASE_MS, Member, Silver, run

G = "orders"
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAABQ"


def m(name: str, *partitions: int, **kw: object) -> Member:
    return Member(name, [("orders", p) for p in partitions], client_id=f"client-{name}", **kw)  # type: ignore[arg-type]


def prepare(s: Silver, old: int, reason: str, t: int) -> None:
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation {old} (reason: {reason}).",
        t,
    )


def test_single_skip_by_one_is_the_healthy_never_persisted_trap() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 5, [m("a", 0, 1)], t)
    s.generation(G, 7, [m("a", 0), m("b", 1)], t + 10_000)  # 6 stabilised in memory, never persisted
    s.generation(G, 9, [m("a", 0), m("b", 1), m("c", 2)], t + 20_000)
    out = run(G, s.rows, t + 60_000)
    assert out.kinds() == []
    assert [r["generation"] for r in out.completed()] == [7, 9]


def test_repeated_large_generation_skips_are_failing_generation() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 5, [m("a", 0, 1), m("b", 2)], t)
    s.generation(G, 9, [m("a", 0, 1), m("b", 2)], t + 60_000)  # 3 generations lost
    s.generation(G, 12, [m("a", 0, 1), m("b", 2)], t + 120_000)  # 2 more
    s.generation(G, 13, [m("a", 0, 1), m("b", 2)], t + 180_000)  # clean: resolves
    out = run(G, s.rows, t + 200_000)
    (failing,) = out.of_kind("failing_generation")
    assert failing["status"] == "resolved"
    assert "skipping numbers 2 times" in failing["summary"]
    assert out.causes()[:2] == ["failed_previous", "failed_previous"]


def test_prepares_climbing_without_a_stable_generation() -> None:
    """Repeated prepares from the old generation and nothing stabilises: failing_generation on the attempts."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 3, [m("a", 0, 1)], t)
    prepare(
        s,
        3,
        "Adding new member stuck-1 with group instance id None; client reason: need to re-join with the "
        "given member-id: stuck-1",
        t + 1000,
    )
    for i, generation in enumerate((4, 5, 6)):
        prepare(s, generation, f"Adding new member stuck-{i + 2} with group instance id None", t + 31_000 + i * 30_000)
    out = run(G, s.rows, t + 130_000, DetectorThresholds(rebalance_stuck_grace_ms=600_000))
    (failing,) = out.of_kind("failing_generation")
    assert failing["generation"] == 3 and failing["status"] == "open"
    assert "tried 4 times to leave generation 3" in failing["summary"]
    (rebalance,) = out.rebalances.values()
    assert rebalance["stabilized_at"] is None and rebalance["from_generation"] == 3


def _joins_without_sync(s: Silver, t: int, cycles: int, *, java: bool) -> int:
    """A member that joins and never sends SyncGroup, as a 4.3.1 broker logged it live (3.x: a Scala `Set(...)`):
    the leader's sync completes each generation, the coordinator removes the member a rebalance timeout later,
    the member rejoins with a new member id, and the group rebalances again, generation after generation."""
    healthy = m("healthy-B", 0, 1, 2, 3)
    s.generation(G, 1, [healthy], t)
    for cycle in range(cycles):
        generation = 2 + cycle
        rogue = f"rogue-R-{cycle}"
        at = t + 5_000 + cycle * 12_000
        s.broker(
            f"Pending dynamic member with id {rogue} joins group {G} in PreparingRebalance state. Adding to the "
            "group now.",
            at,
            java=java,
        )
        s.broker(f"Stabilized group {G} generation {generation} with 2 members.", at + 1_000, java=java)
        s.generation(G, generation, [healthy, m(rogue)], at + 1_010, leader="healthy-B")
        unsynced = f"[{rogue}]" if java else f"Set({rogue})"
        prepare(s, generation, f"Removing {unsynced} on pending sync request expiration", at + 11_000)
    end = t + 5_000 + cycles * 12_000
    s.broker(f"Stabilized group {G} generation {2 + cycles} with 1 members.", end, java=java)
    s.generation(G, 2 + cycles, [healthy], end + 10)
    return end


def test_members_that_never_sync_fail_generation_after_generation() -> None:
    for java in (True, False):
        s = Silver()
        t = BASE_MS
        end = _joins_without_sync(s, t, 4, java=java)
        out = run(G, s.rows, end + 60_000)
        (failing,) = out.of_kind("failing_generation")
        assert failing["status"] == "open", "the generations in between stabilise: they do not end it"
        assert failing["generation"] == 2 and failing["member_id"] is None
        assert "rebalanced 4 times in 36 s because members joined and never sent SyncGroup" in failing["summary"]
        assert "rogue-R-0, rogue-R-1, rogue-R-2 and 1 more" in failing["summary"]
        assert "after generations 2, 3, 4, 5" in failing["summary"]
        assert int(failing["detected_at"].timestamp() * 1000) == t + 5_000 + 2 * 12_000 + 11_000
        # each removal's "Preparing to rebalance" line (the telemetry topic holds three lines per cycle)
        assert [ref["offset"] for ref in json.loads(failing["evidence"])] == [2, 5, 8, 11]
        assert out.causes().count("failed_previous") == 4
        later = run(G, s.rows, end + 11 * 60_000)
        (resolved,) = later.of_kind("failing_generation")
        assert resolved["status"] == "resolved" and "every member has synced since" in resolved["summary"]


def test_one_member_that_never_synced_is_not_a_failing_generation() -> None:
    s = Silver()
    end = _joins_without_sync(s, BASE_MS, 2, java=True)
    out = run(G, s.rows, end + 60_000)
    assert out.of_kind("failing_generation") == []
    assert out.causes().count("failed_previous") == 2


def test_rebalance_stuck_past_the_rebalance_timeout() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 3, [m("a", 0, 1, rebalance_timeout_ms=20_000)], t)
    prepare(
        s,
        3,
        "Adding new member b with group instance id None; client reason: need to re-join with the given member-id: b",
        t + 1000,
    )
    out = run(G, s.rows, t + 1000 + 20_000 + 30_000)
    (failing,) = out.of_kind("failing_generation")
    assert "rebalancing away from generation 3 for 50 s" in failing["summary"]
    assert int(failing["detected_at"].timestamp() * 1000) == t + 51_000


def _kip848_group(s: Silver, t: int, rebalance_timeout_ms: int = 30_000) -> None:
    s.record("ConsumerGroupMetadata", {"groupId": G}, {"epoch": 10, "metadataHash": 0}, t)
    for member in ("m-a", "m-b"):
        s.record(
            "ConsumerGroupMemberMetadata",
            {"groupId": G, "memberId": member},
            {"clientId": member, "clientHost": "/10.0.0.5", "rebalanceTimeoutMs": rebalance_timeout_ms},
            t,
        )
        s.record(
            "ConsumerGroupCurrentMemberAssignment",
            {"groupId": G, "memberId": member},
            {
                "memberEpoch": 10,
                "previousMemberEpoch": 9,
                "state": 0,
                "assignedPartitions": [{"topicId": TOPIC_ID, "partitions": [0, 1] if member == "m-a" else [2, 3]}],
            },
            t,
        )
    s.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": G}, {"assignmentEpoch": 10}, t)


def _kip848_join_c(s: Silver, t: int) -> None:
    s.record("ConsumerGroupMemberMetadata", {"groupId": G, "memberId": "m-c"}, {"clientId": "m-c"}, t)
    s.record("ConsumerGroupMetadata", {"groupId": G}, {"epoch": 11, "metadataHash": 0}, t)
    s.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": G}, {"assignmentEpoch": 11}, t)
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": G, "memberId": "m-b"},
        {
            "memberEpoch": 10,
            "previousMemberEpoch": 10,
            "state": 1,
            "assignedPartitions": [{"topicId": TOPIC_ID, "partitions": [2]}],
            "partitionsPendingRevocation": [{"topicId": TOPIC_ID, "partitions": [3]}],
        },
        t + 10,
    )


def test_kip848_member_stuck_reconciling_past_its_rebalance_timeout() -> None:
    s = Silver()
    t = BASE_MS
    _kip848_group(s, t)
    _kip848_join_c(s, t + 60_000)
    for member in ("m-a", "m-c"):
        s.record(
            "ConsumerGroupCurrentMemberAssignment",
            {"groupId": G, "memberId": member},
            {"memberEpoch": 11, "previousMemberEpoch": 10, "state": 0},
            t + 61_000,
        )
    out = run(G, s.rows, t + 60_010 + 30_000)
    (failing,) = out.of_kind("failing_generation")
    assert failing["member_id"] == "m-b" and failing["generation"] == 11
    assert "still holds 1 partitions pending revocation" in failing["summary"]
    # m-b finally revokes: the detection resolves and the rebalance 10 -> 11 completes with m-c joined
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": G, "memberId": "m-b"},
        {"memberEpoch": 11, "previousMemberEpoch": 10, "state": 0},
        t + 100_000,
    )
    out = run(G, s.rows, t + 110_000)
    (failing,) = out.of_kind("failing_generation")
    assert failing["status"] == "resolved"
    (rebalance,) = out.completed()
    assert (rebalance["from_generation"], rebalance["generation"], rebalance["joined"]) == (10, 11, ["m-c"])
    assert rebalance["cause"] == "member_joined"


def test_kip848_healthy_reconciliation_within_timeout_is_silent() -> None:
    s = Silver()
    t = BASE_MS
    _kip848_group(s, t)
    _kip848_join_c(s, t + 60_000)
    for member in ("m-a", "m-b", "m-c"):
        s.record(
            "ConsumerGroupCurrentMemberAssignment",
            {"groupId": G, "memberId": member},
            {"memberEpoch": 11, "previousMemberEpoch": 10, "state": 0},
            t + 65_000,
        )
    out = run(G, s.rows, t + 600_000)
    assert out.kinds() == []
    (rebalance,) = out.completed()
    assert rebalance["duration_ms"] == 5000


def test_storm_opens_above_the_count_and_resolves_when_quiet() -> None:
    s = Silver()
    t = BASE_MS
    members = [m("a", 0), m("b", 1)]
    for i in range(7):  # the same members again and again: nothing planned explains these rebalances
        s.generation(G, 10 + i, members, t + i * 60_000)
    s.generation(G, 17, [*members, m("c", 2)], t + 6 * 60_000 + 30_000)  # a join: planned, does not count
    out = run(G, s.rows, t + 400_000)
    (storm,) = out.of_kind("rebalance_storm")
    assert storm["status"] == "open" and "rebalanced 6 times" in storm["summary"]
    assert set(out.causes()) == {"unknown", "member_joined"}
    out = run(G, s.rows, t + 6 * 60_000 + 600_001)
    (storm,) = out.of_kind("rebalance_storm")
    assert storm["status"] == "resolved"


def test_leader_changes_while_old_leaders_stay() -> None:
    s = Silver()
    t = BASE_MS
    members = [m("a", 0), m("b", 1), m("c", 2)]
    for i, leader in enumerate(["a", "b", "c", "a"]):
        s.generation(G, 20 + i, members, t + i * 30_000, leader=leader)
    out = run(G, s.rows, t + 100_000)
    (unstable,) = out.of_kind("leader_instability")
    assert "changed leader 3 times" in unstable["summary"]


def test_leader_change_because_the_leader_left_is_normal() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 20, [m("a", 0), m("b", 1)], t, leader="a")
    s.generation(G, 21, [m("b", 0, 1)], t + 30_000, leader="b")
    s.generation(G, 22, [m("b", 0), m("c", 1)], t + 60_000, leader="b")
    assert run(G, s.rows, t + 100_000).kinds() == []


def test_poll_timeout_cause_from_the_leave_reason_and_the_agent() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [m("a", 0), m("b", 1)], t)
    s.agent(
        "poll_timeout",
        G,
        t + 500,
        member_id="b",
        error="MAX_POLL_EXCEEDED",
        reason="Application maximum poll interval (300000ms) exceeded by 12ms",
    )
    s.broker(
        f"[Group {G}] Member b has left group through explicit `LeaveGroup` request; client reason: consumer poll "
        "timeout has expired.",
        t + 1000,
    )
    prepare(s, 7, "explicit `LeaveGroup` request for (b) members.", t + 1000)
    s.generation(G, 8, [m("a", 0, 1)], t + 2000)
    (rebalance,) = run(G, s.rows, t + 10_000).completed()
    assert (rebalance["cause"], rebalance["left"]) == ("poll_timeout", ["b"])


def test_enforced_cause_from_streams_followup() -> None:
    s = Silver()
    t = BASE_MS
    a, b = m("app-1-consumer-x", 0), m("app-2-consumer-y", 1)
    s.generation(G, 7, [a, b], t, protocol="stream")
    s.client(
        "app-1-StreamThread-1-consumer",
        G,
        "Requested to schedule immediate rebalance for new tasks to be safely revoked from current owner.",
        t + 100,
    )
    s.generation(G, 8, [a, b], t + 1500, protocol="stream")
    (rebalance,) = run(G, s.rows, t + 10_000).completed()
    assert rebalance["cause"] == "enforced"


def test_static_member_replacement_is_not_a_departure() -> None:
    s = Silver()
    t = BASE_MS
    a, b = m("a-1", 0, instance_id="orders-0"), m("b-1", 1, instance_id="orders-1")
    s.generation(G, 7, [a, b], t)
    s.broker(
        f"Static member with groupInstanceId=orders-0 and unknown member id joins group {G} in Stable state. "
        "Replacing previously mapped member a-1 with this groupInstanceId.",
        t + 5000,
    )
    s.broker(
        "Static member which joins during Stable stage and doesn't affect the selected protocol will not "
        "trigger a rebalance.",
        t + 5000,
    )
    s.generation(G, 7, [m("a-2", 0, instance_id="orders-0"), b], t + 5001)
    s.commit(G, "orders", 0, 10, t + 6000)
    out = run(G, s.rows, t + 60_000)
    assert out.kinds() == [] and out.rebalances == {}
    assert out.health is not None and out.health["members"] == 2


def test_subscription_change_cause() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [m("a", 0), m("b", 1)], t)
    s.generation(
        G, 8, [m("a", 0), Member("b", [("orders", 1)], client_id="client-b", topics=("orders", "audit"))], t + 5000
    )
    (rebalance,) = run(G, s.rows, t + 10_000).completed()
    assert rebalance["cause"] == "subscription_change"


def test_kip848_static_member_bounce_is_a_replacement() -> None:
    """A static member leaves with epoch -2 and comes back under its instance id with a new member id."""
    s = Silver()
    t = BASE_MS
    _kip848_group(s, t)
    s.record(
        "ConsumerGroupMemberMetadata",
        {"groupId": G, "memberId": "m-a"},
        {"instanceId": "node-a", "clientId": "m-a", "rebalanceTimeoutMs": 30_000},
        t,
    )
    s.broker(f"[GroupId {G}] Static Member m-a with instance id node-a temporarily left the consumer group.", t + 1000)
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": G, "memberId": "m-a"},
        {"memberEpoch": -2, "previousMemberEpoch": 10, "state": 0},
        t + 1000,
    )
    back = t + 20_000
    s.broker(
        f"[GroupId {G}] Static member with instance id node-a re-joins the consumer group using the consumer "
        "protocol. Created a new member m-a2 to replace the existing member m-a.",
        back,
    )
    s.record("ConsumerGroupCurrentMemberAssignment", {"groupId": G, "memberId": "m-a"}, None, back)
    s.record("ConsumerGroupMemberMetadata", {"groupId": G, "memberId": "m-a"}, None, back)
    s.record(
        "ConsumerGroupMemberMetadata",
        {"groupId": G, "memberId": "m-a2"},
        {"instanceId": "node-a", "clientId": "m-a", "rebalanceTimeoutMs": 30_000},
        back,
    )
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": G, "memberId": "m-a2"},
        {"memberEpoch": 10, "previousMemberEpoch": 0, "state": 0},
        back,
    )
    out = run(G, s.rows, t + 600_000)
    assert out.kinds() == [] and out.rebalances == {}
    assert out.health is not None and out.health["members"] == 2


def test_kip1071_streams_member_not_revoking_tasks_past_its_rebalance_timeout() -> None:
    s = Silver()
    t = BASE_MS
    app = "wordcount"
    s.record("StreamsGroupMetadata", {"groupId": app}, {"epoch": 4, "metadataHash": 0}, t)
    for member in ("s-a", "s-b"):
        s.record(
            "StreamsGroupMemberMetadata",
            {"groupId": app, "memberId": member},
            {"clientId": member, "processId": f"p-{member}", "rebalanceTimeoutMs": 20_000},
            t,
        )
        s.record(
            "StreamsGroupCurrentMemberAssignment",
            {"groupId": app, "memberId": member},
            {
                "memberEpoch": 4,
                "previousMemberEpoch": 3,
                "state": 1,
                "activeTasks": [{"subtopologyId": "0", "partitions": [0, 1] if member == "s-a" else [2, 3]}],
            },
            t,
        )
    s.record("StreamsGroupTargetAssignmentMetadata", {"groupId": app}, {"assignmentEpoch": 4}, t)
    bump = t + 60_000
    s.record("StreamsGroupMemberMetadata", {"groupId": app, "memberId": "s-c"}, {"clientId": "s-c"}, bump)
    s.record("StreamsGroupMetadata", {"groupId": app}, {"epoch": 5, "metadataHash": 0}, bump)
    s.record("StreamsGroupTargetAssignmentMetadata", {"groupId": app}, {"assignmentEpoch": 5}, bump)
    s.record(
        "StreamsGroupCurrentMemberAssignment",
        {"groupId": app, "memberId": "s-a"},
        {
            "memberEpoch": 4,
            "previousMemberEpoch": 4,
            "state": 2,
            "activeTasks": [{"subtopologyId": "0", "partitions": [0]}],
            "activeTasksPendingRevocation": [{"subtopologyId": "0", "partitions": [1]}],
        },
        bump + 100,
    )
    for member, state in (("s-b", 1), ("s-c", 3)):  # s-c waits for the task s-a does not release
        s.record(
            "StreamsGroupCurrentMemberAssignment",
            {"groupId": app, "memberId": member},
            {"memberEpoch": 5, "previousMemberEpoch": 4, "state": state},
            bump + 3000,
        )
    out = run(app, s.rows, bump + 100 + 20_000)
    (failing,) = out.of_kind("failing_generation")
    assert (failing["member_id"], failing["generation"]) == ("s-a", 5)
    assert "still holds 1 tasks pending revocation" in failing["summary"]
    assert out.kinds() == ["failing_generation"]
    (rebalance,) = out.rebalances.values()
    assert (rebalance["group_protocol"], rebalance["from_generation"], rebalance["stabilized_at"]) == (
        "streams",
        4,
        None,
    )
    assert out.health is not None and out.health["state"] == "Reconciling"
