"""Live evidence of the detectors on the embedded broker: real confluent-kafka members (classic and
`group.protocol=consumer`) stall, get evicted, commit as zombies, overrun max.poll.interval.ms, crash-loop, scale
out, shut down cleanly and restart statically, and members on Apache Kafka's Java client (their own log shipped)
stall and commit as zombies (both protocols), overrun max.poll.interval.ms and restart statically, while the
broker log is shipped, the agent reports and a clock ticks every second on the telemetry topic; the healthy fleet
runs beside the incidents. Then the detection query reads `__consumer_offsets` and the telemetry topic through
Spark's Kafka source and decodes them itself, as `radar run` does (`KafkaDetectorSources`; that it gives the rows
silver gives is `test_detect`'s), and the real `transforms.detectors` tracker writes gold; each group must show
exactly its incident, and the healthy groups nothing.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from rebalance_radar.emitters.kafka_settings import client_settings
from rebalance_radar.emitters.log_shipper import LogShipper, start_shipper
from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.local.scenarios import MemberProcess
from rebalance_radar.pipelines.stages.clock import ClockTickEmitter
from rebalance_radar.pipelines.stages.detect import DetectStage, KafkaDetectorSources
from rebalance_radar.pipelines.stages.sources import kafka_stream
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import DETECTIONS, REBALANCES, DetectionKind
from tests.pipelines.concurrent_recordings import (
    ConcurrentRecordings,
    RecordingContext,
    concurrent_recording_read_early,
)
from tests.pipelines.group_member import (
    STATISTICS_INTERVAL_S,
    CoordinatorLog,
    create_topics,
    start_member,
    stop_mid_batch,
)
from tests.pipelines.ingest_support import isolated_config
from tests.pipelines.java_member import JAVA_CLIENT_PREFIX, start_java_member
from tests.pipelines.unsynced_member import UnsyncedMember
from tests.polling import wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.slow]

KIP848_SESSION_TIMEOUT_MS = 6000  # conf/local.yml broker.group_consumer_session_timeout_ms
# The healthy fleet's static members run until the detection of this module stops them (a static member's own end
# sends no LeaveGroup: the broker would expire it a session later, an incident the healthy groups must not have).
STATIC_RUN_S = 1200
# A stalls only once its agent has reported its heartbeats in its current generation (every statistics interval):
# the early warning (heartbeat_at_risk) is measured from the last one.
AGENT_REPORTS_S = 2 * STATISTICS_INTERVAL_S


@dataclass
class Recording:
    """What the scenarios did (groups, member ids, wall-clock moments), and the gold rows detection wrote."""

    telemetry_topic: str
    groups: dict[str, str] = field(default_factory=dict)  # scenario -> group id
    members: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # "scenario/name" -> printed lines
    moments: dict[str, int] = field(default_factory=dict)  # name -> epoch ms
    detections: list[dict[str, Any]] = field(default_factory=list)
    rebalances: list[dict[str, Any]] = field(default_factory=list)
    stop_members: Callable[[], object] = lambda: None  # the members left up for detection

    def of(self, scenario: str) -> list[dict[str, Any]]:
        group = self.groups[scenario]
        return [d for d in self.detections if d["group_id"] == group]

    def kinds(self, scenario: str) -> set[str]:
        return {d["kind"] for d in self.of(scenario)}

    def member_ids(self, key: str) -> list[str]:
        return [line["member"] for line in self.members[key] if line.get("member")]


def now_ms() -> int:
    return int(time.time() * 1000)


class Scenarios:
    """Runs the member subprocesses of every scenario against one broker, each in its own group and topic."""

    def __init__(self, bootstrap: str, telemetry: str, out_dir: Path, recording: Recording, broker_log: Path) -> None:
        self.bootstrap, self.telemetry, self.out_dir, self.recording = bootstrap, telemetry, out_dir, recording
        self.broker_log = broker_log
        self.running: list[tuple[str, MemberProcess]] = []

    def group(self, scenario: str) -> tuple[str, str]:
        tag = f"{scenario}-{time.time_ns()}"
        topic, group = f"work-{tag}", f"group-{tag}"
        create_topics(self.bootstrap, {topic: 4})
        self.recording.groups[scenario] = group
        return topic, group

    def member(
        self, scenario: str, name: str, topic: str, group: str, *extra: str, protocol: str = "classic"
    ) -> MemberProcess:
        started = start_member(
            self.out_dir,
            f"{scenario}-{name}-{len(self.running)}",
            self.bootstrap,
            topic,
            group,
            *extra,
            protocol=protocol,
        )
        self.running.append((f"{scenario}/{name}", started))
        return started

    def wait_reassigned(self, key: str, timeout_s: float = 30.0) -> None:
        """Until the member `key` ("scenario/name") has an assignment again after its last revocation."""
        (member,) = [process for k, process in self.running if k == key]
        lines = member.lines()
        revoked = max((i for i, line in enumerate(lines) if "revoked" in line), default=-1)
        member.wait_for("assigned", timeout_s, after=revoked + 1)

    def stop_all(self) -> None:
        for key, process in self.running:
            process.stop()
            self.recording.members.setdefault(key, []).extend(process.lines())
        self.running = []

    # --- incidents ---------------------------------------------------------------------------------------------

    def stalled_zombie(self, scenario: str, protocol: str) -> None:
        """A (agent) and B; A stopped until the broker has expired it, then resumed: its commits are refused. A stops
        itself between a poll and its commit (`stop_mid_batch`), so its first act when resumed is the stale commit
        (stopped from outside inside `poll()`, it can learn of its eviction first and have nothing stale to commit)."""
        topic, group = self.group(scenario)
        hold = self.out_dir / f"{scenario}-A.hold"
        a = self.member(
            scenario, "A", topic, group, "--agent-topic", self.telemetry, "--hold-file", str(hold), protocol=protocol
        )
        a.wait_for("assigned")
        b = self.member(scenario, "B", topic, group, protocol=protocol)
        b.wait_for("assigned")
        self._stall_until_refused(scenario, a, freeze=lambda: stop_mid_batch(a, hold))

    def java_member(
        self,
        config: RadarConfig,
        scenario: str,
        name: str,
        topic: str,
        group: str,
        protocol: str,
        *extra: str,
        session_timeout_ms: int = 3000,
        run_s: int = 120,
    ) -> tuple[MemberProcess, Path]:
        started, log = start_java_member(
            config, self.out_dir, f"{scenario}-{name}", self.bootstrap, topic, group, protocol=protocol,
            session_timeout_ms=session_timeout_ms, run_s=run_s, extra=extra,
        )  # fmt: skip
        self.running.append((f"{scenario}/{name}", started))
        return started, log

    def ship(self, log: Path) -> LogShipper:
        """A Java member's log to the telemetry topic, its `[Consumer ...]` lines, as a user ships client logs."""
        return start_shipper(log, self.bootstrap, self.telemetry, keywords=(JAVA_CLIENT_PREFIX,))

    def java_stalled_zombie(self, scenario: str, protocol: str, config: RadarConfig) -> None:
        """As `stalled_zombie`, on Apache Kafka's Java client and without the agent: what tells is the broker's log
        and A's own log, shipped to the telemetry topic as a user ships client logs (its `[Consumer ...]` lines)."""
        topic, group = self.group(scenario)
        hold = self.out_dir / f"{scenario}-A.hold"

        def java(name: str, *extra: str) -> tuple[MemberProcess, Path]:
            return self.java_member(config, scenario, name, topic, group, protocol, *extra)

        a, a_log = java("A", f"hold={hold}")
        shipper = self.ship(a_log)
        try:
            a.wait_for("assigned", 60)
            b, _ = java("B")
            b.wait_for("assigned", 60)
            # A is frozen between a poll and its commit, as an application busy with a batch: thawed, it commits
            # first. Frozen inside `poll()` instead, the Java client's first act is to learn of its eviction (a
            # heartbeat's UNKNOWN_MEMBER_ID), give its partitions up as lost and rejoin, and then it has nothing
            # stale to commit (seen in CI, classic and KIP-848). Kept: A works a moment in B's generation first.
            time.sleep(2.0)
            hold.touch()
            a.wait_for("holding", 30)
            self._stall_until_refused(scenario, a, thawed=hold.unlink)
        finally:
            hold.unlink(missing_ok=True)
            shipper.stop()

    def java_poll_overruns(self, scenario: str, config: RadarConfig) -> None:
        """As `poll_overruns`, on the Java client, without the agent: C stalls 5 s against a 3 s
        max.poll.interval.ms after each of its first two assignments; its heartbeat thread leaves the group."""
        topic, group = self.group(scenario)
        b, _ = self.java_member(config, scenario, "B", topic, group, "classic")
        b.wait_for("assigned", 60)
        c, c_log = self.java_member(
            config, scenario, "C", topic, group, "classic", "max.poll.interval.ms=3000", "stalls=2,5,2"
        )
        shipper = self.ship(c_log)
        try:
            self._wait_rejoined_after_stalls(c, 2)
        finally:
            shipper.stop()

    def java_static_rolling_restart(self, scenario: str, config: RadarConfig) -> None:
        """As `static_rolling_restart`, on the Java client (its log shipped): J1, J2 with group.instance.id and a
        30 s session, each closed (no LeaveGroup for a static member) and started again within it. (With 10 s, a
        new JVM on a loaded CI host took 11 s to rejoin, and the broker rightly expired the member: 2026-11-29.)"""
        topic, group = self.group(scenario)
        shippers = []
        try:
            for instance in ("java-static-1", "java-static-2"):
                member, log = self.java_static_member(config, scenario, instance, topic, group)
                shippers.append(self.ship(log))
                member.wait_for("assigned", 60)
            # Kept, the scenario's pace (a rolling restart, not a race): a steady group, then each member down a
            # second before its restart and up a moment before the next one goes.
            time.sleep(3.0)
            for instance in ("java-static-1", "java-static-2"):
                old = next(p for k, p in self.running if k == f"{scenario}/{instance}")
                old.stop()
                time.sleep(1.0)
                new, log = self.java_static_member(config, scenario, f"{instance}-again", topic, group, instance)
                shippers.append(self.ship(log))
                new.wait_for("assigned", 60)
                time.sleep(2.0)
        finally:
            for shipper in shippers:
                shipper.stop()

    def java_static_member(
        self, config: RadarConfig, scenario: str, name: str, topic: str, group: str, instance: str | None = None
    ) -> tuple[MemberProcess, Path]:
        instance_id = f"group.instance.id={instance or name}"
        return self.java_member(
            config, scenario, name, topic, group, "classic", instance_id, session_timeout_ms=30000, run_s=STATIC_RUN_S
        )

    def _stall_until_refused(
        self,
        scenario: str,
        a: MemberProcess,
        thawed: Callable[[], None] | None = None,
        freeze: Callable[[], None] | None = None,
    ) -> None:
        """A SIGSTOPped (the moment kept as `<scenario>/stopped`) until the broker has expired it, resumed, its
        commit refused, then assigned again. `thawed` runs while A is still stopped (what A finds first when it
        resumes); `freeze` stops A instead of a SIGSTOP from here (A stopping itself)."""
        time.sleep(AGENT_REPORTS_S)
        coordinator = CoordinatorLog(self.broker_log)
        (freeze or (lambda: a.signal(signal.SIGSTOP)))()
        self.recording.moments[f"{scenario}/stopped"] = now_ms()
        coordinator.wait_expired(self.recording.groups[scenario])
        if thawed is not None:
            thawed()
        a.signal(signal.SIGCONT)
        a.wait_for("commit_error", 30)
        self._wait_for_rejoin(a)

    @staticmethod
    def _wait_for_rejoin(member: MemberProcess) -> None:
        """Until `member` is assigned again after its refused commit (closed before that, it would send no
        LeaveGroup and be expired a session later: a real expiry, not the scenario's)."""
        failed_at = next(i for i, line in enumerate(member.lines()) if "commit_error" in line)
        member.wait_for("assigned", 30, after=failed_at)
        time.sleep(STATISTICS_INTERVAL_S)  # kept: the agent reports the rejoined member before it is stopped

    @staticmethod
    def _wait_rejoined_after_stalls(member: MemberProcess, stalls: int) -> None:
        """Until `member` has overrun max.poll.interval.ms `stalls` times and is assigned again after the last:
        its leave and its rejoin are on the broker, so the rebalances they caused are stable."""

        def stalled_at() -> list[int]:
            return [i for i, line in enumerate(member.lines()) if "stalling" in line]

        wait_for(lambda: len(stalled_at()) >= stalls, 60, f"{stalls} stalls of {member.out.name}")
        assert len(stalled_at()) == stalls, member.out.read_text()[-2000:]
        member.wait_for("assigned", 60, after=stalled_at()[-1] + 1)

    def poll_overruns(self, scenario: str) -> None:
        """B steady; C (agent) stalls 5 s against a 3 s max.poll.interval.ms after each of its first two
        assignments."""
        topic, group = self.group(scenario)
        b = self.member(scenario, "B", topic, group)
        b.wait_for("assigned")
        c = self.member(
            scenario, "C", topic, group, "--agent-topic", self.telemetry, "--max-poll-interval-ms", "3000",
            "--stall-after-s", "2", "--stall-s", "5", "--stalls", "2",
        )  # fmt: skip
        self._wait_rejoined_after_stalls(c, 2)
        time.sleep(1.5 * STATISTICS_INTERVAL_S)  # kept: the agent's next statistics report, after the rejoin

    def crash_loop(self, scenario: str, cycles: int = 3) -> None:
        """E steady; D joins and is SIGKILLed, `cycles` times, each time expired before it comes back."""
        topic, group = self.group(scenario)
        e = self.member(scenario, "E", topic, group)
        e.wait_for("assigned")
        for cycle in range(cycles):
            d = self.member(scenario, "D", topic, group, "--client-id", "crashing-worker")
            d.wait_for("assigned", 30)
            time.sleep(1.5)  # kept: the scenario, D works a moment before it crashes
            e_assignments = sum("assigned" in line for line in e.lines())
            d.signal(signal.SIGKILL)
            # its 3 s session expires, and E takes everything back in the rebalance that follows
            wait_for(
                lambda: sum("assigned" in line for line in e.lines()) > e_assignments,  # noqa: B023
                30,
                f"{scenario}: E to take D's partitions back after crash {cycle + 1} (see {e.out})",
                poll_s=0.2,
            )

    def second_consumer_zombie(self, scenario: str) -> None:
        """Z owns every partition and commits offset 5; B joins and takes half, committing 10 on its partitions;
        then Z, still a member of the new generation, commits its stale 5 for a partition B now owns: a classic
        coordinator accepts it (it checks member and generation, not ownership), so the committed offset moves
        back right after the owner change. Both then close cleanly (LeaveGroup)."""
        topic, group = self.group(scenario)
        owned: dict[str, list[int]] = {"Z": [], "B": []}

        def consumer(name: str) -> Consumer:
            made = Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": group,
                    "client.id": f"{scenario}-{name}",
                    "enable.auto.commit": False,
                    "session.timeout.ms": 6000,
                    "heartbeat.interval.ms": 500,
                    "partition.assignment.strategy": "range",
                    "log_level": 3,  # B starts at offsets Z committed past the topic's end: its resets are expected
                }
            )

            def assigned(_c: Consumer, partitions: list[TopicPartition]) -> None:
                owned[name] = sorted(p.partition for p in partitions)

            made.subscribe([topic], on_assign=assigned)
            return made

        def poll_until(members: list[Consumer], done: Callable[[], bool], what: str) -> None:
            deadline = time.monotonic() + 30
            while not done():
                assert time.monotonic() < deadline, f"{scenario}: {what} not reached: {owned}"
                for member in members:
                    member.poll(0.05)

        def commit(member: Consumer, partitions: list[int], offset: int) -> None:
            member.commit(offsets=[TopicPartition(topic, p, offset) for p in partitions], asynchronous=False)

        z = consumer("Z")
        try:
            poll_until([z], lambda: len(owned["Z"]) == 4, "Z owning every partition")
            commit(z, [0, 1, 2, 3], 5)
            z_member = z.memberid()
            b = consumer("B")
            try:
                poll_until([z, b], lambda: bool(owned["B"]) and len(owned["Z"]) < 4, "B taking partitions")
                taken = list(owned["B"])
                commit(b, taken, 10)
                time.sleep(1.0)  # kept, the scenario: Z's stale commit comes a second after B's
                self.recording.moments[f"{scenario}/stale_commit"] = now_ms()
                commit(z, taken[:1], 5)  # Z's stale position of a partition it no longer owns
                self.recording.members[f"{scenario}/Z"] = [{"member": z_member, "stale": taken[:1]}]
                self.recording.members[f"{scenario}/B"] = [{"member": b.memberid(), "assigned": taken}]
                for _ in range(20):
                    z.poll(0.05)
                    b.poll(0.05)
            finally:
                b.close()
        finally:
            z.close()

    # --- healthy -----------------------------------------------------------------------------------------------

    def joins_without_sync(self, scenario: str, cycles: int = 4) -> UnsyncedMember:
        """B (6 s max.poll.interval.ms: the group's rebalance timeout) leads; U joins, heartbeats and never sends
        SyncGroup, `cycles` times; it runs beside the next scenarios (join it before the recording ends)."""
        topic, group = self.group(scenario)
        b = self.member(scenario, "B", topic, group, "--max-poll-interval-ms", "6000")
        b.wait_for("assigned")
        self.recording.moments[f"{scenario}/started"] = now_ms()
        return UnsyncedMember(self.bootstrap, group, topic, cycles, client_id=f"{scenario}-U").start()

    def scale_out_and_clean_shutdown(self, scenario: str, protocol: str) -> None:
        topic, group = self.group(scenario)
        members = []
        for name in ("H1", "H2", "H3"):
            members.append(
                self.member(scenario, name, topic, group, "--agent-topic", self.telemetry, protocol=protocol)
            )
            members[-1].wait_for("assigned", 30)
            time.sleep(2.0)  # kept, the scenario's pace: planned scale-outs and shutdowns, seconds apart
        time.sleep(3.0)
        for member in reversed(members):
            member.stop()  # SIGTERM: close() = LeaveGroup
            time.sleep(1.0)

    def static_rolling_restart(self, scenario: str) -> None:
        """S1, S2 with group.instance.id and a 30 s session (margin for a loaded host); each restarted within it.
        They stay up until the recording ends (a static member's close sends no LeaveGroup: the broker would expire
        it later)."""
        topic, group = self.group(scenario)
        # up until the module's detection has read the broker, however many tests run between (`stop_all`)
        common = ("--session-timeout-ms", "30000", "--agent-topic", self.telemetry, "--run-s", str(STATIC_RUN_S))
        s1 = self.member(scenario, "S1", topic, group, "--instance-id", "static-1", *common)
        s1.wait_for("assigned")
        s2 = self.member(scenario, "S2", topic, group, "--instance-id", "static-2", *common)
        s2.wait_for("assigned")
        time.sleep(3.0)  # kept, the scenario's pace, as the Java client's rolling restart
        for instance in ("static-1", "static-2"):
            old = next(p for k, p in self.running if k.startswith(f"{scenario}/") and instance in p.process.args)
            old.stop()
            time.sleep(1.0)
            new = self.member(scenario, instance, topic, group, "--instance-id", instance, *common)
            new.wait_for("assigned", 30)
            time.sleep(2.0)


