"""`radar groups`: one line per group, worst first, the same rows from the tables' files (no JVM) as from Spark."""

from __future__ import annotations

from pyspark.sql import SparkSession

from rebalance_radar.pipelines.cli.detections_view import detections_location, load_local_detections
from rebalance_radar.pipelines.cli.groups_view import groups_summary, load_groups, local_sources, spark_sources
from rebalance_radar.pipelines.config import RadarConfig
from tests.pipelines.incident_tables import BILLING, ORDERS, PAYMENTS, IncidentTables
from tests.pipelines.radar_run_process import radar_without_a_jvm


def test_groups_worst_first_the_same_without_a_jvm_as_with_spark(
    spark: SparkSession, radar_config: RadarConfig, incident_tables: IncidentTables
) -> None:
    config = radar_config.with_data_dir(incident_tables.data_dir)
    sources = local_sources(config)
    assert sources is not None, "the tables radar writes are read from their files"
    local = load_groups(sources)
    assert load_groups(spark_sources(spark, config)) == local  # one SQL, either engine
    assert {ORDERS, BILLING, PAYMENTS} <= {g["group_id"] for g in local}
    counts = [g["open_incidents"] for g in local]
    assert counts == sorted(counts, reverse=True) and counts[0] >= 1, local
    worst = local[0]
    location = detections_location(config)
    assert location is not None
    still_open = load_local_detections(location, group=worst["group_id"], open_only=True) or []
    assert len(still_open) == worst["open_incidents"]
    assert worst["open_kinds"] == ", ".join(sorted({d["kind"] for d in still_open}))
    assert groups_summary(local).startswith(f"{len(local)} group(s): ")
    done = radar_without_a_jvm("groups", "--data-dir", str(incident_tables.data_dir))
    assert done.returncode == 0, done.stderr[-2000:]
    assert ORDERS in done.stdout and groups_summary(local) in done.stdout, done.stdout[-2000:]
