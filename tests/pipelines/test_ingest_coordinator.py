"""Truth from a real group coordinator: real classic and KIP-848 consumer groups join, rebalance, commit and leave
on the embedded broker; the ingest over Kafka must hold exactly their commits, the generations and assignments
their callbacks saw, and the KIP-848 member records with their ids."""

from __future__ import annotations

import json
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.local.broker import EmbeddedKafka
from rebalance_radar.transforms.schemas import GROUP_METADATA, GROUP_RECORDS, OFFSET_COMMITS
from tests.pipelines.ingest_support import create_topic, isolated_config, run_kafka_ingest_now, table

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

PARTITIONS = 3
CGMD_MAGIC = b"CGMDv2:"


@dataclass
class Member:
    """One confluent-kafka consumer and what its rebalance callbacks observed."""

    name: str
    consumer: Consumer
    owned: set[int] = field(default_factory=set)
    generation: int | None = None
    member_id: str | None = None
    # (generation or member epoch, member id, partitions owned after the callback)
    assignments: list[tuple[int, str, frozenset[int]]] = field(default_factory=list)
    open: bool = True


def generation_of(consumer: Consumer) -> int:
    """The generation (classic) or member epoch (KIP-848) librdkafka holds, from its group metadata blob."""
    blob = bytes(consumer.consumer_group_metadata())
    assert blob.startswith(CGMD_MAGIC), blob[:16]
    return int(struct.unpack_from("<i", blob, len(CGMD_MAGIC))[0])


