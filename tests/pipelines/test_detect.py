"""The detection query on real Spark and real Delta: projection, watermark, timers, MERGE, replay, restart.

The rules here are the stand-in's (tests/pipelines/detect_tracker_stand_in.py): these tests are about what the
Spark side must guarantee whatever the rules are.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.config import RadarConfig
from pipelines.detect import TrackerBinding, detector_input, start_detect
from pipelines.ingest import run_replay
from pipelines.tables import TableCatalog, ensure_tables
from tests.pipelines.detect_tracker_stand_in import StandInThresholds, StandInTracker, group_event_from_row
from tests.pipelines.ingest_support import isolated_config, table, wait_for
from transforms.schemas import (
    CLOCK_TICKS,
    DETECTIONS,
    DETECTOR_INPUT,
    GROUP_HEALTH,
    GROUP_METADATA,
    GROUP_RECORDS,
    HEARTBEAT_EVENTS,
    OFFSET_COMMITS,
    DetectionKind,
    DetectionStatus,
    TableSchema,
)

pytestmark = pytest.mark.spark

STAND_IN = TrackerBinding(StandInTracker, group_event_from_row, StandInThresholds)
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "consumer_offsets.sample.jsonl"
T0 = datetime(2026, 11, 23, 9, 0, 0, tzinfo=UTC)
GROUP = "orders"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def heartbeat(seconds: float, member: str, offset: int, event: str = "heartbeat") -> dict[str, Any]:
    return {
        "cluster": "local",
        "src_topic": "radar.telemetry",
        "src_partition": 0,
        "src_offset": offset,
        "src_timestamp": at(seconds),
        "event_time": at(seconds),
        "group_id": GROUP,
        "member_id": member,
        "event": event,
        "source": "json",
    }


def tick(seconds: float, offset: int) -> dict[str, Any]:
    return {
        "cluster": "local",
        "src_topic": "radar.telemetry",
        "src_partition": 0,
        "src_offset": offset,
        "src_timestamp": at(seconds),
        "tick_time": at(seconds),
        "emitter": "test",
    }


def append(spark: SparkSession, config: RadarConfig, schema: TableSchema, rows: list[dict[str, Any]]) -> None:
    """Append rows (one Delta commit) as ingest would; absent columns are null."""
    full = [tuple(row.get(name) for name in schema.column_names) for row in rows]
    spark.createDataFrame(full, schema.ddl).write.format("delta").mode("append").save(
        str(TableCatalog(config).location(schema))
    )


def detections(spark: SparkSession, config: RadarConfig) -> list[dict[str, Any]]:
    return [row.asDict() for row in table(spark, config, DETECTIONS).orderBy("detected_at", "member_id").collect()]


def run_once(spark: SparkSession, config: RadarConfig, checkpoint: str = "detect") -> None:
    query = start_detect(spark, config, checkpoint_name=checkpoint, available_now=True, binding=STAND_IN)
    query.awaitTermination(180)
    assert query.exception() is None, query.exception()


@pytest.fixture
def config(radar_config: RadarConfig, tmp_path: Path, spark: SparkSession) -> RadarConfig:
    config = isolated_config(radar_config, tmp_path / "data")
    ensure_tables(spark, config)
    return config


def test_projection_of_replayed_silver_tables(spark: SparkSession, config: RadarConfig) -> None:
    counts = run_replay(config, [str(SAMPLE)])
    rows = detector_input(spark, config, streaming=False)

    assert tuple(rows.columns) == DETECTOR_INPUT.column_names
    assert [f.dataType.simpleString() for f in rows.schema.fields] == [
        f.dataType.simpleString() for f in spark.createDataFrame([], DETECTOR_INPUT.ddl).schema.fields
    ]
    per_table = {r["src_table"]: r["count"] for r in rows.groupBy("src_table").count().collect()}
    expected = {t.name: counts[t.name] for t in (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS, HEARTBEAT_EVENTS)}
    assert {k: v for k, v in per_table.items()} == {k: v for k, v in expected.items() if v}
    assert sum(expected.values()) > 0
    # event_time is the record timestamp for decoded records; their own columns survive, others are null
    commits = rows.where("src_table = 'offset_commits'")
    assert commits.where("event_time IS NULL OR event_time <> src_timestamp").count() == 0
    assert commits.where("committed_offset IS NULL AND NOT is_tombstone").count() == 0
    assert commits.where("members IS NOT NULL OR event IS NOT NULL").count() == 0
    metadata = rows.where("src_table = 'group_metadata' AND NOT is_tombstone")
    assert metadata.count() == 0 or metadata.where("generation IS NULL").count() == 0


def test_out_of_order_and_late_rows_reach_the_tracker_in_order(spark: SparkSession, config: RadarConfig) -> None:
    # batch 1, written newest first: the watermark after it is 5 - 2 = 3 s
    append(spark, config, HEARTBEAT_EVENTS, [heartbeat(5, "m1", 3), heartbeat(1, "m2", 2), heartbeat(0, "m1", 1)])
    run_once(spark, config)
    # batch 2: m1 at 4 s is late by 1 s (< the 2 s lateness): it must still be processed before m1's 5 s event
    append(spark, config, HEARTBEAT_EVENTS, [heartbeat(20, "m2", 5), heartbeat(4, "m1", 4)])
    run_once(spark, config)
    first = detections(spark, config)
    # batch 3: m2 speaks again at 30 s, so m2's 20 s event is processed and resolves its silence (same id)
    append(spark, config, HEARTBEAT_EVENTS, [heartbeat(30, "m2", 6)])
    run_once(spark, config)
    final = detections(spark, config)

    assert [(d["member_id"], d["detected_at"], d["status"]) for d in first] == [
        ("m2", at(11).replace(tzinfo=None), "open"),
        ("m1", at(15).replace(tzinfo=None), "open"),
    ]
    m1 = next(d for d in final if d["member_id"] == "m1")
    assert [e["offset"] for e in json.loads(m1["evidence"])] == [1, 4, 3]  # event order, not arrival order
    assert len(final) == 2 and len({d["detection_id"] for d in final}) == 2
    m2 = next(d for d in final if d["member_id"] == "m2")
    assert m2["detection_id"] == next(d for d in first if d["member_id"] == "m2")["detection_id"]
    assert (m2["status"], m2["resolved_at"]) == (str(DetectionStatus.RESOLVED), at(20).replace(tzinfo=None))
    health = table(spark, config, GROUP_HEALTH).collect()
    assert len(health) == 1 and health[0]["last_event_at"] == at(20).replace(tzinfo=None)


def test_clock_ticks_alone_fire_a_silence_detection(spark: SparkSession, config: RadarConfig) -> None:
    append(spark, config, HEARTBEAT_EVENTS, [heartbeat(0, "m1", 1)])
    query = start_detect(spark, config, checkpoint_name="live", binding=STAND_IN)

    def watermark() -> str | None:
        return (query.lastProgress or {}).get("eventTime", {}).get("watermark")

    try:
        wait_for(lambda: query.lastProgress is not None, 300, "the first detection batch")
        for first in (1, 6, 11):  # the group is silent; only the clock speaks, in three commits
            append(spark, config, CLOCK_TICKS, [tick(second, second) for second in range(first, first + 5)])
        wait_for(
            lambda: len(detections(spark, config)) > 0,
            300,
            "the silence detection fired by ticks",
        )
    except AssertionError as failure:
        raise AssertionError(f"{failure}; watermark {watermark()}, last progress {query.lastProgress}") from None
    finally:
        query.stop()
    assert query.exception() is None
    (found,) = detections(spark, config)
    assert (found["kind"], found["member_id"]) == (str(DetectionKind.HEARTBEAT_AT_RISK), "m1")
    assert found["detected_at"] == at(10).replace(tzinfo=None)


def _replay_input() -> list[list[dict[str, Any]]]:
    """Chunks of heartbeats and ticks in arrival order (each chunk late by < the lateness at most)."""
    chunks: list[list[dict[str, Any]]] = []
    offset = 0
    for start in range(0, 60, 6):
        chunk = []
        for second in range(start, start + 6):
            offset += 1
            if second % 17 == 0:
                chunk.append(heartbeat(second, "m1", offset))
            if second % 23 == 0:
                chunk.append(heartbeat(second, "m2", offset, "member_expired" if second == 46 else "heartbeat"))
            if second == 9:
                chunk.append(heartbeat(second, "m2", offset))
        chunks.append(chunk)
    return chunks


def tracker_alone(chunks: list[list[dict[str, Any]]], final_watermark: datetime) -> list[tuple[Any, ...]]:
    """What the tracker decides given every event and the final watermark, without Spark: the oracle."""
    tracker = StandInTracker("local", GROUP, StandInThresholds())
    tracker.accept(
        event
        for chunk in chunks
        for row in chunk
        if (event := group_event_from_row({**row, "src_table": "heartbeat_events"}))
    )
    latest: dict[str, dict[str, Any]] = {}
    for row in tracker.advance_to(int(final_watermark.timestamp() * 1000)).detections:
        latest[row["detection_id"]] = row
    return sorted(
        (r["detection_id"], r["kind"], r["member_id"], r["detected_at"].replace(tzinfo=None), r["status"])
        for r in latest.values()
    )


def _ticks(chunk_index: int) -> list[dict[str, Any]]:
    return [tick(second, 1000 + second) for second in range(chunk_index * 6, chunk_index * 6 + 6)]


def test_replay_determinism_one_run_versus_many(spark: SparkSession, radar_config: RadarConfig, tmp_path: Path) -> None:
    one = isolated_config(radar_config, tmp_path / "one")
    many = isolated_config(radar_config, tmp_path / "many")
    ensure_tables(spark, one)
    ensure_tables(spark, many)
    chunks = _replay_input()
    for index, chunk in enumerate(chunks):
        append(spark, one, HEARTBEAT_EVENTS, chunk)
        append(spark, one, CLOCK_TICKS, _ticks(index))
    run_once(spark, one)
    for index, chunk in enumerate(chunks):
        append(spark, many, HEARTBEAT_EVENTS, chunk)
        append(spark, many, CLOCK_TICKS, _ticks(index))
        if index % 3 == 2 or index == len(chunks) - 1:
            run_once(spark, many)

    def outcome(config: RadarConfig) -> list[tuple[Any, ...]]:
        rows = table(spark, config, DETECTIONS).select("detection_id", "kind", "member_id", "detected_at", "status")
        return sorted(tuple(r) for r in rows.collect())

    expected = outcome(one)
    assert expected == tracker_alone(chunks, final_watermark=at(59 - 2))  # the last tick is at 59 s
    assert Counter(r[1] for r in expected).keys() == {"heartbeat_at_risk", "heartbeat_expiration"}
    assert outcome(many) == expected


def test_restart_from_checkpoint_writes_no_duplicates(spark: SparkSession, config: RadarConfig) -> None:
    chunks = _replay_input()
    for index, chunk in enumerate(chunks[:5]):
        append(spark, config, HEARTBEAT_EVENTS, chunk)
        append(spark, config, CLOCK_TICKS, _ticks(index))
    run_once(spark, config)
    before = sorted(tuple(r) for r in table(spark, config, DETECTIONS).collect())
    run_once(spark, config)  # restart, nothing new
    assert sorted(tuple(r) for r in table(spark, config, DETECTIONS).collect()) == before
    for index, chunk in enumerate(chunks[5:], start=5):
        append(spark, config, HEARTBEAT_EVENTS, chunk)
        append(spark, config, CLOCK_TICKS, _ticks(index))
    run_once(spark, config)  # restart with more data
    ids = [r["detection_id"] for r in table(spark, config, DETECTIONS).collect()]
    assert len(ids) == len(set(ids)) > len(before)
    groups = [(r["cluster"], r["group_id"]) for r in table(spark, config, GROUP_HEALTH).collect()]
    assert groups == [("local", GROUP)]
