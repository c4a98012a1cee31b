"""`docs/DETECTIONS.md`, rendered from the rules themselves (kind, severity, what it means, the thresholds it
reads with their defaults and reasons, how it resolves), so the docs cannot drift from the registry.

Regenerate: `python -m rebalance_radar.transforms.detectors.rules.reference > docs/DETECTIONS.md`.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
from functools import cache

from rebalance_radar.transforms.detectors import thresholds as thresholds_module
from rebalance_radar.transforms.detectors.rules import RULES, Rule
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds

HEADER = """# Detections

What rebalance-radar detects, one rule per kind (`transforms/detectors/rules/`). Every detection is an incident:
opened once under a deterministic id, updated with new evidence, resolved once (`detections.status`). Thresholds
are set under `detect.thresholds` in the conf (durations in milliseconds); the defaults are below.

Kinds about a member are one incident per (group, kind, member identity), the identity being the member's
`group.instance.id`, else its client id and host, else its member id: a client that crashes, or overruns its poll
timeout, and rejoins under a new member id again and again gives one row with its occurrences ("(5 occurrences
since 10:00:01 UTC)"), first and last seen, and every occurrence's source records as evidence (the first and the
latest kept when there are many, with their count). An occurrence within `incident_reopen_ms` of the last re-opens
a resolved incident under its own id; once it recurred, it resolves after `incident_reopen_ms` without another.

<!-- generated from the rules' registry: python -m rebalance_radar.transforms.detectors.rules.reference -->
"""


@cache
def threshold_reasons() -> dict[str, str]:
    """Each `DetectorThresholds` field's docstring (the string literal after it in the class body)."""
    tree = ast.parse(inspect.getsource(thresholds_module))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "DetectorThresholds").body
    reasons: dict[str, str] = {}
    for field, after in itertools.pairwise(body):
        named = isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
        if named and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            reasons[field.target.id] = " ".join(str(after.value.value).split())
    return reasons


def _rule_section(rule: Rule) -> str:
    defaults = {f.name: getattr(DetectorThresholds(), f.name) for f in dataclasses.fields(DetectorThresholds)}
    what = inspect.cleandoc(type(rule).__doc__ or "")
    lines = [
        f"## `{rule.kind.value}` ({rule.severity.value})",
        "",
        what,
        "",
        f"**Resolves** {rule.resolves}.",
        "",
        f"**What to do** (appended to its summary): {rule.remedy}",
        "",
        "| threshold | default | why |",
        "|---|---|---|",
    ]
    for name in rule.thresholds:
        reason = threshold_reasons().get(name, "").replace("|", "\\|")
        lines.append(f"| `{name}` | `{defaults[name]}` | {reason} |")
    reacts = ", ".join(f"`{fact.__name__}`" for fact in rule.reacts_to)
    quiet = "; also ends after `incident_quiet_ms` without new evidence" if rule.quiet_resolved else ""
    lines += [
        "",
        f"Reacts to {reacts}{quiet}.",
    ]
    if rule.member_subject:
        lines += [
            "",
            "One incident per member identity: a later occurrence of the same identity (under any member id) within "
            "`incident_reopen_ms` of the last is counted in it; a recurring incident resolves after "
            "`incident_reopen_ms` without another occurrence.",
        ]
    return "\n".join(lines)


def rules_markdown() -> str:
    return HEADER + "\n" + "\n\n".join(_rule_section(rule) for rule in sorted(RULES, key=lambda r: r.kind.value)) + "\n"


if __name__ == "__main__":
    print(rules_markdown(), end="")
