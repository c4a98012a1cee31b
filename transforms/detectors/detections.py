"""Detections as incidents: opened once under a deterministic id, updated with new evidence, resolved once.

A detection row leaves the tracker when it opens and each time it changes (same `detection_id`), so the gold
table upserts one row per incident. Open detections live in the group state (JSON, epoch-ms times) so a
restarted stream resolves what the previous one opened.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from rebalance_radar.transforms.detectors.evidence import (
    as_datetime,
    clock_time,
    evidence_json,
    merge_refs,
    seconds,
    stable_id,
)
from rebalance_radar.transforms.detectors.state import GroupState, HeldDetection, SourceRef
from rebalance_radar.transforms.schemas import DETECTIONS, DetectionKind, DetectionStatus, Severity


class DetectionBook:
    """Opens, updates and resolves the detections of one group; collects the changed rows for output.

    A member incident (`incident_of`: the member's identity) takes every later occurrence of the same identity
    while it is open, or within `reopen_ms` of its last occurrence after it resolved (it re-opens under its own
    id): a crash loop's expirations or a poll loop's zombie commits are one incident with occurrences, not a row
    per member id. Once it recurred, the end of one occurrence is not its end: it resolves after `reopen_ms`
    without another."""

    def __init__(self, state: GroupState, reopen_ms: int = 0) -> None:
        self.state = state
        self.reopen_ms = reopen_ms
        self.changed: dict[str, HeldDetection] = {}

    def detection_id(self, kind: DetectionKind, *key: object) -> str:
        return stable_id(self.state.cluster, self.state.group_id, kind.value, *key)

    def is_open(self, detection_id: str) -> bool:
        return detection_id in self.state.detections

    def open_of_kind(self, kind: DetectionKind) -> list[HeldDetection]:
        return [d for d in self.state.detections.values() if d.kind == kind.value]

    def open(
        self,
        kind: DetectionKind,
        key: tuple[object, ...],
        *,
        at_ms: int,
        first_seen_ms: int,
        severity: Severity,
        summary: str,
        refs: Iterable[SourceRef],
        generation: int | None = None,
        member_id: str | None = None,
        topic: str | None = None,
        partition: int | None = None,
        incident_of: str | None = None,
        remedy: str | None = None,
    ) -> str:
        """Open (or, if already open under the same id, update) a detection; returns its id. `incident_of` (a
        member's identity): while a detection of this kind is open for the same identity, or resolved less than
        `reopen_ms` before, this one is another occurrence of that incident (a member looping past its poll
        timeout, or crashing, rejoins under a new id each time); the incident's id is returned."""
        detection_id = self.detection_id(kind, *key)
        existing = self.state.detections.get(detection_id)
        if existing is not None:
            self.update(detection_id, at_ms=at_ms, summary=summary, refs=refs)
            return detection_id
        incident = self._incident(kind, incident_of, at_ms)
        if incident is not None:
            refs = list(refs)
            if detection_id not in incident.occurrence_ids:
                incident.occurrence_ids = [*incident.occurrence_ids, detection_id][-64:]
                incident.occurrences += 1
            incident.ending = None
            if member_id is not None:  # the row names the member of its latest occurrence (its end is that one's)
                incident.member_id = member_id
                incident.generation = generation if generation is not None else incident.generation
            self.update(incident.detection_id, at_ms=at_ms, summary=with_occurrences(incident, summary), refs=refs)
            return incident.detection_id
        refs = list(refs)
        row = HeldDetection(
            detection_id=detection_id,
            kind=kind.value,
            severity=severity.value,
            generation=generation,
            member_id=member_id,
            topic=topic,
            partition=partition,
            first_seen=min(first_seen_ms, at_ms),
            last_seen=at_ms,
            detected_at=at_ms,
            status=DetectionStatus.OPEN.value,
            resolved_at=None,
            summary=summary,
            refs=merge_refs([], refs),
            incident_of=incident_of,
            occurrence_ids=[detection_id],
            remedy=remedy,
            evidence_seen=_added([], refs),
        )
        self.state.detections[detection_id] = row
        self.changed[detection_id] = replace(row)
        return detection_id

    def _incident(self, kind: DetectionKind, incident_of: str | None, at_ms: int) -> HeldDetection | None:
        """The open incident of this identity, else its recently resolved one, re-opened."""
        if incident_of is None:
            return None
        held = next((d for d in self.open_of_kind(kind) if d.incident_of == incident_of), None)
        if held is not None or not self.state.ended_incidents:
            return held
        ended = [
            d
            for d in self.state.ended_incidents.values()
            if d.kind == kind.value and d.incident_of == incident_of and at_ms - d.last_seen < self.reopen_ms
        ]
        if not ended:
            return None
        row = max(ended, key=lambda d: (d.last_seen, d.detection_id))
        del self.state.ended_incidents[row.detection_id]
        row.status = DetectionStatus.OPEN.value
        row.resolved_at = None
        self.state.detections[row.detection_id] = row
        return row

    def update(
        self,
        detection_id: str,
        *,
        at_ms: int,
        summary: str | None = None,
        refs: Iterable[SourceRef] = (),
    ) -> None:
        row = self.state.detections.get(detection_id)
        if row is None:
            return
        refs = list(refs)
        row.last_seen = max(row.last_seen, at_ms)
        if summary is not None:
            row.summary = with_occurrences(row, summary)
        row.evidence_seen = (row.evidence_seen if row.evidence_seen is not None else len(row.refs)) + _added(
            row.refs, refs
        )
        row.refs = merge_refs(row.refs, refs)
        self.changed[detection_id] = replace(row)

    def resolve(self, detection_id: str, *, at_ms: int, summary: str | None = None) -> None:
        """Close an open detection (it leaves the state; its final row is output). A recurring member incident
        only notes the end of its latest occurrence: it resolves once `reopen_ms` passed without another
        (`at_deadline`)."""
        row = self.state.detections.get(detection_id)
        if row is None:
            return
        if row.incident_of is not None and row.occurrences > 1 and at_ms - row.last_seen < self.reopen_ms:
            row.ending = summary if summary is not None else row.summary
            return
        del self.state.detections[detection_id]
        row.status = DetectionStatus.RESOLVED.value
        row.resolved_at = at_ms
        row.ending = None
        if summary is not None:
            row.summary = with_occurrences(row, summary)
        if row.incident_of is not None and self.reopen_ms > 0:
            self.state.ended_incidents[detection_id] = replace(row)
        self.changed[detection_id] = replace(row)

    def deadlines(self) -> list[int]:
        """When recurring incidents whose latest occurrence ended resolve (cheap when nothing is open)."""
        if not self.state.detections:
            return []
        return [d.last_seen + self.reopen_ms for d in self.state.detections.values() if d.ending is not None]

    def at_deadline(self, now_ms: int) -> None:
        """Resolve the recurring incidents with no new occurrence within `reopen_ms` of their last."""
        due = [
            d for d in self.state.detections.values() if d.ending is not None and now_ms - d.last_seen >= self.reopen_ms
        ]
        for row in sorted(due, key=lambda d: d.detection_id):
            self.resolve(
                row.detection_id,
                at_ms=now_ms,
                summary=f"{row.ending}; no new occurrence within {seconds(self.reopen_ms)}",
            )

    def prune(self, now_ms: int) -> None:
        """Forget resolved incidents that can no longer re-open."""
        if self.state.ended_incidents:
            self.state.ended_incidents = {
                k: d for k, d in self.state.ended_incidents.items() if now_ms - d.last_seen < self.reopen_ms
            }

    def rows(self) -> tuple[dict[str, Any], ...]:
        """Changed rows in `DETECTIONS` shape (TIMESTAMPs as aware UTC datetimes), in id order."""
        out = tuple(detection_row(self.state, self.changed[detection_id]) for detection_id in sorted(self.changed))
        self.changed.clear()
        return out


OCCURRENCES = " occurrences since "
"""The words `with_occurrences` adds (a sentence that has them already keeps its own)."""


def with_occurrences(row: HeldDetection, summary: str) -> str:
    """A recurring incident's sentence ends with how often and since when it occurred."""
    if row.occurrences <= 1 or OCCURRENCES in summary:
        return summary
    return f"{summary} ({row.occurrences}{OCCURRENCES}{clock_time(row.first_seen)})"


def _added(refs: list[SourceRef], more: list[SourceRef]) -> int:
    """How many of `more` are new source records (not in `refs`, counted once)."""
    seen = {(r["table"], r["topic"], r["partition"], r["offset"]) for r in refs}
    before = len(seen)
    seen.update((r["table"], r["topic"], r["partition"], r["offset"]) for r in more)
    return len(seen) - before


def detection_row(state: GroupState, row: HeldDetection) -> dict[str, Any]:
    """One held detection (epoch-ms times) in `DETECTIONS` shape (TIMESTAMPs as aware UTC datetimes)."""
    summary = f"{row.summary}. What to do: {row.remedy}" if row.remedy else row.summary
    if row.evidence_seen is not None and row.evidence_seen > len(row.refs):
        summary += f" Evidence: the first and the latest {len(row.refs)} of its {row.evidence_seen} source records."
    full = {
        "cluster": state.cluster,
        "group_id": state.group_id,
        "detection_id": row.detection_id,
        "kind": row.kind,
        "severity": row.severity,
        "generation": row.generation,
        "member_id": row.member_id,
        "topic": row.topic,
        "partition": row.partition,
        "first_seen": as_datetime(row.first_seen),
        "last_seen": as_datetime(row.last_seen),
        "detected_at": as_datetime(row.detected_at),
        "status": row.status,
        "resolved_at": as_datetime(row.resolved_at),
        "summary": summary,
        "evidence": evidence_json(row.refs),
    }
    return {name: full.get(name) for name in DETECTIONS.column_names}
