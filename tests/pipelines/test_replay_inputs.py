"""Replay reads its own folder of links to the dump files, so whatever sits beside a dump cannot break it."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.formats.dump import dump_line, read_dump
from rebalance_radar.pipelines.stages.ingest import records_once, run_ingest_replay
from rebalance_radar.pipelines.stages.sources import replay_staging_dir, staging_links
from rebalance_radar.transforms.schemas import TABLES
from tests.pipelines.ingest_support import isolated_config, table

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "consumer_offsets.sample.jsonl"


def test_staging_is_deterministic_and_keeps_same_named_inputs_apart(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = tmp_path / "a" / "dump.jsonl", tmp_path / "b" / "dump.jsonl"
    first.write_text("{}\n")
    second.write_text("{}\n")
    staging = replay_staging_dir([first, second], tmp_path / "staging")
    assert staging == replay_staging_dir([second, first], tmp_path / "staging")  # order does not matter
    assert staging != replay_staging_dir([first], tmp_path / "staging")
    links = staging_links([first, second], staging)
    assert [link.resolve() for link in links] == [first, second]
    assert sorted(p.name for p in staging.iterdir()) == ["0000-dump.jsonl", "0001-dump.jsonl"]
    assert staging_links([first, second], staging) == links  # idempotent


@pytest.mark.spark
def test_replay_beside_partition_like_folders(spark: object, radar_config: RadarConfig, tmp_path: Path) -> None:
    """A `key=value` folder next to the dump (e.g. a data dir) made Spark's partition inference fail before."""
    work = tmp_path / "work"
    (work / "commit_date=2025-01-01").mkdir(parents=True)
    dump = work / SAMPLE.name
    dump.write_bytes(SAMPLE.read_bytes())
    counts = run_ingest_replay(radar_config.with_data_dir(work / "radar-data"), [str(dump)])
    expected = {"offsets_raw": 39, "offset_commits": 7, "group_metadata": 5, "group_records": 22, "quarantine": 6}
    assert {name: counts[name] for name in expected} == expected  # 5 bad offsets records + 1 telemetry garbage


def test_missing_input_fails_before_spark_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`radar replay` on a missing file spent 12 s starting Spark before saying so."""
    from rebalance_radar.pipelines.cli import main

    missing = tmp_path / "nope.jsonl"
    started = time.monotonic()
    assert main(["replay", "--input", str(SAMPLE), "--input", str(missing), "--data-dir", str(tmp_path / "d")]) == 2
    assert time.monotonic() - started < 3
    err = capsys.readouterr().err.strip().splitlines()
    hint = "pass JSON Lines dumps written by `radar capture`."
    assert err == [f"radar replay: dump file(s) not found: {missing}; {hint}"]
    assert not (tmp_path / "d").exists()  # nothing was started or written


@pytest.mark.spark
def test_a_record_is_written_once_whatever_files_bring_it(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """`--input a` then `--input a --input b` wrote a's rows twice, and a copy of a under another name again: the
    tables' natural key (cluster, src_topic, src_partition, src_offset) now keeps every record once."""
    config = isolated_config(radar_config, tmp_path / "data")
    a = tmp_path / "a" / "a.jsonl"
    a.parent.mkdir()
    a.write_bytes(SAMPLE.read_bytes())
    records = list(read_dump([a]))
    b = tmp_path / "b" / "b.jsonl"
    b.parent.mkdir()
    moved = [replace(r, offset=r.offset + 10_000) for r in records if r.topic == "__consumer_offsets"][:4]
    b.write_text("".join(dump_line(r) + "\n" for r in moved))
    copy = tmp_path / "c" / "copy-of-a.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(a.read_bytes())

    first = run_ingest_replay(config, [str(a)])
    assert run_ingest_replay(config, [str(a), str(b)])["offsets_raw"] == first["offsets_raw"] + len(moved)
    last = run_ingest_replay(config, [str(copy), str(a)])  # the copy and a in one run: the same records twice at once
    assert last["offsets_raw"] == first["offsets_raw"] + len(moved)
    assert last["offset_commits"] + last["group_metadata"] + last["group_records"] == (
        first["offset_commits"] + first["group_metadata"] + first["group_records"] + len(moved)
    )
    for schema in TABLES.values():
        if schema.record_key:
            keys = [tuple(row) for row in table(spark, config, schema).select(*schema.record_key).collect()]
            assert not [k for k, n in Counter(keys).items() if n > 1], schema.name
    assert last["quarantine"] == first["quarantine"]
    assert last["heartbeat_events"] == first["heartbeat_events"]


