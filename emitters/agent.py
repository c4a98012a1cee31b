"""The radar agent: a confluent-kafka `Consumer` that reports its group life as `radar.event/1` telemetry.

Why: the broker knows when it fenced a member, only the client knows what that member was doing (committing with
an old generation, still processing after its partitions were lost). One changed line gives both:

    from rebalance_radar.emitters.agent import RadarConsumer as Consumer        # same constructor, same API
    consumer = Consumer({"bootstrap.servers": ..., "group.id": "orders", ...})
    # or: consumer = instrument(consumer_conf, {"bootstrap.servers": "telemetry:9092", "topic": "radar.telemetry"})

Reported (each one JSON object on the telemetry topic, see `transforms.telemetry.json_events`):
- at start, `client_config`: its group settings (session and poll timeouts, group.protocol, assignor), which the
  detections cite as the member's own;
- on_assign -> `assignment`, on_revoke -> `rebalance_prepare` (observed_by client), on_lost -> `member_removed`;
  the application's own callbacks still run first (chained, with this consumer as their argument);
- every commit result: synchronous `commit()` (result or exception) and asynchronous/auto commits (`on_commit`,
  chained) -> `commit` / `commit_failed`. Which identity each field carries (see `commit_identity`):
  `member_id` + `generation` (classic) or `member_epoch` (KIP-848) are the membership the commit was *sent
  under*: for commit() (sync or async) librdkafka's pair read from `consumer_group_metadata()` (its serialized
  group metadata: generation/epoch, group, member, instance id; the stats carry no generation) when commit() was
  called, not when its result came back; for an auto-commit (no commit() call) the pair of the last assignment
  served before its callback (classic; callbacks are served in order, so the positions it committed were that
  assignment's), or librdkafka's pair at callback time (KIP-848, whose epoch moves without callbacks). One classic
  pair is never reported as is: after an eviction librdkafka rejoins and, from the coordinator's MEMBER_ID_REQUIRED
  answer until a JoinGroup grants a new generation, holds the rejoin's *new* member id with the evicted member's
  *old* generation; a commit in that window is the evicted member's (the application still works on its last
  assignment), so it is reported under that assignment's pair. Whenever the reported pair is not librdkafka's,
  details `client_member_id` and `client_generation` / `client_member_epoch` keep what librdkafka held (what the
  OffsetCommit request most likely carried). Details also hold the partitions and offsets (also of a commit that
  raised: what the zombie tried to commit) and the member id and generation/epoch the consumer *last held while
  assigned* (`last_member_id`, `last_generation` or `last_member_epoch`: set by each assignment and each accepted
  commit): librdkafka clears its member id when the member is evicted, so a zombie's commit goes out without one
  and only these attribute it;
- group state from statistics (`stats_cb`, chained; `statistics.interval.ms` defaults to 5000 when unset):
  `heartbeat` while the coordinator is up, `heartbeat_failed` otherwise, with the `cgrp` fields in details;
- client errors: `error_cb` (chained) -> `heartbeat_failed`; a rebalance whose reason (statistics
  `cgrp.rebalance_reason`) is "max.poll.interval.ms exceeded" -> `poll_timeout`, when the reason first appears
  (classic protocol only: with group.protocol=consumer librdkafka 2.16 reported no such reason in our runs). It
  names the member that overran: the member id and generation/epoch of its last assignment, not what librdkafka
  holds by then (after the overrun it may already carry the rejoin's new member id with the old generation).

While the application is not polling (a slow processing loop, or a rebalance callback of its own that blocks:
librdkafka counts the time in the application's callbacks as time away from poll too), librdkafka serves no
statistics, yet its
background thread keeps heartbeating until max.poll.interval.ms runs out (as Java's heartbeat thread does since
0.10.1): a small daemon thread of the agent then reports `heartbeat` with details `liveness=background` and
`poll_age_ms`, once per statistics interval, for the membership of the last assignment, so a stalled poll never
looks like missing heartbeats. It stops once the poll age passes max.poll.interval.ms plus the second librdkafka
may take to notice (it has left the group by then; a report racing its LeaveGroup names a member the detectors
already saw leave, and is ignored), after the assignment was lost, and after a pause of its own (a SIGSTOPped
process really stops heartbeating; the next statistics tell what happened), until the application polls again.

poll() and consume() stay librdkafka's C calls with one check on top: an error message they return (librdkafka
hands `max.poll.interval.ms exceeded` to the application there, after the overrun, when the statistics may
already show the rejoin) is reported; a poll timeout is reported once per membership, from whichever source first.

It never blocks or slows the poll loop: events (`RadarEventV1` models, serialised by the model) are produced from
the consumer's own callbacks by the emitters' `TelemetryProducer` (its own librdkafka threads, a bounded queue);
when the telemetry cluster is unreachable the queue fills, and each event that does not fit, or times out
(`message.timeout.ms`), is counted in `agent.dropped` instead of waiting. Telemetry settings: the `telemetry`
argument, else `radar.telemetry.*` keys in the consumer config (stripped before the consumer sees them), else
`RADAR_TELEMETRY_BOOTSTRAP` / `RADAR_TELEMETRY_TOPIC`, else the consumer's own cluster (with its security
settings) and topic `radar.telemetry`. A `security` entry (an `emitters.kafka_settings.SecurityConfig` or its
fields) authenticates to a separate telemetry cluster with credentials from environment variables. Configuration
values are never logged.

Needs only confluent-kafka and pydantic (no Spark, Delta or Great Expectations): see docs/TELEMETRY.md.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from rebalance_radar.emitters.kafka_settings import SecurityConfig, client_settings, shared_client_settings
from rebalance_radar.emitters.telemetry_producer import DEFAULT_TELEMETRY_TOPIC, TelemetryProducer
from rebalance_radar.transforms.schemas import HeartbeatEventKind
from rebalance_radar.transforms.telemetry.events import partition_list
from rebalance_radar.transforms.telemetry.json_events import SCHEMA_V1, RadarEventV1
from rebalance_radar.transforms.telemetry.librdkafka_stats import cgrp_details

Kind = HeartbeatEventKind
DEFAULT_TOPIC = DEFAULT_TELEMETRY_TOPIC
TELEMETRY_PREFIX = "radar.telemetry."
DEFAULT_STATS_INTERVAL_MS = 5000
DEFAULT_FLUSH_TIMEOUT_S = 2.0
DEFAULT_MAX_POLL_INTERVAL_MS = 300_000
MAX_POLL_NOTICED_S = 1.0
"""librdkafka checks for a max.poll.interval.ms overrun on a timer: it may heartbeat up to this long past it."""
LIVENESS = "background"
"""`details.liveness` of a heartbeat reported while the application is not polling (see the module docstring)."""
# The agent's producer: small batches soon (linger), a modest bound (a consumer process is not a log shipper).
AGENT_PRODUCER_DEFAULTS: dict[str, Any] = {"linger.ms": 100}
_GROUP_METADATA_MAGIC = b"CGMDv2:"
# Unbound C methods: the poll path pays one Python call on top of librdkafka, no super() or argument packing.
_CONSUMER_POLL = Consumer.poll
_CONSUMER_CONSUME = Consumer.consume


@dataclass(frozen=True, slots=True)
class GroupIdentity:
    """Who the consumer is in its group at one instant: generation (classic) or member epoch (KIP-848)."""

    group_id: str | None
    member_id: str | None
    group_instance_id: str | None
    generation: int | None
    member_epoch: int | None


def parse_group_metadata(blob: bytes | None, consumer_protocol: bool) -> GroupIdentity | None:
    """librdkafka's `consumer_group_metadata()` bytes: b"CGMDv2:" + int32 (native order) generation id, then
    NUL-terminated group id and member id, an int8 "instance id is null" flag and the NUL-terminated instance id.
    For `group.protocol=consumer` the generation field holds the member epoch."""
    if not blob or not blob.startswith(_GROUP_METADATA_MAGIC) or len(blob) < len(_GROUP_METADATA_MAGIC) + 4:
        return None
    pos = len(_GROUP_METADATA_MAGIC)
    (generation,) = struct.unpack_from("=i", blob, pos)
    # read by position: the "is null" flag of a static member's instance id is itself a NUL byte
    rest = blob[pos + 4 :]
    group_end = rest.find(b"\x00")
    member_end = rest.find(b"\x00", group_end + 1) if group_end >= 0 else -1
    if member_end < 0 or member_end + 1 >= len(rest):
        return None
    group_id = rest[:group_end].decode(errors="replace")
    member_id = rest[group_end + 1 : member_end].decode(errors="replace")
    instance = None
    if rest[member_end + 1] == 0:  # instance id present, NUL-terminated
        instance_end = rest.find(b"\x00", member_end + 2)
        instance = rest[member_end + 2 : instance_end if instance_end >= 0 else len(rest)].decode(errors="replace")
    valid = generation >= 0
    return GroupIdentity(
        group_id or None,
        member_id or None,
        instance,
        generation if valid and not consumer_protocol else None,
        generation if valid and consumer_protocol else None,
    )


def commit_identity(
    current: GroupIdentity,
    membership: GroupIdentity | None,
    *,
    consumer_protocol: bool,
    auto_commit: bool = False,
) -> GroupIdentity:
    """The membership a commit is reported under (the event's member_id and generation/member_epoch), from
    librdkafka's identity `current` and `membership`, the pair of the last assignment (or accepted commit).

    Why not `current` alone: after an eviction librdkafka rejoins; the coordinator answers the first JoinGroup
    with MEMBER_ID_REQUIRED and a new member id, which librdkafka stores while keeping the evicted member's
    generation until a JoinGroup grants a new one (rd_kafka_cgrp_handle_JoinGroup). Its group metadata, and the
    OffsetCommit it sends, then pair an id the group never had in that generation with that generation. A commit
    in that window is still the evicted member's work (no assignment for the new id was served yet), so the classic
    protocol reports `membership` instead, unless `current` already holds a newer generation (granted to the new
    id: a real identity). A classic auto-commit (`auto_commit`) is the last assignment's by construction: it commits
    that assignment's positions, and its callback is served before the next assignment's. KIP-848 keeps the member
    id across a rejoin (only the epoch moves, also without any callback), so there `current` is the answer."""
    if consumer_protocol or membership is None or membership.member_id is None:
        return current
    if auto_commit:
        return membership
    if current.member_id == membership.member_id:
        return current
    newer = (
        current.generation is not None
        and membership.generation is not None
        and current.generation > membership.generation
    )
    return current if newer else membership


def client_identity_details(reported: GroupIdentity, client: GroupIdentity) -> dict[str, str]:
    """`client_member_id` / `client_generation` / `client_member_epoch`: librdkafka's own pair, when the event
    reports another one (see `commit_identity`), so what the OffsetCommit carried is not lost."""
    if (reported.member_id, reported.generation, reported.member_epoch) == (
        client.member_id,
        client.generation,
        client.member_epoch,
    ):
        return {}
    details = {}
    if client.member_id:
        details["client_member_id"] = client.member_id
    if client.generation is not None:
        details["client_generation"] = str(client.generation)
    if client.member_epoch is not None:
        details["client_member_epoch"] = str(client.member_epoch)
    return details


def _pop_prefixed(config: dict[str, Any], prefix: str) -> dict[str, Any]:
    found = {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}
    for key in list(config):
        if key.startswith(prefix):
            del config[key]
    return found


def telemetry_settings(
    consumer_config: Mapping[str, Any], telemetry: Mapping[str, Any] | None
) -> tuple[dict[str, Any], str]:
    """(producer config, topic) by precedence: argument, `radar.telemetry.*` keys, environment, consumer cluster.

    A `security` entry (SecurityConfig or its fields) is rendered by `client_settings` for the telemetry
    cluster; without it and without a bootstrap of its own, the producer shares the consumer's cluster settings."""
    chosen = dict(telemetry or {})
    topic = chosen.pop("topic", None) or os.environ.get("RADAR_TELEMETRY_TOPIC") or DEFAULT_TOPIC
    security = chosen.pop("security", None)
    bootstrap = chosen.get("bootstrap.servers") or os.environ.get("RADAR_TELEMETRY_BOOTSTRAP")
    if security is not None:
        model = security if isinstance(security, SecurityConfig) else SecurityConfig.model_validate(security)
        base = dict(client_settings(bootstrap or str(consumer_config.get("bootstrap.servers") or ""), model))
    elif bootstrap:
        base = {"bootstrap.servers": bootstrap}
    else:
        base = dict(shared_client_settings(consumer_config))
    return {**base, **chosen}, str(topic)


def _partitions_text(partitions: list[TopicPartition] | None) -> str:
    return partition_list(((p.topic, (p.partition,)) for p in partitions or []), limit=None)[0]


def _offsets_text(partitions: list[TopicPartition]) -> str:
    return ",".join(str(p.offset) for p in partitions)


def _error_name(error: KafkaError) -> str:
    """Kafka's error name; librdkafka's local errors (`_TRANSPORT`) lose their leading underscore."""
    return error.name().lstrip("_") or "UNKNOWN"


LIBRDKAFKA_GROUP_DEFAULTS: dict[str, str] = {
    "group.protocol": "classic",
    "session.timeout.ms": "45000",
    "heartbeat.interval.ms": "3000",
    "max.poll.interval.ms": str(DEFAULT_MAX_POLL_INTERVAL_MS),
    "partition.assignment.strategy": "range,roundrobin",
}
"""librdkafka's defaults (CONFIGURATION.md, 2.x) for the group settings a `client_config` event carries."""


def client_config_details(conf: Mapping[str, Any]) -> dict[str, str]:
    """A `client_config` event's details, as a Java client's configuration listing gives them
    (`transforms.telemetry.config_listing`): the consumer's group settings, librdkafka's defaults where unset."""
    details = {"config": "librdkafka"}
    for key, default in LIBRDKAFKA_GROUP_DEFAULTS.items():
        details[key] = str(conf.get(key, default))
    return details


class RadarConsumer(Consumer):
    """`confluent_kafka.Consumer` plus telemetry; every Consumer method behaves as before.

    `agent` is its `TelemetryProducer` (`agent.dropped`, `agent.produced`, `agent.delivered`, `agent.counts`).
    """

    def __init__(self, config: Mapping[str, Any], telemetry: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        conf = {**dict(config), **kwargs}
        prefixed = _pop_prefixed(conf, TELEMETRY_PREFIX)
        producer_config, topic = telemetry_settings(conf, {**prefixed, **(telemetry or {})})
        flush_timeout = float(producer_config.pop("flush.timeout.s", DEFAULT_FLUSH_TIMEOUT_S))
        self.agent = TelemetryProducer(
            producer_config,
            topic,
            client_id="radar-agent",
            defaults=AGENT_PRODUCER_DEFAULTS,
            flush_timeout_s=flush_timeout,
        )
        self._group_id = conf.get("group.id")
        self._consumer_protocol = str(conf.get("group.protocol", "classic")).lower() == "consumer"
        self._client_id = conf.get("client.id")
        self._host = socket.gethostname()
        self._last_member_id: str | None = None
        # Who the consumer last was while assigned (set by each assignment and each accepted commit): the member
        # that overran max.poll.interval.ms, and who a zombie commit (no member id left) belongs to.
        self._membership: GroupIdentity | None = None
        self._previous_membership: GroupIdentity | None = None  # the one before the last assignment
        self._assigned_since_stats = False  # an assignment came after the last statistics were served
        self._overrun_reported: GroupIdentity | None = None  # the membership whose overrun was reported
        self._last_rebalance_reason = ""
        # (reported, librdkafka's) identities of async commit() calls, in call order, for their on_commit
        self._pending_async: deque[tuple[GroupIdentity, GroupIdentity]] = deque(maxlen=1024)
        self._user_on_commit: Callable[..., Any] | None = conf.get("on_commit")
        self._user_stats_cb: Callable[[str], Any] | None = conf.get("stats_cb")
        self._user_error_cb: Callable[[KafkaError], Any] | None = conf.get("error_cb")
        conf["on_commit"] = self._on_commit
        conf["stats_cb"] = self._on_stats
        conf["error_cb"] = self._on_error
        conf.setdefault("statistics.interval.ms", DEFAULT_STATS_INTERVAL_MS)
        super().__init__(conf)
        self._liveness = PollStallLiveness(
            self,
            interval_s=max(int(conf["statistics.interval.ms"]), 100) / 1000,
            max_poll_interval_s=int(conf.get("max.poll.interval.ms", DEFAULT_MAX_POLL_INTERVAL_MS)) / 1000,
        )
        if self._group_id:  # what radar's remedies cite: this member's own timeouts and poll bound
            instance_id = conf.get("group.instance.id")
            self._emit(
                HeartbeatEventKind.CLIENT_CONFIG,
                GroupIdentity(self._group_id, None, str(instance_id) if instance_id else None, None, None),
                details=client_config_details(conf),
            )

    # --- identity and emission ---------------------------------------------------------------------------------

    @property
    def dropped(self) -> int:
        return self.agent.dropped

    def group_identity(self) -> GroupIdentity:
        """Member id and generation/epoch now (before the first join: ids unknown). After the member was fenced
        librdkafka clears its member id; the last one it had is kept, since that is who a zombie still is."""
        try:
            identity = parse_group_metadata(super().consumer_group_metadata(), self._consumer_protocol)
        except (KafkaException, RuntimeError, TypeError):
            identity = None
        if identity is None:
            try:
                member_id = super().memberid()
            except (KafkaException, RuntimeError):
                member_id = None
            identity = GroupIdentity(self._group_id, member_id, None, None, None)
        if identity.member_id:
            self._last_member_id = identity.member_id
        elif self._last_member_id:  # fenced/lost: librdkafka forgot it, the zombie's evidence needs it
            identity = replace(identity, member_id=self._last_member_id)
        return identity

    def _emit(
        self,
        kind: HeartbeatEventKind,
        identity: GroupIdentity | None = None,
        *,
        error: str | None = None,
        reason: str | None = None,
        details: dict[str, str] | None = None,
    ) -> None:
        try:
            who = identity or self.group_identity()
            group_id = who.group_id or self._group_id or "unknown"
            event = RadarEventV1(
                schema_id=SCHEMA_V1,
                event=kind,
                ts=int(time.time() * 1000),
                group_id=group_id,
                member_id=who.member_id,
                group_instance_id=who.group_instance_id,
                generation=who.generation,
                member_epoch=who.member_epoch,
                client_id=self._client_id,
                host=self._host,
                error=error,
                reason=reason,
                details={"observed_by": "agent", **(details or {})},
            )
            self.agent.send_event(event, key=group_id.encode())
        except Exception as failure:  # telemetry must never break the application
            self.agent.count_dropped()
            print(f"radar agent: event not sent ({type(failure).__name__})", file=sys.stderr)

    def _remember_membership(self, identity: GroupIdentity, *, assigned: bool = False) -> None:
        """Keep an identity the group really had (an assignment's, or one the coordinator accepted a commit with)."""
        if identity.member_id and (identity.generation is not None or identity.member_epoch is not None):
            if assigned and identity != self._membership:
                self._previous_membership = self._membership
            self._membership = identity

    # --- rebalance callbacks -----------------------------------------------------------------------------------

    def subscribe(
        self,
        topics: list[str],
        on_assign: Callable | None = None,
        on_revoke: Callable | None = None,
        on_lost: Callable | None = None,
        **kwargs: Any,
    ) -> None:
        """Subscribe as usual; the rebalance callbacks are wrapped so each assign/revoke/lost is reported."""

        def assigned(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
            identity = self.group_identity()  # the generation/epoch just joined
            self._remember_membership(identity, assigned=True)
            self._liveness.member(identity if identity.member_id else None)
            self._assigned_since_stats = True
            if on_assign is not None:
                with self._liveness.in_application():
                    on_assign(self, partitions)
            self._report_partitions(Kind.ASSIGNMENT, identity, "assigned", partitions)

        def revoked(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
            identity = self.group_identity()  # the generation being left
            if on_revoke is not None:
                with self._liveness.in_application():
                    on_revoke(self, partitions)
            self._report_partitions(Kind.REBALANCE_PREPARE, identity, "revoked", partitions, "partitions revoked")

        def lost(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
            identity = self.group_identity()
            self._liveness.member(None)
            with self._liveness.in_application():
                if on_lost is not None:
                    on_lost(self, partitions)
                elif on_revoke is not None:  # confluent-kafka's own fallback when no on_lost is given
                    on_revoke(self, partitions)
            reason = "assignment lost (session expired or fenced)"
            self._report_partitions(Kind.MEMBER_REMOVED, identity, "lost", partitions, reason)

        super().subscribe(topics, on_assign=assigned, on_revoke=revoked, on_lost=lost, **kwargs)

    def _report_partitions(
        self,
        kind: HeartbeatEventKind,
        identity: GroupIdentity,
        change: str,
        partitions: list[TopicPartition],
        reason: str | None = None,
    ) -> None:
        """An assignment, revoke or loss: the partitions that changed hands, under the identity that held them."""
        count = str(len(partitions))
        details = {"change": change, "partitions": _partitions_text(partitions), "partition_count": count}
        self._emit(kind, identity, reason=reason, details=details)

    # --- commits -----------------------------------------------------------------------------------------------

    def _commit_details(self, partitions: list[TopicPartition] | None, trigger: str) -> dict[str, str]:
        details = {"trigger": trigger, "partitions": _partitions_text(partitions)}
        if partitions:
            details["offsets"] = _offsets_text(partitions)
        last = self._membership
        if last is not None:
            details["last_member_id"] = str(last.member_id)
            if last.generation is not None:
                details["last_generation"] = str(last.generation)
            if last.member_epoch is not None:
                details["last_member_epoch"] = str(last.member_epoch)
        return details

    def _commit_identities(self, *, auto_commit: bool = False) -> tuple[GroupIdentity, GroupIdentity]:
        """(the identity to report a commit under, librdkafka's identity now): see `commit_identity`."""
        client = self.group_identity()
        reported = commit_identity(
            client, self._membership, consumer_protocol=self._consumer_protocol, auto_commit=auto_commit
        )
        return reported, client

    def _report_commit(
        self,
        identities: tuple[GroupIdentity, GroupIdentity],
        error: KafkaError | None,
        partitions: list[TopicPartition] | None,
        trigger: str,
    ) -> None:
        """A commit's outcome under `identities` (reported, librdkafka's), captured when the commit was issued."""
        identity, client = identities
        failed = [p for p in partitions or [] if p.error is not None]
        if error is not None and error.code() == KafkaError._NO_OFFSET:
            return  # nothing was committed (an auto-commit with no new positions)
        details = self._commit_details(partitions, trigger)
        details.update(client_identity_details(identity, client))
        if error is None and not failed:
            self._emit(Kind.COMMIT, identity, details=details)
            self._remember_membership(identity)  # the coordinator accepted this member id and generation
            return
        cause = error if error is not None else failed[0].error
        if failed:
            details["failed_partitions"] = _partitions_text(failed)
        self._emit(Kind.COMMIT_FAILED, identity, error=_error_name(cause), reason=cause.str(), details=details)

    def _on_commit(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """An async commit() result (its identities were captured at the call) or an auto-commit's (no call: the
        last assignment's identity, see `commit_identity`), never librdkafka's identity at callback time alone."""
        if self._pending_async:
            self._report_commit(self._pending_async.popleft(), error, partitions, "async")
        else:
            self._report_commit(self._commit_identities(auto_commit=True), error, partitions, "auto")
        if self._user_on_commit is not None:
            self._user_on_commit(error, partitions)

    def _requested_offsets(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[TopicPartition] | None:
        """What a commit() that raised tried to commit: its `offsets`, the offset after its `message`, or (no
        argument) the current positions of the assignment; None if that cannot be known."""
        offsets = kwargs.get("offsets")
        message = kwargs.get("message")
        if args:
            if isinstance(args[0], Message):
                message = args[0]
            elif isinstance(args[0], list):
                offsets = args[0]
        try:
            if offsets is not None:
                return list(offsets)
            if message is not None:
                return [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
            return [p for p in super().position(super().assignment()) if p.offset >= 0] or None
        except (KafkaException, RuntimeError, TypeError, ValueError):
            return None

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        """`Consumer.commit`, reporting its result under the membership of the moment it was called (captured
        before the call: by the time it returns librdkafka may have rejoined under another member id)."""
        identities = self._commit_identities()
        asynchronous = kwargs.get("asynchronous", True)
        if asynchronous:
            self._pending_async.append(identities)
            try:
                return super().commit(*args, **kwargs)
            except KafkaException as failure:  # refused before it was sent: no on_commit will follow
                if self._pending_async:
                    self._pending_async.pop()
                self._report_commit(identities, failure.args[0], self._requested_offsets(args, kwargs), "async")
                raise
        try:
            result = super().commit(*args, **kwargs)
        except KafkaException as failure:
            self._report_commit(identities, failure.args[0], self._requested_offsets(args, kwargs), "sync")
            raise
        self._report_commit(identities, None, result, "sync")
        return result

    # --- statistics, errors, poll ------------------------------------------------------------------------------

    def _on_stats(self, stats_json: str) -> None:
        try:
            cgrp = json.loads(stats_json).get("cgrp")
        except ValueError:
            cgrp = None
        if isinstance(cgrp, dict) and cgrp.get("state") not in (None, "init", "term"):
            details = cgrp_details(cgrp)
            state = str(cgrp.get("state"))
            reason = str(cgrp.get("rebalance_reason") or "")
            if "max.poll" in reason and self._last_rebalance_reason != reason:  # the stats repeat it: report once
                # Seen only after a new assignment, the reason is the rejoin's: the overrun was the previous member's.
                overran = self._previous_membership if self._assigned_since_stats else self._membership
                self._report_poll_timeout(reason, overran, details)
            self._last_rebalance_reason = reason
            self._assigned_since_stats = False
            if state == "up":
                self._emit(Kind.HEARTBEAT, details=details)
            else:
                self._emit(Kind.HEARTBEAT_FAILED, reason=f"consumer group state {state}", details=details)
        if self._user_stats_cb is not None:
            self._user_stats_cb(stats_json)

    def _report_poll_timeout(
        self, reason: str, overran: GroupIdentity | None, details: dict[str, str] | None = None
    ) -> None:
        """Once per membership, whichever of the stats reason or poll's own error message shows it first; named
        after the membership that overran (member id + generation/epoch of its assignment), never librdkafka's
        identity of the moment: after the overrun that may pair the rejoin's new member id with the old generation."""
        if overran is None or overran != self._overrun_reported:
            self._overrun_reported = overran
            self._emit(Kind.POLL_TIMEOUT, overran, error="MAX_POLL_EXCEEDED", reason=reason, details=details)

    def _on_message_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._MAX_POLL_EXCEEDED:
            # Returned at the first poll after the overrun, before the rejoin's assignment can be served.
            self._report_poll_timeout(error.str(), self._membership)

    def poll(self, timeout: float | None = None) -> Any:
        """librdkafka's poll; an error message it returns (e.g. max.poll.interval.ms exceeded) is reported."""
        with self._liveness.polling():
            message = _CONSUMER_POLL(self, -1 if timeout is None else timeout)
        if message is not None and message.error() is not None:
            self._on_message_error(message.error())
        return message

    def consume(self, num_messages: int = 1, timeout: float | None = None) -> Any:
        """librdkafka's consume; error messages among the batch are reported."""
        with self._liveness.polling():
            messages = _CONSUMER_CONSUME(self, num_messages, -1 if timeout is None else timeout)
        for message in messages:
            if message.error() is not None:
                self._on_message_error(message.error())
        return messages

    def _on_error(self, error: KafkaError) -> None:
        self._emit(
            Kind.HEARTBEAT_FAILED, error=_error_name(error), reason=error.str(), details={"kind": "client_error"}
        )
        if self._user_error_cb is not None:
            self._user_error_cb(error)

    def close(self, *args: Any, **kwargs: Any) -> Any:
        """Close the consumer (its final revoke/leave is reported), then flush telemetry up to its timeout."""
        self._liveness.stop()
        try:
            return super().close(*args, **kwargs)
        finally:
            self.agent.close()


class PollStallLiveness:
    """The daemon thread that reports heartbeats while the application is not polling (module docstring)."""

    def __init__(self, consumer: RadarConsumer, *, interval_s: float, max_poll_interval_s: float) -> None:
        self._consumer = consumer
        self._interval_s = interval_s
        self._max_poll_interval_s = max_poll_interval_s
        self._lock = threading.Lock()
        self._identity: GroupIdentity | None = None
        self._in_poll = 0
        self._last_poll = time.monotonic()
        self._paused = False  # the thread itself did not run for a while (process stopped): claim nothing
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def member(self, identity: GroupIdentity | None) -> None:
        """The membership to report for (an assignment's), or None once the assignment is lost."""
        with self._lock:
            self._identity = identity
            if identity is not None and self._thread is None and not self._stopped.is_set():
                self._thread = threading.Thread(target=self._run, name="radar-agent-liveness", daemon=True)
                self._thread.start()

    def polling(self) -> _Polling:
        return _Polling(self)

    @contextmanager
    def in_application(self) -> Iterator[None]:
        """An application callback served inside poll: time away from poll, as librdkafka counts it (the app's
        last poll is when the callback started), so a callback that hangs shows as a stalled poll."""
        with self._lock:
            polls, self._in_poll = self._in_poll, 0  # served from close() too, where no poll is open
            self._last_poll = time.monotonic()
            self._paused = False
        try:
            yield
        finally:
            with self._lock:
                self._in_poll += polls

    def enter(self) -> None:
        with self._lock:
            self._in_poll += 1

    def leave(self) -> None:
        with self._lock:
            self._in_poll -= 1
            self._last_poll = time.monotonic()
            self._paused = False

    def stop(self) -> None:
        self._stopped.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._interval_s + 1.0)

    def _run(self) -> None:
        """Ticks every quarter statistics interval; reports once a quarter interval passed without a poll, then
        once per interval: the first report comes at most half an interval into a stall, so the gap after the last
        statistics (served inside poll, one per interval) stays within 1.5 intervals, as while polling."""
        tick_s = self._interval_s / 4
        last_tick = time.monotonic()
        last_report = float("-inf")
        while not self._stopped.wait(tick_s):
            now = time.monotonic()
            with self._lock:
                if now - last_tick > 2 * self._interval_s + 1.0:
                    self._paused = True
                last_tick = now
                poll_age = 0.0 if self._in_poll else now - self._last_poll
                identity = self._identity
                report = (
                    identity is not None
                    and not self._paused
                    and tick_s <= poll_age < self._max_poll_interval_s + MAX_POLL_NOTICED_S
                    and now - max(last_report, self._last_poll) >= tick_s
                    and now - last_report >= self._interval_s
                )
            if report:
                last_report = now
                self._consumer._emit(
                    Kind.HEARTBEAT, identity, details={"liveness": LIVENESS, "poll_age_ms": str(int(poll_age * 1000))}
                )


@dataclass(frozen=True, slots=True)
class _Polling:
    """The span of one poll()/consume() call (statistics are served inside it)."""

    liveness: PollStallLiveness

    def __enter__(self) -> None:
        self.liveness.enter()

    def __exit__(self, *exc: object) -> None:
        self.liveness.leave()


def instrument(consumer_config: Mapping[str, Any], telemetry_config: Mapping[str, Any] | None = None) -> RadarConsumer:
    """A `RadarConsumer` for `consumer_config`, its telemetry per `telemetry_config` (bootstrap.servers, topic,
    any librdkafka producer property, `flush.timeout.s`)."""
    return RadarConsumer(consumer_config, telemetry_config)