def join(bootstrap: str, group: str, topic: str, protocol: str, name: str) -> Member:
    """A consumer subscribed to `topic`; its callbacks record (generation, member id, owned partitions)."""
    conf: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "client.id": name,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "log_level": 3,
    }
    if protocol == "classic":
        conf |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300}
    member = Member(name, Consumer(conf))
    eager = protocol == "classic"

    def on_assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        added = {tp.partition for tp in partitions}
        member.owned = added if eager else member.owned | added
        member.generation, member.member_id = generation_of(consumer), consumer.memberid()
        member.assignments.append((member.generation, member.member_id, frozenset(member.owned)))

    def on_revoke(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        member.owned = set() if eager else member.owned - {tp.partition for tp in partitions}

    member.consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    return member


def poll_until(members: list[Member], condition: Callable[[], bool], what: str, timeout_s: float = 45.0) -> None:
    """Poll every open consumer in turn (callbacks run inside poll) until `condition()`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for member in members:
            if member.open:
                member.consumer.poll(0.05)
        if condition():
            return
    raise AssertionError(f"timed out waiting for {what}: {[(m.name, m.generation, m.owned) for m in members]}")


def covering(members: list[Member]) -> Callable[[], bool]:
    """Every open member owns something and together they own each partition exactly once (KIP-848: member
    epochs move independently, so there is no common generation to wait for)."""

    def check() -> bool:
        live = [m for m in members if m.open]
        owned = [p for m in live for p in m.owned]
        return sorted(owned) == list(range(PARTITIONS)) and all(m.owned for m in live)

    return check


def stable(members: list[Member], after: int) -> Callable[[], bool]:
    """Every open member in one generation newer than `after`, together owning each partition exactly once."""

    def check() -> bool:
        live = [m for m in members if m.open]
        generations = {m.generation for m in live}
        owned = [p for m in live for p in m.owned]
        return (
            len(generations) == 1
            and (generations.pop() or 0) > after
            and sorted(owned) == list(range(PARTITIONS))
            and all(m.assignments for m in live)
        )

    return check


Commit = tuple[str, str, int, int]  # group, topic, partition, offset


def commit_owned(member: Member, group: str, topic: str, base: int, commits: list[Commit]) -> None:
    """Synchronously commit an explicit, distinct offset for each partition the member owns."""
    for partition in sorted(member.owned):
        offset = base + partition
        result = member.consumer.commit(
            offsets=[TopicPartition(topic, partition, offset, metadata=f"{member.name}@{member.generation}")],
            asynchronous=False,
        )
        assert result is not None and result[0].error is None, result
        commits.append((group, topic, partition, offset))


def leave(member: Member) -> None:
    member.consumer.close()
    member.open = False


def classic_scenario(
    bootstrap: str, group: str, topic: str, commits: list[Commit], members: list[Member]
) -> list[Member]:
    """A joins alone, B then C join, each generation commits, B leaves, the rest commit and leave."""
    generation = 0
    for round_index, name in enumerate(("A", "B", "C")):
        members.append(join(bootstrap, group, topic, "classic", name))
        poll_until(members, stable(members, generation), f"classic generation with {name}")
        generation = members[0].generation or 0
        for member in members:
            commit_owned(member, group, topic, 100 * (round_index + 1), commits)
    leave(members[1])
    poll_until(members, stable(members, generation), "classic generation after B left")
    for member in members:
        if member.open:
            commit_owned(member, group, topic, 1000, commits)
    for member in members:
        if member.open:
            leave(member)
    return members


def consumer_scenario(
    bootstrap: str, group: str, topic: str, commits: list[Commit], members: list[Member]
) -> list[Member]:
    """KIP-848: X joins, Y joins, both commit, Y leaves, X takes everything, commits and leaves."""
    members.append(join(bootstrap, group, topic, "consumer", "X"))
    poll_until(members, covering(members), "KIP-848 X owning every partition")
    members.append(join(bootstrap, group, topic, "consumer", "Y"))
    poll_until(members, covering(members), "KIP-848 X and Y sharing the partitions")
    for member in members:
        commit_owned(member, group, topic, 500, commits)
    leave(members[1])
    poll_until(members, lambda: members[0].owned == set(range(PARTITIONS)), "KIP-848 X owning everything again")
    commit_owned(members[0], group, topic, 700, commits)
    leave(members[0])
    return members


@pytest.fixture
def consumer_groups() -> Iterator[tuple[list[Member], list[Member]]]:
    """Two lists the scenarios fill; consumers a failure left open are closed, so none keeps polling."""
    groups: tuple[list[Member], list[Member]] = ([], [])
    yield groups
    for member in (*groups[0], *groups[1]):
        if member.open:
            leave(member)


def test_silver_holds_what_the_coordinator_did(
    spark: SparkSession,
    radar_config: RadarConfig,
    kafka_broker: EmbeddedKafka,
    tmp_path: Path,
    consumer_groups: tuple[list[Member], list[Member]],
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topic, classic_group, consumer_group = f"orders-{suffix}", f"classic-{suffix}", f"kip848-{suffix}"
    create_topic(bootstrap, topic, PARTITIONS)
    commits: list[Commit] = []
    classic = classic_scenario(bootstrap, classic_group, topic, commits, consumer_groups[0])
    kip848 = consumer_scenario(bootstrap, consumer_group, topic, commits, consumer_groups[1])

    config = isolated_config(radar_config, tmp_path / "data")
    run_kafka_ingest_now(spark, config, bootstrap)

    groups = [classic_group, consumer_group]
    # offset_commits: exactly the commits the clients made, every one, in order per partition
    rows = (
        table(spark, config, OFFSET_COMMITS)
        .where(F.col("group_id").isin(*groups))
        .orderBy("src_partition", "src_offset")
        .collect()
    )
    assert sorted((r.group_id, r.topic, r.partition, r.committed_offset) for r in rows) == sorted(commits)
    assert all(not r.is_tombstone and r.metadata and r.commit_ts is not None for r in rows)
    latest = {(r.group_id, r.partition): r.committed_offset for r in rows}  # ordered by log position
    expected_latest = {(g, p): o for g, _t, p, o in commits}  # the client's last commit per partition
    assert latest == expected_latest

    # group_metadata: every generation and assignment the classic callbacks saw, with its members
    records = (
        table(spark, config, GROUP_METADATA).where(F.col("group_id") == classic_group).orderBy("src_offset").collect()
    )
    persisted: dict[int, dict[str, tuple[list[str], frozenset[int]]]] = {}
    for record in records:
        if record.members and record.generation is not None:
            persisted[record.generation] = {
                m.member_id: (
                    m.subscribed_topics,
                    frozenset(p for a in m.assigned_partitions or [] if a.topic == topic for p in a.partitions),
                )
                for m in record.members
            }
            assert record.protocol_type == "consumer" and record.member_count == len(record.members)
            assert record.leader in persisted[record.generation]
    observed: dict[int, dict[str, frozenset[int]]] = {}
    for member in classic:
        for generation, member_id, owned in member.assignments:
            observed.setdefault(generation, {})[member_id] = owned
    assert len(observed) >= 4, observed  # A alone, +B, +C, -B
    for generation, assignment in observed.items():
        assert generation in persisted, (generation, sorted(persisted))
        assert {m: owned for m, (_topics, owned) in persisted[generation].items()} == assignment
        assert all(topics == [topic] for topics, _owned in persisted[generation].values())
    assert records[-1].member_count == 0 and records[-1].generation > max(observed)  # empty after all left

    # group_records: the KIP-848 group's records, keyed by the members the clients were
    group_rows = (
        table(spark, config, GROUP_RECORDS)
        .where(F.col("group_id") == consumer_group)
        .orderBy("src_partition", "src_offset")  # the log's order: a table's rows come back in no given order
        .collect()
    )
    member_ids = {m.member_id for m in kip848}
    by_type: dict[str, list] = {}
    for row in group_rows:
        assert row.group_type == "consumer"
        by_type.setdefault(row.record_type, []).append(row)
    for name in (
        "ConsumerGroupMetadata",
        "ConsumerGroupMemberMetadata",
        "ConsumerGroupTargetAssignmentMember",
        "ConsumerGroupCurrentMemberAssignment",
    ):
        assert name in by_type, sorted(by_type)
    live_members = {r.member_id for r in by_type["ConsumerGroupMemberMetadata"] if not r.is_tombstone}
    assert live_members == member_ids
    left = {r.member_id for r in by_type["ConsumerGroupMemberMetadata"] if r.is_tombstone}
    assert left == member_ids  # both left: each member record deleted
    for member in kip848:
        assignments = [
            (
                r.epoch,
                frozenset(p for a in json.loads(r.payload)["assignedPartitions"] for p in a["partitions"]),
            )
            for r in by_type["ConsumerGroupCurrentMemberAssignment"]
            if r.member_id == member.member_id and not r.is_tombstone
        ]
        persisted_epochs = {epoch for epoch, _ in assignments}
        assert {epoch for epoch, _mid, _owned in member.assignments} <= persisted_epochs, (member.name, assignments)
        assert {owned for _e, _mid, owned in member.assignments if owned} <= {parts for _e, parts in assignments}
    group_epochs = [r.epoch for r in by_type["ConsumerGroupMetadata"] if not r.is_tombstone]
    assert group_epochs == sorted(group_epochs) and group_epochs[-1] >= max(
        e for m in kip848 for e, _mid, _owned in m.assignments
    )
