"""One scenario per incident pattern of seeds 001 (rebalancing field guide) and 002 (heartbeat internals), from
real coordinator bytes and real-format log lines; each asserts exactly the kinds, members and causes expected."""

from __future__ import annotations

import json

from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from tests.transforms.detectors.silver_rows import BASE_MS, Member, Silver, log_time, run

APP = "otter-app"
NODE0 = "otter-app-225712b8-b54d-4043-a7e1-c489ee4f8fd5"
NODE1 = "otter-app-c4497316-8891-4f1a-b60e-6952b7c56fcf"
ASSIGNOR = "org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor"


def thread(node: str, n: int) -> str:
    return f"{node}-StreamThread-{n}-consumer"


def streams_line(s: Silver, client: str, message: str, t: int) -> None:
    s._telemetry(f"[{log_time(t)}] INFO stream-thread [{client}] {message} ({ASSIGNOR})".encode(), t)


def streams_member(node: str, n: int, *partitions: int, suffix: str = "") -> Member:
    client = thread(node, n)
    return Member(
        f"{client}-{n}{suffix}-7f45268d",
        [("otter-input", p) for p in partitions],
        client_id=client,
        topics=("otter-input",),
    )


def prepare(s: Silver, group: str, old: int, reason: str, t: int) -> None:
    s.broker(
        f"Preparing to rebalance group {group} in state PreparingRebalance with old generation {old} "
        f"(reason: {reason}).",
        t,
    )


def test_closely_grouped_rebalances_once_is_the_healthy_trap() -> None:
    """Seed 001 "Closely Grouped Rebalances": the leader's sync fails because a second rebalance already began;
    generation 742 is never persisted (741 -> 743), one attempt failed: no incident, and the causes are joins."""
    s = Silver()
    t = BASE_MS
    members = [streams_member(NODE0, 1, 0, 1), streams_member(NODE0, 2, 2, 3), streams_member(NODE1, 1, 4)]
    joiner_1 = streams_member(NODE1, 2, 5)
    joiner_2 = streams_member(NODE1, 3, 5)
    s.generation(APP, 741, members, t, protocol="stream")
    prepare(
        s,
        APP,
        741,
        f"Adding new member {joiner_1.member_id} with group instance id None; client reason: need "
        f"to re-join with the given member-id: {joiner_1.member_id}",
        t + 1000,
    )
    streams_line(s, thread(NODE0, 1), "2 client nodes and 4 consumers participating in this rebalance:", t + 3000)
    prepare(
        s,
        APP,
        742,
        f"Adding new member {joiner_2.member_id} with group instance id None; client reason: need "
        f"to re-join with the given member-id: {joiner_2.member_id}",
        t + 3010,
    )
    s.client(
        thread(NODE0, 1),
        APP,
        "SyncGroup failed: The group began another rebalance. Need to re-join the group. Sent generation was "
        f"Generation{{generationId=742, memberId='{members[0].member_id}', protocol='stream'}}",
        t + 3020,
    )
    streams_line(s, thread(NODE0, 1), "2 client nodes and 5 consumers participating in this rebalance:", t + 3040)
    s.generation(APP, 743, [*members, joiner_1, joiner_2], t + 3100, protocol="stream")
    out = run(APP, s.rows, t + 3_600_000)
    assert out.kinds() == []
    (rebalance,) = out.completed()
    assert (rebalance["from_generation"], rebalance["generation"], rebalance["cause"]) == (741, 743, "member_joined")
    assert rebalance["joined"] == sorted([joiner_1.member_id, joiner_2.member_id])


def test_closely_grouped_rebalances_repeating_is_failing_generation() -> None:
    """The same failure again and again over minutes: syncs keep failing, generations climb, nothing persists."""
    s = Silver()
    t = BASE_MS
    members = [streams_member(NODE0, 1, 0, 1), streams_member(NODE1, 1, 2, 3)]
    s.generation(APP, 741, members, t, protocol="stream")
    for i in range(4):
        at = t + 1000 + i * 40_000
        flapper = streams_member(NODE1, 2, 4, suffix=f"x{i}")
        prepare(
            s,
            APP,
            741 + i,
            f"Adding new member {flapper.member_id} with group instance id None; client "
            "reason: need to re-join with the given member-id",
            at,
        )
        s.client(
            thread(NODE0, 1),
            APP,
            "SyncGroup failed: The group began another rebalance. Need to re-join the group. Sent generation was "
            f"Generation{{generationId={742 + i}, memberId='{members[0].member_id}', protocol='stream'}}",
            at + 20_000,
        )
    out = run(APP, s.rows, t + 200_000)
    (failing,) = out.of_kind("failing_generation")
    assert out.kinds() == ["failing_generation"]
    assert failing["generation"] == 741 and failing["status"] == "open"
    assert "leave generation 741" in failing["summary"]