def test_a_dump_and_its_copy_in_one_new_replay_write_each_record_once(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """Into empty tables (nothing held yet to leave out), the in-batch dedup (`ingest.distinct_records`) alone keeps
    the second copy of each record out, whether two files in one micro-batch or one file bring it twice."""
    a = tmp_path / "a" / "a.jsonl"
    a.parent.mkdir()
    a.write_bytes(SAMPLE.read_bytes())
    copy = tmp_path / "c" / "copy-of-a.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(SAMPLE.read_bytes())
    twice = tmp_path / "t" / "a-twice.jsonl"
    twice.parent.mkdir()
    twice.write_bytes(SAMPLE.read_bytes() + b"\n".join(reversed(SAMPLE.read_bytes().splitlines())))
    alone = run_ingest_replay(isolated_config(radar_config, tmp_path / "alone"), [str(a)])
    assert alone["offsets_raw"] > 0 and alone["heartbeat_events"] > 0 and alone["quarantine"] > 0
    for name, inputs in (("both", [a, copy]), ("twice", [twice])):
        config = isolated_config(radar_config, tmp_path / name)
        # the sample's quarantined records have coordinates too: each is held once
        assert run_ingest_replay(config, [str(path) for path in inputs]) == alone, name
        for schema in TABLES.values():
            if schema.record_key:
                keys = [tuple(row) for row in table(spark, config, schema).select(*schema.record_key).collect()]
                assert not [k for k, n in Counter(keys).items() if n > 1], (name, schema.name)


def _source_rows(spark: SparkSession, partitions: list[list[tuple[object, ...]]]) -> DataFrame:
    """A replay batch as the parse gives it (`sources.SOURCE_COLUMNS`), in the partitions given."""
    schema = (
        "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, "
        "source_error STRING, source_file STRING, source_line BIGINT"
    )
    rows = [row for part in partitions for row in part]
    rdd = spark.sparkContext.parallelize(rows, len(partitions))
    return spark.createDataFrame(rdd, schema)


def _line(offset: int | None, line: int, error: str | None = None) -> tuple[object, ...]:
    topic = None if error else "__consumer_offsets"
    partition = None if error else 0
    return (b"k", b"v", topic, partition, offset, datetime(2025, 1, 1), error, "d.jsonl", line)


@pytest.mark.spark
def test_pieces_parsed_side_by_side_stay_where_they_were_parsed_unless_a_record_repeats(spark: SparkSession) -> None:
    """A batch of as many partitions as cores (dump pieces read together) is not moved by a shuffle when no record
    comes twice: each partition keeps its own rows, in order; when one does, each record is kept once and every
    unreadable line stays."""
    cores = spark.sparkContext.defaultParallelism
    parts = [[_line(part * 100 + i, part * 100 + i + 1) for i in range(5)] for part in range(cores)]
    held: list[DataFrame] = []
    once = records_once(_source_rows(spark, parts), held)
    assert held == [once]  # the parsed batch, cached as it is
    assert [[row["offset"] for row in part] for part in once.rdd.glom().collect()] == [
        [row[4] for row in part] for part in parts
    ]
    repeated = [list(part) for part in parts]
    repeated[-1] += [_line(0, 900), _line(None, 901, "not JSON"), _line(None, 902, "not JSON")]
    held = []
    once = records_once(_source_rows(spark, repeated), held)
    assert len(held) == 2
    offsets = [row["offset"] for row in once.where(F.col("source_error").isNull()).collect()]
    assert sorted(offsets) == sorted(row[4] for part in parts for row in part)
    assert sorted(row["source_line"] for row in once.where(F.col("source_error").isNotNull()).collect()) == [901, 902]
    for cached in held:
        cached.unpersist()


@pytest.mark.spark
def test_a_batch_of_one_file_is_spread_over_the_cores_by_its_dedup(spark: SparkSession) -> None:
    rows = [_line(i, i + 1) for i in range(6)] + [_line(2, 7)]
    held: list[DataFrame] = []
    once = records_once(_source_rows(spark, [rows]), held)
    assert sorted(row["offset"] for row in once.collect()) == list(range(6))
    assert once.rdd.getNumPartitions() >= spark.sparkContext.defaultParallelism
    for cached in held:
        cached.unpersist()
