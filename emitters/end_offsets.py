"""Log-end offsets of the partitions monitored groups consume, polled with the admin API and published as
`radar.end_offsets/1` telemetry (one record per group), by `radar run` and `radar poll-groups`.

Which partitions: each group's committed partitions (`list_consumer_group_offsets`), which is what lag is
measured on, and the partitions its members are assigned (`describe_consumer_groups`: OffsetFetch leaves out the
topics the principal may not describe, an assignment names them), for every group the cluster lists (or the ones
given). Their end offsets come from one
`list_offsets(OffsetSpec.latest())` request for all of them. A partition whose end offset cannot be read is
published with its error name (a deleted partition's UNKNOWN_TOPIC_OR_PART is data: `partition_gone`); a topic the
principal may not describe is named in `problem()` (the run's status line) once, and the other topics go on.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from rebalance_radar.emitters.cluster_probe import client_logger
from rebalance_radar.emitters.telemetry_producer import TelemetryProducer
from rebalance_radar.transforms.telemetry.end_offsets import (
    EndOffsetsPoll,
    PartitionEndOffset,
    end_offsets_record,
)

DENIED_ERRORS = frozenset({"TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"})
NOT_IN_METADATA = frozenset({"NOENT", "UNKNOWN_TOPIC_OR_PART"})
"""librdkafka's errors for a partition whose topic its metadata does not hold (refused or deleted)."""
NO_OFFSET = -1001
"""librdkafka's OFFSET_INVALID: the group has no committed offset for the partition."""


def error_name(failure: BaseException | Any) -> str:
    """A Kafka error's name as the record carries it (librdkafka's internal `_NAME`s without the underscore)."""
    error = failure.args[0] if isinstance(failure, KafkaException) and failure.args else failure
    name = error.name() if hasattr(error, "name") else type(error).__name__
    return str(name).lstrip("_").upper() or "UNKNOWN"


@dataclass(frozen=True, slots=True)
class EndOffsetsRound:
    """What one poll did: groups published, partitions polled, partitions without an end offset."""

    groups: int
    partitions: int
    failed: int


