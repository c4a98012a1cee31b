"""`radar.clock/1` ticks: the record format, and their routing to `clock_ticks` among other telemetry."""

from __future__ import annotations

import pyarrow as pa
import pytest

from rebalance_radar.transforms.telemetry.batch import parse_telemetry_batch, parsed_batch_ddl
from rebalance_radar.transforms.telemetry.clock import ClockTick, clock_tick_record, parse_clock_tick


def test_a_tick_round_trips() -> None:
    record = clock_tick_record(1_763_780_000_123, "radar-run@host-1")
    assert record == b'{"schema": "radar.clock/1", "ts": 1763780000123, "emitter": "radar-run@host-1"}'
    assert parse_clock_tick(record) == ClockTick(1_763_780_000_123, "radar-run@host-1")
    assert parse_clock_tick(b'{"schema":"radar.clock/1","ts":5,"emitter":"x"}') == ClockTick(5, "x")


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"",
        b'{"schema": "radar.clock/2", "ts": 5, "emitter": "x"}',
        b'{"schema": "radar.clock/1", "ts": "5", "emitter": "x"}',
        b'{"schema": "radar.clock/1", "ts": -1, "emitter": "x"}',
        b'{"schema": "radar.clock/1", "ts": 5, "emitter": ""}',
        b'{"schema": "radar.clock/1", "ts": 5}',
        b'{"schema": "radar.clock/1", "ts": 5, "emitter": "x", "extra": 1}',
        b'{"schema": "radar.clock/1", "ts": true, "emitter": "x"}',
        b'{"schema": "radar.clock/1", "ts": 5, "emitter": "x"',
        b'["radar.clock/1"]',
        b'{"schema": "radar.event/1", "event": "heartbeat", "ts": 5, "group_id": "radar.clock/1"}',
    ],
)
def test_anything_else_is_not_a_tick(value: bytes | None) -> None:
    assert parse_clock_tick(value) is None


def test_ticks_route_to_clock_ticks_between_other_telemetry(spark: object) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    schema = to_arrow_schema(StructType.fromDDL(parsed_batch_ddl()))
    values = [
        b"\xff\xfe garbage",
        clock_tick_record(1_763_780_000_500, "radar-run@a"),
        b'{"schema": "radar.event/1", "event": "heartbeat", "ts": 1763780000000, "group_id": "g"}',
        clock_tick_record(1_763_780_001_500, "radar-run@a"),
    ]
    n = len(values)
    batch = pa.RecordBatch.from_pydict(
        {
            "key": pa.array([None] * n, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "topic": ["radar.telemetry"] * n,
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([1_763_780_002_000_000] * n, pa.timestamp("us", tz="UTC")),
        }
    )
    out = parse_telemetry_batch(batch, schema).to_pylist()
    assert [row["target"] for row in out] == ["quarantine", "clock_ticks", "heartbeat_events", "clock_ticks"]
    assert [row["tick"] is None for row in out] == [True, False, True, False]
    tick = out[3]["tick"]
    assert int(tick["tick_time"].timestamp() * 1000) == 1_763_780_001_500 and tick["emitter"] == "radar-run@a"
