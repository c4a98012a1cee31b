"""The `incidents` gold table: read the rebalances, detections and coordinator events of a span of event time, link
them across groups (`transforms.incidents.linking`, on the driver: a span holds a few rows per group) and MERGE the
incidents by their deterministic ids.

Written by `radar replay` once its detection has run (every incident of the dump), and live by the gold query of
`radar run` after each of its MERGEs (`pipelines.stages.detect.start_gold_query`), over the recent span only: the
newest event time known minus `RECOMPUTED_SPANS` incident spans. Recomputing a span replaces what it said before:
an incident of that span that no longer comes out (its window grew into another id's) is deleted, so a live run
and a replay of its dump end with the same rows.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import OWN_GROUP_PREFIX, RadarConfig
from rebalance_radar.pipelines.stages.detection_turn import write_turn
from rebalance_radar.pipelines.storage.data_dir_locks import writing
from rebalance_radar.pipelines.storage.tables import (
    TableCatalog,
    ensure_tables,
    log_says_empty,
    merge_retrying_conflicts,
)
from rebalance_radar.transforms.incidents.inputs import COORDINATOR_EVENT_KINDS, MEMBER_EVENT_KINDS
from rebalance_radar.transforms.incidents.linking import IncidentSettings, incident_rows_of
from rebalance_radar.transforms.schemas import DETECTIONS, HEARTBEAT_EVENTS, INCIDENTS, REBALANCES, TableSchema

RECOMPUTED_SPANS = 3
"""A live refresh reads this many `incidents.max_span_ms` back from the newest event: an incident still growing
spans at most one, and its first events must be read again for its id to stay the same."""

EVENT_COLUMNS = ("cluster", "event_time", "event", "group_id", "member_id", "client_id", "host", "details")
EVENT_SOURCE_COLUMNS = ("src_topic", "src_partition", "src_offset")


def incident_settings(config: RadarConfig) -> IncidentSettings:
    section = config.incidents
    return IncidentSettings(
        window_ms=section.window_ms,
        min_groups=section.min_groups,
        unexplained_min_groups=section.unexplained_min_groups,
        max_span_ms=section.max_span_ms,
    )


def _read(spark: SparkSession, config: RadarConfig, table: TableSchema) -> DataFrame | None:
    """A table as a batch read; None when it does not exist yet or its log says it is empty (nothing to link, and no
    Spark job to find that out)."""
    catalog = TableCatalog(config)
    location = catalog.location(table)
    if location is None:
        return spark.read.table(catalog.name(table)) if spark.catalog.tableExists(catalog.name(table)) else None
    if not (location / "_delta_log").is_dir() or log_says_empty(config, table):
        return None
    return spark.read.format("delta").load(str(location))


def _rows(frame: DataFrame | None, where: Any, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    if frame is None:
        return []
    return [row.asDict() for row in frame.where(where).select(*columns).collect()]


def _users(frame: DataFrame | None, config: RadarConfig) -> DataFrame | None:
    """Radar's own source consumers stay out, as in every gold table (`detect.include_own_groups`)."""
    if frame is None or config.detect.include_own_groups:
        return frame
    group = F.col("group_id")
    return frame.where(group.isNull() | ~group.startswith(OWN_GROUP_PREFIX))


