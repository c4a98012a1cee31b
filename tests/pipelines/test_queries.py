"""The on-call queries of queries/, each run through `radar sql --file` against real Delta tables that `radar replay`
made from a dump with incidents (tests/pipelines/incident_tables.py), each checked for the rows the incidents must
give: the tracker alone over the same records is the oracle for the gold tables."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rebalance_radar.pipelines.cli import main
from rebalance_radar.pipelines.cli.oncall_queries import QUERIES_DIR, bind_parameters, oncall_queries, parse_query
from rebalance_radar.pipelines.config import ConfigError
from rebalance_radar.transforms.schemas import DetectionKind, DetectionStatus, Severity
from tests.pipelines.incident_tables import (
    BILLING,
    ORDERS,
    PAYMENTS,
    B,
    C,
    IncidentTables,
)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def incidents(incident_tables: IncidentTables) -> IncidentTables:
    return incident_tables


def run_query(
    capsys: pytest.CaptureFixture[str], tables: IncidentTables, name: str, engine: str = "local", **params: str
) -> list[dict[str, Any]]:
    """`radar sql --file queries/<name>.sql --format json` as a user runs it (on a local data dir: DuckDB); its
    rows, columns in order."""
    capsys.readouterr()
    argv = ["sql", "--file", str(QUERIES_DIR / f"{name}.sql"), "--format", "json", "--engine", engine]
    argv += [item for key, value in params.items() for item in ("--param", f"{key}={value}")]
    argv += ["--data-dir", str(tables.data_dir), "--conf", str(tables.conf)]
    assert main(argv) == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for row in rows:
        assert tuple(row) == parse_query(QUERIES_DIR / f"{name}.sql").output_columns
    return rows


def test_a_groups_rebalance_history_with_causes(capsys: pytest.CaptureFixture[str], incidents: IncidentTables) -> None:
    rows = run_query(capsys, incidents, "group_rebalance_history", group_id=ORDERS)
    expected = sorted(incidents.oracle[ORDERS].rebalances.values(), key=lambda r: r["started_at"], reverse=True)
    shape = ("from_generation", "generation", "cause", "joined", "left", "expired")
    assert [tuple(r[k] for k in shape) for r in rows] == [tuple(r[k] for k in shape) for r in expected]
    assert {r["group_id"] for r in rows} == {ORDERS}
    expiry = next(r for r in rows if r["from_generation"] == 7)
    assert (expiry["generation"], expiry["cause"], expiry["expired"]) == (8, "heartbeat_expiration", [B.member_id])


def test_open_detections_critical_first(capsys: pytest.CaptureFixture[str], incidents: IncidentTables) -> None:
    rows = run_query(capsys, incidents, "open_detections")
    expected = {
        (group, d["kind"], d["member_id"], d["severity"])
        for group, outcome in incidents.oracle.items()
        for d in outcome.detections.values()
        if d["status"] == DetectionStatus.OPEN
    }
    assert {(r["group_id"], r["kind"], r["member_id"], r["severity"]) for r in rows} == expected
    assert (ORDERS, DetectionKind.ZOMBIE_COMMIT, B.member_id, Severity.CRITICAL) in expected
    ranks = [list(Severity)[::-1].index(Severity(r["severity"])) for r in rows]  # critical 0, warning 1, info 2
    assert ranks == sorted(ranks)


def test_members_expired_in_the_last_hour_of_the_monitors_clock(
    capsys: pytest.CaptureFixture[str], incidents: IncidentTables
) -> None:
    rows = run_query(capsys, incidents, "expired_members_last_hour")
    assert [
        (r["group_id"], r["member_id"], r["client_id"], r["client_host"], r["from_generation"], r["generation"])
        for r in rows
    ] == [(ORDERS, B.member_id, B.client_id, B.host, 7, 8)]
    # billing's member C expired too, three hours before the dump's end: in the history, not in the last hour
    billing = run_query(capsys, incidents, "group_rebalance_history", group_id=BILLING)
    assert [r["expired"] for r in billing] == [[C.member_id]]


def test_zombie_commits_by_client_host(capsys: pytest.CaptureFixture[str], incidents: IncidentTables) -> None:
    rows = run_query(capsys, incidents, "zombie_commits_by_host")
    zombies = incidents.oracle[ORDERS].of_kind(DetectionKind.ZOMBIE_COMMIT)
    assert len(zombies) == 1
    ((host, detections, open_now, groups, members),) = [
        (r["client_host"], r["detections"], r["open_detections"], r["groups"], r["members"]) for r in rows
    ]
    assert (host, detections, groups, members) == (B.host, 1, [ORDERS], [B.member_id])
    assert open_now == (zombies[0]["status"] == DetectionStatus.OPEN)
    assert rows[0]["evidence_records"] == len(json.loads(zombies[0]["evidence"]))


def test_the_groups_that_rebalance_most(capsys: pytest.CaptureFixture[str], incidents: IncidentTables) -> None:
    rows = run_query(capsys, incidents, "groups_rebalancing_most")
    expected = {
        group: (
            len(outcome.rebalances),
            sum(1 for r in outcome.rebalances.values() if r["stabilized_at"] is None),
        )
        for group, outcome in incidents.oracle.items()
        if outcome.rebalances
    }
    assert {r["group_id"]: (r["rebalances"], r["not_completed"]) for r in rows} == expected
    assert rows[0]["group_id"] == PAYMENTS and rows[0]["rebalances"] > max(
        n for group, (n, _) in expected.items() if group != PAYMENTS
    )
    counts = [r["rebalances"] for r in rows]
    assert counts == sorted(counts, reverse=True)
    orders = next(r for r in rows if r["group_id"] == ORDERS)
    assert "heartbeat_expiration 1" in orders["causes"]
    assert orders["state"] is not None  # joined with group_health


# --- without Spark -----------------------------------------------------------------------------------------------

ENUMS_BY_COLUMN = {"status": DetectionStatus, "severity": Severity, "kind": DetectionKind}


def test_every_query_asks_its_question_and_compares_only_declared_values() -> None:
    queries = oncall_queries()
    assert {q.name for q in queries} == {
        "group_rebalance_history",
        "open_detections",
        "expired_members_last_hour",
        "zombie_commits_by_host",
        "groups_rebalancing_most",
    }
    for query in queries:
        assert query.question.endswith((".", "?")), query.name
        assert set(re.findall(r"(?<!:):(\w+)", query.sql.split("\n", 3)[-1])) <= set(query.parameters), query.name
        for column, value in re.findall(r"\b(status|severity|kind)\s*=\s*'(\w+)'", query.sql):
            assert value in set(ENUMS_BY_COLUMN[column]), (query.name, column, value)
        for value in re.findall(r"WHEN '(\w+)'", query.sql):
            assert value in set(Severity), (query.name, value)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["sql", "--file", "queries/group_rebalance_history.sql"], "needs group_id: add --param group_id=..."),
        (["sql", "--file", "queries/open_detections.sql", "--param", "group_id=x"], "takes no parameters"),
        (["sql", "--file", "queries/open_detections.sql", "--param", "group_id"], "is not NAME=VALUE"),
        (["sql", "SELECT 1", "--file", "queries/open_detections.sql"], "exactly one"),
        (["sql", "--file", "queries/nope.sql"], "There is no query file queries/nope.sql"),
    ],
)
def test_sql_file_mistakes_are_one_sentence_before_spark_starts(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_parameters_are_bound_as_escaped_string_literals() -> None:
    query = parse_query(QUERIES_DIR / "group_rebalance_history.sql")
    bound = bind_parameters(query.sql, {"group_id": "o'rders\\"})
    assert "WHERE group_id = 'o\\'rders\\\\'\n" in bound
    assert ":group_id" not in bound.split("\n", 3)[-1]
    with pytest.raises(ConfigError, match="uses :group_id"):
        bind_parameters(query.sql, {})


@pytest.mark.parametrize("name", [query.name for query in oncall_queries()])
def test_every_oncall_query_gives_the_same_rows_on_duckdb_as_on_spark(
    capsys: pytest.CaptureFixture[str], incidents: IncidentTables, name: str
) -> None:
    """queries/ are Spark SQL; on a local data dir DuckDB answers them (translated by sqlglot) with Spark's rows, in
    Spark's order."""
    params = {"group_id": ORDERS} if parse_query(QUERIES_DIR / f"{name}.sql").parameters else {}
    on_duckdb = run_query(capsys, incidents, name, "local", **params)
    on_spark = run_query(capsys, incidents, name, "spark", **params)
    assert on_duckdb == on_spark and on_spark, (on_duckdb, on_spark)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT group_id, kind, status, count(*) AS n FROM detections GROUP BY group_id, kind, status "
        "ORDER BY group_id, kind, status",
        "SELECT group_id, cause, from_generation, generation FROM rebalances ORDER BY group_id, started_at, generation",
        "SELECT count(*) AS n, count(DISTINCT group_id) AS groups FROM offset_commits",
    ],
)
def test_duckdb_over_the_files_answers_as_spark_sql(
    capsys: pytest.CaptureFixture[str], incidents: IncidentTables, sql: str
) -> None:
    """`radar sql --engine duckdb`: the same rows as Spark SQL for SQL both dialects read alike, no JVM."""
    answers = []
    for engine in ("spark", "local"):
        capsys.readouterr()
        argv = ["sql", sql, "--format", "json", "--engine", engine]
        assert main([*argv, "--data-dir", str(incidents.data_dir), "--conf", str(incidents.conf)]) == 0
        answers.append([json.loads(line) for line in capsys.readouterr().out.splitlines()])
    assert answers[0] == answers[1] and answers[0], answers


def test_a_duckdb_mistake_is_one_sentence_naming_the_tables(
    capsys: pytest.CaptureFixture[str], incidents: IncidentTables
) -> None:
    argv = ["sql", "SELECT nope FROM detections", "--data-dir", str(incidents.data_dir)]
    assert main([*argv, "--conf", str(incidents.conf)]) == 2
    err = capsys.readouterr().err
    assert re.search(r"DuckDB: Binder Error: .*nope.*the tables here: detections.*--engine spark", err), err
    assert "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        ("SELEC 1", 'does not parse near "1" (line 1, column 7): fix it there, or run it as it is with --engine spark'),
        ("SELECT * FROM detections WHERE kind = 'zombie", "close the quote or bracket"),
        ("SELECT 1; SELECT 2", "runs one statement; this text holds 2"),
    ],
)
def test_a_typo_is_one_sentence_before_any_table_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, sql: str, said: str
) -> None:
    """On the default engine a typo is told by sqlglot's parser of Spark SQL: no JVM, no table read."""
    assert main(["sql", sql, "--data-dir", str(tmp_path / "no-such-dir-yet")]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and err.count("\n") == 1, err
