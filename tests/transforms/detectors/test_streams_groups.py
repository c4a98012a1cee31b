"""KIP-1071 streams groups (and KIP-848 consumer groups, which share the epoch model) through the 4.x coordinator's
log, with and without the group's records: a member that leaves after its fencing is a departure with its cause, and
a healthy application's topology set-up, scale-out and shutdown stay silent. Coordinator lines are
`GroupMetadataManager` 4.3.1's wording (see test_streams_log.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.schemas import HeartbeatEventKind
from rebalance_radar.transforms.telemetry.informational import COORDINATOR_NARRATION
from rebalance_radar.transforms.telemetry.log_line import timestamp_ms_in_text
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record
from tests.transforms.detectors.silver_rows import BASE_MS, Silver, run

APP = "wordcount"
RECORDED = Path(__file__).parents[2] / "data" / "streams-app"


class StreamsCoordinator:
    """What the 4.3.1 coordinator writes for a streams group: its log lines, and with `records` its records."""

    def __init__(self, s: Silver, records: bool) -> None:
        self.s = s
        self.records = records
        self.epoch = 0

    def line(self, member: str | None, text: str, at: int) -> None:
        context = f"[GroupId {APP}][MemberId {member}]" if member else f"[GroupId {APP}]"
        self.s.broker(f"{context} {text}", at)

    def join(self, member: str, at: int) -> None:
        self.line(member, "Member joins the streams group.", at)
        if self.records:
            self.s.record(
                "StreamsGroupMemberMetadata",
                {"groupId": APP, "memberId": member},
                {"clientId": f"{APP}-{member}-StreamThread-1-consumer", "clientHost": "/10.0.0.9", "processId": member},
                at,
            )

    def gone(self, member: str, at: int) -> None:
        if self.records:
            self.s.record("StreamsGroupCurrentMemberAssignment", {"groupId": APP, "memberId": member}, None, at)
            self.s.record("StreamsGroupMemberMetadata", {"groupId": APP, "memberId": member}, None, at)

    def bump(self, member: str | None, at: int, *, logged: bool = True) -> None:
        """A new group epoch and its target assignment (a departure's bump is not logged, only its assignment)."""
        self.epoch += 1
        if logged:
            self.line(
                member,
                f"Bumped streams group epoch to {self.epoch} with metadata hash 77 and validated topic epoch 0.",
                at,
            )
        if self.records:
            self.s.record("StreamsGroupMetadata", {"groupId": APP}, {"epoch": self.epoch, "metadataHash": 77}, at)
            self.s.record("StreamsGroupTargetAssignmentMetadata", {"groupId": APP}, {"assignmentEpoch": self.epoch}, at)
        self.line(None, f"Computed a new target assignment for epoch {self.epoch} with 'sticky' assignor in 1ms.", at)

    def topics_missing(self, member: str, at: int) -> None:
        """The founder's topology initialized and configured, its internal topics not yet created (4.3.1)."""
        self.line(member, "Member initialized the topology with epoch 0", at)
        self.line(member, "Configuring the topology 0", at + 10)
        self.line(
            member,
            "Valid topic configuration found in 87ms, but internal topics are missing for topology epoch 0: "
            f"{APP}-counts-changelog",
            at + 100,
        )

    def stable(self, member: str, tasks: str, at: int) -> None:
        self.line(
            member,
            f"Member's new assignment state: epoch={self.epoch}, previousEpoch={self.epoch - 1}, state=STABLE, "
            f"assignedTasks=(active=[{tasks}], standby=[], warmup=[]) and tasksPendingRevocation=(active=[], "
            "standby=[], warmup=[]).",
            at,
        )
        if self.records:
            by_subtopology: dict[str, list[int]] = {}
            for task in filter(None, tasks.split(", ")):
                subtopology, partition = task.split("@")[0].split("-")
                by_subtopology.setdefault(subtopology, []).append(int(partition))
            active = [{"subtopologyId": k, "partitions": v} for k, v in sorted(by_subtopology.items())]
            self.s.record(
                "StreamsGroupCurrentMemberAssignment",
                {"groupId": APP, "memberId": member},
                {"memberEpoch": self.epoch, "previousMemberEpoch": self.epoch - 1, "state": 1, "activeTasks": active},
                at,
            )


@pytest.mark.parametrize("records", [True, False], ids=["records and log", "log alone"])
def test_a_streams_member_that_left_after_its_fencing_is_counted_as_left(records: bool) -> None:
    """The member's session expires, it rejoins under the same member id (KIP-1071 clients keep it), and later leaves:
    that leave is a departure of the rebalance it began, not an unexplained one."""
    s = Silver()
    coordinator = StreamsCoordinator(s, records)
    t = BASE_MS
    for member in ("a", "b", "c"):
        coordinator.join(member, t)
    coordinator.bump("c", t)
    for member, tasks in (("a", "0-0@1"), ("b", "0-1@1"), ("c", "0-2@1")):
        coordinator.stable(member, tasks, t + 200)
    fenced = t + 600_000
    coordinator.line(None, "Streams member c fenced from the group because the member session expired..", fenced)
    coordinator.gone("c", fenced)
    coordinator.bump(None, fenced, logged=False)
    coordinator.stable("a", "0-0@1, 0-2@2", fenced + 300)
    coordinator.stable("b", "0-1@1", fenced + 300)
    back = fenced + 20_000
    coordinator.join("c", back)
    coordinator.bump("c", back)
    for member in ("a", "b", "c"):
        coordinator.stable(member, "0-0@1" if member == "a" else "0-1@1", back + 400)
    left = back + 600_000
    coordinator.line("c", "Member c left the streams group.", left)
    coordinator.gone("c", left)
    coordinator.bump(None, left, logged=False)
    coordinator.stable("a", "0-0@1, 0-2@4", left + 300)
    coordinator.stable("b", "0-1@1", left + 300)

    out = run(APP, s.rows, left + 3_600_000)
    completed = out.completed()
    last = completed[-1]
    assert (last["left"], last["expired"], last["cause"]) == (["c"], [], "member_left")
    assert (last["from_generation"], last["generation"], last["members_after"]) == (3, 4, 2)
    assert [r["cause"] for r in completed[-3:]] == ["heartbeat_expiration", "member_joined", "member_left"]
    assert "unknown" not in [r["cause"] for r in out.rebalances.values()]
    assert out.kinds() == ["heartbeat_expiration"]
    # the tasks each member holds once the group stabilised, in Kafka Streams' spelling
    assert last["assignment"] == {"a": "0_0,0_2", "b": "0_1"}


def test_a_healthy_application_seen_through_the_coordinator_log_alone_stays_silent() -> None:
    """Topology set-up (the topology configured and validated before any epoch), three instances joining one by
    one, a task moving with a revocation in between, then a clean shutdown: rebalances that converge, no detection."""
    s = Silver()
    coordinator = StreamsCoordinator(s, records=False)
    t = BASE_MS
    coordinator.join("a", t)
    coordinator.line("a", "Member initialized the topology with epoch 0", t + 100)
    coordinator.line("a", "Configuring the topology 0", t + 150)
    coordinator.line("a", "Valid topic configuration found in 3ms, topology epoch 0 is now initialized.", t + 160)
    coordinator.bump("a", t + 200)
    coordinator.stable("a", "0-0@1, 0-1@1", t + 3200)
    at = t + 10_000
    for joiner, moved in (("b", "0-1"), ("c", "0-0")):
        coordinator.join(joiner, at)
        coordinator.bump(joiner, at)
        # the owner revokes the task first (UNREVOKED_TASKS), the joiner waits for it (UNRELEASED_TASKS)
        coordinator.line(
            joiner,
            f"Member's new assignment state: epoch={coordinator.epoch}, previousEpoch=0, state=UNRELEASED_TASKS, "
            "assignedTasks=(active=[], standby=[], warmup=[]) and tasksPendingRevocation=(active=[], standby=[], "
            "warmup=[]).",
            at + 50,
        )
        coordinator.stable("a", "0-0@1" if joiner == "b" else "", at + 400)
        coordinator.stable(joiner, f"{moved}@{coordinator.epoch}", at + 900)
        if joiner == "c":
            coordinator.stable("b", "0-1@2", at + 900)
        at += 30_000
    for member in ("c", "b", "a"):
        coordinator.line(member, f"Member {member} left the streams group.", at)
        coordinator.bump(None, at + 100, logged=False)
        for stays in {"c": ("a", "b"), "b": ("a",), "a": ()}[member]:
            coordinator.stable(stays, "0-0@1", at + 200)
        at += 3_000

    out = run(APP, s.rows, at + 3_600_000)
    assert out.kinds() == []
    assert all(r["stabilized_at"] is not None for r in out.rebalances.values())
    causes = [r["cause"] for r in out.completed()]
    assert causes == ["member_joined"] * 3 + ["member_left"] * 3  # the group forming with "a", then b and c
    assert out.health is not None and out.health["state"] == "Empty"
    # the topology epoch the coordinator validated before the first epoch, and each member's tasks
    formed = out.completed()[0]
    assert (formed["topology_epoch"], formed["assignment"]) == (0, {"a": "0_0,0_1"})
    scaled = out.completed()[2]
    assert scaled["assignment"] == {"a": "", "b": "0_1", "c": "0_0"}


@pytest.mark.skipif(not (RECORDED / "broker.log").exists(), reason="no recording of the Kafka Streams test app")
def test_the_recorded_healthy_streams_application_stays_silent() -> None:
    """The embedded 4.3.1 broker's log of the Streams test application (`tests/pipelines/StreamsApp.java`): the
    healthy group's rebalances all converge with a known cause and open no detection."""
    s = Silver()
    last = BASE_MS
    lines = (RECORDED / "broker.log").read_text().splitlines()
    healthy = next(line.split("[GroupId ")[1].split("]")[0] for line in lines if "[GroupId streams-healthy" in line)
    for line in lines:
        at = timestamp_ms_in_text(line, 0)
        assert at is not None
        last = max(last, at)
        s._telemetry(line.encode(), at)
    out = run(healthy, s.rows, last + 3_600_000)
    assert out.kinds() == []
    assert out.rebalances and all(r["stabilized_at"] is not None for r in out.rebalances.values())
    assert "unknown" not in {r["cause"] for r in out.rebalances.values()}


@pytest.mark.parametrize("records", [True, False], ids=["records and log", "log alone"])
def test_the_epoch_a_validated_topology_bumps_is_a_planned_rebalance(records: bool) -> None:
    """4.3.1 set-up: the first member joins while the internal topics are missing (epoch 1), the coordinator creates
    them, validates topology epoch 0 and bumps the group epoch with no member coming or going: planned (enforced),
    not unknown, and silent."""
    s = Silver()
    coordinator = StreamsCoordinator(s, records)
    t = BASE_MS
    coordinator.join("a", t)
    coordinator.topics_missing("a", t + 10)
    coordinator.bump("a", t + 120)
    coordinator.stable("a", "", t + 300)
    validated = t + 1_800
    coordinator.line("a", "Configuring the topology 0", validated)
    coordinator.line("a", "Valid topic configuration found in 0ms, topology epoch 0 is now initialized.", validated)
    coordinator.bump("a", validated + 1)
    coordinator.stable("a", "0-0@2, 0-1@2", validated + 900)

    out = run(APP, s.rows, validated + 3_600_000)
    assert out.kinds() == []
    last = out.completed()[-1]
    assert (last["from_generation"], last["generation"], last["cause"]) == (1, 2, "enforced")
    assert last["cause_detail"].startswith("topology ") and "(topology epoch 0)" in last["cause_detail"]
    assert (last["topology_epoch"], last["assignment"]) == (0, {"a": "0_0,0_1"})


def test_a_founder_whose_first_logged_bump_comes_seconds_after_its_join_joined_the_first_rebalance() -> None:
    """4.3.1 logs no bump to epoch 1: the founder's join is followed by the topology's topic check and then "Bumped
    streams group epoch to 2", seconds later on a loaded broker (more than a join's usual lead on its bump). Every
    join before the first bump seen is that bump's: the founder is in the first rebalance's `joined`."""
    s = Silver()
    coordinator = StreamsCoordinator(s, records=False)
    t = BASE_MS
    coordinator.join("a", t)
    coordinator.topics_missing("a", t + 260)
    coordinator.epoch = 1  # the founder's own bump, not logged
    coordinator.bump("a", t + 4_500)
    coordinator.epoch = 1
    coordinator.stable("a", "", t + 4_600)
    coordinator.epoch = 2
    validated = t + 6_500
    coordinator.line("a", "Configuring the topology 0", validated)
    coordinator.line("a", "Valid topic configuration found in 0ms, topology epoch 0 is now initialized.", validated)
    coordinator.bump("a", validated)
    coordinator.stable("a", "0-0@3, 0-1@3", validated + 2_000)
    coordinator.join("b", validated + 9_000)
    coordinator.bump("b", validated + 9_000)
    coordinator.stable("a", "0-0@3", validated + 9_400)
    coordinator.stable("b", "0-1@4", validated + 9_400)

    out = run(APP, s.rows, validated + 3_600_000)
    assert out.kinds() == []
    formed, scaled = out.completed()
    assert (formed["from_generation"], formed["generation"], formed["joined"]) == (1, 3, ["a"])
    assert (scaled["from_generation"], scaled["generation"], scaled["joined"]) == (3, 4, ["b"])
    assert (formed["cause"], scaled["cause"]) == ("member_joined", "member_joined")


def test_a_kip848_consumer_group_seen_through_the_coordinator_log_alone_converges_too() -> None:
    """The epoch model is KIP-848's as well: joins, an expiry and a leave, each closed by the members' new
    assignment state at the epoch the target assignment was computed for (GroupMetadataManager 4.x wording)."""
    s = Silver()
    t = BASE_MS
    group = "orders"
    epoch = 0

    def stable(member: str, at: int) -> None:
        s.broker(
            f"[GroupId {group}] Member {member} new assignment state: epoch={epoch}, previousEpoch={epoch - 1}, "
            "state=STABLE, assignedPartitions=[orders-0] and partitionsPendingRevocation=[].",
            at,
        )

    def target(at: int) -> None:
        s.broker(f"[GroupId {group}] Computed a new target assignment for epoch {epoch} with 'uniform' assignor.", at)

    members = ["c1", "c2", "c3"]
    for i, member in enumerate(members):
        at = t + i * 60_000
        s.broker(f"[GroupId {group}] Member {member} joins the consumer group using the consumer protocol.", at)
        epoch += 1
        s.broker(f"[GroupId {group}] Bumped group epoch to {epoch} with metadata hash 5.", at)
        target(at)
        for present in members[: i + 1]:
            stable(present, at + 500)
    at = t + 600_000
    s.broker(f"[GroupId {group}] Member c2 fenced from the group because the member session expired.", at)
    epoch += 1
    target(at)
    stable("c1", at + 300)
    stable("c3", at + 300)
    at += 60_000
    s.broker(f"[GroupId {group}] Member c3 left the consumer group.", at)
    epoch += 1
    target(at)
    stable("c1", at + 300)

    out = run(group, s.rows, at + 3_600_000)
    rows = [(r["from_generation"], r["generation"], r["cause"], r["members_after"]) for r in out.completed()]
    assert rows == [
        (0, 1, "member_joined", 1),
        (1, 2, "member_joined", 2),
        (2, 3, "member_joined", 3),
        (3, 4, "heartbeat_expiration", 2),
        (4, 5, "member_left", 1),
    ]
    assert all(r["assignment"] is None and r["topology_epoch"] is None for r in out.completed())
    assert out.kinds() == ["heartbeat_expiration"]


def test_a_kip848_group_on_a_kafka_3_9_broker_reads_as_on_4x() -> None:
    """tests/data/kafka-3.9-kip848: a 3.9.2 broker (KIP-848 preview) and three Java 3.9.2 members: A stalls past its
    max.poll.interval.ms (3.9 logs that leave as any other), comes back, C joins and is SIGKILLed (fenced on
    expiry after the broker's 6 s), A and B close. librdkafka cannot take part: 3.9 offers ConsumerGroupHeartbeat
    v0 only."""
    s = Silver()
    lines = (RECORDED.parent / "kafka-3.9-kip848" / "broker.log").read_text().splitlines()
    at, narration = BASE_MS, 0
    for line in lines:
        found = timestamp_ms_in_text(line, 0)
        assert found is not None
        at = found
        outcome = parse_telemetry_record(line.encode(), at)
        if outcome.recognised:
            s._telemetry(line.encode(), at)
        else:  # only the bookkeeping before a bump ("Computed new subscription metadata: ...") gives no event
            assert outcome.reason == COORDINATOR_NARRATION, line
            narration += 1
    assert narration == 2
    # each member's first subscription, right after its join, is no change of it
    assert len([r for r in s.rows if r["event"] == HeartbeatEventKind.SUBSCRIPTION.value]) == 4
    a, b, c = "hWQFy4z9SFWjubPJeMfxhA", "LjhRmWueSbaxez4yqbVx7g", "pgY0QxjNQHazN-Rsx1dK0A"
    out = run("g39", s.rows, at + 3_600_000, DetectorThresholds(consumer_group_session_timeout_ms=6_000))
    moves = [
        (r["from_generation"], r["generation"], r["cause"], r["joined"], r["left"], r["expired"])
        for r in out.completed()
    ]
    assert moves == [
        (0, 1, "member_joined", [a], [], []),
        (1, 3, "member_joined", [b], [a], []),  # B's epoch 2 had not converged when A left
        (3, 4, "member_joined", [a], [], []),
        (4, 5, "member_joined", [c], [], []),
        (5, 6, "heartbeat_expiration", [], [], [c]),
        (6, 7, "member_left", [], sorted([a, b]), []),
    ]
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert expiry["member_id"] == c and "6 s session timeout" in expiry["summary"], expiry["summary"]
    assert out.kinds() == ["heartbeat_expiration"]


def test_a_kip848_member_that_changes_its_subscription_is_a_subscription_change() -> None:
    """The 3.7-3.9 coordinator logs a member's subscription at INFO: after its join (its first, no change), and when a
    member that holds partitions subscribes to other topics, which bumps the group epoch with no one coming or
    going."""
    s = Silver()
    t = BASE_MS
    group = "orders"

    def line(text: str, at: int) -> None:
        s.broker(f"[GroupId {group}] {text}", at)

    def converged(epoch: int, previous: int, at: int) -> None:
        line(f"Bumped group epoch to {epoch}.", at)
        line(f"Computed a new target assignment for epoch {epoch} with 'uniform' assignor in 1ms.", at)
        line(
            f"Member a new assignment state: epoch={epoch}, previousEpoch={previous}, state=STABLE, "
            "assignedPartitions=[x-0] and revokedPartitions=[].",
            at + 200,
        )

    line("Member a joins the consumer group using the consumer protocol.", t)
    line("Member a updated its subscribed topics to: [orders].", t)
    converged(1, 0, t)
    changed = t + 60_000
    line("Member a updated its subscribed topics to: [orders, payments].", changed)
    converged(2, 1, changed)

    out = run(group, s.rows, changed + 3_600_000)
    assert [(r["from_generation"], r["generation"], r["cause"]) for r in out.completed()] == [
        (0, 1, "member_joined"),
        (1, 2, "subscription_change"),
    ]
    assert out.kinds() == []


def test_a_classic_streams_crash_loop_recorded_live_counts_each_join_and_expiry_once() -> None:
    """tests/data/streams-classic: a Kafka Streams 4.3.1 instance on the classic protocol, SIGKILLed 1.5 s after it
    ran, restarted five times beside a steady one. Each restart's join holds the group in PreparingRebalance until
    the previous corpse expires (its 45 s session), so every generation takes one join and one expiry. Read from the
    coordinator's log alone (a classic group's joins are counted from its records, not here): each expiry once, each
    generation a join's, and one crash loop named by the client."""
    s = Silver()
    at = BASE_MS
    for line in (RECORDED.parent / "streams-classic" / "crash-loop-broker.log").read_text().splitlines():
        found = timestamp_ms_in_text(line, 0)
        assert found is not None
        at = found
        s._telemetry(line.encode(), at)
    group = "streams-classic-crash-loop"
    out = run(group, s.rows, at + 3_600_000)
    completed = out.completed()
    expired = [m for r in completed for m in r["expired"]]
    assert len(expired) == len(set(expired)) == 5
    assert all(m.startswith("crashing-streams-instance-StreamThread-1-consumer-") for m in expired)
    assert [r["cause"] for r in completed].count("member_joined") == 6
    (loop,) = out.of_kind("membership_flapping")
    assert loop["summary"].startswith(
        "client crashing-streams-instance-StreamThread-1-consumer keeps dying and rejoining group "
        f"{group} (crash loop): 5 of its members"
    ), loop["summary"]
    assert set(out.kinds()) <= {"membership_flapping", "heartbeat_expiration"}


class ConsumerCoordinator:
    """What a 4.x coordinator writes for a KIP-848 consumer group's member changes, as records only (4.x logs a
    member's subscription at DEBUG)."""

    def __init__(self, s: Silver, group: str) -> None:
        self.s, self.group, self.epoch = s, group, 0

    def member(self, member: str, at: int, topics: list[str], classic_session_ms: int | None = None) -> None:
        value: dict[str, object] = {"clientId": member, "clientHost": "/10.0.0.7", "subscribedTopicNames": topics}
        if classic_session_ms is not None:
            value["classicMemberMetadata"] = {"sessionTimeoutMs": classic_session_ms, "supportedProtocols": []}
        self.s.record("ConsumerGroupMemberMetadata", {"groupId": self.group, "memberId": member}, value, at)

    def bump(self, at: int, members: list[str]) -> None:
        """The next group epoch, its target assignment, and each member's assignment at it a moment later."""
        self.epoch += 1
        key = {"groupId": self.group}
        self.s.record("ConsumerGroupMetadata", key, {"epoch": self.epoch, "metadataHash": 0}, at)
        self.s.record("ConsumerGroupTargetAssignmentMetadata", key, {"assignmentEpoch": self.epoch}, at)
        for member in members:
            self.s.record(
                "ConsumerGroupCurrentMemberAssignment",
                {"groupId": self.group, "memberId": member},
                {"memberEpoch": self.epoch, "previousMemberEpoch": self.epoch - 1, "state": 0},
                at + 200,
            )


def test_a_kip848_member_record_with_other_topics_is_a_subscription_change() -> None:
    """4.x logs a subscription at DEBUG, so the member's own record decides: the coordinator rewrites it with the new
    topics just before the epoch bump. A member's first record, and a record that rewrites the same topics (its
    rebalance timeout or host changed), are no change of it."""
    s = Silver()
    group, t = "orders", BASE_MS
    c = ConsumerCoordinator(s, group)
    c.member("a", t, ["orders"])
    c.bump(t, ["a"])
    c.member("b", t + 30_000, ["orders"])
    c.bump(t + 30_000, ["a", "b"])
    c.member("a", t + 60_000, ["orders"])  # the same topics again: no change
    changed = t + 120_000
    c.member("a", changed, ["payments", "orders"])
    c.bump(changed, ["a", "b"])

    out = run(group, s.rows, changed + 3_600_000)
    # the group's first epoch is where radar finds it (records alone say nothing of how it formed)
    assert [(r["from_generation"], r["generation"], r["cause"]) for r in out.completed()] == [
        (1, 2, "member_joined"),
        (2, 3, "subscription_change"),
    ]
    assert out.kinds() == []


def recorded_kip848(folder: str, *, records: bool = True) -> tuple[Silver, int]:
    """A live recording on the 4.3.1 broker (tests/data/<folder>): its `__consumer_offsets` records (unless told not
    to) and its coordinator's lines, as silver rows; and the time of the last."""
    s = Silver()
    last = BASE_MS
    if records:
        for line in (RECORDED.parent / folder / "consumer_offsets.jsonl").read_text().splitlines():
            record = json.loads(line)
            value = record["value_hex"]
            key = bytes.fromhex(record["key_hex"])
            s._decoded(key, bytes.fromhex(value) if value else None, record["timestamp_ms"])
            last = max(last, record["timestamp_ms"])
    for line in (RECORDED.parent / folder / "broker.log").read_text().splitlines():
        at = timestamp_ms_in_text(line, 0)
        assert at is not None
        s._telemetry(line.encode(), at)
        last = max(last, at)
    return s, last


@pytest.mark.parametrize("records", [True, False], ids=["records and log", "log alone"])
def test_a_recorded_4x_subscription_change_is_read_from_the_member_record(records: bool) -> None:
    """tests/data/kafka-4.3-kip848-subscription: a librdkafka member subscribes to one topic, then two, on a 4.3.1
    broker, whose log says only "Bumped group epoch to 3 with metadata hash H" (4.x logs neither the subscription
    nor a member's new assignment state at INFO). The member's record says its subscription changed; the log
    alone, that the subscribed topics did (a new hash, no one came or went). Each rebalance ends, with the log
    alone at its target assignment."""
    member = "hc5UmtonTZ2LGz8sLHRfuQ"
    s, last = recorded_kip848("kafka-4.3-kip848-subscription", records=records)
    out = run("subchange", s.rows, last + 3_600_000)
    moves = [(r["from_generation"], r["generation"], r["cause"], r["joined"], r["left"]) for r in out.completed()]
    assert moves == [
        (1, 2, "member_joined", [member], []),
        (2, 3, "subscription_change", [], []),
        (3, 4, "member_left", [], [member]),
    ]
    detail = out.completed()[1]["cause_detail"]
    assert detail == (
        "members' subscriptions changed"
        if records
        else "the subscribed topics changed (partitions added, or a topic created or deleted)"
    )
    assert out.kinds() == []


@pytest.mark.parametrize("records", [True, False], ids=["records and log", "log alone"])
def test_a_recorded_4x_partition_increase_is_a_change_of_the_subscribed_topics(records: bool) -> None:
    """tests/data/kafka-4.3-kip848-partitions-added: the consumed topic grows from 2 to 4 partitions; the coordinator
    bumps the epoch with a new metadata hash (its record and its log line) and no member change. Before, that
    rebalance's cause was unknown."""
    member = "P8khwH/2R0eQcw6TkCGKig"
    s, last = recorded_kip848("kafka-4.3-kip848-partitions-added", records=records)
    out = run("grown", s.rows, last + 3_600_000)
    moves = [(r["from_generation"], r["generation"], r["cause"], r["cause_detail"]) for r in out.completed()]
    assert moves == [
        (1, 2, "member_joined", f"joined: {member}"),
        (
            2,
            3,
            "subscription_change",
            "the subscribed topics changed (partitions added, or a topic created or deleted)",
        ),
        (3, 4, "member_left", f"left: {member}"),
    ]
    assert out.kinds() == []


def test_a_3x_partition_metadata_record_with_more_partitions_is_a_change_of_the_subscribed_topics() -> None:
    """3.x writes no metadata hash: its `ConsumerGroupPartitionMetadata` record (the subscribed topics' partitions)
    is rewritten before the bump. A rewrite with the same metadata is no change; one with a grown topic explains a
    bump in which no member came or went."""
    s = Silver()
    group, t = "orders", BASE_MS
    c = ConsumerCoordinator(s, group)

    def partitions(count: int, at: int) -> None:
        topic = {"topicId": "AAAAAAAAAAAAAAAAAAAABQ", "topicName": "orders", "numPartitions": count}
        s.record("ConsumerGroupPartitionMetadata", {"groupId": group}, {"topics": [topic]}, at)

    partitions(2, t)
    c.member("a", t, ["orders"])
    c.bump(t, ["a"])
    c.member("b", t + 30_000, ["orders"])
    partitions(2, t + 30_000)
    c.bump(t + 30_000, ["a", "b"])
    partitions(4, t + 60_000)
    c.bump(t + 60_000, ["a", "b"])

    out = run(group, s.rows, t + 3_600_000)
    assert [(r["generation"], r["cause"], r["cause_detail"]) for r in out.completed()] == [
        (2, "member_joined", "joined: b"),
        (3, "subscription_change", "the subscribed topics changed (partitions added, or a topic created or deleted)"),
    ]


MIXED_MODERN, MIXED_LEGACY = "oF42Mbc/ReGPYro+ziPEmQ", "rF7QryHFQjWIUdVkxPZy0A"


def test_a_recorded_classic_member_of_a_consumer_group_expires_on_the_session_timeout_it_joined_with() -> None:
    """tests/data/kafka-4.3-classic-member-in-consumer-group: from 3.9 a classic consumer can join a KIP-848 consumer
    group. Its record carries the session timeout of its JoinGroup (10 s), the one the coordinator applies to it, not
    the broker's 6 s group.consumer.session.timeout.ms."""
    s, last = recorded_kip848("kafka-4.3-classic-member-in-consumer-group")
    out = run("mixed", s.rows, last + 3_600_000, DetectorThresholds(consumer_group_session_timeout_ms=6_000))
    assert [(r["generation"], r["cause"], r["joined"], r["expired"]) for r in out.completed()] == [
        (2, "member_joined", [MIXED_MODERN], []),
        (3, "member_joined", [MIXED_LEGACY], []),
        (4, "heartbeat_expiration", [], [MIXED_LEGACY]),
        (5, "member_left", [], []),
    ]
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert expiry["member_id"] == MIXED_LEGACY
    assert "its 10 s session timeout and" in expiry["summary"], expiry["summary"]


def test_a_recorded_consumer_group_with_a_classic_member_read_from_the_4x_log_alone() -> None:
    """The same recording through its coordinator's lines only: 4.x logs a consumer group's joins, bumps and target
    assignments at INFO but not its members' new assignment states, so each rebalance ends at its target
    assignment rather than running into the next; the classic member ("joins the consumer group using the classic
    protocol") is a join of the consumer group, and its session timeout, which the log does not say, is assumed
    rather than taken for the broker's consumer one."""
    s, last = recorded_kip848("kafka-4.3-classic-member-in-consumer-group", records=False)
    out = run("mixed", s.rows, last + 3_600_000, DetectorThresholds(consumer_group_session_timeout_ms=6_000))
    moves = [(r["from_generation"], r["generation"], r["cause"], r["joined"], r["expired"]) for r in out.completed()]
    assert moves == [
        (1, 2, "member_joined", [MIXED_MODERN], []),
        (2, 3, "member_joined", [MIXED_LEGACY], []),
        (3, 4, "heartbeat_expiration", [], [MIXED_LEGACY]),
        (4, 5, "member_left", [], []),
    ]
    (expiry,) = out.of_kind("heartbeat_expiration")
    assert "session timeout radar assumes" in expiry["summary"], expiry["summary"]