@concurrent_recording_read_early
def record_scenarios(context: RecordingContext) -> Recording:
    """Every scenario on the run's broker, the broker log shipped and a clock ticking on the telemetry topic; the
    static members of the healthy fleet are left up (a static member's close sends no LeaveGroup: the broker would
    expire them later) until the module's detection has read the broker."""
    bootstrap = context.bootstrap
    telemetry = f"telemetry-detect-{time.time_ns()}"
    create_topics(bootstrap, {telemetry: 1})
    result = Recording(telemetry)
    out_dir = context.tmp_path_factory.mktemp("detect-live")
    shipper = start_shipper(context.log_file, bootstrap, telemetry, from_start=False)
    clock = ClockTickEmitter(
        client_settings(bootstrap), telemetry, interval_ms=1000, emitter="radar-run@test-detect-live"
    )
    clock.start()
    # Every scenario has its own group and topic, so the lanes run beside each other, as a real cluster's groups do
    # (and the suite waits for the longest lane, not their sum); each lane stops only its own members. The healthy
    # fleet's static members stay up after their lane.
    static = Scenarios(bootstrap, telemetry, out_dir, result, context.log_file)
    context.at_teardown(static.stop_all)  # runs once the lanes' threads have ended (the pool waits for them)
    result.stop_members = static.stop_all
    incidents = {
        lane: Scenarios(bootstrap, telemetry, out_dir, result, context.log_file)
        for lane in (
            zombie_incidents,
            poll_overrun_incidents,
            membership_incidents,
            java_client_zombies,
            healthy_scale_outs,
        )
    }
    try:
        with ThreadPoolExecutor(max_workers=len(incidents) + 1, thread_name_prefix="lane") as pool:
            running = [pool.submit(lane, scenarios, context.config) for lane, scenarios in incidents.items()]
            running.append(pool.submit(healthy_static_restarts, static, context.config))
            for lane in running:
                lane.result(timeout=300)
        # Kept, derived: the clock moves event time past every deadline of the scenarios above (the longest session
        # and the detectors' lateness); no act of the broker marks it, the clock's ticks are the event time.
        time.sleep((KIP848_SESSION_TIMEOUT_MS + context.config.detect.lateness_ms) / 1000)
        result.moments["recording_end"] = now_ms()
    except BaseException:
        static.stop_all()
        raise
    finally:
        clock.stop()
        shipper.stop()
        for scenarios in incidents.values():
            scenarios.stop_all()
    return result


