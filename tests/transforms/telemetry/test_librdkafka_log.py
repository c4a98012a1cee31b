"""librdkafka log lines (src/rdkafka_cgrp.c) in its default stderr layout and confluent-kafka-python's logger layout."""

from __future__ import annotations

import json

import pytest

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.schemas import TelemetrySource as S
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

TS = 1_714_564_800_000
MAXPOLL = (
    "Application maximum poll interval (300000ms) exceeded by 1234ms (adjust max.poll.interval.ms for "
    "long-running message processing): leaving group"
)


def stderr(level: int, facility: str, message: str) -> str:
    """`rd_kafka_log_print`: `%<level>|<epoch s>.<ms>|<FAC>|<name>| <message>` (thread name on by default)."""
    return f"%{level}|1700000000.123|{facility}|orders-worker#consumer-1| [thrd:main]: {message}"


def only_event(text: str) -> HeartbeatEvent:
    outcome = parse_telemetry_record(text.encode(), TS)
    assert outcome.recognised, outcome.reason
    (event,) = outcome.events
    assert event.source is S.CLIENT_LOG
    return event


@pytest.mark.parametrize(
    ("text", "kind", "fields", "details"),
    [
        # rdkafka_cgrp.c v1.6-v2.15, MAXPOLL (WARNING)
        (
            stderr(4, "MAXPOLL", MAXPOLL),
            K.POLL_TIMEOUT,
            {"client_id": "orders-worker", "event_time": 1_700_000_000_123},
            {"max_poll_interval_ms": "300000", "exceeded_ms": "1234"},
        ),
        # rdkafka_cgrp.c v1.6-v2.15, SESSTMOUT (WARNING)
        (
            stderr(
                4,
                "SESSTMOUT",
                "Consumer group session timed out (in join-state steady) after 45123 ms without a successful response "
                "from the group coordinator (broker 1, last error was Broker: Not coordinator): revoking assignment "
                "and rejoining group",
            ),
            K.SESSION_TIMEOUT,
            {"error": "NOT_COORDINATOR"},
            {"join_state": "steady", "elapsed_ms": "45123", "coordinator": "1"},
        ),
        # rdkafka_cgrp.c v1.6-v2.x, COMMITFAIL (WARNING), older partition format `topic[p]@offset(err)`
        (
            stderr(
                4,
                "COMMITFAIL",
                "Offset commit (manual) failed for 1/2 partition(s) in join-state wait-join: Broker: Unknown member: "
                "orders[3]@42(Broker: Unknown member)",
            ),
            K.COMMIT_FAILED,
            {"error": "UNKNOWN_MEMBER_ID"},
            {"commit_mode": "manual", "failed_partitions": "orders-3", "join_state": "wait-join"},
        ),
        # rdkafka_cgrp.c v2.15, COMMITFAIL with the topic id printed: `topic(<id>)[p]@offset(err)`
        (
            stderr(
                4,
                "COMMITFAIL",
                "Offset commit (cgrp auto commit) failed for 2/2 partition(s) in join-state steady: Broker: Specified "
                "group generation id is not valid: orders(Vt2xWzKQRkGm3eD1iXbQbw)[0]@7(Broker: Specified group "
                "generation id is not valid), orders((null))[1]@9(Broker: Specified group generation id is not valid)",
            ),
            K.COMMIT_FAILED,
            {"error": "ILLEGAL_GENERATION"},
            {"commit_mode": "cgrp auto commit", "failed_partitions": "orders-0,orders-1", "failed_count": "2"},
        ),
        # rdkafka_cgrp.c v2.15.0, HEARTBEAT (ERR) for KIP-848 groups: only the ERR_ACTION_SPECIAL error
        # (TOPIC_AUTHORIZATION_FAILED) reaches this statement; fenced/unknown members take the debug one below
        (
            stderr(
                3,
                "HEARTBEAT",
                "ConsumerGroupHeartbeat failed: Broker: Topic authorization failed: Topic authorization failed for "
                "topics [orders]",
            ),
            K.HEARTBEAT_FAILED,
            {"error": "TOPIC_AUTHORIZATION_FAILED"},
            {"protocol": "consumer"},
        ),
        # rdkafka.c rd_kafka_set_fatal_error0 (EMERG) with rdkafka_cgrp.c's FENCED_INSTANCE_ID handling
        (
            stderr(
                0,
                "FATAL",
                "Fatal error: Broker: Static consumer fenced by other consumer with same group.instance.id: Fatal "
                "consumer error: Broker: Static consumer fenced by other consumer with same group.instance.id",
            ),
            K.HEARTBEAT_FAILED,
            {"error": "FENCED_INSTANCE_ID"},
            {"fatal": "true"},
        ),
        # confluent-kafka-python's log callback: logger.log(level, "%s [%s] %s", fac, name, buf)
        (
            f"2024-05-01 12:00:01,500 WARNING MAXPOLL [orders-worker#consumer-1] [thrd:main]: {MAXPOLL}",
            K.POLL_TIMEOUT,
            {"client_id": "orders-worker", "event_time": TS + 1500},
            {"exceeded_ms": "1234"},
        ),
    ],
)
def test_librdkafka_wording(text: str, kind: K, fields: dict[str, object], details: dict[str, str]) -> None:
    event = only_event(text)
    assert event.event is kind
    assert event.group_id is None  # librdkafka's messages never name the group
    for name, value in fields.items():
        assert getattr(event, name) == value, name
    for key, value in details.items():
        assert event.details.get(key) == value, key


