"""`radar poll-groups`: describe consumer groups through the admin API on an interval; emit snapshot telemetry.

Why: telemetry from logs and agents says what changed; a periodic describe says what *is* (state, members,
assignments), so a member that silently vanished, or a group stuck in PreparingRebalance, is visible even when
nobody shipped a log line.

Each snapshot is `radar.event/1` JSON on the telemetry topic: one `heartbeat` event per member (member id,
client id, host, instance id; `details`: snapshot=admin_describe, state, type, assignor, members, assignment,
target_assignment, coordinator), or one `group_empty` event for a group without members.

Covered: classic and KIP-848 consumer groups (`list_consumer_groups` + `describe_consumer_groups`; librdkafka
sends DescribeGroups or ConsumerGroupDescribe as the group type needs). Not covered: Kafka Streams (KIP-1071)
groups — confluent-kafka 2.16 / librdkafka 2.16 has no StreamsGroupDescribe call and does not list groups of type
`streams`, so they are skipped; their telemetry comes from broker logs or a protocol tap (`radar.frame/1`,
which decodes StreamsGroupDescribe responses). Member and group epochs are not exposed by confluent-kafka's
`MemberDescription` either, so KIP-848 snapshots carry no `member_epoch`.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transforms.schemas import HeartbeatEventKind
from transforms.telemetry.json_events import SCHEMA_V1

SNAPSHOT = "admin_describe"
MAX_LISTED_PARTITIONS = 256


def _enum_name(value: Any) -> str:
    return str(getattr(value, "name", value) or "UNKNOWN")


def _partitions(assignment: Any) -> tuple[str, int]:
    partitions = list(getattr(assignment, "topic_partitions", None) or [])
    listed = ",".join(f"{p.topic}-{p.partition}" for p in partitions[:MAX_LISTED_PARTITIONS])
    return listed, len(partitions)


def snapshot_events(description: Any, now_ms: int) -> list[dict[str, Any]]:
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
    base = {"schema": SCHEMA_V1, "ts": now_ms, "group_id": description.group_id}
    if not members:
        return [{**base, "event": HeartbeatEventKind.GROUP_EMPTY.value, "details": details}]
    events = []
    for member in members:
        member_details = dict(details)
        listed, count = _partitions(member.assignment)
        member_details.update({"assignment": listed, "assigned_partitions": str(count)})
        if getattr(member, "target_assignment", None) is not None:
            member_details["target_assignment"] = _partitions(member.target_assignment)[0]
        event = {**base, "event": HeartbeatEventKind.HEARTBEAT.value, "member_id": member.member_id}
        for key, value in (
            ("client_id", member.client_id),
            ("host", (member.host or "").lstrip("/")),
            ("group_instance_id", member.group_instance_id),
        ):
            if value:
                event[key] = value
        event["details"] = member_details
        events.append(event)
    return events


@dataclass(frozen=True, slots=True)
class PollCounts:
    """What one poll did: groups described, events produced, groups that failed to describe."""

    groups: int
    events: int
    failed: int


class GroupPoller:
    """Lists (or takes) groups, describes them, produces snapshot events; `poll_once()` is one round."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        *,
        groups: Sequence[str] = (),
        client_config: Mapping[str, Any] | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient

        base = {"bootstrap.servers": bootstrap_servers, **(client_config or {})}
        self.admin = AdminClient(base)
        self.producer = Producer({**base, "client.id": "radar-poll-groups", "linger.ms": 50})
        self.topic = topic
        self.groups = tuple(groups)
        self.timeout_s = timeout_s
        self._key = socket.gethostname().encode()

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

    def poll_once(self) -> PollCounts:
        descriptions, failed = self.describe(self.group_ids())
        now_ms = int(time.time() * 1000)
        produced = 0
        for description in descriptions:
            for event in snapshot_events(description, now_ms):
                self.producer.produce(self.topic, json.dumps(event, separators=(",", ":")).encode(), self._key)
                produced += 1
        self.producer.poll(0)
        return PollCounts(len(descriptions), produced, failed)

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
        self.producer.flush(self.timeout_s)
        return totals


def run_poll_groups(
    bootstrap_servers: str,
    topic: str,
    *,
    interval_s: float = 10.0,
    groups: Sequence[str] = (),
    once: bool = False,
    client_config: Mapping[str, Any] | None = None,
) -> PollCounts:
    """`radar poll-groups`: until interrupted (or one round with `once`)."""
    poller = GroupPoller(bootstrap_servers, topic, groups=groups, client_config=client_config)
    stop = threading.Event()
    try:
        return poller.run(interval_s, once=once, stop=stop)
    except KeyboardInterrupt:
        stop.set()
        poller.producer.flush(poller.timeout_s)
        return PollCounts(0, 0, 0)
