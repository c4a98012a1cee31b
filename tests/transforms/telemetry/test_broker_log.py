"""Broker log lines in the Scala (2.x-3.x) and Java (4.x) coordinator wording, classic and KIP-848 groups."""

from __future__ import annotations

import pytest

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.schemas import TelemetrySource as S
from rebalance_radar.transforms.telemetry.broker_log import cause_of_reason, parse_broker_log_line
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent

TS = 1_714_564_800_000
SCALA = "(kafka.coordinator.group.GroupCoordinator)"
JAVA = "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
J = "[GroupCoordinator id=1 topic=__consumer_offsets partition=46]"


def only_event(text: str) -> HeartbeatEvent:
    outcome = parse_broker_log_line(text, TS)
    assert outcome.recognised, outcome.reason
    (event,) = outcome.events
    assert event.source is S.BROKER_LOG
    return event


def test_scala_prepare_line_with_partition_reason_and_time() -> None:
    event = only_event(
        "[2022-03-16 17:14:07,064] INFO [GroupCoordinator 1]: Preparing to rebalance group TEST-SZL in state "
        "PreparingRebalance with old generation 1 (__consumer_offsets-43) (reason: removing member "
        f"consumer-2-f852e86d-7db8-4943-b378-097fe08415f8 on heartbeat expiration) {SCALA}"
    )
    assert (event.event, event.group_id, event.generation) == (K.REBALANCE_PREPARE, "TEST-SZL", 1)
    assert event.member_id == "consumer-2-f852e86d-7db8-4943-b378-097fe08415f8"
    assert event.event_time == 1_647_450_847_064
    assert event.details["offsets_partition"] == "43"
    assert event.details["coordinator"] == "1"
    assert event.details["cause"] == "heartbeat_expiration"
    assert event.details["logger"] == "kafka.coordinator.group.GroupCoordinator"


def test_java_prepare_line_keeps_parenthesised_reason_whole() -> None:
    event = only_event(
        f"[2025-06-30 13:13:14,468] INFO {J} Preparing to rebalance group console-consumer-4094 in state "
        "PreparingRebalance with old generation 1 (reason: explicit `LeaveGroup` request for "
        f"(console-consumer-bc42) members.). {JAVA}"
    )
    assert event.generation == 1
    assert event.reason == "explicit `LeaveGroup` request for (console-consumer-bc42) members"
    assert event.member_id == "console-consumer-bc42"
    assert event.details["cause"] == "member_left"
    assert event.details["offsets_partition"] == "46"


def test_pending_sync_expiration_names_the_members_that_never_synced() -> None:
    """4.3.1 as logged live (a Java set), and 3.x's Scala sets (`Set(...)`, `HashSet(...)` past four members)."""
    java = only_event(
        f"[2026-11-23 16:22:22,553] INFO {J} Preparing to rebalance group g1 in state PreparingRebalance with old "
        "generation 2 (reason: Removing [rogue-R-6a81d190-0471-420c-874f-45d5c9cb03f1] on pending sync request "
        f"expiration). {JAVA}"
    )
    assert (java.generation, java.member_id) == (2, "rogue-R-6a81d190-0471-420c-874f-45d5c9cb03f1")
    assert java.details["cause"] == "failed_previous"
    assert java.details["sync_expired_members"] == "rogue-R-6a81d190-0471-420c-874f-45d5c9cb03f1"
    scala = only_event(
        "[2023-05-02 10:00:00,000] INFO [GroupCoordinator 1]: Preparing to rebalance group g2 in state "
        "PreparingRebalance with old generation 7 (__consumer_offsets-3) (reason: Removing HashSet(a-1, b-2, c-3, "
        f"d-4, e-5) on pending sync request expiration) {SCALA}"
    )
    assert scala.member_id is None and scala.details["cause"] == "failed_previous"
    assert scala.details["sync_expired_members"] == "a-1,b-2,c-3,d-4,e-5"
    assert cause_of_reason("Removing Set(x-1) on pending sync request expiration")[:2] == ("failed_previous", "x-1")
    other = only_event(
        f"{J} Preparing to rebalance group g in state PreparingRebalance with old generation 3 (reason: removing "
        f"member m-1 on heartbeat expiration). {JAVA}"
    )
    assert "sync_expired_members" not in other.details


