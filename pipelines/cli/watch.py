"""`radar watch`: the on-call screen. The groups (worst first, with their lag when the tables have it) and the open
detections, read again from a local data dir's tables every few seconds, without a JVM.

On a terminal the view is redrawn in place (rich); on a pipe (a wall screen fed over ssh, a CI log) a plain snapshot
is printed at each refresh. It only reads the tables, so it runs beside `radar run`, on the same or another host
that sees the data dir. Ctrl-C ends it (exit 0)."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from rich.console import Console, Group
from rich.text import Text

from rebalance_radar.pipelines.cli.detections_view import (
    DROPPED_WHEN_NARROW,
    SEVERITY_STYLE,
    SHOWN_COLUMNS,
    cell_text,
    detections_location,
    load_local_detections,
)
from rebalance_radar.pipelines.cli.groups_view import (
    SHOWN,
    group_cells,
    group_style,
    groups_summary,
    load_groups,
    local_sources,
)
from rebalance_radar.pipelines.config import ConfigError, RadarConfig
from rebalance_radar.pipelines.runtime.console import fitted_table, is_terminal, output_console, print_table
from rebalance_radar.pipelines.storage.delta_log import rows_from_files
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import TABLES

DEFAULT_INTERVAL_S = 5.0
LAG_TABLE = "group_lag"
"""The lag table's name: its columns show only when the data dir has it (a run that measures lag writes it)."""
LAG_COLUMNS = ("lag", "max partition lag", "lag status")
NEWEST_LAG = """
SELECT cluster, group_id, max(group_total_lag) AS lag, max(group_max_lag) AS max_partition_lag,
       string_agg(DISTINCT lag_status, ', ' ORDER BY lag_status) AS lag_status
FROM group_lag l
WHERE measured_at = (SELECT max(measured_at) FROM group_lag m WHERE m.cluster = l.cluster AND m.group_id = l.group_id)
GROUP BY cluster, group_id
"""
"""Each group's lag at its newest poll: the total and largest partition lag, and the partitions' statuses."""


@dataclass(frozen=True)
class WatchSnapshot:
    """What one refresh read: the groups (with their newest lag when there is a lag table), the open detections, the
    run's status line, and when."""

    taken_at: datetime
    groups: tuple[dict[str, Any], ...]
    open_detections: tuple[dict[str, Any], ...]
    with_lag: bool
    run_line: str | None = None
    problems: tuple[str, ...] = field(default=())


def newest_lag(config: RadarConfig) -> dict[tuple[str, str], dict[str, Any]] | None:
    """Each group's newest lag, by (cluster, group_id); None when the data dir has no lag table, or no row in it."""
    schema = TABLES.get(LAG_TABLE)
    location = TableCatalog(config).location(schema) if schema is not None else None
    if schema is None or location is None or not (location / "_delta_log").is_dir():
        return None
    rows = rows_from_files(location, schema.column_names)
    if rows is None:
        raise ConfigError(
            f"{LAG_TABLE} uses a Delta feature the reader without a JVM lacks; use radar sql --engine spark."
        )
    import duckdb

    with duckdb.connect() as connection:
        connection.register(LAG_TABLE, rows)
        found = connection.execute(NEWEST_LAG).to_arrow_table().to_pylist()
    return {(row["cluster"], row["group_id"]): row for row in found} or None  # no poll yet: no lag to show


def take_snapshot(config: RadarConfig) -> WatchSnapshot:
    """Read the tables once (deltalake and DuckDB, no JVM)."""
    location = detections_location(config)
    if location is None:
        raise ConfigError("radar watch reads a local data dir; these tables are in a catalog: use a dashboard there.")
    sources = local_sources(config)
    detections = load_local_detections(location, open_only=True)
    if sources is None or detections is None:
        raise ConfigError(
            f"the tables under {config.data_dir} use a Delta feature the reader without a JVM lacks; use "
            "radar groups --engine spark and radar detections --engine spark."
        )
    groups = load_groups(sources)
    lag = newest_lag(config)
    if lag is not None:
        groups = [{**group, **lag.get((group["cluster"], group["group_id"]), {})} for group in groups]
    from rebalance_radar.pipelines.runtime.run_status import read_run_status

    run = read_run_status(config.data_dir)
    return WatchSnapshot(
        taken_at=datetime.now(UTC),
        groups=tuple(groups),
        open_detections=tuple(detections),
        with_lag=lag is not None,
        run_line=run.lines()[0] if run is not None else None,
    )


