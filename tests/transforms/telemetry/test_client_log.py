"""Consumer and Streams client log lines: the logging prefix, layouts, and messages beyond the seeds."""

from __future__ import annotations

import pytest

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.schemas import TelemetrySource as S
from rebalance_radar.transforms.telemetry.client_log import parse_client_log_line
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent

TS = 1_714_564_800_000
PREFIX = "[Consumer clientId=consumer-CG-1, groupId=CG]"


def only_event(text: str, tz: str = "UTC") -> HeartbeatEvent:
    outcome = parse_client_log_line(text, TS, tz)
    assert outcome.recognised, outcome.reason
    (event,) = outcome.events
    assert event.source is S.CLIENT_LOG
    return event


def test_spring_boot_layout_prefix_and_generation() -> None:
    event = only_event(
        "2023-08-01 15:00:26.306  INFO 6 --- [ntainer#0-0-C-1] o.a.k.c.c.internals.ConsumerCoordinator  : "
        f"{PREFIX} Successfully joined group with generation Generation{{generationId=3, "
        "memberId='consumer-CG-1-b071', protocol='range'}"
    )
    assert (event.event, event.group_id, event.client_id) == (K.JOIN, "CG", "consumer-CG-1")
    assert (event.generation, event.member_id, event.details["protocol"]) == (3, "consumer-CG-1-b071", "range")
    assert event.event_time == 1_690_902_026_306


def test_naive_time_is_read_in_the_configured_zone() -> None:
    text = f"[2024-05-01 14:00:00,000] INFO {PREFIX} Received successful Heartbeat response"
    assert only_event(text).event_time == TS + 2 * 3_600_000
    assert only_event(text, "Europe/Berlin").event_time == TS


def test_explicit_offset_wins_over_zone() -> None:
    text = f"2024-05-01T14:00:00.000+02:00 INFO {PREFIX} Received successful Heartbeat response"
    assert only_event(text, "America/New_York").event_time == TS


def test_static_member_prefix_gives_instance_id() -> None:
    event = only_event(
        "[Consumer instanceId=orders-0, clientId=c-1, groupId=orders] Successfully synced group in generation "
        "Generation{generationId=9, memberId='orders-0-abc', protocol='cooperative-sticky'}"
    )
    assert (event.event, event.group_instance_id, event.generation) == (K.SYNC, "orders-0", 9)


def test_leave_group_with_coordinator_and_poll_timeout_reason() -> None:
    event = only_event(
        f"{PREFIX} Member consumer-CG-1-b071 sending LeaveGroup request to coordinator b-1:9098 (id: 2147483646 "
        "rack: null) due to consumer poll timeout has expired. This means the time between subsequent calls to "
        "poll() was longer than the configured max.poll.interval.ms"
    )
    assert (event.event, event.member_id) == (K.LEAVE, "consumer-CG-1-b071")
    assert event.details["coordinator"] == "b-1:9098 (id: 2147483646 rack: null)"
    assert event.details["cause"] == "poll_timeout"


@pytest.mark.parametrize("first", ["consumer", "Consumer"])
def test_poll_timeout_in_both_consumers_wording(first: str) -> None:
    """The classic consumer's heartbeat thread and the KIP-848 (async) consumer word the overrun differently."""
    event = only_event(
        f"{PREFIX} {first} poll timeout has expired. This means the time between subsequent calls to poll() was "
        "longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending "
        "too much time processing messages."
    )
    assert event.event == K.POLL_TIMEOUT


def test_session_timeout_keeps_coordinator() -> None:
    event = only_event(
        f"{PREFIX} Group coordinator b-1:9092 (id: 2147483646 rack: null) is unavailable or invalid due to cause: "
        "session timed out without receiving a heartbeat response. isDisconnected: false. Rediscovery will be attempted."  # noqa: E501
    )
    assert event.event is K.SESSION_TIMEOUT
    assert event.details["coordinator"] == "b-1:9092 (id: 2147483646 rack: null)"


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (
            "JoinGroup failed: The coordinator is not aware of this member. Need to re-join the group. Sent generation "
            "was Generation{generationId=5, memberId='m', protocol='range'}",
            "UNKNOWN_MEMBER_ID",
        ),
        (
            "SyncGroup failed: Specified group generation id is not valid. Need to re-join the group. Sent generation "
            "was Generation{generationId=5, memberId='m', protocol='range'}",
            "ILLEGAL_GENERATION",
        ),
    ],
)
def test_group_request_failures_carry_error_name_and_generation(message: str, error: str) -> None:
    event = only_event(f"{PREFIX} {message}")
    assert (event.error, event.generation, event.member_id) == (error, 5, "m")


