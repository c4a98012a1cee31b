"""The `detect:` config section and threshold overrides (checked against the thresholds dataclass itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import ConfigError, load_config
from pipelines.detect import thresholds_from_config
from transforms.detectors.thresholds import DetectorThresholds

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("env", ["local", "dev", "prod"])
def test_every_conf_file_has_a_valid_detect_section(env: str) -> None:
    config = load_config(REPO / "conf" / f"{env}.yml", env={})
    assert config.detect.lateness_ms == 2000
    assert config.detect.tick_interval_ms == 1000
    assert config.detect.thresholds == {}


def test_environment_overrides_reach_the_thresholds() -> None:
    config = load_config(
        REPO / "conf" / "local.yml",
        env={"RADAR__DETECT__LATENESS_MS": "500", "RADAR__DETECT__THRESHOLDS": "{heartbeat_at_risk_fraction: 0.5}"},
    )
    assert config.detect.lateness_ms == 500
    thresholds = thresholds_from_config(config.detect.thresholds, DetectorThresholds)
    assert thresholds == DetectorThresholds(heartbeat_at_risk_fraction=0.5)
    assert thresholds_from_config({}, DetectorThresholds) == DetectorThresholds()  # defaults = the dataclass's


def test_unknown_or_mistyped_thresholds_are_sentences() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown threshold\(s\) member_silence; known: default_rebalance_timeout_ms"
    ):
        thresholds_from_config({"member_silence": 1}, DetectorThresholds)
    with pytest.raises(ConfigError, match=r"detect.thresholds.incident_quiet_ms: expected int, got 'soon'"):
        thresholds_from_config({"incident_quiet_ms": "soon"}, DetectorThresholds)


def test_negative_lateness_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"detect\.lateness_ms"):
        load_config(REPO / "conf" / "local.yml", env={"RADAR__DETECT__LATENESS_MS": "-1"})
