"""`radar poll-groups`: describe consumer groups through the admin API on an interval; emit snapshot telemetry.

Why: telemetry from logs and agents says what changed; a periodic describe says what *is* (state, members,
assignments), so a member that silently vanished, or a group stuck in PreparingRebalance, is visible even when
nobody shipped a log line.

Each snapshot is `radar.event/1` JSON (built and serialised by `RadarEventV1`) on the telemetry topic, produced by
the emitters' bounded `TelemetryProducer` (a full queue or a failed delivery is counted, never waited for): one
`heartbeat` event per member (member id, client id, host, instance id; `details`: snapshot=admin_describe, state,
type, assignor, members, assignment, target_assignment, coordinator), or one `group_empty` event for a group
without members.

Covered: classic and KIP-848 consumer groups (`list_consumer_groups` + `describe_consumer_groups`; librdkafka
sends DescribeGroups or ConsumerGroupDescribe as the group type needs), and Kafka Streams (KIP-1071) groups, which
confluent-kafka 2.16 can neither list nor describe: those go through the project's own protocol client
(`emitters.kafka_wire_client`: ListGroups with typesFilter=streams on every broker, FindCoordinator, then
StreamsGroupDescribe on the coordinator). Their events carry `member_epoch` and, in `details`, type=STREAMS,
group_epoch, assignment_epoch, topology_epoch, process_id and the active/standby/warm-up tasks
(`<subtopology>_<partition>`). The wire client speaks PLAINTEXT only, so with TLS or SASL settings streams groups
are skipped (said once on stderr). Member epochs are not exposed by confluent-kafka's `MemberDescription`, so
KIP-848 snapshots carry no `member_epoch`.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rebalance_radar.emitters.kafka_wire_client import BrokerAddress, KafkaWireClient, KafkaWireError
from rebalance_radar.emitters.telemetry_producer import TelemetryProducer
from rebalance_radar.transforms.schemas import HeartbeatEventKind
from rebalance_radar.transforms.telemetry.events import partition_list
from rebalance_radar.transforms.telemetry.json_events import SCHEMA_V1, RadarEventV1
from rebalance_radar.transforms.wire.error_codes import error_name, upper_snake

SNAPSHOT = "admin_describe"
STREAMS_TYPE = "STREAMS"
WIRE_CLIENT_ID = "radar-poll-groups"


def _enum_name(value: Any) -> str:
    return str(getattr(value, "name", value) or "UNKNOWN")


def _partitions(assignment: Any) -> tuple[str, int]:
    partitions = getattr(assignment, "topic_partitions", None) or []
    return partition_list((p.topic, (p.partition,)) for p in partitions)


def _event(base: Mapping[str, Any], kind: HeartbeatEventKind, details: dict[str, str], **member: Any) -> RadarEventV1:
    """One snapshot event; empty optional member fields are left out."""
    present = {key: value for key, value in member.items() if value not in (None, "")}
    return RadarEventV1(schema_id=SCHEMA_V1, event=kind, **base, **present, details=details)


def snapshot_events(description: Any, now_ms: int) -> list[RadarEventV1]:
    """One `ConsumerGroupDescription` -> radar.event/1 objects (per member, or one `group_empty`)."""
    members = list(description.members or [])
    state = _enum_name(description.state)
    details: dict[str, str] = {
        "snapshot": SNAPSHOT,
        "state": state,
        "type": _enum_name(getattr(description, "type", None)),
        "members": str(len(members)),
    }
    if description.partition_assignor:
        details["assignor"] = str(description.partition_assignor)
    coordinator = getattr(description, "coordinator", None)
    if coordinator is not None and getattr(coordinator, "id", None) is not None:
        details["coordinator"] = str(coordinator.id)
    base = {"ts": now_ms, "group_id": description.group_id}
    if not members:
        return [_event(base, HeartbeatEventKind.GROUP_EMPTY, details)]
    events = []
    for member in members:
        member_details = dict(details)
        listed, count = _partitions(member.assignment)
        member_details.update({"assignment": listed, "assigned_partitions": str(count)})
        if getattr(member, "target_assignment", None) is not None:
            member_details["target_assignment"] = _partitions(member.target_assignment)[0]
        events.append(
            _event(
                base,
                HeartbeatEventKind.HEARTBEAT,
                member_details,
                member_id=member.member_id,
                client_id=member.client_id,
                host=(member.host or "").lstrip("/"),
                group_instance_id=member.group_instance_id,
            )
        )
    return events


def _upper_snake(state: str) -> str:
    """StreamsGroupDescribe says `NotReady`; the admin API's enums say `NOT_READY` (snapshots use the latter)."""
    return upper_snake(state) if state else "UNKNOWN"