def test_commit_failures() -> None:
    partition = only_event(
        f"{PREFIX} Offset commit failed on partition orders-3 at offset 120: The coordinator is not aware of this member."  # noqa: E501
    )
    assert (partition.event, partition.error) == (K.COMMIT_FAILED, "UNKNOWN_MEMBER_ID")
    assert (partition.details["partition"], partition.details["offset"]) == ("orders-3", "120")
    exception = only_event(
        "Caused by: org.apache.kafka.clients.consumer.CommitFailedException: Offset commit cannot be completed since "
        "the consumer is not part of an active group for auto partition assignment; it is likely that the consumer "
        "was kicked out of the group."
    )
    assert exception.event is K.COMMIT_FAILED
    assert exception.reason == "the consumer is not part of an active group for auto partition assignment"


def test_partition_changes_count_partitions() -> None:
    assigned = only_event(f"{PREFIX} Adding newly assigned partitions: t-2, t-1, t-0")
    assert (assigned.event, assigned.details["change"], assigned.details["partition_count"]) == (
        K.ASSIGNMENT,
        "assigned",
        "3",
    )
    lost = only_event(f"{PREFIX} Lost previously assigned partitions t-0, t-1")
    assert (lost.details["change"], lost.details["partition_count"]) == ("lost", "2")
    revoked = only_event(f"{PREFIX} Revoke previously assigned partitions ")
    assert (revoked.details["change"], revoked.details["partition_count"]) == ("revoked", "0")
    notified = only_event(f"{PREFIX} Notifying assignor about the new Assignment(partitions=[t-0, t-4])")
    assert (notified.details["change"], notified.details["partition_count"]) == ("received", "2")


def test_join_request_with_member_id_in_reason() -> None:
    event = only_event(
        f"{PREFIX} Request joining group due to: need to re-join with the given member-id: consumer-CG-1-b071"
    )
    assert (event.event, event.member_id) == (K.JOIN, "consumer-CG-1-b071")


@pytest.mark.parametrize(
    "text",
    [
        f"{PREFIX} Subscribed to topic(s): orders",
        f"{PREFIX} Resetting offset for partition orders-3 to position FetchPosition{{offset=0}}",
        "We had a rebalance storm last night; the heartbeat looked fine and nobody joined the group.",
        "Attempting to join group failed? no, the JoinGroupRequest was fine",
        "The consumer poll timeout is configured with max.poll.interval.ms",
    ],
)
def test_near_misses_produce_no_event(text: str) -> None:
    assert not parse_client_log_line(text, TS).recognised


# --- Wording audited against the client sources (docs/telemetry-wording.md, "Source audit"). Each case is a line
# built from the format string of the named file and version, with the fields the detectors read.
GEN5 = "Generation{generationId=5, memberId='consumer-CG-1-0a1b', protocol='range'}"
NO_GEN = "Generation{generationId=-1, memberId='', protocol='null'}"
THREAD = "stream-thread [app-225712b8-b54d-4043-a7e1-c489ee4f8fd5-StreamThread-1]"


