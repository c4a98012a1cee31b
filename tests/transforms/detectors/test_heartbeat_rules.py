"""heartbeat_expiration and heartbeat_at_risk, event by event, in both coordinators' wording."""

from __future__ import annotations

import pytest

from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from tests.transforms.detectors.silver_rows import BASE_MS, Member, Silver, run

G = "orders"
A = Member("consumer-orders-1-aaa", [("orders", 0), ("orders", 1)], client_id="worker-a")
B = Member("consumer-orders-2-bbb", [("orders", 2), ("orders", 3)], client_id="worker-b", host="10.0.0.2")
ALL_TO_A = Member(A.member_id, [("orders", p) for p in range(4)], client_id="worker-a")


def _heartbeats(silver: Silver, member: Member, start: int, stop: int, every: int = 3000) -> None:
    for t in range(start, stop, every):
        silver.agent("heartbeat", G, t, member_id=member.member_id, generation=7, client_id=member.client_id)


@pytest.mark.parametrize("java", [True, False])
def test_broker_expiry_line_opens_then_resolves_naming_silence_timeout_and_generations(java: bool) -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A, B], t)
    _heartbeats(s, A, t + 1000, t + 40_000)
    _heartbeats(s, B, t + 1000, t + 20_000)  # last at t+19000
    expired = t + 31_000
    suffix = "" if java else " (__consumer_offsets-12)"
    end = "." if java else ""
    s.broker(f"Member {B.member_id} in group {G} has failed, removing it from the group{end}", expired, java=java)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 7{suffix} "
        f"(reason: removing member {B.member_id} on heartbeat expiration){end}",
        expired,
        java=java,
    )
    s.generation(G, 8, [ALL_TO_A], expired + 1500)
    out = run(G, s.rows, t + 40_000)
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert expiry["member_id"] == B.member_id and expiry["generation"] == 7
    assert expiry["status"] == "resolved"
    assert expiry["summary"].split(". What to do:")[0] == (
        f"member {B.member_id} of group {G} was silent 12 s against its 10 s session timeout and was removed "
        "(coordinator); generation 7 -> 8"
    )
    assert '"table":"heartbeat_events"' in expiry["evidence"]
    # what to do, with the member's own numbers
    assert (
        "What to do: It was silent 12 s against a session.timeout.ms of 10 s. If the process died"
        in (expiry["summary"])
    )
    (rebalance,) = out.completed()
    assert (rebalance["cause"], rebalance["expired"], rebalance["left"]) == ("heartbeat_expiration", [B.member_id], [])
    # the early warning came first, at 70 % of the session timeout after B's last heartbeat
    (risk,) = out.of_kind("heartbeat_at_risk")
    assert risk["member_id"] == B.member_id
    assert int(risk["detected_at"].timestamp() * 1000) == t + 19_000 + 7_000
    assert risk["status"] == "resolved"


def test_kip848_fenced_session_expired_line() -> None:
    s = Silver()
    t = BASE_MS
    s.kip848_group(G, 3, ("m-a", "m-b"), t)
    gone = t + 50_000
    s.broker(f"[GroupId {G}] Member m-b fenced from the group because its session expired.", gone)
    s.kip848_removal(G, "m-b", 4, gone)
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": G, "memberId": "m-a"},
        {"memberEpoch": 4, "previousMemberEpoch": 3, "state": 0},
        gone + 3000,
    )
    out = run(G, s.rows, gone + 60_000)
    assert out.kinds() == ["heartbeat_expiration"]
    (rebalance,) = out.completed()
    assert (rebalance["from_generation"], rebalance["generation"]) == (3, 4)
    assert (rebalance["cause"], rebalance["expired"]) == ("heartbeat_expiration", ["m-b"])
    assert rebalance["group_protocol"] == "consumer"
    # a KIP-848 group's session timeout is the broker's group config, in no record: said to be assumed, not "its"
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert "the 45 s session timeout radar assumes" in expiry["summary"] and "its 45 s" not in expiry["summary"]