def test_unstable_group_leaders_from_streams_logs() -> None:
    """Seed 001 "Unstable Group Leaders": the "participating in this rebalance" line comes from a new leader
    each time while the previous leaders keep running (log-only view, no __consumer_offsets access)."""
    s = Silver()
    t = BASE_MS
    for i, (node, n) in enumerate([(NODE0, 2), (NODE1, 1), (NODE0, 1), (NODE1, 2)]):
        streams_line(
            s, thread(node, n), "2 client nodes and 4 consumers participating in this rebalance:", t + i * 60_000
        )
    out = run(APP, s.rows, t + 240_000)
    (unstable,) = out.of_kind("leader_instability")
    assert out.kinds() == ["leader_instability"]
    assert "changed leader 3 times" in unstable["summary"]


def test_probing_rebalances_every_ten_minutes() -> None:
    """Seed 001 "Regularly Spaced Probing Rebalances": warmup tasks never catch up, a probing rebalance every
    probing.rebalance.interval.ms (10 min) keeps coming."""
    s = Silver()
    t = BASE_MS
    members = [streams_member(NODE0, 1, 0, 1), streams_member(NODE1, 1, 2, 3)]
    s.generation(APP, 100, members, t, protocol="stream")
    for i in range(1, 5):
        at = t + i * 605_000
        streams_line(
            s,
            thread(NODE0, 1),
            "Requested to schedule next probing rebalance at "
            f"{log_time(at + 600_000)} to try for a more balanced assignment.",
            at - 604_000,
        )
        s.client(thread(NODE0, 1), APP, "Request joining group due to: Scheduled probing rebalance", at - 10)
        prepare(
            s,
            APP,
            99 + i,
            f"Updating metadata for member {members[0].member_id} during Stable; client reason: "
            "triggered followup rebalance scheduled for 0",
            at,
        )
        s.generation(APP, 100 + i, members, at + 800, protocol="stream")
    out = run(APP, s.rows, t + 4 * 605_000 + 60_000)
    (loop,) = out.of_kind("probing_rebalance_loop")
    assert out.kinds() == ["probing_rebalance_loop"]
    assert loop["status"] == "open" and "rebalanced 4 times" in loop["summary"]
    assert set(out.causes()) == {"enforced"}
    # the probing stops: the loop resolves one interval (plus tolerance) after the last rebalance
    (loop,) = run(APP, s.rows, t + 4 * 605_000 + 800_000).of_kind("probing_rebalance_loop")
    assert loop["status"] == "resolved"


def test_cooperative_followup_rebalance_after_a_scale_out_is_healthy() -> None:
    """Seed 001 "Rebalances Triggered by Streams": a new node joins, tasks move, a followup rebalance revokes
    them from their previous owner. Two rebalances within seconds, causes member_joined then enforced."""
    s = Silver()
    t = BASE_MS
    old = [streams_member(NODE0, 1, 0, 1, 2, 3)]
    new = streams_member(NODE1, 1)
    s.generation(APP, 10, old, t, protocol="cooperative-sticky")
    prepare(
        s,
        APP,
        10,
        f"Adding new member {new.member_id} with group instance id None; client reason: need to "
        f"re-join with the given member-id: {new.member_id}",
        t + 1000,
    )
    s.generation(APP, 11, [old[0], new], t + 2000, protocol="stream")
    streams_line(
        s,
        thread(NODE0, 1),
        "Requested to schedule immediate rebalance for new tasks to be safely revoked from current owner.",
        t + 2100,
    )
    prepare(
        s,
        APP,
        11,
        f"Updating metadata for member {old[0].member_id} during Stable; client reason: triggered "
        "followup rebalance scheduled for 0",
        t + 2500,
    )
    moved = [
        streams_member(NODE0, 1, 0, 1),
        Member(new.member_id, [("otter-input", 2), ("otter-input", 3)], client_id=new.client_id),
    ]
    s.generation(APP, 12, moved, t + 3500, protocol="stream")
    out = run(APP, s.rows, t + 3_600_000)
    assert out.kinds() == []
    assert out.causes() == ["member_joined", "enforced"]