@pytest.fixture(scope="module")
def recording(
    concurrent_recordings: ConcurrentRecordings,
    kafka_broker: Any,
    spark: Any,
    radar_config: RadarConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> Recording:
    result: Recording = concurrent_recordings.result(record_scenarios)
    try:
        data_dir = tmp_path_factory.mktemp("detect-live-data")
        detect_recording(spark, radar_config, data_dir, kafka_broker.bootstrap_servers, result)
    finally:
        result.stop_members()
    return result


def zombie_incidents(scenarios: Scenarios, config: RadarConfig) -> None:
    """A stalled zombie on each protocol (librdkafka), then a second consumer's stale commit."""
    try:
        scenarios.stalled_zombie("classic-zombie", "classic")
        scenarios.stop_all()
        scenarios.stalled_zombie("kip848-zombie", "consumer")
        scenarios.stop_all()
        scenarios.second_consumer_zombie("second-consumer")
    finally:
        scenarios.stop_all()


def poll_overrun_incidents(scenarios: Scenarios, config: RadarConfig) -> None:
    """Repeated overruns of max.poll.interval.ms on librdkafka, and on Apache Kafka's Java client."""
    try:
        scenarios.poll_overruns("poll-overrun")
        scenarios.stop_all()
        scenarios.java_poll_overruns("java-poll-overrun", config)
    finally:
        scenarios.stop_all()


def membership_incidents(scenarios: Scenarios, config: RadarConfig) -> None:
    """librdkafka members: a member that never syncs beside a crash loop."""
    try:
        unsynced = scenarios.joins_without_sync("never-syncs")
        scenarios.crash_loop("crash-loop")
        unsynced.join(120)
        # B's generation after U's last removal: stopped before it syncs, B would leave a generation that never had an
        # assignment, and the fourth failed generation would have no stable successor (seen in CI, 2026-11-29). B
        # learns of that rebalance on its next heartbeat (every 0.5 s), so its revocation is printed within a second.
        time.sleep(1.0)
        scenarios.wait_reassigned("never-syncs/B")
        joined = [{"member": member, "generation": g} for g, member in unsynced.joined]
        scenarios.recording.members["never-syncs/U"] = joined
    finally:
        scenarios.stop_all()


def java_client_zombies(scenarios: Scenarios, config: RadarConfig) -> None:
    """Apache Kafka's Java client: a stalled zombie on each protocol."""
    try:
        scenarios.java_stalled_zombie("java-classic-zombie", "classic", config)
        scenarios.stop_all()
        scenarios.java_stalled_zombie("java-kip848-zombie", "consumer", config)
    finally:
        scenarios.stop_all()


def healthy_scale_outs(scenarios: Scenarios, config: RadarConfig) -> None:
    """Healthy: scale-outs and clean shutdowns, classic and KIP-848."""
    try:
        scenarios.scale_out_and_clean_shutdown("healthy-classic", "classic")
        scenarios.scale_out_and_clean_shutdown("healthy-kip848", "consumer")
    finally:
        scenarios.stop_all()


def healthy_static_restarts(scenarios: Scenarios, config: RadarConfig) -> None:
    """Healthy: static rolling restarts (librdkafka, then the Java client) whose members stay up until detection
    has read everything (a static member's close sends no LeaveGroup)."""
    scenarios.static_rolling_restart("healthy-static")
    scenarios.java_static_rolling_restart("healthy-java-static", config)


def detect_recording(spark: Any, radar_config: RadarConfig, data_dir: Path, bootstrap: str, result: Recording) -> None:
    """Detection as `radar run` runs it (decoding Spark's Kafka streams of `__consumer_offsets` and the telemetry
    topic itself, `KafkaDetectorSources`), available-now into gold; fills `result`'s gold rows."""
    kafka = radar_config.kafka.model_copy(update={"telemetry_topics": (result.telemetry_topic,)})
    detect = radar_config.detect.with_thresholds(default_session_timeout_ms=KIP848_SESSION_TIMEOUT_MS)
    config = isolated_config(radar_config, data_dir).model_copy(update={"kafka": kafka, "detect": detect})
    sources = KafkaDetectorSources(
        kafka_stream(spark, config, [config.kafka.offsets_topic], bootstrap),
        kafka_stream(spark, config, [result.telemetry_topic], bootstrap),
    )
    with DetectStage(spark, config, checkpoint_name="live", available_now=True, kafka=sources) as detection:
        for query in detection.queries:
            query.awaitTermination(900)
        detection.queries.raise_failures()
    catalog = TableCatalog(config)
    result.detections = [r.asDict() for r in spark.table(catalog.name(DETECTIONS)).collect()]
    result.rebalances = [r.asDict() for r in spark.table(catalog.name(REBALANCES)).collect()]


def ms(moment: datetime) -> int:
    """A TIMESTAMP read back from Delta (naive UTC in the tests' session) as epoch ms."""
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp() * 1000)


