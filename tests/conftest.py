"""Shared fixtures: one config, one SparkSession and one embedded Kafka broker per test run (they are slow)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from rebalance_radar.pipelines.config import DEFAULT_CONF_PATH, RadarConfig, load_config

SELECTED_MODULES = pytest.StashKey[set[str]]()
JVM_FIXTURES = {"spark", "kafka_broker", "concurrent_recordings", "incident_tables"}

# Examples are not timed: the live recordings run beside the pure tests (`tests.pipelines.concurrent_recordings`),
# and a slowed example must not fail as "flaky" by hypothesis' 200 ms deadline.
settings.register_profile("radar", deadline=None)
settings.load_profile("radar")


def pytest_configure(config: pytest.Config) -> None:
    """The JVMs the run starts compile with C1 only (`tests.suite_jvm`)."""
    from tests.suite_jvm import use_quick_jvms

    use_quick_jvms(os.environ)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order, each group in the collection's: the modules whose tests start no JVM (beside the live
    recordings, which start with the first test), the other codec and transform modules, the modules that read a
    live recording that leaves members up until read (`concurrent_recording_read_early`), the rest, the tests that
    read another recording or a lane run (`concurrent_recordings.lane_run`: the recordings and the lane have had the
    rest's length to finish them); last the tests that measure the whole process, once the recordings' threads are
    done. Modules move whole, so a module's fixtures are set up once, except that a late module's tests that read
    nothing of the recordings or the lane run with the rest (its module fixtures then serve one group or the other)."""
    from tests.pipelines.concurrent_recordings import LANE, READ_EARLY, RECORDERS

    jvm_modules = {item.nodeid.split("::")[0] for item in items if _starts_a_jvm(item)}
    reading = {recorder.__module__ for recorder in READ_EARLY}
    in_lane = {recorder.__module__ for recorder in (*LANE, *RECORDERS)} - reading

    def place(item: pytest.Item) -> int:
        module = getattr(item, "module", None)
        if item.get_closest_marker("whole_process") is not None:
            return 5
        if item.nodeid.split("::")[0] not in jvm_modules:
            return 0
        if item.nodeid.startswith("tests/transforms/"):
            return 1
        if module is not None and module.__name__ in in_lane:
            return 4 if "concurrent_recordings" in getattr(item, "fixturenames", ()) else 3
        return 2 if module is not None and module.__name__ in reading else 3

    items.sort(key=place)  # stable
    for item in items:
        # the fast tier, `pytest -m "not slow"`, is the tests that start no JVM
        if _starts_a_jvm(item) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The modules with a selected test that reads a recording or a lane run (the `concurrent_recordings` fixture,
    directly or through a fixture of its module), once `-m` / `-k` have deselected theirs: only theirs start (a
    fast-tier run of a module whose slow tests read one starts none)."""
    readers = (item for item in session.items if "concurrent_recordings" in getattr(item, "fixturenames", ()))
    modules = (getattr(item, "module", None) for item in readers)
    session.config.stash[SELECTED_MODULES] = {module.__name__ for module in modules if module is not None}


def _starts_a_jvm(item: pytest.Item) -> bool:
    """Spark, the broker or a CLI subprocess: what the suite marks `spark`, `kafka`, `slow` or `cluster`, or asks for
    by fixture."""
    marked = {mark.name for mark in item.iter_markers()} & {"spark", "kafka", "slow", "cluster"}
    return bool(marked) or bool(set(getattr(item, "fixturenames", ())) & JVM_FIXTURES)


BROKER_START_CAP_S = 240.0  # a cap, not a wait: a broker that answers sooner is used at once


@pytest.fixture(scope="session")
def radar_config(tmp_path_factory: pytest.TempPathFactory) -> RadarConfig:
    """conf/local.yml with this environment's RADAR__* overrides, its data dir in a temporary folder. The suite's
    brokers may take up to `BROKER_START_CAP_S` to start: the recordings start several at once beside the session's
    JVM, and on a loaded CI host a broker registered just after the conf's 90 s."""
    from tests.suite_jvm import session_environ

    config = load_config(DEFAULT_CONF_PATH, env=session_environ(os.environ))
    config = config.with_data_dir(tmp_path_factory.mktemp("radar"))
    broker = config.broker.model_copy(
        update={"startup_timeout_s": max(config.broker.startup_timeout_s, BROKER_START_CAP_S)}
    )
    return config.model_copy(update={"broker": broker})


@pytest.fixture(scope="session")
def spark(radar_config: RadarConfig) -> Iterator[object]:
    """The run's only SparkSession. A missing connector jar fails the tests that need it (never a silent skip)."""
    from rebalance_radar.pipelines.runtime.session import build_spark_session

    session = build_spark_session(radar_config)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def broker_in_background(
    request: pytest.FixtureRequest, radar_config: RadarConfig, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[object]:
    """The run's only embedded Kafka broker and the live recordings on it, started in a thread of their own
    (`tests.pipelines.concurrent_recordings`)."""
    from tests.pipelines.concurrent_recordings import BrokerInBackground

    started = BrokerInBackground(radar_config, request.config.stash.get(SELECTED_MODULES, set()), tmp_path_factory)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture(scope="session", autouse=True)
def recordings_started_early(request: pytest.FixtureRequest) -> None:
    """When a module that reads a live recording is selected, the broker and the recordings start with the first
    test, so their waits on Kafka's clocks pass beside the tests that start no JVM."""
    from tests.pipelines.concurrent_recordings import registered_modules

    if registered_modules() & request.config.stash.get(SELECTED_MODULES, set()):
        request.getfixturevalue("broker_in_background")


@pytest.fixture(scope="session")
def kafka_broker(broker_in_background: object) -> object:
    """The run's only embedded Kafka broker."""
    return broker_in_background.broker()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def concurrent_recordings(broker_in_background: object) -> object:
    """The live recordings that wait on Kafka's clocks, started together (`tests.pipelines.concurrent_recordings`)."""
    return broker_in_background.recordings()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def incident_tables(spark: object, tmp_path_factory: pytest.TempPathFactory) -> object:
    """The incident dump replayed by `radar replay` in the run's local session (`tests.pipelines.incident_tables`)."""
    from tests.pipelines.incident_tables import replay_incidents

    return replay_incidents(tmp_path_factory.mktemp("incidents"))
