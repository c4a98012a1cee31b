"""Kafka Streams client lines and the 4.x streams-group coordinator lines (KIP-1071), each fixture built from the
format string of the cited Apache Kafka source (sources jars from Maven Central: kafka-streams, kafka-clients,
kafka-group-coordinator 4.1.1, 4.2.0, 4.3.1) with the log4j layout `[%d] %p %m (%c)%n` and the class's
`LogContext` prefix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.schemas import TelemetrySource as S
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record
from rebalance_radar.transforms.telemetry.streams_log import task_ids

TS = 1_772_359_200_000
AT = "[2026-03-01 10:00:00,250] INFO"
APP = "wordcount"
PROCESS = "5b1a7c8e-2f3d-4e5f-8a9b-0c1d2e3f4a5b"
CLIENT = f"{APP}-{PROCESS}"  # KafkaStreams' default client id: <application.id>-<process uuid>
THREAD = f"{CLIENT}-StreamThread-1"
CONSUMER = f"[Consumer clientId={THREAD}-consumer, groupId={APP}]"  # ConsumerUtils.createLogContext
MEMBERSHIP = "(org.apache.kafka.clients.consumer.internals.StreamsMembershipManager)"
STREAM_THREAD = "(org.apache.kafka.streams.processor.internals.StreamThread)"
GMM = "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
COORDINATOR = "[GroupCoordinator id=1 topic=__consumer_offsets partition=17]"  # CoordinatorRuntime's LogContext
MEMBER = "nJTQE85XSgSc65OJrn1vgA"
STREAMS = f"[GroupId {APP}][MemberId {MEMBER}]"


def only_event(text: str) -> HeartbeatEvent:
    outcome = parse_telemetry_record(text.encode(), TS)
    assert outcome.recognised, outcome.reason
    (event,) = outcome.events
    return event


def check(event: HeartbeatEvent, kind: K, fields: dict[str, object], details: dict[str, str]) -> None:
    assert event.event is kind
    for name, value in fields.items():
        assert getattr(event, name) == value, name
    for key, value in details.items():
        assert event.details.get(key) == value, (key, event.details)


@pytest.mark.parametrize(
    ("text", "kind", "fields", "details"),
    [
        # KafkaStreams.java 4.1.1/4.2.0/4.3.1 (and 2.x-3.x) setState: log.info("State transition from {} to {}", ...),
        # LogContext "stream-client [%s] " with the client id
        (
            f"{AT} stream-client [{CLIENT}] State transition from RUNNING to REBALANCING "
            "(org.apache.kafka.streams.KafkaStreams)",
            K.STATE_CHANGE,
            {"group_id": APP, "client_id": CLIENT, "source": S.CLIENT_LOG},
            {"component": "kafka_streams", "from_state": "RUNNING", "to_state": "REBALANCING"},
        ),
        # StreamThread.java 4.1.1/4.2.0/4.3.1 setState, LogContext "stream-thread [%s] "
        (
            f"{AT} stream-thread [{THREAD}] State transition from RUNNING to PARTITIONS_REVOKED {STREAM_THREAD}",
            K.STATE_CHANGE,
            {"group_id": APP, "client_id": THREAD},
            {"component": "stream_thread", "from_state": "RUNNING", "to_state": "PARTITIONS_REVOKED"},
        ),
        # StreamsMembershipManager.java (kafka-clients) 4.1.1 l.539 / 4.2.0 l.548 / 4.3.1 l.569 transitionTo:
        # "Member {} with epoch {} transitioned from {} to {}."
        (
            f"{AT} {CONSUMER} Member {MEMBER} with epoch 7 transitioned from STABLE to FENCED. {MEMBERSHIP}",
            K.STATE_CHANGE,
            {"group_id": APP, "member_id": MEMBER, "member_epoch": 7},
            {"component": "membership", "protocol": "streams", "from_state": "STABLE", "to_state": "FENCED"},
        ),
        (
            f"{AT} {CONSUMER} Member {MEMBER} with epoch 0 transitioned from FENCED to JOINING. {MEMBERSHIP}",
            K.STATE_CHANGE,
            {"member_id": MEMBER, "member_epoch": 0},
            {"component": "membership", "protocol": "streams", "to_state": "JOINING"},
        ),
        # the same statement without the logger name: the thread's consumer client id says it is a Streams member
        (
            f"{AT} {CONSUMER} Member {MEMBER} with epoch 7 transitioned from RECONCILING to STABLE.",
            K.STATE_CHANGE,
            {"member_id": MEMBER},
            {"protocol": "streams", "from_state": "RECONCILING", "to_state": "STABLE"},
        ),
        # StreamsMembershipManager.java 4.1.1 l.1121 / 4.3.1 l.1182 assignTasks:
        # "Assigning active tasks {{}}, standby tasks {{}}, and warm-up tasks {{}} to the member." (ids joined by ", ")
        (
            f"{AT} {CONSUMER} Assigning active tasks {{0_0, 1_2}}, standby tasks {{0_1}}, and warm-up tasks {{}} to "
            f"the member. {MEMBERSHIP}",
            K.ASSIGNMENT,
            {"group_id": APP},
            {
                "change": "assigned",
                "active_tasks": "0_0,1_2",
                "active_task_count": "2",
                "standby_tasks": "0_1",
                "warmup_task_count": "0",
            },
        ),
        # StreamsMembershipManager.java 4.3.1 l.1155: "Revoking previously assigned active tasks {}" (joined ", ")
        (
            f"{AT} {CONSUMER} Revoking previously assigned active tasks 0_1, 0_3 {MEMBERSHIP}",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "revoked", "active_tasks": "0_1,0_3"},
        ),
        # StreamsMembershipManager.java 4.3.1 l.1228 releaseLostTasks (fenced or failed; the invoker's line is the loss)
        (
            f"{AT} {CONSUMER} Revoking previously assigned and now lost active tasks 0_0, 0_2 {MEMBERSHIP}",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "lost_tasks", "active_tasks": "0_0,0_2"},
        ),
        # StreamsMembershipManager.java 4.2.0 l.1064 / 4.3.1 l.1088: "Assigned tasks with local epoch {} and group {}\n"
        # + "\tMember: ..." (a line shipper sends the first line alone)
        (
            f"{AT} {CONSUMER} Assigned tasks with local epoch 4 and group is ready",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "target", "local_epoch": "4", "group_ready": "true"},
        ),
        # StreamsMembershipManager.java 4.1.1 l.1029: "Assigned tasks with local epoch {}\n" + ...
        (
            f"{AT} {CONSUMER} Assigned tasks with local epoch 2",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "target", "local_epoch": "2"},
        ),
        # StreamsMembershipManager.java 4.1.1-4.3.1 leaving: "Member {} completed callback to revoke task assignment.
        # It will proceed to clear its assignment and send a leave group heartbeat"
        (
            f"{AT} {CONSUMER} Member {MEMBER} completed callback to revoke task assignment. It will proceed to clear "
            f"its assignment and send a leave group heartbeat {MEMBERSHIP}",
            K.LEAVE,
            {"group_id": APP, "member_id": MEMBER},
            {"protocol": "streams"},
        ),
        # DefaultStreamsRebalanceListener.java 4.2.0 l.96 / 4.3.1 l.96: "Processing new assignment {} from Streams
        # Rebalance Protocol", StreamsRebalanceData.Assignment#toString 4.2+ with isGroupReady (the thread's logger)
        (
            f"{AT} stream-thread [{THREAD}] Processing new assignment Assignment{{activeTasks=[0_0, 0_1], "
            f"standbyTasks=[], warmupTasks=[], isGroupReady=true}} from Streams Rebalance Protocol {STREAM_THREAD}",
            K.ASSIGNMENT,
            {"group_id": APP, "client_id": THREAD},
            {"change": "received", "active_tasks": "0_0,0_1", "standby_task_count": "0", "group_ready": "true"},
        ),
        # DefaultStreamsRebalanceListener.java 4.1.1 l.80: Assignment#toString without isGroupReady
        (
            f"{AT} stream-thread [{THREAD}] Processing new assignment Assignment{{activeTasks=[1_0], "
            f"standbyTasks=[0_0], warmupTasks=[]}} from Streams Rebalance Protocol {STREAM_THREAD}",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "received", "active_tasks": "1_0", "standby_tasks": "0_0"},
        ),
        # DefaultStreamsRebalanceListener.java 4.1.1 l.63 / 4.3.1 l.76: "Revoking active tasks {}."
        (
            f"{AT} stream-thread [{THREAD}] Revoking active tasks [0_2, 0_3]. {STREAM_THREAD}",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "revoked", "active_tasks": "0_2,0_3"},
        ),
        # StreamsRebalanceListenerInvoker.java (kafka-clients) 4.1.1-4.3.1 l.63/83/103, the consumer's prefix
        (
            f"{AT} {CONSUMER} Invoking tasks assigned callback for new assignment: Assignment{{activeTasks=[0_1], "
            "standbyTasks=[], warmupTasks=[], isGroupReady=false}",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "assigned_callback", "active_tasks": "0_1", "group_ready": "false"},
        ),
        (
            f"{AT} {CONSUMER} Invoking task revoked callback for revoked active tasks [0_2, 0_3]",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "revoked_callback", "active_tasks": "0_2,0_3"},
        ),
        (
            f"{AT} {CONSUMER} Invoking tasks lost callback for all tasks",
            K.MEMBER_REMOVED,
            {"group_id": APP},
            {"change": "lost", "cause": "tasks_lost"},
        ),
        # TaskManager.java 4.1.1 l.339 / 4.3.1 l.357 handleAssignment (both protocols): first line of
        # "Handle new assignment with:\n\tNew active tasks: {}\n..."
        (
            f"{AT} stream-thread [{THREAD}] Handle new assignment with:",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "tasks_assigned"},
        ),
        # StreamThread.java 4.3.1 l.1898 (close): "The consumer will leave the group since the streams group
        # protocol is used"
        (
            f"{AT} stream-thread [{THREAD}] The consumer will leave the group since the streams group protocol is used "
            f"{STREAM_THREAD}",
            K.LEAVE,
            {"group_id": APP, "member_id": None},
            {"protocol": "streams"},
        ),
        # StreamsGroupHeartbeatRequestManager.java 4.3.1 l.546 (WARN): "Membership is in the following statuses: {}"
        # with "(" + statusCode + ") " + statusDetail joined by ", "
        (
            f"{AT} {CONSUMER} Membership is in the following statuses: (5) Assignment delayed due to the configured "
            f"initial rebalance delay., (3) Internal topics are missing: {APP}-counts-changelog",
            K.TOPOLOGY,
            {"group_id": APP},
            {"statuses": "ASSIGNMENT_DELAYED,MISSING_INTERNAL_TOPICS", "topology_phase": "status"},
        ),
        (
            f"{AT} {CONSUMER} Membership is in the following statuses: (5) Assignment delayed due to the configured "
            "initial rebalance delay.",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"statuses": "ASSIGNMENT_DELAYED", "change": "delayed"},
        ),
        # StreamsGroupHeartbeatRequestManager.java 4.3.1 (NOT_COORDINATOR): "StreamsGroupHeartbeatRequest failed
        # because the group coordinator %s is incorrect. Will attempt to find the coordinator again and retry in %dms"
        (
            f"{AT} {CONSUMER} StreamsGroupHeartbeatRequest failed because the group coordinator "
            "Optional[127.0.0.1:9092 (id: 2147483646 rack: null isFenced: false)] is incorrect. Will attempt to find "
            "the coordinator again and retry in 0ms: This is not the correct coordinator.",
            K.HEARTBEAT_FAILED,
            {"group_id": APP, "error": "NOT_COORDINATOR"},
            {"protocol": "streams", "cause": "coordinator_unavailable"},
        ),
        # StreamTask.java 4.1.1-4.3.1 (LogContext "stream-thread [T] task [0_2] "): "Suspended from {}", "Closed
        # clean", "Initialized", "Restored and ready to run"
        (
            f"{AT} stream-thread [{THREAD}] task [0_2] Suspended from RUNNING",
            K.STATE_CHANGE,
            {"group_id": APP},
            {"component": "task", "task_id": "0_2", "from_state": "RUNNING", "to_state": "SUSPENDED"},
        ),
        (
            f"{AT} stream-thread [{THREAD}] task [0_2] Closed clean",
            K.STATE_CHANGE,
            {"group_id": APP},
            {"component": "task", "task_id": "0_2", "to_state": "CLOSED", "closed": "clean"},
        ),
        (
            f"{AT} stream-thread [{THREAD}] task [0_0] Restored and ready to run",
            K.STATE_CHANGE,
            {"group_id": APP},
            {"task_id": "0_0", "to_state": "RUNNING"},
        ),
    ],
)
def test_streams_client_wording(text: str, kind: K, fields: dict[str, object], details: dict[str, str]) -> None:
    check(only_event(text), kind, fields, details)


@pytest.mark.parametrize(
    ("text", "kind", "details"),
    [
        # kafka-streams 3.9.1 (classic protocol): KafkaStreams.java l.346 and StreamThread.java l.250 setState,
        # TaskManager.java l.339 handleAssignment, StreamTask.java l.1348 suspend: the same wording as 4.x
        (
            f"{AT} stream-client [{CLIENT}] State transition from REBALANCING to RUNNING "
            "(org.apache.kafka.streams.KafkaStreams)",
            K.STATE_CHANGE,
            {"component": "kafka_streams", "to_state": "RUNNING"},
        ),
        (
            f"{AT} stream-thread [{THREAD}] State transition from PARTITIONS_ASSIGNED to RUNNING {STREAM_THREAD}",
            K.STATE_CHANGE,
            {"component": "stream_thread", "from_state": "PARTITIONS_ASSIGNED"},
        ),
        (
            f"{AT} stream-thread [{THREAD}] Handle new assignment with: "
            "(org.apache.kafka.streams.processor.internals.TaskManager)",
            K.ASSIGNMENT,
            {"change": "tasks_assigned"},
        ),
        (
            f"{AT} stream-thread [{THREAD}] task [1_3] Suspended from RUNNING "
            "(org.apache.kafka.streams.processor.internals.StreamTask)",
            K.STATE_CHANGE,
            {"component": "task", "task_id": "1_3", "to_state": "SUSPENDED"},
        ),
    ],
)
def test_classic_protocol_streams_lines_of_3_9(text: str, kind: K, details: dict[str, str]) -> None:
    check(only_event(text), kind, {"group_id": APP}, details)


RECORDED = Path(__file__).parents[2] / "data" / "streams-app"


@pytest.mark.skipif(not (RECORDED / "healthy-H1.log").exists(), reason="no recording of the Kafka Streams test app")
def test_the_recorded_streams_application_s_state_task_and_membership_lines_all_give_events() -> None:
    """The Streams test application's own 4.3.1 log (`tests/pipelines/StreamsApp.java`, streams protocol, layout
    `%d %-5p [%t] %c - %m%n`, a custom client.id): every state change, assignment and membership line is read, and
    the membership manager's lines carry the group."""
    wanted = ("State transition from", "transitioned from", "Assigning active tasks", "Processing new assignment")
    for name in ("healthy-H1.log", "crash-loop-C0.log"):
        lines = [line for line in (RECORDED / name).read_text().splitlines() if any(w in line for w in wanted)]
        assert lines, name
        for line in lines:
            (event,) = parse_telemetry_record(line.encode(), TS).events
            assert event.event in (K.STATE_CHANGE, K.ASSIGNMENT), line
            if "[Consumer clientId=" in line:
                assert event.group_id and event.group_id.startswith("streams-"), line