@pytest.mark.parametrize(
    ("text", "kind", "fields", "details"),
    [
        # ConsumerCoordinator 3.x/4.x (INFO): a refused commit, with the generation it was sent in
        (
            f"{PREFIX} OffsetCommit failed with {GEN5}: The coordinator is not aware of this member.",
            K.COMMIT_FAILED,
            {"generation": 5, "member_id": "consumer-CG-1-0a1b", "error": "UNKNOWN_MEMBER_ID"},
            {},
        ),
        (
            f"{PREFIX} OffsetCommit failed with {GEN5}: Specified group generation id is not valid.",
            K.COMMIT_FAILED,
            {"generation": 5, "error": "ILLEGAL_GENERATION"},
            {},
        ),
        (
            f"{PREFIX} OffsetCommit failed with {GEN5} due to group instance id inst-1 fenced",
            K.COMMIT_FAILED,
            {"generation": 5, "group_instance_id": "inst-1", "error": "FENCED_INSTANCE_ID"},
            {},
        ),
        # CommitRequestManager 3.9+/4.x (ERROR), the KIP-848 consumer (3.8 already has the last two)
        (
            f"{PREFIX} OffsetCommit failed for member Mx2 with stale member epoch error. Last epoch sent: 4",
            K.COMMIT_FAILED,
            {"member_id": "Mx2", "member_epoch": 4, "error": "STALE_MEMBER_EPOCH", "group_id": "CG"},
            {},
        ),
        (f"{PREFIX} OffsetCommit failed with UNKNOWN_MEMBER_ID", K.COMMIT_FAILED, {"error": "UNKNOWN_MEMBER_ID"}, {}),
        (
            f"{PREFIX} OffsetCommit failed due to group instance id fenced: inst-1",
            K.COMMIT_FAILED,
            {"group_instance_id": "inst-1", "error": "FENCED_INSTANCE_ID"},
            {},
        ),
        # AbstractCoordinator 3.x/4.x (ERROR): a static member fenced while joining or syncing
        (
            f"{PREFIX} JoinGroup failed: The group instance id inst-1 has been fenced by another instance. "
            f"Sent generation was {GEN5}",
            K.JOIN_FAILED,
            {"generation": 5, "error": "FENCED_INSTANCE_ID"},
            {},
        ),
        (
            f"{PREFIX} SyncGroup failed: The group instance id inst-1 has been fenced by another instance. "
            f"Sent generation was {GEN5}",
            K.SYNC_FAILED,
            {"error": "FENCED_INSTANCE_ID"},
            {},
        ),
        # AbstractCoordinator 3.x/4.x (INFO): the printed generation is the reset one, not the one sent
        (
            f"{PREFIX} Generation data was cleared by heartbeat thread to {NO_GEN} and state is now "
            "PREPARING_REBALANCE before receiving SyncGroup response, marking this rebalance as failed and retry",
            K.SYNC_FAILED,
            {"generation": None, "member_id": None},
            {"member_state": "PREPARING_REBALANCE", "generation_reset": "true"},
        ),
        # ConsumerCoordinator 3.x / ConsumerRebalanceListenerInvoker 4.x (INFO): onPartitionsLost
        (
            f"{PREFIX} Lost previously assigned partitions t-0, t-1",
            K.MEMBER_REMOVED,
            {"group_id": "CG", "client_id": "consumer-CG-1"},
            {"change": "lost", "partition_count": "2"},
        ),
        # AbstractHeartbeatRequestManager 3.7+/4.x (INFO, via logInfo "{} in {}ms: {}")
        (
            f"{PREFIX} ConsumerGroupHeartbeatRequest failed for member Mx2 because epoch 5 is fenced. in 0ms: The "
            "consumer group member has a smaller member epoch (5) than the one known by the group coordinator (6).",
            K.HEARTBEAT_FAILED,
            {"member_id": "Mx2", "member_epoch": 5, "error": "FENCED_MEMBER_EPOCH"},
            {"protocol": "consumer"},
        ),
        (
            f"{PREFIX} ConsumerGroupHeartbeatRequest failed because member Mx2 is unknown. in 0ms: null",
            K.HEARTBEAT_FAILED,
            {"member_id": "Mx2", "error": "UNKNOWN_MEMBER_ID"},
            {},
        ),
        # AbstractHeartbeatRequestManager 3.7+/4.x (ERROR, every error response; the only one at WARN level)
        (
            f"{PREFIX} ConsumerGroupHeartbeatRequest failed because of FENCED_MEMBER_EPOCH: ClientResponse("
            "receivedTimeMs=1, latencyMs=2, disconnected=false)",
            K.HEARTBEAT_FAILED,
            {"error": "FENCED_MEMBER_EPOCH"},
            {},
        ),
        # HeartbeatRequestManager 3.7-3.8: the same without "Consumer" (INFO), and "GroupHeartbeat failed" (ERROR)
        (
            f"{PREFIX} GroupHeartbeatRequest failed for member Mx2 because epoch 5 is fenced. in 0ms: x",
            K.HEARTBEAT_FAILED,
            {"member_id": "Mx2", "member_epoch": 5, "error": "FENCED_MEMBER_EPOCH"},
            {"protocol": "consumer"},
        ),
        (
            f"{PREFIX} GroupHeartbeat failed because of UNKNOWN_MEMBER_ID: ClientResponse(receivedTimeMs=1)",
            K.HEARTBEAT_FAILED,
            {"error": "UNKNOWN_MEMBER_ID"},
            {},
        ),
        # CommitRequestManager 3.7 (ERROR): the partition and offset in the line
        (
            f"{PREFIX} OffsetCommit failed with UNKNOWN_MEMBER_ID on partition t-0 for offset 42",
            K.COMMIT_FAILED,
            {"error": "UNKNOWN_MEMBER_ID"},
            {"partition": "t-0", "offset": "42"},
        ),
        (
            f"{PREFIX} OffsetCommit failed on partition t-0 for offset 42: The coordinator is not aware of this "
            "member.",
            K.COMMIT_FAILED,
            {"error": "UNKNOWN_MEMBER_ID", "reason": "The coordinator is not aware of this member."},
            {"partition": "t-0", "offset": "42"},
        ),
        # ConsumerHeartbeatRequestManager 4.x (ERROR)
        (
            f"{PREFIX} ConsumerGroupHeartbeatRequest failed due to fenced instance id inst-1: msg. This is expected "
            "in the case that the member was removed from the group by an admin client, and another member joined "
            "using the same group instance id.",
            K.HEARTBEAT_FAILED,
            {"group_instance_id": "inst-1", "error": "FENCED_INSTANCE_ID"},
            {},
        ),
        (
            f"{PREFIX} ConsumerGroupHeartbeatRequest failed due to unreleased instance id inst-1: msg",
            K.HEARTBEAT_FAILED,
            {"error": "UNRELEASED_INSTANCE_ID"},
            {},
        ),
        # StreamsGroupHeartbeatRequestManager 4.1+ (INFO)
        (
            f"{PREFIX} StreamsGroupHeartbeatRequest failed for member Mx2 because epoch 5 is fenced. in 0ms: x",
            K.HEARTBEAT_FAILED,
            {"member_id": "Mx2", "member_epoch": 5, "error": "FENCED_MEMBER_EPOCH"},
            {"protocol": "streams"},
        ),
        # HeartbeatRequestManager 3.8, AbstractHeartbeatRequestManager 3.9+/4.x (WARN), at the poll() after the overrun
        (
            f"{PREFIX} Time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, "
            "exceeded approximately by 1234 ms. Member Mx2 will rejoin the group now.",
            K.POLL_TIMEOUT,
            {"member_id": "Mx2"},
            {"exceeded_ms": "1234", "late": "true"},
        ),
        # StreamsRebalanceListener 2.8+/3.x/4.x (ERROR)
        (
            f"{THREAD} A Kafka Streams client in this Kafka Streams application is requesting to shutdown the "
            "application",
            K.SHUTDOWN_REQUESTED,
            {"group_id": "app"},
            {},
        ),
        # StreamsGroupHeartbeatRequestManager 4.1+ (WARN): the coordinator's SHUTDOWN_APPLICATION status
        (
            f"{PREFIX} Membership is in the following statuses: (2) Streams group member Mx9 encountered a fatal "
            "error and requested a shutdown for the entire application.",
            K.SHUTDOWN_REQUESTED,
            {"group_id": "CG"},
            {"protocol": "streams"},
        ),
        # StreamsRebalanceListener 3.x/4.x (INFO)
        (f"{THREAD} Received version probing code VERSION_PROBING", K.VERSION_PROBING, {"group_id": "app"}, {}),
        # StreamThread 3.x/4.x (INFO / WARN)
        (
            f"{THREAD} Active task(s) got corrupted. Triggering a rebalance.",
            K.FOLLOWUP_REBALANCE,
            {"group_id": "app"},
            {"cause": "task_corrupted"},
        ),
        (
            f"{THREAD} Detected that the thread is being fenced. This implies that this thread missed a rebalance "
            "and dropped out of the consumer group. Will close out all assigned tasks and rejoin the consumer group.",
            K.MEMBER_REMOVED,
            {"group_id": "app"},
            {"change": "lost", "cause": "task_migrated"},
        ),
    ],
)
def test_audited_client_wording(text: str, kind: K, fields: dict[str, object], details: dict[str, str]) -> None:
    event = only_event(f"[2025-06-30 13:13:14,468] INFO {text}")
    assert event.event is kind
    for name, value in fields.items():
        assert getattr(event, name) == value, name
    for key, value in details.items():
        assert event.details.get(key) == value, key


