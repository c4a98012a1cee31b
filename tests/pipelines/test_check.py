"""The checks on real Delta tables, real Great Expectations and a real HTTP endpoint: an alert opens, updates and
resolves as the detection under it does; a failing webhook is retried and never loses the alert row; the other
rules find the group or cluster that breaks them; `radar check` exit codes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rebalance_radar.pipelines.checks.check import CheckView, build_check_view, ingest_quality_row, rules_of, run_checks
from rebalance_radar.pipelines.cli import main
from rebalance_radar.pipelines.config import DEFAULT_CONF_PATH, CheckRuleConfig, ConfigError, RadarConfig, load_config
from rebalance_radar.pipelines.storage.tables import TableCatalog, ensure_tables
from rebalance_radar.transforms.schemas import (
    ALERTS,
    CLOCK_TICKS,
    DETECTIONS,
    GROUP_HEALTH,
    HEARTBEAT_EVENTS,
    OFFSET_COMMITS,
    QUARANTINE,
    AlertStatus,
    QuarantineStage,
    TableSchema,
)
from rebalance_radar.transforms.wire.errors import DecodeErrorKind
from tests.pipelines.radar_run_process import radar_without_a_jvm

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@dataclass
class Endpoint:
    """A local HTTP endpoint that records every POSTed JSON body and answers the scripted status codes in turn
    (200 once the script is used up)."""

    url: str
    statuses: list[int] = field(default_factory=list)
    received: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)

    def delivered(self, path: str) -> list[dict[str, Any]]:
        return [body for p, status, body in self.received if p == path and status == 200]


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint(url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                status = state.statuses.pop(0) if state.statuses else 200
                state.received.append((self.path, status, body))
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def _write(spark, config: RadarConfig, table: TableSchema, rows: Sequence[dict[str, Any]]) -> None:  # type: ignore[no-untyped-def]
    """Replace the table's rows by `rows` (columns not given are null)."""
    ensure_tables(spark, config, [table])
    data = [tuple({"cluster": config.cluster, **row}.get(name) for name in table.column_names) for row in rows]
    location = TableCatalog(config).location(table)
    spark.createDataFrame(data, table.ddl).write.format("delta").mode("overwrite").save(str(location))


def _detection(group: str, status: str, severity: str = "critical") -> dict[str, Any]:
    return {
        "detection_id": f"d-{group}",
        "kind": "zombie_commit",
        "severity": severity,
        "group_id": group,
        "first_seen": T0.replace(tzinfo=None),
        "status": status,
        "summary": f"zombie in {group}",
    }


def _alerts(spark, config: RadarConfig) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    location = TableCatalog(config).location(ALERTS)
    return [r.asDict() for r in spark.read.format("delta").load(str(location)).orderBy("first_seen").collect()]


def _alert_writes(config: RadarConfig) -> int:
    """MERGE commits in the alerts table's Delta log."""
    location = TableCatalog(config).location(ALERTS)
    assert location is not None
    commits = [json.loads(line) for path in (location / "_delta_log").glob("*.json") for line in path.open()]
    return sum(1 for action in commits if action.get("commitInfo", {}).get("operation") == "MERGE")


def _with_checks(config: RadarConfig, **checks: Any) -> RadarConfig:
    return config.model_copy(update={"checks": config.checks.model_copy(update=checks)})


