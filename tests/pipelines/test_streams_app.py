"""A real Kafka Streams application (Apache Kafka's kafka-streams, `StreamsApp.java`) on the streams rebalance
protocol (KIP-1071, `group.protocol=streams`) against the run's broker, beside the consumer fleet's live scenarios:
a healthy application (two instances form the group, a third scales out, then each leaves cleanly; again on the
classic protocol, where Streams' own assignor adds follow-up rebalances), a rolling upgrade's version probing
(classic: a kafka-streams 3.0 leader and an instance of the broker's version) and a crash
loop (one instance SIGKILLed and started again, a new process each time, five times in under a minute). The
broker's coordinator lines and every instance's own log are shipped to a telemetry topic, as a user ships them;
then detection reads `__consumer_offsets` and that topic through Spark's Kafka source, as `radar run` does, and the
real tracker writes gold. The healthy application must raise nothing; the crash loop must be one
`membership_flapping` with its evidence.
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from rebalance_radar.emitters.kafka_settings import client_settings
from rebalance_radar.emitters.log_shipper import LogShipper, start_shipper
from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.local.scenarios import MemberProcess
from rebalance_radar.pipelines.stages.clock import ClockTickEmitter
from rebalance_radar.pipelines.stages.detect import DetectStage, KafkaDetectorSources
from rebalance_radar.pipelines.stages.sources import kafka_stream
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import DETECTIONS, REBALANCES, DetectionKind, HeartbeatEventKind
from rebalance_radar.transforms.telemetry.client_log import parse_client_log_line
from tests.pipelines.concurrent_recordings import (
    ConcurrentRecordings,
    RecordingContext,
    concurrent_recording,
    lane_run,
)
from tests.pipelines.group_member import create_topics
from tests.pipelines.ingest_support import isolated_config
from tests.pipelines.streams_app import start_streams_instance
from tests.polling import wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.slow]

SOURCE_PARTITIONS = 4  # four tasks: two instances get two each, a third takes some
CRASH_RESTARTS = 5
CRASHING_CLIENT_ID = "crashing-streams-instance"
# kafka-streams 3.0's assignor speaks subscription version 10, 4.3's version 11: an old leader makes a version probe
OLD_STREAMS_VERSION = "3.0.2"
START_TIMEOUT_S = 90.0  # a new JVM to RUNNING: seconds on an idle host, more beside the suite's other JVMs
# Kafka 4.3's GroupMetadataManager: a streams member's LeaveGroup heartbeat (epoch -1), and its session's expiry
LEFT = re.compile(r"\[GroupId (?P<group>[^\]]+)\]\[MemberId [^\]]+\] Member (?P<member>\S+) left the streams group")
EXPIRED = re.compile(
    r"\[GroupId (?P<group>[^\]]+)\] Streams member (?P<member>\S+) fenced from the group"
    r" because the member session expired"
)
JOINED = re.compile(r"\[GroupId (?P<group>[^\]]+)\]\[MemberId (?P<member>[^\]]+)\] Member joins the streams group")


@dataclass
class StreamsRecording:
    """What the application's scenarios did, the logs they left, and the gold rows detection wrote."""

    telemetry_topic: str
    out_dir: Path
    groups: dict[str, str] = field(default_factory=dict)  # scenario -> application id (the group id)
    client_logs: dict[str, Path] = field(default_factory=dict)  # instance name -> its log4j2 file
    broker_log: list[str] = field(default_factory=list)  # the broker's lines that name the groups
    detections: list[dict[str, Any]] = field(default_factory=list)
    rebalances: list[dict[str, Any]] = field(default_factory=list)

    def of(self, scenario: str) -> list[dict[str, Any]]:
        return [d for d in self.detections if d["group_id"] == self.groups[scenario]]

    def read_broker_log(self, broker_log: Path) -> None:
        """Keeps the broker's log lines that name one of the recording's groups (its coordinator lines, the internal
        topics it created for them)."""
        groups = tuple(self.groups.values())
        with broker_log.open(errors="replace") as lines:
            self.broker_log = [line for line in lines if any(group in line for group in groups)]

    def broker_says(self, pattern: re.Pattern[str], scenario: str) -> set[str]:
        """The members the broker's own lines name for `pattern` in the scenario's group: the ground truth."""
        found = (pattern.search(line) for line in self.broker_log)
        return {m["member"] for m in found if m is not None and m["group"] == self.groups[scenario]}

    def recorded(self, column: str, scenario: str) -> set[str]:
        """The members radar's rebalances of the scenario's group list in `column` (joined, left, expired)."""
        group = self.groups[scenario]
        return {m for r in self.rebalances if r["group_id"] == group for m in r[column] or ()}


