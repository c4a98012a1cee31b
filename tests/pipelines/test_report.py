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


def gold_rows(t0: datetime = datetime(2026, 11, 23, 12, 0, 0)) -> ReportData:
    """Two groups as the detectors would write them: one incident-ridden, one healthy (times naive UTC)."""

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
    assert "heartbeat_expiration of billing-a-1" in page and "heartbeat_events radar.telemetry/0@7" in page  # evidence
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


AXIS_LABELS = "Array.from(document.querySelectorAll('.chart .role-axis-label text')).map(t => t.textContent)"


def test_time_axes_are_24_hour_utc_whatever_the_browsers_zone(
    tmp_path: Path, javascript: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An incident at 19:03 UTC reads 19:03 on the axes, not 07:03 (a 12-hour clock) nor the browser's local time."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30: a local-time axis would say 00:33
    out = tmp_path / "report.html"
    out.write_text(render_report(gold_rows(datetime(2026, 11, 23, 19, 3, 0)), javascript, title="t",
                                 generated_at=datetime.now(UTC)))  # fmt: skip
    seen = visit(out, evaluate=AXIS_LABELS)
    assert seen.errors == ()
    times = [label for label in seen.evaluated if ":" in label]
    assert times and all(label.startswith("19:0") for label in times), seen.evaluated
    assert not any("AM" in label or "PM" in label for label in seen.evaluated)


def test_the_monitors_own_groups_are_left_out_unless_asked_for() -> None:
    from rebalance_radar.pipelines.cli.report import users_rows
    from rebalance_radar.pipelines.config import OWN_GROUP_PREFIX, load_config

    config = load_config()
    rows = ({"group_id": "orders"}, {"group_id": f"{OWN_GROUP_PREFIX}-1a2b-executor"}, {"group_id": None})
    assert users_rows(rows, config) == ({"group_id": "orders"}, {"group_id": None})
    detect = config.detect.model_copy(update={"include_own_groups": True})
    assert users_rows(rows, config.model_copy(update={"detect": detect})) == rows


def test_every_detection_shows_its_source_records(incident_tables: IncidentTables, tmp_path: Path) -> None:
    """Each evidence entry of the incident tables' detections is found in its table and shown with what the record
    says; `radar report` writes the page without a JVM."""
    from rebalance_radar.pipelines.cli.report import evidence_refs, source_key
    from tests.pipelines.radar_run_process import radar_without_a_jvm

    def no_spark() -> SparkSession:
        raise AssertionError("a local data dir's report asked for Spark")

    config = load_config_for(incident_tables)
    data = load_report_data(no_spark, config)
    assert data is not None and data.detections and data.sources is not None
    for detection in data.detections:
        refs = evidence_refs(detection)
        assert refs, detection["kind"]
        for ref in refs:
            key = source_key(ref)
            assert key in data.sources, (detection["kind"], ref)
            assert all(row["group_id"] in (detection["group_id"], None) for row in data.sources[key])
    out = tmp_path / "report.html"
    done = radar_without_a_jvm("report", "--out", str(out), "--data-dir", str(incident_tables.data_dir))
    assert done.returncode == 0, done.stderr[-2000:]
    page = out.read_text()
    assert page.count("<summary>evidence: ") == len(data.detections)
    assert "the detector named no source record" not in page
    assert "heartbeat_events radar.telemetry/0@" in page and "member_id=rdkafka-orders-2-bbb" in page


def load_config_for(tables: IncidentTables) -> RadarConfig:
    from rebalance_radar.pipelines.config import load_config

    return load_config(tables.conf).with_data_dir(tables.data_dir)
