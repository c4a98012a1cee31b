"""Any data dir (issue #51): a path with a space and non-ASCII letters, a data dir moved after a replay and replayed
again, and a read-only data dir that the read-only commands serve while the others refuse it in a sentence. The
first replay also runs as a user's shell may start it: the console script, a broken `python3` first on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rebalance_radar.pipelines.config import REPO_ROOT
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, lane_run
from tests.pipelines.radar_run_process import radar_command
from tests.pipelines.test_cli_faults import SPARK_NOISE, radar_env

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
class BrokenPythonReplay:
    """What the first replay left, read before the data dir moves: its working folder's entries, the commands that
    its processes started through PATH (`started.log`), what is left in its temp folder, and whether its tables
    are under its data dir."""

    entries: list[str]
    started_commands: list[str]
    temp_left: list[str]
    tables_in_data_dir: bool


@dataclass(frozen=True)
class MovedDataDir:
    """What the lane left (`replay_move_and_read_only`): the two replays, and the two commands on the read-only data
    dir with its files before and after them (none when this host cannot mount it read-only: `no_read_only`)."""

    first: Path
    data: Path
    replays: list[subprocess.CompletedProcess[str]]
    broken_python: BrokenPythonReplay
    no_read_only: str | None = None
    sql: subprocess.CompletedProcess[str] | None = None
    refused: subprocess.CompletedProcess[str] | None = None
    files_before: list[str] = field(default_factory=list)
    files_after: list[str] = field(default_factory=list)


def broken_python_replay(folder: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    """`radar replay` by its console script, in `folder`, with a `python3` that fails first on PATH and Hadoop's
    shell commands counted into `folder/started.log` (writing the tables must start none:
    `pipelines.runtime.local_runtime`), its temp folder `folder/tmp`."""
    stub = folder / "bin"
    stub.mkdir()
    (stub / "python3").write_text("#!/bin/sh\necho 'not the python radar runs in' >&2\nexit 1\n")
    (stub / "python3").chmod(0o755)
    (stub / "python").symlink_to(stub / "python3")
    started = folder / "started.log"
    for command in ("chmod", "readlink", "stat", "ls"):
        real = shutil.which(command)
        assert real is not None, command
        (stub / command).write_text(f'#!/bin/sh\necho "{command} $*" >> {started}\nexec {real} "$@"\n')
        (stub / command).chmod(0o755)
    script = Path(sys.executable).parent / "radar"
    assert script.is_file(), f"the console script is not next to {sys.executable}"
    temp = folder / "tmp"  # the process's temp folder: its Python sockets' folder is made there
    temp.mkdir()
    env = radar_env(PATH=f"{stub}{os.pathsep}{os.environ['PATH']}", TMPDIR=str(temp))
    env.pop("PYSPARK_PYTHON", None)
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    return subprocess.run(
        [str(script), "replay", "--input", SAMPLE, "--data-dir", str(data_dir)],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )


@lane_run
def replay_move_and_read_only(context: RecordingContext) -> MovedDataDir:
    """In the suite's lane (`concurrent_recordings.lane_run`): a replay (`broken_python_replay`), the data dir moved
    to a path with a space and accents and replayed again, then a read (`radar sql` on Spark) and a replay on it
    mounted read-only. Each a new process, whose JVM is started with the path in its options."""
    tmp_path = context.tmp_path_factory.mktemp("data-dirs")
    first = tmp_path / "first"
    replays = [broken_python_replay(tmp_path, first)]
    started, temp = tmp_path / "started.log", tmp_path / "tmp"
    broken_python = BrokenPythonReplay(
        sorted(p.name for p in tmp_path.iterdir()),
        started.read_text().splitlines() if started.is_file() else [],
        sorted(p.name for p in temp.iterdir()),
        (first / "tables" / "offset_commits" / "_delta_log").is_dir(),
    )
    data = tmp_path / "on-call data, café"
    shutil.move(first, data)  # a moved (or copied) data dir: Spark's replay checkpoints still name the old path
    replays.append(radar(data, "replay", "--input", SAMPLE))
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return MovedDataDir(first, data, replays, broken_python, no_read_only=repr(probe.stderr))
    before = sorted(str(p) for p in data.rglob("*"))
    query = ("sql", "SELECT count(*) AS n FROM offsets_raw", "--engine", "spark", "--format", "json")
    sql = radar(data, *query, prefix=read_only_mount(data))
    refused = radar(data, "replay", "--input", SAMPLE, prefix=read_only_mount(data))
    after = sorted(str(p) for p in data.rglob("*"))
    return MovedDataDir(first, data, replays, broken_python, None, sql, refused, before, after)


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


@pytest.mark.spark
@pytest.mark.slow
def test_replay_works_with_a_broken_python3_first_on_path(concurrent_recordings: ConcurrentRecordings) -> None:
    moved: MovedDataDir = concurrent_recordings.result(replay_move_and_read_only, timeout_s=1200)
    done, broken = moved.replays[0], moved.broken_python
    print(done.stderr)  # what a user sees (pytest -s), as pasted in the README
    assert done.returncode == 0, done.stderr[-3000:]
    assert "offset_commits=7" in done.stderr
    assert not [line for line in done.stderr.splitlines() if any(noise in line for noise in SPARK_NOISE)]
    # no spark-warehouse, derby.log, .radar
    assert broken.entries == ["bin", "first", "started.log", "tmp"]
    assert broken.tables_in_data_dir  # under --data-dir
    # the JVM copies its connector jars (Spark's `chmod a+x` of each); nothing under the data dir started a command
    assert any(line.startswith("chmod a+x ") for line in broken.started_commands)  # the counter counts
    assert [line for line in broken.started_commands if str(moved.first) in line] == []
    # the Unix sockets of its Python workers and accumulator server went with it (Spark leaves them without stop())
    assert broken.temp_left == []
