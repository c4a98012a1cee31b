"""Any data dir (issue #51): a path with a space and non-ASCII letters, a data dir moved after a replay and replayed
again, and a read-only data dir that the read-only commands serve while the others refuse it in a sentence."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rebalance_radar.pipelines.cli import main
from rebalance_radar.pipelines.config import REPO_ROOT
from tests.pipelines.radar_run_process import radar_command

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SAMPLE = str(REPO_ROOT / "samples" / "consumer_offsets.sample.jsonl")
CONF = str(REPO_ROOT / "conf" / "local.yml")
COUNTS = "rows per table: offsets_raw=39, telemetry_raw=3, offset_commits=7, group_metadata=5"


def radar(data_dir: Path, *args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    command = [*prefix, *radar_command("--data-dir", str(data_dir), *args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=data_dir.parent)


def read_only_mount(folder: Path) -> tuple[str, ...]:
    """A command prefix that runs it in a mount namespace where `folder` is read-only (an unprivileged user
    namespace: root writes through any file mode, so a chmod would prove nothing)."""
    mount = f'mount --bind "{folder}" "{folder}" && mount -o remount,bind,ro "{folder}" && exec "$@"'
    return ("unshare", "-rm", "sh", "-c", mount, "read-only")


def test_a_data_dir_moved_to_a_path_with_a_space_and_accents_replays_again_and_serves_reads_read_only(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first"
    replay = ["--conf", CONF, "replay", "--input", SAMPLE]
    assert main(["--data-dir", str(first), *replay]) == 0  # in this process: its session is started already
    data = tmp_path / "on-call data, café"
    shutil.move(first, data)  # a moved (or copied) data dir: Spark's replay checkpoints still name the old path
    capsys.readouterr()
    assert main(["--data-dir", str(data), *replay]) == 0
    again = capsys.readouterr().err
    assert f"this data dir was at {first}; the replay checkpoints there name files under that path" in again
    assert COUNTS in again  # read again, nothing written twice
    assert "Wrong basePath" not in again

    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no unprivileged mount namespace here to make a read-only data dir: {probe.stderr!r}")
    before = sorted(str(p) for p in data.rglob("*"))
    # a new process (its JVM started with the path's space and accents in its options), on the read-only data dir
    query = ("sql", "SELECT count(*) AS n FROM offsets_raw", "--engine", "spark", "--format", "json")
    sql = radar(data, *query, prefix=read_only_mount(data))
    assert sql.returncode == 0, sql.stderr
    assert sql.stdout.strip() == '{"n":39}'
    refused = radar(data, "replay", "--input", SAMPLE, prefix=read_only_mount(data))
    assert refused.returncode == 2
    assert f"radar replay: the data dir {data} is read-only for this user: radar replay writes" in refused.stderr
    assert "Traceback" not in sql.stderr + refused.stderr
    assert sorted(str(p) for p in data.rglob("*")) == before  # nothing was written, not even Spark's log config
