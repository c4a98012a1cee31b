"""The coordinator's moves and its broker's start and stop, in the wording of Kafka's sources: 3.9.1 Scala
`GroupMetadataManager`/`GroupCoordinator`, 4.3.1 `CoordinatorRuntime` (kafka-coordinator-common),
`GroupMetadataManager` and `GroupCoordinatorService` (kafka-group-coordinator), and the broker's `BrokerServer` /
`KafkaRaftServer` lines as a 4.3.1 node wrote them."""

from __future__ import annotations

import pytest

from rebalance_radar.emitters.log_shipper import DEFAULT_KEYWORDS, keyword_filter
from rebalance_radar.transforms.schemas import HeartbeatEventKind
from rebalance_radar.transforms.telemetry.broker_log import parse_broker_log_line

pytestmark = pytest.mark.incidents

K = HeartbeatEventKind
TS = "[2026-12-02 09:22:01,456] INFO "

# (line, kind, group, generation, details that must be there)
CASES = [
    # 3.9.1 GroupMetadataManager.loadGroupsAndOffsets:
    # info(s"Finished loading offsets and group metadata from $topicPartition "
    #   + s"in $totalLoadingTimeMs milliseconds for epoch $coordinatorEpoch, of which " +
    #   s"$schedulerTimeMs milliseconds was spent in the scheduler.")   logIdent "[GroupMetadataManager brokerId=N] "
    (
        "[GroupMetadataManager brokerId=3] Finished loading offsets and group metadata from __consumer_offsets-12 "
        "in 35 milliseconds for epoch 4, of which 1 milliseconds was spent in the scheduler. "
        "(kafka.coordinator.group.GroupMetadataManager)",
        K.COORDINATOR_LOADED,
        None,
        None,
        {"coordinator": "3", "offsets_partition": "12", "epoch": "4", "load_ms": "35"},
    ),
    # 3.9.1 removeGroupsAndOffsets: info(s"Finished unloading $topicPartition for coordinator epoch $coordinatorEpoch. "
    #   + s"Removed $numOffsetsRemoved cached offsets and $numGroupsRemoved cached groups.")  (epoch an OptionalInt)
    (
        "[GroupMetadataManager brokerId=3] Finished unloading __consumer_offsets-12 for coordinator epoch "
        "OptionalInt[4]. Removed 3 cached offsets and 2 cached groups. (kafka.coordinator.group.GroupMetadataManager)",
        K.COORDINATOR_UNLOADED,
        None,
        None,
        {"coordinator": "3", "offsets_partition": "12", "epoch": "4", "groups_removed": "2"},
    ),
    # 3.9.1 GroupCoordinator.onGroupLoaded / onGroupUnloaded, logIdent "[GroupCoordinator N]: "
    (
        "[GroupCoordinator 3]: Loading group metadata for orders with generation 7 "
        "(kafka.coordinator.group.GroupCoordinator)",
        K.GROUP_LOADED,
        "orders",
        7,
        {"coordinator": "3"},
    ),
    (
        "[GroupCoordinator 3]: Unloading group metadata for orders with generation 7 "
        "(kafka.coordinator.group.GroupCoordinator)",
        K.GROUP_UNLOADED,
        "orders",
        7,
        {"coordinator": "3"},
    ),
    # 3.9.1 GroupCoordinator.startup/shutdown: info("Startup complete.") / info("Shutting down.")
    (
        "[GroupCoordinator 3]: Startup complete. (kafka.coordinator.group.GroupCoordinator)",
        K.COORDINATOR_STARTED,
        None,
        None,
        {"coordinator": "3"},
    ),
    (
        "[GroupCoordinator 3]: Shutting down. (kafka.coordinator.group.GroupCoordinator)",
        K.COORDINATOR_STOPPING,
        None,
        None,
        {"coordinator": "3"},
    ),
    # 4.3.1 CoordinatorRuntime: log.info("Finished loading of metadata from {} with epoch {} in {}ms where {}ms " +
    #   "was spent in the scheduler. Loaded {} records which total to {} bytes.", ...), "[GroupCoordinator id=N] "
    (
        "[GroupCoordinator id=1] Finished loading of metadata from __consumer_offsets-9 with epoch 1 in 88ms where 2ms "
        "was spent in the scheduler. Loaded 2 records which total to 396 bytes. "
        "(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
        K.COORDINATOR_LOADED,
        None,
        None,
        {"coordinator": "1", "offsets_partition": "9", "epoch": "1", "load_ms": "88"},
    ),
    # 4.3.1 CoordinatorRuntime: log.info("Finished unloading metadata for {} with epoch {}.", tp, partitionEpoch)
    (
        "[GroupCoordinator id=1] Finished unloading metadata for __consumer_offsets-0 with epoch OptionalInt[1]. "
        "(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
        K.COORDINATOR_UNLOADED,
        None,
        None,
        {"coordinator": "1", "offsets_partition": "0", "epoch": "1"},
    ),
    # 4.3.1 GroupMetadataManager.onLoaded: log.info("Loaded classic group {} with {} members.", ...) (consumer,
    # streams and share alike)
    (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=9] Loaded classic group inc-g7 with 1 members. "
        "(org.apache.kafka.coordinator.group.GroupMetadataManager)",
        K.GROUP_LOADED,
        "inc-g7",
        None,
        {"coordinator": "1", "offsets_partition": "9", "group_type": "classic", "member_count": "1"},
    ),
    (
        "[GroupCoordinator id=2 topic=__consumer_offsets partition=4] Loaded consumer group orders with 3 members. "
        "(org.apache.kafka.coordinator.group.GroupMetadataManager)",
        K.GROUP_LOADED,
        "orders",
        None,
        {"coordinator": "2", "offsets_partition": "4", "group_type": "consumer", "member_count": "3"},
    ),
    # 4.3.1 GroupMetadataManager.onUnloaded: log.info("[GroupId={}] Unloading group metadata for generation {}.", ...)
    # and log.info("[GroupId={}] Unloaded group metadata for group epoch {}.", ...)
    (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId=inc-g3] Unloading group metadata for "
        "generation 4. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
        K.GROUP_UNLOADED,
        "inc-g3",
        4,
        {"coordinator": "1", "offsets_partition": "3"},
    ),
    (
        "[GroupCoordinator id=1 topic=__consumer_offsets partition=3] [GroupId=orders] Unloaded group metadata for "
        "group epoch 7. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
        K.GROUP_UNLOADED,
        "orders",
        7,
        {"coordinator": "1", "offsets_partition": "3"},
    ),
    # 4.3.1 GroupCoordinatorService.startup/shutdown, prefix "[GroupCoordinator id=N] "
    (
        "[GroupCoordinator id=2] Startup complete. (org.apache.kafka.coordinator.group.GroupCoordinatorService)",
        K.COORDINATOR_STARTED,
        None,
        None,
        {"coordinator": "2"},
    ),
    (
        "[GroupCoordinator id=2] Shutting down. (org.apache.kafka.coordinator.group.GroupCoordinatorService)",
        K.COORDINATOR_STOPPING,
        None,
        None,
        {"coordinator": "2"},
    ),
    # the broker's own lines (4.3.1 node log)
    (
        "[BrokerServer id=2] Transition from STARTED to SHUTTING_DOWN (kafka.server.BrokerServer)",
        K.COORDINATOR_STOPPING,
        None,
        None,
        {"coordinator": "2"},
    ),
    (
        "[KafkaRaftServer nodeId=2] Kafka Server started (kafka.server.KafkaRaftServer)",
        K.COORDINATOR_STARTED,
        None,
        None,
        {"coordinator": "2"},
    ),
    (
        "[KafkaServer id=5] shutting down (kafka.server.KafkaServer)",
        K.COORDINATOR_STOPPING,
        None,
        None,
        {"coordinator": "5"},
    ),
]


