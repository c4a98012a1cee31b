"""`radar maintain` on real local Delta tables made of many small commits, as a streaming pipeline leaves them:
OPTIMIZE compacts them Z-ordered, VACUUM keeps Delta's safe retention unless a shorter one is configured."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.cli import main
from rebalance_radar.pipelines.config import MaintainConfig, RadarConfig
from rebalance_radar.pipelines.storage.maintain import (
    DELTA_SAFE_RETENTION_HOURS,
    MaintainResult,
    run_maintain,
    zorder_columns,
)
from rebalance_radar.pipelines.storage.tables import TableCatalog, ensure_tables
from rebalance_radar.transforms.schemas import (
    DETECTIONS,
    DETECTOR_OUTPUT,
    GROUP_HEALTH,
    OFFSET_COMMITS,
    REBALANCES,
    TABLES,
    TableSchema,
)
from tests.pipelines.ingest_support import isolated_config

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf" / "local.yml"
COMMITS = 8  # small appends per table, one file or more each


def data_files(location: Path) -> list[Path]:
    return sorted(p for p in location.rglob("*.parquet") if "_delta_log" not in p.parts)


def detection_row(i: int) -> tuple[object, ...]:
    t = datetime(2026, 11, 23, tzinfo=UTC) + timedelta(seconds=i)
    values = {
        "cluster": "local",
        "detection_id": f"d{i}",
        "kind": "zombie_commit",
        "severity": "critical",
        "group_id": f"group-{i % 3}",
        "member_id": f"m{i}",
        "first_seen": t,
        "last_seen": t,
        "detected_at": t,
        "status": "open",
        "summary": f"detection {i}",
    }
    return tuple(values.get(name) for name in DETECTIONS.column_names)


def commit_row(i: int) -> tuple[object, ...]:
    t = datetime(2026, 11, 22 + i % 2, tzinfo=UTC) + timedelta(seconds=i)
    values = {
        "cluster": "local",
        "src_topic": "__consumer_offsets",
        "src_partition": 0,
        "src_offset": i,
        "src_timestamp": t,
        "group_id": f"group-{i % 3}",
        "topic": "orders",
        "partition": i % 4,
        "committed_offset": 100 + i,
        "commit_ts": t,
        "is_tombstone": False,
        "commit_date": date(2026, 11, 22 + i % 2),
    }
    return tuple(values.get(name) for name in OFFSET_COMMITS.column_names)


ROW_MAKERS = {DETECTIONS.name: detection_row, OFFSET_COMMITS.name: commit_row}


def write_small_commits(spark: SparkSession, config: RadarConfig, tables: tuple[TableSchema, ...]) -> None:
    """COMMITS appends of one row each to each of `tables` (detections, offset_commits: partitioned by commit_date)."""
    ensure_tables(spark, config, tables)
    catalog = TableCatalog(config)
    for i in range(COMMITS):
        for table in tables:
            frame = spark.createDataFrame([ROW_MAKERS[table.name](i)], table.ddl).coalesce(1)
            frame.write.format("delta").mode("append").save(str(catalog.location(table)))


def rows(spark: SparkSession, config: RadarConfig, table: TableSchema) -> list[tuple[object, ...]]:
    location = TableCatalog(config).location(table)
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(location)).collect())


def test_zorder_columns_are_cluster_group_and_event_time_never_a_partition_column() -> None:
    assert zorder_columns(DETECTIONS) == ("cluster", "group_id", "first_seen")
    assert zorder_columns(TABLES["heartbeat_events"]) == ("cluster", "group_id", "event_time")
    assert zorder_columns(TABLES["rebalances"]) == ("cluster", "group_id", "started_at")
    assert zorder_columns(OFFSET_COMMITS) == ("cluster", "group_id", "commit_ts")
    assert zorder_columns(TABLES["offsets_raw"]) == ("cluster", "src_timestamp")  # ingest_date is the partition
    for table in TABLES.values():
        assert not set(zorder_columns(table)) & set(table.partition_by)


def test_optimize_compacts_and_a_configured_short_retention_vacuums_the_old_files(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    config = isolated_config(radar_config, tmp_path / "data")
    config = config.model_copy(update={"maintain": MaintainConfig(vacuum_retention_hours=0)})
    write_small_commits(spark, config, (DETECTIONS, OFFSET_COMMITS))
    catalog = TableCatalog(config)
    before = {t.name: rows(spark, config, t) for t in (DETECTIONS, OFFSET_COMMITS)}
    files_before = {t.name: len(data_files(catalog.location(t))) for t in (DETECTIONS, OFFSET_COMMITS)}  # type: ignore[arg-type]
    assert min(files_before.values()) >= COMMITS

    seen: list[MaintainResult] = []
    results = run_maintain(spark, config, report=seen.append)

    assert seen == results
    by_table = {r.table.rsplit(".", 1)[-1].removeprefix(config.storage.table_prefix): r for r in results}
    assert set(by_table) == {"detections", "offset_commits"}  # only the tables that exist
    detections, commits = by_table["detections"], by_table["offset_commits"]
    assert (detections.before.files, detections.after.files) == (files_before["detections"], 1)
    assert (commits.before.files, commits.after.files) == (files_before["offset_commits"], 2)  # one per commit_date
    assert detections.zorder_by == ("cluster", "group_id", "first_seen")
    assert detections.vacuum_retention_hours == 0
    # the compacted-away files are deleted from disk; the data is the same
    assert detections.files_vacuumed == files_before["detections"]
    assert len(data_files(catalog.location(DETECTIONS))) == 1  # type: ignore[arg-type]
    assert len(data_files(catalog.location(OFFSET_COMMITS))) == 2  # type: ignore[arg-type]
    assert {t.name: rows(spark, config, t) for t in (DETECTIONS, OFFSET_COMMITS)} == before
    history = spark.sql(f"DESCRIBE HISTORY {catalog.name(DETECTIONS)}").where("operation = 'OPTIMIZE'").first()
    assert history is not None and "first_seen" in history["operationParameters"]["zOrderBy"]
    line = detections.line()
    assert f"{files_before['detections']} -> 1 files" in line and "VACUUM RETAIN 0 HOURS" in line
    # Delta's safety check is back on after the command
    assert spark.conf.get("spark.databricks.delta.retentionDurationCheck.enabled", "true") == "true"


def test_radar_maintain_keeps_deltas_safe_retention_by_default(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command as users run it: one line per existing table; with no retention configured the replaced files
    stay on disk (a reader or stream on an older version still needs them)."""
    data_dir = tmp_path / "data"
    config = radar_config.with_data_dir(data_dir)
    assert config.maintain.vacuum_retention_hours is None
    write_small_commits(spark, config, (DETECTIONS,))
    location = TableCatalog(config).location(DETECTIONS)
    assert location is not None
    files_before = len(data_files(location))

    assert main(["maintain", "--conf", str(CONF), "--data-dir", str(data_dir), "--table", "detections"]) == 0

    out = capsys.readouterr()
    (line,) = out.out.splitlines()
    assert line.startswith("radar maintain: radar.detections: OPTIMIZE ZORDER BY (cluster, group_id, first_seen): ")
    assert f"{files_before} -> 1 files" in line
    assert f"VACUUM RETAIN {DELTA_SAFE_RETENTION_HOURS} HOURS: 0 files deleted" in line
    assert len(data_files(location)) == files_before + 1  # the compacted file joins the old ones until they age out


