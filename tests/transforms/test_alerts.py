"""The alert lifecycle without Spark: one alert per (rule, cluster, group, incident), opened, updated while
failing, resolved when the rule passes again, left alone while its rule is not evaluated."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from rebalance_radar.transforms.alerts import (
    Alert,
    RuleFailure,
    alert_id,
    reconcile,
    routed,
    slack_payload,
    webhook_payload,
)
from rebalance_radar.transforms.schemas import ALERTS, AlertStatus

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
RULE = "open_critical_detections"


def _failure(group: str | None, value: float = 1.0, rule: str = RULE) -> RuleFailure:
    return RuleFailure(rule, "critical", "local", group, value, 0.0, f"{group} has {value:.0f}", '{"row": {}}')


def test_a_failure_opens_one_alert_per_group_with_a_deterministic_id() -> None:
    changes = reconcile([], [_failure("g1"), _failure("g1"), _failure("g2")], {RULE}, T0)
    assert [a.group_id for a in changes.opened] == ["g1", "g2"]
    assert not changes.updated and not changes.resolved
    first = changes.opened[0]
    assert first.status == AlertStatus.OPEN and first.first_seen == first.last_seen == T0
    assert first.notified_at is None and first.pending
    assert first.alert_id == alert_id(RULE, "local", "g1", T0)
    assert alert_id(RULE, "local", None, T0) != alert_id(RULE, "local", "None", T0)
    assert set(first.as_row()) == set(ALERTS.column_names)


def test_a_failing_open_alert_is_updated_keeping_its_id_and_delivery() -> None:
    opened = reconcile([], [_failure("g1")], {RULE}, T0).opened[0]
    delivered = Alert(**{**opened.as_row(), "notified_at": T0})
    later = T0 + timedelta(minutes=1)
    changes = reconcile([delivered], [_failure("g1", 3)], {RULE}, later)
    assert not changes.opened and not changes.resolved
    (updated,) = changes.updated
    assert updated.alert_id == opened.alert_id
    assert (updated.first_seen, updated.last_seen, updated.observed_value) == (T0, later, 3)
    assert updated.notified_at == T0  # an update is not news


def test_a_passing_rule_resolves_its_open_alerts_and_they_become_pending_again() -> None:
    opened = reconcile([], [_failure("g1"), _failure("g2")], {RULE}, T0).opened
    delivered = [Alert(**{**a.as_row(), "notified_at": T0}) for a in opened]
    later = T0 + timedelta(minutes=2)
    changes = reconcile(delivered, [_failure("g2")], {RULE}, later)
    (resolved,) = changes.resolved
    assert resolved.group_id == "g1" and resolved.status == AlertStatus.RESOLVED
    assert resolved.resolved_at == later and resolved.pending
    assert [a.group_id for a in changes.updated] == ["g2"]
    # the same group failing again is a new incident: a new alert with a new id
    again = reconcile([a for a in changes.rows if a.status == AlertStatus.OPEN], [_failure("g1")], {RULE}, later)
    assert again.opened[0].alert_id != resolved.alert_id


def test_alerts_of_a_rule_not_evaluated_stay_open() -> None:
    opened = reconcile([], [_failure("g1")], {RULE}, T0).opened
    assert reconcile(opened, [], set(), T0 + timedelta(minutes=1)).rows == ()
    assert reconcile(opened, [], {"quarantine_rate"}, T0 + timedelta(minutes=1)).rows == ()


def test_routing_and_payloads() -> None:
    alert = reconcile([], [_failure("g1")], {RULE}, T0).opened[0]
    assert routed(alert, "critical") and routed(alert, "info")
    warning = reconcile([], [RuleFailure("monitor_lag", "warning", "local", None, 300, 120, "late")], set(), T0)
    assert not routed(warning.opened[0], "critical")
    body = webhook_payload(alert)
    assert body["event"] == "alert_opened" and body["alert"]["group_id"] == "g1"
    assert body["alert"]["first_seen"] == T0.isoformat() and body["alert"]["details"] == {"row": {}}
    json.dumps(body)  # serialisable as it is
    resolved = reconcile([alert], [], {RULE}, T0 + timedelta(minutes=1)).resolved[0]
    assert webhook_payload(resolved)["event"] == "alert_resolved"
    slack = slack_payload(resolved)
    assert slack["text"].startswith("[RESOLVED] open_critical_detections on local/g1")
    assert slack["blocks"][0]["type"] == "section"