def test_heartbeat_expiration_then_zombie_and_rejoin() -> None:
    """Seed 002: the heartbeat thread stalls past session.timeout.ms (a GC pause); the coordinator removes the
    member, the group rebalances without it; the member wakes, its heartbeat fails with UNKNOWN_MEMBER_ID, its
    pending commit fails too, and it rejoins under a new member id."""
    s = Silver()
    t = BASE_MS
    g = "payments"
    a = Member("consumer-payments-1-a1", [("payments", 0), ("payments", 1)], client_id="pay-1", host="10.1.0.1")
    b = Member("consumer-payments-1-b1", [("payments", 2), ("payments", 3)], client_id="pay-2", host="10.1.0.2")
    s.generation(g, 20, [a, b], t)
    for i in range(0, 60_000, 3000):
        s.client("pay-1", g, "Received successful Heartbeat response", t + i)
        if i <= 12_000:
            s.client("pay-2", g, "Received successful Heartbeat response", t + i)
    s.broker(f"Member {b.member_id} in group {g} has failed, removing it from the group", t + 22_500, java=False)
    prepare_line = (
        f"Preparing to rebalance group {g} in state PreparingRebalance with old generation 20 "
        f"(__consumer_offsets-12) (reason: removing member {b.member_id} on heartbeat expiration)"
    )
    s.broker(prepare_line, t + 22_500, java=False)
    s.broker(f"Stabilized group {g} generation 21 (__consumer_offsets-12) with 1 members", t + 25_000, java=False)
    s.generation(g, 21, [Member(a.member_id, [("payments", p) for p in range(4)], client_id="pay-1")], t + 25_000)
    s.client(
        "pay-2",
        g,
        f"Attempt to heartbeat with Generation{{generationId=20, memberId='{b.member_id}', protocol='range'}} and "
        "group instance id null failed due to UNKNOWN_MEMBER_ID, resetting generation",
        t + 40_000,
    )
    s.agent(
        "commit_failed",
        g,
        t + 40_100,
        member_id=b.member_id,
        generation=20,
        client_id="pay-2",
        host="10.1.0.2",
        error="UNKNOWN_MEMBER_ID",
        details={"partitions": "payments-2,payments-3"},
    )
    out = run(g, s.rows, t + 60_000)
    assert out.kinds() == ["heartbeat_at_risk", "heartbeat_expiration", "zombie_commit"]
    (risk,) = out.of_kind("heartbeat_at_risk")  # the early warning, 7 s into b's silence
    assert (risk["member_id"], int(risk["detected_at"].timestamp() * 1000)) == (b.member_id, t + 19_000)
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert expiry["member_id"] == b.member_id and "generation 20 -> 21" in expiry["summary"]
    (zombie,) = out.of_kind("zombie_commit")
    assert zombie["member_id"] == b.member_id
    (rebalance,) = out.completed()
    assert (rebalance["cause"], rebalance["expired"]) == ("heartbeat_expiration", [b.member_id])


