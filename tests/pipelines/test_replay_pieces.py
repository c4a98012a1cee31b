"""A large dump is replayed in pieces cut at line ends (`pipelines.stages.sources.PIECE_BYTES`), `PIECES_TOGETHER` a
micro-batch: the rows, their line numbers and the quarantine are those of the whole file, and the JVM never holds
more than a batch of pieces (a 164 MB dump read whole exhausted Spark's default heap and ended `radar replay` in a
stack trace)."""

from __future__ import annotations

import gzip
import itertools
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.formats.dump_columns import DumpLines
from rebalance_radar.pipelines.stages import sources
from rebalance_radar.pipelines.stages.ingest import run_ingest_replay
from rebalance_radar.pipelines.stages.sources import (
    PIECE_MARK,
    PIECES_TOGETHER,
    parse_dump_files,
    parse_dump_files_by_rows,
    piece_count,
    replay_staging_dir,
    staged_inputs,
)
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import OFFSETS_RAW, QUARANTINE
from tests.pipelines.ingest_support import isolated_config, table

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "consumer_offsets.sample.jsonl"
MODIFIED_MS = 1_763_780_000_000
BAD_LINE = b'{"topic": "__consumer_offsets", "partition": 0, "offset": "not a number"}'


def _rows_of(files: list[tuple[str, bytes]]) -> pa.RecordBatch:
    """What Spark's `binaryFile` source hands `mapInArrow`: one row per staged file."""
    return pa.RecordBatch.from_pydict(
        {
            "path": pa.array([f"file:///staging/{name}" for name, _ in files], pa.string()),
            "modificationTime": pa.array([MODIFIED_MS] * len(files), pa.timestamp("ms")),
            "content": pa.array([content for _, content in files], pa.binary()),
        }
    )


def _cut_at(patch: pytest.MonkeyPatch, piece_bytes: int) -> None:
    """Dumps over `piece_bytes` cut into pieces of at most about that size."""
    patch.setattr(sources, "PIECE_BYTES", piece_bytes)
    patch.setattr(sources, "CUT_ABOVE_BYTES", piece_bytes)


def _table(batches: list[pa.RecordBatch]) -> pa.Table:
    return pa.Table.from_batches(batches).combine_chunks()


def _whole_and_pieces(content: bytes, tmp_path: Path, piece_bytes: int) -> tuple[pa.Table, pa.Table, int]:
    """The replay's parse of `content` read whole, and read as the pieces `staged_inputs` cuts it into."""
    dump = tmp_path / "big.jsonl"
    dump.write_bytes(content)
    staging = tmp_path / "staging"
    with pytest.MonkeyPatch.context() as patch:
        _cut_at(patch, piece_bytes)
        (staged,) = staged_inputs([dump], staging)
    assert staged.pieces, "the dump was not cut"
    files = {name: "given/big.jsonl" for name in (*staged.names, staged.entry)}
    first_lines = dict(staged.pieces)
    whole = _table(list(parse_dump_files(iter([_rows_of([(staged.entry, content)])]), files)))
    read = [(name, (staging / name).read_bytes()) for name in staged.names]
    pieces = _table(list(parse_dump_files(iter([_rows_of(read)]), files, first_lines)))
    by_rows = _table(list(parse_dump_files_by_rows(iter([_rows_of(read)]), files, first_lines)))
    assert by_rows.equals(pieces)
    return whole, pieces, len(staged.pieces)


