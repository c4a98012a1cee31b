"""The coordinator's group session timeouts reach every group's tracker (`pipelines.stages.broker_settings`): the
broker's `KafkaConfig values:` listing is an event of no group, so a replay reads it from `heartbeat_events` before
the detection starts, and a live run asks the cluster (DescribeConfigs of a broker, on the real embedded broker)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from rebalance_radar.emitters.cluster_probe import describe_group_session_timeouts
from rebalance_radar.emitters.kafka_settings import client_settings
from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.stages.broker_settings import (
    CONF_KEYS,
    FROM_BROKER_LOG,
    FROM_DESCRIBE_CONFIGS,
    BrokerGroupSettings,
    described_by_cluster,
    learnt_thresholds,
)
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, lane_run
from tests.pipelines.group_member import kip848_group_setting_its_session_timeout
from tests.pipelines.incident_tables import DumpedSilver
from tests.pipelines.ingest_support import create_topic
from tests.pipelines.radar_run_process import radar_command
from tests.transforms.detectors.silver_rows import BASE_MS
from tests.transforms.detectors.test_member_settings import G, broker_listing, kip848_member_fenced

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def expirations(data_dir: Path, spark: SparkSession) -> list[dict[str, Any]]:
    rows = spark.read.format("delta").load(str(data_dir / "tables" / "detections")).collect()
    return [r.asDict() for r in rows if r["group_id"] == G and r["kind"] == "heartbeat_expiration"]


@lane_run
def replay_a_broker_listing_before_the_groups_records(context: RecordingContext) -> Path:
    """The listing (10 s) a minute before the group's records, with no group id, as a broker prints it at start,
    replayed by `radar replay` in the suite's lane (`concurrent_recordings.lane_run`); returns the data dir."""
    tmp_path = context.tmp_path_factory.mktemp("broker-listing")
    s = DumpedSilver()
    s._telemetry(broker_listing(BASE_MS - 60_000, consumer_session_ms=10_000), BASE_MS - 60_000)
    kip848_member_fenced(s, BASE_MS)
    dump = s.write(tmp_path / "dump.jsonl")
    data_dir = tmp_path / "data"
    done = subprocess.run(
        radar_command("replay", "--input", str(dump), "--data-dir", str(data_dir)),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return data_dir


def test_a_replayed_broker_listing_gives_kip848_members_the_brokers_session_timeout(
    spark: SparkSession, concurrent_recordings: ConcurrentRecordings
) -> None:
    """The expiration says the broker's 10 s and where radar read it, not an assumed 45 s."""
    data_dir = concurrent_recordings.result(replay_a_broker_listing_before_the_groups_records, timeout_s=1200)
    (expiry,) = expirations(data_dir, spark)
    expected = f"its 10 s session timeout (the broker's group.consumer.session.timeout.ms, from {FROM_BROKER_LOG})"
    assert expected in expiry["summary"], expiry["summary"]
    assert "assumes" not in expiry["summary"]
    assert json.loads(expiry["evidence"]), "evidence on every row"
    # without the listing the same records say the timeout is assumed: tests/transforms/detectors/test_member_settings


@pytest.mark.kafka
def test_a_live_run_asks_the_cluster_for_its_group_session_timeouts(
    kafka_broker: Any, radar_config: RadarConfig, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """The embedded broker runs with conf/local.yml's `group.consumer.session.timeout.ms` (6 s); Kafka 4.x also has
    the streams groups' config, and a group may set its own (8 s here), which wins, also over radar's conf. A cluster
    that does not answer is one sentence, and no value."""
    settings = client_settings(kafka_broker.bootstrap_servers)
    group, topic = f"own-timeout-{uuid.uuid4().hex[:6]}", f"own-timeout-{uuid.uuid4().hex[:6]}"
    create_topic(kafka_broker.bootstrap_servers, topic, 1)
    with kip848_group_setting_its_session_timeout(settings, settings, group, topic, 8_000):
        found = describe_group_session_timeouts(settings, 15)
        learnt = learnt_thresholds(spark, radar_config, settings)
        conf = radar_config.model_copy(update={"detect": radar_config.detect.with_thresholds(**{CONF_KEYS[0]: 15_000})})
        learnt_beside_conf = learnt_thresholds(spark, conf, settings)
    consumer_ms = radar_config.broker.group_consumer_session_timeout_ms
    assert found.broker["group.consumer.session.timeout.ms"] == consumer_ms
    assert found.broker.get("group.streams.session.timeout.ms", 45_000) > 0
    assert found.groups[group] == {"group.consumer.session.timeout.ms": 8_000}
    assert found.groups_unread is None
    assert learnt["consumer_group_session_timeout_ms"] == consumer_ms
    assert learnt["group_session_timeouts_from"] == FROM_DESCRIBE_CONFIGS
    assert (group, 8_000, None) in learnt["group_session_timeout_overrides"]
    # the conf's broker value stands; when the cluster answered, for the groups' events of the run
    assert set(learnt_beside_conf) == {"group_session_timeout_overrides", "group_configs_read_at_ms"}
    assert BrokerGroupSettings.of(found.broker, FROM_DESCRIBE_CONFIGS) == BrokerGroupSettings(
        consumer_ms, found.broker.get("group.streams.session.timeout.ms"), FROM_DESCRIBE_CONFIGS
    )
    capsys.readouterr()
    assert described_by_cluster(client_settings("127.0.0.1:9"), 2) is None
    said = capsys.readouterr().err
    assert said.startswith("radar: the cluster did not say its group session timeouts (no answer within 2 s)"), said
    assert "Traceback" not in said
