"""`radar capture` against the real embedded broker: a dump of __consumer_offsets and a topic, decodable."""

from __future__ import annotations

import io
import json
import os
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.formats.capture import parse_time_ms, run_capture
from rebalance_radar.pipelines.formats.dump import read_dump
from rebalance_radar.pipelines.formats.dump_json import run_decode


@pytest.mark.kafka
def test_capture_writes_a_dump_that_decodes(kafka_broker: object, radar_config: RadarConfig, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers  # type: ignore[attr-defined]
    topic, group = f"capture-{uuid.uuid4().hex[:8]}", f"capture-group-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 17)], asynchronous=False)
    consumer.close()
    started = time.time() * 1000

    out = tmp_path / "capture.jsonl"
    written = run_capture(radar_config.kafka, bootstrap, ["__consumer_offsets", topic], out, env=os.environ)
    records = list(read_dump([out]))
    assert written == len(records)
    plain = [r for r in records if r.topic == topic]
    assert [r.value for r in plain] == [f"v{i}".encode() for i in range(20)]

    lines = io.StringIO()
    run_decode([str(out)], out=lines)
    decoded = [json.loads(line) for line in lines.getvalue().splitlines()]
    commits = [
        d
        for d in decoded
        if d["key"] and d["key"]["type"] == 1 and d["key"]["data"] == {"group": group, "topic": topic, "partition": 0}
    ]
    assert commits and commits[-1]["value"]["data"]["offset"] == 17
    assert all(d["error"] is None for d in decoded if d["src"]["topic"] == "__consumer_offsets")

    # a time window after everything above captures nothing of the plain topic
    later = tmp_path / "later.jsonl"
    run_capture(radar_config.kafka, bootstrap, [topic], later, from_ms=int(started) + 60_000, env=os.environ)
    assert list(read_dump([later])) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1700000000000", 1_700_000_000_000), ("2023-11-14T22:13:20Z", 1_700_000_000_000), (None, None)],
)
def test_parse_time_ms(text: str | None, expected: int | None) -> None:
    assert parse_time_ms(text) == expected


@pytest.mark.parametrize("text", ["yesterday", "2023-11-14T22:13:20"])
def test_parse_time_ms_refuses_unclear_times(text: str) -> None:
    with pytest.raises(ValueError, match="time"):
        parse_time_ms(text)
