"""The project's own `radar.event/1` JSON events, valid and invalid."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.schemas import TelemetrySource as S
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

TS = 1_714_564_800_000


def radar(**fields: Any) -> bytes:
    obj = {"schema": "radar.event/1", "event": "commit_failed", "ts": TS + 5, "group_id": "orders", **fields}
    return json.dumps(obj).encode()


def test_valid_event_maps_every_field() -> None:
    outcome = parse_telemetry_record(
        radar(
            member_id="m-1",
            group_instance_id="i-0",
            generation=41,
            member_epoch=None,
            client_id="w-3",
            host="10.0.3.17",
            error="ILLEGAL_GENERATION",
            reason="commit after revoke",
            details={"partition": 3, "sync": False, "topic": "orders"},
        ),
        TS,
    )
    (event,) = outcome.events
    assert (event.event, event.source, event.event_time) == (K.COMMIT_FAILED, S.JSON, TS + 5)
    assert (event.group_id, event.member_id, event.group_instance_id, event.generation) == ("orders", "m-1", "i-0", 41)
    assert (event.client_id, event.host, event.error, event.reason) == (
        "w-3",
        "10.0.3.17",
        "ILLEGAL_GENERATION",
        "commit after revoke",
    )
    assert event.details == {"partition": "3", "sync": "false", "topic": "orders"}


@pytest.mark.parametrize(
    ("fields", "reason_part"),
    [
        ({"event": "rebalanced"}, "event"),
        ({"ts": "1714564800000"}, "ts"),
        ({"ts": -1}, "ts"),
        ({"group_id": ""}, "group_id"),
        ({"generation": 4.5}, "generation"),
        ({"error": "illegal generation"}, "error"),
        ({"details": {"nested": {"a": 1}}}, "details"),
        ({"unexpected": 1}, "unexpected"),
        ({"schema": "radar.event/2"}, "unsupported schema"),
    ],
)
def test_invalid_events_are_unrecognised_json_with_the_reason(fields: dict[str, Any], reason_part: str) -> None:
    outcome = parse_telemetry_record(radar(**fields), TS)
    assert not outcome.recognised
    assert outcome.source is S.JSON
    assert reason_part in (outcome.reason or "")


def test_missing_required_field() -> None:
    obj = json.loads(radar())
    del obj["group_id"]
    outcome = parse_telemetry_record(json.dumps(obj).encode(), TS)
    assert (outcome.recognised, outcome.source) == (False, S.JSON)
    assert "group_id" in (outcome.reason or "")


def test_json_lines_record_gives_every_event() -> None:
    value = radar(event="join") + b"\n" + radar(event="sync", generation=2) + b"\n"
    outcome = parse_telemetry_record(value, TS)
    assert [e.event for e in outcome.events] == [K.JOIN, K.SYNC]
