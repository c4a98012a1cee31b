"""Shared fixtures: one config, one SparkSession and one embedded Kafka broker per test run (they are slow)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pipelines.config import DEFAULT_CONF_PATH, RadarConfig, load_config


@pytest.fixture(scope="session")
def radar_config(tmp_path_factory: pytest.TempPathFactory) -> RadarConfig:
    """conf/local.yml with this environment's RADAR__* overrides, its data dir in a temporary folder."""
    return load_config(DEFAULT_CONF_PATH, env=os.environ).with_data_dir(tmp_path_factory.mktemp("radar"))


@pytest.fixture(scope="session")
def spark(radar_config: RadarConfig) -> Iterator[object]:
    """The run's only SparkSession. A missing connector jar fails the tests that need it (never a silent skip)."""
    from pipelines.session import build_spark_session

    session = build_spark_session(radar_config)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_broker(radar_config: RadarConfig) -> Iterator[object]:
    """The run's only embedded Kafka broker."""
    from pipelines.local.broker import EmbeddedKafka

    with EmbeddedKafka(radar_config.broker, radar_config.data_dir, spark=radar_config.spark) as broker:
        yield broker
