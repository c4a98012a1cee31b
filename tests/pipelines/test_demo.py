"""`radar demo`: the declared scenarios hold together, and the short scenario, run end to end on the session's
embedded broker and SparkSession, leaves its expected detections (kind and group) in the gold tables, nothing in
its healthy group, and a report that opens in headless Chromium with its charts drawn."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from rebalance_radar.pipelines.cli.demo import (
    DEMO_MARKER,
    Confirmation,
    DemoResult,
    DemoView,
    prepare_data_dir,
    run_demo,
)
from rebalance_radar.pipelines.cli.oncall_queries import QUERIES_DIR, bind_parameters, parse_query
from rebalance_radar.pipelines.config import ConfigError, RadarConfig
from rebalance_radar.pipelines.local.scenarios import (
    SCENARIOS,
    Freeze,
    Kill,
    Leave,
    ScenarioProgress,
    Start,
    Thaw,
    WaitFor,
    scenario_named,
)
from rebalance_radar.transforms.schemas import TABLES, DetectionKind
from tests.pipelines.headless_browser import visit
from tests.pipelines.ingest_support import isolated_config
from tests.pipelines.test_report import CHART_SLOTS, CHARTS_DRAWN, non_white_share


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_step_names_a_member_started_before_it(name: str) -> None:
    scenario = SCENARIOS[name]
    started: set[str] = set()
    for phase in scenario.phases:
        for step in phase.steps:
            if isinstance(step, Start):
                assert step.member.group in scenario.groups, step
                started.add(step.member.name)
            elif isinstance(step, Freeze | Thaw | Kill | Leave | WaitFor):
                assert step.member in started, (phase.name, step)
        for key, kind in phase.expect:
            assert key in scenario.groups and isinstance(kind, DetectionKind)


def test_the_demo_is_not_confirmed_while_a_detection_of_its_groups_is_provisional() -> None:
    """Every expected detection shown, the lateness waited and three detection batches after it: confirmed, unless
    a detection of the demo's own groups is still provisional (a preview the ordered events may still withdraw,
    which the report must not show); another group's provisional row does not hold it."""
    scenario = scenario_named("short")
    groups = {key: f"{key}-1" for key in scenario.groups}
    view = DemoView(ScenarioProgress(scenario), groups, time.monotonic())
    expected = [{"group_id": groups[key], "kind": str(kind), "status": "open"} for key, kind in scenario.expected()]
    flapping = {"group_id": groups["billing"], "kind": "membership_flapping", "status": "provisional"}
    foreign = {"group_id": "another-test", "kind": "heartbeat_expiration", "status": "provisional"}
    confirmation = Confirmation(lateness_s=0.0)
    view.update([*expected, flapping, foreign])
    assert view.unconfirmed() == [(groups["billing"], "membership_flapping")]
    assert not confirmation.done(view, batch=1) and not confirmation.done(view, batch=9)
    view.update([*expected, {**flapping, "status": "withdrawn"}, foreign])
    assert view.unconfirmed() == []
    assert not confirmation.done(view, batch=10)  # the batches after the lateness count from here
    assert confirmation.done(view, batch=13)


def test_the_default_scenario_plays_every_incident_of_the_issue() -> None:
    kinds = {kind for _key, kind in scenario_named("incidents").expected()}
    assert kinds == {
        DetectionKind.HEARTBEAT_EXPIRATION,
        DetectionKind.ZOMBIE_COMMIT,
        DetectionKind.MEMBERSHIP_FLAPPING,
        DetectionKind.FAILING_GENERATION,
    }
    assert set(scenario_named("incidents").groups.values()) == {"classic", "consumer"}
    assert scenario_named("healthy").expected() == ()


def test_an_unknown_scenario_is_named_with_the_choices() -> None:
    with pytest.raises(ValueError, match="choose one of: incidents, healthy, short"):
        scenario_named("chaos")


def test_the_demo_clears_only_its_own_data_dir(tmp_path: Path) -> None:
    mine = tmp_path / "demo"
    prepare_data_dir(mine)
    (mine / "tables").mkdir()
    prepare_data_dir(mine)  # a previous demo's dir starts empty again
    assert sorted(p.name for p in mine.iterdir()) == [DEMO_MARKER]
    theirs = tmp_path / "run"
    (theirs / "tables").mkdir(parents=True)
    with pytest.raises(ConfigError, match="did not write"):
        prepare_data_dir(theirs)
    assert (theirs / "tables").is_dir()


@pytest.fixture(scope="module")
def short_demo(
    kafka_broker: Any, spark: Any, radar_config: RadarConfig, tmp_path_factory: pytest.TempPathFactory
) -> DemoResult:
    data_dir = tmp_path_factory.mktemp("demo")
    telemetry = f"telemetry-demo-{time.time_ns()}"
    config = isolated_config(radar_config, data_dir, telemetry_topics=(telemetry,))
    return run_demo(config, "short", data_dir / "report.html", broker=kafka_broker, spark=spark, catch_up_s=180.0)