@pytest.mark.spark
def test_an_alert_opens_updates_and_resolves_with_its_detection(
    spark,  # type: ignore[no-untyped-def]
    radar_config: RadarConfig,
    tmp_path: Path,
    endpoint: Endpoint,
) -> None:
    config = _with_checks(radar_config.with_data_dir(tmp_path), backoff_s=0.0)
    env = {"RADAR_WEBHOOK_URL": f"{endpoint.url}/hook", "RADAR_SLACK_WEBHOOK_URL": f"{endpoint.url}/slack"}
    _write(spark, config, DETECTIONS, [_detection("g1", "open"), _detection("g2", "resolved")])

    first = run_checks(spark, config, now=T0, env=env)
    assert first.failed_critical
    assert [a.group_id for a in first.opened] == ["g1"] and not first.updated and not first.resolved
    by_rule = {r.rule: r for r in first.results}
    assert by_rule["open_critical_detections"].failing == ("g1",)
    assert by_rule["monitor_lag"].status == "skipped"  # no clock_ticks table here
    (hook,) = endpoint.delivered("/hook")
    assert hook["event"] == "alert_opened" and hook["alert"]["group_id"] == "g1"
    assert hook["alert"]["rule"] == "open_critical_detections" and hook["alert"]["observed_value"] == 1.0
    (slack,) = endpoint.delivered("/slack")
    assert slack["text"].startswith("[CRITICAL] open_critical_detections on local/g1")
    (row,) = _alerts(spark, config)
    assert row["status"] == AlertStatus.OPEN and row["notified_at"] is not None
    assert row["alert_id"] == hook["alert"]["alert_id"]
    assert _alert_writes(config) == 1  # opened and notified in one MERGE, not one for each

    # still failing, worse: the same alert is updated, nobody is notified again
    _write(spark, config, DETECTIONS, [_detection("g1", "open"), {**_detection("g1", "open"), "detection_id": "x"}])
    second = run_checks(spark, config, now=T0 + timedelta(minutes=1), env=env)
    assert not second.opened and [a.observed_value for a in second.updated] == [2.0]
    assert len(endpoint.received) == 2
    (row,) = _alerts(spark, config)
    assert row["last_seen"] > row["first_seen"] and row["observed_value"] == 2.0

    # the detection resolves: the alert resolves, once, and that is notified
    _write(spark, config, DETECTIONS, [_detection("g1", "resolved")])
    third = run_checks(spark, config, now=T0 + timedelta(minutes=2), env=env)
    assert not third.failed_critical and [a.group_id for a in third.resolved] == ["g1"]
    assert [b["event"] for b in endpoint.delivered("/hook")] == ["alert_opened", "alert_resolved"]
    (row,) = _alerts(spark, config)
    assert row["status"] == AlertStatus.RESOLVED and row["resolved_at"] is not None and row["notified_at"]
    writes = _alert_writes(config)
    fourth = run_checks(spark, config, now=T0 + timedelta(minutes=3), env=env)
    assert not (fourth.opened or fourth.updated or fourth.resolved or fourth.notified)
    assert len(_alerts(spark, config)) == 1 and _alert_writes(config) == writes  # nothing changed: no write


@pytest.mark.spark
def test_a_failing_webhook_is_retried_and_the_alert_is_never_lost(
    spark,  # type: ignore[no-untyped-def]
    radar_config: RadarConfig,
    tmp_path: Path,
    endpoint: Endpoint,
) -> None:
    config = _with_checks(radar_config.with_data_dir(tmp_path), attempts=2, backoff_s=0.0, routes={"webhook": "info"})
    env = {"RADAR_WEBHOOK_URL": f"{endpoint.url}/hook"}
    _write(spark, config, DETECTIONS, [_detection("g1", "open")])
    endpoint.statuses = [500, 500, 500]

    first = run_checks(spark, config, now=T0, env=env)
    assert len(first.opened) == 1 and not first.notified
    assert first.undelivered == (
        f"alert {first.opened[0].alert_id} (open_critical_detections): webhook answered HTTP 500 after 2 attempt(s)",
    )
    assert endpoint.url not in " ".join(first.undelivered)  # the URL is a secret
    (row,) = _alerts(spark, config)
    assert row["status"] == AlertStatus.OPEN and row["notified_at"] is None

    second = run_checks(spark, config, now=T0 + timedelta(minutes=1), env=env)  # 500, then 200 on the retry
    assert [a.alert_id for a in second.notified] == [first.opened[0].alert_id] and not second.undelivered
    assert [status for _, status, _ in endpoint.received] == [500, 500, 500, 200]
    assert [b["alert"]["alert_id"] for b in endpoint.delivered("/hook")] == [first.opened[0].alert_id]
    (row,) = _alerts(spark, config)
    assert row["notified_at"] is not None and row["last_seen"] > row["first_seen"]


