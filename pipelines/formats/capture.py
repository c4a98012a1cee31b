"""`radar capture`: a dump (docs/OPERATIONS.md) of a time range of a live cluster, `__consumer_offsets` included.

Reads with confluent-kafka (read_committed, no group commits), from the first offset at or after `--from` to the
last offset before `--to` (or the high watermark at start), partition by partition, with a running count.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from confluent_kafka import OFFSET_END, Consumer, KafkaError, TopicPartition

from rebalance_radar.emitters.kafka_settings import client_settings
from rebalance_radar.pipelines.config import KafkaConfig
from rebalance_radar.pipelines.formats.dump import DumpRecord, dump_line


def parse_time_ms(text: str | None) -> int | None:
    """Epoch milliseconds from `1700000000000` or an ISO-8601 time (`2025-11-22T02:00:00Z`)."""
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time: use epoch milliseconds or ISO-8601 like 2025-11-22T02:00:00Z"
        ) from None
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone: add Z or an offset such as +01:00")
    return int(moment.timestamp() * 1000)


def consumer_config(kafka: KafkaConfig, bootstrap: str, env: Mapping[str, str]) -> dict[str, str | bool | int]:
    """librdkafka settings for the configured cluster (`client_settings`: credentials read from env at run
    time, never logged) plus a throw-away group that commits nothing and reads committed records only."""
    return {
        **client_settings(bootstrap, kafka.security, env),
        "group.id": f"radar-capture-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "enable.partition.eof": True,
    }


def run_capture(
    kafka: KafkaConfig,
    bootstrap: str,
    topics: Sequence[str],
    out: Path,
    *,
    from_ms: int | None = None,
    to_ms: int | None = None,
    env: Mapping[str, str],
    timeout_s: float = 60.0,
) -> int:
    """Capture `topics` into `out`; returns the number of records written."""
    consumer = Consumer(consumer_config(kafka, bootstrap, env))
    try:
        metadata = consumer.list_topics(timeout=10)
        partitions = []
        for topic in topics:
            if topic not in metadata.topics:
                raise ValueError(f"topic {topic!r} does not exist on {bootstrap}")
            partitions += [TopicPartition(topic, p) for p in sorted(metadata.topics[topic].partitions)]
        ends: dict[tuple[str, int], int] = {}
        for tp in partitions:
            low, high = consumer.get_watermark_offsets(tp, timeout=10)
            ends[(tp.topic, tp.partition)] = high
            tp.offset = low
        if to_ms is not None:
            for found in consumer.offsets_for_times(
                [TopicPartition(tp.topic, tp.partition, to_ms) for tp in partitions], timeout=10
            ):
                if found.offset >= 0:
                    ends[(found.topic, found.partition)] = min(ends[(found.topic, found.partition)], found.offset)
        if from_ms is not None:
            starts = consumer.offsets_for_times(
                [TopicPartition(tp.topic, tp.partition, from_ms) for tp in partitions], timeout=10
            )
            partitions = [
                TopicPartition(t.topic, t.partition, t.offset if t.offset >= 0 else OFFSET_END) for t in starts
            ]
        pending = {(tp.topic, tp.partition) for tp in partitions if ends[(tp.topic, tp.partition)] > max(tp.offset, 0)}
        consumer.assign(partitions)
        written = 0
        last_activity = time.monotonic()
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as fh:
            while pending:
                msg = consumer.poll(1.0)
                if msg is None:
                    if time.monotonic() - last_activity > timeout_s:
                        raise TimeoutError(f"no records for {timeout_s:.0f} s while {len(pending)} partitions remain")
                    continue
                last_activity = time.monotonic()
                where = (msg.topic(), msg.partition())
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard(where)
                        continue
                    raise RuntimeError(f"capture failed on {where[0]}-{where[1]}: {msg.error()}")
                if msg.offset() >= ends[where]:
                    pending.discard(where)
                    continue
                _, ts = msg.timestamp()
                record = DumpRecord(msg.topic(), msg.partition(), msg.offset(), ts, msg.key(), msg.value())
                fh.write(dump_line(record) + "\n")
                written += 1
                if msg.offset() + 1 >= ends[where]:
                    pending.discard(where)
                if written % 1000 == 0:
                    print(f"\r  captured {written:,} records", end="", file=sys.stderr, flush=True)
        print(f"\r  captured {written:,} records from {len(partitions)} partitions to {out}", file=sys.stderr)
        return written
    finally:
        consumer.close()