@pytest.mark.parametrize(
    "text",
    [
        # AbstractCoordinator 3.x/4.x: duplicates of the more specific line logged just before (see the audit)
        f"{PREFIX} Resetting generation and member id due to: encountered UNKNOWN_MEMBER_ID from HEARTBEAT response",
        f"{PREFIX} Giving away all assigned partitions as lost since generation/memberID has been reset,indicating "
        "that consumer is in old state or no longer part of the group",
        # CommitRequestManager 3.7+/4.x: not a membership failure
        f"{PREFIX} OffsetCommit timeout expired so it won't be retried anymore",
        f"{THREAD} Received version probing code of a different kind",
    ],
)
def test_audited_client_near_misses_produce_no_event(text: str) -> None:
    assert not parse_client_log_line(f"[2025-06-30 13:13:14,468] INFO {text}", TS).recognised


def test_a_membership_state_change_is_a_state_change_event() -> None:
    # AbstractMembershipManager 3.7+/4.x (kafka-clients 4.3.1 l.246), INFO: the FENCED change follows the heartbeat
    # failure that fenced the member, which is what the detectors read; the change itself is history
    event = only_event(
        f"[2025-06-30 13:13:14,468] INFO {PREFIX} Member Mx2 with epoch 5 transitioned from STABLE to FENCED."
    )
    assert (event.event, event.member_id, event.member_epoch) == (K.STATE_CHANGE, "Mx2", 5)
    assert (event.details["protocol"], event.details["from_state"], event.details["to_state"]) == (
        "consumer",
        "STABLE",
        "FENCED",
    )