def _write_quality_tables(spark, config: RadarConfig) -> None:  # type: ignore[no-untyped-def]
    """Tables that break the ingest-quality, freshness and lag rules 30 minutes after T0."""
    naive = T0.replace(tzinfo=None)
    src = {"src_topic": "__consumer_offsets", "src_partition": 0}
    _write(spark, config, OFFSET_COMMITS, [{**src, "src_offset": i, "group_id": "g"} for i in range(8)])
    quarantined = [
        {**src, "src_offset": 100 + i, "stage": str(QuarantineStage.DECODE_OFFSETS), "kind": kind}
        for i, kind in enumerate((DecodeErrorKind.UNSUPPORTED, "malformed"))
    ]
    _write(spark, config, QUARANTINE, quarantined)
    _write(spark, config, CLOCK_TICKS, [{"src_topic": "radar.telemetry", "src_offset": 1, "tick_time": naive}])
    _write(
        spark,
        config,
        GROUP_HEALTH,
        [
            {"group_id": "fresh", "state": "Stable", "members": 2},
            {"group_id": "stale", "state": "Stable", "members": 1},
            {"group_id": "gone", "state": "Empty", "members": 0},
            {"group_id": "silent", "state": "Stable", "members": 1},  # never shipped telemetry
            {"group_id": "logged", "state": "Stable", "members": 1},  # only the broker's log: its join, long ago
        ],
    )
    events = [
        ("fresh", naive - timedelta(seconds=5), "heartbeat", "json"),
        ("stale", naive - timedelta(minutes=10), "heartbeat", "librdkafka_stats"),
        ("gone", naive, "heartbeat", "protocol"),
        # a log line comes with a membership change, not while the member lives: a stable group is not stale
        ("logged", naive - timedelta(minutes=20), "join", "broker_log"),
    ]
    _write(
        spark,
        config,
        HEARTBEAT_EVENTS,
        [
            {"src_topic": "radar.telemetry", "src_offset": 10 + i, "group_id": g, "event_time": t, "event": e}
            | {"source": source}
            for i, (g, t, e, source) in enumerate(events)
        ],
    )


@pytest.mark.spark
def test_ingest_quality_freshness_and_lag_rules_name_what_breaks_them(
    spark,  # type: ignore[no-untyped-def]
    radar_config: RadarConfig,
    tmp_path: Path,
) -> None:
    config = radar_config.with_data_dir(tmp_path)
    now = T0 + timedelta(minutes=30)
    _write_quality_tables(spark, config)

    report = run_checks(spark, config, now=now, env={})
    results = {r.rule: r for r in report.results}
    assert results["quarantine_rate"].status == "failed"  # 2 of 15 records (8 commits, 2 quarantined, 1 tick, 4 events)
    assert results["decode_coverage"].status == "failed"  # 1 unsupported of 10 __consumer_offsets records
    assert results["heartbeat_telemetry_freshness"].failing == ("stale",)
    assert results["monitor_lag"].failing == ("(local)",)
    assert results["open_critical_detections"].status == "skipped" and not report.failed_critical
    by_rule = {a.rule: a for a in report.opened}
    assert by_rule["quarantine_rate"].observed_value == pytest.approx(2 / 15)
    assert by_rule["decode_coverage"].observed_value == pytest.approx(0.9)
    assert by_rule["heartbeat_telemetry_freshness"].observed_value == pytest.approx(600)
    assert by_rule["monitor_lag"].observed_value == pytest.approx(1800)
    assert by_rule["monitor_lag"].group_id is None
    assert json.loads(by_rule["heartbeat_telemetry_freshness"].details)["row"]["group_id"] == "stale"
    assert report.unconfigured  # webhook and slack are routed, their variables are not set: said, not silent


@pytest.mark.spark
def test_the_check_view_reads_small_tables_from_their_files_with_no_spark_job_and_as_spark_would(
    spark,  # type: ignore[no-untyped-def]
    radar_config: RadarConfig,
    tmp_path: Path,
) -> None:
    """`radar run` checks every minute beside its live queries: small local tables are read in the driver. The view
    is the one Spark's reads give, and building it starts no Spark job."""
    config = radar_config.with_data_dir(tmp_path)
    now = T0 + timedelta(minutes=30)
    _write_quality_tables(spark, config)
    _write(spark, config, DETECTIONS, [_detection("stale", "open"), _detection("fresh", "resolved")])
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("check-view-from-files", "the view from files")
    try:
        from_files = build_check_view(spark, config, now)
    finally:
        spark.sparkContext.setJobGroup("", "")
    assert tracker.getJobIdsForGroup("check-view-from-files") == []
    from_spark = build_check_view(spark, config, now, driver_read_max_bytes=0)

    def by_group_id(view: CheckView) -> list[dict[str, Any]]:
        return sorted(view.rows, key=lambda row: (row["group_id"] is not None, row["group_id"] or ""))

    assert by_group_id(from_files) == by_group_id(from_spark) and from_files.present == from_spark.present
    by_group = {row["group_id"]: row for row in from_files.rows}
    assert by_group["stale"]["open_critical_detections"] == 1 and by_group["fresh"]["open_critical_detections"] == 0
    assert by_group["stale"]["telemetry_age_s"] == pytest.approx(600)
    assert by_group[None]["records"] == 15 and by_group[None]["quarantined"] == 2