class Application:
    """One scenario's Streams application: its topics, its instances, and their shipped logs."""

    def __init__(
        self, context: RecordingContext, recording: StreamsRecording, scenario: str, protocol: str = "streams"
    ) -> None:
        self.context, self.recording, self.scenario, self.protocol = context, recording, scenario, protocol
        tag = time.time_ns()
        self.application_id = f"streams-{scenario}-{tag}"
        self.source, self.sink = f"streams-in-{scenario}-{tag}", f"streams-out-{scenario}-{tag}"
        create_topics(context.bootstrap, {self.source: SOURCE_PARTITIONS, self.sink: 1})
        producer = Producer({"bootstrap.servers": context.bootstrap})
        for n in range(200):  # work for the count: its changelog and the group's commits are written
            producer.produce(self.source, key=f"key-{n % 13}", value=str(n))
        producer.flush(30)
        recording.groups[scenario] = self.application_id
        self.instances: list[MemberProcess] = []
        self.shippers: list[LogShipper] = []

    def start(self, name: str, client_id: str | None = None, version: str | None = None) -> MemberProcess:
        """An instance (of kafka-streams `version`, default the broker's), up (RUNNING) before this returns, its whole
        log shipped as a user ships an application's."""
        instance, log = start_streams_instance(
            self.context.config, self.recording.out_dir, f"{self.scenario}-{name}", self.context.bootstrap,
            self.application_id, self.source, self.sink, client_id=client_id, protocol=self.protocol, version=version,
        )  # fmt: skip
        self.instances.append(instance)
        self.recording.client_logs[f"{self.scenario}-{name}"] = log
        self.shippers.append(start_shipper(log, self.context.bootstrap, self.recording.telemetry_topic, keywords=()))
        instance.wait_for("running", START_TIMEOUT_S)
        return instance

    def stop(self) -> None:
        """Every instance still up closed cleanly (SIGTERM: close with LEAVE_GROUP), then the shippers drained."""
        for instance in self.instances:
            instance.stop()
        for shipper in self.shippers:
            shipper.stop()
        self.instances, self.shippers = [], []


def healthy(app: Application) -> None:
    """Two instances form the group, a third scales out, then it leaves cleanly, then the other two."""
    first, second = app.start("H1"), app.start("H2")
    time.sleep(3.0)  # kept, the scenario's pace: a deployment scales out and in seconds apart, not in a race
    third = app.start("H3")
    time.sleep(3.0)
    third.stop()
    time.sleep(3.0)
    second.stop()
    time.sleep(1.0)
    first.stop()


def crash_loop(app: Application) -> None:
    """S steady; the crashing instance is started, works a moment and is SIGKILLed, `CRASH_RESTARTS` times, each
    time a new process (and a new state directory, as a container without a volume), restarted at once: the broker
    expires each dead member a session later, while its successor is already in the group. Once the broker has
    expired them all, S works on a moment in the group's last epoch and leaves cleanly."""
    broker_log = Path(app.context.log_file)
    start = broker_log.stat().st_size
    app.start("S")
    for restart in range(CRASH_RESTARTS):
        crashing = app.start(f"C{restart}", client_id=CRASHING_CLIENT_ID)
        time.sleep(1.5)  # kept, the scenario: the instance works a moment before it crashes
        crashing.signal(signal.SIGKILL)
        crashing.process.wait(10)

    def expired() -> int:
        with broker_log.open("rb") as log:
            log.seek(start)
            text = log.read().decode(errors="replace")
        return sum(1 for m in EXPIRED.finditer(text) if m["group"] == app.application_id)

    wait_for(lambda: expired() >= CRASH_RESTARTS, 60, f"the broker to expire the {CRASH_RESTARTS} crashed members")
    time.sleep(2.0)  # kept, the scenario: S works on in the group's last epoch before it is stopped
    app.stop()


def version_probing(app: Application) -> None:
    """A rolling upgrade's first step: an instance of kafka-streams `OLD_STREAMS_VERSION` leads the group, then an
    instance of the broker's version joins. The leader cannot read the newer subscription and answers with version
    probing; the new instance downgrades its subscription and asks for one more rebalance at once. The new instance
    then leaves cleanly. The old one runs until the recording ends: kafka-streams 3.0 never leaves on close, and its
    expiry a session later is after the recording."""
    app.start("V1", version=OLD_STREAMS_VERSION)
    time.sleep(2.0)  # kept, the scenario: the old instance leads a stable group before the upgrade starts
    upgraded = app.start("V2")
    time.sleep(3.0)  # kept, the scenario: both work a moment in the probed generation
    upgraded.stop()
    time.sleep(2.0)


Scenario = tuple[str, str, Callable[[Application], None]]  # (name, group.protocol, what its instances do)


