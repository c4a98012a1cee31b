"""`radar watch` and the reading commands on a pipe, over the incident tables `radar replay` wrote: plain snapshots
refreshed without a JVM, lag columns only when a lag table exists, Ctrl-C ending with exit 0 and no traceback."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

from rebalance_radar.transforms.schemas import TABLES
from tests.pipelines.incident_tables import BILLING, ORDERS, PAYMENTS, IncidentTables
from tests.pipelines.radar_run_process import radar_command, radar_without_a_jvm
from tests.pipelines.test_console_output import plain_lines

NO_JVM = {"JAVA_HOME": "/nonexistent-so-no-jvm-can-start"}
SNAPSHOT_HEADER = "radar watch: "


def test_watch_refreshes_plain_snapshots_and_ends_on_ctrl_c(incident_tables: IncidentTables) -> None:
    with subprocess.Popen(
        radar_command("watch", "--interval", "1", "--data-dir", str(incident_tables.data_dir)),
        env={**os.environ, **NO_JVM, "COLUMNS": "120"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as watch:
        assert watch.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while sum(line.startswith(SNAPSHOT_HEADER) for line in seen) < 3 and time.monotonic() < deadline:
            line = watch.stdout.readline()
            if not line:
                break
            seen.append(line)
        watch.send_signal(signal.SIGINT)  # Ctrl-C
        rest, err = watch.communicate(timeout=30)
    out = "".join(seen) + rest
    assert watch.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = plain_lines(out, 120)
    headers = [line for line in lines if line.startswith(SNAPSHOT_HEADER)]
    assert len(headers) >= 3, out[-3000:]  # refreshed, a snapshot each time
    assert all(str(incident_tables.data_dir) in header for header in headers)
    snapshot = out.split(headers[-1])[0].rsplit(headers[-2], 1)[1]  # one whole snapshot
    for group in (ORDERS, BILLING, PAYMENTS):
        assert f" {group} " in snapshot, snapshot
    assert "zombie_commit" in snapshot and "lag status" not in snapshot  # no lag table here: no lag columns
    assert "open detections" in snapshot


def test_lag_columns_show_when_a_lag_table_exists(incident_tables: IncidentTables, tmp_path: Path) -> None:
    if "group_lag" not in TABLES:
        pytest.skip("this tree declares no group_lag table yet")
    from deltalake import write_deltalake

    data_dir = tmp_path / "data"
    shutil.copytree(incident_tables.data_dir / "tables", data_dir / "tables")
    measured = datetime(2026, 11, 18, 11, 8, tzinfo=UTC)
    rows = [
        {"partition": 0, "committed_offset": 100, "end_offset": 1300, "lag": 1200, "lag_status": "STALL"},
        {"partition": 1, "committed_offset": 200, "end_offset": 230, "lag": 30, "lag_status": "OK"},
    ]
    table = pa.table(
        {
            "cluster": ["local"] * 2,
            "group_id": [ORDERS] * 2,
            "topic": ["orders"] * 2,
            "partition": pa.array([r["partition"] for r in rows], pa.int32()),
            "measured_at": pa.array([measured] * 2, pa.timestamp("us", tz="UTC")),
            "committed_offset": [r["committed_offset"] for r in rows],
            "end_offset": [r["end_offset"] for r in rows],
            "lag": [r["lag"] for r in rows],
            "lag_status": [r["lag_status"] for r in rows],
            "status_reason": ["a sentence"] * 2,
            "rebalance_id": pa.array([None, None], pa.string()),
            "group_total_lag": [1230] * 2,
            "group_max_lag": [1200] * 2,
        }
    )
    write_deltalake(str(data_dir / "tables" / "group_lag"), table, mode="overwrite", schema_mode="overwrite")
    done = radar_without_a_jvm("watch", "--count", "1", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = plain_lines(done.stdout, 250)
    header = next(line for line in lines if "group_id" in line and "state" in line)
    assert "lag status" in header, header
    orders = next(line for line in lines if line.split()[:1] == [ORDERS])
    assert "1230" in orders and "OK, STALL" in orders, orders


def test_reading_commands_on_a_pipe_are_plain_and_fit(incident_tables: IncidentTables) -> None:
    data_dir = str(incident_tables.data_dir)
    for argv in (
        ("detections", "--data-dir", data_dir),
        ("groups", "--data-dir", data_dir),
        ("sql", "SELECT group_id, kind, summary FROM detections", "--data-dir", data_dir),
    ):
        done = radar_without_a_jvm(*argv)  # stdout is a pipe here, COLUMNS=250
        assert done.returncode == 0, done.stderr[-2000:]
        plain_lines(done.stdout, 250)
        plain_lines(done.stderr)
    as_csv = radar_without_a_jvm("detections", "--format", "csv", "--open", "--data-dir", data_dir)
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert rows and {row["status"] for row in rows} <= {"open", "provisional"}, as_csv.stdout[-2000:]
    as_json = radar_without_a_jvm("groups", "--format", "json", "--data-dir", data_dir)
    groups = [json.loads(line) for line in plain_lines(as_json.stdout)]
    assert {g["group_id"] for g in groups} >= {ORDERS, BILLING, PAYMENTS}
    assert all("open_incidents" in g and "open_kinds" in g for g in groups)