def test_pieces_give_the_rows_and_line_numbers_of_the_whole_dump(tmp_path: Path) -> None:
    lines = SAMPLE.read_bytes().splitlines()
    content = b"\n".join(lines[:20]) + b"\r\n\n" + BAD_LINE + b"\r\n" + b"\r".join(lines[20:]) + b"\n"
    whole, pieces, count = _whole_and_pieces(content, tmp_path, 2_000)
    assert count > 3
    assert pieces.equals(whole)
    bad = pieces.filter(pa.compute.is_valid(pieces.column("source_error"))).to_pylist()
    assert [row["source_line"] for row in bad if row["value"] == BAD_LINE] == [22]  # after one blank line
    assert all(row["source_file"] == "given/big.jsonl" for row in bad)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from([*SAMPLE.read_bytes().splitlines()[:8], BAD_LINE, b"", b"  ", b"x" * 300]),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.sampled_from([b"\n", b"\r\n", b"\r"]), min_size=1, max_size=3),
    st.integers(min_value=50, max_value=900),
)
def test_any_cut_reads_as_the_whole_file(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], ends: list[bytes], piece_bytes: int
) -> None:
    """Pieces are whole lines (a `\\r\\n` never split, a line longer than a piece kept whole), numbered as
    `DumpLines` numbers the whole file's lines; together they are the file."""
    content = b"".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    tmp_path = tmp_path_factory.mktemp("cut")
    dump = tmp_path / "d.jsonl"
    dump.write_bytes(content)
    with pytest.MonkeyPatch.context() as patch:
        _cut_at(patch, piece_bytes)
        (staged,) = staged_inputs([dump], tmp_path / "staging")
        count = piece_count(len(content))
    if len(content) <= piece_bytes:
        assert staged.pieces == ()
        return
    read = [(tmp_path / "staging" / name).read_bytes() for name in staged.names]
    assert b"".join(read) == content
    # as many pieces of about equal size as `piece_count` says (read side by side, a batch of them as heavy as the
    # next); fewer only where a line is longer than a piece (pieces end at `\n`: `\r` alone ends no piece)
    assert count % PIECES_TOGETHER == 0 and -(-len(content) // count) <= piece_bytes
    longest = max(len(run) + 1 for run in content.split(b"\n"))
    if longest < len(content) // count:
        assert len(read) == count
        assert all(len(piece) <= -(-len(content) // count) + longest for piece in read)
    else:
        assert len(read) <= count
    whole = DumpLines.of(pa.py_buffer(content))
    for (_, first), piece in zip(staged.pieces, read, strict=True):
        start = int(whole.starts[first - 1])
        assert content[start : start + len(piece)] == piece
    files = {name: "d.jsonl" for name in (*staged.names, staged.entry)}
    expected = _table(list(parse_dump_files(iter([_rows_of([(staged.entry, content)])]), files)))
    got = _table(
        list(parse_dump_files(iter([_rows_of(list(zip(staged.names, read, strict=True)))]), files, dict(staged.pieces)))
    )
    assert got.equals(expected)


def test_pieces_are_cut_once_and_follow_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _cut_at(monkeypatch, 1_000)
    dump = tmp_path / "d.jsonl"
    dump.write_bytes(SAMPLE.read_bytes())
    staging = tmp_path / "staging"
    (first,) = staged_inputs([dump], staging)
    stamps = [(staging / name).stat().st_mtime_ns for name in first.names]
    # the input's own time, one step later per piece: the file stream reads them in line order
    step = sources.PIECE_STAMP_STEP_NS
    assert stamps == [dump.stat().st_mtime_ns + k * step for k in range(len(stamps))]
    (again,) = staged_inputs([dump], staging)
    assert again == first  # the same pieces, the same names: a resumed replay reads none of them again
    with dump.open("ab") as more:
        more.write(b"\n" * 3 + BAD_LINE + b"\n")
    (grown,) = staged_inputs([dump], staging)
    on_disk = sorted(p.name for p in staging.glob(f"*{PIECE_MARK}*"))
    assert on_disk == sorted(grown.names)  # pieces of the old file that are not pieces of the new one are gone
    assert b"".join((staging / n).read_bytes() for n in grown.names) == dump.read_bytes()


def test_gzip_and_log_files_are_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _cut_at(monkeypatch, 500)
    zipped = tmp_path / "d.jsonl.gz"
    zipped.write_bytes(gzip.compress(SAMPLE.read_bytes()))
    log = tmp_path / "server.log"
    line = (
        "[2025-11-22 02:53:24,388] INFO [GroupCoordinator 1]: Stabilized group g generation 3 "
        "(__consumer_offsets-12) with 2 members (kafka.coordinator.group.GroupCoordinator)\n"
    )
    log.write_text(line * 20)
    assert os.path.getsize(zipped) > 500 and os.path.getsize(log) > 500
    staged = staged_inputs([zipped, log], replay_staging_dir([zipped, log], tmp_path / "staging"))
    assert [s.pieces for s in staged] == [(), ()]


def _offsets_by_commit(spark: SparkSession, config: RadarConfig) -> list[dict[int, tuple[int, int]]]:
    """Per commit that added rows to bronze `offsets_raw`, in commit order: the lowest and highest source offset of
    its rows per partition (read from the files the commit added)."""
    location = TableCatalog(config).location(OFFSETS_RAW)
    assert location is not None
    spans = []
    for commit in sorted((location / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        added = [str(location / a["add"]["path"]) for a in actions if "add" in a]
        if added:
            rows = spark.read.parquet(*added).groupBy("src_partition").agg(F.min("src_offset"), F.max("src_offset"))
            spans.append({r[0]: (r[1], r[2]) for r in rows.collect()})
    return spans


@pytest.mark.spark
def test_a_replay_in_pieces_writes_what_a_whole_replay_writes(
    spark: SparkSession,
    radar_config: RadarConfig,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Through Spark: the same counts and quarantine (line numbers included) whole and in pieces, `PIECES_TOGETHER`
    a micro-batch (the progress line counts them as input files, not records); the copies are deleted once the
    replay has read them."""
    lines = SAMPLE.read_bytes().splitlines()
    content = b"\n".join(lines[:30]) + b"\n" + BAD_LINE + b"\n" + b"\n".join(lines[30:]) + b"\n"
    dump = tmp_path / "in" / "big.jsonl"
    dump.parent.mkdir()
    dump.write_bytes(content)
    whole_config = isolated_config(radar_config, tmp_path / "whole")
    whole = run_ingest_replay(whole_config, [str(dump)])
    _cut_at(monkeypatch, 1_500)
    pieces = len(staged_inputs([dump], tmp_path / "counted")[0].pieces)
    assert pieces > 3 and pieces % PIECES_TOGETHER == 0
    batches = pieces // PIECES_TOGETHER
    pieces_config = isolated_config(radar_config, tmp_path / "pieces")
    capfd.readouterr()
    in_pieces = run_ingest_replay(pieces_config, [str(dump)])
    assert f": {pieces} input files in {batches} batches" in capfd.readouterr().err
    assert in_pieces == whole
    assert whole["offsets_raw"] > 30 and whole["quarantine"] >= 1

    def quarantined(config: RadarConfig) -> list[tuple[object, ...]]:
        rows = table(spark, config, QUARANTINE).select("src_file", "src_line", "reason")
        return sorted(tuple(r) for r in rows.where(F.col("src_line").isNotNull()).collect())

    assert quarantined(pieces_config) == quarantined(whole_config)
    assert any(line == 31 for _, line, _ in quarantined(pieces_config))
    # pieces side by side, in line order: each bronze commit adds offsets above those of the commit before it
    spans = _offsets_by_commit(spark, pieces_config)
    assert len(spans) == batches
    for before, after in itertools.pairwise(spans):
        assert all(before[p][1] < low for p, (low, _) in after.items() if p in before), (before, after)
    assert list((pieces_config.data_dir / "replay-inputs").glob(f"*/*{PIECE_MARK}*")) == []
    assert run_ingest_replay(pieces_config, [str(dump)]) == in_pieces  # again: nothing read twice
