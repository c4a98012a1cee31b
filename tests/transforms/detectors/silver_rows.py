"""Detector input rows made the way ingest makes them: coordinator records written as real bytes by the codec's
writer and routed by `transforms.offsets_batch`; telemetry as real-format log lines and `radar.event/1` JSON parsed by
the real telemetry parsers. Each row carries Kafka coordinates, so evidence can be checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rebalance_radar.transforms.detectors.group_events import GroupEvent, group_event_from_row
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker
from rebalance_radar.transforms.offsets_batch import route_offsets_row
from rebalance_radar.transforms.schemas import DETECTOR_INPUT
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record
from rebalance_radar.transforms.wire.consumer_protocol import encode_assignment, encode_subscription
from rebalance_radar.transforms.wire.coordinator_records import encode_coordinator_record

CLUSTER = "local"
BASE_MS = 1_795_000_000_000
OFFSETS_TOPIC = "__consumer_offsets"
TELEMETRY_TOPIC = "radar.telemetry"
JAVA_PREFIX = "[GroupCoordinator id=1 topic=__consumer_offsets partition=12]"
JAVA_LOGGER = "org.apache.kafka.coordinator.group.GroupMetadataManager"
SCALA_PREFIX = "[GroupCoordinator 1]:"
SCALA_LOGGER = "kafka.coordinator.group.GroupCoordinator"


def log_time(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f",{ms % 1000:03d}"


@dataclass(frozen=True)
class Member:
    """A classic member as a test describes it."""

    member_id: str
    partitions: Sequence[tuple[str, int]] = ()
    instance_id: str | None = None
    client_id: str = "consumer-orders-1"
    host: str = "10.0.0.1"
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 30_000
    topics: Sequence[str] = ("orders",)


@dataclass
class Silver:
    """A growing stream of DETECTOR_INPUT rows with increasing source offsets."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    next_offset: dict[str, int] = field(default_factory=dict)

    def _base(self, table: str, topic: str, partition: int, t_ms: int) -> dict[str, Any]:
        offset = self.next_offset.get(topic, 0)
        self.next_offset[topic] = offset + 1
        row: dict[str, Any] = dict.fromkeys(DETECTOR_INPUT.column_names)
        moment = datetime.fromtimestamp(t_ms / 1000, tz=UTC)
        row.update(
            cluster=CLUSTER,
            src_table=table,
            src_topic=topic,
            src_partition=partition,
            src_offset=offset,
            src_timestamp=moment,
            event_time=moment,
        )
        return row

    def _decoded(self, key: bytes, value: bytes | None, t_ms: int) -> dict[str, Any]:
        target, decoded = route_offsets_row(key, value)
        table = {"offset_commit": "offset_commits", "group_metadata": "group_metadata", "group_record": "group_records"}
        assert target in table, decoded
        row = self._base(table[target], OFFSETS_TOPIC, 12, t_ms)
        for name, value_ in decoded.items():
            if name in row:
                row[name] = value_
        self.rows.append(row)
        return row

    # --- __consumer_offsets --------------------------------------------------------------------------------

    def generation(
        self,
        group: str,
        generation: int,
        members: Sequence[Member],
        t_ms: int,
        leader: str | None = None,
        protocol: str = "range",
    ) -> dict[str, Any]:
        """A classic GroupMetadata record (value v3) with real subscription/assignment bytes."""
        encoded = []
        for m in members:
            topics: dict[str, list[int]] = {}
            for topic, partition in m.partitions:
                topics.setdefault(topic, []).append(partition)
            encoded.append(
                {
                    "memberId": m.member_id,
                    "groupInstanceId": m.instance_id,
                    "clientId": m.client_id,
                    "clientHost": f"/{m.host}",
                    "rebalanceTimeout": m.rebalance_timeout_ms,
                    "sessionTimeout": m.session_timeout_ms,
                    "subscription": encode_subscription(1, {"topics": list(m.topics), "ownedPartitions": []}),
                    "assignment": encode_assignment(
                        1, {"assignedPartitions": [{"topic": t, "partitions": p} for t, p in topics.items()]}
                    ),
                }
            )
        value = {
            "protocolType": "consumer",
            "generation": generation,
            "protocol": protocol if members else None,
            "leader": (leader or members[0].member_id) if members else None,
            "currentStateTimestamp": t_ms,
            "members": encoded,
        }
        key, raw = encode_coordinator_record("GroupMetadata", {"group": group}, 3, value)
        return self._decoded(key, raw, t_ms)

    def commit(self, group: str, topic: str, partition: int, offset: int, t_ms: int) -> dict[str, Any]:
        key, raw = encode_coordinator_record(
            "OffsetCommit",
            {"group": group, "topic": topic, "partition": partition},
            3,
            {"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": t_ms},
        )
        return self._decoded(key, raw, t_ms)

    def record(self, record_type: str, key: dict[str, Any], value: dict[str, Any] | None, t_ms: int) -> dict:
        """A KIP-848/1071 coordinator record (value version 0), or its tombstone when value is None."""
        raw_key, raw = encode_coordinator_record(record_type, key, None if value is None else 0, value)
        return self._decoded(raw_key, raw, t_ms)

    def kip848_group(self, group: str, epoch: int, members: Sequence[str], t_ms: int) -> None:
        """A KIP-848 group at `epoch` whose `members` (each its own client id) all reached it, as its coordinator
        writes it."""
        self.record("ConsumerGroupMetadata", {"groupId": group}, {"epoch": epoch, "metadataHash": 0}, t_ms)
        for member in members:
            self.record(
                "ConsumerGroupMemberMetadata", {"groupId": group, "memberId": member}, {"clientId": member}, t_ms
            )
            self.record(
                "ConsumerGroupCurrentMemberAssignment",
                {"groupId": group, "memberId": member},
                {"memberEpoch": epoch, "previousMemberEpoch": epoch - 1, "state": 0},
                t_ms,
            )
        self.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": group}, {"assignmentEpoch": epoch}, t_ms)

    def kip848_removal(self, group: str, member: str, epoch: int, t_ms: int) -> None:
        """The coordinator's tombstones of a removed KIP-848 member, and the group's next `epoch`."""
        self.record("ConsumerGroupCurrentMemberAssignment", {"groupId": group, "memberId": member}, None, t_ms)
        self.record("ConsumerGroupMemberMetadata", {"groupId": group, "memberId": member}, None, t_ms)
        self.record("ConsumerGroupMetadata", {"groupId": group}, {"epoch": epoch, "metadataHash": 0}, t_ms)
        self.record("ConsumerGroupTargetAssignmentMetadata", {"groupId": group}, {"assignmentEpoch": epoch}, t_ms)

    # --- telemetry -----------------------------------------------------------------------------------------

    def _telemetry(self, value: bytes, t_ms: int) -> list[dict[str, Any]]:
        outcome = parse_telemetry_record(value, t_ms)
        assert outcome.recognised, (value, outcome.reason)
        rows = []
        for event in outcome.events:
            row = self._base("heartbeat_events", TELEMETRY_TOPIC, 0, t_ms)
            for name, item in event.as_row().items():
                row[name] = item
            self.rows.append(row)
            rows.append(row)
        return rows

    def broker(self, message: str, t_ms: int, *, java: bool = True) -> list[dict[str, Any]]:
        """A group-coordinator log line (4.x Java wording by default, else 3.x Scala)."""
        prefix, logger = (JAVA_PREFIX, JAVA_LOGGER) if java else (SCALA_PREFIX, SCALA_LOGGER)
        return self._telemetry(f"[{log_time(t_ms)}] INFO {prefix} {message} ({logger})".encode(), t_ms)

    def client(self, client_id: str, group: str, message: str, t_ms: int, level: str = "INFO") -> list[dict]:
        """A Java consumer log line from ConsumerCoordinator."""
        text = (
            f"[{log_time(t_ms)}] {level} [Consumer clientId={client_id}, groupId={group}] {message} "
            "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
        )
        return self._telemetry(text.encode(), t_ms)

    def agent(self, event: str, group: str, t_ms: int, **fields: Any) -> list[dict[str, Any]]:
        """A `radar.event/1` object as the agent emits it."""
        body = {"schema": "radar.event/1", "event": event, "ts": t_ms, "group_id": group}
        details = {"observed_by": "agent", **fields.pop("details", {})}
        body.update({k: v for k, v in fields.items() if v is not None})
        body["details"] = details
        return self._telemetry(json.dumps(body).encode(), t_ms)