def test_a_wrong_coordinator_in_a_kip848_heartbeat_is_a_lost_coordinator() -> None:
    # AbstractHeartbeatRequestManager 4.3.1 l.367 (NOT_COORDINATOR), INFO: like the classic client's "Group coordinator
    # ... is unavailable or invalid", the member keeps its membership while it finds its coordinator again
    event = only_event(
        f"[2025-06-30 13:13:14,468] INFO {PREFIX} ConsumerGroupHeartbeatRequest failed because the group coordinator "
        "b1:9092 (id: 1) is incorrect. Will attempt to find the coordinator again and retry in 0ms: Not coordinator."
    )
    assert (event.event, event.error, event.details["cause"]) == (
        K.HEARTBEAT_FAILED,
        "NOT_COORDINATOR",
        "coordinator_unavailable",
    )


# --- Commit failures the audit had missed: each line is built from the named format string, with a log4j layout.
OFFSETS = (
    "{orders-3=OffsetAndMetadata{offset=120, leaderEpoch=null, metadata=''}, "
    "orders-7=OffsetAndMetadata{offset=88, leaderEpoch=4, metadata=''}}"
)


@pytest.mark.parametrize(
    ("text", "details"),
    [
        # ConsumerCoordinator 3.3+/4.x (ERROR), onJoinPrepare: "Asynchronous auto-commit of offsets failed: joinPrepare
        # timeout. Will continue to join group"
        (
            f"{PREFIX} Asynchronous auto-commit of offsets failed: joinPrepare timeout. Will continue to join group",
            {"commit_mode": "asynchronous", "join_prepare": "true"},
        ),
        # ConsumerCoordinator 3.3+/4.x (ERROR): "Asynchronous auto-commit of offsets failed: {}. Will continue to join
        # group." with the exception's message
        (
            f"{PREFIX} Asynchronous auto-commit of offsets failed: The coordinator is not aware of this member.. Will "
            "continue to join group.",
            {"commit_mode": "asynchronous", "join_prepare": "true"},
        ),
        # CommitRequestManager 3.9+/4.x (WARN, KIP-848 consumer): "Auto-commit of offsets {} failed", exception after
        (
            f"{PREFIX} Auto-commit of offsets {OFFSETS} failed",
            {"commit_mode": "auto", "partitions": "orders-3,orders-7", "partition_count": "2"},
        ),
        # CommitRequestManager 3.7-3.8 (WARN): "Asynchronous auto-commit of offsets {} failed", exception after
        (
            f"{PREFIX} Asynchronous auto-commit of offsets {OFFSETS} failed",
            {"commit_mode": "asynchronous", "partitions": "orders-3,orders-7"},
        ),
        # ConsumerCoordinator 2.x-4.x (ERROR), the default callback of commitAsync(): "Offset commit with offsets {}
        # failed", exception after
        (
            f"{PREFIX} Offset commit with offsets {OFFSETS} failed",
            {"commit_mode": "async", "partitions": "orders-3,orders-7", "partition_count": "2"},
        ),
    ],
)
def test_commit_failures_without_a_partition_error(text: str, details: dict[str, str]) -> None:
    event = only_event(f"[2025-06-30 13:13:14,468] ERROR {text} (org.apache.kafka.clients.consumer.internals.X)")
    assert (event.event, event.group_id, event.client_id) == (K.COMMIT_FAILED, "CG", "consumer-CG-1")
    for key, value in details.items():
        assert event.details.get(key) == value, key