def test_max_poll_interval_exceeded_repeatedly() -> None:
    """Seed 002: the poll loop overruns max.poll.interval.ms, the heartbeat thread sends LeaveGroup; the member
    rejoins, overruns again. Each rebalance's cause is the poll timeout."""
    s = Silver()
    t = BASE_MS
    g = "slow"
    fast = Member("fast-1", [("slow", 0)], client_id="fast", host="10.2.0.1")
    s.generation(g, 1, [fast, Member("slow-1", [("slow", 1)], client_id="slowpoke", host="10.2.0.2")], t)
    generation = 1
    for i in range(1, 4):
        at = t + i * 400_000
        s.client(
            "slowpoke",
            g,
            f"Member slow-{i} sending LeaveGroup request to coordinator localhost:9092 (id: "
            "2147483646 rack: null) due to consumer poll timeout has expired. This means the time between "
            "subsequent calls to poll() was longer than the configured max.poll.interval.ms",
            at,
            level="WARN",
        )
        s.broker(
            f"[Group {g}] Member slow-{i} has left group through explicit `LeaveGroup` request; client reason: "
            "consumer poll timeout has expired.",
            at + 5,
        )
        prepare(s, g, generation, f"explicit `LeaveGroup` request for (slow-{i}) members.", at + 5)
        generation += 1
        s.generation(g, generation, [Member("fast-1", [("slow", 0), ("slow", 1)], client_id="fast")], at + 1000)
        prepare(
            s,
            g,
            generation,
            f"Adding new member slow-{i + 1} with group instance id None; client reason: need "
            "to re-join with the given member-id",
            at + 60_000,
        )
        generation += 1
        s.generation(
            g,
            generation,
            [fast, Member(f"slow-{i + 1}", [("slow", 1)], client_id="slowpoke", host="10.2.0.2")],
            at + 61_000,
        )
    out = run(g, s.rows, t + 1_700_000, DetectorThresholds(flapping_alternations=99))
    assert out.kinds() == []
    assert out.causes() == ["poll_timeout", "member_joined"] * 3


def librdkafka_overrun(report_after_ms: int, *, java_broker: bool = True) -> tuple[Silver, int]:
    """librdkafka overruns max.poll.interval.ms: its LeaveGroup carries no reason ("not provided"), the group
    stabilises without it, and the agent reports the overrun `report_after_ms` later (at the application's next
    poll), naming the member that overran."""
    s = Silver()
    t = BASE_MS
    g = "slow"
    fast = Member("fast-1", [("slow", 0)], client_id="fast", host="10.2.0.1")
    slow = Member("rdkafka-slow-1", [("slow", 1)], client_id="rdkafka", host="10.2.0.2")
    s.generation(g, 1, [fast, slow], t)
    at = t + 60_000
    if java_broker:
        s.broker(
            f"[Group {g}] Member {slow.member_id} has left group through explicit `LeaveGroup` request; "
            "client reason: not provided",
            at,
        )
        prepare(s, g, 1, f"explicit `LeaveGroup` request for ({slow.member_id}) members.", at)
    else:
        prepare(s, g, 1, f"Removing member {slow.member_id} on LeaveGroup; client reason: not provided", at)
    s.generation(g, 2, [Member("fast-1", [("slow", 0), ("slow", 1)], client_id="fast", host="10.2.0.1")], at + 20)
    s.agent(
        "poll_timeout",
        g,
        at + report_after_ms,
        member_id=slow.member_id,
        generation=1,
        client_id="rdkafka",
        host="10.2.0.2",
        error="MAX_POLL_EXCEEDED",
        reason="Application maximum poll interval (3000ms) exceeded by 12ms",
    )
    return s, at


def test_poll_timeout_reported_after_the_rebalance_stabilised_is_its_cause() -> None:
    """The report comes after the rebalance that removed the member completed (and after a micro-batch already
    wrote its row as member_left): the same row (same id) is re-emitted with cause poll_timeout, whatever the
    micro-batch boundaries (replay determinism)."""
    for java_broker in (True, False):
        s, at = librdkafka_overrun(1500, java_broker=java_broker)
        whole = run("slow", s.rows, at + 600_000)
        stepped = run("slow", s.rows, at + 600_000, steps=(at + 100, at + 1000))
        for out in (whole, stepped):
            (rebalance,) = out.completed()
            assert (rebalance["cause"], rebalance["left"]) == ("poll_timeout", ["rdkafka-slow-1"]), rebalance
            assert out.kinds() == []
        assert whole.rebalances == stepped.rebalances
        assert (
            '"offset":' in whole.completed()[0]["evidence"] and "heartbeat_events" in whole.completed()[0]["evidence"]
        )


def test_poll_timeout_reported_long_after_the_leave_explains_nothing() -> None:
    """Past the bounded window, a late overrun report no longer rewrites history: the member simply left."""
    s, at = librdkafka_overrun(5 * 60_000)
    (rebalance,) = run("slow", s.rows, at + 600_000).completed()
    assert rebalance["cause"] == "member_left"