IG = "Broker: Specified group generation id is not valid"
FI = "Broker: Static consumer fenced by other consumer with same group.instance.id"
UR = "Broker: The instance ID is still used by another member in the consumer group"


@pytest.mark.parametrize(
    ("text", "kind", "fields", "details"),
    [
        # rdkafka_cgrp.c v2.15.0 COMMITFAIL with rdkafka_partition.c's topic id (v2.4.0+): standard base64, unpadded,
        # so `+` and `/` occur
        (
            stderr(
                4,
                "COMMITFAIL",
                "Offset commit (manual) failed for 2/2 partition(s) in join-state steady: Broker: The member epoch is "
                "stale: orders(vZ+Qk3/4TnKxq0bEa1Yw7g)[0]@7(Broker: The member epoch is stale), "
                "orders(vZ+Qk3/4TnKxq0bEa1Yw7g)[1]@9(Broker: The member epoch is stale)",
            ),
            K.COMMIT_FAILED,
            {"error": "STALE_MEMBER_EPOCH"},
            {"failed_partitions": "orders-0,orders-1", "failed_count": "2", "commit_mode": "manual"},
        ),
        # SESSTMOUT (rdkafka_cgrp.c v2.3.0-v2.15.0) with rd_kafka_err2str's "Broker: Coordinator load in progress"
        (
            stderr(
                4,
                "SESSTMOUT",
                "Consumer group session timed out (in join-state wait-assign-call) after 10004 ms without a "
                "successful response from the group coordinator (broker -1, last error was Broker: Coordinator load "
                "in progress): revoking assignment and rejoining group",
            ),
            K.SESSION_TIMEOUT,
            {"error": "COORDINATOR_LOAD_IN_PROGRESS"},
            {"join_state": "wait-assign-call", "coordinator": "-1"},
        ),
        # rdkafka.c v2.15.0 rd_kafka_set_fatal_error0 (EMERG) of rdkafka_request.c's OffsetCommit FENCED_INSTANCE_ID
        (
            stderr(0, "FATAL", f"Fatal error: {FI}: OffsetCommit failed: {FI}"),
            K.COMMIT_FAILED,
            {"error": "FENCED_INSTANCE_ID"},
            {"fatal": "true"},
        ),
        # ... of rdkafka_cgrp.c's "ConsumerGroupHeartbeat fatal error: %s" (KIP-848, v2.4.0-v2.15.0)
        (
            stderr(0, "FATAL", f"Fatal error: {UR}: ConsumerGroupHeartbeat fatal error: {UR}"),
            K.HEARTBEAT_FAILED,
            {"error": "UNRELEASED_INSTANCE_ID"},
            {"fatal": "true"},
        ),
        (
            stderr(
                0,
                "FATAL",
                "Fatal error: Broker: Consumer group has reached maximum size: ConsumerGroupHeartbeat fatal error: "
                "Broker: Consumer group has reached maximum size",
            ),
            K.HEARTBEAT_FAILED,
            {"error": "GROUP_MAX_SIZE_REACHED"},
            {"fatal": "true"},
        ),
        # debug=cgrp: rdkafka_cgrp.c v2.3.0-v2.15.0 rd_kafka_cgrp_handle_Heartbeat (classic protocol)
        (
            stderr(
                7,
                "HEARTBEAT",
                'Group "orders" heartbeat error response in state up (join-state steady, 3 partition(s) '
                f"assigned): {IG}",
            ),
            K.HEARTBEAT_FAILED,
            {"group_id": "orders", "error": "ILLEGAL_GENERATION"},
            {"join_state": "steady", "assigned_count": "3", "protocol": "classic"},
        ),
        # debug=consumer: rdkafka_cgrp.c v2.4.0-v2.15.0 rd_kafka_cgrp_handle_ConsumerGroupHeartbeat (KIP-848)
        (
            stderr(
                7,
                "HEARTBEAT",
                "ConsumerGroupHeartbeat failed due to: Broker: The member epoch is fenced by the group coordinator: "
                "will rejoin the group",
            ),
            K.HEARTBEAT_FAILED,
            {"error": "FENCED_MEMBER_EPOCH"},
            {"protocol": "consumer"},
        ),
        (
            stderr(
                7, "HEARTBEAT", "ConsumerGroupHeartbeat failed due to: Broker: Unknown member: will rejoin the group"
            ),
            K.HEARTBEAT_FAILED,
            {"error": "UNKNOWN_MEMBER_ID"},
            {"protocol": "consumer"},
        ),
        # debug=cgrp: rdkafka_cgrp.c v2.3.0-v2.15.0 rd_kafka_cgrp_handle_SyncGroup
        (
            stderr(
                7, "GRPSYNC", 'Group "orders": synchronization failed: Broker: Group rebalance in progress: rejoining'
            ),
            K.SYNC_FAILED,
            {"group_id": "orders", "error": "REBALANCE_IN_PROGRESS"},
            {},
        ),
        # debug=cgrp: rdkafka_cgrp.c v2.3.0-v2.15.0 rd_kafka_cgrp_handle_JoinGroup
        (
            stderr(
                7,
                "JOINGROUP",
                "JoinGroup response: GenerationId 6, Protocol range, LeaderId rdkafka-0b1c (me), my MemberId "
                "rdkafka-0b1c, member metadata count 2: (no error)",
            ),
            K.JOIN,
            {"generation": 6, "member_id": "rdkafka-0b1c", "error": None},
            {"phase": "joined", "protocol": "range", "leader": "true", "member_count": "2"},
        ),
        (
            stderr(
                7,
                "JOINGROUP",
                "JoinGroup response: GenerationId -1, Protocol , LeaderId , my MemberId , member metadata count 0: "
                "Broker: Unknown member",
            ),
            K.JOIN_FAILED,
            {"generation": None, "member_id": None, "error": "UNKNOWN_MEMBER_ID"},
            {},
        ),
        # debug=cgrp: rdkafka_cgrp.c v2.3.0-v2.15.0 rd_kafka_cgrp_assignment_set_lost via revoke_all_rejoin (EAGER)
        (
            stderr(
                7,
                "LOST",
                'Group "orders": current assignment of 3 partition(s) lost: illegal generation: revoking assignment '
                "and rejoining",
            ),
            K.MEMBER_REMOVED,
            {"group_id": "orders", "reason": "illegal generation"},
            {"change": "lost", "partition_count": "3"},
        ),
        # confluent-kafka-python's logger layout of the same debug line
        (
            '2024-05-01 12:00:01,500 DEBUG HEARTBEAT [orders-worker#consumer-1] [thrd:main]: Group "orders" '
            "heartbeat error response in state up (join-state steady, 0 partition(s) assigned): Broker: Unknown member",
            K.HEARTBEAT_FAILED,
            {"group_id": "orders", "error": "UNKNOWN_MEMBER_ID", "client_id": "orders-worker"},
            {"assigned_count": "0"},
        ),
    ],
)
def test_librdkafka_audited_wording(text: str, kind: K, fields: dict[str, object], details: dict[str, str]) -> None:
    event = only_event(text)
    assert event.event is kind
    assert event.client_id == "orders-worker"
    for name, value in fields.items():
        assert getattr(event, name) == value, name
    for key, value in details.items():
        assert event.details.get(key) == value, key


