"""Kafka Streams (KIP-1071) groups on the real embedded broker, through the project's own wire client.

Why: librdkafka cannot create, list or describe streams groups, so the members here are StreamsGroupHeartbeat
dialogues written by hand, and `radar poll-groups` must describe them through `emitters.kafka_wire_client`.
"""

from __future__ import annotations

import contextlib
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from rebalance_radar.emitters.kafka_wire_client import (
    KafkaConnectionError,
    KafkaWireClient,
    KafkaWireError,
    coordinator_client,
)
from rebalance_radar.transforms.schemas import HeartbeatEventKind
from rebalance_radar.transforms.wire.error_codes import error_name
from tests.pipelines.group_member import create_topics, read_records

SOURCE_PARTITIONS = 2
JOIN_TIMEOUT_S = 30.0


def minimal_topology(source_topic: str) -> dict[str, Any]:
    """One subtopology reading one source topic: no state stores, no repartition topics, nothing to create."""
    return {
        "epoch": 0,
        "subtopologies": [
            {
                "subtopologyId": "0",
                "sourceTopics": [source_topic],
                "sourceTopicRegex": [],
                "stateChangelogTopics": [],
                "repartitionSinkTopics": [],
                "repartitionSourceTopics": [],
                "copartitionGroups": [],
            }
        ],
    }


@dataclass
class StreamsMember:
    """A hand-driven streams member: joins with the topology, then acknowledges whatever tasks it is given."""

    client: KafkaWireClient
    group_id: str
    topology: dict[str, Any]
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    process_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = 0
    active_tasks: list[dict[str, Any]] = field(default_factory=list)
    last_status: list[dict[str, Any]] = field(default_factory=list)

    def heartbeat(self) -> dict[str, Any]:
        joining = self.epoch == 0
        response = self.client.streams_group_heartbeat(
            self.group_id,
            self.member_id,
            self.epoch,
            topology=self.topology if joining else None,
            process_id=self.process_id if joining else None,
            rebalance_timeout_ms=30_000 if joining else -1,
            active_tasks=self.active_tasks,  # owned tasks; acknowledging a new assignment is sending it back
            standby_tasks=[],
            warmup_tasks=[],
            # TaskOffsets/TaskEndOffsets stay null: Kafka 4.3 answers INVALID_REQUEST "not supported yet".
            extra={"clientTags": []} if joining else None,
        )
        error = error_name(response.get("errorCode"))
        if error:
            raise AssertionError(f"StreamsGroupHeartbeat for {self.member_id}: {error} {response.get('errorMessage')}")
        self.epoch = response["memberEpoch"]
        if response.get("activeTasks") is not None:  # null means "unchanged since the last heartbeat"
            self.active_tasks = response["activeTasks"]
        self.last_status = response.get("status") or []
        return response

    def leave(self) -> None:
        with contextlib.suppress(KafkaWireError):
            self.client.streams_group_heartbeat(self.group_id, self.member_id, -1)

    def partitions(self) -> set[int]:
        return {p for task in self.active_tasks for p in task.get("partitions") or []}


def join_until_stable(members: list[StreamsMember], timeout_s: float = JOIN_TIMEOUT_S) -> None:
    """Heartbeat every member until all share one epoch and the source partitions are split among them."""
    deadline = time.monotonic() + timeout_s
    while True:
        for member in members:
            member.heartbeat()
        epochs = {m.epoch for m in members}
        owned = [m.partitions() for m in members]
        split = set().union(*owned) == set(range(SOURCE_PARTITIONS)) and sum(map(len, owned)) == SOURCE_PARTITIONS
        if len(epochs) == 1 and split and all(owned):
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"streams members not stable after {timeout_s}s: epochs {epochs}, tasks {owned}, "
                f"status {[m.last_status for m in members]}"
            )
        time.sleep(0.3)