def test_java_broker_quoting_the_poll_timeout_client_reason() -> None:
    """A Java client's LeaveGroup carries its reason (KIP-800); both coordinators quote it in their lines."""
    for java_broker in (True, False):
        s = Silver()
        t = BASE_MS
        g = "slow"
        fast = Member("fast-1", [("slow", 0)], client_id="fast")
        slow = Member("slow-1", [("slow", 1)], client_id="slowpoke", host="10.2.0.2")
        s.generation(g, 1, [fast, slow], t)
        reason = "consumer poll timeout has expired."
        if java_broker:
            s.broker(
                f"[Group {g}] Member {slow.member_id} has left group through explicit `LeaveGroup` request; "
                f"client reason: {reason}",
                t + 1000,
            )
            prepare(s, g, 1, f"explicit `LeaveGroup` request for ({slow.member_id}) members.", t + 1000)
        else:
            s.broker(f"Member {slow.member_id} has left group {g} through explicit `LeaveGroup`; client reason: "
                     f"{reason}", t + 1000, java=False)  # fmt: skip
            prepare(s, g, 1, f"Removing member {slow.member_id} on LeaveGroup; client reason: {reason}", t + 1000)
        s.generation(g, 2, [Member("fast-1", [("slow", 0), ("slow", 1)], client_id="fast")], t + 1020)
        (rebalance,) = run(g, s.rows, t + 600_000).completed()
        assert (rebalance["cause"], rebalance["left"]) == ("poll_timeout", [slow.member_id]), java_broker


def test_crash_loop_is_membership_flapping() -> None:
    """Seed 001 "Failing/Replacing StreamThreads": a member keeps dying and coming back (n <-> n+1); each death is
    noticed only when its session expires."""
    s = Silver()
    t = BASE_MS
    g = "crashy"
    steady = [
        Member("ok-1", [("c", 0)], client_id="ok-1", host="10.3.0.1"),
        Member("ok-2", [("c", 1)], client_id="ok-2", host="10.3.0.2"),
    ]
    s.generation(g, 1, steady, t)
    generation = 1
    expired = []
    for i in range(3):
        at = t + 10_000 + i * 60_000
        crasher = Member(f"crash-{i}", [("c", 2)], client_id="crash", host="10.3.0.3")
        prepare(
            s,
            g,
            generation,
            f"Adding new member crash-{i} with group instance id None; client reason: need to "
            "re-join with the given member-id",
            at,
        )
        generation += 1
        s.generation(g, generation, [*steady, crasher], at + 1000)
        s.broker(f"Member crash-{i} in group {g} has failed, removing it from the group.", at + 30_000)
        prepare(s, g, generation, f"removing member crash-{i} on heartbeat expiration", at + 30_000)
        generation += 1
        s.generation(g, generation, steady, at + 31_000)
        expired.append(f"crash-{i}")
    out = run(g, s.rows, t + 250_000)
    # one client's expirations are one incident (its identity: client id and host), not a row per member id
    assert out.kinds() == ["heartbeat_expiration", "membership_flapping"]
    (expiration,) = out.of_kind("heartbeat_expiration")
    assert expiration["member_id"] == expired[-1] and "(3 occurrences since" in expiration["summary"]
    (flapping,) = out.of_kind("membership_flapping")
    assert "host 10.3.0.3" in flapping["summary"] and "crash loop" in flapping["summary"]
    assert json.loads(flapping["evidence"]), "the expirations are its evidence"
    assert out.causes() == ["member_joined", "heartbeat_expiration"] * 3


