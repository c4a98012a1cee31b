"""What a rule is: one detection kind, its severity, the thresholds it reads, the facts it reacts to, its
deadlines and how its detections resolve. Rules register themselves; the tracker finds them through `RULES`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from rebalance_radar.transforms.detectors.detections import DetectionBook
from rebalance_radar.transforms.detectors.state import GroupState, HeldDetection
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.schemas import DetectionKind, Severity


@dataclass(frozen=True, slots=True)
class RuleContext:
    """The group a rule looks at: its state, its detections and the thresholds in force."""

    state: GroupState
    book: DetectionBook
    thresholds: DetectorThresholds


class Rule:
    """One detection kind. Subclasses set the class attributes and override what they need."""

    kind: ClassVar[DetectionKind]
    severity: ClassVar[Severity]
    thresholds: ClassVar[tuple[str, ...]] = ()
    """The `DetectorThresholds` fields it reads (each field's docstring says why it has its value)."""
    reacts_to: ClassVar[tuple[type, ...]] = ()
    """The facts (`facts.py`) it is told."""
    resolves: ClassVar[str]
    """How its detections end, in a sentence (docs and `radar` help read it)."""
    remedy: ClassVar[str]
    """What an on-call engineer should do about it (the field guide's and Kafka's advice); `advice` may add the
    member's own settings where radar knows them."""
    member_subject: ClassVar[bool] = False
    """Its detections that name a member are member incidents: one per member identity (instance id, else client id
    and host, else member id), each later one of that identity an occurrence of it (`DetectionBook.open`)."""
    quiet_resolved: ClassVar[bool] = False
    """A point incident: it also ends after `incident_quiet_ms` without new evidence (its own end, a stable
    generation or a catch-up commit, may never be seen)."""

    def react(self, fact: Any, ctx: RuleContext) -> None:
        """One fact of `reacts_to`."""

    def deadlines(self, ctx: RuleContext) -> Iterable[int | None]:
        """The event times at which it must look again (each is evaluated once, in time order). Asked before
        every event: keep it cheap when nothing is open."""
        if not self.quiet_resolved or not ctx.state.detections:
            return ()
        quiet = ctx.thresholds.incident_quiet_ms
        return [row.last_seen + quiet for row in ctx.book.open_of_kind(self.kind)]

    def at_deadline(self, ctx: RuleContext, now_ms: int) -> None:
        """The watermark reached one of its deadlines (or another rule's: check what is due)."""
        if self.quiet_resolved:
            quiet = ctx.thresholds.incident_quiet_ms
            for row in ctx.book.open_of_kind(self.kind):
                if now_ms - row.last_seen >= quiet:
                    ctx.book.resolve(row.detection_id, at_ms=now_ms, summary=f"{row.summary}; no new evidence since")

    def open(self, ctx: RuleContext, key: tuple[object, ...], *, advice: str | None = None, **row: Any) -> str:
        """Open (or update, if open under the same id) one of its detections, with the rule's remedy (`advice`
        first: what this occurrence's facts add); returns the id."""
        sentence = self.remedy[:1].upper() + self.remedy[1:]
        remedy = f"{advice} {sentence}" if advice else sentence
        if self.member_subject and row.get("member_id") and row.get("incident_of") is None:
            row["incident_of"] = ctx.state.identity_of(row["member_id"])
        return ctx.book.open(self.kind, key, severity=self.severity, remedy=remedy, **row)

    def held(self, ctx: RuleContext) -> list[HeldDetection]:
        """Its open detections."""
        return ctx.book.open_of_kind(self.kind) if ctx.state.detections else []

    def holds_any(self, ctx: RuleContext) -> bool:
        """It has an open detection (cheap: most groups have none)."""
        if not ctx.state.detections:
            return False
        kind = self.kind.value
        return any(row.kind == kind for row in ctx.state.detections.values())


RULES: list[Rule] = []
"""Every rule, in registration order: the order they are told a fact and evaluated at a deadline."""


def registered(cls: type[Rule]) -> type[Rule]:
    """Class decorator: one instance of the rule joins `RULES` (one rule per detection kind)."""
    if any(rule.kind == cls.kind for rule in RULES):
        raise ValueError(f"two rules for {cls.kind}: {cls.__name__} and another")
    RULES.append(cls())
    return cls