@pytest.mark.parametrize(
    "line",
    [
        f"Attempt to heartbeat with Generation{{generationId=7, memberId='{B.member_id}', protocol='range'}} and "
        "group instance id null failed due to UNKNOWN_MEMBER_ID, resetting generation",
        # AbstractCoordinator 2.8+/3.x/4.x (WARN): cut off from its coordinator past its rebalance timeout
        "Consumer has been disconnected from the group coordinator for 301542ms",
    ],
    ids=["unknown_member_id", "disconnected_from_coordinator"],
)
def test_inferred_expiry_when_the_vanished_member_says_it_is_no_longer_one(line: str) -> None:
    """No broker logs: B vanishes from generation 8 without a leave, then its client says it is no longer a member."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A, B], t)
    s.generation(G, 8, [ALL_TO_A], t + 30_000)
    out_before = run(G, s.rows, t + 35_000)
    assert out_before.kinds() == []
    assert out_before.completed()[0]["left"] == [B.member_id]
    s.client(B.client_id, G, line, t + 40_000)
    out = run(G, s.rows, t + 45_000)
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert expiry["member_id"] == B.member_id
    assert "inferred" in expiry["summary"]
    (rebalance,) = out.completed()
    assert (rebalance["cause"], rebalance["expired"], rebalance["left"]) == ("heartbeat_expiration", [B.member_id], [])


def test_a_stale_heartbeat_error_the_client_ignores_is_not_a_fencing() -> None:
    """The Java client logs "Attempt to heartbeat with stale Generation{...} ... failed due to ILLEGAL_GENERATION,
    ignoring the error" when a heartbeat of its previous generation comes back after it moved on (AbstractCoordinator
    `HeartbeatResponseHandler`, generation changed): it is still a member, so no expiry is inferred from it."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A, B], t)
    s.generation(G, 8, [ALL_TO_A], t + 30_000)
    s.client(
        B.client_id,
        G,
        f"Attempt to heartbeat with stale Generation{{generationId=7, memberId='{B.member_id}', protocol='range'}} "
        "and group instance id null failed due to ILLEGAL_GENERATION, ignoring the error",
        t + 40_000,
    )
    out = run(G, s.rows, t + 45_000)
    assert out.kinds() == []
    assert out.completed()[0]["left"] == [B.member_id]


def test_expiry_in_the_middle_of_a_rebalance_keeps_the_first_cause() -> None:
    s = Silver()
    t = BASE_MS
    c = Member("consumer-orders-3-ccc", [("orders", 4)], client_id="worker-c")
    s.generation(G, 7, [A, B], t)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 7 (reason: Adding new "
        f"member {c.member_id} with group instance id None; client reason: need to re-join with the given "
        "member-id: x).",
        t + 1000,
    )
    s.broker(f"Member {B.member_id} in group {G} has failed, removing it from the group.", t + 5000)
    s.generation(G, 8, [A, c], t + 6000)
    out = run(G, s.rows, t + 60_000)
    (rebalance,) = out.completed()
    assert rebalance["cause"] == "member_joined"
    assert (rebalance["joined"], rebalance["expired"]) == ([c.member_id], [B.member_id])
    assert out.kinds() == ["heartbeat_expiration"]


def test_at_risk_resolves_when_heartbeats_resume() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A], t)
    s.agent("heartbeat", G, t + 1000, member_id=A.member_id, generation=7)
    s.agent("heartbeat", G, t + 2000, member_id=A.member_id, generation=7)
    s.agent("heartbeat", G, t + 10_500, member_id=A.member_id, generation=7)  # 8.5 s gap of a 10 s session
    out = run(G, s.rows, t + 12_000, DetectorThresholds(heartbeat_at_risk_fraction=0.5))
    (risk,) = out.of_kind("heartbeat_at_risk")
    assert risk["status"] == "resolved" and risk["summary"].split(". What to do:")[0].endswith("heartbeats resumed")
    assert int(risk["resolved_at"].timestamp() * 1000) == t + 10_500


def test_describe_snapshots_are_not_heartbeats() -> None:
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A], t)
    s.agent("heartbeat", G, t + 1000, member_id=A.member_id, details={"snapshot": "DescribeGroups"})
    assert run(G, s.rows, t + 60_000).kinds() == []


def test_broker_logs_alone_follow_the_group_and_its_expiry() -> None:
    """No access to __consumer_offsets: joins, prepares, Stabilized lines and the expiry line are enough."""
    s = Silver()
    t = BASE_MS
    for i, member in enumerate((A, B)):
        s.broker(
            f"Dynamic member with unknown member id joins group {G} in Empty state. Created a new member id "
            f"{member.member_id} and request the member to rejoin with this id.",
            t + i,
        )
    s.broker(f"Stabilized group {G} generation 1 with 2 members.", t + 3000)
    s.broker(f"Member {B.member_id} in group {G} has failed, removing it from the group.", t + 60_000)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 1 (reason: removing "
        f"member {B.member_id} on heartbeat expiration).",
        t + 60_000,
    )
    s.broker(f"Stabilized group {G} generation 2 with 1 members.", t + 61_000)
    out = run(G, s.rows, t + 120_000)
    assert out.kinds() == ["heartbeat_expiration"]
    (rebalance,) = out.completed()
    assert (rebalance["from_generation"], rebalance["generation"], rebalance["cause"]) == (1, 2, "heartbeat_expiration")
    assert rebalance["expired"] == [B.member_id]
    assert out.health is not None and (out.health["members"], out.health["generation"]) == (1, 2)


