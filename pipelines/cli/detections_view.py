"""`radar detections`: the gold detections as a readable terminal table, newest first, with a summary line.

A local data dir is read without a JVM (`deltalake` reads the table, DuckDB filters and orders it): on call, the
answer should not wait for Spark to start. Tables in a catalog (Databricks) are read with Spark."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.runtime.console import fitted_table, print_line, print_table
from rebalance_radar.pipelines.storage.delta_log import rows_from_files
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import (
    DETECTIONS,
    INCIDENTS,
    UNRESOLVED_DETECTION_STATUSES,
    DetectionStatus,
    IncidentStatus,
    Severity,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SEVERITY_STYLE = {str(Severity.CRITICAL): "bold red", str(Severity.WARNING): "yellow", str(Severity.INFO): "cyan"}
SHOWN_COLUMNS = ("detected_at", "status", "severity", "kind", "group_id", "generation", "member_id", "summary")


def detections_location(config: RadarConfig) -> Path | None:
    """The local detections table's folder (None: the tables are in a catalog); refused in one sentence if the data
    dir holds none."""
    location = TableCatalog(config).location(DETECTIONS)
    if location is not None and not (location / "_delta_log").is_dir():
        raise FileNotFoundError(
            f"No detections table under {config.data_dir}: run `radar run` or `radar replay` first "
            "(or pass --data-dir where they wrote)."
        )
    return location


def load_local_detections(
    location: Path, *, group: str | None = None, open_only: bool = False
) -> list[dict[str, Any]] | None:
    """A local table's detections, newest first (by detected_at), optionally of one group and/or still open: read
    from its files (`delta_log.rows_from_files`), filtered and ordered by DuckDB, no JVM. None when its files alone
    are not its rows (a reader feature delta-rs lacks): Spark reads it then."""
    import duckdb

    rows = rows_from_files(location, DETECTIONS.column_names)
    if rows is None:
        return None
    where, params = [], []
    if group is not None:
        where.append("group_id = ?")
        params.append(group)
    if open_only:
        statuses = [str(status) for status in UNRESOLVED_DETECTION_STATUSES]
        where.append(f"status IN ({', '.join('?' for _ in statuses)})")
        params.extend(statuses)
    query = (
        f"SELECT * FROM {DETECTIONS.name}"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " ORDER BY detected_at DESC NULLS LAST, detection_id"
    )
    with duckdb.connect() as connection:
        connection.register(DETECTIONS.name, rows)
        return connection.execute(query, params).to_arrow_table().to_pylist()


def load_detections(
    spark: SparkSession, config: RadarConfig, *, group: str | None = None, open_only: bool = False
) -> list[dict[str, Any]]:
    """Detections newest first (by detected_at), optionally of one group and/or still open, read with Spark (a
    catalog's tables, or `--engine spark`)."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    catalog = TableCatalog(config)
    location = detections_location(config)
    rows = (
        spark.read.format("delta").load(str(location))
        if location is not None
        else spark.table(catalog.name(DETECTIONS))
    )
    if group is not None:
        rows = rows.where(F.col("group_id") == group)
    if open_only:
        rows = rows.where(F.col("status").isin(*(str(status) for status in UNRESOLVED_DETECTION_STATUSES)))
    ordered = rows.orderBy(F.col("detected_at").desc_nulls_last(), F.col("detection_id"))
    return [row.asDict() for row in ordered.collect()]


def cell_text(value: Any) -> str:
    """A value as a terminal table shows it: nothing for null, a timestamp to the second."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def detections_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """One line: how many, how many open, per kind."""
    if not rows:
        return "no detections"
    open_count = sum(1 for r in rows if r.get("status") in UNRESOLVED_DETECTION_STATUSES)
    kinds = Counter(str(r.get("kind")) for r in rows)
    groups = len({(r.get("cluster"), r.get("group_id")) for r in rows})
    per_kind = ", ".join(f"{kind} {n}" for kind, n in kinds.most_common())
    noun = "detection" if len(rows) == 1 else "detections"
    return f"{len(rows)} {noun} ({open_count} open) in {groups} group(s): {per_kind}"


DROPPED_WHEN_NARROW = ("member_id", "generation", "status", "severity", "detected_at")
"""The columns a narrow terminal loses first, so the summary (what happened, what to do) keeps room to be read."""


def render_detections(rows: Sequence[Mapping[str, Any]], console: Console, title: str = "detections") -> None:
    """The table (newest first as given), fitted to the console's width, and the summary line."""
    if rows:
        styles = []
        for row in rows:
            style = SEVERITY_STYLE.get(str(row.get("severity")), "")
            if row.get("status") in (DetectionStatus.RESOLVED, DetectionStatus.WITHDRAWN):
                style = "dim"
            styles.append(style)
        cells = [[cell_text(row.get(name)) for name in SHOWN_COLUMNS] for row in rows]
        table, _shown = fitted_table(
            title,
            SHOWN_COLUMNS,
            cells,
            console.width,
            flexible="summary",
            droppable=DROPPED_WHEN_NARROW,
            styles=styles,
        )
        print_table(console, table)
    print_line(console, detections_summary(rows))


# --- cross-group incidents first ----------------------------------------------------------------------------------


def load_local_incidents(
    config: RadarConfig, *, group: str | None = None, open_only: bool = False
) -> list[dict[str, Any]] | None:
    """The local `incidents` table's rows, newest first, optionally those naming `group` and/or still open, without
    a JVM; [] when the data dir has no incidents table (written by runs before incidents existed), None when its
    files alone are not its rows (Spark reads it then)."""
    import duckdb

    location = TableCatalog(config).location(INCIDENTS)
    if location is None or not (location / "_delta_log").is_dir():
        return []
    rows = rows_from_files(location, INCIDENTS.column_names)
    if rows is None:
        return None
    where, params = [], []
    if group is not None:
        where.append("list_contains(groups, ?)")
        params.append(group)
    if open_only:
        where.append("status = ?")
        params.append(str(IncidentStatus.OPEN))
    query = (
        f"SELECT * FROM {INCIDENTS.name}"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " ORDER BY window_start DESC, incident_id"
    )
    with duckdb.connect() as connection:
        connection.register(INCIDENTS.name, rows)
        return connection.execute(query, params).to_arrow_table().to_pylist()


def load_incidents(
    spark: SparkSession, config: RadarConfig, *, group: str | None = None, open_only: bool = False
) -> list[dict[str, Any]]:
    """`load_local_incidents` with Spark (a catalog's tables, or `--engine spark`); [] when there is no table."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    catalog = TableCatalog(config)
    location = catalog.location(INCIDENTS)
    if location is not None and not (location / "_delta_log").is_dir():
        return []
    if location is None and not spark.catalog.tableExists(catalog.name(INCIDENTS)):
        return []
    rows = (
        spark.read.format("delta").load(str(location)) if location is not None else spark.table(catalog.name(INCIDENTS))
    )
    if group is not None:
        rows = rows.where(F.array_contains("groups", group))
    if open_only:
        rows = rows.where(F.col("status") == str(IncidentStatus.OPEN))
    ordered = rows.orderBy(F.col("window_start").desc(), F.col("incident_id"))
    return [row.asDict() for row in ordered.collect()]


def incidents_first(
    detections: Sequence[Mapping[str, Any]], incidents: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any] | None, list[Mapping[str, Any]]]]:
    """Each incident (in the order given) with the detections it links (in the detections' order), then the
    detections no incident links (under None; left out when there are none). A detection two incidents link is
    shown under the first."""
    shown: set[Any] = set()
    sections: list[tuple[Mapping[str, Any] | None, list[Mapping[str, Any]]]] = []
    for incident in incidents:
        linked = set(incident.get("detection_ids") or ())
        rows = [d for d in detections if d.get("detection_id") in linked and d.get("detection_id") not in shown]
        shown.update(d.get("detection_id") for d in rows)
        sections.append((incident, rows))
    rest = [d for d in detections if d.get("detection_id") not in shown]
    if rest or not incidents:
        sections.append((None, rest))
    return sections


def incident_line(incident: Mapping[str, Any]) -> str:
    """One line: when, what, how many groups; the cause names the broker, hosts or client-id prefixes."""
    start, end = cell_text(incident.get("window_start")), cell_text(incident.get("window_end"))
    groups = incident.get("groups") or []
    return (
        f"incident {incident.get('incident_id')} [{incident.get('status')}] {start} .. {end[11:] or end}: "
        f"{incident.get('cause_kind')}, {len(groups)} groups. {incident.get('cause')}"
    )


def render_with_incidents(
    rows: Sequence[Mapping[str, Any]],
    incidents: Sequence[Mapping[str, Any]],
    console: Console,
    title: str = "detections",
) -> None:
    """`render_detections`, with each cross-group incident first and its groups' detections under it; the
    detections no incident explains last."""
    if not incidents:
        render_detections(rows, console, title)
        return
    for incident, linked in incidents_first(rows, incidents):
        if incident is None:
            render_detections(linked, console, f"{title} outside any incident")
            continue
        print_line(console, incident_line(incident))
        if linked:
            render_detections(linked, console, f"{title} of incident {incident.get('incident_id')}")
        else:
            print_line(console, "  (no detections in its groups: the groups moved or rebalanced without one)")