def test_java_prepare_line_with_client_reason_ending_in_exception() -> None:
    event = only_event(
        f"{J} Preparing to rebalance group g in state PreparingRebalance with old generation 3 (reason: Member m-1 "
        "is joining group during Stable; client reason: rebalance failed due to 'x' (RebalanceInProgressException)). "
        f"{JAVA}"
    )
    assert event.reason.endswith("(RebalanceInProgressException)")
    assert event.details["client_reason"] == "rebalance failed due to 'x' (RebalanceInProgressException)"
    assert event.details["cause"] == "failed_previous"


@pytest.mark.parametrize(
    ("text", "generation", "members", "partition"),
    [
        (f"[GroupCoordinator 0]: Stabilized group billing generation 7 {SCALA}", 7, None, None),
        (
            f"[GroupCoordinator 2]: Stabilized group CG generation 1 (__consumer_offsets-36) with 1 members {SCALA}",
            1,
            "1",
            "36",
        ),
        (f"{J} Stabilized group console-consumer-4094 generation 1 with 1 members. {JAVA}", 1, "1", "46"),
    ],
)
def test_stabilized_in_every_wording(text: str, generation: int, members: str | None, partition: str | None) -> None:
    event = only_event(text)
    assert (event.event, event.generation) == (K.REBALANCE_STABLE, generation)
    assert event.details.get("member_count") == members
    assert event.details.get("offsets_partition") == partition


@pytest.mark.parametrize(
    "text",
    [
        f"[GroupCoordinator 1]: Group TEST-SZL with generation 2 is now empty (__consumer_offsets-43) {SCALA}",
        f"[2025-04-04 13:33:13,847] WARN {J} Group TEST-SZL with generation 2 is now empty. {JAVA}",
    ],
)
def test_group_empty_in_both_wordings(text: str) -> None:
    event = only_event(text)
    assert (event.event, event.group_id, event.generation) == (K.GROUP_EMPTY, "TEST-SZL", 2)


@pytest.mark.parametrize("suffix", ["", "."])
def test_member_failed_on_heartbeat_expiration(suffix: str) -> None:
    event = only_event(
        f"[GroupCoordinator 2]: Member c-1-f5ab in group CG has failed, removing it from the group{suffix}"
    )
    assert (event.event, event.member_id, event.group_id) == (K.MEMBER_EXPIRED, "c-1-f5ab", "CG")


def test_scala_leave_reads_member_metadata() -> None:
    event = only_event(
        "[GroupCoordinator 0]: Member MemberMetadata(memberId=console-consumer-d95c, groupInstanceId=Some(inst-1), "
        "clientId=console-consumer, clientHost=/127.0.0.1, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, "
        "supportedProtocols=List(range, cooperative-sticky)) has left group g1 through explicit `LeaveGroup`; "
        f"client reason: the consumer is being closed {SCALA}"
    )
    assert (event.event, event.member_id, event.group_id) == (K.LEAVE, "console-consumer-d95c", "g1")
    assert (event.group_instance_id, event.client_id, event.host) == ("inst-1", "console-consumer", "127.0.0.1")
    assert event.reason == "the consumer is being closed"


def test_java_leave_takes_group_from_context() -> None:
    event = only_event(
        f"{J} [Group console-consumer-21343] Member console-consumer-206e has left group through explicit "
        f"`LeaveGroup` request; client reason: the consumer is being closed {JAVA}"
    )
    assert (event.event, event.group_id, event.member_id) == (
        K.LEAVE,
        "console-consumer-21343",
        "console-consumer-206e",
    )


def test_join_lines() -> None:
    dynamic = only_event(
        f"{J} Dynamic member with unknown member id joins group demo-group in Empty state. Created a new member id "
        f"console-consumer-801d and requesting the member to rejoin with this id. {JAVA}"
    )
    assert (dynamic.event, dynamic.group_id, dynamic.member_id) == (K.JOIN, "demo-group", "console-consumer-801d")
    pending = only_event(
        f"{J} Pending dynamic member with id console-consumer-801d joins group demo-group in Empty state. "
        f"Adding to the group now. {JAVA}"
    )
    assert (pending.event, pending.member_id, pending.details["state"]) == (K.JOIN, "console-consumer-801d", "Empty")