def _task_list(tasks: Sequence[Mapping[str, Any]] | None) -> tuple[str, int]:
    """Streams tasks as Kafka names them (`<subtopology>_<partition>`), cut at MAX_LISTED_PARTITIONS; and the count."""
    return partition_list(((str(task.get("subtopologyId")), task.get("partitions")) for task in tasks or ()), sep="_")


def streams_snapshot_events(
    group: Mapping[str, Any], now_ms: int, coordinator: int | None = None
) -> list[RadarEventV1]:
    """One StreamsGroupDescribe `DescribedGroup` -> radar.event/1 objects (per member, or one `group_empty`)."""
    members = list(group.get("members") or [])
    details: dict[str, str] = {
        "snapshot": SNAPSHOT,
        "state": _upper_snake(str(group.get("groupState") or "")),
        "type": STREAMS_TYPE,
        "members": str(len(members)),
        "group_epoch": str(group.get("groupEpoch")),
        "assignment_epoch": str(group.get("assignmentEpoch")),
    }
    topology = group.get("topology")
    topology_epoch = topology.get("epoch") if topology else None
    if topology is not None:
        details["topology_epoch"] = str(topology_epoch)
        details["subtopologies"] = str(len(topology.get("subtopologies") or []))
    if group.get("assignorName"):
        details["assignor"] = str(group["assignorName"])
    if coordinator is not None:
        details["coordinator"] = str(coordinator)
    base = {"ts": now_ms, "group_id": group.get("groupId")}
    if not members:
        return [_event(base, HeartbeatEventKind.GROUP_EMPTY, details)]
    events = []
    for member in members:
        member_details = dict(details)
        assignment = member.get("assignment") or {}
        active, active_count = _task_list(assignment.get("activeTasks"))
        member_details.update({"assignment": active, "assigned_tasks": str(active_count)})
        for key, name in (("standbyTasks", "standby_tasks"), ("warmupTasks", "warmup_tasks")):
            listed, count = _task_list(assignment.get(key))
            if count:
                member_details[name] = listed
        member_details["target_assignment"] = _task_list((member.get("targetAssignment") or {}).get("activeTasks"))[0]
        if member.get("processId"):
            member_details["process_id"] = str(member["processId"])
        if member.get("topologyEpoch") is not None and member.get("topologyEpoch") != topology_epoch:
            member_details["member_topology_epoch"] = str(member["topologyEpoch"])
        if member.get("isClassic"):
            member_details["is_classic"] = "true"
        events.append(
            _event(
                base,
                HeartbeatEventKind.HEARTBEAT,
                member_details,
                member_id=member.get("memberId"),
                member_epoch=member.get("memberEpoch"),
                client_id=member.get("clientId"),
                host=(member.get("clientHost") or "").lstrip("/"),
                group_instance_id=member.get("instanceId"),
            )
        )
    return events


@dataclass(frozen=True, slots=True)
class PollCounts:
    """What polls did: groups described, events queued, groups that failed to describe; once the producer closed,
    the events it delivered and dropped."""

    groups: int
    events: int
    failed: int
    delivered: int = 0
    dropped: int = 0