def test_a_multi_line_record_gives_the_member_and_its_tasks() -> None:
    # StreamsMembershipManager.java 4.3.1 l.1088, shipped as one JSON record (a line shipper splits it into lines)
    message = (
        f"{CONSUMER} Assigned tasks with local epoch 4 and group is ready\n"
        f"\tMember:                        {MEMBER}\n"
        "\tAssigned active tasks:         [0_0, 0_1]\n"
        "\tOwned active tasks:            [0_0]\n"
        "\tActive tasks to revoke:        []\n"
        "\tAssigned standby tasks:        [1_0]\n"
        "\tOwned standby tasks:           []\n"
        "\tAssigned warm-up tasks:        []\n"
        "\tOwned warm-up tasks:           []\n"
    )
    record = json.dumps({"@timestamp": "2026-03-01T10:00:00.250Z", "message": message}).encode()
    (event,) = parse_telemetry_record(record, TS).events
    check(
        event,
        K.ASSIGNMENT,
        {"group_id": APP, "member_id": MEMBER},
        {"local_epoch": "4", "active_tasks": "0_0,0_1", "standby_tasks": "1_0", "revoking_task_count": "0"},
    )


def test_a_custom_client_id_names_no_application() -> None:
    """`client.id` set by the user: the thread name `<client id>-StreamThread-1` carries no application id, so the
    event has no group (the thread's consumer lines, `[Consumer ..., groupId=app]`, name it)."""
    event = only_event(
        f"{AT} stream-thread [orders-7-StreamThread-1] State transition from STARTING to PARTITIONS_ASSIGNED"
    )
    assert (event.event, event.group_id, event.client_id) == (K.STATE_CHANGE, None, "orders-7-StreamThread-1")


