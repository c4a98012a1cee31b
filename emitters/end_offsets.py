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

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from rebalance_radar.emitters.cluster_probe import (
    GROUP_OVERRIDES,
    BrokerConfigUnreadable,
    GroupSessionOverrides,
    broker_session_timeouts,
    client_logger,
    group_session_overrides,
)
from rebalance_radar.emitters.telemetry_producer import TelemetryProducer
from rebalance_radar.transforms.schemas import HeartbeatEventKind
from rebalance_radar.transforms.telemetry.end_offsets import (
    EndOffsetsPoll,
    PartitionEndOffset,
    end_offsets_record,
)
from rebalance_radar.transforms.telemetry.json_events import SCHEMA_V1, RadarEventV1

DENIED_ERRORS = frozenset({"TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"})
NOT_IN_METADATA = frozenset({"NOENT", "UNKNOWN_TOPIC_OR_PART"})
"""librdkafka's errors for a partition whose topic its metadata does not hold (refused or deleted)."""
NO_OFFSET = -1001
"""librdkafka's OFFSET_INVALID: the group has no committed offset for the partition."""
TO_GROUP_CONFIG = {broker_name: name for name, broker_name in GROUP_OVERRIDES.items()}
"""The broker config a group's own config overrides -> that group config's name (as `group_config` events say it)."""
GROUP_CONFIGS_EVERY_S = 60.0
"""How often a poller asks for the non-classic groups' own session timeouts (DescribeConfigs, 100 groups a request)."""


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
        group_configs_every_s: float = GROUP_CONFIGS_EVERY_S,
        watch_broker_configs: bool = True,
    ) -> None:
        """`settings`: the cluster's client settings from the one builder (`emitters.kafka_settings`); `watched`
        says which listed groups to poll (radar's own source groups are left out by the caller);
        `watch_broker_configs`: publish the broker's group session timeouts when they change (not when radar's conf
        states them: an operator's word on the broker wins)."""
        from confluent_kafka.admin import AdminClient

        self.settings = dict(settings)
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
        self.group_configs_every_s = group_configs_every_s
        self.published_configs: dict[str, dict[str, int]] | None = None
        """group id -> its own session timeouts as last published (None: not asked yet)."""
        self.cluster_keeps_group_configs = True
        self.watch_broker_configs = watch_broker_configs
        self.broker_configs: dict[str, int] | None = None
        """The broker's group session timeouts as the last configs round read them (None: not read yet)."""
        self._configs_due_at = 0.0  # time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="radar-end-offsets", daemon=True)

    def wanted(self, group_id: str) -> bool:
        return (not self.groups or group_id in self.groups) and self.watched(group_id)

    def group_ids(self) -> list[str]:
        """The watched groups the cluster lists (the given ones only once they exist): librdkafka's admin
        OffsetFetch must not meet a group without a coordinator (its NOT_COORDINATOR handler dereferences the
        consumer-group handle an admin client does not have, and the process dies: confluent-kafka-javascript#374)."""
        listed = self.admin.list_consumer_groups(request_timeout=self.timeout_s).result(timeout=self.timeout_s)
        existing = sorted(g.group_id for g in listed.valid)
        return [g for g in existing if self.wanted(g)]

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
        if time.monotonic() >= self._configs_due_at:
            self._configs_due_at = time.monotonic() + self.group_configs_every_s
            self.publish_group_configs()
            self.publish_broker_config_change(group_ids)
        self.producer.serve()
        self.rounds += 1
        return EndOffsetsRound(len(by_group), len(wanted), failed)

    def publish_group_configs(self) -> int:
        """A `group_config` event for each non-classic group whose own session timeouts differ from what this
        poller last published (every such group, the first time): the detection reads them once, when it starts, so
        a group created or altered later reaches its tracker this way. Groups whose configs could not be read are
        left as they were (the detection's start named them); a cluster that keeps no group configs (Kafka 3.x) is
        not asked again. Returns the events sent."""
        if not self.cluster_keeps_group_configs:
            return 0
        return self.publish_overrides(group_session_overrides(self.admin, self.settings, self.timeout_s))

    def publish_overrides(self, found: GroupSessionOverrides) -> int:
        """`publish_group_configs` once the cluster has answered."""
        if not found.kept_by_cluster:  # Kafka 3.x: nothing to publish now or later, and no request a minute
            self.cluster_keeps_group_configs = False
            return 0
        if found.unread:
            self.last_error = found.unread
        first = self.published_configs is None
        published = self.published_configs or {}
        now_ms = int(time.time() * 1000)
        sent = 0
        for group_id in sorted(found.read):
            own = found.groups.get(group_id, {})
            if not self.wanted(group_id) or (not first and published.get(group_id, {}) == own):
                continue
            details = {TO_GROUP_CONFIG[name]: str(ms) for name, ms in sorted(own.items())}
            self._send_described(HeartbeatEventKind.GROUP_CONFIG, group_id, details, now_ms)
            published[group_id] = own
            sent += 1
        self.published_configs = published
        return sent

    def publish_broker_config_change(self, group_ids: Iterable[str]) -> int:
        """A `broker_config` event for each of `group_ids` when the broker's group session timeouts differ from the
        last round's. Kafka reads them only at a broker's start, and the detection asks the cluster once, when it
        starts: a rolling restart with new values reaches the trackers this way. Returns the events sent."""
        if not self.watch_broker_configs:
            return 0
        try:
            now = broker_session_timeouts(self.admin, self.settings, self.timeout_s)
        except BrokerConfigUnreadable as why:
            self.last_error = f"broker configs: {why}"
            return 0
        return self.publish_broker_configs(now, group_ids)

    def publish_broker_configs(self, now: dict[str, int], group_ids: Iterable[str]) -> int:
        """`publish_broker_config_change` once the broker has answered `now`."""
        before, self.broker_configs = self.broker_configs, now
        if before is None or before == now or not now:
            return 0
        stamp = int(time.time() * 1000)
        sent = 0
        for group_id in sorted(group_ids):
            self._send_described(
                HeartbeatEventKind.BROKER_CONFIG, group_id, {name: str(ms) for name, ms in sorted(now.items())}, stamp
            )
            sent += 1
        return sent

    def _send_described(self, kind: HeartbeatEventKind, group_id: str, details: dict[str, str], at_ms: int) -> None:
        """One `radar.event/1` event of what the cluster described, keyed by its group."""
        event = RadarEventV1(
            schema=SCHEMA_V1,
            event=kind,
            ts=at_ms,
            group_id=group_id,
            reason=f"described by {self.emitter}",
            details=details,
        )
        self.producer.send(event.to_json_bytes(), group_id.encode())

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