def protocol_ids(expiries: list[dict[str, Any]], member: str) -> bool:
    """KIP-848 member ids are broker-made (no client-id prefix): there A keeps one id, so only it may expire."""
    return [d["member_id"] for d in expiries] == [member]


@pytest.mark.parametrize(
    ("scenario", "session_ms"), [("classic-zombie", 3000), ("kip848-zombie", KIP848_SESSION_TIMEOUT_MS)]
)
def test_stalled_member_expires_then_commits_as_a_zombie(recording: Recording, scenario: str, session_ms: int) -> None:
    a_first = recording.member_ids(f"{scenario}/A")[0]
    found = recording.of(scenario)
    expiries = sorted(
        (d for d in found if d["kind"] == str(DetectionKind.HEARTBEAT_EXPIRATION)), key=lambda d: d["detected_at"]
    )
    assert expiries and expiries[0]["member_id"] == a_first, found
    # Seen live (librdkafka, classic): the resumed zombie rejoins under a new member id, its failed commit resets
    # the id again, and the broker expires the abandoned one a session later: a real expiry, of A's process only.
    assert [d["member_id"] for d in expiries].count(a_first) == 1
    assert all(d["member_id"].startswith(f"{scenario}-A-") for d in expiries) or protocol_ids(expiries, a_first)
    stopped = recording.moments[f"{scenario}/stopped"]
    assert ms(expiries[0]["detected_at"]) <= stopped + session_ms + 5000
    zombies = [d for d in found if d["kind"] == str(DetectionKind.ZOMBIE_COMMIT)]
    assert zombies, found
    assert all(ms(z["detected_at"]) >= ms(expiries[0]["detected_at"]) for z in zombies)
    # the agent reports a heartbeat every second while A is up: the early warning comes before the expiry
    risks = [d for d in found if d["kind"] == str(DetectionKind.HEARTBEAT_AT_RISK)]
    assert [d["member_id"] for d in risks] == [a_first], found
    assert ms(risks[0]["detected_at"]) < ms(expiries[0]["detected_at"])
    # A's own departures may count as flapping: expired, back under a new id, reset again by its refused commit,
    # and its abandoned id expired a session later is A departing twice within seconds (as the Java client's A);
    # seen in CI (2026-11-28, classic). Only A's client may be the one flapping.
    flapping = [d for d in found if d["kind"] == str(DetectionKind.MEMBERSHIP_FLAPPING)]
    assert all(f"{scenario}-A-" in d["summary"] for d in flapping), flapping
    assert recording.kinds(scenario) <= {
        str(DetectionKind.HEARTBEAT_AT_RISK),
        str(DetectionKind.HEARTBEAT_EXPIRATION),
        str(DetectionKind.ZOMBIE_COMMIT),
        str(DetectionKind.MEMBERSHIP_FLAPPING),
    }, [(d["kind"], d["member_id"], d["summary"]) for d in found]


