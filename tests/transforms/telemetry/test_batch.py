"""Telemetry batch parsing (what runs inside mapInArrow): every record is an event row, counted or quarantined."""

from __future__ import annotations

import pyarrow as pa
import pytest

from rebalance_radar.transforms.telemetry.batch import parse_telemetry_batch, parsed_batch_ddl
from tests.cyclic_collections import cyclic_collections

LINES = [
    b"[2025-11-22 02:53:21,101] INFO [GroupCoordinator 1]: Preparing to rebalance group payments in state "
    b"PreparingRebalance with old generation 9 (__consumer_offsets-12) (reason: removing member "
    b"consumer-payments-2-5f0c9a9e on heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)",
    b"[2025-11-22 02:53:22,000] INFO [LogLoader partition=orders-0] Loading producer state (kafka.log.LogLoader)",
    b"\xff\xfe\x00garbage",
    b"",
]


@pytest.fixture(scope="module")
def arrow_schema(spark: object) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    return to_arrow_schema(StructType.fromDDL(parsed_batch_ddl()))


def _telemetry_batch(lines: list[bytes]) -> pa.RecordBatch:
    n = len(lines)
    return pa.RecordBatch.from_pydict(
        {
            "key": pa.array([None] * n, pa.binary()),
            "value": pa.array(lines, pa.binary()),
            "topic": ["radar.telemetry"] * n,
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([1_763_780_000_000_000] * n, pa.timestamp("us", tz="UTC")),
        }
    )


def test_records_reconcile_into_events_counts_and_quarantine(arrow_schema: pa.Schema) -> None:
    out = parse_telemetry_batch(_telemetry_batch(LINES), arrow_schema).to_pylist()
    by_offset = {row["src_offset"]: row for row in out}
    assert sorted(by_offset) == [0, 1, 2, 3]  # nothing lost
    event = by_offset[0]["event"]
    assert by_offset[0]["target"] == "heartbeat_events"
    assert (event["event"], event["group_id"], event["generation"], event["source"]) == (
        "rebalance_prepare",
        "payments",
        9,
        "broker_log",
    )
    assert event["event_time"].year == 2025
    assert dict(event["details"]).get("cause") == "heartbeat_expiration"
    assert by_offset[1]["target"] == "telemetry_unrecognised"
    assert by_offset[1]["unrecognised"]["source"] == "text"
    for garbage in (2, 3):
        assert by_offset[garbage]["target"] == "quarantine"
        assert by_offset[garbage]["quarantine"]["stage"] == "parse_telemetry"
        assert by_offset[garbage]["quarantine"]["reason"]
    assert by_offset[2]["quarantine"]["value"] == LINES[2]


def test_no_cyclic_collection_runs_while_a_batch_is_parsed(arrow_schema: pa.Schema) -> None:
    """The cyclic collector waits until the batch is done (`transforms.cyclic_gc`), and is on again after."""
    import gc

    batch = _telemetry_batch(LINES * 2_500)
    with cyclic_collections() as collections:
        out = parse_telemetry_batch(batch, arrow_schema)
    assert gc.isenabled()
    assert len(collections) <= 1  # at most the one due as the collector comes back on
    assert out.num_rows == batch.num_rows
