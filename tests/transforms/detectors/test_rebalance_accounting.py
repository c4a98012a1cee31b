"""Rebalance accounting per attempt (issue 53): every join, leave and expiry is counted by the rebalance it happened
in, also when that rebalance was already running (a KIP-1071/848 rebalance that does not converge takes each later
epoch bump into itself), a departure is counted by one rebalance only, and a rebalance keeps every cause it had.

Driven by the 4.3.1 coordinator's log of a real Kafka Streams application (`tests/data/streams-app/broker.log`,
recorded by tests/pipelines/test_streams_app.py) and, for the records the live test reads from
`__consumer_offsets` too, by the records the coordinator writes for the same sequences (`StreamsCoordinator`)."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rebalance_radar.transforms.detectors.groups.group import EPOCH_BATCH_MS
from rebalance_radar.transforms.telemetry.log_line import timestamp_ms_in_text
from tests.transforms.detectors.silver_rows import BASE_MS, Outcome, Silver, run
from tests.transforms.detectors.test_streams_groups import APP, StreamsCoordinator

RECORDED = Path(__file__).parents[2] / "data" / "streams-app" / "broker.log"
JOINS = re.compile(r"\[GroupId (?P<group>[^\]]+)\]\[MemberId (?P<member>[^\]]+)\] Member joins the streams group")
FENCED = re.compile(r"\[GroupId (?P<group>[^\]]+)\] Streams member (?P<member>\S+) fenced from the group because")
LEFT = re.compile(r"\[GroupId (?P<group>[^\]]+)\]\[MemberId [^\]]+\] Member (?P<member>\S+) left the streams group")


def _ms(at: datetime | int) -> int:
    return at if isinstance(at, int) else int(at.replace(tzinfo=at.tzinfo or UTC).timestamp() * 1000)


def _holding(out: Outcome, column: str, member: str) -> list[dict[str, Any]]:
    """The completed rebalances that list `member` in `column`."""
    return [r for r in out.completed() if member in r[column]]


def _happened_in(row: dict[str, Any], at_ms: int, lead_ms: int = 0) -> bool:
    """`at_ms` is inside the rebalance (or, for a join, logged just before the epoch bump that opened it)."""
    return _ms(row["started_at"]) - lead_ms <= at_ms <= _ms(row["stabilized_at"])


def _replay_recording(prefix: str) -> tuple[str, list[str], Outcome]:
    lines = RECORDED.read_text().splitlines()
    group = next(m["group"] for line in lines if (m := JOINS.search(line)) and m["group"].startswith(prefix))
    s = Silver()
    last = BASE_MS
    for line in lines:
        at = timestamp_ms_in_text(line, 0)
        assert at is not None, line
        last = max(last, at)
        s._telemetry(line.encode(), at)
    mine = [line for line in lines if f"[GroupId {group}]" in line]
    return group, mine, run(group, s.rows, last + 3_600_000)


def _said(pattern: re.Pattern[str], lines: list[str]) -> list[tuple[str, int]]:
    return [(m["member"], timestamp_ms_in_text(line, 0) or 0) for line in lines if (m := pattern.search(line))]


@pytest.mark.skipif(not RECORDED.exists(), reason="no recording of the Kafka Streams test app")
def test_the_recorded_streams_crash_loop_counts_each_restart_and_each_expiry_where_it_happened() -> None:
    """One instance SIGKILLed five times and restarted (a new member id each time): the group's rebalances do not
    converge between restarts, yet each restart is a join of the rebalance it joined, each fencing an expiry of
    the rebalance it happened in, and a rebalance with both says so in its cause."""
    _, lines, out = _replay_recording("streams-crash-loop")
    joins, fenced = _said(JOINS, lines), _said(FENCED, lines)
    assert len(joins) == 6 and len(fenced) == 5  # the survivor and five incarnations of the killed instance
    for member, at in joins:
        holding = _holding(out, "joined", member)
        assert len(holding) == 1, (member, [r["joined"] for r in out.completed()])
        assert _happened_in(holding[0], at, EPOCH_BATCH_MS), (member, holding[0])
    for member, at in fenced:
        holding = _holding(out, "expired", member)
        assert len(holding) == 1, (member, [r["expired"] for r in out.completed()])
        assert _happened_in(holding[0], at), (member, holding[0])
    for row in out.completed():
        if row["joined"] and row["expired"]:
            assert row["cause"] in ("member_joined", "heartbeat_expiration"), row
            other = "heartbeat_expiration" if row["cause"] == "member_joined" else "member_joined"
            assert other in row["cause_detail"], row
            assert all(m in row["cause_detail"] for m in row["joined"] + row["expired"]), row


@pytest.mark.skipif(not RECORDED.exists(), reason="no recording of the Kafka Streams test app")
def test_the_recorded_healthy_streams_application_lists_each_leave_once() -> None:
    _, lines, out = _replay_recording("streams-healthy")
    left = _said(LEFT, lines)
    assert len(left) == 3
    for member, at in left:
        holding = _holding(out, "left", member)
        assert len(holding) == 1, (member, [r["left"] for r in out.completed()])
        assert _happened_in(holding[0], at), (member, holding[0])


def _crash_loop(coordinator: StreamsCoordinator, restarts: int) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """What 4.3.1 writes when a member is killed and restarted `restarts` times beside a steady one: each restart
    joins under a new member id seconds after the kill and never reaches the target epoch before it is killed in
    turn; the broker fences each dead member ten seconds after its last heartbeat. Returns (joins, fencings)."""
    t = BASE_MS
    coordinator.join("steady", t)
    coordinator.bump("steady", t)
    coordinator.stable("steady", "0-0@1, 0-1@1", t + 300)
    joins: list[tuple[str, int]] = []
    fencings: list[tuple[str, int]] = []
    at = t + 10_000
    for i in range(restarts + 1):
        member = f"crashing-{i}"
        coordinator.join(member, at)
        coordinator.bump(member, at)
        coordinator.stable("steady", "0-0@1", at + 100)
        joins.append((member, at))
        if i > 0:  # the previous incarnation's session runs out a few seconds after this one joined
            fencings.append(_fence(coordinator, f"crashing-{i - 1}", at + 3_000))
        at += 4_000
    fencings.append(_fence(coordinator, f"crashing-{restarts}", at + 6_000))
    coordinator.stable("steady", "0-0@1, 0-1@1", at + 6_400)
    return joins, fencings


def _fence(coordinator: StreamsCoordinator, member: str, at: int) -> tuple[str, int]:
    coordinator.line(None, f"Streams member {member} fenced from the group because the member session expired..", at)
    coordinator.gone(member, at)
    coordinator.bump(None, at, logged=False)
    coordinator.stable("steady", "0-0@1", at + 200)
    return member, at


@pytest.mark.parametrize("records", [True, False], ids=["records and log", "log alone"])
def test_every_restart_of_a_streams_crash_loop_is_a_join_and_every_fencing_an_expiry(records: bool) -> None:
    s = Silver()
    joins, fencings = _crash_loop(StreamsCoordinator(s, records), restarts=4)
    out = run(APP, s.rows, fencings[-1][1] + 3_600_000)
    completed = out.completed()
    assert completed and all(r["stabilized_at"] is not None for r in out.rebalances.values())
    for member, at in joins:
        holding = _holding(out, "joined", member)
        assert len(holding) == 1, (member, [(r["joined"], r["expired"]) for r in completed])
        assert _happened_in(holding[0], at, EPOCH_BATCH_MS), (member, holding[0])
    for member, at in fencings:
        holding = _holding(out, "expired", member)
        assert len(holding) == 1, (member, [(r["joined"], r["expired"]) for r in completed])
        assert _happened_in(holding[0], at), (member, holding[0])
    merged = [r for r in completed if r["joined"] and r["expired"]]
    assert merged, [(r["joined"], r["expired"]) for r in completed]
    for row in merged:  # the join that started it, and the expirations it took in: both causes kept
        assert row["cause"] == "member_joined", row
        assert "heartbeat_expiration (expired: " in row["cause_detail"], row


@pytest.mark.parametrize("record_first", [True, False], ids=["records before the line", "line before the records"])
def test_members_leaving_seconds_apart_are_each_listed_once(record_first: bool) -> None:
    """A streams application shut down one instance at a time, less than the coordinator's batch window apart
    (1.5 s): the removal the coordinator wrote with one epoch bump is not counted again by the next bump's
    rebalance, whichever of its record and its log line comes first."""
    s = Silver()
    coordinator = StreamsCoordinator(s, records=True)
    t = BASE_MS
    for member in ("a", "b", "c"):
        coordinator.join(member, t)
    coordinator.bump("c", t)
    for member, tasks in (("a", "0-0@1"), ("b", "0-1@1"), ("c", "0-2@1")):
        coordinator.stable(member, tasks, t + 200)
    at = t + 60_000
    stays = {"c": ("a", "b"), "b": ("a",), "a": ()}
    for member in ("c", "b", "a"):
        if record_first:
            coordinator.gone(member, at)
            coordinator.line(member, f"Member {member} left the streams group.", at + 1)
        else:
            coordinator.line(member, f"Member {member} left the streams group.", at)
            coordinator.gone(member, at + 1)
        coordinator.bump(None, at + 1, logged=False)
        for stay in stays[member]:
            coordinator.stable(stay, "0-0@1", at + 300)
        at += 1_500

    out = run(APP, s.rows, at + 3_600_000)
    completed = out.completed()
    assert [r["left"] for r in completed[-3:]] == [["c"], ["b"], ["a"]], [r["left"] for r in completed]
    assert Counter(m for r in completed for m in r["left"]) == {"a": 1, "b": 1, "c": 1}
    assert [r["cause"] for r in completed[-3:]] == ["member_left"] * 3
    assert out.kinds() == []


@pytest.mark.parametrize("records", [True, False], ids=["records and log", "log alone"])
def test_a_member_fenced_and_back_under_its_id_inside_a_running_rebalance_is_still_an_expiry(records: bool) -> None:
    """KIP-1071/848 clients keep their member id across a fencing: a member whose session expired while a join's
    rebalance was still converging, and that rejoined before it converged, was fenced in that rebalance all the
    same (and joined it again)."""
    s = Silver()
    coordinator = StreamsCoordinator(s, records)
    t = BASE_MS
    for member in ("a", "b"):
        coordinator.join(member, t)
    coordinator.bump("b", t)
    coordinator.stable("a", "0-0@1", t + 200)
    coordinator.stable("b", "0-1@1", t + 200)
    at = t + 60_000
    coordinator.join("c", at)
    coordinator.bump("c", at)
    coordinator.stable("a", "0-0@1", at + 100)  # c waits for b's task; b is paused and does not heartbeat
    fenced = at + 10_000
    coordinator.line(None, "Streams member b fenced from the group because the member session expired..", fenced)
    coordinator.gone("b", fenced)
    coordinator.bump(None, fenced, logged=False)
    back = fenced + 2_000
    coordinator.join("b", back)
    coordinator.bump("b", back)
    for member, tasks in (("a", "0-0@1"), ("b", "0-1@4"), ("c", "")):
        coordinator.stable(member, tasks, back + 500)

    out = run(APP, s.rows, back + 3_600_000)
    last = out.completed()[-1]
    assert (last["from_generation"], last["generation"]) == (1, 4), last
    assert (last["joined"], last["left"], last["expired"]) == (["b", "c"], [], ["b"]), last
    assert last["cause"] == "member_joined" and "heartbeat_expiration (expired: b)" in last["cause_detail"], last


CLASSIC_RECORDED = Path(__file__).parents[2] / "data" / "streams-classic" / "crash-loop-broker.log"
CLASSIC_JOINS = re.compile(r"Pending dynamic member with id (?P<member>\S+) joins group")


def test_a_classic_groups_joins_logged_before_its_prepare_are_that_rebalances_joins() -> None:
    """tests/data/streams-classic, read from the coordinator's log alone: the 4.3.1 coordinator logs a member's join
    ("Pending dynamic member ... Adding to the group now.") just before the "Preparing to rebalance" it causes, so each
    generation lists the member whose join it was for, and the group's first generation started empty."""
    lines = CLASSIC_RECORDED.read_text().splitlines()
    s = Silver()
    at = BASE_MS
    for line in lines:
        at = timestamp_ms_in_text(line, 0) or at
        s._telemetry(line.encode(), at)
    out = run("streams-classic-crash-loop", s.rows, at + 3_600_000)
    completed = out.completed()
    joins = _said(CLASSIC_JOINS, lines)
    assert len(joins) == 6  # the steady instance, and the crashing one's five restarts
    for member, joined_at in joins:
        holding = _holding(out, "joined", member)
        assert len(holding) == 1, (member, [r["joined"] for r in completed])
        assert _happened_in(holding[0], joined_at, EPOCH_BATCH_MS), (member, holding[0])
    first = completed[0]
    assert (first["from_generation"], first["members_before"], first["members_after"]) == (0, 0, 1), first