@pytest.mark.parametrize(
    ("scenario", "session_ms"), [("java-classic-zombie", 3000), ("java-kip848-zombie", KIP848_SESSION_TIMEOUT_MS)]
)
def test_java_client_member_stalled_expires_then_commits_as_a_zombie(
    recording: Recording, scenario: str, session_ms: int
) -> None:
    """Apache Kafka's Java client (classic `ConsumerCoordinator`, KIP-848 `AsyncKafkaConsumer`), no agent: the
    broker's log says A expired; A's own shipped log says its commit was refused (classic: "Offset commit failed on
    partition ... The coordinator is not aware of this member." and "OffsetCommit failed with Generation{...}";
    KIP-848: "OffsetCommit failed with UNKNOWN_MEMBER_ID", no member id in the line; or, when A's heartbeat thread
    learnt of the eviction first, the classic client refuses the commit itself: "Failing OffsetCommit request since
    the consumer is not part of an active group")."""
    a_first = recording.member_ids(f"{scenario}/A")[0]
    found = recording.of(scenario)
    expiries = [d for d in found if d["kind"] == str(DetectionKind.HEARTBEAT_EXPIRATION)]
    assert [d["member_id"] for d in expiries] == [a_first], found
    stopped = recording.moments[f"{scenario}/stopped"]
    assert ms(expiries[0]["detected_at"]) <= stopped + session_ms + 5000
    zombies = [d for d in found if d["kind"] == str(DetectionKind.ZOMBIE_COMMIT)]
    assert [z["member_id"] for z in zombies] == [a_first], found
    assert ms(zombies[0]["detected_at"]) >= ms(expiries[0]["detected_at"])
    # Two real orders, both seen here: the commit reaches the broker first and is refused with UNKNOWN_MEMBER_ID, or
    # the heartbeat thread learns of the eviction first and the client refuses the commit itself
    summary = zombies[0]["summary"]
    assert "UNKNOWN_MEMBER_ID" in summary or "failed (consumer is not part of an active group)" in summary, zombies
    # No agent, and the Java client logs no heartbeat at INFO: no early warning. Classic A joins, expires, rejoins
    # and leaves (the test's shutdown) within seconds: four bounces with A departing twice is flapping by the rule.
    assert recording.kinds(scenario) <= {
        str(DetectionKind.HEARTBEAT_EXPIRATION),
        str(DetectionKind.ZOMBIE_COMMIT),
        str(DetectionKind.MEMBERSHIP_FLAPPING),
    }, [(d["kind"], d["member_id"], d["summary"]) for d in found]