def test_static_member_replaced_names_the_old_member() -> None:
    event = only_event(
        "[GroupCoordinator 1]: Static member Some(orders-0) of group orders with unknown member id rejoins, "
        "assigning new member id orders-0-new, while old member id orders-0-old will be removed."
    )
    assert (event.event, event.member_id, event.group_instance_id) == (K.MEMBER_REMOVED, "orders-0-old", "orders-0")
    assert event.details["new_member_id"] == "orders-0-new"


@pytest.mark.parametrize(("leader", "text_leader"), [(None, ""), ("m-1", "m-1 ")])
def test_assignment_received_from_leader(leader: str | None, text_leader: str) -> None:
    event = only_event(
        f"Assignment received from leader {text_leader}for group CG for generation 1. "
        "The group has 3 members, 1 of which are static."
    )
    assert (event.event, event.member_id, event.generation) == (K.ASSIGNMENT, leader, 1)
    assert (event.details["member_count"], event.details["static_member_count"]) == ("3", "1")


def test_consumer_group_lines() -> None:
    prefix = "[GroupCoordinator id=1 topic=__consumer_offsets partition=33] [GroupId avro]"
    joined = only_event(f"{prefix} Member NzRW joins the consumer group using the consumer protocol. {JAVA}")
    assert (joined.event, joined.group_id, joined.member_id) == (K.JOIN, "avro", "NzRW")
    bumped = only_event(f"{prefix} Bumped group epoch to 2 with metadata hash 2421248355301747518. {JAVA}")
    assert (bumped.event, bumped.details["group_epoch"]) == (K.REBALANCE_PREPARE, "2")
    fenced = only_event(f"{prefix} Member NzRW fenced from the group because its session expired. {JAVA}")
    assert (fenced.event, fenced.member_id) == (K.MEMBER_EXPIRED, "NzRW")
    # Kafka 4.3 words it differently; seen on the embedded 4.3.1 broker
    fenced_43 = only_event(f"{prefix} Member NzRW fenced from the group because the member session expired. {JAVA}")
    assert (fenced_43.event, fenced_43.member_id) == (K.MEMBER_EXPIRED, "NzRW")
    left = only_event(f"{prefix} Member NzRW left the consumer group. {JAVA}")
    assert (left.event, left.group_id) == (K.LEAVE, "avro")
    state = only_event(
        f"{prefix} Member NzRW new assignment state: epoch=7, previousEpoch=6, state=STABLE, assignedPartitions=[x-0]."
    )
    assert (state.event, state.member_epoch, state.details["member_state"]) == (K.ASSIGNMENT, 7, "STABLE")


@pytest.mark.parametrize(
    "text",
    [
        "[2025-12-11 13:50:15] INFO Stabilized group agentmesh-consumer",
        # a coordinator move is an event (`group_loaded`, test_broker_log_coordinator_moves); its scheduling is not
        f"[GroupMetadataManager brokerId=1] Scheduling loading of offsets and group metadata from __consumer_offsets-3 "
        f"for epoch 2 {SCALA}",
        f"{J} Generated 1 tombstone records while cleaning up group metadata in 0 milliseconds. {JAVA}",
        "We are preparing to rebalance the partitions across brokers (reason: disk usage)",
        "The member in group orders has failed the health check, removing it from the LB",
    ],
)
def test_near_misses_produce_no_event(text: str) -> None:
    assert not parse_broker_log_line(text, TS).recognised


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        (
            "Adding new member m with group instance id None; client reason: need to re-join with the given member-id: m",  # noqa: E501
            "member_joined",
        ),
        (
            "Updating metadata for member m during Stable; client reason: triggered followup rebalance scheduled for 0",
            "enforced",
        ),
        ("Member m joining group during Stable; client reason: cached metadata has changed", "subscription_change"),
        ("Leader m re-joining group during Stable; client reason: no idea", "unknown"),
        ("something new in Kafka 5", "unknown"),
    ],
)
def test_cause_of_reason(reason: str, cause: str) -> None:
    assert cause_of_reason(reason)[0] == cause


