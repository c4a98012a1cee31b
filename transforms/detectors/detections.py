"""Detections as incidents: opened once under a deterministic id, updated with new evidence, resolved once.

A detection row leaves the tracker when it opens and each time it changes (same `detection_id`), so the gold
table upserts one row per incident. Open detections live in the group state (JSON, epoch-ms times) so a
restarted stream resolves what the previous one opened.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from rebalance_radar.transforms.detectors.evidence import as_datetime, clock_time, evidence_json, merge_refs, stable_id
from rebalance_radar.transforms.detectors.state import GroupState, HeldDetection, SourceRef
from rebalance_radar.transforms.schemas import DETECTIONS, DetectionKind, DetectionStatus, Severity


class DetectionBook:
    """Opens, updates and resolves the detections of one group; collects the changed rows for output."""

    def __init__(self, state: GroupState) -> None:
        self.state = state
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
        member's identity): while a detection of this kind is open for the same identity, this one is another
        occurrence of that incident (a member looping past its poll timeout rejoins under a new id each time)."""
        detection_id = self.detection_id(kind, *key)
        existing = self.state.detections.get(detection_id)
        if existing is not None:
            self.update(detection_id, at_ms=at_ms, summary=summary, refs=refs)
            return detection_id
        incident = self._incident(kind, incident_of)
        if incident is not None:
            if detection_id not in incident.occurrence_ids:
                incident.occurrence_ids = [*incident.occurrence_ids, detection_id][-64:]
                incident.occurrences += 1
            again = f"{summary} ({incident.occurrences} occurrences since {clock_time(incident.first_seen)})"
            self.update(incident.detection_id, at_ms=at_ms, summary=again, refs=refs)
            return incident.detection_id
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
        )
        self.state.detections[detection_id] = row
        self.changed[detection_id] = replace(row)
        return detection_id

    def _incident(self, kind: DetectionKind, incident_of: str | None) -> HeldDetection | None:
        if incident_of is None:
            return None
        return next((d for d in self.open_of_kind(kind) if d.incident_of == incident_of), None)

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
        row.last_seen = max(row.last_seen, at_ms)
        if summary is not None:
            row.summary = summary
        row.refs = merge_refs(row.refs, refs)
        self.changed[detection_id] = replace(row)

    def resolve(self, detection_id: str, *, at_ms: int, summary: str | None = None) -> None:
        """Close an open detection (it leaves the state; its final row is output)."""
        row = self.state.detections.pop(detection_id, None)
        if row is None:
            return
        row.status = DetectionStatus.RESOLVED.value
        row.resolved_at = at_ms
        if summary is not None:
            row.summary = summary
        self.changed[detection_id] = replace(row)

    def rows(self) -> tuple[dict[str, Any], ...]:
        """Changed rows in `DETECTIONS` shape (TIMESTAMPs as aware UTC datetimes), in id order."""
        out = tuple(detection_row(self.state, self.changed[detection_id]) for detection_id in sorted(self.changed))
        self.changed.clear()
        return out


def detection_row(state: GroupState, row: HeldDetection) -> dict[str, Any]:
    """One held detection (epoch-ms times) in `DETECTIONS` shape (TIMESTAMPs as aware UTC datetimes)."""
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
        "summary": f"{row.summary}. What to do: {row.remedy}" if row.remedy else row.summary,
        "evidence": evidence_json(row.refs),
    }
    return {name: full.get(name) for name in DETECTIONS.column_names}