def test_json_wrapped_librdkafka_line_takes_the_shippers_group() -> None:
    message = stderr(4, "MAXPOLL", MAXPOLL)
    record = json.dumps({"@timestamp": "2024-05-01T12:00:02Z", "group_id": "orders", "message": message})
    event = only_event(record)
    assert (event.event, event.group_id, event.event_time) == (K.POLL_TIMEOUT, "orders", 1_700_000_000_123)
    assert only_event(json.dumps({"message": message})).group_id is None


@pytest.mark.parametrize(
    "text",
    [
        # debug-level chatter (debug=cgrp) is not read
        stderr(7, "HEARTBEAT", 'GroupCoordinator/1: Heartbeat for group "g" generation id 3'),
        # other fatal errors say nothing about membership
        stderr(0, "FATAL", "Fatal error: Broker: Topic authorization failed: Fatal consumer error"),
        # a REQTMOUT warning is a broker request timing out, not the group session
        stderr(4, "REQTMOUT", "b1:9092/1: Timed out FetchRequest in flight (after 30001ms, timeout #0)"),
        "Consumer group session timed out: see the runbook",
        # rdkafka_cgrp.c v2.3.0-v2.15.0 debug lines about the coordinator or topics, not membership
        stderr(
            7,
            "HEARTBEAT",
            "Heartbeat failed due to coordinator (b1:9092/1) no longer available: Broker: Not coordinator: re-querying "
            "for coordinator",
        ),
        stderr(
            7,
            "LOST",
            'Group "orders": current assignment of 3 partition(s) lost: 1 subscribed topic(s) no longer exist',
        ),
    ],
)
def test_librdkafka_near_misses_produce_no_event(text: str) -> None:
    outcome = parse_telemetry_record(text.encode(), TS)
    assert not outcome.recognised


def test_unrecognised_librdkafka_lines_count_as_client_log() -> None:
    """rdkafka_request.c v2.15.0 (rd_rkb_dbg, broker `GroupCoordinator/1`): not read, but counted as a client line."""
    outcome = parse_telemetry_record(
        stderr(7, "HEARTBEAT", 'GroupCoordinator/1: Heartbeat for group "orders" generation id 5').encode(), TS
    )
    assert (outcome.recognised, outcome.source) == (False, S.CLIENT_LOG)