def kip848_stuck_rows() -> tuple[Silver, int, int]:
    """KIP-848: a member never acknowledges the revocation of its partitions; the 4.x coordinator logs its
    assignment states and fences it when its rebalance timeout passes; the group then converges without it.
    Returns the rows, the time cC joined and the time cB was fenced."""
    s = Silver()
    t = BASE_MS
    g = "clicks"
    topic = "AAAAAAAAAAAAAAAAAAAABQ"
    s.record("ConsumerGroupMetadata", {"groupId": g}, {"epoch": 10, "metadataHash": 0}, t)
    for i, member in enumerate(("cA", "cB")):
        s.record(
            "ConsumerGroupMemberMetadata",
            {"groupId": g, "memberId": member},
            {"clientId": f"clicks-{i}", "clientHost": f"/10.4.0.{i}", "rebalanceTimeoutMs": 45_000},
            t,
        )
        s.record(
            "ConsumerGroupCurrentMemberAssignment",
            {"groupId": g, "memberId": member},
            {
                "memberEpoch": 10,
                "previousMemberEpoch": 9,
                "state": 0,
                "assignedPartitions": [{"topicId": topic, "partitions": [0, 1] if i == 0 else [2, 3]}],
            },
            t,
        )
    s.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": g}, {"assignmentEpoch": 10}, t)
    join = t + 120_000
    s.broker(f"[GroupId {g}] Member cC joins the consumer group using the consumer protocol.", join)
    s.broker(f"[GroupId {g}] Bumped group epoch to 11 with metadata hash 7.", join)
    s.record(
        "ConsumerGroupMemberMetadata",
        {"groupId": g, "memberId": "cC"},
        {"clientId": "clicks-2", "clientHost": "/10.4.0.2", "rebalanceTimeoutMs": 45_000},
        join,
    )
    s.record("ConsumerGroupMetadata", {"groupId": g}, {"epoch": 11, "metadataHash": 7}, join)
    s.broker(f"[GroupId {g}] Computed a new target assignment for epoch 11 with 'uniform' assignor in 1ms.", join)
    s.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": g}, {"assignmentEpoch": 11}, join)
    s.broker(
        f"[GroupId {g}] Member cB new assignment state: epoch=10, previousEpoch=10, state=UNREVOKED_PARTITIONS, "
        "assignedPartitions=[t-2], pendingPartitionsToRevoke=[t-3].",
        join + 50,
    )
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": g, "memberId": "cB"},
        {
            "memberEpoch": 10,
            "previousMemberEpoch": 10,
            "state": 1,
            "assignedPartitions": [{"topicId": topic, "partitions": [2]}],
            "partitionsPendingRevocation": [{"topicId": topic, "partitions": [3]}],
        },
        join + 50,
    )
    for member in ("cA", "cC"):
        s.record(
            "ConsumerGroupCurrentMemberAssignment",
            {"groupId": g, "memberId": member},
            {"memberEpoch": 11, "previousMemberEpoch": 10, "state": 0},
            join + 3000,
        )
    fenced = join + 50 + 45_000
    s.broker(
        f"[GroupId {g}] Member cB fenced from the group because it failed to transition from epoch 10 within 45000ms.",
        fenced,
    )
    s.record("ConsumerGroupCurrentMemberAssignment", {"groupId": g, "memberId": "cB"}, None, fenced)
    s.record("ConsumerGroupMemberMetadata", {"groupId": g, "memberId": "cB"}, None, fenced)
    s.record("ConsumerGroupMetadata", {"groupId": g}, {"epoch": 12, "metadataHash": 7}, fenced)
    s.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": g}, {"assignmentEpoch": 12}, fenced)
    for member in ("cA", "cC"):
        s.record(
            "ConsumerGroupCurrentMemberAssignment",
            {"groupId": g, "memberId": member},
            {"memberEpoch": 12, "previousMemberEpoch": 11, "state": 0},
            fenced + 2000,
        )
    for beat in range(t, fenced + 60_000, 5000):
        for member in ("cA", "cC") + (("cB",) if beat < fenced else ()):
            if member != "cC" or beat > join:
                s.agent("heartbeat", g, beat + 30, member_id=member, member_epoch=11)
    return s, join, fenced


def test_kip848_members_stuck_reconciling_until_fenced() -> None:
    s, join, fenced = kip848_stuck_rows()
    g = "clicks"
    out = run(g, s.rows, fenced + 60_000)
    assert out.kinds() == ["failing_generation"]
    (failing,) = out.of_kind("failing_generation")
    assert (failing["member_id"], failing["generation"], failing["status"]) == ("cB", 11, "resolved")
    # behind since the target moved to epoch 11: decided at its rebalance timeout, just before the fencing
    assert int(failing["detected_at"].timestamp() * 1000) == join + 45_000
    (rebalance,) = out.completed()
    assert (rebalance["from_generation"], rebalance["generation"]) == (10, 12)
    assert (rebalance["joined"], rebalance["left"], rebalance["expired"]) == (["cC"], ["cB"], [])
    assert rebalance["cause"] == "member_joined"


