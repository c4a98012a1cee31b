"""The on-call queries of `queries/*.sql` and the Databricks dashboard built from them.

Each file is one question, asked in its header (`-- Question: ...`), with its named parameters (`-- Parameters:
group_id`, bound as `:group_id` by `radar sql --file F --param group_id=G`, by Spark's named parameter markers, and by
the dashboard's parameter widgets). Tables are named without catalog or schema: the local session registers them by
name, and on Databricks the job's or dashboard's default catalog and schema apply. The dashboard JSON in
`resources/` is generated from these files (`radar queries --dashboard`), so both always ask the same SQL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rebalance_radar.pipelines.config import REPO_ROOT, ConfigError

QUERIES_DIR = REPO_ROOT / "queries"
DASHBOARD_PATH = REPO_ROOT / "resources" / "radar_dashboard.lvdash.json"
QUESTION_PREFIX = "-- Question:"
PARAMETERS_PREFIX = "-- Parameters:"


@dataclass(frozen=True)
class OnCallQuery:
    """One query file: its name (the file's stem), the question it answers, its parameters and its SQL."""

    name: str
    question: str
    parameters: tuple[str, ...]
    sql: str

    @property
    def title(self) -> str:
        return self.name.replace("_", " ").capitalize()

    @property
    def output_columns(self) -> tuple[str, ...]:
        """The names of the final SELECT's columns (one item per line, as the files are written), for the
        dashboard's table widgets; the query test checks them against what Spark returns."""
        body = self.sql[self.sql.rindex("\nSELECT\n") + len("\nSELECT\n") :]
        body = body[: body.index("\nFROM ")]
        columns = []
        for item in body.split(",\n"):
            item = item.strip()
            alias = re.search(r"\bAS\s+`?(\w+)`?\s*$", item, flags=re.IGNORECASE)
            bare = re.search(r"`?(\w+)`?\s*$", item)
            assert alias or bare, item
            columns.append((alias or bare).group(1))  # type: ignore[union-attr]
        return tuple(columns)


def parse_query(path: Path) -> OnCallQuery:
    """Read one query file; a file without its question header is refused in a sentence."""
    text = path.read_text()
    header = [line for line in text.splitlines() if line.startswith("--")]
    question_lines: list[str] = []
    parameters: tuple[str, ...] = ()
    for line in header:
        if line.startswith(QUESTION_PREFIX):
            question_lines.append(line[len(QUESTION_PREFIX) :].strip())
        elif line.startswith(PARAMETERS_PREFIX):
            parameters = tuple(p.strip() for p in line[len(PARAMETERS_PREFIX) :].split(",") if p.strip())
        elif question_lines and not parameters:
            question_lines.append(line[2:].strip())
    if not question_lines:
        raise ConfigError(f"{path} has no '{QUESTION_PREFIX} ...' header line; say what the query answers.")
    return OnCallQuery(path.stem, " ".join(question_lines), parameters, text)


def oncall_queries(folder: Path = QUERIES_DIR) -> list[OnCallQuery]:
    """Every query file of `folder`, by name."""
    return [parse_query(path) for path in sorted(folder.glob("*.sql"))]


def parse_params(items: Sequence[str]) -> dict[str, str]:
    """`["group_id=orders"]` -> {"group_id": "orders"}; a malformed item is refused in a sentence."""
    params: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ConfigError(f"--param {item!r} is not NAME=VALUE; write e.g. --param group_id=orders.")
        params[name] = value
    return params


def check_params(query: OnCallQuery, params: Mapping[str, str], source: str) -> None:
    """Every declared parameter given, none unknown; else one sentence saying which."""
    missing = [p for p in query.parameters if p not in params]
    unknown = [p for p in params if p not in query.parameters]
    if missing:
        given = " ".join(f"--param {p}=..." for p in missing)
        raise ConfigError(f"{source} needs {', '.join(missing)}: add {given}.")
    if unknown:
        declared = ", ".join(query.parameters) or "no parameters"
        raise ConfigError(f"{source} takes {declared}, not {', '.join(unknown)}; remove those --param options.")


MARKER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def sql_string_literal(value: str) -> str:
    """`value` as a Spark SQL string literal (backslash escapes, Spark's default parser setting)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def bind_parameters(sql: str, params: Mapping[str, str]) -> str:
    """`sql` with every `:name` marker replaced by its value as a string literal.

    Spark's own named parameters (`spark.sql(text, args=...)`) are not used because a session with Delta's SQL
    extension (delta-spark 4.4 on Spark 4.1) leaves them unbound (UNBOUND_SQL_PARAMETER for any `:name`); the
    markers stay in the files, as Databricks dashboards bind them. Markers in comments and string literals are not
    parameters: the query files keep `:` out of both.
    """
    unbound = sorted({m.group(1) for m in MARKER.finditer(sql)} - set(params))
    if unbound:
        raise ConfigError(f"The query uses :{', :'.join(unbound)}; give a value with --param NAME=VALUE.")
    return MARKER.sub(lambda m: sql_string_literal(params[m.group(1)]), sql)


# --- the Lakeview dashboard ------------------------------------------------------------------------------------

WIDTH = 6  # a Lakeview canvas is 6 columns wide


def _dataset(query: OnCallQuery) -> dict[str, Any]:
    dataset: dict[str, Any] = {
        "name": query.name,
        "displayName": query.title,
        "queryLines": query.sql.splitlines(keepends=True),
    }
    if query.parameters:
        dataset["parameters"] = [
            {
                "displayName": name,
                "keyword": name,
                "dataType": "STRING",
                "defaultSelection": {"values": {"dataType": "STRING", "values": [{"value": ""}]}},
            }
            for name in query.parameters
        ]
    return dataset


def _table_widget(query: OnCallQuery) -> dict[str, Any]:
    columns = query.output_columns
    return {
        "name": f"{query.name}_table",
        "queries": [
            {
                "name": "main_query",
                "query": {
                    "datasetName": query.name,
                    "fields": [{"name": c, "expression": f"`{c}`"} for c in columns],
                    "disaggregated": True,
                },
            }
        ],
        "spec": {
            "version": 1,
            "widgetType": "table",
            "encodings": {"columns": [{"fieldName": c, "displayName": c, "order": i} for i, c in enumerate(columns)]},
            "frame": {"showTitle": True, "title": query.title, "showDescription": True, "description": query.question},
        },
    }


def _parameter_widget(query: OnCallQuery, parameter: str) -> dict[str, Any]:
    query_name = f"parameter_{query.name}_{parameter}"
    return {
        "name": f"{query.name}_{parameter}_filter",
        "queries": [
            {
                "name": query_name,
                "query": {
                    "datasetName": query.name,
                    "parameters": [{"name": parameter, "keyword": parameter}],
                    "disaggregated": False,
                },
            }
        ],
        "spec": {
            "version": 2,
            "widgetType": "filter-text-entry",
            "encodings": {"fields": [{"parameterName": parameter, "queryName": query_name}]},
            "frame": {"showTitle": True, "title": parameter},
        },
    }


def dashboard_definition(queries: Sequence[OnCallQuery]) -> dict[str, Any]:
    """A Lakeview dashboard (`*.lvdash.json`): one dataset and one table widget per query, a text entry per
    parameter above the table it feeds, stacked on one page."""
    layout: list[dict[str, Any]] = []
    y = 0
    for query in queries:
        for parameter in query.parameters:
            widget = _parameter_widget(query, parameter)
            layout.append({"widget": widget, "position": {"x": 0, "y": y, "width": 2, "height": 1}})
            y += 1
        layout.append({"widget": _table_widget(query), "position": {"x": 0, "y": y, "width": WIDTH, "height": 6}})
        y += 6
    return {
        "datasets": [_dataset(q) for q in queries],
        "pages": [{"name": "on_call", "displayName": "On call", "pageType": "PAGE_TYPE_CANVAS", "layout": layout}],
    }


def dashboard_json(queries: Sequence[OnCallQuery]) -> str:
    """The dashboard file's text, stable for review and for the test that compares it with the queries."""
    return json.dumps(dashboard_definition(queries), indent=2) + "\n"


def describe_queries(queries: Sequence[OnCallQuery], folder: Path = QUERIES_DIR) -> str:
    """`radar queries`: each file with its question and how to run it."""
    lines = []
    for q in queries:
        params = "".join(f" --param {p}=..." for p in q.parameters)
        lines += [f"{q.name}: {q.question}", f"  radar sql --file {folder.name}/{q.name}.sql{params}"]
    return "\n".join(lines)
