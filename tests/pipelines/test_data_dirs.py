"""Any data dir (issue #51): a path with a space and non-ASCII letters, a data dir moved after a replay and replayed
again, and a read-only data dir that the read-only commands serve while the others refuse it in a sentence."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rebalance_radar.pipelines.config import REPO_ROOT
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, lane_run
from tests.pipelines.radar_run_process import radar_command

SAMPLE = str(REPO_ROOT / "samples" / "consumer_offsets.sample.jsonl")
COUNTS = "rows per table: offsets_raw=39, telemetry_raw=3, offset_commits=7, group_metadata=5"


def radar(data_dir: Path, *args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    command = [*prefix, *radar_command("--data-dir", str(data_dir), *args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=data_dir.parent)


def read_only_mount(folder: Path) -> tuple[str, ...]:
    """A command prefix that runs it in a mount namespace where `folder` is read-only (an unprivileged user
    namespace: root writes through any file mode, so a chmod would prove nothing)."""
    mount = f'mount --bind "{folder}" "{folder}" && mount -o remount,bind,ro "{folder}" && exec "$@"'
    return ("unshare", "-rm", "sh", "-c", mount, "read-only")


@dataclass(frozen=True)
class MovedDataDir:
    """What the lane left (`replay_move_and_read_only`): the two replays, and the two commands on the read-only data
    dir with its files before and after them (none when this host cannot mount it read-only: `no_read_only`)."""

    first: Path
    data: Path
    replays: list[subprocess.CompletedProcess[str]]
    no_read_only: str | None = None
    sql: subprocess.CompletedProcess[str] | None = None
    refused: subprocess.CompletedProcess[str] | None = None
    files_before: list[str] = field(default_factory=list)
    files_after: list[str] = field(default_factory=list)


@lane_run
def replay_move_and_read_only(context: RecordingContext) -> MovedDataDir:
    """In the suite's lane (`concurrent_recordings.lane_run`): a replay, the data dir moved to a path with a space
    and accents and replayed again, then a read (`radar sql` on Spark) and a replay on it mounted read-only. Each a
    new process, whose JVM is started with the path in its options."""
    tmp_path = context.tmp_path_factory.mktemp("data-dirs")
    first = tmp_path / "first"
    replays = [radar(first, "replay", "--input", SAMPLE)]
    data = tmp_path / "on-call data, café"
    shutil.move(first, data)  # a moved (or copied) data dir: Spark's replay checkpoints still name the old path
    replays.append(radar(data, "replay", "--input", SAMPLE))
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return MovedDataDir(first, data, replays, no_read_only=repr(probe.stderr))
    before = sorted(str(p) for p in data.rglob("*"))
    query = ("sql", "SELECT count(*) AS n FROM offsets_raw", "--engine", "spark", "--format", "json")
    sql = radar(data, *query, prefix=read_only_mount(data))
    refused = radar(data, "replay", "--input", SAMPLE, prefix=read_only_mount(data))
    after = sorted(str(p) for p in data.rglob("*"))
    return MovedDataDir(first, data, replays, None, sql, refused, before, after)


@pytest.mark.spark
@pytest.mark.slow
def test_a_data_dir_moved_to_a_path_with_a_space_and_accents_replays_again_and_serves_reads_read_only(
    concurrent_recordings: ConcurrentRecordings,
) -> None:
    moved: MovedDataDir = concurrent_recordings.result(replay_move_and_read_only, timeout_s=1200)
    for done in moved.replays:
        assert done.returncode == 0, done.stderr[-3000:]
    again = moved.replays[1].stderr
    assert f"this data dir was at {moved.first}; the replay checkpoints there name files under that path" in again
    assert COUNTS in again  # read again, nothing written twice
    assert "Wrong basePath" not in again

    if moved.no_read_only is not None:
        pytest.skip(f"no unprivileged mount namespace here to make a read-only data dir: {moved.no_read_only}")
    sql, refused = moved.sql, moved.refused
    assert sql is not None and refused is not None
    assert sql.returncode == 0, sql.stderr
    assert sql.stdout.strip() == '{"n":39}'
    assert refused.returncode == 2
    assert f"radar replay: the data dir {moved.data} is read-only for this user: radar replay writes" in refused.stderr
    assert "Traceback" not in sql.stderr + refused.stderr
    assert moved.files_after == moved.files_before  # nothing was written, not even Spark's log config
