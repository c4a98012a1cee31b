"""`radar detections` rendering: newest first as loaded, every shown column, a summary a human can read."""

from __future__ import annotations

from datetime import datetime

from rich.console import Console

from rebalance_radar.pipelines.cli.detections_view import detections_summary, render_detections


def _detection(kind: str, status: str, group: str, second: int) -> dict[str, object]:
    return {
        "cluster": "local",
        "detection_id": f"{kind}-{second}",
        "kind": kind,
        "severity": "critical" if kind == "zombie_commit" else "warning",
        "group_id": group,
        "generation": 7,
        "member_id": f"member-{second}",
        "detected_at": datetime(2026, 11, 23, 9, 0, second),
        "status": status,
        "summary": f"member member-{second} of group {group} did something",
    }


def test_table_and_summary() -> None:
    rows = [
        _detection("zombie_commit", "open", "orders", 30),
        _detection("heartbeat_expiration", "resolved", "orders", 20),
        _detection("heartbeat_expiration", "open", "payments", 10),
    ]
    console = Console(record=True, width=200, color_system=None)
    render_detections(rows, console)
    text = console.export_text()
    lines = text.splitlines()
    order = [next(i for i, line in enumerate(lines) if f"member-{s}" in line) for s in (30, 20, 10)]
    assert order == sorted(order)
    assert "2026-11-23 09:00:30" in text and "zombie_commit" in text and "payments" in text
    assert lines[-1] == "3 detections (2 open) in 2 group(s): heartbeat_expiration 2, zombie_commit 1"


def test_nothing_found_says_so() -> None:
    console = Console(record=True, width=120, color_system=None)
    render_detections([], console)
    assert console.export_text().strip() == "no detections"
    assert detections_summary([_detection("offset_regression", "open", "g", 1)]).startswith("1 detection (1 open)")
