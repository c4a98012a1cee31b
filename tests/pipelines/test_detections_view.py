"""`radar detections` rendering: newest first as loaded, every shown column, a summary a human can read."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import SparkSession
from rich.console import Console

from rebalance_radar.pipelines.cli.detections_view import (
    detections_location,
    detections_summary,
    load_detections,
    load_local_detections,
    render_detections,
)
from rebalance_radar.pipelines.config import RadarConfig
from tests.pipelines.incident_tables import IncidentTables
from tests.pipelines.radar_run_process import radar_without_a_jvm


def _detection(kind: str, status: str, group: str, second: int) -> dict[str, object]:
    return {
        "cluster": "local",
        "detection_id": f"{kind}-{second}",
        "kind": kind,
        "severity": "critical" if kind == "zombie_commit" else "warning",
        "group_id": group,
        "generation": 7,
        "member_id": f"member-{second}",
        "detected_at": datetime(2026, 11, 23, 9, 0, second),
        "status": status,
        "summary": f"member member-{second} of group {group} did something",
    }


def test_table_and_summary() -> None:
    rows = [
        _detection("zombie_commit", "open", "orders", 30),
        _detection("heartbeat_expiration", "resolved", "orders", 20),
        _detection("heartbeat_expiration", "open", "payments", 10),
    ]
    console = Console(record=True, width=200, color_system=None)
    render_detections(rows, console)
    text = console.export_text()
    lines = text.splitlines()
    order = [next(i for i, line in enumerate(lines) if f"member-{s}" in line) for s in (30, 20, 10)]
    assert order == sorted(order)
    assert "2026-11-23 09:00:30" in text and "zombie_commit" in text and "payments" in text
    assert lines[-1] == "3 detections (2 open) in 2 group(s): heartbeat_expiration 2, zombie_commit 1"


def test_nothing_found_says_so() -> None:
    console = Console(record=True, width=120, color_system=None)
    render_detections([], console)
    assert console.export_text().strip() == "no detections"
    assert detections_summary([_detection("offset_regression", "open", "g", 1)]).startswith("1 detection (1 open)")


def test_a_local_data_dir_is_read_without_a_jvm_as_spark_reads_it(
    spark: SparkSession, radar_config: RadarConfig, incident_tables: IncidentTables
) -> None:
    """deltalake and DuckDB give the rows, order and filters Spark gives; `radar detections` starts no JVM (with
    JAVA_HOME pointing nowhere, Spark could not start one)."""
    config = radar_config.with_data_dir(incident_tables.data_dir)
    location = detections_location(config)
    assert location is not None
    for group, open_only in ((None, False), ("orders", False), (None, True)):
        local = load_local_detections(location, group=group, open_only=open_only)
        assert local is not None, "the tables radar writes are read from their files"
        by_spark = load_detections(spark, config, group=group, open_only=open_only)
        assert [r["detection_id"] for r in local] == [r["detection_id"] for r in by_spark]
        assert [r["status"] for r in local] == [r["status"] for r in by_spark]
    assert len(load_local_detections(location) or []) >= 3
    done = radar_without_a_jvm("detections", "--data-dir", str(incident_tables.data_dir))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "zombie_commit" in done.stdout and "detections (" in done.stdout, done.stdout[-2000:]
