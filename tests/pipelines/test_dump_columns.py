"""The dump format's vectorised reader against the row-by-row one: for any file contents, `parse_dump_files` (fast
path + `decode_dump_line` for what it declines) gives exactly the batches `parse_dump_files_by_rows` (the reader for
every line) gives: same rows, same errors with FILE:LINE, same files and line numbers, same batch boundaries."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rebalance_radar.pipelines.formats.dump import CODECS, DumpRecord, dump_line
from rebalance_radar.pipelines.formats.dump_columns import DumpLines, fast_path_rows, holds_only_topic
from rebalance_radar.pipelines.stages.sources import LINES_PER_ARROW_BATCH, parse_dump_files, parse_dump_files_by_rows
from tests.data_files import data_path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "consumer_offsets.sample.jsonl"


MODIFIED_MS = 1_763_780_000_000


def _binary_files(contents: list[bytes]) -> pa.RecordBatch:
    """What Spark's `binaryFile` source hands `mapInArrow`: one row per file."""
    paths = [f"file:///staging/{index:04d}-dump%20{index}.jsonl" for index in range(len(contents))]
    return pa.RecordBatch.from_pydict(
        {
            "path": pa.array(paths, pa.string()),
            "modificationTime": pa.array([MODIFIED_MS] * len(contents), pa.timestamp("ms")),
            "content": pa.array(contents, pa.binary()),
        }
    )


def _assert_same_batches(contents: list[bytes]) -> None:
    """Same batches, or the same exception where the reference fails (a record Arrow cannot take, e.g. a partition
    `true`, which json.loads reads as an int: replay always stopped there)."""
    files = {f"{index:04d}-dump {index}.jsonl": f"dumps/given {index}.jsonl" for index in range(len(contents))}
    try:
        reference = list(parse_dump_files_by_rows(iter([_binary_files(contents)]), files))
    except (pa.ArrowException, UnicodeEncodeError) as exc:
        with pytest.raises(type(exc)):
            list(parse_dump_files(iter([_binary_files(contents)]), files))
        return
    fast = list(parse_dump_files(iter([_binary_files(contents)]), files))
    assert [b.num_rows for b in fast] == [b.num_rows for b in reference]
    for got, expected in zip(fast, reference, strict=True):
        assert got.schema == expected.schema
        for name in expected.schema.names:
            assert got.column(name).equals(expected.column(name)), (name, got.column(name), expected.column(name))


def _accepted(content: bytes) -> int:
    """How many lines of `content` the fast path takes (so a test shows it took part)."""
    dump = DumpLines.of(pa.py_buffer(content))
    lines = pa.array(
        [content[s:e] for s, e, b in zip(dump.starts, dump.stops, dump.blank, strict=True) if not b], pa.large_binary()
    )
    return int(fast_path_rows(lines)[1].sum()) if len(lines) else 0


@pytest.mark.parametrize(
    "content",
    [b"", b"\n", b"a", b"a\n", b"a\r\nb\rc\n\nd", b"\r\r\n\n  \n\x0b\x0c\n x", b"\n\r", b"x\x0by\x1cz\x85\r\n\r\n"],
)
def test_lines_are_cut_as_bytes_splitlines_cuts_them(content: bytes) -> None:
    dump = DumpLines.of(pa.py_buffer(content))
    assert [content[s:e] for s, e in zip(dump.starts, dump.ends, strict=True)] == content.splitlines()
    assert list(dump.blank) == [not raw.strip() for raw in content.splitlines()]


@given(st.lists(st.sampled_from([b"\n", b"\r", b"\r\n", b" ", b"\t", b"\x0b", b"\x0c", b"a", b"{"]), max_size=30))
def test_any_line_ends_are_cut_as_bytes_splitlines_cuts_them(parts: list[bytes]) -> None:
    content = b"".join(parts)
    dump = DumpLines.of(pa.py_buffer(content))
    assert [content[s:e] for s, e in zip(dump.starts, dump.ends, strict=True)] == content.splitlines()
    assert np.array_equal(dump.stops[:-1], dump.starts[1:])
    assert list(dump.blank) == [not raw.strip() for raw in content.splitlines()]