def lag_cells(row: Mapping[str, Any]) -> list[str]:
    return [cell_text(row.get("lag")), cell_text(row.get("max_partition_lag")), cell_text(row.get("lag_status"))]


def snapshot_renderables(snapshot: WatchSnapshot, width: int, header: str) -> list[Any]:
    """The view: a header line, the groups table, the open detections table, each fitted to `width`."""
    parts: list[Any] = [Text(header)]
    if snapshot.run_line:
        parts.append(Text(snapshot.run_line))
    for problem in snapshot.problems:
        parts.append(Text(problem, style="bold red"))
    if snapshot.groups:
        columns = (*SHOWN, "open incidents", *(LAG_COLUMNS if snapshot.with_lag else ()))
        cells = [group_cells(row) + (lag_cells(row) if snapshot.with_lag else []) for row in snapshot.groups]
        table, _shown = fitted_table(
            "groups",
            columns,
            cells,
            width,
            flexible="open incidents",
            droppable=("group_protocol", "generation", "rebalances_1h", "members", "max partition lag"),
            styles=[group_style(row) for row in snapshot.groups],
        )
        parts.append(table)
    parts.append(Text(groups_summary(snapshot.groups)))
    if snapshot.open_detections:
        cells = [[cell_text(row.get(name)) for name in SHOWN_COLUMNS] for row in snapshot.open_detections]
        table, _shown = fitted_table(
            "open detections (newest first)",
            SHOWN_COLUMNS,
            cells,
            width,
            flexible="summary",
            droppable=DROPPED_WHEN_NARROW,
            styles=[SEVERITY_STYLE.get(str(row.get("severity")), "") for row in snapshot.open_detections],
        )
        parts.append(table)
    count = len(snapshot.open_detections)
    parts.append(Text(f"{count} open detection{'' if count == 1 else 's'}"))
    return parts


def header_line(config: RadarConfig, snapshot: WatchSnapshot, interval_s: float, terminal: bool) -> str:
    stamp = snapshot.taken_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    stop = "; Ctrl-C to stop" if terminal else ""
    return f"radar watch: {config.data_dir} at {stamp}, every {interval_s:g} s{stop}"


def print_snapshot(console: Console, parts: Sequence[Any]) -> None:
    """A plain snapshot on a pipe: each part's lines without rich's padding, then an empty line."""
    for part in parts:
        if isinstance(part, Text):
            console.out(part.plain, highlight=False)
        else:
            print_table(console, part)
    console.out("", highlight=False)
    console.file.flush()


def run_watch(config: RadarConfig, interval_s: float, *, count: int | None = None, stream: TextIO | None = None) -> int:
    """Refresh every `interval_s` until Ctrl-C (or `count` refreshes); returns the exit code (0)."""
    if interval_s <= 0:
        raise ConfigError(f"--interval {interval_s:g} is not a number of seconds above 0; e.g. --interval 5.")
    stream = stream or sys.stdout
    console = output_console(stream)
    terminal = is_terminal(stream)
    snapshot = take_snapshot(config)  # the first read says a wrong data dir at once, before any view starts
    live = None
    if terminal:
        from rich.live import Live

        live = Live(console=console, auto_refresh=False, transient=False, vertical_overflow="crop")
        live.start()
    refreshes = 0
    try:
        while True:
            parts = snapshot_renderables(snapshot, console.width, header_line(config, snapshot, interval_s, terminal))
            if live is not None:
                live.update(Group(*parts), refresh=True)
            else:
                print_snapshot(console, parts)
            refreshes += 1
            if count is not None and refreshes >= count:
                return 0
            time.sleep(interval_s)
            snapshot = refreshed(config, snapshot)
    except KeyboardInterrupt:  # Ctrl-C: the on-call engineer is done watching
        return 0
    finally:
        if live is not None:
            live.stop()


def refreshed(config: RadarConfig, previous: WatchSnapshot) -> WatchSnapshot:
    """A new snapshot; when the read fails (a table being rewritten, the data dir unmounted), the previous one
    with the failure said on top, and the next refresh tries again."""
    try:
        return take_snapshot(config)
    except KeyboardInterrupt:
        raise
    except Exception as error:  # shown in the view, never hidden: the screen must say it is stale
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        stale = previous.taken_at.strftime("%H:%M:%S UTC")
        problem = f"refresh failed ({first}); showing the tables as read at {stale}"
        return WatchSnapshot(
            taken_at=datetime.now(UTC),
            groups=previous.groups,
            open_detections=previous.open_detections,
            with_lag=previous.with_lag,
            run_line=previous.run_line,
            problems=(problem,),
        )
