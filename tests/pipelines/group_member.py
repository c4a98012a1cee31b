"""Members of consumer groups for the live tests: the demo's own member process (`pipelines.local.member`, run as
a subprocess so it can be SIGSTOPped), started with the tests' pace (commits every 0.3 s, two minutes at most),
and the topics and scenarios around it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from rebalance_radar.emitters.cluster_probe import described_session_overrides
from rebalance_radar.pipelines.local.member import MEMBER_MODULE
from rebalance_radar.pipelines.local.scenarios import MemberProcess
from rebalance_radar.transforms.schemas import HeartbeatEventKind
from rebalance_radar.transforms.telemetry.broker_log import parse_broker_log_line
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent
from tests.polling import wait_for

TEST_PACE = ("--commit-every-s", "0.3", "--run-s", "120")
STATISTICS_INTERVAL_S = 1.0  # statistics.interval.ms of `pipelines.local.member`: how often its agent reports
EXPIRY_TIMEOUT_S = 60.0  # a bound for the broker's own expiry of a stalled member, not an expected time


def start_member(
    out_dir: Path | str,
    name: str,
    bootstrap: str,
    topic: str,
    group: str,
    *extra: str,
    protocol: str = "classic",
    env: Mapping[str, str] | None = None,
) -> MemberProcess:
    """One member subprocess with client id `name`; its JSON lines go to `<out_dir>/<name>.jsonl`."""
    command = [
        sys.executable, "-m", MEMBER_MODULE, "--bootstrap", bootstrap, "--topic", topic, "--group", group,
        "--protocol", protocol, "--client-id", name, *TEST_PACE, *extra,
    ]  # fmt: skip
    return MemberProcess(command, Path(out_dir) / f"{name}.jsonl", env)


def stop_mid_batch(member: MemberProcess, hold: Path) -> None:
    """Make a member started with `--hold-file hold` stop itself between a poll and its commit, and wait until it
    has. Continued, its first act is then its stale commit; stopped from outside inside `poll()`, a KIP-848
    librdkafka member can learn of its eviction, rejoin and be given partitions before it commits, and its commit
    then carries the new epoch and succeeds (seen in CI, 2026-11-29: no `commit_error`)."""
    hold.touch()
    member.wait_for("holding", 30)  # printed just before it stops itself


class CoordinatorLog:
    """What the group coordinator logs from now on (the broker log from its end at construction), read as the
    detectors read it: a scenario waits for the broker's own act (a member expired) rather than a guessed time."""

    def __init__(self, log_file: Path | str) -> None:
        self.path = Path(log_file)
        self.start = self.path.stat().st_size

    def events(self, group: str) -> list[HeartbeatEvent]:
        with self.path.open("rb") as log:
            log.seek(self.start)
            text = log.read().decode(errors="replace")
        return [
            event
            for line in text.splitlines()
            if group in line
            for event in parse_broker_log_line(line, 0).events
            if event.group_id == group
        ]

    def expired(self, group: str) -> list[str | None]:
        """The members of `group` the coordinator expired (their session timed out) since then."""
        return [e.member_id for e in self.events(group) if e.event == HeartbeatEventKind.MEMBER_EXPIRED]

    def wait_expired(self, group: str, timeout_s: float = EXPIRY_TIMEOUT_S) -> None:
        """Until the coordinator has expired a member of `group` (the scenario's stalled one: the others poll)."""
        wait_for(
            lambda: bool(self.expired(group)),
            timeout_s,
            f"the broker to expire the stalled member of {group} (log: {self.path})",
            poll_s=0.2,
        )


def create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, n, 1) for t, n in partitions.items()]).values():
        future.result(30)