def test_the_sample_dump_parses_the_same_and_mostly_on_the_fast_path() -> None:
    content = SAMPLE.read_bytes()
    _assert_same_batches([content])
    assert _accepted(content) == len(content.splitlines())  # `dump_line` writes exactly the fast path's shape


def test_repository_jsonl_files_parse_the_same() -> None:
    """Other JSON Lines of the repository (not dumps: every line is a bad line) and the sample, in one batch."""
    contents = [
        data_path("vectors", name).read_bytes()
        for name in ("consumer_offsets_vectors.jsonl", "embedded_broker_offsets.jsonl", "protocol_vectors.jsonl")
    ]
    _assert_same_batches([*contents, SAMPLE.read_bytes()])


def test_batches_are_cut_across_files_as_before() -> None:
    sample = SAMPLE.read_bytes()
    many = sample * (LINES_PER_ARROW_BATCH // len(sample.splitlines()) + 7)
    contents = [many, b"\n\n", sample, many + b"garbage\r\n" + many]
    _assert_same_batches(contents)
    # both readers share the cutting: its shape, on its own (full batches, then the rest; every non-blank line)
    lines = sum(1 for content in contents for raw in content.splitlines() if raw.strip())
    sizes = [b.num_rows for b in parse_dump_files(iter([_binary_files(contents)]), {})]
    full, rest = divmod(lines, LINES_PER_ARROW_BATCH)
    assert sizes == [LINES_PER_ARROW_BATCH] * full + ([rest] if rest else [])


_HEAD = '{"topic":"t","partition":1,"offset":2,"timestamp":3'
EDGE_LINES: list[bytes] = [
    line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    for line in [
        *(
            f'{_HEAD},"key":{key},"value":null,"codec":"{codec}"}}'
            for codec in CODECS
            for key in (
                '""',
                '"QQ=="',
                '"QR=="',
                '"QUI="',
                '"QUJD"',
                '"QQ="',
                '"QQ"',
                '"Q"',
                '"QQ==QQ=="',
                '"QQ=\\u003d"',
                '" QQ=="',
                '"ab"',
                '"abc"',
                '"ab cd"',
                '"0g"',
                '"AB"',
                '"ff00"',
                '"é"',
                '"\\u00e9"',
                '"\\ud800"',
                '"\x7f"',
                '"a\\"b"',
            )
        ),
        *(
            f'{_HEAD},"key":null,"value":{value}{codec}}}'
            for value in ('"QQ=="', "1", "true", "{}", '["a"]')
            for codec in ("", ',"codec":null', ',"codec":"hex"', ',"codec":"utf8"', ',"codec":"UTF8"', ',"codec":1')
        ),
        *(
            _HEAD.replace('"partition":1', f'"partition":{number}') + "}"
            for number in (
                "-0",
                "01",
                "1.0",
                "1e3",
                "1E3",
                "-1",
                "2147483647",
                "2147483648",
                "-2147483648",
                "-2147483649",
                "999999999",
                "1000000000",
                "true",
                "false",
                "null",
                '"1"',
                "NaN",
                "Infinity",
                "-Infinity",
                "- 1",
            )
        ),
        *(
            _HEAD.replace('"offset":2', f'"offset":{number}') + "}"
            for number in (
                "999999999999999999",
                "1000000000000000000",
                "9223372036854775807",
                "9223372036854775808",
                "-9223372036854775808",
                "-9223372036854775809",
                "2.0",
                "-0",
            )
        ),
        *(_HEAD.replace('"timestamp":3', f'"timestamp":{number}') + "}" for number in ("null", "1.5", '"3"', "false")),
        *(
            _HEAD.replace('"topic":"t"', f'"topic":{topic}') + "}"
            for topic in (
                "null",
                "1",
                '"\\u0041"',
                '"\\ud800"',
                '"a\\/b"',
                '"\x00"',
                '"\x1f"',
                '"\x7f"',
                '"é\u2028"',
                '""',
            )
        ),
        '{"partition":1,"offset":2,"topic":"t"}',
        '{"topic":"t","offset":2}',
        '{"topic":"t","partition":1}',
        f"{_HEAD}}}",
        f'{_HEAD},"x":1}}',
        f'{_HEAD},"x":NaN}}',
        f'{_HEAD},"x":{{"topic":5}}}}',
        f'{_HEAD},"topic":"u"}}',
        f'{_HEAD},"partition":5}}',
        '{"topic":"t","topic":"u","partition":1,"offset":2}',
        f' \t{_HEAD} , "key" : null }} \t',
        f"\x0b{_HEAD}}}",
        f"{_HEAD}}}\x0c",
        f"\ufeff{_HEAD}}}",
        f"\xa0{_HEAD}}}",
        f"{_HEAD}}} x",
        f"{_HEAD}}}{{}}",
        f"{_HEAD}}},",
        f"[{_HEAD}}}]",
        "[]",
        "5",
        '"s"',
        "null",
        "{}",
        "{",
        "}",
        b'{"topic":"t\xff","partition":1,"offset":2}',
        b'{"topic":"t","partition":1,"offset":2}\xc3',
        b'{"topic":"t","partition":1,"offset":2,"x":"\xed\xa0\x80"}',
        b"\xff\xfe",
        b"\x00",
    ]
]


@pytest.mark.parametrize("line", EDGE_LINES, ids=range(len(EDGE_LINES)))
def test_edge_lines_parse_as_the_reader_parses_them(line: bytes) -> None:
    _assert_same_batches([line, line + b"\r\n", b"\n" + line + b"\r" + line])


def test_edge_lines_in_one_file_parse_the_same_and_some_take_the_fast_path() -> None:
    content = b"\n".join(EDGE_LINES)
    _assert_same_batches([content])
    assert 20 < _accepted(content) < len(EDGE_LINES) / 2


# Records as `dump_line` writes them, with every codec, then bent every way the two readers could part.
TOPIC = st.one_of(
    st.sampled_from(["__consumer_offsets", "orders", ""]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
)
INT32 = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, -1, 10**9 - 1, 10**9, 2**31 - 1, -(2**31)]))
INT64 = st.one_of(
    st.integers(0, 2**42), st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, 10**18 - 1, 10**18, 2**63 - 1])
)
PAYLOAD = st.one_of(st.none(), st.binary(max_size=24))