def test_ingest_quality_row_counts_records_and_unknown_types() -> None:
    counts = {
        "offset_commits": 90,
        "group_metadata": 5,
        "heartbeat_events": 4,
        f"quarantine:{QuarantineStage.DECODE_OFFSETS}:{DecodeErrorKind.UNSUPPORTED}": 5,
        f"quarantine:{QuarantineStage.PARSE_TELEMETRY}:unrecognised": 1,
    }
    row = ingest_quality_row("c", counts)
    assert row["records"] == 105 and row["quarantined"] == 6 and row["offsets_records"] == 100
    assert row["quarantine_rate"] == pytest.approx(6 / 105) and row["decode_coverage"] == pytest.approx(0.95)
    assert ingest_quality_row("c", {})["decode_coverage"] is None


@pytest.mark.spark
def test_radar_check_exit_codes(spark, radar_config: RadarConfig, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["--data-dir", str(tmp_path), "check"]
    assert main(args) == 2
    assert "no tables to check" in capsys.readouterr().err
    config = radar_config.with_data_dir(tmp_path)
    _write(spark, config, DETECTIONS, [_detection("g1", "open", severity="warning")])
    assert main(args) == 0
    assert "open_critical_detections" in capsys.readouterr().out
    # nothing fails, so no alert to write: the reads come from the table's files and no JVM starts
    healthy = radar_without_a_jvm("--data-dir", str(tmp_path), "check")
    assert healthy.returncode == 0, healthy.stderr
    assert "open_critical_detections" in healthy.stdout and "passed" in healthy.stdout
    assert "Traceback" not in healthy.stderr
    _write(spark, config, DETECTIONS, [_detection("g1", "open")])
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "[CRITICAL] open_critical_detections on local/g1" in out


def test_checks_config_overrides_rules_and_refuses_unknown_names(radar_config: RadarConfig) -> None:
    config = load_config(DEFAULT_CONF_PATH, env={"RADAR__CHECKS__RULES": "{monitor_lag: {threshold: 30}}"})
    assert {r.name: r.threshold for r in rules_of(config)}["monitor_lag"] == 30
    assert config.checks.routes == {"log": "info", "webhook": "warning", "slack": "critical"}
    typo = _with_checks(radar_config, rules={"quarantine_ratio": CheckRuleConfig(threshold=1)})
    with pytest.raises(ConfigError, match="quarantine_ratio"):
        rules_of(typo)


@pytest.mark.spark
def test_monitor_lag_fails_when_no_clock_tick_ever_arrived(
    spark,  # type: ignore[no-untyped-def]
    radar_config: RadarConfig,
    tmp_path: Path,
) -> None:
    """A clock whose producer cannot reach the telemetry topic (credentials, a missing Write ACL) leaves clock_ticks
    empty while records arrive: the rule counts from the table's creation and fails, instead of passing for want of
    a tick (the deadline rules are blind meanwhile)."""
    config = radar_config.with_data_dir(tmp_path)
    src = {"src_topic": "__consumer_offsets", "src_partition": 0}
    _write(spark, config, OFFSET_COMMITS, [{**src, "src_offset": i, "group_id": "g"} for i in range(3)])
    ensure_tables(spark, config, [CLOCK_TICKS])
    created = datetime.now(UTC)
    report = run_checks(spark, config, now=created + timedelta(minutes=10), env={})
    lag = {r.rule: r for r in report.results}["monitor_lag"]
    assert lag.status == "failed" and lag.failing == ("(local)",)
    opened = {a.rule: a for a in report.opened}["monitor_lag"]
    assert 590 <= opened.observed_value <= 610  # counted from when the table was made, seconds ago
    assert "not delivered" in opened.message