@pytest.fixture(scope="module")
def bootstrap(kafka_broker: Any) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture(scope="module")
def streams_group(bootstrap: str) -> Any:
    """A stable two-member streams group on a two-partition source topic; its members leave at the end."""
    tag = uuid.uuid4().hex[:10]
    source, group_id = f"streams-source-{tag}", f"streams-app-{tag}"
    create_topics(bootstrap, {source: SOURCE_PARTITIONS})
    with KafkaWireClient.from_bootstrap(bootstrap) as seed:
        coordinator = coordinator_client(seed, group_id)
    topology = minimal_topology(source)
    members = [StreamsMember(coordinator, group_id, topology) for _ in range(2)]
    try:
        join_until_stable(members)
        yield group_id, members, coordinator
    finally:
        for member in members:
            member.leave()
        coordinator.close()


def test_describe_streams_group_reports_members_and_epochs(bootstrap: str, streams_group: Any) -> None:
    group_id, members, coordinator = streams_group
    with KafkaWireClient.from_bootstrap(bootstrap) as client:
        listed = client.list_groups(types=["streams"])
    assert any(g.group_id == group_id and g.group_type == "streams" for g in listed), listed

    described = coordinator.describe_streams_groups([group_id, f"absent-{group_id}"])
    by_id = {g["groupId"]: g for g in described}
    group = by_id[group_id]
    assert group["errorCode"] == 0 and group["groupState"] == "Stable", group
    assert error_name(by_id[f"absent-{group_id}"]["errorCode"]) == "GROUP_ID_NOT_FOUND"
    assert group["groupEpoch"] == members[0].epoch and group["assignmentEpoch"] == members[0].epoch
    assert group["topology"]["subtopologies"][0]["subtopologyId"] == "0"
    described_members = {m["memberId"]: m for m in group["members"]}
    assert set(described_members) == {m.member_id for m in members}
    for member in members:
        seen = described_members[member.member_id]
        assert seen["memberEpoch"] == member.epoch
        assert seen["processId"] == member.process_id
        assert {p for t in seen["assignment"]["activeTasks"] for p in t["partitions"]} == member.partitions()


def test_poll_groups_emits_streams_snapshot_events(bootstrap: str, streams_group: Any) -> None:
    from rebalance_radar.emitters.poll_groups import GroupPoller
    from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

    group_id, members, _ = streams_group
    telemetry = f"telemetry-streams-{uuid.uuid4().hex[:10]}"
    create_topics(bootstrap, {telemetry: 1})
    poller = GroupPoller(bootstrap, telemetry, groups=[group_id], timeout_s=10.0)
    assert group_id in GroupPoller(bootstrap, telemetry, timeout_s=10.0).streams_group_ids()  # listed, not given
    counts = poller.run(0, once=True)
    assert (counts.groups, counts.events, counts.failed) == (1, 2, 0)

    events = []
    for value, timestamp_ms in read_records(bootstrap, telemetry, idle_s=1.0):
        outcome = parse_telemetry_record(value, timestamp_ms)
        assert outcome.recognised, outcome.reason
        events.extend(outcome.events)
    assert {e.event for e in events} == {HeartbeatEventKind.HEARTBEAT}
    assert {e.group_id for e in events} == {group_id}
    by_member = {e.member_id: e for e in events}
    assert set(by_member) == {m.member_id for m in members}
    for member in members:
        event = by_member[member.member_id]
        assert event.member_epoch == member.epoch
        assert event.details["type"] == "STREAMS" and event.details["state"] == "STABLE"
        assert event.details["process_id"] == member.process_id
        assert event.details["group_epoch"] == str(member.epoch)
        expected = sorted(f"0_{p}" for p in member.partitions())
        assert sorted(event.details["assignment"].split(",")) == expected


def test_unreachable_broker_raises_a_clear_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(KafkaConnectionError, match=rf"127\.0\.0\.1:{port}"):
        KafkaWireClient("127.0.0.1", port, timeout_s=2.0).find_coordinator("any-group")
    with pytest.raises(KafkaConnectionError, match="no bootstrap broker reachable"):
        KafkaWireClient.from_bootstrap(f"127.0.0.1:{port}", timeout_s=2.0)
    with pytest.raises(KafkaWireError, match="not host:port"):
        KafkaWireClient.from_bootstrap("no-port-here")
