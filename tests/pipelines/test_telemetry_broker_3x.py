"""Evidence on a Kafka 3.9 broker (the Scala GroupCoordinator and its wording): the same classic scenario gives
the same events from the shipped broker log and the agent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.pipelines.group_member import ScenarioResult, run_group_scenario


@pytest.fixture(scope="module")
def broker_3x(radar_config: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pipelines.local.broker import EmbeddedKafka

    config = radar_config.broker.model_copy(update={"version": "3.9.2"})
    with EmbeddedKafka(config, tmp_path_factory.mktemp("kafka-3x"), spark=radar_config.spark) as broker:
        yield broker


@pytest.fixture(scope="module")
def classic_3x(broker_3x: Any, tmp_path_factory: pytest.TempPathFactory) -> ScenarioResult:
    return run_group_scenario(
        broker_3x.bootstrap_servers,
        broker_3x.log_file,
        tmp_path_factory.mktemp("classic-3x"),
        stall_s=6.0,
        with_poll_stall=False,
    )


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