def test_a_scala_coordinators_excerpt_counts_the_members_its_stabilized_line_names() -> None:
    """A 3.x (Scala) coordinator logs a dynamic member's join at DEBUG: at INFO the "Preparing to rebalance ... (reason:
    Adding new member M ...)" is the only trace of it, and "Stabilized group G generation N (...) with K members" the
    only count of members whose joins the log never showed (here the one already in the group when the excerpt
    begins). An excerpt of prepares alone still shows the leave its "Removing member M on LeaveGroup" names."""
    s = Silver()
    group, t = "orders", BASE_MS

    def scala_rebalance(old_generation: int, reason: str, members: int, at: int) -> None:
        """The two lines a 3.x coordinator writes at INFO for a rebalance: its prepare, and its end 3 s later."""
        partition = "(__consumer_offsets-12)"
        s.broker(
            f"Preparing to rebalance group {group} in state PreparingRebalance with old generation {old_generation} "
            f"{partition} (reason: {reason})",
            at,
            java=False,
        )
        stable = f"Stabilized group {group} generation {old_generation + 1} {partition} with {members} members"
        s.broker(stable, at + 3_000, java=False)

    newcomer = "consumer-orders-2-4f1c7a9e-1c0d-4a35-9b7e-2d0f8a6b5c3e"
    joining = f"Adding new member {newcomer} with group instance id None"
    scala_rebalance(4, f"{joining}; client reason: need to re-join with the given member-id: {newcomer}", 2, t)
    static = "consumer-orders-3-8a2b6c4d-0e1f-4a5b-8c7d-9e0f1a2b3c4d"
    scala_rebalance(5, f"Adding new member {static} with group instance id Some(orders-3)", 3, t + 60_000)
    leaving = f"Removing member {newcomer} on LeaveGroup; client reason: the consumer is being closed"
    scala_rebalance(6, leaving, 2, t + 120_000)
    first = "consumer-orders-1-0b9e8d7c-6f5a-4e3d-9c2b-1a0f9e8d7c6b"  # in the group before the excerpt: no join
    scala_rebalance(
        7,
        f"Updating metadata for member {first} during Stable; client reason: rebalance enforced by user",
        2,
        t + 180_000,
    )

    out = run(group, s.rows, t + 3_600_000)
    rows = [
        (
            r["from_generation"],
            r["generation"],
            r["cause"],
            r["joined"],
            r["left"],
            r["members_before"],
            r["members_after"],
        )
        for r in out.completed()
    ]
    assert rows == [
        (4, 5, "member_joined", [newcomer], [], 0, 2),  # how many it had before the excerpt, its log does not say
        (5, 6, "member_joined", [static], [], 2, 3),
        (6, 7, "member_left", [], [newcomer], 3, 2),
        (7, 8, "enforced", [], [], 2, 2),
    ], rows
    assert out.kinds() == []
