"""Evidence on a Kafka 3.9 broker (the Scala GroupCoordinator and its wording): the same classic scenario gives
the same events from the shipped broker log and the agent."""

from __future__ import annotations

import pytest

from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, concurrent_recording
from tests.pipelines.group_member import ScenarioResult, run_group_scenario


@concurrent_recording
def record_classic_3x(context: RecordingContext) -> ScenarioResult:
    """The classic scenario on a Kafka 3.9 broker of its own, stopped once it is recorded."""
    from rebalance_radar.pipelines.local.broker import EmbeddedKafka

    config = context.config.broker.model_copy(update={"version": "3.9.2"})
    home = context.tmp_path_factory.mktemp("kafka-3x")
    with EmbeddedKafka(config, home, spark=context.config.spark, progress=context.progress) as broker:
        return run_group_scenario(
            broker.bootstrap_servers,
            broker.log_file,
            context.tmp_path_factory.mktemp("classic-3x"),
            with_poll_stall=False,
        )


@pytest.fixture(scope="module")
def classic_3x(concurrent_recordings: ConcurrentRecordings) -> ScenarioResult:
    return concurrent_recordings.result(record_classic_3x)  # type: ignore[no-any-return]


def test_scala_coordinator_wording_gives_expiry_rebalance_stable_and_leave(classic_3x: ScenarioResult) -> None:
    a_first = next(line["member"] for line in classic_3x.outputs["A"] if "member" in line)
    b = next(line["member"] for line in classic_3x.outputs["B"] if "member" in line)
    assert [e for e in classic_3x.of("broker_log", "member_expired") if e.member_id == a_first]
    expiry = [e for e in classic_3x.of("broker_log", "rebalance_prepare") if "heartbeat expiration" in (e.reason or "")]
    assert expiry and expiry[0].member_id == a_first and expiry[0].generation is not None
    stable = [e.generation for e in classic_3x.of("broker_log", "rebalance_stable")]
    assert len(stable) >= 3 and stable == sorted(stable)
    assert b in {e.member_id for e in classic_3x.of("broker_log", "leave")}
    assert classic_3x.of("broker_log", "group_empty")


def test_agent_zombie_commit_against_the_scala_coordinator(classic_3x: ScenarioResult) -> None:
    a_first = next(line["member"] for line in classic_3x.outputs["A"] if "member" in line)
    zombie = [e for e in classic_3x.of("json", "commit_failed") if e.client_id == "A"]
    assert zombie and zombie[0].member_id == a_first
    assert zombie[0].error in {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"}
    assert zombie[0].generation < max(e.generation for e in classic_3x.of("broker_log", "rebalance_stable"))
