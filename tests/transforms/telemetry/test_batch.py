"""Telemetry batch parsing (what runs inside mapInArrow): every record is an event row, counted or quarantined."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from rebalance_radar.transforms.schemas import HeartbeatEventKind
from rebalance_radar.transforms.telemetry.batch import parse_telemetry_batch, parse_telemetry_batches, parsed_batch_ddl
from rebalance_radar.transforms.telemetry.client_groups import GROUP_FROM, GROUP_FROM_CLIENT_ID
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


RECORDED = Path(__file__).resolve().parents[2] / "data" / "streams-app"
PROBED_GROUP = "streams-version-probing-1796292453257086861"  # the recording's application id


def test_a_streams_client_with_its_own_client_id_has_its_group_from_its_consumers_lines(
    arrow_schema: pa.Schema,
) -> None:
    """A recorded version probe (kafka-streams 3.0.2 leader V1, 4.3.1 newcomer V2, each with `client.id` set): the
    assignor's, the threads' and the clients' lines name no group, their consumers' lines do; every event of both
    clients is the application's group, the version probes among them, and says where the group came from."""
    for name in ("version-probing-V1.log", "version-probing-V2.log"):
        lines = [line for line in (RECORDED / name).read_bytes().splitlines() if line.strip()]
        rows = [row["event"] for row in parse_telemetry_batch(_telemetry_batch(lines), arrow_schema).to_pylist()]
        events = [event for event in rows if event is not None and (event["client_id"] or "").startswith("version")]
        probes = [event for event in events if event["event"] == HeartbeatEventKind.VERSION_PROBING.value]
        assert probes, name
        assert {event["group_id"] for event in events} == {PROBED_GROUP}, name
        attributed = [event for event in events if (GROUP_FROM, GROUP_FROM_CLIENT_ID) in event["details"]]
        assert all(probe in attributed for probe in probes), name
        assert len(attributed) < len(events), name  # the consumers' own lines named it themselves


CONSUMER_LINE = (
    b"2026-12-03 10:07:51,300 INFO  [app-StreamThread-1] org.apache.kafka.clients.consumer.internals."
    b"ConsumerCoordinator - [Consumer clientId=app-StreamThread-1-consumer, groupId=orders] (Re-)joining group"
)
PROBE_LINE = (
    b"2026-12-03 10:07:51,312 INFO  [app-StreamThread-1] org.apache.kafka.streams.processor.internals."
    b"StreamsPartitionAssignor - stream-thread [app-StreamThread-1-consumer] Received a future (version probing) "
    b"subscription (version: 11). Sending assignment back (with supported version 10)."
)


def test_the_batches_of_one_task_share_what_they_say_of_a_clients_group(arrow_schema: pa.Schema) -> None:
    """The `mapInArrow` body: a later batch's assignor line takes the group an earlier batch's consumer line named;
    alone, it has none."""
    batches = iter([_telemetry_batch([CONSUMER_LINE]), _telemetry_batch([PROBE_LINE])])
    out = [batch.to_pylist() for batch in parse_telemetry_batches(batches, arrow_schema)]
    (probe,) = [row["event"] for row in out[1]]
    assert (probe["event"], probe["group_id"]) == (HeartbeatEventKind.VERSION_PROBING.value, "orders")
    alone = parse_telemetry_batch(_telemetry_batch([PROBE_LINE]), arrow_schema).to_pylist()[0]["event"]
    assert alone["group_id"] is None