@st.composite
def dump_lines(draw: st.DrawFn) -> str:
    codec = draw(st.sampled_from(CODECS))
    if codec == "utf8":
        key, value = (
            draw(st.one_of(st.none(), st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)))
            for _ in range(2)
        )
        key_bytes, value_bytes = (None if t is None else t.encode() for t in (key, value))
    else:
        key_bytes, value_bytes = draw(PAYLOAD), draw(PAYLOAD)
    record = DumpRecord(draw(TOPIC), draw(INT32), draw(INT64), draw(INT64), key_bytes, value_bytes)
    return dump_line(record, codec)


def _as_object(line: str) -> dict[str, object]:
    return json.loads(line)


MUTATIONS = {
    "as is": lambda line, _: line,
    "json.dumps spacing": lambda line, _: json.dumps(_as_object(line)),
    "spaces and tabs": lambda line, _: " \t" + line.replace(",", " ,\t").replace(":", ": ") + "\t ",
    "other whitespace": lambda line, n: ["\x0b", "\x0c", "\xa0", "\u2028", "\ufeff"][n % 5] + line,
    "codec dropped": lambda line, _: json.dumps({k: v for k, v in _as_object(line).items() if k != "codec"}),
    "codec null": lambda line, _: json.dumps({**_as_object(line), "codec": None}),
    "codec unknown": lambda line, n: json.dumps({**_as_object(line), "codec": ["BASE64", "", 1, "raw"][n % 4]}),
    "fields reordered": lambda line, _: json.dumps(dict(reversed(_as_object(line).items()))),
    "optional dropped": lambda line, n: json.dumps(
        {k: v for k, v in _as_object(line).items() if k != ["timestamp", "key", "value"][n % 3]}
    ),
    "required dropped": lambda line, n: json.dumps(
        {k: v for k, v in _as_object(line).items() if k != ["topic", "partition", "offset"][n % 3]}
    ),
    "extra field": lambda line, n: line[:-1] + [',"x":{"topic":1}', ',"x":NaN', ',"x":[1,2]', ',"x":"y"'][n % 4] + "}",
    "duplicate key": lambda line, n: (
        line[:-1] + [',"partition":3', ',"topic":"t"', ',"key":"AA=="', ',"offset":1.5'][n % 4] + "}"
    ),
    "timestamp null": lambda line, _: json.dumps({**_as_object(line), "timestamp": None}),
    "number forms": lambda line, n: re.sub(
        r'"partition":-?[0-9]+',
        '"partition":' + ["1.0", "1e3", "-0", "01", "true", '"1"', "null", "2147483648", "1E+2", "- 1"][n % 10],
        line,
    ),
    "offset as float": lambda line, n: json.dumps(
        {**_as_object(line), "offset": [1.0, 1e3, float("nan"), True][n % 4]}
    ),
    "big offset": lambda line, n: json.dumps({**_as_object(line), "offset": [2**63, -(2**63) - 1, 10**30][n % 3]}),
    "string as number": lambda line, n: json.dumps({**_as_object(line), ["topic", "key", "value"][n % 3]: 5}),
    "bool as string": lambda line, n: json.dumps({**_as_object(line), ["topic", "key", "value"][n % 3]: True}),
    "escaped topic": lambda line, n: line.replace(
        '"topic":"', '"topic":"' + ["\\u0041", "\\ud800", "\\n", '\\"'][n % 4]
    ),
    "escaped payload": lambda line, n: line.replace(
        '"value":"', '"value":"' + ["\\u0041", "\\/", "\\ud83d\\ude00"][n % 3]
    ),
    "payload bent": lambda line, n: line.replace(
        '"key":"', '"key":"' + ["=", "A", "AA", "AAA", "AB==", " ", "AB=A", "é", "0g", "AAAA====", "ab cd"][n % 11]
    ),
    "control char": lambda line, n: line.replace('"topic":"', '"topic":"' + ["\x00", "\x1f", "\x7f", "\t"][n % 4]),
    "trailing garbage": lambda line, n: line + [" x", "{}", ",", "  ", "]", line][n % 6],
    "not an object": lambda _, n: ["[1,2]", "5", '"s"', "null", "{", "NaN", "{}", '{"topic":"t"}'][n % 8],
    "truncated": lambda line, n: line[: max(1, n % max(1, len(line)))],
}


