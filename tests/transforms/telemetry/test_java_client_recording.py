"""Whole logs written by Apache Kafka's own Java client (kafka-clients 4.3.1, log4j2, an application's layout),
recorded on the embedded broker by `tests/pipelines/test_detect_live.py`'s Java scenarios: member A stalled past
its session timeout, resumed, its commit refused, rejoined (`tests/data/java-client/`). Every line is parsed as a
shipped record; what the detectors need from such a member is read, and nothing else is made up."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

RECORDED = Path(__file__).parents[2] / "data" / "java-client"
CLASSIC_GROUP = "group-java-classic-zombie-1795764348136170087"
CLASSIC_A = "java-classic-zombie-A-a5842471-7afe-4d53-a481-2e831314038f"
CLASSIC_A_AFTER = "java-classic-zombie-A-a7abe9b3-78d3-4bbd-9108-8a78edc55e81"
KIP848_GROUP = "group-java-kip848-zombie-1795764364182039977"
KIP848_A = "Wda2JACoR0uetLXM6yxYvA"


def recorded_events(name: str) -> list[HeartbeatEvent]:
    events: list[HeartbeatEvent] = []
    for line in (RECORDED / name).read_text().splitlines():
        if line.strip():
            events.extend(parse_telemetry_record(line.encode(), 0).events)
    return events


def of_kind(events: list[HeartbeatEvent], kind: K) -> list[HeartbeatEvent]:
    return [e for e in events if e.event is kind]


def test_classic_member_stalled_then_refused() -> None:
    events = recorded_events("classic-zombie-A.log")
    grouped = [e for e in events if e.group_id is not None]
    assert {e.group_id for e in grouped} == {CLASSIC_GROUP}
    assert {e.client_id for e in grouped} == {"java-classic-zombie-A"}
    # generations joined: 1 (alone), 2 (B joined), then 4 under a new member id after the refused commit
    joined = [(e.member_id, e.generation) for e in of_kind(events, K.JOIN) if e.details.get("phase") == "joined"]
    assert joined == [(CLASSIC_A, 1), (CLASSIC_A, 2), (CLASSIC_A_AFTER, 4)]
    # the heartbeat thread, resumed: its session had timed out; the coordinator no longer knows the member
    (timed_out,) = of_kind(events, K.SESSION_TIMEOUT)
    assert timed_out.reason == "session timed out without receiving a heartbeat response"
    failed = of_kind(events, K.HEARTBEAT_FAILED)
    (refused_heartbeat,) = [e for e in failed if e.details.get("cause") != "coordinator_unavailable"]
    assert (refused_heartbeat.member_id, refused_heartbeat.generation, refused_heartbeat.error) == (
        CLASSIC_A,
        2,
        "UNKNOWN_MEMBER_ID",
    )
    # the coordinator lost and found again: at the start (NOT_COORDINATOR while the broker loaded the group) and
    # twice more around the session timeout ("coordinator unavailable", no error named; the timeout itself is the
    # session_timeout above)
    lost_coordinator = [e.error for e in failed if e.details.get("cause") == "coordinator_unavailable"]
    assert lost_coordinator == ["NOT_COORDINATOR", None, None]
    # the refused commit: per partition (ERROR, no member), and with the generation it was sent in (INFO)
    refused = [(e.group_id, e.member_id, e.generation, e.error) for e in of_kind(events, K.COMMIT_FAILED)]
    assert (CLASSIC_GROUP, None, None, "UNKNOWN_MEMBER_ID") in refused
    assert (CLASSIC_GROUP, CLASSIC_A, 2, "UNKNOWN_MEMBER_ID") in refused
    # the application's stack trace line (no `[Consumer ...]` prefix) names no group: it can key no tracker
    assert [r for r in refused if r[0] != CLASSIC_GROUP] == [(None, None, None, None)]
    (lost,) = of_kind(events, K.MEMBER_REMOVED)
    assert lost.details["change"] == "lost"


def test_kip848_member_stalled_then_refused() -> None:
    events = recorded_events("kip848-zombie-A.log")
    assert {e.group_id for e in events} == {KIP848_GROUP}
    # a lost coordinator (NOT_COORDINATOR ..., cause coordinator_unavailable) is not a fencing
    (fenced,) = [e for e in of_kind(events, K.HEARTBEAT_FAILED) if e.details.get("cause") != "coordinator_unavailable"]
    assert (fenced.member_id, fenced.error, fenced.details["protocol"]) == (KIP848_A, "UNKNOWN_MEMBER_ID", "consumer")
    # CommitRequestManager's line names no member: the detector attributes it by client id (commit_rules.attribute)
    (refused,) = of_kind(events, K.COMMIT_FAILED)
    assert (refused.member_id, refused.client_id, refused.error) == (None, "java-kip848-zombie-A", "UNKNOWN_MEMBER_ID")
    (lost,) = of_kind(events, K.MEMBER_REMOVED)
    assert lost.details["change"] == "lost"
    # the partitions it gave back, once: the membership manager's "Revoking previously assigned partitions" restates
    # the listener invoker's "Revoke previously assigned partitions" (both logged, 3.7+), only the latter is read
    (revoked,) = [e for e in of_kind(events, K.ASSIGNMENT) if e.details.get("change") == "revoked"]
    assert revoked.details["partition_count"] == "2"
    # the KIP-848 client logs no join/sync lines: its membership is the broker's records and log
    assert not of_kind(events, K.JOIN) and not of_kind(events, K.SYNC)


@pytest.mark.parametrize("name", ["classic-zombie-A.log", "kip848-zombie-A.log"])
def test_state_transitions_of_the_kip848_client_are_state_changes(name: str) -> None:
    """The KIP-848 client's "Member M with epoch E transitioned from S1 to S2." is a state change, FENCED included
    (the heartbeat failure before it is the fencing the detectors read)."""
    lines = [line for line in (RECORDED / name).read_text().splitlines() if " transitioned from " in line]
    assert bool(lines) is name.startswith("kip848")
    for line in lines:
        (event,) = parse_telemetry_record(line.encode(), 0).events
        assert (event.event, event.member_id, event.details["protocol"]) == (K.STATE_CHANGE, KIP848_A, "consumer")
