"""`radar maintain`: compact and clean every Delta table the pipelines write.

A streaming pipeline commits a few small files per table every trigger (86,400 a day at a 1 s trigger), which slows
every query and the pipelines' own MERGEs and record-key reads. OPTIMIZE rewrites them into few large files,
Z-ordered on the columns the on-call queries filter on (cluster, group, event time); VACUUM then deletes the files
no table version within the retention needs. Both are Delta commands that work the same on delta-spark and on
Databricks, so this runs locally and as the daily job of `resources/radar_maintain.job.yml`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyspark.sql import SparkSession

from rebalance_radar.pipelines.config import ConfigError, RadarConfig
from rebalance_radar.pipelines.storage.tables import TableCatalog, register_existing_tables, zorder_columns
from rebalance_radar.transforms.schemas import DETECTOR_OUTPUT, TABLES, TableSchema

# Delta refuses VACUUM below this retention unless its safety check is turned off (delta.deletedFileRetentionDuration
# defaults to 7 days): readers and streams still on an older version need those files.
DELTA_SAFE_RETENTION_HOURS = 168
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


@dataclass(frozen=True)
class TableDetail:
    """What DESCRIBE DETAIL says about a table's current version."""

    files: int
    size_bytes: int


@dataclass(frozen=True)
class MaintainResult:
    """What `radar maintain` did to one table."""

    table: str
    zorder_by: tuple[str, ...]
    before: TableDetail
    after: TableDetail
    vacuum_retention_hours: int
    files_vacuumed: int
    rows_expired: int | None = None  # rows of a table with a row retention (`detector_output`) deleted first

    def line(self) -> str:
        """One line for the user: the commands, files before and after, files deleted."""
        zorder = f" ZORDER BY ({', '.join(self.zorder_by)})" if self.zorder_by else ""
        expired = "" if self.rows_expired is None else f"DELETE of rows past retention: {self.rows_expired:,} rows; "
        return (
            f"{self.table}: {expired}OPTIMIZE{zorder}: {self.before.files:,} -> {self.after.files:,} files "
            f"({human_bytes(self.before.size_bytes)} -> {human_bytes(self.after.size_bytes)}); "
            f"VACUUM RETAIN {self.vacuum_retention_hours} HOURS: {self.files_vacuumed:,} files deleted"
        )


def human_bytes(size: int) -> str:
    """1536 -> '1.5 KiB'."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def describe_detail(spark: SparkSession, name: str) -> TableDetail:
    row = spark.sql(f"DESCRIBE DETAIL {name}").first()
    assert row is not None, name
    return TableDetail(files=int(row["numFiles"] or 0), size_bytes=int(row["sizeInBytes"] or 0))


def retention_hours(config: RadarConfig) -> int:
    """The configured VACUUM retention, or Delta's safe default when none is configured."""
    configured = config.maintain.vacuum_retention_hours
    return DELTA_SAFE_RETENTION_HOURS if configured is None else configured


def vacuum(spark: SparkSession, name: str, hours: int) -> int:
    """VACUUM one table; returns how many files it deleted (counted by a DRY RUN just before). Delta's retention check
    is switched off for this command only when a retention below its safe default was configured."""
    below_safe = hours < DELTA_SAFE_RETENTION_HOURS
    previous = spark.conf.get(RETENTION_CHECK, "true")
    if below_safe:
        spark.conf.set(RETENTION_CHECK, "false")
    try:
        doomed = spark.sql(f"VACUUM {name} RETAIN {hours} HOURS DRY RUN").count()
        spark.sql(f"VACUUM {name} RETAIN {hours} HOURS").collect()
    finally:
        if below_safe:
            spark.conf.set(RETENTION_CHECK, previous)
    return doomed


def expire_staged_rows(spark: SparkSession, config: RadarConfig, name: str) -> int:
    """Delete `detector_output` rows staged more than `detect.staged_retention_hours` ago (the gold query MERGEd
    them long since; its stream skips this change commit); returns how many rows went."""
    hours = config.detect.staged_retention_hours
    deleted = spark.sql(f"DELETE FROM {name} WHERE staged_at < current_timestamp() - INTERVAL {hours} HOURS").first()
    return int(deleted["num_affected_rows"]) if deleted is not None and deleted["num_affected_rows"] is not None else 0


def maintain_table(spark: SparkSession, config: RadarConfig, table: TableSchema) -> MaintainResult:
    """OPTIMIZE (Z-ordered) then VACUUM one existing table (`detector_output`: its expired rows deleted first)."""
    name = TableCatalog(config).name(table)
    expired = expire_staged_rows(spark, config, name) if table is DETECTOR_OUTPUT else None
    before = describe_detail(spark, name)
    zorder = zorder_columns(table)
    zorder_clause = f" ZORDER BY ({', '.join(f'`{c}`' for c in zorder)})" if zorder else ""
    spark.sql(f"OPTIMIZE {name}{zorder_clause}").collect()
    hours = retention_hours(config)
    vacuumed = vacuum(spark, name, hours)
    return MaintainResult(name, zorder, before, describe_detail(spark, name), hours, vacuumed, expired)


def check_table_names(names: Iterable[str]) -> None:
    """Refuse, in one sentence, a name that is not a declared table."""
    unknown = [name for name in names if name not in TABLES]
    if unknown:
        raise ConfigError(f"There is no table {', '.join(unknown)}; the tables are {', '.join(TABLES)}.")


def existing_tables(spark: SparkSession, config: RadarConfig, only: Iterable[str] = ()) -> list[TableSchema]:
    """The declared tables that exist (registered by name when local), restricted to `only` when given."""
    wanted = list(only)
    check_table_names(wanted)
    catalog = TableCatalog(config)
    present = set(register_existing_tables(spark, config))
    chosen = [TABLES[name] for name in wanted] if wanted else list(TABLES.values())
    return [t for t in chosen if catalog.name(t) in present and spark.catalog.tableExists(catalog.name(t))]


def run_maintain(
    spark: SparkSession,
    config: RadarConfig,
    only: Iterable[str] = (),
    report: Callable[[MaintainResult], None] = lambda _result: None,
) -> list[MaintainResult]:
    """Maintain every existing table (or those named in `only`), calling `report` after each one."""
    results = []
    for table in existing_tables(spark, config, only):
        result = maintain_table(spark, config, table)
        report(result)
        results.append(result)
    return results
