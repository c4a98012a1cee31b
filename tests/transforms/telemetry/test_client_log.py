"""Consumer and Streams client log lines: the logging prefix, layouts, and messages beyond the seeds."""

from __future__ import annotations

import pytest

from transforms.schemas import HeartbeatEventKind as K
from transforms.schemas import TelemetrySource as S
from transforms.telemetry.client_log import parse_client_log_line
from transforms.telemetry.events import HeartbeatEvent

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
        "INFO stream-thread [app-StreamThread-1] State transition from RUNNING to PARTITIONS_REVOKED",
        "We had a rebalance storm last night; the heartbeat looked fine and nobody joined the group.",
        "Attempting to join group failed? no, the JoinGroupRequest was fine",
        "The consumer poll timeout is configured with max.poll.interval.ms",
    ],
)
def test_near_misses_produce_no_event(text: str) -> None:
    assert not parse_client_log_line(text, TS).recognised
