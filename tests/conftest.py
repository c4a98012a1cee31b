"""Shared fixtures: one config, one SparkSession and one embedded Kafka broker per test run (they are slow)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pipelines.config import DEFAULT_CONF_PATH, RadarConfig, load_config

SELECTED_MODULES = pytest.StashKey[set[str]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The modules with selected tests: only their concurrent recordings start."""
    modules = (getattr(item, "module", None) for item in items)
    config.stash[SELECTED_MODULES] = {module.__name__ for module in modules if module is not None}


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


@pytest.fixture(scope="session")
def concurrent_recordings(
    request: pytest.FixtureRequest,
    kafka_broker: object,
    radar_config: RadarConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[object]:
    """The live recordings that wait on Kafka's clocks, started together when the first is needed
    (`tests.pipelines.concurrent_recordings`)."""
    from tests.pipelines.concurrent_recordings import started_recordings

    yield from started_recordings(
        request.config.stash.get(SELECTED_MODULES, set()),
        kafka_broker.bootstrap_servers,  # type: ignore[attr-defined]
        kafka_broker.log_file,  # type: ignore[attr-defined]
        radar_config,
        tmp_path_factory,
    )