def test_rare_reports_are_not_silence() -> None:
    """Statistics every 35 s against a 45 s session: 35 s of quiet is the usual rhythm, not a risk."""
    s = Silver()
    t = BASE_MS
    slow = Member("slow-reporter", [("orders", 0)], session_timeout_ms=45_000)
    s.generation(G, 7, [slow], t)
    for i in range(0, 300_000, 35_000):
        s.agent("heartbeat", G, t + i, member_id=slow.member_id)
    assert run(G, s.rows, t + 300_000).kinds() == []
    assert run(G, s.rows, t + 300_000, DetectorThresholds(heartbeat_at_risk_fraction=0.3)).kinds() == []


def test_kip848_member_removed_silently_after_its_heartbeats_stopped_is_an_inferred_expiry() -> None:
    s = Silver()
    t = BASE_MS
    s.kip848_group(G, 3, ("m-a", "m-b"), t)
    for i in range(0, 100_000, 5000):
        s.agent("heartbeat", G, t + i, member_id="m-a", member_epoch=3)
        if i <= 10_000:
            s.agent("heartbeat", G, t + i, member_id="m-b", member_epoch=3)
    gone = t + 10_000 + 46_000
    s.kip848_removal(G, "m-b", 4, gone)
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": G, "memberId": "m-a"},
        {"memberEpoch": 4, "previousMemberEpoch": 3, "state": 0},
        gone + 2000,
    )
    out = run(G, s.rows, gone + 10_000)
    assert out.kinds() == ["heartbeat_at_risk", "heartbeat_expiration"]
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert expiry["member_id"] == "m-b" and "inferred" in expiry["summary"]
    (rebalance,) = out.completed()
    assert (rebalance["cause"], rebalance["expired"], rebalance["left"]) == ("heartbeat_expiration", ["m-b"], [])


def test_session_timeout_learnt_from_telemetry_details() -> None:
    """A KIP-848-less view: the member's JoinGroup (protocol frame) announced a 6 s session timeout."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A], t)
    s.agent("join", G, t + 100, member_id=A.member_id, details={"session_timeout_ms": "6000"})
    s.agent("heartbeat", G, t + 1000, member_id=A.member_id)
    s.agent("heartbeat", G, t + 2000, member_id=A.member_id)
    (risk,) = run(G, s.rows, t + 10_000).of_kind("heartbeat_at_risk")
    assert int(risk["detected_at"].timestamp() * 1000) == t + 2000 + 4200
    assert "of its 6 s session timeout" in risk["summary"]


def test_heartbeats_answered_rebalance_in_progress_keep_the_member_alive() -> None:
    """Seed 002: during a rebalance the coordinator answers heartbeats with REBALANCE_IN_PROGRESS; the session
    is still refreshed, so a long rebalance is no silence."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A], t)
    for i in range(0, 60_000, 3000):
        message = "Received successful Heartbeat response" if i < 6000 else "Attempt to heartbeat failed since group "
        s.client(A.client_id, G, message + ("is rebalancing" if i >= 6000 else ""), t + i)
    assert run(G, s.rows, t + 60_000).kinds() == []


