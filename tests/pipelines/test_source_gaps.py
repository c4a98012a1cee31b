"""Offsets that move back under a running monitor are rows of `source_gaps`, never only a Spark log line (#9)."""

from __future__ import annotations

import io
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.runtime.console import StatusLine
from rebalance_radar.pipelines.stages.source_gaps import SourceGapRecorder
from rebalance_radar.pipelines.stages.streams import RunningQueries
from rebalance_radar.transforms.schemas import SOURCE_GAPS, SourceGapKind
from rebalance_radar.transforms.source_gaps import kafka_offsets, source_gaps
from tests.pipelines.ingest_support import create_topic, isolated_config, run_kafka_ingest_now, table, wait_for

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def gaps(start: str | None, end: str | None) -> list[tuple[str, int, str, int, int | None]]:
    start_offsets, end_offsets = (kafka_offsets(None if text is None else json.loads(text)) for text in (start, end))
    found = source_gaps(start_offsets, end_offsets, cluster="c", query="q", batch_id=7, detected_at=NOW)
    return [(g.src_topic, g.src_partition, g.kind, g.from_offset, g.to_offset) for g in found]


def test_offsets_that_move_forward_are_no_gap() -> None:
    assert gaps('{"t":{"0":10,"1":4}}', '{"t":{"0":12,"1":4}}') == []
    assert gaps(None, '{"t":{"0":12}}') == []  # a first batch
    assert gaps('{"t":{"0":1}}', '{"t":{"0":1,"1":0}}') == []  # a new partition is no gap


def test_a_partition_that_moved_back_or_vanished_is_a_gap() -> None:
    found = gaps('{"t":{"0":132,"1":9,"2":5},"u":{"0":3}}', '{"t":{"0":5,"1":9},"u":{"0":3}}')
    assert found == [
        ("t", 0, SourceGapKind.OFFSETS_MOVED_BACK, 132, 5),
        ("t", 2, SourceGapKind.PARTITION_GONE, 5, None),
    ]


def test_offsets_of_other_sources_are_ignored() -> None:
    assert kafka_offsets('{"logOffset": 3}') is None and kafka_offsets("not json") is None
    assert kafka_offsets({"logOffset": 3}) is None and kafka_offsets(None) is None
    assert kafka_offsets({"t": {"0": 4}}) == {"t": {"0": 4}}  # as parsed from a progress report's JSON
    assert gaps('{"logOffset": 3}', '{"logOffset": 1}') == []


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for n in range(count):
        producer.produce(topic, f"not telemetry {n}".encode())
    assert producer.flush(30) == 0


@pytest.mark.kafka
@pytest.mark.spark
def test_a_recreated_topic_under_the_checkpoint_is_recorded(
    spark: SparkSession, radar_config: RadarConfig, kafka_broker: object, tmp_path: Path
) -> None:
    """Delete and recreate a telemetry topic between two runs on one checkpoint: Spark only warns that the offset
    'was changed from 10 to 3'; the recorder keeps it as a row that says what it means."""
    bootstrap = kafka_broker.bootstrap_servers  # type: ignore[attr-defined]
    topic = f"gaps-{uuid.uuid4().hex[:8]}"
    config = isolated_config(radar_config, tmp_path / "data", telemetry_topics=(topic,))
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, 10)
    with SourceGapRecorder(spark, config, label="test") as first:
        read_progress(run_kafka_ingest_now(spark, config, bootstrap, telemetry_topics=[topic]), first)
    assert first.recorded == 0 and not first.failures

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    wait_for(lambda: topic not in admin.list_topics(timeout=10).topics, 60, f"{topic} deleted")
    # the broker refuses the name until it has finished removing the log: retried until it takes it
    wait_for(lambda: _recreated(bootstrap, topic), 60, f"{topic} recreated")
    produce(bootstrap, topic, 3)

    with SourceGapRecorder(spark, config, label="test") as second:
        read_progress(run_kafka_ingest_now(spark, config, bootstrap, telemetry_topics=[topic]), second)
    assert not second.failures
    rows = [r.asDict() for r in table(spark, config, SOURCE_GAPS).collect()]
    # this test's source feeds both ingest queries, so each met the move back once
    assert sorted(r["query"].split("-")[1] for r in rows) == ["offsets", "telemetry"]
    assert {(r["src_topic"], r["src_partition"], r["kind"], r["from_offset"], r["to_offset"]) for r in rows} == {
        (topic, 0, "offsets_moved_back", 10, 3)
    }
    assert all(r["cluster"] == config.cluster and "recreated" in r["message"] for r in rows)


def read_progress(queries: RunningQueries, recorder: SourceGapRecorder) -> None:
    """The ended queries' progress reports, read as `radar run`'s status line reads them, handed to `recorder`."""
    status = StatusLine("test", queries.all, stream=io.StringIO(), on_progress=recorder.note)
    status.count()
    assert sum(tally.batches for tally in status.tallies.values()) >= 1  # the reports were there to read


def _recreated(bootstrap: str, topic: str) -> bool:
    try:
        create_topic(bootstrap, topic, 1)
    except Exception:  # still marked for deletion: try again
        return False
    return True
