"""What `radar check` says of the data dir's `radar run` (`logs/run-status.json`): running and whole, a query not
running, silent for too long (killed or hung), or stopped with the sentence it failed with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from rebalance_radar.pipelines.runtime.run_status import STALE_AFTER_S, QueryStatus, RunStatusFile, read_run_status

QUERIES = [
    QueryStatus(name="radar-offsets-kafka-x", active=True, batches=12, last_batch_at="2026-12-02T01:00:00Z"),
    QueryStatus(name="radar-detect-kafka-x", active=False, batches=3),
]


def test_the_status_a_run_writes_is_what_radar_check_says(tmp_path: Path) -> None:
    assert read_run_status(tmp_path) is None
    status_file = RunStatusFile(tmp_path)
    status_file.write("running", QUERIES, ["clock ticks (refused)"], force=True)
    status = read_run_status(tmp_path)
    assert status is not None and status.state == "running"
    now = datetime.fromisoformat(status.updated_at) + timedelta(seconds=3)
    lines = status.lines(now)
    assert lines[0].startswith("radar run (pid ") and lines[0].endswith("is running 1 of 2 queries:")
    assert "  radar-offsets-kafka-x: running, 12 batches, last micro-batch at 2026-12-02T01:00:00Z" in lines
    assert "  radar-detect-kafka-x: STOPPED, 3 batches, no micro-batch yet" in lines
    assert "  not running: radar-detect-kafka-x" in lines and "  FAILING: clock ticks (refused)" in lines

    silent = status.lines(now + timedelta(seconds=STALE_AFTER_S + 1))
    assert len(silent) == 1 and "has not reported for" in silent[0] and "killed or hangs" in silent[0]

    status_file.write("failed", QUERIES, error="streaming query radar-detect-kafka-x failed (...)", force=True)
    ended = read_run_status(tmp_path)
    assert ended is not None
    assert ended.lines(datetime.now(UTC))[0].endswith(
        "failed at " + ended.updated_at + ": streaming query radar-detect-kafka-x failed (...)"
    )
