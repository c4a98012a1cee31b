"""`radar check` and the scheduled checks of `radar run`: the alert rules (expectations/) validated by Great
Expectations over one check view built from the Delta tables, failures turned into `alerts` rows with a lifecycle
(transforms/alerts.py, one MERGE per run), and the pending ones notified: log, a generic JSON webhook, Slack.

Slack gets its incoming-webhook JSON posted here rather than through GX's SlackNotificationAction: that action
runs inside the checkpoint, before the alerts table says whether a failure is a new incident, an update of an open
one or a resolution, and it neither retries nor reports delivery, so it would either repeat every failing check
or lose notifications; the lifecycle (one message when an alert opens, one when it resolves, retried until
delivered and only then `notified_at`) needs the post after the alerts are reconciled, and the MERGE after the
post. GX's own action of the checkpoint logs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.expectations.rules import CHECK_VIEW, CheckRule, RuleOverride, configured_rules
from rebalance_radar.pipelines.config import ChecksConfig, ConfigError, RadarConfig
from rebalance_radar.pipelines.stages.detection_turn import write_turn
from rebalance_radar.pipelines.storage.delta_log import (
    DRIVER_READ_MAX_BYTES,
    created_at,
    record_count_where,
    rows_from_files,
)
from rebalance_radar.pipelines.storage.tables import TableCatalog, ensure_tables, upsert_by_key
from rebalance_radar.transforms.alerts import (
    Alert,
    AlertChanges,
    RuleFailure,
    headline,
    reconcile,
    routed,
    slack_payload,
    webhook_payload,
)
from rebalance_radar.transforms.lag.evaluation import LAGGING_STATUSES
from rebalance_radar.transforms.schemas import (
    ALERTS,
    CLOCK_TICKS,
    DETECTIONS,
    GROUP_HEALTH,
    GROUP_LAG,
    GROUP_METADATA,
    GROUP_RECORDS,
    HEARTBEAT_EVENTS,
    OFFSET_COMMITS,
    QUARANTINE,
    RECORD_KEY,
    UNRESOLVED_DETECTION_STATUSES,
    AlertStatus,
    HeartbeatEventKind,
    QuarantineStage,
    Severity,
    TableSchema,
)
from rebalance_radar.transforms.wire.errors import DecodeErrorKind

INACTIVE_STATES = ("Empty", "Dead")


class NoTablesToCheck(FileNotFoundError):
    """No table the rules read exists under the data dir (nothing was ingested there)."""


class NotificationError(RuntimeError):
    """A notifier did not take a notification after its bounded retries; the alert stays pending."""


# --- the check view -----------------------------------------------------------------------------------------------


def read_table(spark: SparkSession, config: RadarConfig, table: TableSchema) -> DataFrame | None:
    """The table's rows of `config.cluster`, or None while the table does not exist."""
    catalog = TableCatalog(config)
    location = catalog.location(table)
    if location is None:
        if not spark.catalog.tableExists(catalog.name(table)):
            return None
        rows = spark.table(catalog.name(table))
    elif not (location / "_delta_log").is_dir():
        return None
    else:
        rows = spark.read.format("delta").load(str(location))
    return rows.where(F.col("cluster") == F.lit(config.cluster))


SessionSource = SparkSession | Callable[[], SparkSession]
"""A session, or what builds one the first time it is needed: a check whose tables are all small and local, with no
alert to write, starts no JVM (a healthy `radar check` of a local data dir)."""


def _session(spark: SessionSource) -> SparkSession:
    return spark() if callable(spark) else spark


@dataclass(frozen=True)
class CheckView:
    """The rows the suite validates (CHECK_VIEW's columns), and the tables that exist."""

    rows: tuple[dict[str, Any], ...]
    present: frozenset[str]

    def row_of(self, cluster: str, group_id: str | None) -> dict[str, Any]:
        return next((r for r in self.rows if r["cluster"] == cluster and r["group_id"] == group_id), {})


def _utc(value: datetime | None) -> datetime | None:
    """A timestamp collected from Spark (naive, in this process's local time) as an aware UTC datetime."""
    if value is None:
        return None
    return value.astimezone(UTC)  # naive: taken as local time, as PySpark produced it


_ONE_ROW_PER_RECORD: tuple[TableSchema, ...] = (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS, CLOCK_TICKS)
_COUNTED_ONLY: frozenset[str] = frozenset(t.name for t in (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS))
"""Tables the view reads for their count alone: where the log gives it, they are not opened with Spark at all."""