def refresh_incidents(
    spark: SparkSession,
    config: RadarConfig,
    *,
    recent_only: bool = False,
    turn: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> int:
    """Link and MERGE the incidents of the whole tables (a replay), or `recent_only` of the last `RECOMPUTED_SPANS`
    spans (a live run's gold query, its MERGE in the gold writes' `turn`); returns the incident rows written."""
    settings = incident_settings(config)
    events = _users(_read(spark, config, HEARTBEAT_EVENTS), config)
    rebalances = _users(_read(spark, config, REBALANCES), config)
    detections = _users(_read(spark, config, DETECTIONS), config)
    kinds = [str(k) for k in (*COORDINATOR_EVENT_KINDS, *MEMBER_EVENT_KINDS)]
    event_filter = F.col("event").isin(*kinds) & (F.col("cluster") == F.lit(config.cluster))
    rebalance_filter = F.col("cluster") == F.lit(config.cluster)
    detection_filter = F.col("cluster") == F.lit(config.cluster)
    since: datetime | None = None
    if recent_only:
        newest = None if events is None else events.where(event_filter).agg(F.max("event_time")).first()[0]
        newest_rebalance = None if rebalances is None else rebalances.agg(F.max("started_at")).first()[0]
        known = [t for t in (newest, newest_rebalance) if t is not None]
        if not known:
            return 0
        newest_ms = max(int(t.replace(tzinfo=t.tzinfo or UTC).timestamp() * 1000) for t in known)
        since = datetime.fromtimestamp((newest_ms - RECOMPUTED_SPANS * settings.max_span_ms) / 1000, tz=UTC)
        event_filter &= F.col("event_time") >= F.lit(since)
        rebalance_filter &= F.col("started_at") >= F.lit(since)
        detection_filter &= F.col("last_seen") >= F.lit(since)
    rows = incident_rows_of(
        _rows(
            rebalances,
            rebalance_filter,
            ("cluster", "group_id", "rebalance_id", "started_at", "joined", "left", "expired"),
        ),
        _rows(detections, detection_filter, ("cluster", "group_id", "detection_id", "first_seen", "last_seen")),
        _rows(events, event_filter, EVENT_COLUMNS + EVENT_SOURCE_COLUMNS),
        settings,
    )
    ensure_tables(spark, config, [INCIDENTS])
    # incidents wholly inside the span read are recomputed: one not found again is deleted
    recomputed_from = None if since is None else since.timestamp() * 1000 + settings.max_span_ms
    with turn(), writing(TableCatalog(config).tables_dir):
        merge_incidents(spark, config, rows, recomputed_from_ms=recomputed_from)
    return len(rows)


def incident_refreshing(
    write: Callable[[DataFrame, int], None], config: RadarConfig
) -> Callable[[DataFrame, int], None]:
    """A live gold query's foreachBatch body, then the recent incidents refreshed from what it wrote."""

    def write_then_link(batch: DataFrame, batch_id: int) -> None:
        write(batch, batch_id)
        refresh_incidents(batch.sparkSession, config, recent_only=True, turn=write_turn)

    return write_then_link


def merge_incidents(
    spark: SparkSession, config: RadarConfig, rows: list[dict[str, Any]], *, recomputed_from_ms: float | None
) -> None:
    """MERGE on incident_id: new ids inserted, known ids updated, and the cluster's incidents that start at or after
    `recomputed_from_ms` (None: all of them) and are not among `rows` deleted. No rows into a table whose log says
    it is empty change nothing: no MERGE (a replay with no incident, most of them)."""
    from delta.tables import DeltaTable

    if not rows and log_says_empty(config, INCIDENTS):
        return

    catalog = TableCatalog(config)
    location = catalog.location(INCIDENTS)
    target = (
        DeltaTable.forName(spark, catalog.name(INCIDENTS))
        if location is None
        else DeltaTable.forPath(spark, str(location))
    )
    source = spark.createDataFrame(rows, INCIDENTS.ddl) if rows else spark.createDataFrame([], INCIDENTS.ddl)
    stale = f"t.cluster = '{_sql_text(config.cluster)}'"
    if recomputed_from_ms is not None:
        stale += f" AND t.window_start >= timestamp_millis({int(recomputed_from_ms)})"

    changed = " OR ".join(f"NOT (t.`{name}` <=> s.`{name}`)" for name in INCIDENTS.column_names)

    def merge() -> None:
        (
            target.alias("t")
            .merge(source.alias("s"), "t.incident_id = s.incident_id")
            .whenMatchedUpdateAll(condition=changed)
            .whenNotMatchedInsertAll()
            .whenNotMatchedBySourceDelete(condition=stale)
            .execute()
        )

    merge_retrying_conflicts(merge)


def _sql_text(text: str) -> str:
    return text.replace("'", "''")