def events_of(rows: Iterable[dict[str, Any]]) -> list[GroupEvent]:
    events = [group_event_from_row(row) for row in rows]
    return [e for e in events if e is not None]


@dataclass
class Outcome:
    """Upserted gold rows of one tracker run: the last row per id, like the Delta MERGE downstream."""

    rebalances: dict[str, dict[str, Any]]
    detections: dict[str, dict[str, Any]]
    health: dict[str, Any] | None

    def kinds(self) -> list[str]:
        return sorted(d["kind"] for d in self.detections.values())

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return sorted((d for d in self.detections.values() if d["kind"] == kind), key=lambda d: d["first_seen"])

    def causes(self) -> list[str | None]:
        ordered = sorted(self.rebalances.values(), key=lambda r: (r["started_at"], r["rebalance_id"]))
        return [r["cause"] for r in ordered]

    def completed(self) -> list[dict[str, Any]]:
        done = [r for r in self.rebalances.values() if r["stabilized_at"] is not None]
        return sorted(done, key=lambda r: r["stabilized_at"])


def run(
    group: str,
    rows: Iterable[dict[str, Any]],
    until_ms: int,
    thresholds: DetectorThresholds | None = None,
    steps: Sequence[int] = (),
) -> Outcome:
    """Feed one group's rows to a fresh tracker and advance the watermark (through `steps`, then `until_ms`)."""
    tracker = GroupTracker(CLUSTER, group, thresholds or DetectorThresholds())
    tracker.accept(e for e in events_of(rows) if e.group_id == group)
    outcome = Outcome({}, {}, None)
    for watermark in [*steps, until_ms]:
        out = tracker.advance_to(watermark)
        for row in out.rebalances:
            outcome.rebalances[row["rebalance_id"]] = row
        for row in out.detections:
            outcome.detections[row["detection_id"]] = row
        if out.health is not None:
            outcome.health = out.health
    return outcome