def test_repeated_poll_overruns_are_rebalances_caused_by_poll_timeout(recording: Recording) -> None:
    group = recording.groups["poll-overrun"]
    causes = [r["cause"] for r in recording.rebalances if r["group_id"] == group and r["stabilized_at"] is not None]
    assert causes.count("poll_timeout") >= 2, causes
    # the overrunning member kept heartbeating (librdkafka's background thread; the agent says so while the
    # application does not poll): neither a session expiry nor a heartbeat at risk. Its commits after each overrun
    # are refused (it left the group): those are zombie commits. Leaving and rejoining twice in seconds is the
    # membership bouncing n <-> n+1 (flapping, as in the seed scenario of repeated overruns).
    found = [(d["kind"], d["member_id"], d["summary"]) for d in recording.of("poll-overrun")]
    assert recording.kinds("poll-overrun") <= {
        str(DetectionKind.ZOMBIE_COMMIT),
        str(DetectionKind.MEMBERSHIP_FLAPPING),
    }, found


def test_java_client_poll_overruns_are_rebalances_caused_by_poll_timeout(recording: Recording) -> None:
    """The Java client's heartbeat thread leaves the group when its poll timer expires ("consumer poll timeout has
    expired"; the broker's LeaveGroup line carries it as the client reason): two rebalances, each caused by C."""
    group = recording.groups["java-poll-overrun"]
    stabilized = [r for r in recording.rebalances if r["group_id"] == group and r["stabilized_at"]]
    overruns = [r for r in stabilized if r["cause"] == "poll_timeout"]
    assert len(overruns) >= 2, [(r["generation"], r["cause"]) for r in stabilized]
    assert all(r["left"] and all(m.startswith("java-poll-overrun-C-") for m in r["left"]) for r in overruns)
    found = [(d["kind"], d["member_id"], d["summary"]) for d in recording.of("java-poll-overrun")]
    assert recording.kinds("java-poll-overrun") <= {
        str(DetectionKind.ZOMBIE_COMMIT),
        str(DetectionKind.MEMBERSHIP_FLAPPING),
    }, found