def record_applications(context: RecordingContext, name: str, scenarios: list[Scenario]) -> StreamsRecording:
    """The applications side by side on the run's broker, its coordinator lines shipped from now on and a clock
    ticking on a telemetry topic of their own, until event time has passed the last member's leave."""
    telemetry = f"telemetry-{name}-{time.time_ns()}"
    create_topics(context.bootstrap, {telemetry: 1})
    recording = StreamsRecording(telemetry, context.tmp_path_factory.mktemp(name))
    broker_shipper = start_shipper(context.log_file, context.bootstrap, telemetry, from_start=False)
    clock = ClockTickEmitter(
        client_settings(context.bootstrap), telemetry, interval_ms=1000, emitter=f"radar-run@test-{name}"
    )
    clock.start()
    apps = [Application(context, recording, scenario, protocol) for scenario, protocol, _ in scenarios]
    try:
        with ThreadPoolExecutor(max_workers=len(apps), thread_name_prefix="streams-lane") as pool:
            lanes = [pool.submit(lane, app) for (_, _, lane), app in zip(scenarios, apps, strict=True)]
            for lane in lanes:
                lane.result(timeout=300)
        # Kept, derived: the clock moves event time past the last leave by the detectors' lateness and a tick; no
        # act of the broker marks it, the clock's ticks are the event time.
        time.sleep((context.config.detect.lateness_ms + 2 * context.config.detect.tick_interval_ms) / 1000)
    finally:
        for app in apps:
            app.stop()
        clock.stop()
        broker_shipper.stop()
    recording.read_broker_log(Path(context.log_file))
    (recording.out_dir / "broker.log").write_text("".join(recording.broker_log))
    return recording


@concurrent_recording
def record_streams_app(context: RecordingContext) -> StreamsRecording:
    """The streams protocol's healthy application and crash loop, among the recordings."""
    return record_applications(
        context, "streams-app", [("healthy", "streams", healthy), ("crash-loop", "streams", crash_loop)]
    )


@lane_run
def record_classic_streams_app(context: RecordingContext) -> StreamsRecording:
    """The healthy application again on the classic protocol, in the lane (`concurrent_recordings.lane_run`): its
    three JVMs' start-up stays out of the recordings' crowded first minutes. Beside it, a rolling upgrade's
    version probing."""
    return record_applications(
        context,
        "classic-streams-app",
        [("classic", "classic", healthy), ("version-probing", "classic", version_probing)],
    )


