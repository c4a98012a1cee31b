"""The alert lifecycle as pure logic: failures of one check run against the alerts still open, giving the rows to
MERGE into `alerts` (one alert per rule, cluster, group and incident: opened, updated while failing, resolved when
the rule passes again), and the payloads the notifiers post. No Spark, no I/O (pipelines/checks/check.py does both)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from rebalance_radar.transforms.schemas import ALERTS, AlertStatus, Severity

SEVERITY_RANK: dict[str, int] = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}


@dataclass(frozen=True)
class RuleFailure:
    """One failing row of one rule in one check run: the group (None for a cluster-wide rule) and what was seen."""

    rule: str
    severity: str
    cluster: str
    group_id: str | None
    observed_value: float | None
    threshold: float | None
    message: str
    details: str = "{}"

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.rule, self.cluster, self.group_id)


@dataclass(frozen=True)
class Alert:
    """One row of `alerts` (its fields are the table's columns, in order)."""

    alert_id: str
    rule: str
    severity: str
    cluster: str
    group_id: str | None
    status: str
    first_seen: datetime
    last_seen: datetime
    updated_at: datetime
    resolved_at: datetime | None
    notified_at: datetime | None
    observed_value: float | None
    threshold: float | None
    message: str
    details: str

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.rule, self.cluster, self.group_id)

    @property
    def pending(self) -> bool:
        """Its current status has not been delivered yet (retried on every run until it is)."""
        return self.notified_at is None

    def as_row(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_row(row: dict[str, Any]) -> Alert:
        return Alert(**{name: row[name] for name in ALERTS.column_names})


def alert_id(rule: str, cluster: str, group_id: str | None, first_seen: datetime) -> str:
    """Deterministic: the same incident (rule, cluster, group, start) always has the same id."""
    text = "\x1f".join((rule, cluster, group_id if group_id is not None else "\x00", first_seen.isoformat()))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class AlertChanges:
    """What one check run does to `alerts`: rows to MERGE, by what happened to them."""

    opened: tuple[Alert, ...] = ()
    updated: tuple[Alert, ...] = ()
    resolved: tuple[Alert, ...] = ()

    @property
    def rows(self) -> tuple[Alert, ...]:
        return self.opened + self.updated + self.resolved


def reconcile(
    open_alerts: Iterable[Alert], failures: Iterable[RuleFailure], evaluated_rules: Collection[str], now: datetime
) -> AlertChanges:
    """The lifecycle step of one run. A failure with an open alert of the same (rule, cluster, group) updates it
    (last_seen, value, message; its notification state is kept: an update is not news); a failure without one
    opens a new alert. An open alert of a rule that was evaluated and did not fail for its group is resolved and
    becomes pending again (the resolution is news). Alerts of rules not evaluated (their tables are missing) stay
    as they are."""
    open_by_key = {a.key: a for a in open_alerts if a.status == AlertStatus.OPEN}
    opened: list[Alert] = []
    updated: list[Alert] = []
    failing: set[tuple[str, str, str | None]] = set()
    for failure in failures:
        if failure.key in failing:
            continue  # one row per group and rule; a second expectation row of the same group adds nothing
        failing.add(failure.key)
        current = open_by_key.get(failure.key)
        if current is None:
            opened.append(
                Alert(
                    alert_id=alert_id(failure.rule, failure.cluster, failure.group_id, now),
                    rule=failure.rule,
                    severity=failure.severity,
                    cluster=failure.cluster,
                    group_id=failure.group_id,
                    status=AlertStatus.OPEN,
                    first_seen=now,
                    last_seen=now,
                    updated_at=now,
                    resolved_at=None,
                    notified_at=None,
                    observed_value=failure.observed_value,
                    threshold=failure.threshold,
                    message=failure.message,
                    details=failure.details,
                )
            )
        else:
            updated.append(
                replace(
                    current,
                    severity=failure.severity,
                    last_seen=now,
                    updated_at=now,
                    observed_value=failure.observed_value,
                    threshold=failure.threshold,
                    message=failure.message,
                    details=failure.details,
                )
            )
    resolved = [
        replace(alert, status=AlertStatus.RESOLVED, resolved_at=now, updated_at=now, notified_at=None)
        for key, alert in open_by_key.items()
        if key not in failing and alert.rule in evaluated_rules
    ]
    return AlertChanges(tuple(opened), tuple(updated), tuple(resolved))


def routed(alert: Alert, min_severity: str) -> bool:
    """Whether a notifier that takes `min_severity` and above receives this alert."""
    return SEVERITY_RANK[alert.severity] >= SEVERITY_RANK[min_severity]


def lifecycle_event(alert: Alert) -> str:
    """What a notification says happened: the alert opened or resolved."""
    return "alert_resolved" if alert.status == AlertStatus.RESOLVED else "alert_opened"


def headline(alert: Alert) -> str:
    """One line for a log or a chat: status, severity, rule, where, and the message."""
    where = f"{alert.cluster}/{alert.group_id}" if alert.group_id is not None else alert.cluster
    state = "RESOLVED" if alert.status == AlertStatus.RESOLVED else alert.severity.upper()
    return f"[{state}] {alert.rule} on {where}: {alert.message}"


def webhook_payload(alert: Alert) -> dict[str, Any]:
    """The generic webhook's JSON body: the lifecycle event and every column of the alert row."""
    row = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in alert.as_row().items()}
    row["details"] = json.loads(alert.details) if alert.details else {}
    return {"event": lifecycle_event(alert), "source": "rebalance-radar", "alert": row}


def slack_payload(alert: Alert) -> dict[str, Any]:
    """Slack's incoming-webhook JSON: a text fallback and one section block (mrkdwn)."""
    text = headline(alert)
    since = f"since {alert.first_seen.isoformat(timespec='seconds')}"
    if alert.status == AlertStatus.RESOLVED and alert.resolved_at is not None:
        since = f"{since}, resolved {alert.resolved_at.isoformat(timespec='seconds')}"
    return {
        "text": text,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*{text}*\n{since} · alert `{alert.alert_id}`"}}
        ],
    }
