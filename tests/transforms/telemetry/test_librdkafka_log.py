"""librdkafka log lines (src/rdkafka_cgrp.c) in its default stderr layout and confluent-kafka-python's logger layout."""

from __future__ import annotations

import json

import pytest

from transforms.schemas import HeartbeatEventKind as K
from transforms.schemas import TelemetrySource as S
from transforms.telemetry.events import HeartbeatEvent
from transforms.telemetry.record_parser import parse_telemetry_record

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
        # rdkafka_cgrp.c v2.15, HEARTBEAT (ERR) for KIP-848 groups
        (
            stderr(
                3,
                "HEARTBEAT",
                "ConsumerGroupHeartbeat failed: Broker: The member epoch is fenced by the group "
                "coordinator: The consumer group member has a smaller member epoch",
            ),
            K.HEARTBEAT_FAILED,
            {"error": "FENCED_MEMBER_EPOCH"},
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
    ],
)
def test_librdkafka_near_misses_produce_no_event(text: str) -> None:
    outcome = parse_telemetry_record(text.encode(), TS)
    assert not outcome.recognised
