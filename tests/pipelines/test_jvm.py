"""JVM artifacts: listing, export, and the clear error when an offline jars dir lacks one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_radar.pipelines.config import REPO_ROOT, RadarConfig
from rebalance_radar.pipelines.runtime.jvm import (
    MANIFEST_NAME,
    MissingArtifactError,
    broker_artifacts,
    broker_classpath,
    resolve_artifact_set,
    run_jars,
    spark_connector_artifacts,
)


def with_spark(config: RadarConfig, **changes: object) -> RadarConfig:
    return config.model_copy(update={"spark": config.spark.model_copy(update=changes)})


def test_declared_coordinates_follow_installed_packages(radar_config: RadarConfig) -> None:
    import importlib.metadata

    pyspark = importlib.metadata.version("pyspark")
    delta = importlib.metadata.version("delta-spark")
    default = with_spark(
        radar_config, kafka_connector_version=None, kafka_token_provider_version=None, delta_version=None
    )
    roots = spark_connector_artifacts(default).roots
    assert [root.coordinates for root in roots] == [
        f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark}",
        f"org.apache.spark:spark-token-provider-kafka-0-10_2.13:{pyspark}",
        f"io.delta:delta-spark_{'.'.join(pyspark.split('.')[:2])}_2.13:{delta}",
    ]
    # the connector leaves its token provider to the separately pinned root
    assert roots[0].exclusions == ("org.apache.spark:spark-token-provider-kafka-0-10_2.13",)
    pinned = with_spark(radar_config, kafka_connector_version="4.1.3", kafka_token_provider_version="4.0.0")
    assert [r.version for r in spark_connector_artifacts(pinned).roots][:2] == ["4.1.3", "4.0.0"]
    broker = broker_artifacts(radar_config.broker)
    assert broker.roots[0].coordinates == f"org.apache.kafka:kafka_2.13:{radar_config.broker.version}"


@pytest.mark.kafka
def test_run_jars_lists_and_exports_the_broker(
    radar_config: RadarConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    classpath = broker_classpath(radar_config)  # resolves (first time) or reads the cache
    assert any(path.name.startswith("kafka_2.13-") for path in classpath)
    run_jars(radar_config, tmp_path)  # the spark set may be unavailable here; the broker set must export
    listing = capsys.readouterr().out
    assert f"org.apache.kafka:kafka_2.13:{radar_config.broker.version}" in listing
    folder = tmp_path / broker_artifacts(radar_config.broker).name
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert len(manifest["jars"]) == len(classpath)
    assert all((folder / entry["file"]).stat().st_size == entry["size"] for entry in manifest["jars"])
    # The export is a valid offline jars dir: the same classpath, no network.
    offline = with_spark(radar_config, jars_dir=tmp_path)
    assert [path.name for path in broker_classpath(offline)] == [path.name for path in classpath]


def test_empty_jars_dir_names_the_missing_coordinates(radar_config: RadarConfig, tmp_path: Path) -> None:
    offline = with_spark(radar_config, jars_dir=tmp_path)
    artifact_set = broker_artifacts(offline.broker)
    with pytest.raises(MissingArtifactError) as caught:
        resolve_artifact_set(artifact_set, offline)
    message = str(caught.value)
    assert f"org.apache.kafka:kafka_2.13:{offline.broker.version}" in message
    assert "radar jars --export" in message and "--jars-dir" in message
    assert run_jars(offline, None) == 1


@pytest.mark.kafka
def test_two_threads_asking_for_one_set_resolve_it_once(radar_config: RadarConfig, tmp_path: Path) -> None:
    """A broker started in the background beside another (the suite's recordings) asks for the set the other asks
    for: Maven runs once, and neither replaces the folder the other's JVM reads."""
    from concurrent.futures import ThreadPoolExecutor

    from rebalance_radar.pipelines.runtime.jvm import ArtifactSet, MavenArtifact

    config = with_spark(radar_config, jars_cache_dir=tmp_path / "cache")
    tiny = ArtifactSet("tiny", "the test's", (MavenArtifact("org.slf4j", "slf4j-api", "1.7.36"),))
    with ThreadPoolExecutor(max_workers=2) as pool:
        first, second = pool.map(lambda _: resolve_artifact_set(tiny, config), range(2))
    assert sorted([first.source, second.source]) == ["cache", "maven"]
    assert first.paths == second.paths and all(path.is_file() for path in first.paths)
    assert [p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")] == [tiny.cache_key]


def test_two_processes_asking_for_one_set_on_a_cold_cache_resolve_it_once(
    radar_config: RadarConfig, tmp_path: Path
) -> None:
    """Two radar processes starting at once on a cold jar cache (a run and a `radar sql`): Maven runs in one, the
    other waits for it (a lock beside the cache) and reads its folder; neither replaces what the other reads."""
    script = (
        "import sys; from pathlib import Path; from rebalance_radar.pipelines.config import load_config; "
        "from rebalance_radar.pipelines.runtime.jvm import ArtifactSet, MavenArtifact, resolve_artifact_set; "
        "config = load_config('conf/local.yml'); "
        "spark = config.spark.model_copy(update={'jars_cache_dir': Path(sys.argv[1])}); "
        "config = config.model_copy(update={'spark': spark}); "
        "tiny = ArtifactSet('tiny', 'the test', (MavenArtifact('org.slf4j', 'slf4j-api', '1.7.36'),)); "
        "print(resolve_artifact_set(tiny, config).source)"
    )
    cache = tmp_path / "cache"
    processes = [
        subprocess.Popen([sys.executable, "-c", script, str(cache)], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    sources = sorted(process.communicate(timeout=300)[0].strip() for process in processes)
    assert [process.returncode for process in processes] == [0, 0]
    assert sources == ["cache", "maven"]


def test_the_spark_jars_for_spark_submit_are_one_comma_separated_line(capsys: pytest.CaptureFixture[str]) -> None:
    """`spark-submit --jars "$(radar jars --spark-jars)"`: the connector jars, existing files, nothing else printed."""
    from rebalance_radar.pipelines.cli import main

    assert main(["jars", "--spark-jars"]) == 0
    printed = capsys.readouterr().out.strip()
    jars = printed.split(",")
    assert len(printed.splitlines()) == 1 and all(Path(jar).is_file() for jar in jars)
    names = " ".join(Path(jar).name for jar in jars)
    assert "spark-sql-kafka-0-10" in names and "delta-spark" in names
