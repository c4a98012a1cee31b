"""`radar report` without Kafka: the page drawn from gold rows opens in headless Chromium with no console error and
its charts drawn, and a data dir without gold tables says so in a sentence."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.cli.report import (
    NO_ALERTS_TABLE,
    ReportData,
    load_report_data,
    render_report,
    vega_embed_javascript,
    write_report,
)
from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import DETECTIONS, GROUP_HEALTH, REBALANCES
from tests.pipelines.headless_browser import visit
from tests.pipelines.incident_tables import IncidentTables
from tests.pipelines.ingest_support import isolated_config

CHARTS_DRAWN = "document.querySelectorAll('.chart canvas, .chart svg.marks').length"
CHART_SLOTS = "document.querySelectorAll('.chart').length"


def non_white_share(png: bytes) -> float:
    """Share of pixels that are not (near) white: a blank page is ~0."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    histogram = image.histogram()
    return 1 - sum(histogram[245:]) / sum(histogram)


def gold_rows() -> ReportData:
    """Two groups as the detectors would write them: one incident-ridden, one healthy."""
    t0 = datetime(2026, 11, 23, 12, 0, 0)

    def rebalance(group: str, gen: int, at_s: int, cause: str, members: int, stable: bool = True) -> dict[str, Any]:
        started = t0 + timedelta(seconds=at_s)
        return {
            "group_id": group,
            "generation": gen if stable else None,
            "from_generation": gen - 1,
            "started_at": started,
            "stabilized_at": started + timedelta(seconds=2) if stable else None,
            "duration_ms": 2000 if stable else None,
            "members_after": members,
            "cause": cause,
            "cause_detail": f"{cause} reason",
            "joined": ["m1"],
            "left": [],
            "expired": [],
            "leader": "m1",
        }

    rebalances = (
        rebalance("billing", 1, 0, "member_joined", 1),
        rebalance("billing", 2, 10, "member_joined", 2),
        rebalance("billing", 3, 25, "heartbeat_expiration", 1),
        rebalance("billing", 4, 40, "failed_previous", 1, stable=False),
        rebalance("orders", 1, 0, "member_joined", 1),
        rebalance("orders", 2, 5, "member_joined", 2),
    )
    evidence = json.dumps([{"table": "heartbeat_events", "topic": "radar.telemetry", "partition": 0, "offset": 7}])
    detections = tuple(
        {
            "group_id": "billing",
            "detection_id": f"d{i}",
            "kind": kind,
            "severity": severity,
            "status": status,
            "generation": 2,
            "member_id": "billing-a-1",
            "first_seen": t0 + timedelta(seconds=20 + i),
            "last_seen": t0 + timedelta(seconds=30 + i),
            "detected_at": t0 + timedelta(seconds=24 + i),
            "resolved_at": None,
            "summary": f"{kind} of billing-a-1",
            "evidence": evidence,
        }
        for i, (kind, severity, status) in enumerate(
            [("heartbeat_expiration", "critical", "open"), ("zombie_commit", "critical", "resolved")]
        )
    )
    health = (
        {"group_id": "billing", "group_protocol": "classic", "state": "Stable", "generation": 3, "members": 1,
         "open_detections": 1, "rebalances_1h": 3},
        {"group_id": "orders", "group_protocol": "classic", "state": "Stable", "generation": 2, "members": 2,
         "open_detections": 0, "rebalances_1h": 2},
    )  # fmt: skip
    return ReportData(rebalances, detections, health, None)


@pytest.fixture(scope="module")
def javascript() -> str:
    return vega_embed_javascript()


def test_report_lists_groups_worst_first_and_says_when_alerts_are_absent(javascript: str) -> None:
    page = render_report(gold_rows(), javascript, title="t", generated_at=datetime.now(UTC))
    assert page.index("<h2>billing</h2>") < page.index("<h2>orders</h2>")  # open detections first
    assert NO_ALERTS_TABLE in page
    assert "heartbeat_expiration of billing-a-1" in page and "&quot;heartbeat_events&quot;" in page  # evidence
    assert "cdn.jsdelivr" not in page and "https://" not in page.split("<script", 2)[2][:2000]  # offline


def test_report_renders_in_headless_chromium(tmp_path: Path, javascript: str) -> None:
    out = tmp_path / "report.html"
    out.write_text(render_report(gold_rows(), javascript, title="t", generated_at=datetime.now(UTC)))
    seen = visit(out, evaluate=f"[{CHARTS_DRAWN}, {CHART_SLOTS}]")
    assert seen.errors == ()
    drawn, slots = seen.evaluated
    assert slots == 3 and drawn >= slots  # billing: a timeline and its detections; orders: a timeline
    assert non_white_share(seen.screenshot_png) > 0.02


@pytest.mark.spark
def test_a_data_dir_without_gold_tables_is_said_in_the_page(spark: Any, radar_config: Any, tmp_path: Path) -> None:
    config = isolated_config(radar_config, tmp_path / "empty")
    out = tmp_path / "report.html"
    assert write_report(spark, config, out) is None
    assert "no gold tables in this data dir" in out.read_text()


def test_a_local_data_dir_is_reported_from_its_files_with_the_rows_spark_reads(
    spark: SparkSession, radar_config: RadarConfig, incident_tables: IncidentTables
) -> None:
    """`radar report` on a local data dir starts no JVM: the gold tables come from their files, row for row what
    Spark reads (timestamps naive UTC as Spark collects them)."""

    def no_spark() -> SparkSession:
        raise AssertionError("a local data dir's report asked for Spark")

    config = radar_config.with_data_dir(incident_tables.data_dir)
    data = load_report_data(no_spark, config)
    assert data is not None and data.detections and data.rebalances
    for rows, schema in ((data.rebalances, REBALANCES), (data.detections, DETECTIONS), (data.health, GROUP_HEALTH)):
        location = TableCatalog(config).location(schema)
        by_spark = [r.asDict(recursive=True) for r in spark.read.format("delta").load(str(location)).collect()]
        key = schema.column_names[:3]
        assert sorted(rows, key=lambda r: [str(r[k]) for k in key]) == sorted(
            by_spark, key=lambda r: [str(r[k]) for k in key]
        ), schema.name