def test_the_coordinator_preparing_from_the_same_generation_again_and_again_is_failing_generation() -> None:
    """Seed 001: "if you see the above line logged repeatedly with the same generation_id each time, you know the
    rebalances are failing". A Kafka Streams application's members keep updating their metadata, the coordinator
    keeps preparing from generation 741, and the persisted generation later jumps to 746."""
    s = Silver()
    t = BASE_MS
    members = [streams_member(NODE0, 1, 0, 1), streams_member(NODE0, 2, 2, 3), streams_member(NODE1, 1, 4)]
    s.generation(APP, 741, members, t, protocol="stream")
    for i, member in enumerate([*members, members[0]]):
        prepare(
            s,
            APP,
            741,
            f"Updating metadata for member {member.member_id} during PreparingRebalance; client reason: "
            "rebalance failed due to 'The group is rebalancing, so a rejoin is needed.'",
            t + 1000 + i * 30_000,
        )
    s.generation(APP, 746, members, t + 150_000, protocol="stream")
    out = run(APP, s.rows, t + 3_600_000)
    (failing,) = out.of_kind("failing_generation")
    assert failing["generation"] == 741 and failing["status"] == "resolved"
    assert failing["detected_at"].timestamp() * 1000 == t + 61_000  # the first attempt a minute old
    assert "again and again" in failing["summary"] and "Updating metadata for member" in failing["summary"]
    assert "stable at 746" in failing["summary"]
    assert json.loads(failing["evidence"]), "the prepare lines are its evidence"


def test_one_prepare_then_a_stable_generation_is_healthy() -> None:
    s = Silver()
    t = BASE_MS
    members = [streams_member(NODE0, 1, 0, 1), streams_member(NODE1, 1, 2)]
    s.generation(APP, 741, members, t, protocol="stream")
    prepare(s, APP, 741, f"Updating metadata for member {members[0].member_id} during Stable", t + 1000)
    s.generation(APP, 742, members, t + 4000, protocol="stream")
    out = run(APP, s.rows, t + 3_600_000)
    assert out.kinds() == []


def classic_member_id(client_id: str, n: int) -> str:
    """A classic member id as both coordinators make it: the client id, a dash, a UUID."""
    return f"{client_id}-{n:08x}-1111-2222-3333-444455556666"


def test_a_crash_loop_with_a_steady_member_count_is_membership_flapping() -> None:
    """A classic consumer killed and restarted five times in about a minute: each restart joins under a new member
    id in the same rebalance that drops the dead one, so the count stays 3 and every rebalance is a join."""
    s = Silver()
    t = BASE_MS
    g = "payments"
    steady = [
        Member(classic_member_id("pay-a", 1), [("p", 0)], client_id="pay-a", host="10.5.0.1"),
        Member(classic_member_id("pay-b", 2), [("p", 1)], client_id="pay-b", host="10.5.0.2"),
    ]
    crasher = Member(classic_member_id("pay-c", 0), [("p", 2)], client_id="pay-c", host="10.5.0.3")
    s.generation(g, 5, [*steady, crasher], t)
    for i in range(1, 6):
        at = t + 10_000 + i * 12_000
        dead = crasher.member_id
        crasher = Member(classic_member_id("pay-c", i), [("p", 2)], client_id="pay-c", host="10.5.0.3")
        prepare(
            s,
            g,
            4 + i,
            f"Adding new member {crasher.member_id} with group instance id None; client reason: need to re-join "
            "with the given member-id",
            at,
        )
        # the join completes without the dead member (4.x wording; 3.x prints a Scala Set)
        s.broker(f"Group {g} removed dynamic members who haven't joined: [{dead}].", at + 2900)
        s.generation(g, 5 + i, [*steady, crasher], at + 3000)
    out = run(g, s.rows, t + 3_600_000)
    assert [r["members_after"] for r in out.completed()] == [3] * 5
    (flapping,) = out.of_kind("membership_flapping")
    assert "host 10.5.0.3 (pay-c)" in flapping["summary"] and "crash loop" in flapping["summary"]
    # the third member that died young (the first one had been there before radar saw the group)
    assert flapping["detected_at"].timestamp() * 1000 == t + 10_000 + 4 * 12_000 + 2900
    assert flapping["status"] == "resolved" and "no restart since" in flapping["summary"]
    assert json.loads(flapping["evidence"])


