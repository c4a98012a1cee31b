"""The alert rules as data: name, the tables each reads, the column of the check view it bounds, the threshold and
the severity. `pipelines/checks/check.py` builds the check view (one row per group for per-group rules, one per cluster
for cluster-wide ones; a metric that does not apply to a row is null, and GX's column-map expectations skip
nulls), and `expectations.suites` turns these rules into one Great Expectations suite over it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal

from rebalance_radar.transforms.schemas import (
    CLOCK_TICKS,
    DETECTIONS,
    GROUP_HEALTH,
    GROUP_LAG,
    HEARTBEAT_EVENTS,
    QUARANTINE,
    Column,
    Severity,
    TableSchema,
)


class RuleName(StrEnum):
    """`alerts.rule` values."""

    OPEN_CRITICAL_DETECTIONS = "open_critical_detections"
    QUARANTINE_RATE = "quarantine_rate"
    DECODE_COVERAGE = "decode_coverage"
    HEARTBEAT_TELEMETRY_FRESHNESS = "heartbeat_telemetry_freshness"
    MONITOR_LAG = "monitor_lag"
    LAG = "lag"


CHECK_VIEW = TableSchema(
    "check_view",
    "view",
    (
        Column("cluster", "STRING"),
        Column("group_id", "STRING", "null on a cluster-wide row"),
        Column("open_critical_detections", "BIGINT", "per group: critical detections still open (or provisional)"),
        Column("records", "BIGINT", "per cluster: records ingested (silver rows per record, plus quarantine)"),
        Column("quarantined", "BIGINT", "per cluster: quarantine rows"),
        Column("quarantine_rate", "DOUBLE", "per cluster: quarantined / records"),
        Column("offsets_records", "BIGINT", "per cluster: __consumer_offsets records seen"),
        Column("decode_coverage", "DOUBLE", "per cluster: share of those of a known record type and version"),
        Column("last_telemetry_at", "TIMESTAMP", "per active group: its newest heartbeat report (event heartbeat)"),
        Column("telemetry_age_s", "DOUBLE", "per active group: seconds from it to the cluster's newest event time"),
        Column("newest_tick_at", "TIMESTAMP", "per cluster: the newest clock tick ingested"),
        Column(
            "monitor_lag_s",
            "DOUBLE",
            "per cluster: seconds from the newest clock tick ingested (with none: from when ticks were due) to now",
        ),
        Column(
            "lagging_partitions",
            "BIGINT",
            "per group: partitions whose newest group_lag status is WARN, STALL, STOP or REWIND (Burrow's non-OK)",
        ),
    ),
)
"""The one table the suite validates, built by `pipelines.checks.check.build_check_view`."""

INDEX_COLUMNS: tuple[str, ...] = ("cluster", "group_id")
"""The columns that say which group (or cluster) a failing row is about: GX's unexpected_index_column_names."""


@dataclass(frozen=True)
class CheckRule:
    """One alert rule: the check-view `column` it bounds (`bound` max: value <= threshold; min: value >= it),
    the tables it needs (not evaluated while one is missing: its open alerts then stay as they are), and how a
    failure reads."""

    name: RuleName
    column: str
    bound: Literal["max", "min"]
    threshold: float
    severity: Severity
    per_group: bool
    tables: tuple[TableSchema, ...]
    sentence: str  # str.format fields: value, threshold, where (per-group rules: "group G")
    enabled: bool = True

    def message(self, value: float | None, where: str) -> str:
        return self.sentence.format(value=value, threshold=self.threshold, where=where)

    def expectation_kwargs(self) -> dict[str, Any]:
        """Arguments of GX's ExpectColumnValuesToBeBetween for this rule."""
        bound = {"max_value": self.threshold} if self.bound == "max" else {"min_value": self.threshold}
        return {"column": self.column, **bound, "meta": {"rule": str(self.name), "severity": str(self.severity)}}


RULES: tuple[CheckRule, ...] = (
    CheckRule(
        RuleName.OPEN_CRITICAL_DETECTIONS,
        "open_critical_detections",
        "max",
        0,
        Severity.CRITICAL,
        per_group=True,
        tables=(DETECTIONS,),
        sentence="{where} has {value:.0f} open critical detection(s); see `radar detections --open`.",
    ),
    CheckRule(
        RuleName.QUARANTINE_RATE,
        "quarantine_rate",
        "max",
        0.01,
        Severity.WARNING,
        per_group=False,
        tables=(QUARANTINE,),
        sentence="{value:.2%} of the records ingested were quarantined (threshold {threshold:.2%}).",
    ),
    CheckRule(
        RuleName.DECODE_COVERAGE,
        "decode_coverage",
        "min",
        0.99,
        Severity.WARNING,
        per_group=False,
        tables=(QUARANTINE,),
        sentence="Only {value:.2%} of the __consumer_offsets records are of a known type and version "
        "(threshold {threshold:.2%}).",
    ),
    CheckRule(
        RuleName.HEARTBEAT_TELEMETRY_FRESHNESS,
        "telemetry_age_s",
        "max",
        300,
        Severity.WARNING,
        per_group=True,
        tables=(GROUP_HEALTH, HEARTBEAT_EVENTS),
        sentence="{where} is active but its newest heartbeat telemetry is {value:.0f} s old (threshold "
        "{threshold:.0f} s).",
    ),
    CheckRule(
        RuleName.MONITOR_LAG,
        "monitor_lag_s",
        "max",
        120,
        Severity.WARNING,
        per_group=False,
        tables=(CLOCK_TICKS,),
        sentence="No clock tick ingested for {value:.0f} s: the monitor is that far behind its topics, or its "
        "clock ticks are not delivered (check `radar run`'s output, kafka.security and the Write ACL on the telemetry "
        "topic; threshold {threshold:.0f} s).",
    ),
    CheckRule(
        RuleName.LAG,
        "lagging_partitions",
        "max",
        0,
        Severity.WARNING,
        per_group=True,
        tables=(GROUP_LAG,),
        sentence="{where} has {value:.0f} partition(s) lagging (WARN, STALL, STOP or REWIND at the newest end-offset "
        "poll; a rebalance's pause is not counted): see the group_lag table and `radar detections --open`.",
    ),
)
"""The default rules; `conf/*.yml` `checks.rules` overrides thresholds, severities and enabled."""


@dataclass(frozen=True)
class RuleOverride:
    """What a config may change of a rule."""

    enabled: bool | None = None
    threshold: float | None = None
    severity: Severity | None = None


def configured_rules(overrides: Mapping[str, RuleOverride]) -> tuple[CheckRule, ...]:
    """The default rules with a config's overrides applied; an unknown rule name is an error naming the known ones."""
    unknown = set(overrides) - {str(r.name) for r in RULES}
    if unknown:
        raise ValueError(
            f"checks.rules names unknown rule(s) {sorted(unknown)}; the rules are {', '.join(r.name for r in RULES)}."
        )
    rules = []
    for rule in RULES:
        override = overrides.get(str(rule.name), RuleOverride())
        changes = {k: v for k, v in vars(override).items() if v is not None}
        rules.append(replace(rule, **changes))
    return tuple(rules)