def _logged_counts(config: RadarConfig) -> dict[str, int]:
    """`config.cluster`'s rows of each one-row-per-record silver table, from its Delta log where it can say exactly
    (`delta_log.record_count_where`): they grow with every record ingested, and `radar run` checks every minute,
    so a scan of them would cost more each time. A table the log cannot answer for (or that is missing) is left
    out: a query counts it."""
    catalog = TableCatalog(config)
    counts: dict[str, int] = {}
    for table in _ONE_ROW_PER_RECORD:
        location = catalog.location(table)
        count = None if location is None else record_count_where(location, "cluster", config.cluster)
        if count is not None:
            counts[table.name] = count
    return counts


@dataclass(frozen=True)
class MetricQuery:
    """One metric's SQL, written once in the dialect DuckDB and Spark SQL share: `{table}` placeholders name the
    source tables it reads (`tables`)."""

    sql: str
    tables: tuple[str, ...]


class ViewSources:
    """The check view's source tables of `config.cluster`, each read once: a small local table from its files in the
    driver (Arrow), any other with Spark. A metric runs on DuckDB when every table it reads is in the driver (no
    Spark job: `radar run` checks every minute beside its live queries), else on Spark SQL, the driver's tables
    handed to Spark; it is the same SQL on either engine."""

    def __init__(
        self, spark: SparkSession | None, files: Mapping[str, pa.Table], frames: Mapping[str, DataFrame]
    ) -> None:
        """`spark` None: every table is in the driver (a reader that starts no JVM)."""
        self.spark, self.files, self.frames = spark, dict(files), dict(frames)

    @property
    def present(self) -> frozenset[str]:
        return frozenset(self.files) | frozenset(self.frames)

    def rows(self, *queries: MetricQuery) -> list[dict[str, Any]]:
        """The rows of the queries' UNION ALL (one query, one engine pass), timestamps as aware UTC datetimes."""
        in_driver = [q for q in queries if all(t in self.files for t in q.tables)]
        in_spark = [q for q in queries if q not in in_driver]
        return self._on_duckdb(in_driver) + self._on_spark(in_spark)

    def _on_duckdb(self, queries: Sequence[MetricQuery]) -> list[dict[str, Any]]:
        if not queries:
            return []
        import duckdb

        with duckdb.connect() as connection:
            for name in {t for q in queries for t in q.tables}:
                connection.register(name, self.files[name])
            sql = " UNION ALL ".join(q.sql.format(**{t: t for t in q.tables}) for q in queries)
            rows = connection.sql(sql).arrow().read_all().to_pylist()
        return [{k: _utc_of_arrow(v) if isinstance(v, datetime) else v for k, v in row.items()} for row in rows]

    def _on_spark(self, queries: Sequence[MetricQuery]) -> list[dict[str, Any]]:
        if not queries:
            return []
        if self.spark is None:
            raise ValueError(f"tables {sorted({t for q in queries for t in q.tables} - set(self.files))} need Spark")
        views: dict[str, str] = {}
        for name in {t for q in queries for t in q.tables}:
            frame = self.frames.get(name)
            if frame is None:
                frame = self.spark.createDataFrame(self.files[name])
            views[name] = f"radar_check_{name}_{uuid.uuid4().hex[:12]}"  # temp views are the session's: unique
            frame.createOrReplaceTempView(views[name])
        try:
            sql = " UNION ALL ".join(q.sql.format(**{t: views[t] for t in q.tables}) for q in queries)
            rows = [r.asDict() for r in self.spark.sql(sql).collect()]
        finally:
            for view in views.values():
                self.spark.catalog.dropTempView(view)
        return [{k: _utc(v) if isinstance(v, datetime) else v for k, v in row.items()} for row in rows]