def test_a_streams_crash_loop_whose_restarts_take_new_client_ids_is_membership_flapping() -> None:
    """KIP-1071: a Kafka Streams instance that keeps crashing comes back with a new member id and, without its
    state directory, a new process id and client id; its host is what the restarts share."""
    s = Silver()
    t = BASE_MS
    app = "ledger"
    epoch = 3
    s.record("StreamsGroupMetadata", {"groupId": app}, {"epoch": epoch, "metadataHash": 0}, t)
    for member, host in (("s-a", "10.6.0.1"), ("s-b", "10.6.0.2")):
        s.record(
            "StreamsGroupMemberMetadata",
            {"groupId": app, "memberId": member},
            {"clientId": f"{app}-{member}", "clientHost": f"/{host}", "processId": f"p-{member}"},
            t,
        )
    for i in range(5):
        joined = t + 5_000 + i * 15_000
        member = f"s-c{i}"
        epoch += 1
        s.record(
            "StreamsGroupMemberMetadata",
            {"groupId": app, "memberId": member},
            {"clientId": f"{app}-p{i}-StreamThread-1-consumer", "clientHost": "/10.6.0.3", "processId": f"p{i}"},
            joined,
        )
        s.record("StreamsGroupMetadata", {"groupId": app}, {"epoch": epoch, "metadataHash": 0}, joined)
        died = joined + 12_000
        s.broker(f"[GroupId {app}] Member {member} fenced from the group because its session expired.", died)
        s.record("StreamsGroupMemberMetadata", {"groupId": app, "memberId": member}, None, died)
        epoch += 1
        s.record("StreamsGroupMetadata", {"groupId": app}, {"epoch": epoch, "metadataHash": 0}, died)
    out = run(app, s.rows, t + 3_600_000)
    flapping = out.of_kind("membership_flapping")
    assert len(flapping) == 1, [f["summary"] for f in flapping]
    assert "host 10.6.0.3" in flapping[0]["summary"]
    assert flapping[0]["detected_at"].timestamp() * 1000 == t + 5_000 + 2 * 15_000 + 12_000


def test_a_rolling_restart_of_long_lived_members_is_not_a_crash_loop() -> None:
    """A deployment restarts each instance once: the members it replaces had lived for hours."""
    s = Silver()
    t = BASE_MS
    g = "billing-dynamic"
    hosts = ["10.7.0.1", "10.7.0.2", "10.7.0.3"]
    members = [
        Member(classic_member_id(f"bill-{i}", 0), [("b", i)], client_id=f"bill-{i}", host=hosts[i]) for i in range(3)
    ]
    s.generation(g, 1, members, t)
    s.generation(g, 2, members, t + 60_000)  # a generation radar saw form: its members' joins are known
    generation = 2
    at = t + 3 * 3_600_000
    for i in range(3):
        replacement = Member(classic_member_id(f"bill-{i}", 1), [("b", i)], client_id=f"bill-{i}", host=hosts[i])
        members = [replacement if m.client_id == f"bill-{i}" else m for m in members]
        generation += 1
        s.generation(g, generation, members, at + i * 40_000)
    out = run(g, s.rows, at + 3_600_000)
    assert out.kinds() == []


def test_joins_that_replace_expired_members_are_unplanned_rebalances() -> None:
    """Each rebalance's cause is the join that began it, but a member expired during each: six of them in ten
    minutes are a storm, not a scale-out."""
    s = Silver()
    t = BASE_MS
    g = "orders-storm"
    steady = [Member(classic_member_id("ord-a", 1), [("o", 0)], client_id="ord-a", host="10.8.0.1")]
    dead = Member(classic_member_id("ord-b", 0), [("o", 1)], client_id="ord-b", host="10.8.0.2")
    s.generation(g, 1, [*steady, dead], t)
    for i in range(1, 7):
        at = t + i * 60_000
        new = Member(classic_member_id("ord-b", i), [("o", 1)], client_id="ord-b", host=f"10.8.1.{i}")
        prepare(s, g, i, f"Adding new member {new.member_id} with group instance id None; client reason: x", at)
        s.broker(f"Member {dead.member_id} in group {g} has failed, removing it from the group.", at + 1000)
        s.generation(g, i + 1, [*steady, new], at + 2000)
        dead = new
    out = run(g, s.rows, t + 3_600_000)
    assert [r["cause"] for r in out.completed()] == ["member_joined"] * 6
    (storm,) = out.of_kind("rebalance_storm")
    assert "6 members expired or removed during them" in storm["summary"]
