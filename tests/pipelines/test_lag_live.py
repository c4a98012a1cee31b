"""Lag live on the embedded broker: radar's end-offset poller (`emitters.end_offsets`, settings from the one
builder) publishes `radar.end_offsets/1` every second beside the shipped broker log and the clock, while real
confluent-kafka consumers work a growing topic. One stops committing (and stays in its group): `lag_stalled`. One
group rebalances for 20 s under load (its first member hangs 20 s in its revocation while a second joins): its
partitions are `rebalancing` for that pause, never stalled. The detection query reads `__consumer_offsets` and the
telemetry topic as `radar run` does and writes `group_lag` and the detections.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from rebalance_radar.emitters.end_offsets import EndOffsetsPoller
from rebalance_radar.emitters.kafka_settings import client_settings
from rebalance_radar.emitters.log_shipper import start_shipper
from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.local.scenarios import MemberProcess
from rebalance_radar.pipelines.stages.clock import ClockTickEmitter
from rebalance_radar.pipelines.stages.detect import DetectStage, KafkaDetectorSources
from rebalance_radar.pipelines.stages.sources import kafka_stream
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import DETECTIONS, GROUP_LAG, REBALANCES, LagStatus
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, concurrent_recording
from tests.pipelines.group_member import create_topics
from tests.pipelines.ingest_support import isolated_config

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.slow, pytest.mark.lag]

# The stopping consumer commits for 8 s from its first commit (a window of ~8 of Burrow's 1 s slots), then never
# again while its topic grows (the rest of the recording, ~35 s): Burrow's STOP once the 10 end offsets of its window
# have passed the last commit.
REBALANCE_S = 20.0  # the rebalancing group's first member hangs this long in its revocation
STEADY_S = 10.0  # the rebalancing group's first member alone before the second joins


@dataclass
class LagRecording:
    telemetry_topic: str
    groups: dict[str, str]  # lane -> group id
    moments: dict[str, int] = field(default_factory=dict)
    group_lag: list[dict[str, Any]] = field(default_factory=list)
    detections: list[dict[str, Any]] = field(default_factory=list)
    rebalances: list[dict[str, Any]] = field(default_factory=list)


def now_ms() -> int:
    return int(time.time() * 1000)


def produce_until(bootstrap: str, topics: list[str], stop: threading.Event) -> None:
    """20 records a second to each topic (round-robin over partitions) until `stop`: the topics keep growing."""
    producer = Producer({**client_settings(bootstrap), "linger.ms": 5})
    n = 0
    while not stop.wait(0.05):
        for topic in topics:
            producer.produce(topic, f"record-{n}".encode())
        producer.poll(0)
        n += 1
    producer.flush(10)


def start_consumer(out_dir: Path, name: str, bootstrap: str, group: str, topic: str, *extra: str) -> MemberProcess:
    """One `tests.pipelines.lag_consumer` process; its JSON lines go to `<out_dir>/<name>.jsonl`."""
    command = [
        sys.executable, "-m", "tests.pipelines.lag_consumer", "--bootstrap", bootstrap, "--group", group,
        "--topic", topic, "--client-id", name, *extra,
    ]  # fmt: skip
    return MemberProcess(command, out_dir / f"{name}.jsonl")


@concurrent_recording
def record_lag(context: RecordingContext) -> LagRecording:
    """Both lanes at once; the poller stops before any consumer leaves (a clean leave is a rebalance too)."""
    bootstrap = context.bootstrap
    suffix = time.time_ns()
    telemetry, stop_topic, rebalance_topic = (f"telemetry-lag-{suffix}", f"lag-stop-{suffix}", f"lag-reb-{suffix}")
    create_topics(bootstrap, {telemetry: 1, stop_topic: 1, rebalance_topic: 2})
    result = LagRecording(telemetry, {"stop": f"lag-stop-{suffix}", "rebalance": f"lag-rebalance-{suffix}"})
    shipper = start_shipper(context.log_file, bootstrap, telemetry, from_start=False)
    clock = ClockTickEmitter(client_settings(bootstrap), telemetry, interval_ms=1000, emitter="radar-run@test-lag")
    poller = EndOffsetsPoller(client_settings(bootstrap), telemetry, interval_s=1.0, groups=result.groups.values())
    out_dir = context.tmp_path_factory.mktemp("lag-live")
    producing = threading.Event()
    producer = threading.Thread(target=produce_until, args=(bootstrap, [stop_topic, rebalance_topic], producing))
    members: list[MemberProcess] = []
    clock.start()
    poller.start()
    try:
        producer.start()
        stops, rebalances = result.groups["stop"], result.groups["rebalance"]
        members.append(start_consumer(out_dir, "stopping", bootstrap, stops, stop_topic, "--commit-for-s", "8"))
        members[-1].wait_for("committed", 60)  # its 8 s of commits count from here: a slow join eats none of them
        hang = ("--hang-revoke-s", str(REBALANCE_S))
        members.append(start_consumer(out_dir, "first", bootstrap, rebalances, rebalance_topic, *hang))
        members[-1].wait_for("committed", 60)
        time.sleep(STEADY_S)  # the scenario: the first member alone, steady, before the second joins
        result.moments["second_joins"] = now_ms()
        members.append(start_consumer(out_dir, "second", bootstrap, rebalances, rebalance_topic))
        members[-1].wait_for("committed", REBALANCE_S + 40)  # only once the first has rejoined
        time.sleep(10)  # both at work after the rebalance
        result.moments["recording_end"] = now_ms()
    finally:
        poller.stop()  # before any consumer leaves: a clean leave is a rebalance too
        for member in members:
            member.stop()
        producing.set()
        producer.join(30)
        time.sleep(3)  # the clock carries event time past the last poll (the detection's lateness)
        clock.stop()
        shipper.stop()
    return result


def detect(spark: Any, radar_config: RadarConfig, data_dir: Path, bootstrap: str, result: LagRecording) -> None:
    kafka = radar_config.kafka.model_copy(update={"telemetry_topics": (result.telemetry_topic,)})
    config = isolated_config(radar_config, data_dir).model_copy(update={"kafka": kafka})
    sources = KafkaDetectorSources(
        kafka_stream(spark, config, [config.kafka.offsets_topic], bootstrap),
        kafka_stream(spark, config, [result.telemetry_topic], bootstrap),
    )
    with DetectStage(spark, config, checkpoint_name="lag-live", available_now=True, kafka=sources) as detection:
        for query in detection.queries:
            query.awaitTermination(900)
        detection.queries.raise_failures()
    catalog = TableCatalog(config)
    ours = set(result.groups.values())
    for name, rows in ((GROUP_LAG, result.group_lag), (DETECTIONS, result.detections), (REBALANCES, result.rebalances)):
        rows.extend(r.asDict() for r in spark.table(catalog.name(name)).collect() if r["group_id"] in ours)


@pytest.fixture(scope="module")
def recording(
    concurrent_recordings: ConcurrentRecordings,
    kafka_broker: Any,
    spark: Any,
    radar_config: RadarConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> LagRecording:
    result: LagRecording = concurrent_recordings.result(record_lag)
    detect(spark, radar_config, tmp_path_factory.mktemp("lag-live-data"), kafka_broker.bootstrap_servers, result)
    return result


def test_a_consumer_that_stops_committing_while_its_topic_grows_is_lag_stalled(recording: LagRecording) -> None:
    group = recording.groups["stop"]
    stalled = [d for d in recording.detections if d["group_id"] == group and d["kind"] == "lag_stalled"]
    assert len(stalled) == 1, recording.detections
    assert stalled[0]["partition"] == 0 and "STOP" in stalled[0]["summary"]
    rows = sorted((r for r in recording.group_lag if r["group_id"] == group), key=lambda r: r["measured_at"])
    assert rows and rows[-1]["lag_status"] == LagStatus.STOP and rows[-1]["lag"] > 0
    assert rows[-1]["lag"] == rows[-1]["end_offset"] - rows[-1]["committed_offset"] == rows[-1]["group_total_lag"]


def test_a_group_that_rebalances_for_20_s_under_load_is_rebalancing_never_stalled(recording: LagRecording) -> None:
    group = recording.groups["rebalance"]
    ours = [d for d in recording.detections if d["group_id"] == group and d["kind"] in ("lag_stalled", "lag_growing")]
    assert ours == []
    long = [r for r in recording.rebalances if r["duration_ms"] is not None and r["duration_ms"] >= 15_000]
    assert long, recording.rebalances  # the scenario did hold a rebalance open
    paused = [r for r in recording.group_lag if r["group_id"] == group and r["lag_status"] == LagStatus.REBALANCING]
    assert paused, "no poll saw the rebalance's pause: the scenario did not test what it claims"
    assert {r["rebalance_id"] for r in paused} <= {r["rebalance_id"] for r in recording.rebalances}