def test_commit_failure_error_comes_from_the_exception_in_the_same_record() -> None:
    """A shipper that keeps the stack trace in the record (multiline) gives the exception its error name."""
    event = only_event(
        f"[2025-06-30 13:13:14,468] ERROR {PREFIX} Offset commit with offsets {OFFSETS} failed\n"
        "org.apache.kafka.clients.consumer.RetriableCommitFailedException: Offset commit failed with a retriable "
        "exception. You should retry committing the latest consumed offsets.\n"
        "Caused by: org.apache.kafka.common.errors.UnknownMemberIdException: The coordinator is not aware of this "
        "member."
    )
    assert (event.event, event.error, event.details["partitions"]) == (
        K.COMMIT_FAILED,
        "UNKNOWN_MEMBER_ID",
        "orders-3,orders-7",
    )
    auto = only_event(
        f"[2025-06-30 13:13:14,468] WARN {PREFIX} Auto-commit of offsets {OFFSETS} failed\n"
        "org.apache.kafka.clients.consumer.CommitFailedException: OffsetCommit failed with unknown member ID. The "
        "coordinator is not aware of this member."
    )
    assert (auto.event, auto.error) == (K.COMMIT_FAILED, "UNKNOWN_MEMBER_ID")


def test_synchronous_auto_commit_keeps_its_message() -> None:
    event = only_event(
        f"[2025-06-30 13:13:14,468] WARN {PREFIX} Synchronous auto-commit of offsets {OFFSETS} failed: Offset commit "
        "cannot be completed since the consumer is not part of an active group for auto partition assignment; it is "
        "likely that the consumer was kicked out of the group."
    )
    assert (event.event, event.details["commit_mode"], event.details["partition_count"]) == (
        K.COMMIT_FAILED,
        "synchronous",
        "2",
    )
    assert event.reason is not None and event.reason.startswith("Offset commit cannot be completed since")


