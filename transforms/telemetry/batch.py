"""Batch-level telemetry parsing for Spark's `mapInArrow`: Kafka rows in, routed rows out.

Each heartbeat event is one `heartbeat_events` row. A record with no event is either counted (it is text or a
known kind of telemetry, e.g. an ordinary broker log line: `telemetry_unrecognised`) or quarantined (it is not
telemetry at all: binary garbage, empty), so records in = records with events + counted + quarantined.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from rebalance_radar.transforms.cyclic_gc import cyclic_gc_paused
from rebalance_radar.transforms.schemas import (
    CLOCK_TICKS,
    HEARTBEAT_EVENTS,
    PARSED_TELEMETRY_BATCH,
    PARTITION_END_OFFSETS,
    QUARANTINE,
    TELEMETRY_UNRECOGNISED,
    QuarantineStage,
    quarantine_row,
)
from rebalance_radar.transforms.telemetry.client_groups import ClientGroups
from rebalance_radar.transforms.telemetry.clock import parse_clock_tick
from rebalance_radar.transforms.telemetry.end_offsets import parse_end_offsets
from rebalance_radar.transforms.telemetry.events import EVENT_COLUMNS, RecordDetector
from rebalance_radar.transforms.telemetry.record_parser import DEFAULT_DETECTORS, parse_telemetry_record

TARGET_EVENTS = HEARTBEAT_EVENTS.name
TARGET_UNRECOGNISED = TELEMETRY_UNRECOGNISED.name
TARGET_QUARANTINE = QUARANTINE.name
TARGET_CLOCK_TICKS = CLOCK_TICKS.name
TARGET_END_OFFSETS = PARTITION_END_OFFSETS.name
UNDETECTED_TEXT = "text"  # `telemetry_unrecognised.source` for text that looked like no known kind
PAYLOAD_COLUMNS: tuple[str, ...] = tuple(p.column for p in PARSED_TELEMETRY_BATCH.payloads)


def parsed_batch_ddl() -> str:
    """Spark DDL of `parse_telemetry_batches` output (`PARSED_TELEMETRY_BATCH`)."""
    return PARSED_TELEMETRY_BATCH.ddl


def _is_text(value: bytes | None) -> bool:
    """Ordinary log noise is text; garbage (empty, binary, not UTF-8) is not."""
    if not value:
        return False
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _event_row(event: Any) -> dict[str, Any]:
    row = {name: getattr(event, name) for name in EVENT_COLUMNS}
    row["event_time"] = event.event_time * 1000  # ms -> Spark's microseconds
    row["event"] = event.event.value
    row["source"] = event.source.value
    row["details"] = list(event.details.items())
    return row


def parse_telemetry_batch(
    batch: pa.RecordBatch,
    schema: pa.Schema,
    tz: str = "UTC",
    detectors: tuple[RecordDetector, ...] = DEFAULT_DETECTORS,
    client_groups: ClientGroups | None = None,
) -> pa.RecordBatch:
    """Parse one Arrow batch of Kafka rows (key, value, topic, partition, offset, timestamp); `client_groups` carries
    what the task's earlier batches said of which client is in which group (`telemetry.client_groups`). The cyclic
    garbage collector waits until the batch is done (`transforms.cyclic_gc`; `benchmarks/telemetry.py` measures it)."""
    with cyclic_gc_paused():
        return _parse_telemetry_batch(batch, schema, tz, detectors, client_groups or ClientGroups())


def _parse_telemetry_batch(
    batch: pa.RecordBatch,
    schema: pa.Schema,
    tz: str,
    detectors: tuple[RecordDetector, ...],
    client_groups: ClientGroups,
) -> pa.RecordBatch:
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()  # microseconds
    index: list[int] = []
    targets: list[str] = []
    events: list[dict[str, Any] | None] = []
    unrecognised: list[dict[str, Any] | None] = []
    quarantine: list[dict[str, Any] | None] = []
    ticks: dict[int, dict[str, Any]] = {}  # output row -> clock tick
    end_offsets: dict[int, dict[str, Any]] = {}  # output row -> partition end offset
    for i, (key, value, stamp) in enumerate(zip(keys, values, stamps, strict=True)):
        tick = parse_clock_tick(value)
        if tick is not None:  # radar.clock/1 -> clock_ticks (the detectors' clock, not a heartbeat event)
            ticks[len(index)] = {"tick_time": tick.tick_time * 1000, "emitter": tick.emitter}
            index.append(i)
            targets.append(TARGET_CLOCK_TICKS)
            events.append(None)
            unrecognised.append(None)
            quarantine.append(None)
            continue
        poll = parse_end_offsets(value)
        if poll is not None:  # radar.end_offsets/1 -> partition_end_offsets, one row per partition
            for part in poll.partitions:
                end_offsets[len(index)] = {
                    "polled_at": poll.polled_at * 1000,
                    "group_id": poll.group_id,
                    "topic": part.topic,
                    "partition": part.partition,
                    "end_offset": part.end_offset,
                    "error": part.error,
                    "emitter": poll.emitter,
                }
                index.append(i)
                targets.append(TARGET_END_OFFSETS)
                events.append(None)
                unrecognised.append(None)
                quarantine.append(None)
            continue
        outcome = parse_telemetry_record(value, (stamp or 0) // 1000, tz, detectors)
        if outcome.events:
            for event in outcome.events:
                index.append(i)
                targets.append(TARGET_EVENTS)
                events.append(_event_row(event))
                unrecognised.append(None)
                quarantine.append(None)
            continue
        index.append(i)
        events.append(None)
        if outcome.source is not None or _is_text(value):
            targets.append(TARGET_UNRECOGNISED)
            kind = outcome.source.value if outcome.source is not None else UNDETECTED_TEXT
            unrecognised.append({"source": kind, "reason": outcome.reason})
            quarantine.append(None)
        else:
            targets.append(TARGET_QUARANTINE)
            unrecognised.append(None)
            quarantine.append(
                quarantine_row(QuarantineStage.PARSE_TELEMETRY, "unrecognised", outcome.reason, key=key, value=value)
            )
    client_groups.attribute(events, [keys[i] for i in index])
    take = pa.array(index, pa.int64())
    arrays = [
        batch.column(name).take(take).cast(schema.field(i).type)
        for i, name in enumerate(("topic", "partition", "offset", "timestamp"))
    ]
    arrays.append(pa.array(targets, pa.string()))
    tick_rows = [ticks.get(row) for row in range(len(index))]
    end_offset_rows = [end_offsets.get(row) for row in range(len(index))]
    payloads = {
        "event": events,
        "unrecognised": unrecognised,
        "quarantine": quarantine,
        "tick": tick_rows,
        "end_offset": end_offset_rows,
    }
    arrays += [pa.array(payloads[name], type=schema.field(name).type) for name in PAYLOAD_COLUMNS]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def parse_telemetry_batches(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, tz: str = "UTC"
) -> Iterator[pa.RecordBatch]:
    """The `mapInArrow` body for telemetry topics (one task's batches, which share what they say of clients' groups)."""
    client_groups = ClientGroups()
    for batch in batches:
        yield parse_telemetry_batch(batch, schema, tz, client_groups=client_groups)
