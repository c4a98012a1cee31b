"""The class-data archive of short commands: one per Java + classpath, only ever complete under its final name.

The JVM's side (dumping at exit, mapping) runs in every `radar sql`, `radar detections` and short `radar replay`
the CLI tests start; here the archive's life cycle runs against a real child process that, like the gateway's
JVM, ends when its stdin closes and writes its dump as it exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from rebalance_radar.pipelines.config import REPO_ROOT
from rebalance_radar.pipelines.runtime.local_runtime import (
    ClassArchive,
    archive_key,
    class_archive,
    settle_class_archive,
)
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, lane_run

WRITES_AT_EXIT = "import sys, pathlib; sys.stdin.read(); pathlib.Path(sys.argv[1]).write_bytes(b'classes')"
EXITS_WITHOUT_WRITING = "import sys; sys.stdin.read()"
NOISE = ("Traceback", "Exception", "WARN ", "Py4J", "[warning]", "cds")


def _spark_home(tmp_path: Path) -> Path:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "spark-core.jar").write_bytes(b"core")
    return home


def _jvm_like(code: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE)


def test_the_key_follows_the_classpath(tmp_path: Path) -> None:
    home = _spark_home(tmp_path)
    jar = tmp_path / "delta.jar"
    jar.write_bytes(b"v1")
    first = archive_key([jar], home)
    assert archive_key([jar], home) == first
    jar.write_bytes(b"v1 and more")  # another build of the connector
    assert archive_key([jar], home) != first
    assert archive_key([], home) != archive_key([jar], home)


def test_a_complete_dump_moves_into_place_and_is_mapped_next_time(tmp_path: Path) -> None:
    home, archives = _spark_home(tmp_path), tmp_path / "archives"
    archive = class_archive(archives, [], home)
    assert archive is not None and archive.pending is not None
    assert "-XX:ArchiveClassesAtExit=" in archive.java_options
    assert settle_class_archive(archive, _jvm_like(WRITES_AT_EXIT, str(archive.pending)))
    assert archive.path.read_bytes() == b"classes"
    assert not archive.pending.exists()
    mapped = class_archive(archives, [], home)
    assert mapped == ClassArchive(archive.path, None)
    assert f"-XX:SharedArchiveFile={archive.path}" in mapped.java_options


def test_a_java_that_dumps_nothing_is_not_asked_again(tmp_path: Path) -> None:
    home, archives = _spark_home(tmp_path), tmp_path / "archives"
    archive = class_archive(archives, [], home)
    assert archive is not None
    assert not settle_class_archive(archive, _jvm_like(EXITS_WITHOUT_WRITING))
    assert not archive.path.exists()
    assert class_archive(archives, [], home) is None


def test_a_killed_jvm_leaves_no_archive_and_the_next_command_tries_again(tmp_path: Path) -> None:
    home, archives = _spark_home(tmp_path), tmp_path / "archives"
    archive = class_archive(archives, [], home)
    assert archive is not None and archive.pending is not None
    archive.pending.write_bytes(b"clas")  # a dump cut short
    process = _jvm_like(EXITS_WITHOUT_WRITING)
    process.kill()
    process.wait()
    assert not settle_class_archive(archive, process)
    assert not archive.path.exists() and not archive.pending.exists()
    again = class_archive(archives, [], home)
    assert again is not None and again.pending is not None


@dataclass(frozen=True)
class ArchiveRuns:
    """Two `radar sql` processes in a row on one archive folder, and what the folder held after each."""

    done: list[subprocess.CompletedProcess[str]]
    archive_suffixes: list[list[str]]


@lane_run
def two_sql_commands_on_one_archive_folder(context: RecordingContext) -> ArchiveRuns:
    """The two processes, in the suite's lane (`concurrent_recordings.lane_run`); the test reads what they left."""
    tmp_path = context.tmp_path_factory.mktemp("class-archive")
    archives = tmp_path / "archives"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RADAR__")}
    env |= {"PYTHONPATH": str(REPO_ROOT), "RADAR__SPARK__CLASS_ARCHIVE_DIR": str(archives)}
    argv = [sys.executable, "-m", "rebalance_radar.pipelines.cli", "sql", "SELECT 41 + 1 AS answer"]
    argv += ["--format", "json", "--engine", "spark"]
    argv += ["--data-dir", str(tmp_path / "data")]
    runs = ArchiveRuns([], [])
    for _ in range(2):
        runs.done.append(subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300))
        runs.archive_suffixes.append([p.suffix for p in archives.iterdir()] if archives.is_dir() else [])
    return runs


@pytest.mark.spark
@pytest.mark.slow
def test_radar_sql_dumps_the_archive_once_then_maps_it(concurrent_recordings: ConcurrentRecordings) -> None:
    """The real JVM: the first `radar sql` dumps the archive as its JVM exits, the second maps it; both answer the
    same, exit 0, and print nothing of Java's or Spark's own (on a data dir with no table yet: that once ended in
    a stack trace, the local database did not exist)."""
    runs: ArchiveRuns = concurrent_recordings.result(two_sql_commands_on_one_archive_folder, timeout_s=1200)
    for index, (done, suffixes) in enumerate(zip(runs.done, runs.archive_suffixes, strict=True)):
        assert done.returncode == 0, done.stderr[-3000:]
        assert not [line for line in done.stderr.splitlines() if any(n in line for n in NOISE)], done.stderr
        saving = [line for line in done.stderr.splitlines() if "class-data archive" in line]
        assert len(saving) == (1 if index == 0 else 0), done.stderr  # the one-time wait is announced
        assert suffixes == [".jsa"]  # complete, under its final name, and only that
    first, second = (done.stdout for done in runs.done)
    assert first == second and "42" in first
