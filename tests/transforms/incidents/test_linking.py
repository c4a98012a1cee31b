"""The linking of rows into cross-group incidents, on rows as the tables hold them: a broker's controlled shutdown
(the coordinator lines a 4.3 cluster wrote in a three-node restart), a coordinator moved without a restart, a
deployment wave, several groups rebalancing with no cause, and what is no incident."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from rebalance_radar.transforms.incidents.inputs import client_id_of_member
from rebalance_radar.transforms.incidents.linking import (
    IncidentSettings,
    client_id_prefix,
    incident_rows_of,
)
from rebalance_radar.transforms.schemas import INCIDENTS, HeartbeatEventKind, IncidentCause, IncidentStatus
from rebalance_radar.transforms.telemetry.broker_log import parse_broker_log_line

pytestmark = pytest.mark.incidents

T0 = 1_796_203_320_000  # 2026-12-02 09:22:00 UTC
K = HeartbeatEventKind


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def event(offset_ms: int, kind: HeartbeatEventKind, broker: str | None, group: str | None = None, **more: Any) -> dict:
    details = {"coordinator": broker} if broker else {}
    details.update({k: str(v) for k, v in more.items()})
    return {
        "cluster": "local",
        "event_time": at(T0 + offset_ms),
        "event": str(kind),
        "group_id": group,
        "details": details,
        "src_topic": "radar.telemetry",
        "src_partition": 0,
        "src_offset": offset_ms,
    }


def rebalance(offset_ms: int, group: str, *members: str) -> dict:
    return {
        "cluster": "local",
        "group_id": group,
        "rebalance_id": f"rb-{group}-{offset_ms}",
        "started_at": at(T0 + offset_ms),
        "joined": list(members),
        "left": [],
        "expired": [],
    }


def detection(offset_ms: int, group: str, kind: str = "heartbeat_expiration") -> dict:
    return {
        "cluster": "local",
        "group_id": group,
        "detection_id": f"det-{group}-{kind}",
        "first_seen": at(T0 + offset_ms),
        "last_seen": at(T0 + offset_ms + 1000),
    }


def events_of_log(lines: list[str]) -> list[dict]:
    """`heartbeat_events` rows as the broker-log parser makes them from real lines."""
    rows = []
    for i, line in enumerate(lines):
        for parsed in parse_broker_log_line(line, 0).events:
            rows.append({**parsed.as_row(), "cluster": "local", "src_topic": "t", "src_partition": 0, "src_offset": i})
    return rows


# What a Kafka 4.3.1 three-node cluster logged when node 2 (coordinator of inc-g3, inc-g6 and inc-g7) was stopped
# with SIGTERM and started again: its own stop and start, the other nodes' loads of its partitions and groups.
RESTART_OF_NODE_2 = [
    "[2026-12-02 09:21:53,080] INFO [GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-9 "
    "with epoch 0 in 27ms where 26ms was spent in the scheduler. Loaded 0 records which total to 0 bytes. "
    "(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
    "[2026-12-02 09:21:53,080] INFO [GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-3 "
    "with epoch 0 in 25ms where 25ms was spent in the scheduler. Loaded 0 records which total to 0 bytes. "
    "(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
    "[2026-12-02 09:21:53,094] INFO [GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-0 "
    "with epoch 0 in 25ms where 25ms was spent in the scheduler. Loaded 0 records which total to 0 bytes. "
    "(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
    "[2026-12-02 09:22:00,871] INFO [BrokerServer id=2] Transition from STARTED to SHUTTING_DOWN "
    "(kafka.server.BrokerServer)",
    "[2026-12-02 09:22:01,215] INFO [GroupCoordinator id=3 topic=__consumer_offsets partition=0] Loaded classic group "
    "inc-g6 with 1 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
    "[2026-12-02 09:22:01,216] INFO [GroupCoordinator id=3] Finished loading of metadata from __consumer_offsets-0 "
    "with epoch 1 in 73ms where 3ms was spent in the scheduler. Loaded 2 records which total to 396 bytes. "
    "(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
    "[2026-12-02 09:22:01,368] INFO [GroupCoordinator id=1] Ignored unloading metadata for __consumer_offsets-0 "
    "in epoch OptionalInt[1] since metadata was never loaded. "
    "(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
    "[2026-12-02 09:22:01,456] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=9] Loaded classic group "
    "inc-g7 with 1 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
    "[2026-12-02 09:22:01,459] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=3] Loaded classic group "
    "inc-g3 with 1 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
    "[2026-12-02 09:22:08,368] INFO [GroupCoordinator id=2] Starting up. "
    "(org.apache.kafka.coordinator.group.GroupCoordinatorService)",
    "[2026-12-02 09:22:08,369] INFO [GroupCoordinator id=2] Startup complete. "
    "(org.apache.kafka.coordinator.group.GroupCoordinatorService)",
    "[2026-12-02 09:22:12,228] INFO [KafkaRaftServer nodeId=2] Kafka Server started (kafka.server.KafkaRaftServer)",
]


def test_a_broker_restart_is_one_incident_naming_the_broker_and_its_groups() -> None:
    events = events_of_log(RESTART_OF_NODE_2)
    rebalances = [rebalance(2_000, "inc-g3"), rebalance(3_000, "inc-g7"), rebalance(400_000, "inc-g3")]
    detections = [detection(5_000, "inc-g7"), detection(900_000, "inc-g7", "rebalance_storm")]
    (row,) = incident_rows_of(rebalances, detections, events, now_ms=T0 + 1_000_000)
    assert tuple(row) == INCIDENTS.column_names
    assert row["cause_kind"] == IncidentCause.BROKER_RESTART
    assert row["broker"] == "2"
    assert row["groups"] == ["inc-g3", "inc-g6", "inc-g7"]
    assert "broker 2 stopped and started" in row["cause"] and "to broker 1, 3" in row["cause"]
    # only the evidence within the window: the rebalance and detection hours later are another story
    assert row["rebalance_ids"] == ["rb-inc-g3-2000", "rb-inc-g7-3000"]
    assert row["detection_ids"] == ["det-inc-g7-heartbeat_expiration"]
    assert row["status"] == IncidentStatus.CLOSED
    assert row["window_start"] == at(T0 + 871) and row["window_end"] == at(T0 + 12_228)
    shown = {e["event"] for e in json.loads(row["evidence"])}
    assert {"group_loaded", "coordinator_loaded", "coordinator_stopping", "coordinator_started"} <= shown


def test_the_same_rows_give_the_same_incident_id_and_the_rebalances_it_explains_no_other_incident() -> None:
    events = events_of_log(RESTART_OF_NODE_2)
    rebalances = [rebalance(2_000, g) for g in ("inc-g3", "inc-g6", "inc-g7")]
    first = incident_rows_of(rebalances, [], events, now_ms=T0 + 1_000_000)
    again = incident_rows_of(list(reversed(rebalances)), [], list(reversed(events)), now_ms=T0 + 1_000_000)
    assert [r["incident_id"] for r in first] == [r["incident_id"] for r in again]
    assert len(first) == 1  # the three rebalances are the restart's, not an "unexplained" incident beside it


def test_an_incident_stays_open_while_its_window_can_grow() -> None:
    (row,) = incident_rows_of([], [], events_of_log(RESTART_OF_NODE_2), now_ms=T0 + 20_000)
    assert row["status"] == IncidentStatus.OPEN


def two_groups_moving(away_from: str, to: str) -> list[dict]:
    """Groups orders and billing, loaded on `away_from`, unloaded there 300 s later and loaded on `to`."""
    return [
        event(0, K.COORDINATOR_LOADED, away_from, offsets_partition=4),
        event(100, K.GROUP_LOADED, away_from, "orders", offsets_partition=4),
        event(200, K.GROUP_LOADED, away_from, "billing", offsets_partition=4),
        event(300_000, K.GROUP_UNLOADED, away_from, "orders", offsets_partition=4),
        event(300_001, K.GROUP_UNLOADED, away_from, "billing", offsets_partition=4),
        event(300_100, K.GROUP_LOADED, to, "orders", offsets_partition=4),
        event(300_100, K.GROUP_LOADED, to, "billing", offsets_partition=4),
    ]


def test_a_coordinator_move_without_a_restart_names_the_broker_the_groups_left() -> None:
    rows = incident_rows_of([], [], two_groups_moving("1", "3"))
    assert [r["cause_kind"] for r in rows] == [IncidentCause.COORDINATOR_MOVED, IncidentCause.COORDINATOR_MOVED]
    moved = rows[1]
    assert moved["broker"] == "1" and moved["groups"] == ["billing", "orders"]
    assert moved["cause"].startswith("the coordinator of 2 groups moved away from broker 1 to broker 3")


def test_a_3x_coordinator_move_in_the_scala_wording() -> None:
    lines = [
        "[2024-05-01 10:00:00,000] INFO [GroupCoordinator 1]: Loading group metadata for orders with generation 4 "
        "(kafka.coordinator.group.GroupCoordinator)",
        "[2024-05-01 10:00:00,010] INFO [GroupCoordinator 1]: Loading group metadata for billing with generation 9 "
        "(kafka.coordinator.group.GroupCoordinator)",
        "[2024-05-01 10:30:00,000] INFO [KafkaServer id=1] shutting down (kafka.server.KafkaServer)",
        "[2024-05-01 10:30:00,100] INFO [GroupCoordinator 1]: Unloading group metadata for orders with generation 4 "
        "(kafka.coordinator.group.GroupCoordinator)",
        "[2024-05-01 10:30:00,101] INFO [GroupCoordinator 1]: Unloading group metadata for billing with generation 9 "
        "(kafka.coordinator.group.GroupCoordinator)",
        "[2024-05-01 10:30:00,300] INFO [GroupCoordinator 2]: Loading group metadata for orders with generation 4 "
        "(kafka.coordinator.group.GroupCoordinator)",
        "[2024-05-01 10:30:00,301] INFO [GroupCoordinator 2]: Loading group metadata for billing with generation 9 "
        "(kafka.coordinator.group.GroupCoordinator)",
    ]
    rows = incident_rows_of([], [], events_of_log(lines))
    assert rows[-1]["cause_kind"] == IncidentCause.BROKER_RESTART
    assert rows[-1]["broker"] == "1" and rows[-1]["cause"].startswith("broker 1 stopped: ")


def test_a_deployment_wave_names_the_hosts_and_client_id_prefixes_that_restarted() -> None:
    uuid = "0f8c1d2e-3a4b-4c5d-8e9f-a0b1c2d3e4f5"
    rebalances = [
        rebalance(0, "orders", f"checkout-7f9c8d6b5-x2kqz-{uuid}"),
        rebalance(20_000, "billing", f"checkout-7f9c8d6b5-p8wrt-{uuid}"),
        rebalance(45_000, "payments", f"checkout-7f9c8d6b5-x2kqz-{uuid}"),
        rebalance(50_000, "audit", f"audit-1-{uuid}"),
    ]
    sightings = [
        {
            "cluster": "local",
            "group_id": group,
            "event_time": at(T0 + offset),
            "event": "join",
            "member_id": None,
            "client_id": None,
            "host": "10.1.4.7",
        }
        for group, offset in (("orders", 100), ("billing", 20_100))
    ]
    (row,) = incident_rows_of(rebalances, [], sightings)
    assert row["cause_kind"] == IncidentCause.DEPLOYMENT_WAVE
    assert row["groups"] == ["billing", "orders", "payments"]  # audit rebalanced too, for a cause of its own
    assert "hosts 10.1.4.7" in row["cause"] and "client-id prefixes checkout" in row["cause"]
    assert row["broker"] is None


def test_several_groups_with_no_common_cause_are_unexplained_and_two_are_no_incident() -> None:
    three = [rebalance(0, "a"), rebalance(10_000, "b"), rebalance(30_000, "c")]
    (row,) = incident_rows_of(three, [detection(500, "b")], [])
    assert row["cause_kind"] == IncidentCause.UNEXPLAINED and row["groups"] == ["a", "b", "c"]
    assert row["detection_ids"] == ["det-b-heartbeat_expiration"]
    assert incident_rows_of(three[:2], [], []) == []
    # rebalances further apart than the window are separate chains
    apart = [rebalance(0, "a"), rebalance(120_000, "b"), rebalance(240_000, "c")]
    assert incident_rows_of(apart, [], []) == []


def test_a_single_group_moving_or_rebalancing_is_no_incident() -> None:
    events = [event(0, K.GROUP_LOADED, "1", "orders"), event(10, K.COORDINATOR_STOPPING, "2")]
    assert incident_rows_of([rebalance(0, "orders"), rebalance(1000, "orders")], [], events) == []


def test_the_window_is_a_setting() -> None:
    rows = [rebalance(0, "a"), rebalance(10_000, "b"), rebalance(20_000, "c")]
    assert len(incident_rows_of(rows, [], [])) == 1
    assert incident_rows_of(rows, [], [], IncidentSettings(window_ms=5_000)) == []


@pytest.mark.parametrize(
    ("client_id", "prefix"),
    [
        ("checkout-7f9c8d6b5-x2kqz", "checkout"),
        ("orders-worker-3", "orders-worker"),
        ("rdkafka", None),
        ("consumer-orders-1", "consumer-orders"),
        ("billing", "billing"),
    ],
)
def test_client_id_prefix(client_id: str, prefix: str | None) -> None:
    assert client_id_prefix(client_id) == prefix


def test_a_classic_member_id_carries_its_client_id_and_a_kip848_one_none() -> None:
    assert client_id_of_member("svc-2-8cab7362-6705-4e59-b14c-2bd408290961") == "svc-2"
    assert client_id_of_member("Zk9mQ2xJTXV0WEZ3a1R3dw") is None


def test_a_single_broker_restarted_reloads_its_groups() -> None:
    events = [
        event(0, K.GROUP_LOADED, "1", "orders", offsets_partition=3),
        event(10, K.GROUP_LOADED, "1", "billing", offsets_partition=7),
        event(900_000, K.COORDINATOR_STARTED, "1"),
        event(901_000, K.GROUP_LOADED, "1", "orders", offsets_partition=3),
        event(901_010, K.GROUP_LOADED, "1", "billing", offsets_partition=7),
    ]
    restart = incident_rows_of([], [], events)[-1]
    assert restart["cause_kind"] == IncidentCause.BROKER_RESTART and restart["broker"] == "1"
    assert restart["cause"] == "broker 1 started: it loaded the coordinator of 2 groups again (billing, orders)"


def test_a_restart_whose_stop_line_never_reached_the_log_is_still_a_restart_and_the_cluster_start_is_not_in_it() -> (
    None
):
    lines = [line for line in RESTART_OF_NODE_2 if "SHUTTING_DOWN" not in line]
    lines.insert(
        0,
        "[2026-12-02 09:21:50,126] INFO [KafkaRaftServer nodeId=2] Kafka Server started (kafka.server.KafkaRaftServer)",
    )
    (row,) = incident_rows_of([], [], events_of_log(lines))
    assert row["cause_kind"] == IncidentCause.BROKER_RESTART and row["broker"] == "2"
    assert row["cause"].startswith("broker 2 restarted: the coordinator of 3 groups moved to broker 1, 3")
    assert row["window_start"] == at(T0 + 1_215)  # its first group move, not the cluster's start at 09:21:50
    assert row["window_end"] == at(T0 + 12_228)


def test_a_broker_that_starts_again_minutes_after_its_groups_left_was_restarted_and_one_that_never_does_was_not() -> (
    None
):
    """A restarted broker's start can come well after a window (its logs recovered; a loaded host: 69 s in a CI
    recording): its first start within `max_span_ms` of the move names the restart, with that start as evidence."""
    moved = two_groups_moving("2", "3")
    late_start = event(300_100 + 69_000, K.COORDINATOR_STARTED, "2")
    row = incident_rows_of([], [], [*moved, late_start])[-1]
    assert row["cause_kind"] == IncidentCause.BROKER_RESTART and row["broker"] == "2"
    assert row["cause"].startswith("broker 2 restarted: the coordinator of 2 groups moved to broker 3")
    assert row["window_end"] == at(T0 + 300_100 + 69_000)
    too_late = event(300_100 + 601_000, K.COORDINATOR_STARTED, "2")  # past `max_span_ms`: another story
    row = incident_rows_of([], [], [*moved, too_late])[-1]
    assert row["cause_kind"] == IncidentCause.COORDINATOR_MOVED


# A Kafka 4.3.1 three-node cluster, started seconds before, under load (CI), when node 3 (coordinator of
# incident-g0, -g1 and -g3) was stopped and started again: it logged no unloading on its way down, and each new owner
# logged its partition's load in the millisecond of the groups it loaded from it (events of one time are taken
# partition load first).
RESTART_OF_NODE_3_WITHOUT_UNLOADING = [
    *(
        f"[2026-12-04 09:39:14,{ms}] INFO [KafkaRaftServer nodeId={node}] Kafka Server started "
        "(kafka.server.KafkaRaftServer)"
        for ms, node in (("208", 1), ("311", 2), ("392", 3))
    ),
    *(
        f"[2026-12-04 09:39:19,491] INFO [GroupCoordinator id=3] Finished loading of metadata from "
        f"__consumer_offsets-{p} with epoch 0 in 12ms where 11ms was spent in the scheduler. Loaded 0 records which "
        "total to 0 bytes. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)"
        for p in (1, 8, 9)
    ),
    "[2026-12-04 09:39:23,829] INFO [BrokerServer id=3] Transition from STARTED to SHUTTING_DOWN "
    "(kafka.server.BrokerServer)",
    *(
        line
        for ms, node, p, group in (
            ("503", 2, 8, "incident-g0"),
            ("505", 1, 9, "incident-g1"),
            ("530", 1, 1, "incident-g3"),
        )
        for line in (
            f"[2026-12-04 09:39:24,{ms}] INFO [GroupCoordinator id={node} topic=__consumer_offsets partition={p}] "
            f"Loaded classic group {group} with 1 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
            f"[2026-12-04 09:39:24,{ms}] INFO [GroupCoordinator id={node}] Finished loading of metadata from "
            f"__consumer_offsets-{p} with epoch 1 in 179ms where 3ms was spent in the scheduler. Loaded 2 records "
            "which total to 469 bytes. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
        )
    ),
    "[2026-12-04 09:39:44,309] INFO [GroupCoordinator id=3] Starting up. "
    "(org.apache.kafka.coordinator.group.GroupCoordinatorService)",
    "[2026-12-04 09:39:45,086] INFO [KafkaRaftServer nodeId=3] Kafka Server started (kafka.server.KafkaRaftServer)",
]


def test_groups_loaded_after_their_new_owners_partition_load_left_the_broker_it_took_the_partition_from() -> None:
    (row,) = incident_rows_of([], [], events_of_log(RESTART_OF_NODE_3_WITHOUT_UNLOADING))
    assert row["cause_kind"] == IncidentCause.BROKER_RESTART and row["broker"] == "3", row["cause"]
    assert row["groups"] == ["incident-g0", "incident-g1", "incident-g3"]
    assert row["cause"].startswith("broker 3 stopped and started: the coordinator of 3 groups moved to broker 1, 2")


def test_a_broker_that_loads_its_own_partition_again_took_it_from_no_one() -> None:
    """Partition 4 moved from broker 2 to broker 1 long ago; broker 1's restart loads it again, with two groups radar
    has not seen before: they came from broker 1 itself, not from the broker it once took the partition from."""
    moved_long_ago = [
        event(0, K.COORDINATOR_LOADED, "2", offsets_partition=4),
        event(1_000, K.COORDINATOR_LOADED, "1", offsets_partition=4),
    ]
    restart = [
        event(900_000, K.COORDINATOR_STARTED, "1"),
        event(901_000, K.COORDINATOR_LOADED, "1", offsets_partition=4),
        event(901_000, K.GROUP_LOADED, "1", "orders", offsets_partition=4),
        event(901_000, K.GROUP_LOADED, "1", "billing", offsets_partition=4),
    ]
    row = incident_rows_of([], [], [*moved_long_ago, *restart])[-1]
    assert row["cause_kind"] == IncidentCause.BROKER_RESTART and row["broker"] == "1", row["cause"]
    assert "broker 2" not in row["cause"], row["cause"]