# --- the poller in a process of its own ---------------------------------------------------------------------------

RESTART_LIMIT = 20
"""Restarts of a crashed poller process per run at most; past it lag stays unknown and the status line says why."""


class IsolatedEndOffsetsPoller:
    """`EndOffsetsPoller` in a child process (`python -m rebalance_radar.emitters.end_offsets`), restarted when it
    dies. Why: librdkafka's admin client can crash the whole process on a coordinator move, the moment an incident
    happens (a NULL group handle on NOT_COORDINATOR in ListConsumerGroupOffsets, confluentinc/librdkafka#5040; an
    assertion on a dropped connection in DescribeConsumerGroups, #4605): `radar run` must outlive it. The settings
    (credentials included) reach the child on its stdin, never its command line or environment; it prints one JSON
    status line per round, which `problem()` reads."""

    def __init__(
        self,
        settings: Mapping[str, Any],
        topic: str,
        *,
        interval_s: float = 10.0,
        groups: Iterable[str] = (),
        left_out_prefix: str | None = None,
        emitter: str | None = None,
        watch_broker_configs: bool = True,
    ) -> None:
        unsendable = sorted(k for k, v in settings.items() if not isinstance(v, str | int | float | bool))
        if unsendable:  # a callback cannot cross to the child: say so rather than poll without it
            raise ValueError(f"client settings {unsendable} cannot reach the end-offset poller's process")
        self.request = {
            "settings": dict(settings),
            "topic": topic,
            "interval_s": interval_s,
            "groups": list(groups),
            "left_out_prefix": left_out_prefix,
            "emitter": emitter or f"radar-end-offsets@{socket.gethostname()}",
            "watch_broker_configs": watch_broker_configs,
        }
        self.interval_s = interval_s
        self.status: dict[str, Any] = {}
        self.crashes: list[str] = []
        self.process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._supervise, name="radar-end-offsets-supervisor", daemon=True)

    def _spawn(self) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "rebalance_radar.emitters.end_offsets"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(self.request) + "\n")
        process.stdin.close()
        return process

    def _supervise(self) -> None:
        while True:
            with self._lock:  # stop() sets the event under it: no child starts after stop() looked for one
                if self._stop.is_set():
                    return
                process = self.process = self._spawn()
            assert process.stdout is not None
            for line in process.stdout:
                with contextlib.suppress(ValueError):
                    self.status = json.loads(line)
            code = process.wait()
            if self._stop.is_set():
                return
            with self._lock:
                self.crashes.append(_ended(code))
                if len(self.crashes) > RESTART_LIMIT:
                    return
            self._stop.wait(min(self.interval_s, 5.0))

    def problem(self) -> str | None:
        """The child's own sentence (a refused topic), and its crashes, if any."""
        said = [self.status.get("problem")] if self.status.get("problem") else []
        if self.crashes:
            again = "restarted" if len(self.crashes) <= RESTART_LIMIT else "not restarted again: lag is unknown"
            said.append(
                f"lag: the end-offset poller's process died {len(self.crashes)} time(s) (last: {self.crashes[-1]}; "
                f"librdkafka's admin client can crash on a coordinator move), {again}"
            )
        return "; ".join(said) or None

    def start(self) -> IsolatedEndOffsetsPoller:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)  # the child ends its round, flushes its records and exits
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if self._thread.is_alive():
            self._thread.join(10)

    def __enter__(self) -> IsolatedEndOffsetsPoller:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def _ended(code: int) -> str:
    """How a child process ended, for a sentence: `signal SIGSEGV` or `exit 1`."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"exit {code}"


def main() -> int:
    """The child of `IsolatedEndOffsetsPoller`: its request on stdin, one status line per round on stdout, until
    SIGTERM or its parent is gone."""
    request = json.loads(sys.stdin.readline())
    prefix = request["left_out_prefix"]
    poller = EndOffsetsPoller(
        request["settings"],
        request["topic"],
        interval_s=request["interval_s"],
        groups=request["groups"],
        watched=lambda group: not (prefix and group.startswith(prefix)),
        emitter=request["emitter"],
        watch_broker_configs=request["watch_broker_configs"],
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C reaches the group: the parent stops us
    parent = os.getppid()

    def orphaned() -> bool:  # the parent quit at once (a second Ctrl-C) or was killed: nobody reads us any more
        return os.getppid() != parent

    next_at = time.monotonic()
    while not stopping.is_set() and not orphaned():
        try:
            poller.poll_once()
        except Exception as failure:  # an unreachable cluster: said in the status, the next round tries again
            poller.last_error = str(failure)
        print(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "rounds": poller.rounds,
                    "problem": poller.problem(),
                    "last_error": poller.last_error,
                }
            ),
            flush=True,
        )
        next_at += poller.interval_s
        while not stopping.is_set() and not orphaned() and time.monotonic() < next_at:
            stopping.wait(min(1.0, max(0.0, next_at - time.monotonic())))
    poller.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