# Static membership (GroupMetadataManager 4.x / GroupCoordinator 3.x): a replaced static member is no departure.
def test_java_static_member_replacing_previously_mapped_member() -> None:
    event = only_event(
        f"[2026-11-23 09:12:01,532] INFO {J} Static member with groupInstanceId=orders-0 and unknown member id joins "
        "group orders in Stable state. Replacing previously mapped member "
        "rdkafka-5b1c8e0f-2f0e-4a53-9f3c-1b9cf0e1aa01 with this groupInstanceId. "
        f"{JAVA}"
    )
    assert (event.event, event.group_id, event.group_instance_id) == (K.JOIN, "orders", "orders-0")
    assert event.details["replaced_member_id"] == "rdkafka-5b1c8e0f-2f0e-4a53-9f3c-1b9cf0e1aa01"
    assert event.details["state"] == "Stable"
    assert event.details["static"] == "true"
    assert event.details["offsets_partition"] == "46"


def test_scala_static_member_new_member_id() -> None:
    event = only_event(
        "[2023-05-02 10:01:02,003] INFO [GroupCoordinator 2]: Static member with groupInstanceId=app-1 and unknown "
        "member id joins group app in Empty state. Created a new member id app-1-3f1a0b for this member and add to "
        f"the group. {SCALA}"
    )
    assert (event.event, event.group_id, event.member_id) == (K.JOIN, "app", "app-1-3f1a0b")
    assert event.group_instance_id == "app-1"
    assert event.details["new_member"] == "true"
    assert "replaced_member_id" not in event.details


def test_java_static_member_created_new_member_id() -> None:
    event = only_event(
        f"[2026-11-23 09:12:01,532] INFO {J} Static member with groupInstanceId=orders-1 and unknown member id joins "
        "group orders in PreparingRebalance state. Created a new member id orders-1-77aa for this member and added "
        f"to the group. {JAVA}"
    )
    assert (event.member_id, event.group_instance_id, event.details["state"]) == (
        "orders-1-77aa",
        "orders-1",
        "PreparingRebalance",
    )


@pytest.mark.parametrize(
    "text",
    [
        f"{J} Static member which joins during Stable stage and doesn't affect the selected protocol will not "
        "trigger a rebalance.",
        "[GroupCoordinator 1]: Static member which joins during Stable stage and doesn't affect selectProtocol "
        "will not trigger rebalance.",
    ],
)
def test_static_rejoin_without_rebalance(text: str) -> None:
    event = only_event(f"[2026-11-23 09:12:01,533] INFO {text} {JAVA}")
    assert event.event is K.JOIN
    assert event.details["rebalance"] == "false"


def test_kip848_static_member_joins_and_rejoins() -> None:
    joined = only_event(
        f"{J} [GroupId orders] Static member u2N8 with instance id orders-0 joins the consumer group using the "
        "consumer protocol."
    )
    assert (joined.event, joined.group_id, joined.member_id, joined.group_instance_id) == (
        K.JOIN,
        "orders",
        "u2N8",
        "orders-0",
    )
    rejoined = only_event(
        f"{J} [GroupId orders] Static member with instance id orders-0 re-joins the consumer group using the "
        "consumer protocol. Created a new member Zq9 to replace the existing member u2N8."
    )
    assert (rejoined.member_id, rejoined.details["replaced_member_id"]) == ("Zq9", "u2N8")


@pytest.mark.parametrize("word", ["Member", "member"])
def test_kip848_static_member_left_and_temporarily_left(word: str) -> None:
    left = only_event(f"{J} [GroupId orders] Static {word} u2N8 with instance id orders-0 left the consumer group.")
    assert (left.event, left.member_id, left.group_instance_id) == (K.LEAVE, "u2N8", "orders-0")
    assert "temporary" not in left.details
    temporary = only_event(
        f"{J} [GroupId orders] Static {word} u2N8 with instance id orders-0 temporarily left the consumer group."
    )
    assert temporary.details["temporary"] == "true"