@pytest.mark.parametrize("with_failed_line", [False, True], ids=["prepare_line_alone", "both_lines"])
def test_the_coordinators_rebalance_on_heartbeat_expiration_names_the_expired_member(with_failed_line: bool) -> None:
    """ "Preparing to rebalance ... (reason: removing member M on heartbeat expiration)" is the coordinator's removal
    on expiry even when an excerpt (grepped for "Preparing to rebalance") lacks its "Member M ... has failed" line;
    with both lines it is still one detection."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A, B], t)
    if with_failed_line:
        s.broker(f"Member {B.member_id} in group {G} has failed, removing it from the group.", t + 31_000)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 7 (reason: removing member "
        f"{B.member_id} on heartbeat expiration).",
        t + 31_000,
    )
    s.generation(G, 8, [ALL_TO_A], t + 32_500)
    out = run(G, s.rows, t + 60_000)
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert (expiry["member_id"], expiry["generation"]) == (B.member_id, 7)
    assert out.kinds() == ["heartbeat_expiration"]
    (rebalance,) = out.completed()
    assert (rebalance["cause"], rebalance["expired"]) == ("heartbeat_expiration", [B.member_id])


@pytest.mark.parametrize("timeout_known", [True, False], ids=["broker_timeout_known", "timeout_unknown"])
def test_a_kip848_member_heartbeating_until_its_removal_then_fenced_is_no_expiry(timeout_known: bool) -> None:
    """The demo's stuck member: it heartbeats (the agent reports it) while its revocation hangs, the coordinator
    removes it past its rebalance timeout, and its client then hears UNKNOWN_MEMBER_ID. That is no session expiry:
    it was heard 0.5 s before its removal (a heartbeat_expiration "silent 0.1 s against its 6 s session timeout" was
    raised before)."""
    s = Silver()
    t = BASE_MS
    s.kip848_group(G, 3, ("m-a", "m-b"), t)
    gone = t + 20_000
    for i in range(0, 20_000, 1000):
        s.agent("heartbeat", G, t + i, member_id="m-a", member_epoch=3)
        s.agent("heartbeat", G, t + i + 500, member_id="m-b", member_epoch=3)
    s.kip848_removal(G, "m-b", 4, gone)
    s.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": G, "memberId": "m-a"},
        {"memberEpoch": 4, "previousMemberEpoch": 3, "state": 0},
        gone + 500,
    )
    s.agent("heartbeat_failed", G, gone + 1500, member_id="m-b", error="UNKNOWN_MEMBER_ID")
    told = DetectorThresholds(consumer_group_session_timeout_ms=6_000) if timeout_known else DetectorThresholds()
    out = run(G, s.rows, gone + 20_000, told)
    assert "heartbeat_expiration" not in out.kinds(), [d["summary"] for d in out.detections]
    (rebalance,) = out.completed()
    assert rebalance["expired"] == [] and rebalance["left"] == ["m-b"]


OLD_A = Member("A-old", [("orders", 0)], client_id="A", session_timeout_ms=3000)
PEER = Member("B-1", [("orders", 1)], client_id="B", session_timeout_ms=3000)
NEW_A = Member("A-new", [("orders", 0)], client_id="A", session_timeout_ms=3000)


def fenced_and_back(last_paced_ms: int, fenced_ms: int) -> Silver:
    """Generation 2 [A, B] with 3 s sessions and heartbeats every 0.5 s, A's until `last_paced_ms`; at `fenced_ms`
    A's agent says its assignment was lost, with a heartbeat if it was silent until then; generation 3 has A back
    under a new member id 0.4 s later."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 2, [OLD_A, PEER], t)
    for i in range(0, 10_000, 500):
        if i <= last_paced_ms:
            s.agent("heartbeat", G, t + i, member_id=OLD_A.member_id, generation=2, client_id="A")
        s.agent("heartbeat", G, t + i, member_id=PEER.member_id, generation=2, client_id="B")
    lost = {"reason": "assignment lost (session expired or fenced)", "details": {"change": "lost"}}
    s.agent("member_removed", G, t + fenced_ms, member_id=OLD_A.member_id, generation=2, client_id="A", **lost)
    if fenced_ms > last_paced_ms:
        s.agent("heartbeat", G, t + fenced_ms, member_id=OLD_A.member_id, generation=2, client_id="A")
    s.generation(G, 3, [NEW_A, PEER], t + fenced_ms + 400)
    return s


def test_a_paused_member_that_heartbeats_on_waking_then_is_fenced_is_an_inferred_expiry() -> None:
    """A client paused past its session timeout (a GC pause, SIGSTOP): on waking its agent reports a heartbeat and, at
    once, that its assignment was lost; the coordinator's next generation has the client back under a new member id.
    The heartbeat on waking came after the session had expired in the silence, so it is no sign of life: the old
    member expired (librdkafka on a SASL_SSL broker, silent 3.3 s against a 3 s session)."""
    out = run(G, fenced_and_back(1000, 1000 + 3300).rows, BASE_MS + 10_000)
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert expiry["member_id"] == OLD_A.member_id and "inferred" in expiry["summary"], expiry["summary"]
    assert "silent 3.7 s against its 3 s session timeout" in expiry["summary"], expiry["summary"]
    (rebalance,) = [r for r in out.completed() if r["generation"] == 3]
    assert (rebalance["cause"], rebalance["expired"], rebalance["left"]) == ("heartbeat_expiration", ["A-old"], [])


def test_a_member_heartbeating_at_its_usual_pace_until_it_is_fenced_is_no_expiry() -> None:
    """The same fencing, but its heartbeats came at their pace up to it: it was heard alive within its session."""
    out = run(G, fenced_and_back(4000, 4000).rows, BASE_MS + 15_000)
    assert "heartbeat_expiration" not in out.kinds(), [d["summary"] for d in out.detections.values()]