@pytest.mark.kafka
@pytest.mark.spark
@pytest.mark.slow
def test_the_short_demo_leaves_its_detections_in_the_gold_tables(short_demo: DemoResult) -> None:
    assert short_demo.scenario_error is None
    assert short_demo.missing == ()
    found = {(d["group_id"], d["kind"]) for d in short_demo.detections}
    billing, orders = short_demo.groups["billing"], short_demo.groups["orders"]
    assert (billing, "heartbeat_expiration") in found and (billing, "zombie_commit") in found
    assert not [d for d in short_demo.detections if d["group_id"] == orders]  # the healthy group raised nothing
    assert short_demo.first_detection_s is not None
    # the demo ends once the watermark has confirmed what it showed: nothing of its groups is left provisional (the
    # session's broker also carries the other tests' groups, whose last events may come just before the demo ends)
    ours = set(short_demo.groups.values())
    left = [(d["kind"], d["group_id"]) for d in short_demo.detections if d["status"] == "provisional"]
    assert not [(kind, group) for kind, group in left if group in ours]
    # the zombie commit is a critical detection left open: the checks raise an alert for its group
    assert ("open_critical_detections", billing) in short_demo.alerts
    assert not [a for a in short_demo.alerts if a[1] == orders]


@pytest.mark.kafka
@pytest.mark.spark
@pytest.mark.slow
def test_the_demo_report_opens_in_headless_chromium_with_its_charts(short_demo: DemoResult) -> None:
    assert short_demo.report is not None
    page = short_demo.report.read_text()
    assert short_demo.groups["billing"] in page and short_demo.groups["orders"] in page
    assert "open_critical_detections" in page  # the alerts section shows the alert the checks opened
    seen = visit(short_demo.report, evaluate=f"[{CHARTS_DRAWN}, {CHART_SLOTS}]")
    assert seen.errors == ()
    drawn, slots = seen.evaluated
    assert slots >= 3 and drawn >= slots  # both groups' timelines, billing's detections
    assert non_white_share(seen.screenshot_png) > 0.02


def demo_query(spark: Any, demo: DemoResult, name: str, **params: str) -> list[dict[str, Any]]:
    """An on-call query of queries/ over the tables the demo wrote: each table the query names is the demo's Delta
    table (a temporary view by its plain name, as `radar sql` registers them), dropped again afterwards."""
    query = parse_query(QUERIES_DIR / f"{name}.sql")
    names = [t for t in TABLES if re.search(rf"\b{t}\b", query.sql)]
    try:
        for table in names:
            spark.read.format("delta").load(str(demo.data_dir / "tables" / table)).createOrReplaceTempView(table)
        rows = [r.asDict(recursive=True) for r in spark.sql(bind_parameters(query.sql, params)).collect()]
    finally:
        for table in names:
            spark.catalog.dropTempView(table)
    assert all(tuple(row) == query.output_columns for row in rows), name
    return rows


@pytest.mark.kafka
@pytest.mark.spark
@pytest.mark.slow
def test_the_oncall_queries_answer_on_the_demos_tables(spark: Any, short_demo: DemoResult) -> None:
    billing, orders = short_demo.groups["billing"], short_demo.groups["orders"]
    # billing-a expires while frozen; the zombie's abandoned member id may expire a session later as well
    expiries = [d for d in short_demo.detections if d["kind"] == "heartbeat_expiration" and d["group_id"] == billing]
    first = min(expiries, key=lambda d: d["detected_at"])
    history = demo_query(spark, short_demo, "group_rebalance_history", group_id=billing)
    assert {r["group_id"] for r in history} == {billing}
    # one incident per client: its row names the member id of the latest occurrence (the zombie's abandoned id may
    # expire after the first), each rebalance the member id that expired in it
    client = first["member_id"].rsplit("-", 5)[0]
    expiring = [r for r in history if r["cause"] == "heartbeat_expiration"]
    assert any(m.rsplit("-", 5)[0] == client for r in expiring for m in r["expired"] or []), history
    open_now = demo_query(spark, short_demo, "open_detections")
    assert (billing, "zombie_commit", "critical") in {(r["group_id"], r["kind"], r["severity"]) for r in open_now}
    assert orders not in {r["group_id"] for r in open_now}
    # The session's broker also carries the other tests' groups (its live recordings run first): the demo's rows
    # are those of its own groups.
    ours = set(short_demo.groups.values())
    expired = [r for r in demo_query(spark, short_demo, "expired_members_last_hour") if r["group_id"] in ours]
    # rows come from completed rebalances: the abandoned id's expiry may still be in an open one when the demo ends;
    # every row is a member id of the one expiring client
    assert expired and all(r["group_id"] == billing and r["member_id"].rsplit("-", 5)[0] == client for r in expired)
    assert all(r["client_host"] == "127.0.0.1" and r["client_id"] == "billing-a" for r in expired), expired
    zombies = [r for r in demo_query(spark, short_demo, "zombie_commits_by_host") if ours & set(r["groups"])]
    # the host is the one the zombie's commit evidence names: the agent reports its machine's hostname
    assert [sorted(ours & set(r["groups"])) for r in zombies] == [[billing]] and zombies[0]["client_host"], zombies
    assert zombies[0]["detections"] >= 1 and zombies[0]["evidence_records"] >= 1
    most = demo_query(spark, short_demo, "groups_rebalancing_most")
    counts = {r["group_id"]: r["rebalances"] for r in most}
    assert set(counts) >= {billing, orders} and all(n > 0 for n in counts.values())
    assert [r["rebalances"] for r in most] == sorted(counts.values(), reverse=True)
    assert "heartbeat_expiration" in next(r["causes"] for r in most if r["group_id"] == billing)