# --- Wording audited against the coordinator sources (docs/telemetry-wording.md, "Source audit"). Each case is a
# line built from the format string of the named file and version, with the fields the detectors read.
STREAMS = "[GroupId app][MemberId Xq3-m]"
SCALA_STATIC_FENCED = (
    "[GroupCoordinator 1]: Request memberId=c-1-old for static member with groupInstanceId=Some(inst-1) is fenced by "
    "current memberId=c-1-new during operation {op}"
)


@pytest.mark.parametrize(
    ("text", "kind", "fields", "details"),
    [
        # GroupCoordinator.scala 3.x: a zombie static member's request, refused (no group in the line)
        (
            SCALA_STATIC_FENCED.format(op="offset-commit") + f" {SCALA}",
            K.COMMIT_FAILED,
            {"member_id": "c-1-old", "group_instance_id": "inst-1", "error": "FENCED_INSTANCE_ID", "group_id": None},
            {"operation": "offset-commit", "current_member_id": "c-1-new"},
        ),
        (
            SCALA_STATIC_FENCED.format(op="heartbeat") + f" {SCALA}",
            K.HEARTBEAT_FAILED,
            {"member_id": "c-1-old", "error": "FENCED_INSTANCE_ID"},
            {"operation": "heartbeat"},
        ),
        # classic/ClassicGroup.java 4.x: "existing" instead of "current", the instance id printed bare
        (
            f"{J} Request memberId=c-1-old for static member with groupInstanceId=inst-1 is fenced by existing "
            f"memberId=c-1-new during operation sync-group {JAVA}",
            K.SYNC_FAILED,
            {"member_id": "c-1-old", "group_instance_id": "inst-1", "error": "FENCED_INSTANCE_ID"},
            {"operation": "sync-group", "offsets_partition": "46"},
        ),
        # GroupCoordinator.scala 3.x: a member that never completed its join leaves
        (
            "[GroupCoordinator 1]: Pending member with memberId=c-9 has left group g through explicit `LeaveGroup` "
            f"request {SCALA}",
            K.LEAVE,
            {"group_id": "g", "member_id": "c-9"},
            {"pending": "true"},
        ),
        # GroupMetadataManager.java 4.x: the same, and a static member's explicit leave in a classic group
        (
            f"{J} [Group g] Pending member c-9 has left group through explicit `LeaveGroup` request; client reason: "
            f"not provided {JAVA}",
            K.LEAVE,
            {"group_id": "g", "member_id": "c-9", "reason": "not provided"},
            {"pending": "true"},
        ),
        (
            f"{J} [Group g] Static Member c-1 with instance id inst-1 has left group through explicit `LeaveGroup` "
            f"request; client reason: the consumer is being closed {JAVA}",
            K.LEAVE,
            {
                "group_id": "g",
                "member_id": "c-1",
                "group_instance_id": "inst-1",
                "reason": "the consumer is being closed",
            },
            {"static": "true"},
        ),
        # GroupCoordinator.scala 3.x prints a Scala set of the members it drops for not rejoining
        (
            f"[GroupCoordinator 1]: Group g removed dynamic members who haven't joined: Set(c-1, c-2) {SCALA}",
            K.MEMBER_REMOVED,
            {"group_id": "g"},
            {"members": "c-1,c-2"},
        ),
        (
            f"{J} Group g removed dynamic members who haven't joined: [c-1, c-2] {JAVA}",
            K.MEMBER_REMOVED,
            {"group_id": "g"},
            {"members": "c-1,c-2"},
        ),
        # GroupCoordinator.scala 3.x (ERROR) / GroupMetadataManager.java 4.x (ERROR, final period)
        (
            f"[GroupCoordinator 1]: Group g could not complete rebalance because no members rejoined {SCALA}",
            K.JOIN_FAILED,
            {"group_id": "g"},
            {},
        ),
        (
            f"{J} Group g could not complete rebalance because no members rejoined. {JAVA}",
            K.JOIN_FAILED,
            {"group_id": "g"},
            {},
        ),
        # GroupMetadataManager.java 4.x: "in state S" where 3.x said "in S state"
        (
            f"{J} Dynamic member with unknown member id joins group g in state Stable. Created a new member id c-3 "
            f"and added the member to the group. {JAVA}",
            K.JOIN,
            {"group_id": "g", "member_id": "c-3"},
            {"state": "Stable", "pending": "true"},
        ),
        # GroupMetadataManager.java 4.x, KIP-848 consumer group joined over the classic protocol
        (
            f"{J} [GroupId g] Dynamic member with unknown member id joins the consumer group. Created a new member id "
            f"c-3 and requesting the member to rejoin with this id. {JAVA}",
            K.JOIN,
            {"group_id": "g", "member_id": "c-3"},
            {"protocol": "classic", "pending": "true"},
        ),
        # GroupMetadataManager.java 3.7+/4.x, KIP-848 static members
        (
            f"{J} [GroupId g] Static member c-2 with instance id inst-1 is fenced by existing member c-1. {JAVA}",
            K.HEARTBEAT_FAILED,
            {"group_id": "g", "member_id": "c-2", "group_instance_id": "inst-1", "error": "FENCED_INSTANCE_ID"},
            {"current_member_id": "c-1"},
        ),
        (
            f"{J} [GroupId g] Static member c-2 with instance id inst-1 cannot join the group because the instance id "
            f"is is owned by member c-1. {JAVA}",
            K.HEARTBEAT_FAILED,
            {"group_id": "g", "member_id": "c-2", "error": "UNRELEASED_INSTANCE_ID"},
            {"current_member_id": "c-1"},
        ),
        # GroupMetadataManager.java 3.7+/4.x: the other fencing reasons of a consumer group
        (
            f"{J} [GroupId g] Member c-1 fenced from the group because it failed to transition from epoch 4 within "
            f"300000ms. {JAVA}",
            K.MEMBER_REMOVED,
            {"group_id": "g", "member_id": "c-1", "reason": "it failed to transition from epoch 4 within 300000ms"},
            {"fenced": "true"},
        ),
        (
            f"{J} [GroupId g] Member c-1 fenced from the group because the classic member failed to join within the "
            f"rebalance timeout. {JAVA}",
            K.MEMBER_REMOVED,
            {"member_id": "c-1", "reason": "the classic member failed to join within the rebalance timeout"},
            {"fenced": "true"},
        ),
        # GroupMetadataManager.java 4.2-era trunk (KIP-1071 streams groups)
        (
            f"{J} {STREAMS} Member joins the streams group. {JAVA}",
            K.JOIN,
            {"group_id": "app", "member_id": "Xq3-m"},
            {"protocol": "streams"},
        ),
        (
            f"{J} {STREAMS} Member Xq3-m left the streams group. {JAVA}",
            K.LEAVE,
            {"group_id": "app", "member_id": "Xq3-m"},
            {"protocol": "streams"},
        ),
        (
            f"{J} [GroupId app] Streams member Xq3-m fenced from the group because the member session expired.. {JAVA}",
            K.MEMBER_EXPIRED,
            {"group_id": "app", "member_id": "Xq3-m", "reason": "session expired"},
            {"protocol": "streams"},
        ),
        (
            f"{J} [GroupId app] Member Xq3-m fenced from the group because it failed to transition from epoch 5 "
            f"within 300000ms. {JAVA}",
            K.MEMBER_REMOVED,
            {"group_id": "app", "member_id": "Xq3-m"},
            {"fenced": "true"},
        ),
        (
            f"{J} {STREAMS} Bumped streams group epoch to 7 with metadata hash -12345 and validated topic epoch 0. "
            f"{JAVA}",
            K.REBALANCE_PREPARE,
            {"group_id": "app", "member_id": "Xq3-m"},
            {"group_epoch": "7", "metadata_hash": "-12345", "protocol": "streams", "cause": "epoch_bump"},
        ),
        (
            f"{J} {STREAMS} Member's new assignment state: epoch=7, previousEpoch=6, state=STABLE, "
            f"assignedTasks=TasksTuple(activeTasks={{0=[0]}}) and tasksPendingRevocation=TasksTuple(). {JAVA}",
            K.ASSIGNMENT,
            {"group_id": "app", "member_id": "Xq3-m", "member_epoch": 7},
            {"previous_member_epoch": "6", "member_state": "STABLE", "protocol": "streams"},
        ),
        # GroupMetadataManager.java 4.1+: the consumer-group epoch bump carries the metadata hash
        (
            f"{J} [GroupId g] Bumped group epoch to 12 with metadata hash 987. {JAVA}",
            K.REBALANCE_PREPARE,
            {"group_id": "g"},
            {"group_epoch": "12", "metadata_hash": "987", "protocol": "consumer"},
        ),
    ],
)
def test_audited_coordinator_wording(text: str, kind: K, fields: dict[str, object], details: dict[str, str]) -> None:
    event = only_event(text)
    assert event.event is kind
    for name, value in fields.items():
        assert getattr(event, name) == value, name
    for key, value in details.items():
        assert event.details.get(key) == value, key