@st.composite
def bent_lines(draw: st.DrawFn) -> bytes:
    line = draw(dump_lines())
    mutation = draw(st.sampled_from(sorted(MUTATIONS)))
    text = MUTATIONS[mutation](line, draw(st.integers(0, 1000)))
    raw = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 19)) == 0:  # bytes that are not UTF-8 somewhere in the line
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"])) + raw[at:]
    return raw


LINE = st.one_of(
    bent_lines(),
    dump_lines().map(str.encode),
    st.sampled_from([b"", b"   ", b"\t", b"\x0b", b"\x0c \x0c"]),
    st.binary(max_size=30).filter(lambda b: b"\n" not in b and b"\r" not in b),
)
LINE_END = st.sampled_from([b"\n", b"\n", b"\n", b"\r\n", b"\r"])


@st.composite
def dump_files(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(LINE, max_size=40))
    ends = draw(st.lists(LINE_END, min_size=len(lines), max_size=len(lines)))
    content = b"".join(line + end for line, end in zip(lines, ends, strict=True))
    return content[: -len(ends[-1])] if lines and draw(st.booleans()) else content


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(dump_files(), min_size=1, max_size=3))
def test_any_file_contents_parse_as_the_reader_parses_them(contents: list[bytes]) -> None:
    _assert_same_batches(contents)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(dump_lines(), min_size=1, max_size=30))