# AbstractCoordinator 2.0-2.2 (INFO): the heartbeat failures later logged as "Attempt to heartbeat with ...".
@pytest.mark.parametrize(
    ("text", "error", "fields"),
    [
        (
            "Attempt to heartbeat failed since generation 7 is not current",
            "ILLEGAL_GENERATION",
            {"generation": 7},
        ),
        (
            "Attempt to heartbeat failed for since member id consumer-CG-1-0a1b is not valid.",
            "UNKNOWN_MEMBER_ID",
            {"member_id": "consumer-CG-1-0a1b"},
        ),
        ("Attempt to heartbeat failed since group is rebalancing", "REBALANCE_IN_PROGRESS", {}),
    ],
)
def test_legacy_heartbeat_failures_name_their_error(text: str, error: str, fields: dict[str, object]) -> None:
    event = only_event(f"[2019-03-04 10:00:00,000] INFO {PREFIX} {text}")
    assert (event.event, event.error) == (K.HEARTBEAT_FAILED, error)
    for name, value in fields.items():
        assert getattr(event, name) == value, name


def test_fatal_join_error_message_maps_to_its_name() -> None:
    # AbstractCoordinator 3.x/4.x (ERROR) with Errors.GROUP_MAX_SIZE_REACHED.message()
    event = only_event(
        f"[2025-06-30 13:13:14,468] ERROR {PREFIX} JoinGroup failed due to fatal error: The consumer group has "
        "reached its max size."
    )
    assert (event.event, event.error) == (K.JOIN_FAILED, "GROUP_MAX_SIZE_REACHED")


def test_disconnected_from_coordinator_past_the_rebalance_timeout_is_a_session_timeout() -> None:
    # AbstractCoordinator 2.8+/3.x/4.x (WARN): "Consumer has been disconnected from the group coordinator for {}ms"
    event = only_event(
        f"[2025-06-30 13:13:14,468] WARN {PREFIX} Consumer has been disconnected from the group coordinator for "
        "301542ms (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
    )
    assert (event.event, event.group_id, event.client_id) == (K.SESSION_TIMEOUT, "CG", "consumer-CG-1")
    assert (event.details["disconnected_ms"], event.details["logger"]) == (
        "301542",
        "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator",
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        # AbstractHeartbeatRequestManager.java trunk 1eb7644 (2024-10-25), ERROR: "{} failed due to {}: {}", the
        # name from ConsumerHeartbeatRequestManager.heartbeatRequestName(), the message Errors' own
        (
            "ConsumerGroupHeartbeatRequest failed due to GROUP_MAX_SIZE_REACHED: The consumer group has reached its "
            "max size.",
            "GROUP_MAX_SIZE_REACHED",
        ),
        # 3.9.0-rc3 HeartbeatRequestManager.java: "GroupHeartbeatRequest failed due to {}: {}" (Errors' own message)
        (
            "GroupHeartbeatRequest failed due to UNSUPPORTED_ASSIGNOR: The assignor or its version range is not "
            "supported by the consumer group.",
            "UNSUPPORTED_ASSIGNOR",
        ),
        # AbstractHeartbeatRequestManager.java trunk 1eb7644, ERROR: "{} failed due to unexpected error {}: {}"
        (
            "ConsumerGroupHeartbeatRequest failed due to unexpected error INVALID_GROUP_ID: The configured groupId is "
            "invalid.",
            "INVALID_GROUP_ID",
        ),
    ],
)
def test_fatal_kip848_heartbeat_errors_are_named(text: str, error: str) -> None:
    event = only_event(
        f"[2025-06-30 13:13:14,468] ERROR {PREFIX} {text} "
        "(org.apache.kafka.clients.consumer.internals.ConsumerHeartbeatRequestManager)"
    )
    assert (event.event, event.error, event.group_id) == (K.HEARTBEAT_FAILED, error, "CG")
    assert event.details["protocol"] == "consumer"


# Audited against AbstractCoordinator 3.9/trunk and the KIP-848 membership managers (3.9 MembershipManagerImpl,
# trunk AbstractMembershipManager / ConsumerMembershipManager) on 2026-11-28.
CLASSIC_LOGGER = "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
ASYNC_LOGGER = "(org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager)"
COORDINATOR = "broker-2:9092 (id: 2147483645 rack: null)"


