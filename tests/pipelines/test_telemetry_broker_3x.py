"""Evidence on a Kafka 3.9 broker (the Scala GroupCoordinator and its wording): the same classic scenario gives
the same events from the shipped broker log and the agent."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rebalance_radar.emitters.cluster_probe import GroupSessionOverrides
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, concurrent_recording
from tests.pipelines.group_member import ScenarioResult, run_group_scenario


@dataclass(frozen=True)
class Classic3x:
    """The classic scenario on Kafka 3.9, and what its broker answered when asked for group configs."""

    scenario: ScenarioResult
    group_configs: GroupSessionOverrides
    """DescribeConfigs of the scenario's group and of a group never seen, as the poller and the start ask."""
    published: int
    """A run's end-offset poller's `group_config` events from that answer."""
    poller_error: str | None
    poller_asks_again: bool


@concurrent_recording
def record_classic_3x(context: RecordingContext) -> Classic3x:
    """The classic scenario on a Kafka 3.9 broker of its own, stopped once it is recorded."""
    from confluent_kafka.admin import AdminClient

    from rebalance_radar.emitters.cluster_probe import described_session_overrides
    from rebalance_radar.emitters.end_offsets import EndOffsetsPoller
    from rebalance_radar.emitters.kafka_settings import client_settings
    from rebalance_radar.pipelines.local.broker import EmbeddedKafka

    config = context.config.broker.model_copy(update={"version": "3.9.2"})
    home = context.tmp_path_factory.mktemp("kafka-3x")
    with EmbeddedKafka(config, home, spark=context.config.spark, progress=context.progress) as broker:
        scenario = run_group_scenario(
            broker.bootstrap_servers,
            broker.log_file,
            context.tmp_path_factory.mktemp("classic-3x"),
            with_poll_stall=False,
        )
        settings = dict(client_settings(broker.bootstrap_servers))
        names = [scenario.group, f"{scenario.group}-never-seen"]
        answer = described_session_overrides(AdminClient(settings), names, settings, 15)
        poller = EndOffsetsPoller(settings, scenario.telemetry_topic, group_configs_every_s=0)
        try:
            published = poller.publish_overrides(answer)
        finally:
            poller.stop()
        return Classic3x(scenario, answer, published, poller.last_error, poller.cluster_keeps_group_configs)


@pytest.fixture(scope="module")
def classic_3x(concurrent_recordings: ConcurrentRecordings) -> ScenarioResult:
    return concurrent_recordings.result(record_classic_3x).scenario  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def recorded_3x(concurrent_recordings: ConcurrentRecordings) -> Classic3x:
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


def test_a_3x_broker_keeps_no_group_configs_and_the_poller_stops_asking_quietly(recorded_3x: Classic3x) -> None:
    """Kafka 3.x refuses DescribeConfigs of a group (INVALID_REQUEST): its groups have no configs of their own, which
    is no failure to report at the start or every minute, and nothing a later round could change."""
    answer = recorded_3x.group_configs
    assert not answer.kept_by_cluster
    assert answer.groups == {} and answer.unread is None
    assert answer.read == {recorded_3x.scenario.group, f"{recorded_3x.scenario.group}-never-seen"}
    assert recorded_3x.published == 0
    assert recorded_3x.poller_error is None and not recorded_3x.poller_asks_again
