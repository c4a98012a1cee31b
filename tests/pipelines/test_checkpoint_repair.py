"""Checkpoints an operator can mend (issue #51): a damaged checkpoint is named in a sentence with the command that
repairs it, and `radar repair-checkpoint` sets the damaged batches aside so that the next start redoes them,
losing and duplicating nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.cli import main
from rebalance_radar.pipelines.config import REPO_ROOT, RadarConfig
from rebalance_radar.pipelines.storage.checkpoint_repair import find_damage, format_problem
from rebalance_radar.transforms.schemas import DETECTIONS, OFFSET_COMMITS, OFFSETS_RAW, TABLES
from tests.pipelines.ingest_support import table

CONF = str(REPO_ROOT / "conf" / "local.yml")
SAMPLE = str(REPO_ROOT / "samples" / "consumer_offsets.sample.jsonl")


def test_an_entry_reads_as_spark_wrote_it_or_says_why_not() -> None:
    offsets = b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"logOffset":0}\n-'
    assert format_problem("offsets", offsets) is None
    assert format_problem("commits", b'v1\n{"nextBatchWatermarkMs":0}') is None
    assert format_problem("commits", b'v1\n{"nextBatchWat') == "cut short or garbled (a line is not JSON)"
    assert format_problem("offsets", b"v1\n") == "cut short (no entry after the version line)"
    assert format_problem("offsets", b"") == "empty, or no version line"
    assert format_problem("offsets", b"\xff\xfe") == "not text"


def counts(spark: SparkSession, config: RadarConfig) -> dict[str, int]:
    return {schema.name: table(spark, config, schema).count() for schema in (OFFSETS_RAW, OFFSET_COMMITS, DETECTIONS)}


@pytest.mark.spark
@pytest.mark.slow
def test_a_damaged_checkpoint_is_named_with_its_repair_and_the_repair_loses_and_duplicates_nothing(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    config = radar_config.with_data_dir(data)
    replay = ["--conf", CONF, "--data-dir", str(data), "replay", "--input", SAMPLE]
    assert main(replay) == 0
    before = counts(spark, config)
    assert before[DETECTIONS.name] > 0
    checkpoints = config.checkpoint_dir
    (ingest,) = checkpoints.glob("replay-*/radar-offsets")
    (detect,) = checkpoints.glob("replay-*/radar-detect")
    # a crash mid-write: the ingest's commit entry cut short, the detection's newest offsets entry half there
    (ingest / "commits" / "0").write_text('v1\n{"nextBatchWat')
    newest = max(int(p.name) for p in (detect / "offsets").iterdir() if p.name.isdigit())
    whole = (detect / "offsets" / str(newest)).read_bytes()
    (detect / "offsets" / str(newest)).write_bytes(whole[: len(whole) // 2])
    capsys.readouterr()

    assert main(replay) == 1
    said = capsys.readouterr().err
    assert "cannot read its checkpoint (Checksum error: " in said
    assert "Run `radar repair-checkpoint` (with the same --data-dir): it sets the damaged batch aside" in said
    assert "\tat " not in said and "Logical Plan" not in said

    repair = ["--conf", CONF, "--data-dir", str(data), "repair-checkpoint"]
    assert main([*repair, "--dry-run"]) == 1
    listed = capsys.readouterr().out
    assert "radar-offsets/commits/0: checksum error" in listed and f"radar-detect/offsets/{newest}: checksum" in listed
    assert main(repair) == 0
    assert "set aside 8 file(s) in" in capsys.readouterr().out  # each entry with its checksum, both logs, both
    assert find_damage(checkpoints) == []
    assert main(repair) == 0
    assert "reads as Spark wrote it: no repair" in capsys.readouterr().out

    assert main(replay) == 0  # the set-aside batches redone
    assert counts(spark, config) == before
    for schema in (OFFSETS_RAW, OFFSET_COMMITS):
        rows = table(spark, config, schema)
        assert rows.count() == rows.select(*TABLES[schema.name].record_key).distinct().count()
