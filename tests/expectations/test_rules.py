"""The alert rules as data: every rule bounds a declared check-view column, and a config overrides by name."""

from __future__ import annotations

import pytest

from rebalance_radar.expectations.rules import (
    CHECK_VIEW,
    INDEX_COLUMNS,
    RULES,
    RuleName,
    RuleOverride,
    configured_rules,
)
from rebalance_radar.transforms.schemas import TABLES, Severity


def test_every_rule_bounds_a_check_view_column_and_reads_declared_tables() -> None:
    assert {r.name for r in RULES} == set(RuleName)
    for rule in RULES:
        assert rule.column in CHECK_VIEW.column_names
        assert all(TABLES[t.name] is t for t in rule.tables)
        kwargs = rule.expectation_kwargs()
        assert kwargs["meta"]["rule"] == rule.name
        assert ("max_value" in kwargs) == (rule.bound == "max")
        assert rule.message(1.0, "group g")  # every sentence formats
    assert set(INDEX_COLUMNS) <= set(CHECK_VIEW.column_names)


def test_overrides_by_name_and_unknown_names_are_refused() -> None:
    rules = {
        r.name: r
        for r in configured_rules(
            {
                "quarantine_rate": RuleOverride(threshold=0.5, severity=Severity.CRITICAL),
                "monitor_lag": RuleOverride(enabled=False),
            }
        )
    }
    assert rules[RuleName.QUARANTINE_RATE].threshold == 0.5
    assert rules[RuleName.QUARANTINE_RATE].severity == Severity.CRITICAL
    assert not rules[RuleName.MONITOR_LAG].enabled
    assert rules[RuleName.DECODE_COVERAGE].threshold == 0.99  # untouched default
    with pytest.raises(ValueError, match="quarantine_ratio"):
        configured_rules({"quarantine_ratio": RuleOverride(threshold=1)})
