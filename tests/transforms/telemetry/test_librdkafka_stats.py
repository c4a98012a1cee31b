"""librdkafka statistics -> snapshot and rebalance events."""

from __future__ import annotations

import json
from typing import Any

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.schemas import TelemetrySource as S
from rebalance_radar.transforms.telemetry.librdkafka_stats import is_librdkafka_stats, parse_librdkafka_stats
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

TS = 1_714_564_800_000


def stats(**cgrp: Any) -> dict[str, Any]:
    return {
        "name": "rdkafka#consumer-1",
        "client_id": "orders-worker",
        "type": "consumer",
        "ts": 5_000_000_123,
        "time": 1_714_564_900,
        "brokers": {},
        "cgrp": {
            "state": "up",
            "stateage": 3000,
            "join_state": "steady",
            "rebalance_age": 4000,
            "rebalance_cnt": 2,
            "rebalance_reason": "group rebalanced (memberId m-1)",
            "assignment_size": 6,
            **cgrp,
        },
    }


def test_steady_consumer_gives_heartbeat_and_last_rebalance() -> None:
    outcome = parse_librdkafka_stats(stats(), TS)
    heartbeat, rebalance = outcome.events
    assert (heartbeat.event, heartbeat.event_time, heartbeat.client_id) == (
        K.HEARTBEAT,
        1_714_564_900_000,
        "orders-worker",
    )
    assert heartbeat.details["assignment_size"] == "6"
    assert heartbeat.details["join_state"] == "steady"
    assert (rebalance.event, rebalance.event_time) == (K.REBALANCE_PREPARE, 1_714_564_896_000)
    assert rebalance.reason == "group rebalanced (memberId m-1)"
    assert rebalance.details["dedupe_key"] == "orders-worker:2"
    assert {e.source for e in outcome.events} == {S.LIBRDKAFKA_STATS}


def test_no_rebalance_event_before_the_first_rebalance() -> None:
    outcome = parse_librdkafka_stats(stats(rebalance_cnt=0, rebalance_reason=""), TS)
    assert [e.event for e in outcome.events] == [K.HEARTBEAT]


def test_lost_coordinator_is_a_failed_heartbeat() -> None:
    outcome = parse_librdkafka_stats(stats(state="wait-coord", rebalance_cnt=0), TS)
    assert [e.event for e in outcome.events] == [K.HEARTBEAT_FAILED]
    assert outcome.events[0].reason == "consumer group state wait-coord"


def test_init_state_and_producers_are_unrecognised_librdkafka() -> None:
    init = parse_librdkafka_stats(stats(state="init", rebalance_cnt=0), TS)
    assert (init.recognised, init.source) == (False, S.LIBRDKAFKA_STATS)
    producer = {"name": "rdkafka#producer-1", "type": "producer", "ts": 1, "time": 1_714_564_900}
    assert is_librdkafka_stats(producer)
    assert not parse_telemetry_record(json.dumps(producer).encode(), TS).recognised
    assert parse_telemetry_record(json.dumps(producer).encode(), TS).source is S.LIBRDKAFKA_STATS


def test_group_id_added_by_a_wrapper_is_used_and_missing_time_falls_back() -> None:
    obj = stats()
    obj["group_id"] = "orders"
    del obj["time"]
    outcome = parse_telemetry_record(json.dumps(obj).encode(), TS)
    assert {e.group_id for e in outcome.events} == {"orders"}
    assert outcome.events[0].event_time == TS
