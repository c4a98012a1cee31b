"""A whole Kafka Streams 4.3.1 client log under the streams protocol, line by line as a line shipper sends it: which
lines give events, which are known to carry none (configuration listings, narration), and that none is left whose
wording radar does not know. The excerpt (`tests/data/streams-client/`, see its README entry) is built from the
format strings of kafka-streams / kafka-clients 4.3.1, the same statements test_streams_log.py cites."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.telemetry.informational import CONFIG_LISTING, KNOWN_NARRATION
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

LOG = Path(__file__).parents[2] / "data" / "streams-client" / "streams-4.3.1-fenced-rejoin.log"
APP = "orders-enricher"


def outcomes() -> list[tuple[str, object]]:
    lines = [line for line in LOG.read_text().splitlines() if line.strip()]
    return [(line, parse_telemetry_record(line.encode(), 1_795_939_200_000)) for line in lines]


def test_the_golden_streams_client_log_leaves_no_line_unknown() -> None:
    parsed = outcomes()
    counts = Counter("events" if o.events else o.reason for _line, o in parsed)  # type: ignore[attr-defined]
    # 346 lines: 104 give events, 155 are the three configuration listings, 87 known narration, 0 unknown
    assert len(parsed) == 346
    assert counts == {"events": 104, CONFIG_LISTING: 155, KNOWN_NARRATION: 87}


def test_every_state_change_assignment_and_fencing_line_gives_its_event() -> None:
    wanted = (
        "State transition from",
        "transitioned from",
        "Assigning active tasks",
        "Processing new assignment",
        "Invoking task",
        "Handle new assignment",
        "Assigned tasks with local epoch",
        "is fenced",
        "now lost active tasks",
        "Revoking",
        "will leave the group",
        "revoke task assignment",
        "Membership is in the following statuses",
    )
    for line, outcome in outcomes():
        if any(keyword in line for keyword in wanted):
            assert outcome.events, line  # type: ignore[attr-defined]


def test_the_fencing_reads_as_the_member_s_fenced_heartbeat_its_state_change_and_its_lost_tasks() -> None:
    events = [e for _line, o in outcomes() for e in o.events]  # type: ignore[attr-defined]
    assert {e.group_id for e in events} == {APP}
    (fenced,) = [e for e in events if e.event is K.HEARTBEAT_FAILED]
    assert (fenced.member_id, fenced.error, fenced.details["protocol"]) == (
        "Hc4RjYe8Q0uNw5DsK2aZtg",
        "FENCED_MEMBER_EPOCH",
        "streams",
    )
    transitions = [
        (e.member_id, e.details["from_state"], e.details["to_state"])
        for e in events
        if e.event is K.STATE_CHANGE and e.details.get("component") == "membership"
    ]
    assert ("Hc4RjYe8Q0uNw5DsK2aZtg", "STABLE", "FENCED") in transitions
    assert ("Hc4RjYe8Q0uNw5DsK2aZtg", "FENCED", "JOINING") in transitions
    (lost,) = [e for e in events if e.event is K.MEMBER_REMOVED]
    assert (lost.details["change"], lost.client_id) == (
        "lost",
        f"{APP}-3f0c9a52-7d1e-4b8a-9c6f-21e5d4b3a701-StreamThread-2-consumer",
    )
    streams_states = [
        (e.details["from_state"], e.details["to_state"])
        for e in events
        if e.event is K.STATE_CHANGE and e.details.get("component") == "kafka_streams"
    ]
    assert streams_states == [
        ("CREATED", "REBALANCING"),
        ("REBALANCING", "RUNNING"),
        ("RUNNING", "REBALANCING"),
        ("REBALANCING", "RUNNING"),
        ("RUNNING", "PENDING_SHUTDOWN"),
        ("PENDING_SHUTDOWN", "NOT_RUNNING"),
    ]
    received = [e.details["active_tasks"] for e in events if e.details.get("change") == "received"]
    assert received == ["0_0,0_2,1_0", "0_1,0_3,1_1", "0_1,0_3,1_1"]
    leaves = [e for e in events if e.event is K.LEAVE]
    assert len(leaves) == 4  # per thread: the thread's announcement and its membership manager's leave (with the id)
    assert {e.member_id for e in leaves} == {None, "q1Xk9zWfS3mT0cVb7nLp2A", "Hc4RjYe8Q0uNw5DsK2aZtg"}