def _quoted(values: Sequence[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


OPEN_CRITICAL_PER_GROUP = MetricQuery(
    "SELECT group_id, CAST(SUM(CASE WHEN status IN ("
    + _quoted([str(s) for s in UNRESOLVED_DETECTION_STATUSES])
    + f") AND severity = '{Severity.CRITICAL}' THEN 1 ELSE 0 END) AS BIGINT) AS n "
    + "FROM {detections} GROUP BY group_id",
    (DETECTIONS.name,),
)
"""Open or provisional critical detections per group, every group of `detections` (0 for none)."""

LAGGING_PARTITIONS_PER_GROUP = MetricQuery(
    "SELECT group_id, CAST(SUM(CASE WHEN lag_status IN ("
    + _quoted([str(s) for s in LAGGING_STATUSES])
    + ") THEN 1 ELSE 0 END) AS BIGINT) AS n FROM (SELECT group_id, lag_status, ROW_NUMBER() OVER (PARTITION BY "
    "group_id, topic, partition ORDER BY measured_at DESC) AS newest FROM {group_lag}) AS polls WHERE newest = 1 "
    "GROUP BY group_id",
    (GROUP_LAG.name,),
)
"""Per group, the partitions whose newest poll judged them lagging (0 for none): the `lag` rule."""

NEWEST_TICK = MetricQuery("SELECT MAX(tick_time) AS newest FROM {clock_ticks}", (CLOCK_TICKS.name,))
NEWEST_EVENT = MetricQuery("SELECT MAX(event_time) AS newest FROM {heartbeat_events}", (HEARTBEAT_EVENTS.name,))
"""The newest telemetry event of the cluster: the reference time of telemetry ages when there is no tick."""

LAST_HEARTBEAT_OF_ACTIVE_GROUPS = MetricQuery(
    "SELECT group_id, MAX(event_time) AS newest FROM {heartbeat_events} "
    f"WHERE group_id IS NOT NULL AND event = '{HeartbeatEventKind.HEARTBEAT}' AND group_id IN ("
    "SELECT group_id FROM {group_health} WHERE members > 0 AND COALESCE(state, '') NOT IN ("
    + _quoted(INACTIVE_STATES)
    + ")) GROUP BY group_id",
    (HEARTBEAT_EVENTS.name, GROUP_HEALTH.name),
)
"""The newest heartbeat report of each active group that ever reported one. Heartbeat reports only (the agent's,
librdkafka statistics, protocol frames: periodic while a member lives): the broker's and clients' log lines come
with membership changes, and a stable group logs none for hours (seen: `radar run`'s own Spark consumer groups
flagged after 5 quiet minutes). A group that never reported heartbeats is uninstrumented, not stale: left out."""


def _records_of(table: TableSchema) -> MetricQuery:
    return MetricQuery(f"SELECT '{table.name}' AS tag, COUNT(*) AS n FROM {{{table.name}}}", (table.name,))


HEARTBEAT_RECORDS = MetricQuery(
    f"SELECT '{HEARTBEAT_EVENTS.name}' AS tag, COUNT(*) AS n FROM "
    f"(SELECT DISTINCT {', '.join(RECORD_KEY)} FROM {{heartbeat_events}}) AS records",
    (HEARTBEAT_EVENTS.name,),
)
"""heartbeat_events counted by record: one log line may hold several events."""

QUARANTINE_PER_KIND = MetricQuery(
    f"SELECT concat_ws(':', '{QUARANTINE.name}', stage, kind) AS tag, COUNT(*) AS n FROM {{quarantine}} "
    f"GROUP BY concat_ws(':', '{QUARANTINE.name}', stage, kind)",
    (QUARANTINE.name,),
)


def _ingest_counts(sources: ViewSources, logged: Mapping[str, int]) -> dict[str, int]:
    """Records per table and quarantine rows per `quarantine:<stage>:<kind>`: the `logged` counts
    (`_logged_counts`), the others counted by one query per engine."""
    queries = [_records_of(t) for t in _ONE_ROW_PER_RECORD if t.name in sources.present and t.name not in logged]
    queries += [q for q in (HEARTBEAT_RECORDS, QUARANTINE_PER_KIND) if q.tables[0] in sources.present]
    counts = {name: n for name, n in logged.items() if n}
    for row in sources.rows(*queries):
        if row["n"]:
            counts[row["tag"]] = counts.get(row["tag"], 0) + int(row["n"])
    return counts


def ingest_quality_row(cluster: str, counts: Mapping[str, int]) -> dict[str, Any]:
    """The cluster-wide row of quarantine rate and decode coverage, from `_ingest_counts`."""
    quarantined = sum(n for tag, n in counts.items() if tag.startswith(f"{QUARANTINE.name}:"))
    records = sum(counts.values())
    decode_prefix = f"{QUARANTINE.name}:{QuarantineStage.DECODE_OFFSETS}:"
    offsets_records = sum(counts.get(t.name, 0) for t in (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS)) + sum(
        n for tag, n in counts.items() if tag.startswith(decode_prefix)
    )
    unknown = counts.get(f"{decode_prefix}{DecodeErrorKind.UNSUPPORTED}", 0)
    return {
        "cluster": cluster,
        "group_id": None,
        "records": records,
        "quarantined": quarantined,
        "quarantine_rate": quarantined / records if records else None,
        "offsets_records": offsets_records,
        "decode_coverage": 1 - unknown / offsets_records if offsets_records else None,
    }


_VIEW_COLUMNS: Mapping[str, tuple[str, ...]] = {
    DETECTIONS.name: ("cluster", "group_id", "status", "severity"),
    GROUP_HEALTH.name: ("cluster", "group_id", "members", "state"),
    HEARTBEAT_EVENTS.name: (*RECORD_KEY, "group_id", "event", "event_time"),
    CLOCK_TICKS.name: ("cluster", "tick_time"),
    QUARANTINE.name: ("cluster", "stage", "kind"),
    OFFSET_COMMITS.name: ("cluster",),
    GROUP_METADATA.name: ("cluster",),
    GROUP_RECORDS.name: ("cluster",),
    GROUP_LAG.name: ("cluster", "group_id", "topic", "partition", "measured_at", "lag_status"),
}
"""The columns the view reads of each source table."""


def _rows_from_files(
    config: RadarConfig, table: TableSchema, max_bytes: int, columns: Sequence[str] | None = None
) -> pa.Table | None:
    """`config.cluster`'s rows of a small local table, `columns` (the view's by default), read from its files in the
    driver (`delta_log.rows_from_files`); None where Spark must read it (a catalog table, past `max_bytes`, a log or
    files the reader declines). Why: `radar run` checks every minute beside its live queries, and each table read with
    Spark is a snapshot and a job or more on the same two cores as the detection micro-batches."""
    location = TableCatalog(config).location(table)
    if location is None:
        return None
    rows = rows_from_files(location, columns or _VIEW_COLUMNS[table.name], max_bytes=max_bytes)
    if rows is None or not rows.num_rows:
        return rows
    return rows.filter(pc.equal(rows["cluster"], config.cluster))


def _absent_here(config: RadarConfig, table: TableSchema) -> bool:
    """A local table not written yet: nothing to read, with Spark or without."""
    location = TableCatalog(config).location(table)
    return location is not None and not (location / "_delta_log").is_dir()


def _utc_of_arrow(value: datetime | None) -> datetime | None:
    """A timestamp read from a Delta file in the driver as an aware UTC datetime: Spark's INT96 comes back naive
    and in UTC, a TIMESTAMP_MICROS column with its UTC zone."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _ticks_due_since(spark: SessionSource, config: RadarConfig) -> datetime:
    """When the clock_ticks table was created: its first tick was due a tick period later."""
    from delta.tables import DeltaTable

    catalog = TableCatalog(config)
    location = catalog.location(CLOCK_TICKS)
    created = None if location is None else created_at(location)
    if created is not None:
        return created
    session = _session(spark)
    table = (
        DeltaTable.forPath(session, str(location))
        if location is not None
        else DeltaTable.forName(session, catalog.name(CLOCK_TICKS))
    )
    created = _utc(table.detail().first()["createdAt"])
    assert created is not None, "a Delta table always has a creation time"
    return created


def build_check_view(
    spark: SessionSource, config: RadarConfig, now: datetime, *, driver_read_max_bytes: int = DRIVER_READ_MAX_BYTES
) -> CheckView:
    """One row per group (open critical detections, telemetry age of active groups) and one per cluster (ingest
    quality, monitor lag), each metric null where it does not apply. Small: collected, then validated by GX. Local
    tables up to `driver_read_max_bytes` are read from their files in the driver (`_rows_from_files`), the others
    with Spark; both give the same view (tested)."""
    logged = _logged_counts(config)
    wanted = [t for t in _SOURCES if t.name not in logged or t.name not in _COUNTED_ONLY]
    files: dict[str, pa.Table] = {}
    for table in wanted:
        rows = _rows_from_files(config, table, driver_read_max_bytes)
        if rows is not None:
            files[table.name] = rows
    in_spark = [t for t in wanted if t.name not in files and not _absent_here(config, t)]
    session = _session(spark) if in_spark else None
    read = {t.name: read_table(session, config, t) for t in in_spark if session is not None}
    sources = ViewSources(session, files, {name: rows for name, rows in read.items() if rows is not None})
    present = sources.present | frozenset(logged)
    cluster = config.cluster
    groups: dict[str | None, dict[str, Any]] = {}

    def group_row(group_id: str | None) -> dict[str, Any]:
        return groups.setdefault(group_id, {"cluster": cluster, "group_id": group_id})

    if DETECTIONS.name in present:
        for row in sources.rows(OPEN_CRITICAL_PER_GROUP):
            group_row(row["group_id"])["open_critical_detections"] = int(row["n"])

    if GROUP_LAG.name in sources.present:
        for row in sources.rows(LAGGING_PARTITIONS_PER_GROUP):
            group_row(row["group_id"])["lagging_partitions"] = int(row["n"])

    cluster_row = group_row(None)
    if QUARANTINE.name in present:
        cluster_row.update(ingest_quality_row(cluster, _ingest_counts(sources, logged)))

    newest_tick = sources.rows(NEWEST_TICK)[0]["newest"] if CLOCK_TICKS.name in sources.present else None
    if newest_tick is not None:
        cluster_row["newest_tick_at"] = newest_tick
        cluster_row["monitor_lag_s"] = max(0.0, (now - newest_tick).total_seconds())
    elif CLOCK_TICKS.name in present:
        # no tick ever arrived (a clock whose producer cannot authenticate, a missing Write ACL): the lag counts from
        # when ticks were first due, so the rule fails instead of passing for want of a value
        cluster_row["monitor_lag_s"] = max(0.0, (now - _ticks_due_since(spark, config)).total_seconds())

    if {GROUP_HEALTH.name, HEARTBEAT_EVENTS.name} <= sources.present:
        last_heartbeats = {r["group_id"]: r["newest"] for r in sources.rows(LAST_HEARTBEAT_OF_ACTIVE_GROUPS)}
        reference = newest_tick or (sources.rows(NEWEST_EVENT)[0]["newest"] if last_heartbeats else None)
        for group_id, last in last_heartbeats.items():
            row = group_row(group_id)
            row["last_telemetry_at"] = last
            if reference is not None and last is not None:
                row["telemetry_age_s"] = max(0.0, (reference - last).total_seconds())

    if len(cluster_row) == 2:  # nothing cluster-wide was measured
        del groups[None]
    rows = tuple({c: row.get(c) for c in CHECK_VIEW.column_names} for row in groups.values())
    return CheckView(rows, present)


_SOURCES: tuple[TableSchema, ...] = (
    DETECTIONS,
    GROUP_HEALTH,
    GROUP_LAG,
    HEARTBEAT_EVENTS,
    CLOCK_TICKS,
    QUARANTINE,
    OFFSET_COMMITS,
    GROUP_METADATA,
    GROUP_RECORDS,
)


# --- notifiers ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Notifier:
    """One routed notifier: its name, the lowest severity it takes, and where it posts (None for the log)."""

    name: str
    min_severity: str
    url: str | None = field(default=None, repr=False)  # a secret: never printed
    payload: Callable[[Alert], dict[str, Any]] | None = None


def resolve_notifiers(
    checks: ChecksConfig, env: Mapping[str, str], secret_lookup: Callable[[str, str], str] | None
) -> tuple[tuple[Notifier, ...], tuple[str, ...]]:
    """The routed notifiers whose URL is set, and one sentence per routed notifier that is not configured."""
    notifiers: list[Notifier] = []
    unconfigured: list[str] = []
    posting = {
        "webhook": (checks.webhook_url_env, checks.webhook_url_key, webhook_payload),
        "slack": (checks.slack_webhook_url_env, checks.slack_webhook_url_key, slack_payload),
    }
    for name, severity in checks.routes.items():
        if name == "log":
            notifiers.append(Notifier(name, severity))
            continue
        env_name, key, payload = posting[name]
        url: str | None
        if checks.secret_scope and key:
            if secret_lookup is None:
                raise ConfigError(
                    f"checks.{name}_url_key is in secret scope {checks.secret_scope!r} but no secret lookup is "
                    f"available here; run on Databricks or set {env_name} instead."
                )
            url = secret_lookup(checks.secret_scope, key)
            where = f"secret {checks.secret_scope}/{key}"
        else:
            url = env.get(env_name) or None
            where = f"${env_name}"
        if url:
            notifiers.append(Notifier(name, severity, url, payload))
        else:
            unconfigured.append(f"{name} notifications are routed but not configured ({where} is not set)")
    return tuple(notifiers), tuple(unconfigured)


def post_json(url: str, payload: Mapping[str, Any], name: str, checks: ChecksConfig) -> None:
    """POST `payload` as JSON; retried `checks.attempts` times with doubling backoff on a non-2xx answer or a
    connection failure. The error names the notifier, never the URL (it is a secret)."""
    body = json.dumps(payload, default=str).encode()
    problem = ""
    for attempt in range(checks.attempts):
        if attempt:
            time.sleep(checks.backoff_s * 2 ** (attempt - 1))
        request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=checks.timeout_s) as answer:
                if 200 <= answer.status < 300:
                    return
                problem = f"HTTP {answer.status}"
        except urllib.error.HTTPError as error:
            problem = f"HTTP {error.code}"
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            reason = getattr(error, "reason", error)
            problem = f"no answer ({type(reason).__name__})"
    raise NotificationError(f"{name} answered {problem} after {checks.attempts} attempt(s)")


def deliver(alert: Alert, notifiers: Sequence[Notifier], checks: ChecksConfig) -> list[str]:
    """Send one alert's current status to every notifier routed for its severity; returns the failures."""
    import logging

    failures = []
    for notifier in notifiers:
        if not routed(alert, notifier.min_severity):
            continue
        if notifier.url is None:
            logging.getLogger("radar.alerts").warning(headline(alert))
            continue
        assert notifier.payload is not None
        try:
            post_json(notifier.url, notifier.payload(alert), notifier.name, checks)
        except NotificationError as error:
            failures.append(f"alert {alert.alert_id} ({alert.rule}): {error}")
    return failures


# --- the run ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleResult:
    """One rule in one run: passed, failed (with its failing groups), skipped (a table missing) or error."""

    rule: str
    severity: str
    threshold: float
    status: str  # passed | failed | skipped | error | disabled
    failing: tuple[str, ...] = ()  # the groups (or the cluster) that failed
    note: str = ""


@dataclass(frozen=True)
class CheckReport:
    """What one check run found and did."""

    checked_at: datetime
    results: tuple[RuleResult, ...]
    opened: tuple[Alert, ...]
    updated: tuple[Alert, ...]
    resolved: tuple[Alert, ...]
    notified: tuple[Alert, ...]
    undelivered: tuple[str, ...]
    unconfigured: tuple[str, ...]
    duration_s: float

    @property
    def failed_critical(self) -> bool:
        return any(r.status == "failed" and r.severity == Severity.CRITICAL for r in self.results)

    def summary_line(self) -> str:
        failed = [r.rule for r in self.results if r.status == "failed"]
        return (
            f"{len(self.results)} rules, {len(failed)} failing{' (' + ', '.join(failed) + ')' if failed else ''}; "
            f"alerts: {len(self.opened)} opened, {len(self.updated)} updated, {len(self.resolved)} resolved, "
            f"{len(self.notified)} notified, {len(self.undelivered)} undelivered; {self.duration_s:.1f} s"
        )


def _where(cluster: str, group_id: str | None) -> str:
    return f"group {group_id}" if group_id is not None else f"cluster {cluster}"


def _load_alerts(spark: SessionSource, config: RadarConfig) -> list[Alert]:
    """Alerts still open, or whose status is not delivered yet, of `config.cluster`. A small local table is read
    from its files in the driver (`delta_log.rows_from_files`): no snapshot and job every minute of `radar run`."""
    timestamps = ("first_seen", "last_seen", "updated_at", "resolved_at", "notified_at")
    stored = _rows_from_files(config, ALERTS, DRIVER_READ_MAX_BYTES, ALERTS.column_names)
    if stored is not None:
        return [
            Alert.from_row(row | {name: _utc_of_arrow(row[name]) for name in timestamps})
            for row in stored.to_pylist()
            if row["status"] == AlertStatus.OPEN or row["notified_at"] is None
        ]
    if _absent_here(config, ALERTS):
        return []
    rows = read_table(_session(spark), config, ALERTS)
    if rows is None:
        return []
    pending = rows.where((F.col("status") == str(AlertStatus.OPEN)) | F.col("notified_at").isNull())
    return [Alert.from_row(r.asDict() | {name: _utc(r[name]) for name in timestamps}) for r in pending.collect()]


def _write_alerts(spark: SparkSession, config: RadarConfig, alerts: Sequence[Alert]) -> None:
    """MERGE rows into `alerts` by alert_id (replayed, the same rows upsert to the same values)."""
    if not alerts:
        return
    rows = [tuple(a.as_row()[c] for c in ALERTS.column_names) for a in alerts]
    upsert_by_key(spark.createDataFrame(rows, ALERTS.ddl), config, ALERTS, ["alert_id"])


def rules_of(config: RadarConfig) -> tuple[CheckRule, ...]:
    """The default rules with `checks.rules` applied; an unknown rule name is a ConfigError sentence."""
    overrides = {
        name: RuleOverride(rule.enabled, rule.threshold, Severity(rule.severity) if rule.severity else None)
        for name, rule in config.checks.rules.items()
    }
    try:
        return configured_rules(overrides)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def run_checks(
    spark: SessionSource,
    config: RadarConfig,
    *,
    now: datetime | None = None,
    env: Mapping[str, str] = os.environ,
    beside_detection: bool = False,
) -> CheckReport:
    """Run the alert rules on the tables of `config.cluster`, MERGE the alert lifecycle into `alerts`, and notify
    every alert whose status is not delivered yet (this run's and earlier runs' undelivered ones). Raises
    NoTablesToCheck when no table a rule reads exists. `beside_detection` (`radar run`): its writes to `alerts`
    run in write turns (`detection_turn`), between live detection micro-batches; the reads, the suite (pandas)
    and the notifications hold none."""
    turn = write_turn if beside_detection else nullcontext
    from rebalance_radar.expectations.suites import run_suite
    from rebalance_radar.pipelines.runtime.session import on_databricks

    started = time.monotonic()
    now = now or datetime.now(UTC)
    rules = rules_of(config)
    lookup = None
    if on_databricks() and config.checks.secret_scope:
        from rebalance_radar.pipelines.stages.sources import databricks_secret_lookup

        lookup = databricks_secret_lookup(_session(spark))
    notifiers, unconfigured = resolve_notifiers(config.checks, env, lookup)
    # read-only, several Spark jobs (seconds on 2 cores beside a live run): taken as one turn it held a detection
    # batch up to its end (live p95 10 s); beside the detection batches, each of those waits for one job at most
    view = build_check_view(spark, config, now)
    if not view.present:
        raise NoTablesToCheck(
            f"there are no tables to check under {config.data_dir}: run `radar run` or `radar replay` first "
            "(or pass --data-dir where they wrote)."
        )
    applicable = [r for r in rules if r.enabled and all(t.name in view.present for t in r.tables)]
    outcome = run_suite(view.rows, applicable, run_name=f"radar-check-{now.isoformat()}")  # pandas: no Spark job
    by_rule = {str(r.name): r for r in applicable}
    failures: list[RuleFailure] = []
    failing_where: dict[str, list[str]] = {}
    for row in outcome.failing:
        rule = by_rule[row.rule]
        cluster, group_id = row.values.get("cluster") or config.cluster, row.values.get("group_id")
        value = row.values.get(rule.column)
        observed = float(value) if value is not None else None
        full = view.row_of(cluster, group_id)
        details = {
            "row": {k: v for k, v in full.items() if v is not None},
            "expectation": "expect_column_values_to_be_between",
            "column": rule.column,
            ("max_value" if rule.bound == "max" else "min_value"): rule.threshold,
        }
        failures.append(
            RuleFailure(
                rule=row.rule,
                severity=str(rule.severity),
                cluster=cluster,
                group_id=group_id,
                observed_value=observed,
                threshold=float(rule.threshold),
                message=rule.message(observed if observed is not None else float("nan"), _where(cluster, group_id)),
                details=json.dumps(details, default=str, sort_keys=True),
            )
        )
        failing_where.setdefault(row.rule, []).append(group_id if group_id is not None else f"({cluster})")

    results = []
    for rule in rules:
        name = str(rule.name)
        if not rule.enabled:
            results.append(RuleResult(name, str(rule.severity), rule.threshold, "disabled"))
        elif rule not in applicable:
            missing = ", ".join(t.name for t in rule.tables if t.name not in view.present)
            results.append(RuleResult(name, str(rule.severity), rule.threshold, "skipped", note=f"no {missing} table"))
        elif name in outcome.errors:
            results.append(RuleResult(name, str(rule.severity), rule.threshold, "error", note=outcome.errors[name]))
        elif name in failing_where:
            where = tuple(sorted(set(failing_where[name])))
            results.append(RuleResult(name, str(rule.severity), rule.threshold, "failed", where))
        else:
            results.append(RuleResult(name, str(rule.severity), rule.threshold, "passed"))

    known = _load_alerts(spark, config)  # [] while the table does not exist
    changes: AlertChanges = reconcile(known, failures, set(outcome.evaluated), now)
    current = {a.alert_id: a for a in known} | {a.alert_id: a for a in changes.rows}
    notified: list[Alert] = []
    undelivered: list[str] = []
    for alert in (a for a in current.values() if a.pending):
        problems = deliver(alert, notifiers, config.checks)
        if problems:
            undelivered += problems
        else:
            notified.append(Alert(**{**alert.as_row(), "notified_at": datetime.now(UTC)}))
    # one MERGE of what changed and what was delivered: an alert that opens is written once, not once opened and
    # once notified (in a live run each MERGE is seconds of the two cores); a run that dies between the post and
    # the write leaves the failure to the next run, which opens and posts it again (at least once, never lost)
    written = {a.alert_id: a for a in changes.rows} | {a.alert_id: a for a in notified}
    if written:
        session = _session(spark)
        with turn():
            ensure_tables(session, config, [ALERTS])
            _write_alerts(session, config, list(written.values()))
    return CheckReport(
        checked_at=now,
        results=tuple(results),
        opened=changes.opened,
        updated=changes.updated,
        resolved=changes.resolved,
        notified=tuple(notified),
        undelivered=tuple(undelivered),
        unconfigured=unconfigured,
        duration_s=time.monotonic() - started,
    )


# --- `radar check`'s summary and `radar run`'s schedule -------------------------------------------------------------

STATUS_STYLE = {"passed": "green", "failed": "bold red", "skipped": "dim", "error": "yellow", "disabled": "dim"}


def render_check_report(report: CheckReport, console: Any) -> None:
    """The rules as a rich table (status, severity, threshold, what failed), then the alerts and delivery."""
    from rich.table import Table

    table = Table(title=f"radar check at {report.checked_at.isoformat(timespec='seconds')}")
    table.add_column("rule", no_wrap=True, min_width=max(len(r.rule) for r in report.results))
    for column in ("status", "severity", "threshold"):
        table.add_column(column)
    table.add_column("failing", overflow="fold")
    for r in report.results:
        failing = ", ".join(r.failing[:5]) + (f" (+{len(r.failing) - 5})" if len(r.failing) > 5 else "")
        table.add_row(
            r.rule, f"[{STATUS_STYLE[r.status]}]{r.status}[/]", r.severity, f"{r.threshold:g}", failing or r.note
        )
    console.print(table)
    for alert in report.opened + report.resolved:
        console.print(headline(alert), markup=False, highlight=False)
    console.print(report.summary_line(), markup=False, highlight=False)
    for line in report.unconfigured + report.undelivered:
        console.print(f"note: {line}", markup=False, highlight=False)


CHECK_STOP_WAIT_S = 5.0
CHECK_HISTORY = 20
"""Check reports and errors a run's schedule keeps (for diagnostics), newest last."""


class CheckSchedule:
    """Runs `run_checks` every `checks.interval_s` in a background thread of the same SparkSession (inside `radar
    run`); a failed run is one line on stderr and the next one tries again. Its Spark jobs go to their own
    scheduler pool ("checks"): where the scheduler is FAIR (Databricks' default) they do not queue ingest's jobs
    behind them; locally (FIFO) they interleave with them (benchmarks/check.py measures the cost). Their writes
    run in write turns, between the live detection micro-batches (`pipelines.stages.detection_turn`)."""

    def __init__(self, spark: SparkSession, config: RadarConfig, *, interval_s: float | None = None) -> None:
        self.spark = spark
        self.config = config
        self.interval_s = interval_s if interval_s is not None else config.checks.interval_s
        # the newest few only: a run lasts months, a check runs every minute
        self.reports: deque[CheckReport] = deque(maxlen=CHECK_HISTORY)
        self.errors: deque[str] = deque(maxlen=CHECK_HISTORY)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="radar-checks", daemon=True)

    def _loop(self) -> None:
        self.spark.sparkContext.setLocalProperty("spark.scheduler.pool", "checks")
        while not self._stop.wait(self.interval_s):
            try:
                report = run_checks(self.spark, self.config, beside_detection=True)
            except NoTablesToCheck:
                continue  # nothing ingested yet
            except Exception as error:  # one line; the next run tries again
                first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
                self.errors.append(first)
                print(f"radar run: checks failed: {first}", file=sys.stderr, flush=True)
                continue
            self.reports.append(report)
            if report.opened or report.resolved or report.undelivered:
                print(f"radar run: checks: {report.summary_line()}", file=sys.stderr, flush=True)

    def __enter__(self) -> CheckSchedule:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        # a check under way is not waited for beyond a few seconds (a stop must end within its bound): its thread
        # ends with the process, and its alerts MERGE either committed whole or not at all
        self._thread.join(timeout=CHECK_STOP_WAIT_S)