class EndOffsetsPoller:
    """Polls committed partitions and their end offsets every `interval_s` (a daemon thread) and publishes one
    `radar.end_offsets/1` record per group to `topic`; `poll_once()` is one round, for tests and `--once`."""

    def __init__(
        self,
        settings: Mapping[str, Any],
        topic: str,
        *,
        interval_s: float = 10.0,
        groups: Iterable[str] = (),
        watched: Callable[[str], bool] = lambda group: True,
        emitter: str | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        """`settings`: the cluster's client settings from the one builder (`emitters.kafka_settings`); `watched`
        says which listed groups to poll (radar's own source groups are left out by the caller)."""
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({**settings, "logger": client_logger()})
        self.producer = TelemetryProducer(settings, topic, client_id="radar-end-offsets", flush_timeout_s=timeout_s)
        self.topic = topic
        self.interval_s = interval_s
        self.groups = tuple(groups)
        self.watched = watched
        self.emitter = emitter or f"radar-end-offsets@{socket.gethostname()}"
        self.timeout_s = timeout_s
        self.denied_topics: dict[str, str] = {}
        """topic -> the error that refused its end offsets (named in `problem()`)."""
        self.last_error: str | None = None
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="radar-end-offsets", daemon=True)

    def group_ids(self) -> list[str]:
        """The watched groups the cluster lists (the given ones only once they exist): librdkafka's admin
        OffsetFetch must not meet a group without a coordinator (its NOT_COORDINATOR handler dereferences the
        consumer-group handle an admin client does not have, and the process dies: confluent-kafka-javascript#374)."""
        listed = self.admin.list_consumer_groups(request_timeout=self.timeout_s).result(timeout=self.timeout_s)
        existing = sorted(g.group_id for g in listed.valid)
        if self.groups:
            return [g for g in existing if g in self.groups]
        return [g for g in existing if self.watched(g)]

    def committed(self, group_id: str) -> list[TopicPartition]:
        """The group's committed partitions (one group per request: librdkafka takes one)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        futures = self.admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group_id)], request_timeout=self.timeout_s
        )
        result = futures[group_id].result(timeout=self.timeout_s)
        return [tp for tp in result.topic_partitions or [] if tp.error is None and tp.offset != NO_OFFSET]

    def assigned(self, group_ids: list[str]) -> dict[str, set[tuple[str, int]]]:
        """The partitions each group's members are assigned (DescribeGroups needs Describe on the group only, so a
        topic the principal may not describe still shows here, and its refusal is named); a group that fails to
        describe adds none."""
        if not group_ids:
            return {}
        found: dict[str, set[tuple[str, int]]] = {}
        futures = self.admin.describe_consumer_groups(group_ids, request_timeout=self.timeout_s)
        for group_id, future in futures.items():
            try:
                description = future.result(timeout=self.timeout_s)
            except KafkaException:
                continue
            parts = found.setdefault(group_id, set())
            for member in description.members or []:
                assignment = getattr(member, "assignment", None)
                for tp in getattr(assignment, "topic_partitions", None) or []:
                    parts.add((tp.topic, tp.partition))
        return found

    def end_offsets(self, partitions: set[tuple[str, int]]) -> dict[tuple[str, int], PartitionEndOffset]:
        """Each partition's end offset, or its error name."""
        from confluent_kafka.admin import OffsetSpec

        if not partitions:
            return {}
        request = {TopicPartition(topic, partition): OffsetSpec.latest() for topic, partition in sorted(partitions)}
        futures = self.admin.list_offsets(request, request_timeout=self.timeout_s)
        found: dict[tuple[str, int], PartitionEndOffset] = {}
        for tp, future in futures.items():
            try:
                info = future.result(timeout=self.timeout_s)
                found[(tp.topic, tp.partition)] = PartitionEndOffset(tp.topic, tp.partition, int(info.offset))
            except KafkaException as failure:
                found[(tp.topic, tp.partition)] = PartitionEndOffset(tp.topic, tp.partition, None, error_name(failure))
        unknown = {key[0] for key, end in found.items() if end.error in NOT_IN_METADATA}
        for topic, error in self.why_not_in_metadata(unknown).items():
            for key, end in found.items():
                if key[0] == topic and end.error in NOT_IN_METADATA:
                    found[key] = replace(end, error=error)
        return found

    def why_not_in_metadata(self, topics: set[str]) -> dict[str, str]:
        """librdkafka answers NOENT for a topic missing from its metadata, whether the principal may not describe
        it or it was deleted: the cluster's metadata for the topic itself tells which (TOPIC_AUTHORIZATION_FAILED,
        UNKNOWN_TOPIC_OR_PART)."""
        found: dict[str, str] = {}
        for topic in sorted(topics):
            try:
                metadata = self.admin.list_topics(topic=topic, timeout=self.timeout_s).topics.get(topic)
            except KafkaException:
                continue  # the next round asks again
            if metadata is not None and metadata.error is not None:
                found[topic] = error_name(metadata.error)
        return found

    def poll_once(self) -> EndOffsetsRound:
        """One round: every watched group's committed partitions, their end offsets, one record per group."""
        by_group: dict[str, set[tuple[str, int]]] = {}
        group_ids = self.group_ids()
        for group_id in group_ids:
            try:
                by_group[group_id] = {(tp.topic, tp.partition) for tp in self.committed(group_id)}
            except KafkaException as failure:  # one group's error (deleted meanwhile, no ACL) never stops the rest
                self.last_error = f"{group_id}: {error_name(failure)}"
        try:
            for group_id, parts in self.assigned(group_ids).items():
                by_group.setdefault(group_id, set()).update(parts)
        except KafkaException as failure:
            self.last_error = f"describe groups: {error_name(failure)}"
        wanted = {part for parts in by_group.values() for part in parts}
        try:
            ends = self.end_offsets(wanted)
        except KafkaException as failure:  # the whole request refused: every partition says why
            name = error_name(failure)
            ends = {(t, p): PartitionEndOffset(t, p, None, name) for t, p in wanted}
        now_ms = int(time.time() * 1000)
        failed = 0
        for group_id, group_parts in by_group.items():
            parts = tuple(ends[part] for part in sorted(group_parts))
            if not parts:
                continue
            for part in parts:
                if part.error is not None:
                    failed += 1
                    if part.error in DENIED_ERRORS:
                        self.denied_topics.setdefault(part.topic, part.error)
            poll = EndOffsetsPoll(now_ms, self.emitter, group_id, parts)
            self.producer.send(end_offsets_record(poll), group_id.encode())
        self.producer.serve()
        self.rounds += 1
        return EndOffsetsRound(len(by_group), len(wanted), failed)

    def problem(self) -> str | None:
        """One sentence naming the topics the principal may not describe (the others keep being polled)."""
        if not self.denied_topics:
            return None
        topics = ", ".join(sorted(self.denied_topics))
        return (
            f"lag: end offsets of {topics} are refused ({sorted(set(self.denied_topics.values()))[0]}); their lag is "
            "unknown, the other topics are measured: grant radar's principal Describe on those topics"
        )

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as failure:  # an unreachable cluster: said in problem(), the next round tries again
                self.last_error = str(failure)
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def start(self) -> EndOffsetsPoller:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        sent = self.producer.close()
        if sent.dropped:
            print(f"radar: {sent.dropped} end-offset records were not delivered to {self.topic}", file=sys.stderr)

    def __enter__(self) -> EndOffsetsPoller:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