@pytest.mark.parametrize(
    "text",
    [
        # GroupCoordinator.scala 3.x / GroupMetadataManager.java 4.x: a late timer, not an expiry
        f"{J} Received notification of heartbeat expiration for member c-1 after group g had already been unloaded "
        f"or deleted. {JAVA}",
        # GroupMetadataManager.java 4.x: a refused downgrade says "consumer group", not a join or leave
        f"{J} Cannot downgrade consumer group g to classic group because the online downgrade is disabled. {JAVA}",
        # a member list elsewhere in a message that is not the coordinator's
        "Requested to drop members who haven't paid: Set(a, b)",
        "Static member of the club with instance id 7 is fenced by existing member rules",
    ],
)
def test_audited_near_misses_produce_no_event(text: str) -> None:
    assert not parse_broker_log_line(text, TS).recognised


def test_java_coordinator_failed_assignment_store_without_space_is_a_failed_generation() -> None:
    # group-coordinator GroupMetadataManager.java (3.7.0, 3.9.0-rc3, trunk 1eb7644 of 2024-10-25),
    # classicGroupSyncToClassicGroup: "Error " + error + " when storing group assignment" + "during SyncGroup (member: "
    # + memberId + ")." (no space), quoted by "Preparing to rebalance group {} in state {} with old generation {}
    # (reason: {}).".
    event = only_event(
        f"[2025-06-30 13:13:14,468] INFO {J} Preparing to rebalance group orders in state PreparingRebalance with old "
        "generation 12 (reason: Error NOT_COORDINATOR when storing group assignmentduring SyncGroup (member: "
        f"c-1-9f0d).). {JAVA}"
    )
    assert (event.event, event.group_id, event.generation) == (K.REBALANCE_PREPARE, "orders", 12)
    assert (event.details["cause"], event.member_id) == ("failed_previous", "c-1-9f0d")
    assert event.details["offsets_partition"] == "46"


