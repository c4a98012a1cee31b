"""Every detection kind has one rule, found through the registry, that says what it reads, what it reacts to and
how it resolves; and a snapshot the tracker cannot read is refused in a sentence, never half-restored."""

from __future__ import annotations

import dataclasses
import json
import typing
import zlib
from pathlib import Path

import pytest

from rebalance_radar.transforms.detectors import facts
from rebalance_radar.transforms.detectors.groups import GROUP_CLASSES
from rebalance_radar.transforms.detectors.rules import RULES, rule_of, rules_told
from rebalance_radar.transforms.detectors.rules.reference import rules_markdown
from rebalance_radar.transforms.detectors.snapshot import SNAPSHOT_VERSION, SnapshotError
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker
from rebalance_radar.transforms.schemas import DetectionKind, Severity

TRACKER_WIDE = {
    "departed_member_ttl_ms",
    "group_idle_ttl_ms",
    "history_ms",
    "group_session_timeouts_from",
    "group_session_timeout_overrides",
    "group_configs_read_at_ms",
}
"""Thresholds of the tracker's own memory, and where the broker's session timeouts came from: not of a rule."""


def test_one_rule_per_detection_kind() -> None:
    assert sorted(rule.kind for rule in RULES) == sorted(DetectionKind)
    assert rule_of("zombie_commit").severity == Severity.CRITICAL
    assert rule_of("heartbeat_at_risk").severity == Severity.INFO


def test_each_rule_names_real_thresholds_facts_and_its_resolution() -> None:
    threshold_names = {f.name for f in dataclasses.fields(DetectorThresholds)}
    fact_classes = set(typing.get_args(facts.Fact))
    for rule in RULES:
        assert rule.thresholds, rule
        assert set(rule.thresholds) <= threshold_names, (rule, set(rule.thresholds) - threshold_names)
        assert rule.reacts_to and set(rule.reacts_to) <= fact_classes, rule
        assert rule.resolves.strip() and rule.__doc__ and rule.remedy.strip(), rule
    read = {name for rule in RULES for name in rule.thresholds}
    assert threshold_names - read == TRACKER_WIDE


def test_every_fact_reaches_a_rule() -> None:
    assert set(rules_told()) == set(typing.get_args(facts.Fact))


def _snapshot_with(change: typing.Callable[[dict], None]) -> bytes:
    tracker = GroupTracker("local", "orders", DetectorThresholds())
    data = json.loads(zlib.decompress(tracker.snapshot()))
    change(data)
    return zlib.compress(json.dumps(data).encode())


def test_a_snapshot_with_a_field_the_state_does_not_declare_is_refused() -> None:
    blob = _snapshot_with(lambda data: data["state"].update(generaton=7))
    with pytest.raises(SnapshotError, match="generaton"):
        GroupTracker.restore(blob, DetectorThresholds())


def test_a_snapshot_of_an_unknown_version_is_refused_in_a_sentence() -> None:
    blob = _snapshot_with(lambda data: data.update(v=SNAPSHOT_VERSION + 1))
    with pytest.raises(
        SnapshotError, match=rf"version {SNAPSHOT_VERSION + 1}, which this release cannot read .* run that release"
    ):
        GroupTracker.restore(blob, DetectorThresholds())


def test_one_group_class_per_protocol_as_the_coordinator_has() -> None:
    assert set(GROUP_CLASSES) == {None, "classic", "consumer", "streams", "share"}
    for protocol, cls in GROUP_CLASSES.items():
        assert cls.protocol == protocol, cls


def test_docs_detections_is_rendered_from_the_registry() -> None:
    written = (Path(__file__).resolve().parents[3] / "docs" / "DETECTIONS.md").read_text()
    assert written == rules_markdown(), "regenerate: python -m rebalance_radar.transforms.detectors.rules.reference"
    assert "`zombie_commit` (critical)" in written and "| `incident_quiet_ms` | `600000` |" in written