def read_records(bootstrap: str, topic: str, idle_s: float = 2.0, timeout_s: float = 30.0) -> list[tuple[bytes, int]]:
    """Every record of a (single-partition) topic: (value, timestamp ms), until `idle_s` without news."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.time_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records: list[tuple[bytes, int]] = []
    deadline = time.monotonic() + timeout_s
    last = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - last < idle_s:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            records.append((message.value(), message.timestamp()[1]))
            last = time.monotonic()
    consumer.close()
    return records


@dataclass
class ScenarioResult:
    """What one scenario left on its telemetry topic, parsed, plus what each member printed."""

    group: str
    telemetry_topic: str
    events: list[Any]
    outputs: dict[str, list[dict[str, Any]]]
    shipped: Any
    snapshot: Any

    def of(self, source: str, kind: str) -> list[Any]:
        return [e for e in self.events if e.source.value == source and e.event.value == kind]


def run_group_scenario(
    bootstrap: str,
    log_file: Any,
    out_dir: Any,
    *,
    protocol: str = "classic",
    with_poll_stall: bool = True,
) -> ScenarioResult:
    """Join A (agent) and B; SIGSTOP A until the broker has expired it (past its session); SIGCONT (its commits are
    refused); C (agent) overruns max.poll.interval.ms; B, C, A close. The broker log is shipped meanwhile. A stops
    itself between a poll and its commit (`stop_mid_batch`): stopped from outside inside `poll()`, a member can learn
    of its eviction first when it resumes, rejoin, and have no stale commit to make (KIP-848 in CI, and classic on
    4.x with the live recordings running beside it, 2026-11-29)."""
    from rebalance_radar.emitters.log_shipper import start_shipper
    from rebalance_radar.emitters.poll_groups import GroupPoller
    from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

    tag = f"{protocol}-{time.time_ns()}"
    topic, group, telemetry = f"work-{tag}", f"group-{tag}", f"telemetry-{tag}"
    create_topics(bootstrap, {topic: 3, telemetry: 1})
    shipper = start_shipper(log_file, bootstrap, telemetry, from_start=False)
    members: list[MemberProcess] = []

    def member(name: str, *extra: str) -> MemberProcess:
        started = start_member(out_dir, name, bootstrap, topic, group, *extra, protocol=protocol)
        members.append(started)
        return started

    snapshot = None
    try:
        hold = Path(out_dir) / f"A-{tag}.hold"
        a = member("A", "--agent-topic", telemetry, "--hold-file", str(hold))
        a.wait_for("assigned")
        b = member("B")
        b.wait_for("assigned")
        # Kept: the group settles (A's sync in B's generation may come after B's) and the agent reports A's
        # assignment, both at librdkafka's pace, before the snapshot describes the group as STABLE.
        time.sleep(1.5 * STATISTICS_INTERVAL_S)
        snapshot = GroupPoller(bootstrap, telemetry, groups=[group]).run(0, once=True)
        coordinator = CoordinatorLog(log_file)
        stop_mid_batch(a, hold)
        coordinator.wait_expired(group)
        a.signal(signal.SIGCONT)
        a.wait_for("commit_error", 20)
        if with_poll_stall:
            c = member(
                "C",
                "--agent-topic",
                telemetry,
                "--max-poll-interval-ms",
                "3000",
                "--session-timeout-ms",
                "3000",
                "--stall-after-s",
                "2",
                "--stall-s",
                "5",
            )
            c.wait_for("poll_error", 25)
            # Kept: the agent reads the poll timeout from cgrp.rebalance_reason in its next statistics report
            time.sleep(1.5 * STATISTICS_INTERVAL_S)
        for started in (b, *members[2:], a):
            started.stop()
        shipped = shipper.stop()
    finally:
        for started in members:
            started.stop()
        shipper.stop()
    events = []
    for value, stamp in read_records(bootstrap, telemetry):
        events.extend(e for e in parse_telemetry_record(value, stamp).events if e.group_id == group)
    return ScenarioResult(group, telemetry, events, {m.out.stem: m.lines() for m in members}, shipped, snapshot)


def alter_group_session_timeout(admin_settings: dict[str, Any], group: str, session_ms: int | None) -> None:
    """Set (or, None, delete) a group's own `consumer.session.timeout.ms`, a Kafka 4.x group config, as
    `kafka-configs --entity-type groups --alter` does."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    operation = AlterConfigOpType.DELETE if session_ms is None else AlterConfigOpType.SET
    entry = ConfigEntry("consumer.session.timeout.ms", str(session_ms or ""), incremental_operation=operation)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    admin = AdminClient(dict(admin_settings))  # held until the answer: its futures fail once it is collected
    admin.incremental_alter_configs([resource])[resource].result(30)
    # the broker applies the change from the metadata log after it answers: until then DescribeConfigs says the old one
    wanted = {} if session_ms is None else {"group.consumer.session.timeout.ms": session_ms}

    def described() -> bool:
        return described_session_overrides(admin, [group], admin_settings, 10.0).groups.get(group, {}) == wanted

    wait_for(described, 30, f"the broker to describe {group}'s session timeout as {session_ms}")


@contextlib.contextmanager
def kip848_member(member_settings: dict[str, Any], group: str, topic: str) -> Iterator[Consumer]:
    """A KIP-848 member of `group` holding its assignment of `topic` while the block runs."""
    consumer = Consumer({**member_settings, "group.id": group, "group.protocol": "consumer"})
    try:
        consumer.subscribe([topic])

        def assigned() -> bool:
            consumer.poll(0.2)
            return bool(consumer.assignment())

        wait_for(assigned, 60, f"a KIP-848 member of {group} to be assigned {topic}")
        yield consumer
    finally:
        consumer.close()


@contextlib.contextmanager
def kip848_group_setting_its_session_timeout(
    member_settings: dict[str, Any], admin_settings: dict[str, Any], group: str, topic: str, session_ms: int
) -> Iterator[None]:
    """A KIP-848 group with one member holding its assignment, which sets its own `consumer.session.timeout.ms`
    while the block runs."""
    alter_group_session_timeout(admin_settings, group, session_ms)
    with kip848_member(member_settings, group, topic):
        yield