# --- Rebalance reasons the audit had left "unknown": each is the reason text of the named coordinator source, in the
# prepare line that quotes it.
@pytest.mark.parametrize(
    ("prefix", "reason", "cause", "member"),
    [
        # GroupCoordinator.scala 3.2+ (CompletingRebalance): a static member restarted under its instance id
        (
            "[GroupCoordinator 1]: Preparing to rebalance group orders in state PreparingRebalance with old "
            "generation 12 (__consumer_offsets-46)",
            "Updating metadata for static member orders-0-6c1e with instance id Some(orders-0); client reason: ",
            "member_joined",
            "orders-0-6c1e",
        ),
        # GroupMetadataManager.java 4.x: the same, instance id printed bare, empty client reason as "not provided"
        (
            f"{J} Preparing to rebalance group orders in state PreparingRebalance with old generation 12",
            "Updating metadata for static member orders-0-6c1e with instance id orders-0; client reason: not provided",
            "member_joined",
            "orders-0-6c1e",
        ),
        # GroupCoordinator.scala 3.2+ / GroupMetadataManager.java 4.x (Stable, protocol change); a client reason wins
        (
            f"{J} Preparing to rebalance group orders in state PreparingRebalance with old generation 12",
            "Group's selectedProtocol will change because static member orders-0-6c1e with instance id orders-0 "
            "joined with change of protocol; client reason: subscription has changed from [a] to [a, b]",
            "subscription_change",
            "orders-0-6c1e",
        ),
        # GroupCoordinator.scala 3.x / GroupMetadataManager.java 4.x: the leader's assignment could not be stored
        (
            f"{J} Preparing to rebalance group orders in state PreparingRebalance with old generation 12",
            "Error NOT_COORDINATOR when storing group assignment during SyncGroup (member: c-1-9f0d)",
            "failed_previous",
            "c-1-9f0d",
        ),
    ],
)
def test_static_and_sync_store_rebalance_reasons(prefix: str, reason: str, cause: str, member: str) -> None:
    suffix = f" {SCALA}" if prefix.startswith("[GroupCoordinator 1]") else "."
    event = only_event(f"[2025-06-30 13:13:14,468] INFO {prefix} (reason: {reason}){suffix}")
    assert (event.event, event.group_id, event.generation) == (K.REBALANCE_PREPARE, "orders", 12)
    assert (event.details["cause"], event.member_id) == (cause, member)


