"""The `detect:` config section and threshold overrides (checked at load against the thresholds dataclass itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_radar.pipelines.config import ConfigError, load_config
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("env", ["local", "dev", "prod"])
def test_every_conf_file_has_a_valid_detect_section(env: str) -> None:
    config = load_config(REPO / "conf" / f"{env}.yml", env={})
    assert config.detect.lateness_ms == 2000
    assert config.detect.tick_interval_ms == 1000
    assert config.detect.threshold_overrides() == {}
    assert config.detect.detector_thresholds() == DetectorThresholds()  # defaults = the dataclass's


def test_environment_overrides_reach_the_thresholds() -> None:
    config = load_config(
        REPO / "conf" / "local.yml",
        env={"RADAR__DETECT__LATENESS_MS": "500", "RADAR__DETECT__THRESHOLDS": "{heartbeat_at_risk_fraction: 0.5}"},
    )
    assert config.detect.lateness_ms == 500
    assert config.detect.threshold_overrides() == {"heartbeat_at_risk_fraction": 0.5}
    assert config.detect.detector_thresholds() == DetectorThresholds(heartbeat_at_risk_fraction=0.5)


def test_a_list_threshold_becomes_the_dataclass_tuple() -> None:
    config = load_config(
        REPO / "conf" / "local.yml", env={"RADAR__DETECT__THRESHOLDS": "{zombie_commit_errors: [ILLEGAL_GENERATION]}"}
    )
    assert config.detect.detector_thresholds().zombie_commit_errors == ("ILLEGAL_GENERATION",)


@pytest.mark.parametrize(
    ("thresholds", "sentence"),
    [
        ("{member_silence: 1}", r"detect\.thresholds\.member_silence: unknown key"),
        (
            "{incident_quiet_ms: soon}",
            r"detect\.thresholds\.incident_quiet_ms: Input should be a valid integer.*'soon'",
        ),
        (
            "{heartbeat_at_risk_fraction: null}",
            r"detect\.thresholds\.heartbeat_at_risk_fraction: Input should be a valid number",
        ),
    ],
)
def test_unknown_or_mistyped_thresholds_fail_at_load_in_one_sentence(thresholds: str, sentence: str) -> None:
    """At load, like every other key: not a minute into `radar run`, when the detection query starts."""
    with pytest.raises(ConfigError, match=sentence) as refused:
        load_config(REPO / "conf" / "local.yml", env={"RADAR__DETECT__THRESHOLDS": thresholds})
    assert "Traceback" not in str(refused.value)


def test_negative_lateness_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"detect\.lateness_ms"):
        load_config(REPO / "conf" / "local.yml", env={"RADAR__DETECT__LATENESS_MS": "-1"})


def test_thresholds_added_in_code_are_checked_as_the_confs() -> None:
    config = load_config(REPO / "conf" / "local.yml", env={"RADAR__DETECT__THRESHOLDS": "{incident_quiet_ms: 5}"})
    detect = config.detect.with_thresholds(default_session_timeout_ms=6000)
    assert detect.threshold_overrides() == {"incident_quiet_ms": 5, "default_session_timeout_ms": 6000}
    with pytest.raises(ValueError, match="default_session_timeout_ms"):
        config.detect.with_thresholds(default_session_timeout_ms="soon")
