"""Evidence on the embedded Kafka 4.x broker: real members join, stall, get evicted, commit as zombies, overrun
max.poll.interval.ms and leave; the broker log (shipped by the log shipper), the agent and the group poller put
the expected heartbeat events on the telemetry topic, and the ingest writes them to `heartbeat_events`."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, concurrent_recording
from tests.pipelines.group_member import ScenarioResult, run_group_scenario

ZOMBIE_ERRORS = {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_MEMBER_EPOCH", "STALE_MEMBER_EPOCH"}


@concurrent_recording
def record_scenarios(context: RecordingContext) -> dict[str, ScenarioResult]:
    """The classic and the KIP-848 scenario at once, as two groups of one cluster (each its own group, topic and
    telemetry topic; events are kept by group): the module waits for the longer, not their sum."""
    bootstrap, log_file, made = context.bootstrap, context.log_file, context.tmp_path_factory.mktemp
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="scenario") as pool:
        classic = pool.submit(run_group_scenario, bootstrap, log_file, made("classic"))
        # The broker's group.consumer.session.timeout.ms (conf/local.yml: 6 s) decides when A is expired.
        kip848 = pool.submit(run_group_scenario, bootstrap, log_file, made("kip848"), protocol="consumer")
        return {"classic": classic.result(), "kip848": kip848.result()}


@pytest.fixture(scope="module")
def scenarios(concurrent_recordings: ConcurrentRecordings) -> dict[str, ScenarioResult]:
    return concurrent_recordings.result(record_scenarios)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def classic(scenarios: dict[str, ScenarioResult]) -> ScenarioResult:
    return scenarios["classic"]


@pytest.fixture(scope="module")
def kip848(scenarios: dict[str, ScenarioResult]) -> ScenarioResult:
    return scenarios["kip848"]


def _member_ids(result: ScenarioResult, name: str) -> list[str]:
    return [line["member"] for line in result.outputs[name] if "member" in line]


def test_classic_broker_log_tells_join_expiry_rebalance_and_leave(classic: ScenarioResult) -> None:
    a_first = _member_ids(classic, "A")[0]
    b = _member_ids(classic, "B")[0]
    assert classic.shipped.dropped == 0 and classic.shipped.delivered == classic.shipped.produced > 0
    assert any(e.member_id == a_first for e in classic.of("broker_log", "join"))
    (expired,) = [e for e in classic.of("broker_log", "member_expired") if e.member_id == a_first]
    prepares = classic.of("broker_log", "rebalance_prepare")
    expiry_prepare = [p for p in prepares if "heartbeat expiration" in (p.reason or "")]
    assert expiry_prepare and expiry_prepare[0].member_id == a_first
    stable = [e.generation for e in classic.of("broker_log", "rebalance_stable")]
    assert stable == sorted(stable) and len(stable) >= 4  # A, A+B, B after the expiry, rejoins...
    assert any(g > expiry_prepare[0].generation for g in stable)
    assert b in {e.member_id for e in classic.of("broker_log", "leave")}
    assert classic.of("broker_log", "group_empty")  # everyone closed
    assert expired.event_time <= expiry_prepare[0].event_time + 1000


def test_classic_agent_reports_assignment_commits_eviction_and_zombie_commit(classic: ScenarioResult) -> None:
    a_first = _member_ids(classic, "A")[0]
    agent = [e for e in classic.events if e.source.value == "json" and e.client_id == "A"]
    assigned = [e for e in agent if e.event.value == "assignment" and e.member_id == a_first]
    assert assigned and all(e.generation is not None for e in assigned)
    commits = [e for e in agent if e.event.value == "commit" and e.member_id == a_first]
    assert commits and {e.generation for e in commits} <= {e.generation for e in assigned}
    (lost,) = [e for e in agent if e.event.value == "member_removed" and e.member_id == a_first]
    zombie = [e for e in agent if e.event.value == "commit_failed"]
    assert zombie and zombie[0].error in ZOMBIE_ERRORS
    # member_id + generation are the membership the commit was sent under (emitters.agent.commit_identity): the
    # evicted member's, also when the resumed librdkafka already held its rejoin's member id next to the old
    # generation (run 11). librdkafka's own pair is in client_* details only when it differs: then by the id alone.
    assert zombie[0].member_id == a_first
    assert zombie[0].details.get("client_member_id") != a_first
    if "client_generation" in zombie[0].details:
        assert int(zombie[0].details["client_generation"]) == zombie[0].generation
    # The zombie committed with the generation it had before the broker moved on without it.
    expiry_generation = max(
        e.generation for e in classic.of("broker_log", "rebalance_prepare") if "heartbeat" in (e.reason or "")
    )
    assert zombie[0].generation == expiry_generation == lost.generation
    assert max(e.generation for e in classic.of("broker_log", "rebalance_stable")) > zombie[0].generation
    # who the zombie last was while assigned, and what it tried to commit (issue #8)
    assert zombie[0].details["last_member_id"] == a_first
    assert int(zombie[0].details["last_generation"]) == lost.generation
    tried = zombie[0].details["partitions"].split(",")
    assert tried and len(zombie[0].details["offsets"].split(",")) == len(tried)


def test_classic_poll_timeout_and_snapshot(classic: ScenarioResult) -> None:
    (timeout,) = [e for e in classic.of("json", "poll_timeout") if e.client_id == "C"]
    assert timeout.error == "MAX_POLL_EXCEEDED" and timeout.generation is not None
    assert [e for e in classic.of("json", "member_removed") if e.client_id == "C"]
    snapshot = [e for e in classic.of("json", "heartbeat") if e.details.get("snapshot") == "admin_describe"]
    assert classic.snapshot.groups == 1 and {e.client_id for e in snapshot} == {"A", "B"}
    assert {e.details["state"] for e in snapshot} == {"STABLE"}
    assert sorted(p for e in snapshot for p in e.details["assignment"].split(",")) == [
        f"work-{classic.group.removeprefix('group-')}-{i}" for i in range(3)
    ]


def test_kip848_session_expiry_fences_the_member_and_its_commit(kip848: ScenarioResult) -> None:
    a_first = _member_ids(kip848, "A")[0]
    fenced = [e for e in kip848.events if e.source.value == "broker_log" and e.member_id == a_first]
    assert any(e.event.value == "member_expired" and "session" in (e.reason or "") for e in fenced)
    assert any(e.event.value == "join" for e in fenced)
    zombie = [e for e in kip848.of("json", "commit_failed") if e.client_id == "A"]
    assert zombie and zombie[0].error in ZOMBIE_ERRORS and zombie[0].member_id == a_first
    assert zombie[0].member_epoch is not None and zombie[0].generation is None
    # The overrun member loses its assignment (the KIP-848 poll timeout has no stats reason to report yet).
    assert [e for e in kip848.of("json", "member_removed") if e.client_id == "C" and e.member_epoch is not None]
    assert {e.member_id for e in kip848.of("broker_log", "leave")} >= set(_member_ids(kip848, "B")[:1])


def test_shipped_and_agent_telemetry_lands_in_heartbeat_events(
    classic: ScenarioResult, kafka_broker: Any, spark: Any, radar_config: Any
) -> None:
    """End to end: Spark's Kafka source + the ingest's telemetry query, available-now, into Delta."""
    from rebalance_radar.pipelines.stages.ingest import IngestStage
    from rebalance_radar.pipelines.stages.sources import kafka_stream
    from rebalance_radar.pipelines.storage.tables import TableCatalog
    from rebalance_radar.transforms.schemas import HEARTBEAT_EVENTS

    kafka = radar_config.kafka.model_copy(update={"telemetry_topics": (classic.telemetry_topic,)})
    config = radar_config.model_copy(update={"kafka": kafka})
    source = kafka_stream(spark, config, [classic.telemetry_topic], kafka_broker.bootstrap_servers)
    queries = IngestStage(
        spark, config, source, checkpoint_name=f"telemetry-{classic.group}", available_now=True, from_kafka=True
    ).start()
    for query in queries.all:
        query.awaitTermination(120)
        assert query.exception() is None
    rows = (
        spark.table(TableCatalog(config).name(HEARTBEAT_EVENTS))
        .where(f"group_id = '{classic.group}'")
        .groupBy("source", "event")
        .count()
        .collect()
    )
    found = {(r["source"], r["event"]): r["count"] for r in rows}
    expected = {(e.source.value, e.event.value) for e in classic.events}
    assert set(found) == expected
    assert sum(found.values()) == len(classic.events)
    for key in [("broker_log", "member_expired"), ("broker_log", "rebalance_prepare"), ("json", "commit_failed")]:
        assert found.get(key), key
