"""The embedded broker is a real Kafka: records flow, groups commit, the coordinator logs, stop is clean."""

from __future__ import annotations

import os
import shlex
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.local.broker import EmbeddedKafka
from tests.polling import wait_for

pytestmark = pytest.mark.kafka


def test_produce_consume_commit(kafka_broker: EmbeddedKafka) -> None:
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for index in range(5):
        producer.produce(topic, key=str(index).encode(), value=f"v{index}".encode())
    assert producer.flush(15) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < 5 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            values.append(message.value())
    assert values == [f"v{index}".encode() for index in range(5)]
    committed = consumer.commit(asynchronous=False)
    assert committed and committed[0].offset == 5
    consumer.close()
    topics = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers}).list_topics(timeout=10).topics
    assert "__consumer_offsets" in topics
    wait_for(
        lambda: "Stabilized group " + group in kafka_broker.log_file.read_text(),
        15,
        f"a 'Stabilized group {group}' line in {kafka_broker.log_file}",
        poll_s=0.2,
    )


def test_stop_leaves_no_process(radar_config: RadarConfig, tmp_path: Path) -> None:
    broker = EmbeddedKafka(radar_config.broker, tmp_path, spark=radar_config.spark).start()
    pid = broker.pid
    assert pid is not None and broker.is_running()
    assert broker.log_file == tmp_path / "broker" / "logs" / "server.log"
    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    assert shlex.split(radar_config.broker.java_options)  # the suite's C1 options (tests/suite_jvm.py)
    assert all(option in arguments for option in shlex.split(radar_config.broker.java_options)), arguments
    broker.stop()
    broker.stop()  # idempotent
    assert not broker.is_running()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