@pytest.mark.parametrize(
    ("cause", "error", "disconnected"),
    [
        ("error response NOT_COORDINATOR", "NOT_COORDINATOR", "false"),
        ("error response COORDINATOR_NOT_AVAILABLE", "COORDINATOR_NOT_AVAILABLE", "false"),
        ("coordinator unavailable", None, "true"),
        ("Disconnected from node 2", None, "true"),
    ],
)
def test_a_lost_coordinator_is_a_failed_heartbeat_with_its_cause(
    cause: str, error: str | None, disconnected: str
) -> None:
    event = only_event(
        f"2024-11-28 10:00:00,123 INFO {PREFIX} Group coordinator {COORDINATOR} is unavailable or invalid due to "
        f"cause: {cause}. isDisconnected: {disconnected}. Rediscovery will be attempted. {CLASSIC_LOGGER}"
    )
    assert (event.event, event.group_id, event.error) == (K.HEARTBEAT_FAILED, "CG", error)
    assert event.details["cause"] == "coordinator_unavailable"
    assert (event.details["coordinator"], event.details["disconnected"]) == (COORDINATOR, disconnected)


def test_a_coordinator_lost_to_a_session_timeout_stays_a_session_timeout() -> None:
    event = only_event(
        f"2024-11-28 10:00:00,123 INFO {PREFIX} Group coordinator {COORDINATOR} is unavailable or invalid due to "
        "cause: session timed out without receiving a heartbeat response. isDisconnected: false. Rediscovery will be "
        f"attempted. {CLASSIC_LOGGER}"
    )
    assert event.event is K.SESSION_TIMEOUT


def test_join_refused_while_the_coordinator_loads_the_group() -> None:
    event = only_event(
        f"2024-11-28 10:00:00,123 INFO {PREFIX} JoinGroup failed: Coordinator {COORDINATOR} is loading the group. "
        f"{CLASSIC_LOGGER}"
    )
    assert (event.event, event.error) == (K.JOIN_FAILED, "COORDINATOR_LOAD_IN_PROGRESS")


def test_kip848_leave_and_fatal_state() -> None:
    leave = only_event(
        f"2024-11-28 10:00:00,123 INFO {PREFIX} Member Xy7Q is triggering callbacks to release assignment [t-0, t-1] "
        f"and leave group {ASYNC_LOGGER}"
    )
    assert (leave.event, leave.member_id, leave.details["protocol"]) == (K.LEAVE, "Xy7Q", "consumer")
    for state in ("fatal", "FATAL"):  # trunk AbstractMembershipManager / 3.7-3.9 MembershipManagerImpl
        fatal = only_event(
            f"2024-11-28 10:00:00,123 ERROR {PREFIX} Member Xy7Q with epoch 12 transitioned to {state} state"
        )
        assert (fatal.event, fatal.member_id, fatal.member_epoch) == (K.MEMBER_REMOVED, "Xy7Q", 12)
        assert (fatal.details["change"], fatal.details["cause"]) == ("lost", "fatal")
    other = parse_client_log_line(
        f"2024-11-28 10:00:00,123 DEBUG {PREFIX} Member Xy7Q with epoch 12 transitioned to FENCED state. It will "
        "release its assignment and rejoin the group.",
        TS,
    )
    assert not other.recognised


def test_a_heartbeat_answered_by_a_stale_coordinator_says_so() -> None:
    """AbstractCoordinator 2.x-4.x: NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (the line does not say which)."""
    event = only_event(
        f"2024-11-28 10:00:00,123 INFO {PREFIX} Attempt to heartbeat failed since coordinator {COORDINATOR} is either "
        f"not started or not valid {CLASSIC_LOGGER}"
    )
    assert (event.event, event.error) == (K.HEARTBEAT_FAILED, None)
    assert (event.details["cause"], event.details["coordinator"]) == ("coordinator_unavailable", COORDINATOR)