def test_dump_line_output_is_taken_by_the_fast_path_when_it_can_be(lines: list[str]) -> None:
    """Records as `dump_line` writes them: same rows, and the fast path takes every line its shape allows (strings
    without escapes, partitions of at most 9 digits, offsets and timestamps of at most 18)."""
    content = "".join(line + "\n" for line in lines).encode()
    _assert_same_batches([content])
    expected = sum(
        1
        for line in lines
        if "\\" not in line
        and len(str(abs((obj := _as_object(line))["partition"]))) <= 9
        and all(len(str(abs(obj[field]))) <= 18 for field in ("offset", "timestamp"))
    )
    assert _accepted(content) == expected


@pytest.mark.parametrize("text", ["", "QQ==", "QUI=", "QUJD", "QR==", "QUJ=", "AAAA" * 50 + "/+8="])
def test_canonical_base64_decodes_as_b64decode(text: str) -> None:
    """Spare bits of a last group are dropped as base64.b64decode(validate=True) drops them."""
    line = json.dumps({"topic": "t", "partition": 0, "offset": 0, "key": text, "value": None}, separators=(",", ":"))
    _assert_same_batches([line.encode()])
    assert _accepted(line.encode()) == 1
    (batch,) = parse_dump_files(iter([_binary_files([line.encode()])]), {})
    assert batch.column("key").to_pylist() == [base64.b64decode(text, validate=True)]


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b'{"topic":"\\ud800","partition":0,"offset":0}\n', "topic is not Unicode text"),
        (b'{"topic":"t","partition":true,"offset":0}\n', "partition/offset/timestamp integers"),
    ],
)
def test_a_surrogate_topic_or_a_bool_partition_is_a_bad_line_for_both_readers(line: bytes, error: str) -> None:
    """`json.loads` reads a topic `"\\ud800"` (Arrow cannot write it) and `true` as True, an int to Python: both
    crashed the replay task before the reader refused them; the fast path declines them, the reader's error is the
    row's."""
    assert _accepted(line) == 0
    (by_rows,) = parse_dump_files_by_rows(iter([_binary_files([line])]), {})
    (vectorised,) = parse_dump_files(iter([_binary_files([line])]), {})
    assert vectorised.equals(by_rows)
    (reason,) = vectorised.column("source_error").to_pylist()
    assert error in reason


# --- the telemetry query's read: a dump of offsets records only gives no rows (`holds_only_topic`) ---

OFFSETS_TOPIC = "__consumer_offsets"


@st.composite
def offsets_dump_lines(draw: st.DrawFn) -> bytes:
    """Mostly offsets records as `dump_line` writes them; some bent every way above, some of another topic."""
    codec = draw(st.sampled_from(CODECS))
    record = DumpRecord(OFFSETS_TOPIC, draw(INT32), draw(INT64), draw(INT64), draw(PAYLOAD), draw(PAYLOAD))
    line = dump_line(record, "base64" if codec == "utf8" else codec)
    kind = draw(st.integers(0, 9))
    if kind == 0:
        line = draw(dump_lines())  # any topic, any codec
    elif kind <= 3:
        line = MUTATIONS[draw(st.sampled_from(sorted(MUTATIONS)))](line, draw(st.integers(0, 1000)))
    elif kind == 4:  # a second topic field, the last of which json.loads keeps
        second = draw(st.sampled_from(['"topic":"t"', '"to\\u0070ic":"t"', '"topic" :"t"', '"x":{"topic":"t"}']))
        line = line[:-1] + "," + second + "}"
    return line.encode("utf-8", "surrogatepass")


def _other_topics(batches: list[pa.RecordBatch]) -> list[dict[str, object]]:
    """The rows the telemetry query keeps of a replay (`IngestStage`: another topic, no `source_error`)."""
    rows = [row for batch in batches for row in batch.to_pylist()]
    return [row for row in rows if row["source_error"] is None and row["topic"] != OFFSETS_TOPIC]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.lists(offsets_dump_lines(), max_size=8), min_size=1, max_size=3))