@pytest.fixture(scope="module")
def recording(
    concurrent_recordings: ConcurrentRecordings,
    kafka_broker: Any,
    spark: Any,
    radar_config: RadarConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> StreamsRecording:
    result: StreamsRecording = concurrent_recordings.result(record_streams_app)
    classic: StreamsRecording = concurrent_recordings.result(record_classic_streams_app, timeout_s=1200)
    result.groups.update(classic.groups)
    result.client_logs.update(classic.client_logs)
    result.broker_log += classic.broker_log
    topics = (result.telemetry_topic, classic.telemetry_topic)
    kafka = radar_config.kafka.model_copy(update={"telemetry_topics": topics})
    config = isolated_config(radar_config, tmp_path_factory.mktemp("streams-app-data")).model_copy(
        update={"kafka": kafka}
    )
    sources = KafkaDetectorSources(
        kafka_stream(spark, config, [config.kafka.offsets_topic], kafka_broker.bootstrap_servers),
        kafka_stream(spark, config, list(topics), kafka_broker.bootstrap_servers),
    )
    with DetectStage(spark, config, checkpoint_name="streams-app", available_now=True, kafka=sources) as detection:
        for query in detection.queries:
            query.awaitTermination(900)
        detection.queries.raise_failures()
    catalog = TableCatalog(config)
    result.detections = [r.asDict() for r in spark.table(catalog.name(DETECTIONS)).collect()]
    result.rebalances = [r.asDict() for r in spark.table(catalog.name(REBALANCES)).collect()]
    return result


def test_healthy_streams_application_raises_nothing(recording: StreamsRecording) -> None:
    """Forming, a scale-out and clean leaves (the topology set-up epochs included) are what a deployment does."""
    group = recording.groups["healthy"]
    assert [r for r in recording.rebalances if r["group_id"] == group], "the streams group was followed"
    assert recording.of("healthy") == [], [(d["kind"], d["member_id"], d["summary"]) for d in recording.of("healthy")]


def test_a_healthy_classic_streams_application_raises_nothing_through_its_followup_rebalances(
    recording: StreamsRecording,
) -> None:
    """The same deployment on the classic protocol: Streams' own assignor moves tasks to the new instance in two
    steps (cooperative: revoke, then a follow-up rebalance assigns them), which is a deployment, not an incident."""
    group = recording.groups["classic"]
    rebalances = [r for r in recording.rebalances if r["group_id"] == group]
    assert rebalances, "the classic streams group was followed"
    assert {r["group_protocol"] for r in rebalances} == {"classic"}, rebalances
    # the follow-up: the leader rejoins at once to hand over the revoked tasks (cause `enforced`, a Streams followup)
    followups = [r for r in rebalances if r["cause"] == "enforced"]
    assert followups, [(r["generation"], r["cause"], r["cause_detail"]) for r in rebalances]
    assert recording.of("classic") == [], [(d["kind"], d["member_id"], d["summary"]) for d in recording.of("classic")]


def test_a_rolling_upgrades_version_probing_is_read_from_both_instances_and_raises_nothing(
    recording: StreamsRecording,
) -> None:
    """The old leader's and the new instance's own lines about the probe are version-probing events of the group
    (each client sets its own `client.id`, so its consumer's lines name the group: `telemetry.client_groups`); the
    group's rebalances follow the probe (the new member's join, the leader's re-join for the downgraded
    subscription, enforced by the probe, the new member's leave), and an upgrade is no incident."""
    probe_lines = {
        name: [line for line in recording.client_logs[f"version-probing-{name}"].read_text().splitlines()
               if "version probing" in line]
        for name in ("V1", "V2")
    }  # fmt: skip
    assert probe_lines["V1"] and probe_lines["V2"], "the upgrade made no version probe"  # the clients' own word
    for name, lines in probe_lines.items():
        kinds = {e.event for line in lines for e in parse_client_log_line(line, 0).events}
        assert HeartbeatEventKind.VERSION_PROBING in kinds, (name, lines)
    group = recording.groups["version-probing"]
    rebalances = sorted((r for r in recording.rebalances if r["group_id"] == group), key=lambda r: r["generation"])
    said = [(r["from_generation"], r["generation"], r["cause"], (r["cause_detail"] or "")[:90]) for r in rebalances]
    assert len(rebalances) >= 4, said  # formed; the new member joins; the probe's second rebalance; it leaves
    assert any(r["cause"] == "enforced" and "version probing" in (r["cause_detail"] or "") for r in rebalances), said
    found = recording.of("version-probing")
    assert found == [], [(d["kind"], d["member_id"], d["summary"]) for d in found]


def test_streams_crash_loop_is_membership_flapping(recording: StreamsRecording) -> None:
    """Five members of one client, each expired seconds after it joined: one crash loop, with its evidence."""
    found = recording.of("crash-loop")
    flapping = [d for d in found if d["kind"] == str(DetectionKind.MEMBERSHIP_FLAPPING)]
    assert len(flapping) == 1, [(d["kind"], d["member_id"], d["summary"]) for d in found]
    (loop,) = flapping
    assert CRASHING_CLIENT_ID in loop["summary"], loop
    assert len(json.loads(loop["evidence"])) >= CRASH_RESTARTS, loop  # a source record per crashed member at least
    # expirations of the crashed members may be reported too; nothing else happened to the group
    assert {d["kind"] for d in found} <= {
        str(DetectionKind.MEMBERSHIP_FLAPPING),
        str(DetectionKind.HEARTBEAT_EXPIRATION),
    }, [(d["kind"], d["member_id"], d["summary"]) for d in found]


def test_streams_rebalances_name_who_left_and_who_expired(recording: StreamsRecording) -> None:
    """Radar's rebalances of the streams groups name the members the broker's own lines say left (a LeaveGroup
    heartbeat) or were fenced when their session expired: the three healthy instances left and none expired; the
    five crashed instances expired (the steady instance left at the end)."""
    healthy_left = recording.broker_says(LEFT, "healthy")
    assert len(healthy_left) == 3, recording.broker_log
    assert recording.recorded("left", "healthy") == healthy_left
    assert recording.recorded("expired", "healthy") == set()
    crashed = recording.broker_says(EXPIRED, "crash-loop")
    assert len(crashed) == CRASH_RESTARTS, recording.broker_log
    assert recording.recorded("expired", "crash-loop") == crashed


def test_streams_rebalances_count_each_join_and_departure_once(recording: StreamsRecording) -> None:
    """Every member the broker says joined is a join of a rebalance (each restart of the crash loop too, although
    the group's rebalances do not converge between restarts), and no member is listed as gone by two rebalances."""
    for scenario in ("healthy", "crash-loop"):
        joined = recording.broker_says(JOINED, scenario)
        assert joined, recording.broker_log
        assert recording.recorded("joined", scenario) >= joined, scenario
        group = recording.groups[scenario]
        gone = Counter(m for r in recording.rebalances if r["group_id"] == group for m in r["left"] + r["expired"])
        assert all(n == 1 for n in gone.values()), (scenario, gone)