def test_radar_maintain_names_an_unknown_table_in_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Said before Spark starts (this test has no session)."""
    assert main(["maintain", "--conf", str(CONF), "--data-dir", str(tmp_path), "--table", "detection"]) == 2
    err = capsys.readouterr().err
    assert "There is no table detection; the tables are" in err and "Traceback" not in err


def test_maintain_deletes_staged_gold_rows_past_retention_and_the_gold_stream_reads_on(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """`detector_output` only carries rows to the gold query: `radar maintain` deletes those staged longer ago than
    `detect.staged_retention_hours`, keeps the rest, and the gold stream skips the deletion instead of failing."""
    from rebalance_radar.pipelines.stages.detect import start_gold_query
    from rebalance_radar.pipelines.stages.streams import Trigger

    config = isolated_config(radar_config, tmp_path / "data")
    ensure_tables(spark, config, (DETECTOR_OUTPUT, REBALANCES, GROUP_HEALTH))
    catalog = TableCatalog(config)
    now = datetime.now(tz=UTC)
    hours = config.detect.staged_retention_hours

    def health(group: str, staged_at: datetime) -> tuple[object, ...]:
        values = {
            "target": GROUP_HEALTH.name,
            "emit_seq": 1,
            "cluster": "local",
            "group_id": group,
            "state": "Stable",
            "generation": 3,
            "members": 2,
            "last_event_at": staged_at,
            "staged_at": staged_at,
        }
        return tuple(values.get(name) for name in DETECTOR_OUTPUT.column_names)

    staged = [health("old-group", now - timedelta(hours=hours + 1)), health("new-group", now - timedelta(hours=1))]
    location = str(catalog.location(DETECTOR_OUTPUT))
    spark.createDataFrame(staged, DETECTOR_OUTPUT.ddl).write.format("delta").mode("append").save(location)
    start_gold_query(spark, config, "gold", Trigger(True)).awaitTermination(600)

    (result,) = run_maintain(spark, config, only=[DETECTOR_OUTPUT.name])

    assert result.rows_expired == 1 and "DELETE of rows past retention: 1 rows" in result.line()
    left = spark.read.format("delta").load(location).collect()
    assert [r["group_id"] for r in left] == ["new-group"]
    newer = health("newer-group", now)
    spark.createDataFrame([newer], DETECTOR_OUTPUT.ddl).write.format("delta").mode("append").save(location)
    gold = start_gold_query(spark, config, "gold", Trigger(True))
    gold.awaitTermination(600)
    assert gold.exception() is None
    groups = spark.read.format("delta").load(str(catalog.location(GROUP_HEALTH))).select("group_id").collect()
    assert sorted(r["group_id"] for r in groups) == ["new-group", "newer-group", "old-group"]  # gold keeps them all
