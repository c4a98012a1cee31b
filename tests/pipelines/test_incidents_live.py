"""Live evidence of a cross-group incident: a three-node KRaft cluster from the embedded broker's artifacts
(`tests.pipelines.kraft_cluster`), three consumer groups whose coordinator is one node and a fourth coordinated
elsewhere, each node's log shipped to a telemetry topic. The node that coordinates the three is stopped (SIGTERM:
a controlled shutdown) and started again; a window later a deployment rolls across three more groups coordinated
elsewhere (in each, the pod's consumer is replaced by the next pod's, as a Kubernetes rollout does; its first pods
joined the three together at the start, a wave of its own); a window later three unrelated applications' groups each
take in a second consumer at once, with nothing in common. The cluster's `__consumer_offsets` and telemetry are
captured into a dump and `radar replay` writes `incidents`: one incident must name that node, with exactly those
three groups, two (the start, the rollout) the deployment's client-id prefix, with its three, and one the three
unrelated groups as unexplained.

The recording runs beside the others (`tests.pipelines.concurrent_recordings`), and beside the lane once they are done
(each wave's rebalances are seconds apart, a window is 30 s): the cluster is its own, and only the replay needs the
run's SparkSession.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from rebalance_radar.emitters.log_shipper import start_shipper
from rebalance_radar.pipelines.config import KafkaConfig, RadarConfig
from rebalance_radar.pipelines.formats.capture import run_capture
from rebalance_radar.pipelines.local.topics import ensure_offsets_topic
from rebalance_radar.transforms.schemas import INCIDENTS, IncidentCause
from tests.pipelines.concurrent_recordings import (
    ConcurrentRecordings,
    RecordingContext,
    concurrent_recording_beside_the_lane,
)
from tests.pipelines.ingest_support import isolated_config, table
from tests.pipelines.kraft_cluster import NODES, KraftCluster
from tests.polling import wait_for

pytestmark = [pytest.mark.incidents, pytest.mark.kafka, pytest.mark.spark, pytest.mark.slow]

OFFSETS_PARTITIONS = 10  # kraft_cluster's offsets.topic.num.partitions
MOVED_GROUPS = 3
WAVE_GROUPS = 3
DEPLOYMENT = "checkout"
"""The deployment rolling out: its pods' client ids are `checkout-7f9c8d6b5-<pod>`, as a Kubernetes pod is named."""
WINDOW_MS = 30_000
"""The replay's `incidents.window_ms`: half the default, still far wider than the gaps within a wave on a loaded machine
(its rebalances are seconds apart), so the waits between the waves, a window each, are half the default's."""
WAVE_AFTER_S = WINDOW_MS / 1000 + 5
"""The wave starts a window after the restart's last rebalance: two incidents, not one chain."""
UNRELATED = ("ledger-writer", "search-indexer", "mail-sender")
"""Three applications with nothing in common but the moment they scale out (every member runs on 127.0.0.1, and a
classic member's join names no host)."""


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode` over UTF-16 code units: how Kafka hashes a group id to its offsets partition."""
    value = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        value = (31 * value + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def offsets_partition(group: str, partitions: int = OFFSETS_PARTITIONS) -> int:
    """Kafka's `Utils.abs(groupId.hashCode()) % partitions` (`Utils.abs(Integer.MIN_VALUE)` is 0)."""
    value = java_string_hash(group)
    return 0 if value == -(1 << 31) else abs(value) % partitions


@dataclass
class Restart:
    """What the recording did, and the dump it captured."""

    dump: Path
    broker: int
    moved: list[str]
    elsewhere: str
    wave: list[str]
    unrelated: list[str]
    timings: dict[str, float] = field(default_factory=dict)


def _members(
    bootstrap: str, topic: str, groups: list[str], stop: threading.Event, client_ids: list[str] | None = None
) -> list[threading.Thread]:
    """One librdkafka consumer per group (client id `incident-<group>` unless given), polling until `stop` (then
    closed: a LeaveGroup)."""
    assigned: dict[str, threading.Event] = {g: threading.Event() for g in groups}
    named = dict(zip(groups, client_ids or [f"incident-{g}" for g in groups], strict=True))

    def run(group: str) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": named[group],
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000,
                "log_level": 0,
            }
        )
        consumer.subscribe([topic])
        try:
            while not stop.is_set():
                consumer.poll(0.2)
                if consumer.assignment():
                    assigned[group].set()
        finally:
            consumer.close()

    threads = [threading.Thread(target=run, args=(g,), name=f"member-{g}", daemon=True) for g in groups]
    for thread in threads:
        thread.start()
    wait_for(lambda: all(e.is_set() for e in assigned.values()), timeout_s=60, what="every group assigned")
    return threads


class Pod:
    """One pod of the deployment: a librdkafka consumer of `group` named `checkout-7f9c8d6b5-<pod>`, polling in a
    thread until `stop()` closes it (a LeaveGroup)."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.client_id = f"{DEPLOYMENT}-7f9c8d6b5-{uuid.uuid4().hex[:5]}"
        self.assigned = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(bootstrap, topic, group), name=f"pod-{group}", daemon=True
        )
        self._thread.start()

    def _run(self, bootstrap: str, topic: str, group: str) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": self.client_id,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000,
                "log_level": 0,
            }
        )
        consumer.subscribe([topic])
        try:
            while not self._stop.is_set():
                consumer.poll(0.2)
                if consumer.assignment():
                    self.assigned.set()
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _roll_out(bootstrap: str, topic: str, pods: dict[str, Pod]) -> None:
    """The rollout, group after group: the next pod joins, and once the group has rebalanced (the new pod is
    assigned) the old one leaves."""
    for group, old in list(pods.items()):
        new = Pod(bootstrap, topic, group)
        wait_for(new.assigned.is_set, timeout_s=60, what=f"the new pod of {group} assigned")
        old.stop()
        pods[group] = new


def _loaded_elsewhere(cluster: KraftCluster, broker: int, groups: list[str]) -> bool:
    """Whether the other nodes' coordinators have loaded every one of `groups` (the move is done)."""
    text = "".join(
        n.log_file.read_text(errors="replace") for n in cluster.nodes if n.node_id != broker and n.log_file.is_file()
    )
    # 4.x "Loaded classic group G with K members.", 3.x "Loading group metadata for G with generation N"
    return all(
        f"Loaded classic group {g} with" in text or f"Loading group metadata for {g} with" in text for g in groups
    )


@concurrent_recording_beside_the_lane
def record_broker_restart(context: RecordingContext) -> Restart:
    timings: dict[str, float] = {}
    began = time.monotonic()
    root = context.tmp_path_factory.mktemp("incidents-cluster")
    cluster = KraftCluster(context.config.broker, root)
    shippers = []
    stop = threading.Event()
    threads: list[threading.Thread] = []
    pods: dict[str, Pod] = {}
    try:
        cluster.start()
        timings["cluster_start_s"] = time.monotonic() - began
        bootstrap = cluster.bootstrap
        ensure_offsets_topic(bootstrap, "__consumer_offsets")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        telemetry, topic = f"telemetry-incidents-{time.time_ns()}", "incident-work"
        for future in admin.create_topics([NewTopic(telemetry, 1, NODES), NewTopic(topic, 2, NODES)]).values():
            future.result(timeout=30)
        leaders = {
            p: m.leader for p, m in admin.list_topics(timeout=10).topics["__consumer_offsets"].partitions.items()
        }
        broker = max(set(leaders.values()), key=lambda b: (sum(1 for v in leaders.values() if v == b), -b))
        candidates = (f"incident-g{i}" for i in range(10_000))
        moved: list[str] = []
        elsewhere = ""
        for group in candidates:
            on = leaders[offsets_partition(group)]
            if on == broker and len(moved) < MOVED_GROUPS:
                moved.append(group)
            elif on != broker and not elsewhere:
                elsewhere = group
            if len(moved) == MOVED_GROUPS and elsewhere:
                break
        wave = [g for g in (f"wave-g{i}" for i in range(100)) if leaders[offsets_partition(g)] != broker][:WAVE_GROUPS]
        unrelated = [
            g
            for g in (f"{app}-{i}" for app in UNRELATED for i in range(100))
            if leaders[offsets_partition(g)] != broker
        ]
        unrelated = [next(g for g in unrelated if g.startswith(app)) for app in UNRELATED]
        shippers = [start_shipper(node.log_file, bootstrap, telemetry, from_start=True) for node in cluster.nodes]
        threads = _members(bootstrap, topic, [*moved, elsewhere], stop)
        threads += _members(bootstrap, topic, unrelated, stop, [f"{app}-1" for app in UNRELATED])
        pods.update({group: Pod(bootstrap, topic, group) for group in wave})
        wait_for(lambda: all(p.assigned.is_set() for p in pods.values()), timeout_s=60, what="every pod assigned")
        timings["groups_ready_s"] = time.monotonic() - began
        restart_began = time.monotonic()
        cluster.stop_node(broker)
        wait_for(lambda: _loaded_elsewhere(cluster, broker, moved), timeout_s=60, what="the groups moved")
        cluster.start_node(broker)
        timings["restart_s"] = time.monotonic() - restart_began
        time.sleep(WAVE_AFTER_S)  # kept, the scenario: the rollout comes a while after the restart
        wave_began = time.monotonic()
        _roll_out(bootstrap, topic, pods)
        timings["wave_s"] = time.monotonic() - wave_began
        time.sleep(WAVE_AFTER_S)  # kept, the scenario: the unrelated groups scale out a window after the rollout
        threads += _members(bootstrap, topic, unrelated, stop, [f"{app}-2" for app in UNRELATED])
        for shipper in shippers:
            shipper.stop()
        shippers = []
        # captured while every member is still in its group: their leaving would be one more chain of rebalances
        dump = root / "restart.jsonl"
        run_capture(KafkaConfig(), bootstrap, ["__consumer_offsets", telemetry], dump, env={})
        timings["recording_s"] = time.monotonic() - began
        return Restart(dump, broker, sorted(moved), elsewhere, sorted(wave), sorted(unrelated), timings)
    finally:
        stop.set()
        for pod in pods.values():
            pod.stop()
        for thread in threads:
            thread.join(timeout=30)
        for shipper in shippers:
            shipper.stop()
        cluster.stop()


@pytest.fixture(scope="module")
def replayed(
    concurrent_recordings: ConcurrentRecordings,
    spark: Any,
    radar_config: RadarConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Restart, RadarConfig, list[dict[str, Any]]]:
    from rebalance_radar.pipelines.cli.monitor import run_replay

    restart: Restart = concurrent_recordings.result(record_broker_restart)
    config = isolated_config(radar_config, tmp_path_factory.mktemp("incidents-data"))
    config = config.model_copy(update={"incidents": config.incidents.model_copy(update={"window_ms": WINDOW_MS})})
    began = time.monotonic()
    run_replay(config, [str(restart.dump)])
    restart.timings["replay_s"] = time.monotonic() - began
    rows = [r.asDict() for r in table(spark, config, INCIDENTS).collect()]
    return restart, config, rows


def test_a_restarted_broker_is_one_incident_naming_it_with_its_groups(
    replayed: tuple[Restart, RadarConfig, list[dict[str, Any]]],
) -> None:
    restart, _, rows = replayed
    naming = [r for r in rows if restart.elsewhere not in r["groups"] and set(restart.moved) <= set(r["groups"])]
    assert len(naming) == 1, rows
    (incident,) = naming
    assert incident["cause_kind"] == IncidentCause.BROKER_RESTART, incident["cause"]
    assert incident["broker"] == str(restart.broker)
    assert sorted(incident["groups"]) == restart.moved
    # its stop line may not reach its log (log4j2 can shut down before Kafka does): "restarted" then
    assert incident["cause"].startswith(
        (f"broker {restart.broker} stopped and started:", f"broker {restart.broker} restarted:")
    )
    assert all(restart.elsewhere not in r["groups"] for r in rows)
    print(f"incidents: {len(rows)} rows; timings {restart.timings}")


def test_a_rollout_across_groups_is_a_deployment_wave_naming_its_client_id_prefix(
    replayed: tuple[Restart, RadarConfig, list[dict[str, Any]]],
) -> None:
    """The deployment's first pods joining its three groups together are a wave too (its start), and the rollout
    after the restart another one: each names the prefix, with exactly those groups."""
    restart, _, rows = replayed
    waves = [r for r in rows if r["cause_kind"] == IncidentCause.DEPLOYMENT_WAVE]
    waves.sort(key=lambda r: r["window_start"])
    (moved,) = [r for r in rows if r["cause_kind"] == IncidentCause.BROKER_RESTART]
    assert len(waves) == 2 and len(rows) == 4, rows  # and the unrelated groups' incident: nothing else
    for wave in waves:
        assert sorted(wave["groups"]) == restart.wave
        assert f"client-id prefixes {DEPLOYMENT}" in wave["cause"], wave["cause"]
        assert wave["broker"] is None
    assert waves[0]["window_end"] < moved["window_start"] < moved["window_end"] < waves[1]["window_start"]


def test_groups_rebalancing_together_with_nothing_in_common_are_one_unexplained_incident(
    replayed: tuple[Restart, RadarConfig, list[dict[str, Any]]],
) -> None:
    """Three applications' groups (client ids `ledger-writer-1`, `search-indexer-1`, `mail-sender-1`; none on the
    restarted broker) each take in a second consumer at the same moment: no broker moved, no host or client-id
    prefix is shared, so the incident names them and says no cause was seen."""
    restart, _, rows = replayed
    (unexplained,) = [r for r in rows if r["cause_kind"] == IncidentCause.UNEXPLAINED]
    assert sorted(unexplained["groups"]) == restart.unrelated
    assert unexplained["cause"] == (
        f"3 groups rebalanced together with no common cause seen ({', '.join(restart.unrelated)})"
    )
    assert unexplained["broker"] is None
    rollout = max(
        (r for r in rows if r["cause_kind"] == IncidentCause.DEPLOYMENT_WAVE), key=lambda r: r["window_start"]
    )
    assert rollout["window_end"] < unexplained["window_start"]


def test_replaying_again_writes_the_same_incidents(
    replayed: tuple[Restart, RadarConfig, list[dict[str, Any]]], spark: Any
) -> None:
    """The whole tables (a replay) and the recent spans (a live gold query) give the same rows, and a row of the
    recomputed span that no longer comes out is deleted."""
    from rebalance_radar.pipelines.stages.incidents import merge_incidents, refresh_incidents

    _, config, rows = replayed
    key = lambda r: r["incident_id"]  # noqa: E731
    refresh_incidents(spark, config)
    assert sorted((r.asDict() for r in table(spark, config, INCIDENTS).collect()), key=key) == sorted(rows, key=key)
    stale = {**rows[0], "incident_id": "inc-stale", "cause_kind": str(IncidentCause.UNEXPLAINED)}
    merge_incidents(spark, config, [*rows, stale], recomputed_from_ms=None)
    assert table(spark, config, INCIDENTS).count() == len(rows) + 1
    assert refresh_incidents(spark, config, recent_only=True) == len(rows)
    assert sorted((r.asDict() for r in table(spark, config, INCIDENTS).collect()), key=key) == sorted(rows, key=key)


def test_radar_detections_shows_the_incident_first_without_a_jvm(
    replayed: tuple[Restart, RadarConfig, list[dict[str, Any]]], spark: Any
) -> None:
    from rebalance_radar.pipelines.cli.detections_view import load_incidents, load_local_incidents
    from tests.pipelines.radar_run_process import radar_without_a_jvm

    restart, config, rows = replayed
    (moved,) = [r for r in rows if r["cause_kind"] == IncidentCause.BROKER_RESTART]
    local = load_local_incidents(config, group=restart.moved[0])
    assert local is not None and [r["incident_id"] for r in local] == [moved["incident_id"]]
    everything = load_local_incidents(config)
    assert everything is not None
    assert [r["incident_id"] for r in everything] == [r["incident_id"] for r in load_incidents(spark, config)]
    assert load_local_incidents(config, group=restart.elsewhere) == []
    done = radar_without_a_jvm("detections", "--data-dir", str(config.data_dir))
    assert done.returncode == 0, done.stderr[-2000:]
    incidents = [line for line in done.stdout.strip().splitlines() if line.startswith("incident ")]
    assert done.stdout.startswith("incident ") and "unexplained, 3 groups" in incidents[0], done.stdout  # newest
    assert len(incidents) == 4, done.stdout
    (line,) = [line for line in incidents if line.startswith(f"incident {moved['incident_id']}")]
    assert "broker_restart, 3 groups" in line and f"broker {restart.broker} " in line, done.stdout
    assert "groups moved to broker" in line


def test_radar_report_shows_the_incident_before_the_groups(
    replayed: tuple[Restart, RadarConfig, list[dict[str, Any]]], tmp_path: Path
) -> None:
    from rebalance_radar.pipelines.cli.report import run_report

    _, config, _ = replayed
    out = tmp_path / "report.html"
    data = run_report(config, out)
    # the restart, the deployment's start and its rollout, the unrelated groups
    assert data is not None and len(data.incidents) == 4
    page = out.read_text()
    incidents_at = page.index("<h2>incidents across groups</h2>")
    assert incidents_at < page.index("<h2>groups</h2>")
    shown = page[incidents_at : page.index("<h2>groups</h2>")]
    assert "broker_restart</b>" in shown and "deployment_wave</b>" in shown
