"""`radar decode` end to end: the sample dump, bad input, stdin, and the exit codes users rely on."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_radar.pipelines.cli import main
from rebalance_radar.pipelines.formats.dump import DumpFormatError, DumpRecord, dump_line, parse_dump_line
from rebalance_radar.pipelines.formats.dump_json import run_decode
from rebalance_radar.pipelines.local.sample_dump import sample_records
from rebalance_radar.transforms.wire.coordinator_records import RECORD_TYPES

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "consumer_offsets.sample.jsonl"


def _decode_lines(paths: list[str], embedded: bool = False) -> list[dict]:
    out = io.StringIO()
    run_decode(paths, embedded=embedded, out=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_sample_dump_is_current() -> None:
    """The committed sample is exactly what the generator writes (regenerate it when the codec changes)."""
    expected = "".join(dump_line(r) + "\n" for r in sample_records())
    assert SAMPLE.read_text(encoding="utf-8") == expected


def test_sample_covers_every_record_type_tombstones_and_bad_records() -> None:
    lines = _decode_lines([str(SAMPLE)])
    offsets = [ln for ln in lines if ln["src"]["topic"] == "__consumer_offsets"]
    decoded_types = {ln["key"]["type"] for ln in offsets if ln["error"] is None}
    assert decoded_types == set(RECORD_TYPES)
    assert any(ln["value"] is None and ln["error"] is None for ln in offsets)  # tombstones
    kinds = [ln["error"]["kind"] for ln in offsets if ln["error"]]
    assert kinds.count("unsupported") == 2 and kinds.count("malformed") == 3
    # a failed value keeps its key
    assert any(ln["error"] and ln["key"] is not None for ln in offsets)


def test_offset_commit_decodes_to_kafka_formatter_form() -> None:
    first = _decode_lines([str(SAMPLE)])[0]
    assert first["key"] == {"type": 0, "data": {"group": "payments", "topic": "orders", "partition": 0}}
    assert first["value"] == {
        "version": 0,
        "data": {"offset": 1200, "metadata": "", "commitTimestamp": 1763780000000},
    }


def test_embedded_renders_consumer_protocol() -> None:
    lines = _decode_lines([str(SAMPLE)], embedded=True)
    group = next(ln for ln in lines if ln.get("embedded_consumer_protocol"))
    member = group["embedded_consumer_protocol"][0]
    assert member["subscription"]["data"]["topics"] == ["orders"]
    assert member["assignment"]["data"]["assignedPartitions"] == [{"topic": "orders", "partitions": [0]}]


def test_missing_file_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decode", "--input", "does-not-exist.jsonl"]) == 2
    assert "dump file(s) not found: does-not-exist.jsonl" in capsys.readouterr().err


def test_not_a_dump_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not json\n")
    assert main(["decode", "--input", str(bad)]) == 2
    assert f"{bad}:1" in capsys.readouterr().err


def test_bad_lines_are_reported_with_file_and_line_and_decoding_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A binary line aborted decode with "'utf-8' codec can't decode byte 0xa6" and no file name; now every bad line
    is one "FILE:LINE: reason" on stderr, and the records around it are decoded."""
    good = dump_line(DumpRecord("radar.telemetry", 0, 7, 0, None, b"x"))
    dump = tmp_path / "mixed.jsonl"
    dump.write_bytes(b"\n".join([good.encode(), b"PNG\xa6\x00\x01", b"", b"not json", good.encode()]) + b"\n")
    assert main(["decode", "--input", str(dump)]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2
    err = captured.err.splitlines()
    assert err[0] == f"radar decode: {dump}:2: not UTF-8 text (byte 0xa6 at column 4); is this a radar dump file?"
    assert err[1].startswith(f"radar decode: {dump}:4: not a JSON object")
    assert "2 records" in err[2] and "2 bad lines" in err[2]


def test_bad_lines_shown_are_bounded_but_all_counted(tmp_path: Path) -> None:
    dump = tmp_path / "garbage.bin"
    dump.write_bytes(b"\xa6\n" * 50)
    errors = io.StringIO()
    counts = run_decode([str(dump)], out=io.StringIO(), errors=errors, shown_bad_lines=3)
    assert (counts.records, counts.bad_lines) == (0, 50)
    assert [line.split(": ")[1] for line in errors.getvalue().splitlines()] == [f"{dump}:{n}" for n in (1, 2, 3)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"partition": 0, "offset": 1}', "missing required field 'topic'"),
        ('{"topic": "t", "partition": 0, "offset": 1, "codec": "rot13"}', "unknown codec"),
        ('{"topic": "t", "partition": 0, "offset": 1, "key": "zz!"}', "not valid base64"),
        ("[1, 2]", "expected a JSON object"),
        ('{"topic": "t", "partition": true, "offset": 1}', "partition/offset/timestamp integers"),
        ('{"topic": "t", "partition": 0, "offset": 1, "timestamp": false}', "partition/offset/timestamp integers"),
        ('{"topic": "\\ud800", "partition": 0, "offset": 1}', "topic is not Unicode text"),
        ('{"topic": "t", "partition": 0, "offset": 1, "value": "\\udc80", "codec": "utf8"}', "not valid utf8"),
    ],
)
def test_dump_line_errors(line: str, message: str) -> None:
    with pytest.raises(DumpFormatError, match=message):
        parse_dump_line(line, "x:1")


@pytest.mark.parametrize("codec", ["base64", "hex", "utf8"])
def test_dump_line_round_trip(codec: str) -> None:
    record = DumpRecord("radar.telemetry", 3, 42, 1_700_000_000_000, b"k", b"some text")
    assert parse_dump_line(dump_line(record, codec), "x:1") == record


def test_console_script_reads_stdin() -> None:
    """The installed `radar` entry point, with `-` as stdin, as the README shows."""
    key = base64.b64encode(bytes.fromhex("0001000867726f75702d69640003666f6f00000001")).decode()
    value = base64.b64encode(bytes.fromhex("0000000000000000006400086d6574616461746100000000000004d2")).decode()
    line = json.dumps({"topic": "__consumer_offsets", "partition": 0, "offset": 5, "key": key, "value": value})
    proc = subprocess.run(
        [sys.executable, "-m", "rebalance_radar.pipelines.cli", "decode", "--input", "-"],
        input=line + "\n",
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["value"]["data"] == {"offset": 100, "metadata": "metadata", "commitTimestamp": 1234}
    assert "1 records: 1 decoded" in proc.stderr
