"""`radar run`, Ctrl-C, `radar run`: every start made a new, empty embedded broker while the stream checkpoint of
the old one was reused ("offset was changed from 132 to 5 ... Some data may have been lost"). The broker now keeps
its storage and cluster id across processes, and a checkpoint belongs to one Kafka cluster id."""

from __future__ import annotations

import io
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.config import ConfigError, RadarConfig
from rebalance_radar.pipelines.local.broker import EmbeddedKafka
from rebalance_radar.pipelines.stages.ingest import kafka_checkpoint_name
from rebalance_radar.pipelines.stages.sources import kafka_cluster_id
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, lane_run
from tests.pipelines.ingest_support import create_topic, end_offsets, isolated_config

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def test_embedded_broker_keeps_records_and_cluster_id_and_a_new_cluster_is_refused_under_the_old_name(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    config = isolated_config(radar_config, tmp_path / "data")
    with EmbeddedKafka(config.broker, config.data_dir, spark=config.spark, keep_storage=True) as broker:
        first_id = kafka_cluster_id(spark, config, broker.bootstrap_servers)
        assert first_id == broker.cluster_id
        create_topic(broker.bootstrap_servers, "kept", 1)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for n in range(5):
            producer.produce("kept", value=b"%d" % n)
        assert producer.flush(30) == 0
    first_checkpoint = kafka_checkpoint_name(config, first_id)
    (config.checkpoint_dir / first_checkpoint).mkdir(parents=True)

    # a new process over the same data dir: same storage, same cluster id, the records still there
    with EmbeddedKafka(config.broker, config.data_dir, spark=config.spark, keep_storage=True) as again:
        assert kafka_cluster_id(spark, config, again.bootstrap_servers) == first_id
        assert end_offsets(again.bootstrap_servers, ["kept"]) == {("kept", 0): 5}
    assert kafka_checkpoint_name(config, first_id) == first_checkpoint

    # the broker's storage wiped under the same data dir: another cluster, whose offsets start again; under the old
    # logical name its records would collide with the old ones' record keys, so it is refused in a sentence
    shutil.rmtree(config.data_dir / "broker" / "data")
    with EmbeddedKafka(config.broker, config.data_dir, spark=config.spark, keep_storage=True) as wiped:
        second_id = kafka_cluster_id(spark, config, wiped.bootstrap_servers)
    assert second_id != first_id
    with pytest.raises(ConfigError, match=f"is now Kafka cluster {second_id} \\(before: {first_id}\\).*new name"):
        kafka_checkpoint_name(config, second_id)
    renamed = config.model_copy(update={"cluster": "local-rebuilt"})
    assert kafka_checkpoint_name(renamed, second_id) == f"kafka-local-rebuilt-{second_id}"


@dataclass(frozen=True)
class KilledAndBack:
    """What the lane saw (`kill_the_broker_and_start_it_again`): the addresses before and after, what the old client
    still held after the restart, and the topic's end offsets then."""

    bootstrap_before: str
    bootstrap_after: str
    undelivered: int
    ends: dict[tuple[str, int], int]


@lane_run
def kill_the_broker_and_start_it_again(context: RecordingContext) -> KilledAndBack:
    """kill -9 of the broker, then a new one over the same data dir, in the suite's lane
    (`concurrent_recordings.lane_run`), with a producer of the old address across the outage."""
    config = isolated_config(context.config, context.tmp_path_factory.mktemp("killed-broker") / "data")
    first = EmbeddedKafka(config.broker, config.data_dir, spark=config.spark, keep_storage=True, progress=io.StringIO())
    first.start()
    try:
        bootstrap = first.bootstrap_servers
        create_topic(bootstrap, "survives", 1)
        producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 120_000})
        producer.produce("survives", value=b"before")
        assert producer.flush(30) == 0
        assert first._process is not None
        first._process.kill()  # SIGKILL: no clean shutdown, the broker's side of each connection lingers
        first._process.wait(30)
        producer.produce("survives", value=b"during the outage")
        producer.poll(1.0)
        again = EmbeddedKafka(
            config.broker, config.data_dir, spark=config.spark, keep_storage=True, progress=io.StringIO()
        )
        with again:
            undelivered = producer.flush(60)  # what the client of the old address still holds
            return KilledAndBack(bootstrap, again.bootstrap_servers, undelivered, end_offsets(bootstrap, ["survives"]))
    finally:
        first.stop()


@pytest.mark.slow
def test_a_killed_broker_comes_back_on_its_ports_and_the_same_clients_reconnect(
    concurrent_recordings: ConcurrentRecordings,
) -> None:
    """kill -9 of the broker leaves its connections in TIME_WAIT; the restart (a new radar process over the same
    data dir) binds the same ports anyway, so a client configured for the old address carries on."""
    seen: KilledAndBack = concurrent_recordings.result(kill_the_broker_and_start_it_again, timeout_s=1200)
    assert seen.bootstrap_after == seen.bootstrap_before
    assert seen.undelivered == 0  # the client of the old address delivered what it held through the outage
    assert seen.ends == {("survives", 0): 2}