@pytest.mark.parametrize(
    ("client_reason", "cause"),
    [
        ("Shutdown requested", "enforced"),  # Streams StreamThread 3.x/4.x enforceRebalance
        ("Active tasks corrupted", "enforced"),  # Streams StreamThread 3.x/4.x enforceRebalance
        ("rebalance enforced by user", "enforced"),  # ClassicKafkaConsumer/KafkaConsumer.enforceRebalance() default
        ("need to revoke partitions and re-join", "enforced"),  # ConsumerCoordinator, cooperative second rebalance
        ("received assignment does not match the current subscription", "subscription_change"),
        ("group is already rebalancing", "unknown"),
    ],
)
def test_client_reasons_of_a_rejoining_member(client_reason: str, cause: str) -> None:
    reason = f"Updating metadata for member c-1-9f0d during Stable; client reason: {client_reason}"
    assert cause_of_reason(reason)[:3] == (cause, "c-1-9f0d", client_reason)


# GroupMetadataManager.java 3.7.0-3.8.x: KIP-848 joins before the line named the protocol (only `consumer` members
# then), 3.8's static replacement by a member with an unknown id, 3.7.0's target assignment without its duration.
@pytest.mark.parametrize(
    ("text", "fields", "details"),
    [
        (
            f"{J} [GroupId orders] Member u2N8 joins the consumer group. {JAVA}",
            {"member_id": "u2N8", "group_instance_id": None},
            {"protocol": "consumer"},
        ),
        (
            f"{J} [GroupId orders] Static member u2N8 with instance id orders-0 joins the consumer group. {JAVA}",
            {"member_id": "u2N8", "group_instance_id": "orders-0"},
            {"protocol": "consumer", "static": "true"},
        ),
        (
            f"{J} [GroupId orders] Static member u2N8 with instance id orders-0 re-joins the consumer group. {JAVA}",
            {"member_id": "u2N8", "group_instance_id": "orders-0"},
            {"protocol": "consumer", "static": "true"},
        ),
        (
            f"{J} [GroupId orders] Static member with unknown member id and instance id orders-0 re-joins the consumer "
            f"group. Created a new member Zq9 to replace the existing member u2N8. {JAVA}",
            {"member_id": "Zq9", "group_instance_id": "orders-0"},
            {"protocol": "consumer", "replaced_member_id": "u2N8"},
        ),
    ],
)
def test_kip848_joins_in_the_3_7_and_3_8_wording(text: str, fields: dict[str, object], details: dict[str, str]) -> None:
    event = only_event(text)
    assert (event.event, event.group_id) == (K.JOIN, "orders")
    for name, value in fields.items():
        assert getattr(event, name) == value, name
    for key, value in details.items():
        assert event.details.get(key) == value, key


def test_target_assignment_without_its_duration_in_3_7_0() -> None:
    event = only_event(
        f"{J} [GroupId orders] Computed a new target assignment for epoch 7 with 'uniform' assignor: "
        f"{{u2N8=MemberAssignment(...)}}. {JAVA}"
    )
    assert (event.event, event.details["target_assignment_epoch"], event.details["assignor"]) == (
        K.ASSIGNMENT,
        "7",
        "uniform",
    )
    assert event.details.get("duration_ms") is None
