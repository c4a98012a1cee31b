"""`radar detections` with cross-group incidents: each incident first, the detections of its groups under it, the
detections no incident explains last (rows as the tables hold them; no JVM)."""

from __future__ import annotations

from datetime import datetime

import pytest
from rich.console import Console

from rebalance_radar.pipelines.cli.detections_view import incident_line, incidents_first, render_with_incidents

pytestmark = pytest.mark.incidents


def _detection(detection_id: str, group: str, second: int) -> dict[str, object]:
    return {
        "cluster": "local",
        "detection_id": detection_id,
        "kind": "heartbeat_expiration",
        "severity": "warning",
        "group_id": group,
        "generation": 3,
        "member_id": f"m-{detection_id}",
        "detected_at": datetime(2026, 12, 2, 9, 22, second),
        "first_seen": datetime(2026, 12, 2, 9, 21, second),
        "last_seen": datetime(2026, 12, 2, 9, 22, second),
        "evidence": "[]",
        "status": "open",
        "summary": f"{detection_id} in {group}",
    }


INCIDENT = {
    "incident_id": "inc-1",
    "cause_kind": "broker_restart",
    "cause": "broker 2 stopped and started: the coordinator of 2 groups moved to broker 1 (orders, billing)",
    "window_start": datetime(2026, 12, 2, 9, 22, 0),
    "window_end": datetime(2026, 12, 2, 9, 22, 12),
    "groups": ["billing", "orders"],
    "detection_ids": ["d-orders", "d-billing"],
    "status": "closed",
}
ROWS = [
    _detection("d-audit", "audit", 40),
    _detection("d-billing", "billing", 30),
    _detection("d-orders", "orders", 20),
]


def test_each_incident_comes_with_its_detections_then_the_rest() -> None:
    sections = incidents_first(ROWS, [INCIDENT])
    assert [(s[0] or {}).get("incident_id") for s in sections] == ["inc-1", None]
    assert [d["detection_id"] for d in sections[0][1]] == ["d-billing", "d-orders"]  # the detections' order
    assert [d["detection_id"] for d in sections[1][1]] == ["d-audit"]
    assert incidents_first(ROWS[1:], [INCIDENT])[-1][0] is INCIDENT  # nothing left over: no empty section


def test_the_terminal_shows_the_incident_first() -> None:
    console = Console(record=True, width=220, color_system=None)
    render_with_incidents(ROWS, [INCIDENT], console)
    lines = console.export_text().splitlines()
    assert lines[0] == incident_line(INCIDENT)
    assert lines[0].startswith("incident inc-1 [closed] 2026-12-02 09:22:00 .. 09:22:12: broker_restart, 2 groups.")
    at = {key: next(i for i, line in enumerate(lines) if key in line) for key in ("d-orders", "d-billing", "d-audit")}
    assert at["d-billing"] < at["d-orders"] < at["d-audit"]
    assert any("outside any incident" in line for line in lines[at["d-orders"] :])


def test_without_incidents_the_table_is_as_before() -> None:
    console = Console(record=True, width=220, color_system=None)
    render_with_incidents(ROWS, [], console)
    text = console.export_text()
    assert "incident" not in text and text.strip().splitlines()[-1].startswith("3 detections (3 open)")


def test_the_report_shows_the_incidents_before_the_groups_and_links_them() -> None:
    from rebalance_radar.pipelines.cli.report import ReportData, render_report

    health = tuple({"cluster": "local", "group_id": g, "state": "Stable"} for g in ("audit", "billing", "orders"))
    data = ReportData((), tuple(ROWS), health, None, incidents=(INCIDENT,))
    page = render_report(data, "", title="report", generated_at=datetime(2026, 12, 2, 10, 0, 0))
    incidents_at = page.index("<h2>incidents across groups</h2>")
    assert incidents_at < page.index("<h2>groups</h2>") < page.index('<section class="group"')
    assert "broker 2 stopped and started" in page[incidents_at:]
    section = page.index("<h2>billing</h2>")
    anchor = page[page.rindex('id="', 0, section) :].split('"')[1]
    assert f'<a href="#{anchor}">billing</a>' in page[incidents_at : page.index("<h2>groups</h2>")]
