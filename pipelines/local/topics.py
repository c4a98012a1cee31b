"""Broker-side set-up a fresh embedded broker needs before the ingest starts: the telemetry topics, and a ready
`__consumer_offsets` (which Kafka creates only on a client's first group-coordinator lookup)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence

from rebalance_radar.emitters.cluster_probe import client_logger


def ensure_offsets_topic(bootstrap_servers: str, offsets_topic: str, timeout_s: float = 60.0) -> None:
    """A fresh broker creates `__consumer_offsets` only when a client first looks for a group coordinator:
    ask for one, then wait until every partition of the topic has a leader, so the offsets query can start."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap_servers, "logger": client_logger()})
    deadline = time.monotonic() + timeout_s
    while True:
        topic = admin.list_topics(timeout=10).topics.get(offsets_topic)
        partitions = topic.partitions.values() if topic is not None and topic.error is None else ()
        if partitions and all(p.leader >= 0 and p.error is None for p in partitions):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{offsets_topic} is not ready on {bootstrap_servers} after {timeout_s:.0f} s")
        if topic is None:
            # An offset fetch for any group makes the broker find (and so create) the group coordinator.
            consumer = Consumer(
                {"bootstrap.servers": bootstrap_servers, "group.id": "radar-bootstrap", "logger": client_logger()}
            )
            try:
                with contextlib.suppress(KafkaException):  # the readiness check above decides
                    consumer.committed([TopicPartition(offsets_topic, 0)], timeout=10)
            finally:
                consumer.close()
        time.sleep(0.5)


def create_topics(bootstrap_servers: str, topics: Sequence[str], partitions: int = 1) -> None:
    """Create telemetry topics that do not exist yet (the embedded broker starts empty)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers, "logger": client_logger()})
    existing = set(admin.list_topics(timeout=10).topics)
    wanted = [NewTopic(t, num_partitions=partitions, replication_factor=1) for t in topics if t not in existing]
    for topic, future in admin.create_topics(wanted).items() if wanted else []:
        try:
            future.result(timeout=30)
        except Exception as exc:  # an already-existing topic is fine; anything else is not
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise RuntimeError(f"could not create topic {topic}: {exc}") from exc