def test_second_consumer_committing_an_older_offset_is_a_zombie_commit(recording: Recording) -> None:
    """From `__consumer_offsets` alone: the committed offset of a partition moves back right after it changed
    owner, committed by its previous owner (Z, still a live member, but no longer its owner)."""
    (z,) = recording.members["second-consumer/Z"]
    found = recording.of("second-consumer")
    assert recording.kinds("second-consumer") == {str(DetectionKind.ZOMBIE_COMMIT)}, found
    (zombie,) = found
    assert (zombie["member_id"], zombie["partition"]) == (z["member"], z["stale"][0]), zombie
    assert "moved back from 10 to 5" in zombie["summary"]
    assert ms(zombie["detected_at"]) >= recording.moments["second-consumer/stale_commit"] - 1000


def test_crash_loop_is_membership_flapping(recording: Recording) -> None:
    found = recording.of("crash-loop")
    assert str(DetectionKind.MEMBERSHIP_FLAPPING) in recording.kinds("crash-loop"), found
    (flapping,) = [d for d in found if d["kind"] == str(DetectionKind.MEMBERSHIP_FLAPPING)]
    assert "crashing-worker" in flapping["summary"]


def test_a_member_that_never_syncs_is_a_failing_generation(recording: Recording) -> None:
    """Classic, live: each generation the leader completes loses the member that joined without SyncGroup a
    rebalance timeout later, four times; one failing_generation names them and the generations they failed."""
    unsynced = recording.members["never-syncs/U"]
    assert len(unsynced) == 4, unsynced
    found = recording.of("never-syncs")
    (failing,) = [d for d in found if d["kind"] == str(DetectionKind.FAILING_GENERATION)]
    assert "never sent SyncGroup" in failing["summary"] and unsynced[0]["member"] in failing["summary"], failing
    assert failing["generation"] == unsynced[0]["generation"], failing
    assert len(json.loads(failing["evidence"])) == 4, failing
    assert recording.kinds("never-syncs") <= {
        str(DetectionKind.FAILING_GENERATION),
        str(DetectionKind.MEMBERSHIP_FLAPPING),
    }, [(d["kind"], d["member_id"], d["summary"]) for d in found]
    group = recording.groups["never-syncs"]
    causes = [r["cause"] for r in recording.rebalances if r["group_id"] == group and r["stabilized_at"] is not None]
    assert causes.count("failed_previous") == 4, causes


@pytest.mark.parametrize("scenario", ["healthy-classic", "healthy-kip848", "healthy-static", "healthy-java-static"])
def test_healthy_groups_raise_nothing(recording: Recording, scenario: str) -> None:
    group = recording.groups[scenario]
    assert [r for r in recording.rebalances if r["group_id"] == group], "the group was followed"
    assert recording.of(scenario) == []
