"""`radar report --out FILE.html`: per consumer group, the rebalance timeline with causes, members over time,
detections with their evidence and the group's health, as one HTML file that opens offline.

Why one self-contained file: it is what an on-call engineer attaches to an incident ticket or opens on a laptop
without network. The charts are altair (Vega-Lite) specs rendered by vega-embed, whose JavaScript bundle
(Vega, Vega-Lite, vega-embed) comes from `vl-convert-python` and is inlined once in the page.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from rebalance_radar.pipelines.config import OWN_GROUP_PREFIX, RadarConfig
from rebalance_radar.pipelines.storage.delta_log import rows_from_files
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import (
    ALERTS,
    DETECTIONS,
    GROUP_HEALTH,
    INCIDENTS,
    REBALANCES,
    UNRESOLVED_DETECTION_STATUSES,
    TableSchema,
)

"""Declared in transforms.schemas (ALERTS) by the checks (`radar check`); read only when it is declared and exists."""
NO_ALERTS_TABLE = "no alerts table (radar check has not run)"
CHART_WIDTH = 760
EMBED_OPTIONS = '{actions: false, renderer: "svg"}'
"""SVG: the axis labels are text in the page (selectable, searchable, and what the browser test reads)."""
SEVERITY_COLOURS = {"critical": "#c0392b", "warning": "#e67e22", "info": "#2e86c1"}


class ReportError(RuntimeError):
    """The report could not be written; the message says what to do."""


@dataclass(frozen=True)
class ReportData:
    """The gold rows a report is drawn from (plain dicts, timestamps as datetimes), and the alerts if any."""

    rebalances: tuple[dict[str, Any], ...]
    detections: tuple[dict[str, Any], ...]
    health: tuple[dict[str, Any], ...]
    alerts: tuple[dict[str, Any], ...] | None  # None: no alerts table
    sources: Mapping[SourceKey, tuple[dict[str, Any], ...]] | None = None
    """The source records the detections' evidence names, by (table, topic, partition, offset); None: not read
    (a catalog's tables)."""
    incidents: tuple[dict[str, Any], ...] = ()
    """Cross-group incidents (`transforms.incidents`), shown first: each names the groups whose sections follow."""

    @property
    def groups(self) -> list[str]:
        found = {r["group_id"] for r in (*self.rebalances, *self.detections, *self.health) if r.get("group_id")}
        return sorted(found, key=lambda g: (-self.open_detections(g), g))

    def open_detections(self, group: str) -> int:
        unresolved = UNRESOLVED_DETECTION_STATUSES
        return sum(1 for d in self.detections if d["group_id"] == group and d.get("status") in unresolved)

    def of(self, rows: Sequence[dict[str, Any]], group: str) -> list[dict[str, Any]]:
        return [r for r in rows if r.get("group_id") == group]


def _naive_utc(value: Any) -> Any:
    """A timestamp read from a table's files as Spark collects it in the report's session: naive, in UTC."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _file_rows(config: RadarConfig, table: TableSchema, location: Path) -> tuple[dict[str, Any], ...] | None:
    """A local table's rows of this cluster from its files in the driver (no JVM); None when its files alone are
    not its rows (`delta_log.rows_from_files`)."""
    arrow = rows_from_files(location, table.column_names)
    if arrow is None:
        return None
    rows = ({k: _naive_utc(v) for k, v in row.items()} for row in arrow.to_pylist())
    return tuple(row for row in rows if "cluster" not in row or row["cluster"] == config.cluster)


def _table_rows(
    spark_of: Callable[[], SparkSession], config: RadarConfig, table: TableSchema
) -> tuple[dict[str, Any], ...] | None:
    """A gold table's rows of this cluster (None when it does not exist): a local table from its files, else (a
    catalog's, or files delta-rs cannot read exactly) with the session `spark_of` gives, made only then."""
    catalog = TableCatalog(config)
    location = catalog.location(table)
    frame: DataFrame
    if location is not None:
        if not (location / "_delta_log").is_dir():
            return None
        from_files = _file_rows(config, table, location)
        if from_files is not None:
            return from_files
        spark = spark_of()
        frame = spark.read.format("delta").load(str(location))
    else:
        spark = spark_of()
        if not spark.catalog.tableExists(catalog.name(table)):
            return None
        frame = spark.table(catalog.name(table))
    if "cluster" in frame.columns:
        frame = frame.where(frame["cluster"] == config.cluster)
    return tuple(row.asDict(recursive=True) for row in frame.collect())


def users_rows(rows: tuple[dict[str, Any], ...] | None, config: RadarConfig) -> tuple[dict[str, Any], ...] | None:
    """The rows of the users' groups: radar's own source consumers (`OWN_GROUP_PREFIX`) are left out, as the
    detection leaves them out, unless `detect.include_own_groups`."""
    if rows is None or config.detect.include_own_groups:
        return rows
    return tuple(r for r in rows if not str(r.get("group_id") or "").startswith(OWN_GROUP_PREFIX))


def load_report_data(spark_of: Callable[[], SparkSession], config: RadarConfig) -> ReportData | None:
    """The report's rows; None when the data dir has no gold tables at all."""
    rebalances = users_rows(_table_rows(spark_of, config, REBALANCES), config)
    detections = users_rows(_table_rows(spark_of, config, DETECTIONS), config)
    health = users_rows(_table_rows(spark_of, config, GROUP_HEALTH), config)
    if rebalances is None and detections is None and health is None:
        return None
    alerts = users_rows(_table_rows(spark_of, config, ALERTS), config)
    sources = source_records(config, detections or ())
    incidents = _table_rows(spark_of, config, INCIDENTS) or ()
    ordered = tuple(sorted(incidents, key=lambda i: (i["window_start"], i["incident_id"]), reverse=True))
    return ReportData(rebalances or (), detections or (), health or (), alerts, sources, ordered)


# --- evidence: the source records a detection names ------------------------------------------------------------

SourceKey = tuple[str, str, int, int]
"""(table, topic, partition, offset): one evidence entry's record."""
RECORD_COLUMNS_LEFT_OUT = frozenset({"cluster", "src_topic", "src_partition", "src_offset", "src_timestamp"})
"""Columns an evidence line does not repeat: the record's position is its heading."""


def evidence_refs(detection: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The detection's evidence entries ({table, topic, partition, offset, event_time}); none when it names none."""
    try:
        refs = json.loads(detection.get("evidence") or "[]")
    except ValueError:
        return []
    return [ref for ref in refs if isinstance(ref, dict)] if isinstance(refs, list) else []


def source_key(ref: Mapping[str, Any]) -> SourceKey | None:
    try:
        return (str(ref["table"]), str(ref["topic"]), int(ref["partition"]), int(ref["offset"]))
    except (KeyError, TypeError, ValueError):
        return None


def source_records(
    config: RadarConfig, detections: Sequence[Mapping[str, Any]]
) -> dict[SourceKey, tuple[dict[str, Any], ...]] | None:
    """The records the detections' evidence names, read from a local data dir's tables (DuckDB over their files,
    only the named positions); None when the tables are a catalog's."""
    import duckdb
    import pyarrow as pa

    from rebalance_radar.pipelines.storage.delta_log import dataset_of
    from rebalance_radar.transforms.schemas import TABLES

    wanted: dict[str, set[SourceKey]] = {}
    for detection in detections:
        for ref in evidence_refs(detection):
            key = source_key(ref)
            if key is not None:
                wanted.setdefault(key[0], set()).add(key)
    catalog = TableCatalog(config)
    found: dict[SourceKey, list[dict[str, Any]]] = {}
    for name, keys in sorted(wanted.items()):
        table = TABLES.get(name)
        if table is None or "src_offset" not in table.column_names:
            continue
        location = catalog.location(table)
        if location is None:
            return None
        dataset = dataset_of(location) if (location / "_delta_log").is_dir() else None
        if dataset is None:
            continue
        positions = pa.table(
            {
                "topic": [k[1] for k in keys],
                "part": pa.array([k[2] for k in keys], pa.int32()),
                "pos": pa.array([k[3] for k in keys], pa.int64()),
            }
        )
        with duckdb.connect() as connection:
            connection.register("records", dataset)
            connection.register("positions", positions)
            rows = (
                connection.execute(
                    "SELECT r.* FROM records r JOIN positions p ON r.src_topic = p.topic AND r.src_partition = p.part "
                    "AND r.src_offset = p.pos WHERE r.cluster = ? ORDER BY r.src_offset",
                    [config.cluster],
                )
                .to_arrow_table()
                .to_pylist()
            )
        for row in rows:
            key = (name, str(row["src_topic"]), int(row["src_partition"]), int(row["src_offset"]))
            found.setdefault(key, []).append({k: _naive_utc(v) for k, v in row.items()})
    return {key: tuple(rows) for key, rows in found.items()}


# --- charts --------------------------------------------------------------------------------------------------------


def _iso(value: Any) -> str | None:
    """Timestamps for Vega-Lite: ISO-8601 in UTC (Delta gives naive UTC datetimes in this session)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return str(value)


def _utc_text(value: Any) -> str:
    """A timestamp as the tooltips say it: 24-hour, UTC, to the millisecond."""
    iso = _iso(value)
    return "" if iso is None else iso.replace("T", " ").replace("Z", "")


def time_axis(field: str, moments: Sequence[str | None]) -> Any:
    """The x encoding of a time field: a UTC scale (Vega would draw the browser's local time) labelled on a
    24-hour clock (Vega's default labels are 12-hour without AM/PM), as fine as the span shown needs."""
    import altair as alt

    known = sorted(datetime.fromisoformat(m.replace("Z", "+00:00")) for m in moments if m)
    span_s = (known[-1] - known[0]).total_seconds() if known else 0.0
    label = "%H:%M:%S" if span_s < 3600 else ("%H:%M" if span_s < 86400 else "%m-%d %H:%M")
    return alt.X(field, title="time (UTC)", scale=alt.Scale(type="utc"), axis=alt.Axis(format=label, labelOverlap=True))


def generation_chart(rebalances: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Each rebalance as a bar from its start to its stabilisation at the generation/epoch it reached (or tried
    to leave), coloured by cause; members over time as a step line underneath."""
    import altair as alt

    rows = [
        {
            "started": _iso(r["started_at"]),
            "ended": _iso(r["stabilized_at"] or r["started_at"]),
            "started (UTC)": _utc_text(r["started_at"]),
            "stabilised (UTC)": _utc_text(r["stabilized_at"]),
            "generation": r["generation"] if r["generation"] is not None else r["from_generation"],
            "outcome": "stabilised" if r["stabilized_at"] is not None else "never stabilised",
            "cause": r["cause"] or "unknown",
            "detail": r.get("cause_detail") or "",
            "members": r["members_after"],
            "joined": len(r.get("joined") or []),
            "left": len(r.get("left") or []),
            "expired": len(r.get("expired") or []),
            "duration_ms": r["duration_ms"],
        }
        for r in rebalances
        if r.get("started_at") is not None
    ]
    if not rows:
        return None
    data = alt.Data(values=rows)
    tooltip = ["started (UTC):N", "stabilised (UTC):N", "generation:Q", "cause:N", "detail:N", "outcome:N",
               "duration_ms:Q", "joined:Q", "left:Q", "expired:Q"]  # fmt: skip
    moments = [m for r in rows for m in (r["started"], r["ended"])]
    base = alt.Chart(data).encode(x=time_axis("started:T", moments))
    bars = base.mark_bar(height=8, cornerRadius=2).encode(
        x2="ended:T", y=alt.Y("generation:Q", title="generation / epoch"), color=alt.Color("cause:N"), tooltip=tooltip
    )
    starts = base.mark_point(filled=True, size=70).encode(
        y="generation:Q",
        color="cause:N",
        shape=alt.Shape("outcome:N", scale=alt.Scale(domain=["stabilised", "never stabilised"])),
        tooltip=tooltip,
    )
    timeline = (bars + starts).properties(width=CHART_WIDTH, height=140, title="rebalances: generation reached, cause")
    members = (
        alt.Chart(alt.Data(values=[r for r in rows if r["members"] is not None]))
        .mark_line(interpolate="step-after", point=True)
        .encode(
            x=time_axis("ended:T", moments),
            y=alt.Y("members:Q", title="members", scale=alt.Scale(zero=True)),
            tooltip=["stabilised (UTC):N", "members:Q", "joined:Q", "left:Q", "expired:Q"],
        )
        .properties(width=CHART_WIDTH, height=90, title="members after each rebalance")
    )
    return alt.vconcat(timeline, members).resolve_scale(x="shared").to_dict()


def detections_chart(detections: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Each detection from its first to its last evidence (or resolution), one lane per kind, by severity."""
    import altair as alt

    rows = [
        {
            "kind": d["kind"],
            "severity": d["severity"],
            "status": d["status"],
            "from": _iso(d["first_seen"] or d["detected_at"]),
            "to": _iso(d.get("resolved_at") or d["last_seen"] or d["detected_at"]),
            "from (UTC)": _utc_text(d["first_seen"] or d["detected_at"]),
            "to (UTC)": _utc_text(d.get("resolved_at") or d["last_seen"] or d["detected_at"]),
            "summary": d.get("summary") or "",
        }
        for d in detections
        if (d.get("first_seen") or d.get("detected_at")) is not None
    ]
    if not rows:
        return None
    colours = alt.Scale(domain=list(SEVERITY_COLOURS), range=list(SEVERITY_COLOURS.values()))
    base = alt.Chart(alt.Data(values=rows)).encode(
        y=alt.Y("kind:N", title=None), color=alt.Color("severity:N", scale=colours), tooltip=["kind:N", "severity:N",
        "status:N", "from (UTC):N", "to (UTC):N", "summary:N"]
    )  # fmt: skip
    moments = [m for r in rows for m in (r["from"], r["to"])]
    spans = base.mark_bar(height=10, cornerRadius=2).encode(x=time_axis("from:T", moments), x2="to:T")
    marks = base.mark_point(filled=True, size=60, shape="diamond").encode(x=time_axis("from:T", moments))
    return (spans + marks).properties(width=CHART_WIDTH, title="detections").to_dict()


# --- HTML ----------------------------------------------------------------------------------------------------------

PAGE_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1000px;
       color: #222; }
h1 { margin-bottom: 0; } .sub { color: #666; margin-top: 4px; }
section.group { border-top: 2px solid #ddd; margin-top: 28px; padding-top: 8px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.critical { color: #c0392b; font-weight: 600; } .warning { color: #b9770e; } .info { color: #2e86c1; }
.resolved { color: #888; } pre { font-size: 11px; white-space: pre-wrap; margin: 4px 0; }
.empty { color: #666; font-style: italic; }
table.evidence { font-size: 11px; margin: 4px 0; } details summary { cursor: pointer; color: #555; }
"""


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, list | tuple):
        return html.escape(", ".join(str(v) for v in value))
    return html.escape(str(value))


def html_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _record_text(row: Mapping[str, Any]) -> str:
    """A source record as one line of its non-empty columns (its position is said beside it)."""
    parts = []
    for name, value in row.items():
        if name in RECORD_COLUMNS_LEFT_OUT or value is None or value == [] or value == "":
            continue
        if isinstance(value, datetime):
            shown: Any = value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        elif isinstance(value, list) and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # a map column
            shown = "{" + ", ".join(f"{k}: {v}" for k, v in value) + "}"
        else:
            shown = value
        parts.append(f"{name}={shown}")
    return "; ".join(str(part) for part in parts)


def evidence_html(
    detection: Mapping[str, Any],
    sources: Mapping[SourceKey, Sequence[Mapping[str, Any]]] | None,
    rebalances: Sequence[Mapping[str, Any]],
) -> str:
    """The detection's evidence: each source record it names, with what the record says; a detection naming none
    shows the group's rebalances in its window, the records it was decided from."""
    refs = evidence_refs(detection)
    if not refs:
        start = detection.get("first_seen") or detection.get("detected_at")
        end = detection.get("resolved_at") or detection.get("last_seen") or detection.get("detected_at")
        window = [
            r
            for r in rebalances
            if r.get("started_at") is not None
            and start is not None
            and end is not None
            and r["started_at"] <= end
            and (r.get("stabilized_at") or r["started_at"]) >= start
        ]
        lines = [
            f"<tr><td>rebalances {_cell(r.get('rebalance_id') or '')}</td><td>{_cell(r.get('started_at'))}</td>"
            f"<td>generation {_cell(r.get('from_generation'))} -&gt; {_cell(r.get('generation'))}; cause "
            f"{_cell(r.get('cause'))}: {_cell(r.get('cause_detail'))}</td></tr>"
            for r in window
        ]
        said = "the detector named no source record"
        if not lines:
            return f'<p class="evidence empty">evidence: {said}, and no rebalance of the group falls in its window</p>'
        return (
            f"<details open><summary>evidence: {said}; the group's rebalances in its window</summary>"
            f'<table class="evidence">{"".join(lines)}</table></details>'
        )
    lines = []
    for ref in refs:
        key = source_key(ref)
        where = f"{ref.get('table')} {ref.get('topic')}/{ref.get('partition')}@{ref.get('offset')}"
        moment = html.escape(str(ref.get("event_time") or "")).replace("T", " ").removesuffix("+00:00")
        if sources is None:
            said = '<span class="empty">not read here (a catalog\'s tables): radar sql finds it</span>'
        elif key is None or key not in sources:
            said = (
                f'<span class="empty">not found in {html.escape(str(ref.get("table")))} (removed by retention?)</span>'
            )
        else:
            said = "<br>".join(html.escape(_record_text(row)) for row in sources[key])
        lines.append(f"<tr><td>{html.escape(where)}</td><td>{moment}</td><td>{said}</td></tr>")
    noun = "record" if len(refs) == 1 else "records"
    return (
        f"<details open><summary>evidence: {len(refs)} source {noun}</summary>"
        f'<table class="evidence"><tr><th>record</th><th>event time (UTC)</th><th>what it says</th></tr>'
        f"{''.join(lines)}</table></details>"
    )


def detections_html(
    detections: Sequence[Mapping[str, Any]],
    sources: Mapping[SourceKey, Sequence[Mapping[str, Any]]] | None = None,
    rebalances: Sequence[Mapping[str, Any]] = (),
) -> str:
    if not detections:
        return '<p class="empty">no detections for this group</p>'
    rows = []
    for d in sorted(detections, key=lambda d: (d.get("detected_at") or datetime.min, d["detection_id"])):
        ended = d.get("status") in ("resolved", "withdrawn")
        status_class = "resolved" if ended else html.escape(str(d.get("severity")))
        rows.append(
            f'<tr class="{status_class}"><td>{_cell(d.get("detected_at"))}</td><td>{_cell(d.get("kind"))}</td>'
            f"<td>{_cell(d.get('severity'))}</td><td>{_cell(d.get('status'))}</td>"
            f"<td>{_cell(d.get('generation'))}</td><td>{_cell(d.get('member_id'))}</td>"
            f"<td>{_cell(d.get('summary'))}{evidence_html(d, sources, rebalances)}</td></tr>"
        )
    head = "".join(
        f"<th>{c}</th>" for c in ("detected (UTC)", "kind", "severity", "status", "gen.", "member", "summary")
    )
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def alerts_html(alerts: Sequence[Mapping[str, Any]] | None) -> str:
    if alerts is None:
        return f'<p class="empty">{NO_ALERTS_TABLE}</p>'
    if not alerts:
        return '<p class="empty">no alerts</p>'
    columns = [c for c in ("rule", "severity", "group_id", "status", "first_seen", "last_seen", "notified_at")]
    return html_table(sorted(alerts, key=lambda a: str(a.get("first_seen"))), columns)


HEALTH_COLUMNS = ("group_protocol", "state", "generation", "members", "last_rebalance_at", "rebalances_1h",
                  "open_detections", "last_event_at")  # fmt: skip


INCIDENT_COLUMNS = ("window_start", "window_end", "status", "cause_kind", "cause", "groups", "detection_ids")


def incidents_html(incidents: Sequence[Mapping[str, Any]], anchors: Mapping[str, str]) -> str:
    """The cross-group incidents, newest first, each linking to its groups' sections (`anchors`: group -> id)."""
    if not incidents:
        return '<p class="empty">no incident across groups</p>'
    items = []
    for incident in incidents:
        links = ", ".join(
            f'<a href="#{anchors[g]}">{html.escape(g)}</a>' if g in anchors else html.escape(g)
            for g in incident.get("groups") or ()
        )
        items.append(
            f"<li><b>{html.escape(str(incident.get('cause_kind')))}</b> "
            f"{_cell(incident.get('window_start'))} .. {_cell(incident.get('window_end'))} "
            f"[{html.escape(str(incident.get('status')))}]: {html.escape(str(incident.get('cause')))}"
            f"<br>groups: {links}; {len(incident.get('detection_ids') or ())} detections, "
            f"{len(incident.get('rebalance_ids') or ())} rebalances</li>"
        )
    return f'<ul class="incidents">{"".join(items)}</ul>'


def render_report(data: ReportData | None, javascript: str, *, title: str, generated_at: datetime) -> str:
    """The whole page; `javascript` is the vega-embed bundle inlined in the head."""
    specs: dict[str, dict[str, Any]] = {}
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="sub">generated {generated_at:%Y-%m-%d %H:%M:%S} UTC by rebalance-radar</p>',
    ]
    if data is None:
        parts.append(
            '<p class="empty">no gold tables in this data dir: run <code>radar demo</code>, <code>radar run</code> '
            "or <code>radar replay</code> first (or pass --data-dir where they wrote).</p>"
        )
    else:
        groups = data.groups
        summary = [
            {"group_id": g, "open detections": data.open_detections(g),
             "detections": len(data.of(data.detections, g)), "rebalances": len(data.of(data.rebalances, g))}
            for g in groups
        ]  # fmt: skip
        anchors = {group: f"group-{index}" for index, group in enumerate(groups)}
        parts += ["<h2>incidents across groups</h2>", incidents_html(data.incidents, anchors)]
        parts += ["<h2>groups</h2>", html_table(summary, ["group_id", "open detections", "detections", "rebalances"])]
        parts += ["<h2>alerts</h2>", alerts_html(data.alerts)]
        for index, group in enumerate(groups):
            parts.append(f'<section class="group" id="group-{index}"><h2>{html.escape(group)}</h2>')
            health = data.of(data.health, group)
            parts.append(html_table(health, HEALTH_COLUMNS) if health else '<p class="empty">no health row</p>')
            for name, spec in (
                (f"timeline-{index}", generation_chart(data.of(data.rebalances, group))),
                (f"detections-{index}", detections_chart(data.of(data.detections, group))),
            ):
                if spec is not None:
                    specs[name] = spec
                    parts.append(f'<div class="chart" id="{name}"></div>')
            if not data.of(data.rebalances, group):
                parts.append('<p class="empty">no rebalances recorded for this group</p>')
            parts.append(
                detections_html(data.of(data.detections, group), data.sources, data.of(data.rebalances, group))
            )
            parts.append("</section>")
    embeds = "\n".join(
        f"vegaEmbed({json.dumps('#' + name)}, {json.dumps(spec)}, {EMBED_OPTIONS}).catch(console.error);"
        for name, spec in specs.items()
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="UTF-8">'
        f"<title>{html.escape(title)}</title><style>{PAGE_STYLE}</style>"
        f'<script type="text/javascript">\n{javascript}\n</script></head><body>\n'
        + "\n".join(parts)
        + f'\n<script type="text/javascript">\n{embeds}\n</script>\n</body></html>\n'
    )


def vega_embed_javascript() -> str:
    """Vega, Vega-Lite (the version altair writes) and vega-embed as one script, from vl-convert (offline); built
    once per vl-convert and Vega-Lite version and kept in the user's cache (building it is most of a report's time)."""
    try:
        import vl_convert
    except ImportError:
        raise ReportError(
            "the report needs vl-convert-python for its offline charts: pip install 'vl-convert-python>=1.6,<2'."
        ) from None
    from importlib.metadata import version

    from altair.utils._importers import vl_version_for_vl_convert

    vl_version = vl_version_for_vl_convert()
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rebalance-radar"
    cached = base / f"vega-embed-{version('vl-convert-python')}-{vl_version}.js"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    bundle = str(vl_convert.javascript_bundle(vl_version=vl_version))
    with contextlib.suppress(OSError):  # a read-only home: built again next time
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
        partial.write_text(bundle, encoding="utf-8")
        os.replace(partial, cached)  # only ever complete under its name
    return bundle


def write_report(
    spark: SparkSession | Callable[[], SparkSession],
    config: RadarConfig,
    out: Path,
    *,
    title: str | None = None,
) -> ReportData | None:
    """Write the HTML report of `config`'s data dir to `out`; returns what it was drawn from. `spark`: a session,
    or what makes one if a table needs it (a local data dir's tables are read from their files, no JVM)."""
    data = load_report_data(spark if callable(spark) else (lambda: spark), config)
    page = render_report(
        data,
        vega_embed_javascript(),
        title=title or f"rebalance-radar report: cluster {config.cluster}",
        generated_at=datetime.now(UTC),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return data


def run_report(config: RadarConfig, out: Path) -> ReportData | None:
    """`radar report`: the tables of a local data dir from their files (no JVM); a Delta-only session only for
    tables that need one."""
    from rebalance_radar.pipelines.runtime.session import build_spark_session

    config = config.model_copy(update={"spark": config.spark.model_copy(update={"connectors": ("delta",)})})
    return write_report(lambda: build_spark_session(config), config, out)