@pytest.mark.parametrize(("line", "kind", "group", "generation", "details"), CASES)
def test_coordinator_moves_and_lifecycle(
    line: str, kind: HeartbeatEventKind, group: str | None, generation: int | None, details: dict[str, str]
) -> None:
    (parsed,) = parse_broker_log_line(TS + line, 0).events
    assert parsed.event == kind
    assert parsed.group_id == group
    assert parsed.generation == generation
    assert details.items() <= parsed.details.items()
    assert keyword_filter(DEFAULT_KEYWORDS)((TS + line).encode()), "the shipper must keep the line"


@pytest.mark.parametrize(
    "line",
    [
        # every replica logs these on every leadership change: no move
        "[GroupCoordinator id=1] Scheduling unloading of metadata for __consumer_offsets-0 with epoch OptionalInt[1] "
        "(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
        "[GroupCoordinator id=1] Ignored unloading metadata for __consumer_offsets-0 in epoch OptionalInt[1] since "
        "metadata was never loaded. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
        # another component's start and stop
        "[SocketServer listenerType=BROKER, nodeId=1] Startup complete. (kafka.network.SocketServer)",
        "[ReplicaFetcherThread-0-2]: Shutting down (kafka.server.ReplicaFetcherThread)",
    ],
)
def test_what_is_no_move(line: str) -> None:
    assert not parse_broker_log_line(TS + line, 0).events
