"""The detection rules, one class per detection kind, found through `RULES` (registration order).

- `heartbeats`: HeartbeatAtRisk, HeartbeatExpiration.
- `generations`: FailingGeneration, RebalanceStorm, ProbingRebalanceLoop, MembershipFlapping, LeaderInstability.
- `commits`: ZombieCommit, OffsetRegression.
- `lag`: LagStalled, LagGrowing.

Each rule declares its kind, severity, the thresholds it reads, the facts it reacts to (`facts.py`), its
deadlines and how its detections resolve (`Rule.resolves`); the tracker only tells them facts and deadlines.
"""

from __future__ import annotations

from rebalance_radar.transforms.detectors.rules import commits, generations, heartbeats, lag
from rebalance_radar.transforms.detectors.rules.rule import RULES, Rule, RuleContext

__all__ = ["RULES", "Rule", "RuleContext", "commits", "generations", "heartbeats", "lag", "rule_of", "rules_told"]


def rule_of(kind: str) -> Rule:
    """The rule of a detection kind."""
    return next(rule for rule in RULES if rule.kind == kind)


def rules_told() -> dict[type, tuple[Rule, ...]]:
    """fact class -> the rules that react to it, in registration order."""
    told: dict[type, list[Rule]] = {}
    for rule in RULES:
        for fact in rule.reacts_to:
            told.setdefault(fact, []).append(rule)
    return {fact: tuple(rules) for fact, rules in told.items()}