@pytest.mark.parametrize(
    ("text", "kind", "fields", "details"),
    [
        # GroupMetadataManager.java 4.2.0 l.2009 / 4.3.1 l.2064: "[GroupId {}][MemberId {}] Configuring the topology {}"
        # with the topology epoch
        (
            f"{AT} {COORDINATOR} {STREAMS} Configuring the topology 0 {GMM}",
            K.TOPOLOGY,
            {"group_id": APP, "member_id": MEMBER, "source": S.BROKER_LOG},
            {"topology_phase": "configuring", "topology_epoch": "0", "protocol": "streams", "coordinator": "1"},
        ),
        # GroupMetadataManager.java 4.1.1 l.1949: the same statement prints the StreamsTopology record
        (
            f"{AT} {COORDINATOR} {STREAMS} Configuring the topology StreamsTopology[topologyEpoch=2, subtopologies="
            f"{{0=StreamsGroupTopologyValue.Subtopology(subtopologyId='0', sourceTopics=[words])}}] {GMM}",
            K.TOPOLOGY,
            {"group_id": APP},
            {"topology_phase": "configuring", "topology_epoch": "2"},
        ),
        # InternalTopicManager.java 4.3.1 l.106 (logs through GroupMetadataManager's logger)
        (
            f"{AT} {COORDINATOR} {STREAMS} Valid topic configuration found in 3ms, topology epoch 0 is now "
            f"initialized. {GMM}",
            K.TOPOLOGY,
            {"group_id": APP, "member_id": MEMBER},
            {"topology_phase": "validated", "topology_epoch": "0", "elapsed_ms": "3"},
        ),
        # InternalTopicManager.java 4.2.0 l.104: no [GroupId] prefix
        (
            f"{AT} {COORDINATOR} Valid topic configuration found in 12ms, topology epoch 1 is now initialized. {GMM}",
            K.TOPOLOGY,
            {"group_id": None},
            {"topology_phase": "validated", "topology_epoch": "1", "elapsed_ms": "12"},
        ),
        # InternalTopicManager.java 4.1.1 l.97: no time, internal topics still to create
        (
            f"{AT} {COORDINATOR} Valid topic configuration found, but internal topics are missing for topology epoch "
            f"0: [{APP}-counts-changelog] {GMM}",
            K.TOPOLOGY,
            {},
            {"topology_phase": "internal_topics_missing", "missing_internal_topics": f"[{APP}-counts-changelog]"},
        ),
        # InternalTopicManager.java 4.3.1 l.120 (WARN): "Topic configuration failed for topology epoch {} in {}ms: {}"
        (
            f"[2026-03-01 10:00:00,250] WARN {COORDINATOR} {STREAMS} Topic configuration failed for topology epoch 0 "
            f"in 1ms: Source topics words are missing. {GMM}",
            K.TOPOLOGY,
            {"group_id": APP, "reason": "Source topics words are missing."},
            {"topology_phase": "invalid", "topology_epoch": "0"},
        ),
        # GroupMetadataManager.java 4.1.1 l.2111 / 4.3.1 l.2256 and l.2261
        (
            f"{AT} {COORDINATOR} {STREAMS} Member initialized the topology with epoch 0 {GMM}",
            K.TOPOLOGY,
            {"group_id": APP},
            {"topology_phase": "initialized", "topology_epoch": "0"},
        ),
        (
            f"{AT} {COORDINATOR} {STREAMS} Member joined with stale topology epoch 3 {GMM}",
            K.TOPOLOGY,
            {"group_id": APP, "member_id": MEMBER},
            {"topology_phase": "stale_member", "topology_epoch": "3"},
        ),
        # GroupMetadataManager.java 4.3.1 l.2057: "[GroupId {}][MemberId {}] Computed new metadata hash: {}."
        (
            f"{AT} {COORDINATOR} {STREAMS} Computed new metadata hash: -4410279146406436121. {GMM}",
            K.TOPOLOGY,
            {"group_id": APP},
            {"topology_phase": "metadata_hash", "metadata_hash": "-4410279146406436121"},
        ),
        # GroupMetadataManager.java 4.3.1 l.3534: "Member updated its member metadata to {}." with the
        # StreamsGroupMember record's toString (as the 4.3.1 broker prints it in tests/data/streams-app/broker.log)
        (
            f"{AT} {COORDINATOR} {STREAMS} Member updated its member metadata to StreamsGroupMember[memberId={MEMBER}, "
            "memberEpoch=0, previousMemberEpoch=0, state=STABLE, instanceId=Optional.empty, rackId=Optional.empty, "
            f"clientId={THREAD}-consumer, clientHost=/10.1.2.3, rebalanceTimeoutMs=300000, topologyEpoch=0, "
            f"processId={PROCESS}, userEndpoint=Optional.empty, clientTags={{}}, assignedTasks=(active=[], "
            "standby=[], warmup=[]), tasksPendingRevocation=(active=[], standby=[], warmup=[])]. " + GMM,
            K.JOIN,
            {"group_id": APP, "member_id": MEMBER, "client_id": f"{THREAD}-consumer", "host": "10.1.2.3"},
            {
                "phase": "metadata_updated",
                "topology_epoch": "0",
                "rebalance_timeout_ms": "300000",
                "protocol": "streams",
            },
        ),
        # GroupMetadataManager.java 4.2.0: the same statement spelt "member metdata" (TasksTuple without epochs)
        (
            f"{AT} {COORDINATOR} {STREAMS} Member updated its member metdata to StreamsGroupMember[memberId={MEMBER}, "
            "memberEpoch=3, previousMemberEpoch=2, state=STABLE, instanceId=Optional.empty, rackId=Optional.empty, "
            f"clientId={THREAD}-consumer, clientHost=/10.1.2.3, rebalanceTimeoutMs=300000, topologyEpoch=0, "
            f"processId={PROCESS}, userEndpoint=Optional.empty, clientTags={{}}, assignedTasks=(active=[0-1], "
            "standby=[], warmup=[]), tasksPendingRevocation=(active=[], standby=[], warmup=[])]. " + GMM,
            K.JOIN,
            {"member_id": MEMBER, "member_epoch": 3, "host": "10.1.2.3"},
            {"phase": "metadata_updated", "active_tasks": "0_1"},
        ),
        # GroupMetadataManager.java 4.3.1 l.3715, TasksTupleWithEpochs#toString "subtopology-partition@epoch"
        (
            f"{AT} {COORDINATOR} {STREAMS} Member's new assignment state: epoch=9, previousEpoch=8, state=STABLE, "
            "assignedTasks=(active=[0-0@9, 0-1@7], standby=[1-0@9], warmup=[]) and tasksPendingRevocation=(active="
            f"[0-3@8], standby=[], warmup=[]). {GMM}",
            K.ASSIGNMENT,
            {"group_id": APP, "member_id": MEMBER, "member_epoch": 9},
            {
                "member_state": "STABLE",
                "active_tasks": "0_0,0_1",
                "standby_tasks": "1_0",
                "pending_active_tasks": "0_3",
                "pending_active_task_count": "1",
            },
        ),
        # the same statement in 4.1.1/4.2.0 (TasksTuple#toString "subtopology-partition")
        (
            f"{AT} {COORDINATOR} {STREAMS} Member's new assignment state: epoch=3, previousEpoch=2, "
            "state=UNREVOKED_TASKS, assignedTasks=(active=[0-0], standby=[], warmup=[]) and tasksPendingRevocation="
            f"(active=[0-1], standby=[], warmup=[]). {GMM}",
            K.ASSIGNMENT,
            {"member_epoch": 3},
            {"member_state": "UNREVOKED_TASKS", "active_tasks": "0_0", "pending_active_tasks": "0_1"},
        ),
        # GroupMetadataManager.java 4.1.1 l.1971 (no validated topic epoch) and 4.2.0 l.2052 / 4.3.1 l.2102
        (
            f"{AT} {COORDINATOR} {STREAMS} Bumped streams group epoch to 4 with metadata hash 77. {GMM}",
            K.REBALANCE_PREPARE,
            {"group_id": APP},
            {"group_epoch": "4", "metadata_hash": "77", "protocol": "streams"},
        ),
        (
            f"{AT} {COORDINATOR} {STREAMS} Bumped streams group epoch to 5 with metadata hash 77 and validated topic "
            f"epoch 0. {GMM}",
            K.REBALANCE_PREPARE,
            {"group_id": APP},
            {"group_epoch": "5", "validated_topology_epoch": "0"},
        ),
        # GroupMetadataManager.java 4.1.1 l.3983 / 4.3.1 l.4225: "[GroupId {}][MemberId {}] Member {} left the streams
        # group."
        (
            f"{AT} {COORDINATOR} {STREAMS} Member {MEMBER} left the streams group. {GMM}",
            K.LEAVE,
            {"group_id": APP, "member_id": MEMBER},
            {"protocol": "streams"},
        ),
        # GroupMetadataManager.java 4.3.1 l.2092
        (
            f"{AT} {COORDINATOR} {STREAMS} Assignment configurations changed to {{num.standby.replicas=1}}. "
            f"Triggering rebalance. {GMM}",
            K.ASSIGNMENT,
            {"group_id": APP},
            {"change": "configs_changed", "configs": "{num.standby.replicas=1}"},
        ),
        # StreamsGroup.java 4.1.1 l.1066 / 4.3.1 l.1130
        (
            f"{AT} {COORDINATOR} {STREAMS} Shutdown requested for the streams application. "
            "(org.apache.kafka.coordinator.group.streams.StreamsGroup)",
            K.SHUTDOWN_REQUESTED,
            {"group_id": APP, "member_id": MEMBER},
            {"protocol": "streams"},
        ),
    ],
)
def test_streams_group_coordinator_wording(
    text: str, kind: K, fields: dict[str, object], details: dict[str, str]
) -> None:
    event = only_event(text)
    assert event.source is S.BROKER_LOG
    check(event, kind, fields, details)


def test_task_ids_in_each_printed_shape() -> None:
    assert task_ids("[0_0, 1_12]") == ["0_0", "1_12"]
    assert task_ids("{0_0, 1_2}") == ["0_0", "1_2"]
    assert task_ids("0_3") == ["0_3"]
    assert task_ids("[]") == []