class GroupPoller:
    """Lists (or takes) groups, describes them, produces snapshot events; `poll_once()` is one round.

    `client_config`: librdkafka settings for the cluster (security included, from
    `emitters.kafka_settings.client_settings`); snapshots go to `topic` on the same cluster through a
    `TelemetryProducer` (`producer.counts` says what was delivered or dropped)."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        *,
        groups: Sequence[str] = (),
        client_config: Mapping[str, Any] | None = None,
        timeout_s: float = 10.0,
        streams: bool = True,
    ) -> None:
        from confluent_kafka.admin import AdminClient

        base = {**(client_config or {}), "bootstrap.servers": bootstrap_servers}
        self.admin = AdminClient(base)
        self.producer = TelemetryProducer(base, topic, client_id="radar-poll-groups", flush_timeout_s=timeout_s)
        self.topic = topic
        self.groups = tuple(groups)
        self.timeout_s = timeout_s
        self._key = socket.gethostname().encode()
        self.bootstrap_servers = bootstrap_servers
        plaintext = str(base.get("security.protocol", "PLAINTEXT")).upper() == "PLAINTEXT"
        self.streams = streams and plaintext
        if streams and not plaintext:
            print("radar poll-groups: streams groups skipped (the wire client speaks PLAINTEXT only)", file=sys.stderr)
        self._streams_unavailable_said = False

    def group_ids(self) -> list[str]:
        if self.groups:
            return list(self.groups)
        listed = self.admin.list_consumer_groups(request_timeout=self.timeout_s).result(timeout=self.timeout_s)
        return sorted(g.group_id for g in listed.valid if not g.is_simple_consumer_group)

    def describe(self, group_ids: Iterable[str]) -> tuple[list[Any], int]:
        ids = list(group_ids)
        if not ids:
            return [], 0
        futures = self.admin.describe_consumer_groups(ids, request_timeout=self.timeout_s)
        found, failed = [], 0
        for group_id, future in futures.items():
            try:
                found.append(future.result(timeout=self.timeout_s))
            except Exception as failure:  # one group's error (e.g. GROUP_ID_NOT_FOUND) must not stop the others
                failed += 1
                print(f"radar poll-groups: {group_id}: {failure}", file=sys.stderr)
        return found, failed

    def _wire_client(self, host: str, port: int) -> KafkaWireClient:
        return KafkaWireClient(host, port, client_id=WIRE_CLIENT_ID, timeout_s=self.timeout_s)

    def streams_group_ids(self) -> list[str]:
        """Streams groups on every broker (a broker lists only the groups it coordinates), or the given ones."""
        metadata = self.admin.list_topics(timeout=self.timeout_s)
        found: set[str] = set()
        for broker in sorted(metadata.brokers.values(), key=lambda b: b.id):
            with self._wire_client(broker.host, broker.port) as client:
                found.update(g.group_id for g in client.list_groups(types=("streams",)))
        return sorted(found & set(self.groups)) if self.groups else sorted(found)

    def describe_streams(self, group_ids: Iterable[str]) -> tuple[list[tuple[dict[str, Any], int]], int]:
        """StreamsGroupDescribe each group on its coordinator; the described groups (with the coordinator's node
        id) and how many failed."""
        by_coordinator: dict[BrokerAddress, list[str]] = {}
        failed = 0
        ids = list(group_ids)
        if not ids:
            return [], 0
        with KafkaWireClient.from_bootstrap(
            self.bootstrap_servers, client_id=WIRE_CLIENT_ID, timeout_s=self.timeout_s
        ) as bootstrap:
            for group_id in ids:
                try:
                    by_coordinator.setdefault(bootstrap.find_coordinator(group_id), []).append(group_id)
                except KafkaWireError as failure:
                    failed += 1
                    print(f"radar poll-groups: {group_id}: {failure}", file=sys.stderr)
        found: list[tuple[dict[str, Any], int]] = []
        for coordinator, coordinated in by_coordinator.items():
            try:
                with self._wire_client(coordinator.host, coordinator.port) as client:
                    described = client.describe_streams_groups(coordinated)
            except KafkaWireError as failure:
                failed += len(coordinated)
                print(f"radar poll-groups: {','.join(coordinated)}: {failure}", file=sys.stderr)
                continue
            for group in described:
                error = error_name(group.get("errorCode"))
                if error:  # e.g. GROUP_ID_NOT_FOUND for a group deleted since it was listed
                    failed += 1
                    message = f" ({group['errorMessage']})" if group.get("errorMessage") else ""
                    print(f"radar poll-groups: {group.get('groupId')}: {error}{message}", file=sys.stderr)
                    continue
                found.append((group, coordinator.node_id))
        return found, failed

    def _streams_round(self) -> tuple[list[tuple[dict[str, Any], int]], int, set[str]]:
        """Described streams groups, failures, and the ids the admin API must not describe; a cluster or
        client that cannot list streams groups yields none (said once)."""
        if not self.streams:
            return [], 0, set()
        try:
            ids = self.streams_group_ids()
        except Exception as failure:  # e.g. a broker before KIP-1071: ListGroups v5 or streams groups unknown
            if not self._streams_unavailable_said:
                print(f"radar poll-groups: streams groups not listed: {failure}", file=sys.stderr)
                self._streams_unavailable_said = True
            return [], 0, set()
        found, failed = self.describe_streams(ids)
        return found, failed, set(ids)

    def _produce(self, events: Iterable[RadarEventV1]) -> int:
        return sum(self.producer.send_event(event, self._key) for event in events)

    def poll_once(self) -> PollCounts:
        streams_groups, streams_failed, streams_ids = self._streams_round()
        descriptions, failed = self.describe(g for g in self.group_ids() if g not in streams_ids)
        now_ms = int(time.time() * 1000)
        produced = 0
        for description in descriptions:
            produced += self._produce(snapshot_events(description, now_ms))
        for group, coordinator in streams_groups:
            produced += self._produce(streams_snapshot_events(group, now_ms, coordinator))
        self.producer.serve()
        return PollCounts(len(descriptions) + len(streams_groups), produced, failed + streams_failed)

    def run(self, interval_s: float, *, once: bool = False, stop: threading.Event | None = None) -> PollCounts:
        """Poll every `interval_s` until `stop` is set (or once); returns the totals."""
        stop = stop or threading.Event()
        totals = PollCounts(0, 0, 0)
        while True:
            started = time.monotonic()
            counts = self.poll_once()
            totals = PollCounts(
                totals.groups + counts.groups, totals.events + counts.events, totals.failed + counts.failed
            )
            if once or stop.wait(max(0.0, interval_s - (time.monotonic() - started))):
                break
        sent = self.producer.close()
        return replace(totals, delivered=sent.delivered, dropped=sent.dropped)


def run_poll_groups(
    bootstrap_servers: str,
    topic: str,
    *,
    interval_s: float = 10.0,
    groups: Sequence[str] = (),
    once: bool = False,
    client_config: Mapping[str, Any] | None = None,
    lag_interval_s: float | None = None,
) -> PollCounts:
    """`radar poll-groups`: until interrupted (or one round with `once`); with `lag_interval_s` (`lag.poll_interval`)
    the groups' end offsets are published too (`emitters.end_offsets`), on their own period."""
    from rebalance_radar.emitters.end_offsets import EndOffsetsPoller

    poller = GroupPoller(bootstrap_servers, topic, groups=groups, client_config=client_config)
    settings = {**(client_config or {}), "bootstrap.servers": bootstrap_servers}
    lag = None
    if lag_interval_s is not None:
        lag = EndOffsetsPoller(settings, topic, interval_s=lag_interval_s, groups=groups, emitter="radar-poll-groups")
    stop = threading.Event()
    try:
        if lag is not None and once:
            lag.poll_once()
        elif lag is not None:
            lag.start()
        return poller.run(interval_s, once=once, stop=stop)
    except KeyboardInterrupt:
        stop.set()
        sent = poller.producer.close()
        return PollCounts(0, 0, 0, sent.delivered, sent.dropped)
    finally:
        if lag is not None:
            lag.stop()
            if lag.problem():
                print(f"radar poll-groups: {lag.problem()}", file=sys.stderr)
