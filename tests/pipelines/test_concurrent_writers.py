"""Two radar processes on one data dir (issue #51): two `radar replay`s of overlapping dumps at once, into a data
dir neither has seen, write every record once and both finish; a second writer of the same stream is refused in
a sentence."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import REPO_ROOT, RadarConfig
from rebalance_radar.pipelines.storage.data_dir_locks import hold_stream, release_stream
from rebalance_radar.transforms.schemas import GROUP_METADATA, OFFSET_COMMITS, OFFSETS_RAW
from tests.pipelines.concurrent_recordings import ConcurrentRecordings, RecordingContext, lane_run
from tests.pipelines.ingest_support import isolated_config, table
from tests.pipelines.radar_run_process import radar_command

SAMPLE = REPO_ROOT / "samples" / "consumer_offsets.sample.jsonl"
FILES, PER_FILE = 9, 400


def write_dump_files(folder: Path) -> list[Path]:
    """`FILES` dump files of the sample's records, each its own offsets of partitions 0 to 2."""
    sample = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    folder.mkdir(parents=True)
    paths = []
    for index in range(FILES):
        path = folder / f"part-{index}.jsonl"
        lines = []
        for n in range(PER_FILE):
            record = dict(sample[n % len(sample)])
            record.update(partition=n % 3, offset=index * PER_FILE + n // 3)
            lines.append(json.dumps(record))
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


@dataclass(frozen=True)
class TwoReplays:
    config: RadarConfig
    files: list[Path]
    returncodes: list[int | None]
    outputs: list[str]


@lane_run
def two_replays_at_once(context: RecordingContext) -> TwoReplays:
    """The two replays, in the suite's lane (`concurrent_recordings.lane_run`); the test counts what they wrote."""
    folder = context.tmp_path_factory.mktemp("two-replays")
    files = write_dump_files(folder / "dumps")
    config = isolated_config(context.config, folder / "data dir")  # a space in the path, too
    first, second = files[:6], files[3:]  # three files in both
    logs = [folder / "first.log", folder / "second.log"]
    processes = []
    for paths, log in zip((first, second), logs, strict=True):
        with log.open("wb") as out:
            args = ["--data-dir", str(config.data_dir), "replay"]
            for path in paths:
                args += ["--input", str(path)]
            processes.append(subprocess.Popen(radar_command(*args), stdout=out, stderr=subprocess.STDOUT, cwd=folder))
        time.sleep(0.5)  # kept, the scenario: the second replay starts while the first one sets the data dir up
    for process in processes:
        process.wait(600)
    outputs = [log.read_text(errors="replace") for log in logs]
    return TwoReplays(config, files, [p.returncode for p in processes], outputs)


@pytest.mark.spark
@pytest.mark.slow
def test_two_replays_at_once_into_one_new_data_dir_write_every_record_once(
    spark: SparkSession, concurrent_recordings: ConcurrentRecordings
) -> None:
    replays: TwoReplays = concurrent_recordings.result(two_replays_at_once, timeout_s=1200)
    config, files, outputs = replays.config, replays.files, replays.outputs
    assert replays.returncodes == [0, 0], [output[-4000:] for output in outputs]
    assert not any("Traceback" in output for output in outputs), outputs

    raw = table(spark, config, OFFSETS_RAW)
    records = [json.loads(line) for path in files for line in path.read_text().splitlines()]
    expected = {(r["partition"], r["offset"]) for r in records if r["topic"] == "__consumer_offsets"}
    assert raw.count() == len(expected)  # each record of both dumps, once
    assert raw.select(*OFFSETS_RAW.record_key).distinct().count() == len(expected)
    assert raw.where(F.col("src_offset") >= 3 * PER_FILE).count() > 0
    for schema in (OFFSET_COMMITS, GROUP_METADATA):
        rows = table(spark, config, schema)
        assert rows.count() > 0
        assert rows.count() == rows.select(*schema.record_key).distinct().count(), schema.name


def test_a_second_writer_of_a_stream_is_refused_in_a_sentence(tmp_path: Path) -> None:
    """Two processes on one stream (two `radar run`s on one Kafka cluster, or the same dump twice at once): the
    second is refused naming the first; the same process may hold it twice (a run's stages share their stream)."""
    checkpoints = tmp_path / "checkpoints"
    held = hold_stream(checkpoints, "kafka-local-abc")
    assert hold_stream(checkpoints, "kafka-local-abc") == held
    holder = (
        "import sys\n"
        "from pathlib import Path\n"
        "from rebalance_radar.pipelines.storage.data_dir_locks import StreamInUse, hold_stream\n"
        "try:\n"
        f"    hold_stream(Path({str(checkpoints)!r}), 'kafka-local-abc')\n"
        "except StreamInUse as refused:\n"
        "    print(refused); sys.exit(3)\n"
    )
    command = [sys.executable, "-c", holder]
    other = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, cwd=REPO_ROOT)
    assert other.returncode == 3, other.stderr
    assert "another radar (pid " in other.stdout
    assert "is writing stream kafka-local-abc of this data dir: wait for it to end or stop it" in other.stdout
    release_stream(held)
    release_stream(held)  # the last use ends: another process may take it now
    again = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, cwd=REPO_ROOT)
    assert again.returncode == 0, again.stdout + again.stderr
