"""`radar groups`: one line per consumer group, its state, its last rebalance and its open incidents, worst first.

The on-call engineer's first look in a rebalancing storm. A local data dir is read without a JVM (the tables' files
in the driver, DuckDB); the same SQL runs on Spark for a catalog's tables (`checks.check.ViewSources` picks the
engine)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console

from rebalance_radar.pipelines.checks.check import MetricQuery, ViewSources
from rebalance_radar.pipelines.cli.detections_view import cell_text
from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.runtime.console import fitted_table, print_line, print_table
from rebalance_radar.pipelines.storage.delta_log import rows_from_files
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import DETECTIONS, GROUP_HEALTH, UNRESOLVED_DETECTION_STATUSES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

UNRESOLVED = ", ".join(f"'{status}'" for status in UNRESOLVED_DETECTION_STATUSES)
GROUPS = MetricQuery(
    sql=(
        "SELECT h.cluster, h.group_id, h.group_protocol, h.state, h.generation, h.members, h.last_rebalance_at, "
        "h.rebalances_1h, h.last_event_at, (SELECT count(*) FROM {detections} d WHERE d.cluster = h.cluster AND "
        f"d.group_id = h.group_id AND d.status IN ({UNRESOLVED})) AS open_incidents FROM {{group_health}} h"
    ),
    tables=(GROUP_HEALTH.name, DETECTIONS.name),
)
OPEN_KINDS = MetricQuery(
    sql=f"SELECT DISTINCT cluster, group_id, kind FROM {{detections}} WHERE status IN ({UNRESOLVED})",
    tables=(DETECTIONS.name,),
)
GROUP_COLUMNS = (
    "cluster",
    "group_id",
    "group_protocol",
    "state",
    "generation",
    "members",
    "last_rebalance_at",
    "rebalances_1h",
    "last_event_at",
    "open_incidents",
    "open_kinds",
)
"""A group's line for `--format json|csv`: every column `load_groups` gives."""
SHOWN = ("group_id", "group_protocol", "state", "generation", "members", "last_rebalance_at", "rebalances_1h")
SETTLED_STATES = frozenset({"Stable", "Empty", "Dead"})


def local_sources(config: RadarConfig) -> ViewSources | None:
    """The two tables read from their files (no JVM); None when either is not local or not readable so."""
    catalog = TableCatalog(config)
    files = {}
    for schema in (GROUP_HEALTH, DETECTIONS):
        location = catalog.location(schema)
        if location is None:
            return None
        table = rows_from_files(location, schema.column_names)
        if table is None:
            return None
        files[schema.name] = table
    return ViewSources(None, files, {})


def spark_sources(spark: SparkSession, config: RadarConfig) -> ViewSources:
    catalog = TableCatalog(config)
    frames = {}
    for schema in (GROUP_HEALTH, DETECTIONS):
        location = catalog.location(schema)
        reader = spark.read.format("delta")
        frames[schema.name] = reader.load(str(location)) if location is not None else spark.table(catalog.name(schema))
    return ViewSources(spark, {}, frames)


def load_groups(sources: ViewSources) -> list[dict[str, Any]]:
    """One row per group with its open incidents (count and kinds): groups with open incidents first, then the
    ones rebalancing, then by name."""
    kinds: dict[tuple[str, str], list[str]] = {}
    for row in sources.rows(OPEN_KINDS):
        kinds.setdefault((row["cluster"], row["group_id"]), []).append(row["kind"])
    groups = [
        {**row, "open_kinds": ", ".join(sorted(kinds.get((row["cluster"], row["group_id"]), [])))}
        for row in sources.rows(GROUPS)
    ]
    return sorted(
        groups,
        key=lambda g: (-(g["open_incidents"] or 0), g["state"] in SETTLED_STATES, g["cluster"], g["group_id"]),
    )


def groups_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return "no groups (run `radar run` or `radar replay` first)"
    troubled = sum(1 for r in rows if r["open_incidents"])
    moving = sum(1 for r in rows if r["state"] not in SETTLED_STATES)
    return f"{len(rows)} group(s): {troubled} with open incidents, {moving} rebalancing"


DROPPED_WHEN_NARROW = ("group_protocol", "generation", "rebalances_1h", "members")


def group_cells(row: Mapping[str, Any]) -> list[str]:
    """A group's line as text: the shown columns, then its open incidents with their kinds."""
    incidents = f"{row['open_incidents']} ({row['open_kinds']})" if row["open_incidents"] else "0"
    return [*(cell_text(row.get(name)) for name in SHOWN), incidents]


def group_style(row: Mapping[str, Any]) -> str:
    return "bold red" if row["open_incidents"] else ("yellow" if row["state"] not in SETTLED_STATES else "")


def render_groups(rows: Sequence[Mapping[str, Any]], console: Console) -> None:
    if rows:
        table, _shown = fitted_table(
            "groups",
            (*SHOWN, "open incidents"),
            [group_cells(row) for row in rows],
            console.width,
            flexible="open incidents",
            droppable=DROPPED_WHEN_NARROW,
            styles=[group_style(row) for row in rows],
        )
        print_table(console, table)
    print_line(console, groups_summary(rows))