def test_a_read_of_other_topics_skips_only_files_that_hold_none(files_lines: list[list[bytes]]) -> None:
    contents = [b"\n".join(lines) for lines in files_lines]
    batch = _binary_files(contents)
    try:
        whole = list(parse_dump_files(iter([batch]), {}))
    except (pa.ArrowException, UnicodeEncodeError):  # a record Arrow cannot take stops the offsets query's read
        return
    skipping = list(parse_dump_files(iter([batch]), {}, other_than_topic=OFFSETS_TOPIC))
    assert _other_topics(skipping) == _other_topics(whole)
    for content in contents:
        if holds_only_topic(pa.py_buffer(content), OFFSETS_TOPIC):
            assert _other_topics(list(parse_dump_files(iter([_binary_files([content])]), {}))) == []


def _offsets_dump(count: int, codec: str = "base64") -> bytes:
    return "".join(
        dump_line(DumpRecord(OFFSETS_TOPIC, n % 50, n, MODIFIED_MS + n, b"k%d" % n, b"v%d" % n), codec) + "\n"
        for n in range(count)
    ).encode()


@pytest.mark.parametrize(
    ("content", "only_offsets"),
    [
        (_offsets_dump(200), True),
        (_offsets_dump(200, "hex"), True),
        (b"".join(json.dumps(json.loads(line)).encode() + b"\r\n" for line in _offsets_dump(5).splitlines()), True),
        (b"", True),
        (b"not a dump line\n{}\n", True),  # no line of any topic: bad lines, the offsets query's to quarantine
        (_offsets_dump(50) + dump_line(DumpRecord("orders", 0, 1, MODIFIED_MS, None, b"x")).encode(), False),
        (_offsets_dump(3).replace(b'"codec":"base64"}', b'"codec":"base64","topic":"orders"}', 1), False),
        (_offsets_dump(3).replace(b'"codec":"base64"}', b'"codec":"base64","to\\u0070ic":"orders"}', 1), False),
        (_offsets_dump(3).replace(b'"topic":"__consumer_offsets"', b'"topic" : "__consumer_offsets"', 1), False),
        (_offsets_dump(3, "utf8").replace(b'"value":"v1"', b'"value":"\\"topic\\""', 1), False),
    ],
    ids=[
        "base64",
        "hex",
        "json.dumps spacing",
        "empty",
        "bad lines",
        "another topic",
        "a second topic field",
        "an escaped second topic field",
        "other spacing",
        "an escape",
    ],
)
def test_a_dump_holds_only_offsets_records_when_counting_proves_it(content: bytes, only_offsets: bool) -> None:
    assert holds_only_topic(pa.py_buffer(content), OFFSETS_TOPIC) is only_offsets
    skipping = list(parse_dump_files(iter([_binary_files([content])]), {}, other_than_topic=OFFSETS_TOPIC))
    if only_offsets:
        assert skipping == []
    else:
        assert _other_topics(skipping) == _other_topics(list(parse_dump_files(iter([_binary_files([content])]), {})))
    if "to\\u0070ic" in content.decode(errors="replace") or b'"topic":"orders"}' in content:
        assert [row["topic"] for row in _other_topics(skipping)] == ["orders"]  # json.loads keeps the last topic


def test_a_gzip_dump_is_told_by_its_contents_and_a_log_file_is_never_skipped() -> None:
    log = (
        b"[2025-11-22 02:53:21,101] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] Member m-b in "
        b"group orders has failed, removing it from the group. (kafka.coordinator.group.GroupCoordinator)\n"
    )
    assert holds_only_topic(pa.py_buffer(log), OFFSETS_TOPIC)  # no "topic" field: counting alone would skip it
    batch = _binary_files([gzip.compress(_offsets_dump(100)), log, gzip.compress(log)])
    skipping = list(parse_dump_files(iter([batch]), {}, other_than_topic=OFFSETS_TOPIC))
    whole = list(parse_dump_files(iter([batch]), {}))
    assert len(_other_topics(whole)) == 2  # the log file's line, twice
    assert _other_topics(skipping) == _other_topics(whole)
    assert sum(b.num_rows for b in skipping) == 2
