"""The dump format's vectorised reader: a whole dump file parsed over Arrow buffers into the replay's columns.

Replay parsed every line in Python (`pipelines.formats.dump.decode_dump_line`), which capped a worker before anything
else ran (`benchmarks/dump_parse.py` measures both readers). This reader cuts a file into lines with numpy (exactly as
`bytes.splitlines`), checks every line at once against the shape `dump_line` writes (one RE2 pattern over the Arrow
array), parses the lines of that shape with Arrow's JSON reader and decodes their payloads over whole buffers (base64 in
one `binascii` call per column, hex with numpy). It *accepts* only lines it can
prove the row-by-row reader reads the same way: fields in `dump_line`'s order, JSON whitespace, strings without
escapes or control characters, integers of at most 18 digits (partition 9), UTF-8 text, canonical base64 (padded),
hex in pairs. Every other line (other field orders, extra fields, escapes, big numbers, bad payloads, bad lines) goes
through `decode_dump_line`, which stays the single source of truth: this reader never writes an error of its own.
tests/pipelines/test_dump_columns.py proves the two give the same rows.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from rebalance_radar.pipelines.formats.dump import CODECS, DumpFormatError, decode_dump_line

# A replayed dump line (the timestamp is typed afterwards, in Spark); a bad line keeps its bytes as the value.
PARSED_DUMP = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp_ms", pa.int64()),
        ("source_error", pa.string()),
        ("source_file", pa.string()),
        ("source_line", pa.int64()),
    ]
)

_WS = r"[ \t]*"  # JSON whitespace inside a line (\r and \n end it)
_STRING = r'"[^"\\\x00-\x1f]*"'  # no escapes, no control characters: its value is its text
_INT = r"-?(?:0|[1-9][0-9]{0,17})"  # an int64, whatever its digits
_INT32 = r"-?(?:0|[1-9][0-9]{0,8})"  # an int32, whatever its digits


def _field(name: str, value: str) -> str:
    return rf'{_WS}"{name}"{_WS}:{_WS}(?:{value}){_WS}'


_BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"


def _line_shape(payload: str, codec: str) -> str:
    """A line of `dump_line`'s fields in its order, the optional ones possibly absent, with an end of line (\\n or
    \\r\\n) kept in the Arrow value."""
    return (
        rf"^{_WS}\{{{_field('topic', _STRING)},{_field('partition', _INT32)},{_field('offset', _INT)}"
        rf"(?:,{_field('timestamp', _INT + '|null')})?"
        rf"(?:,{_field('key', payload + '|null')})?"
        rf"(?:,{_field('value', payload + '|null')})?"
        rf"(?:,{_field('codec', codec)})?"
        rf"\}}{_WS}(?:\r?\n)?$"
    )


# The lines the fast path takes; anything else is the reader's. Most lines are base64 (`dump_line`'s default), so
# one pass over them also proves their payloads; the others' payloads are checked per codec afterwards.
DUMP_LINE_SHAPE = _line_shape(_STRING, "|".join([*(f'"{codec}"' for codec in CODECS), "null"]))
BASE64_DUMP_LINE_SHAPE = _line_shape(f'"{_BASE64}"', '"base64"|null')
# Payload texts each codec's reader decodes without a question: base64.b64decode(validate=True) takes exactly
# these (its non-strict a2b_base64 drops a last group's spare bits, as `_base64_decoded` does); bytes.fromhex these.
_PAYLOAD_SHAPE = {
    "base64": f"^{_BASE64}$",
    "hex": r"^(?:[0-9a-fA-F]{2})*$",
    "utf8": r"",  # the JSON string's text is the value (no escapes): its UTF-8 bytes
}
_JSON_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int64()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("key", pa.string()),
        ("value", pa.string()),
        ("codec", pa.string()),
    ]
)
_PAD, _ZERO_DIGIT = np.uint8(ord("=")), np.uint8(ord("A"))
_HEX_DIGITS = np.zeros(256, np.uint8)
_HEX_DIGITS[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10, dtype=np.uint8)
_HEX_DIGITS[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16, dtype=np.uint8)
_HEX_DIGITS[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16, dtype=np.uint8)
_SPACE = np.zeros(256, bool)
_SPACE[np.frombuffer(b" \t\n\r\x0b\x0c", np.uint8)] = True  # what bytes.strip() removes


@dataclass(frozen=True)
class DumpLines:
    """A dump file's lines as `content.splitlines()` cuts them (\\n, \\r and \\r\\n end a line), as positions.

    `starts[i]:ends[i]` is line i + 1 without its line end, `starts[i]:stops[i]` with it (stops[i] = starts[i + 1]);
    `blank` marks what the reader skips (`not raw.strip()`), still counted in the line numbers."""

    content: pa.Buffer
    starts: np.ndarray
    ends: np.ndarray
    stops: np.ndarray
    blank: np.ndarray

    @staticmethod
    def of(content: pa.Buffer) -> DumpLines:
        data = np.frombuffer(content, np.uint8)
        size = len(data)
        ends = np.flatnonzero(data == 10)
        stops = ends + 1
        if np.any(data == 13):  # \r ends a line too, and \r\n is one line end
            carriage = np.flatnonzero(data == 13)
            ends = np.union1d(carriage, ends[~np.isin(ends - 1, carriage)])
            stops = ends + 1
            crlf = stops < size
            crlf[crlf] = (data[stops[crlf]] == 10) & (data[ends[crlf]] == 13)
            stops += crlf
        if not len(stops) or stops[-1] < size:  # the last line has no line end
            ends = np.append(ends, size) if size else ends
            stops = np.append(stops, size) if size else stops
        starts = np.concatenate([[0], stops[:-1]])[: len(stops)].astype(np.int64)
        blank = np.zeros(len(starts), bool)
        # a line is blank only if its first byte is a space (or it is empty); those few are checked as the reader does
        maybe = np.flatnonzero((ends == starts) | _SPACE[data[np.minimum(starts, max(size - 1, 0))]])
        raw = content.to_pybytes() if len(maybe) else b""
        for i in maybe:
            blank[i] = not raw[starts[i] : ends[i]].strip()
        return DumpLines(content, starts, ends.astype(np.int64), stops.astype(np.int64), blank)

    def raw(self, index: int) -> bytes:
        return self.content[int(self.starts[index]) : int(self.ends[index])].to_pybytes()


def decode_dump_lines_by_rows(raws: list[bytes], numbers: list[int], name: str) -> pa.RecordBatch:
    """These lines through the one dump reader, row by row (what the fast path declines)."""
    rows: dict[str, list[Any]] = {column: [] for column in PARSED_DUMP.names}
    for number, raw in zip(numbers, raws, strict=True):
        try:
            record = decode_dump_line(raw, f"{name}:{number}")
        except DumpFormatError as exc:
            parsed: tuple[Any, ...] = (None, raw, "", -1, -1, 0, str(exc))
        else:
            parsed = (record.key, record.value, record.topic, record.partition, record.offset, record.timestamp, None)
        for column, value in zip(PARSED_DUMP.names, (*parsed, name, number), strict=True):
            rows[column].append(value)
    return pa.RecordBatch.from_pydict(rows, schema=PARSED_DUMP)


def _offsets_and_data(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string/binary array's value offsets (from 0) and its data bytes, as numpy views."""
    offset_type = np.int64 if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type) else np.int32
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, offset_type)[array.offset : array.offset + len(array) + 1].astype(np.int64)
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.empty(0, np.uint8)
    return offsets - offsets[0], data[offsets[0] : offsets[-1]]


def _binary(valid: np.ndarray, lengths: np.ndarray, data: np.ndarray) -> pa.Array:
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.binary(), len(lengths), [validity, pa.py_buffer(offsets), pa.py_buffer(data)])


def _base64_decoded(texts: pa.Array) -> pa.Array:
    """Canonical padded base64 (checked before) over the whole data buffer: every 4 digits make 3 bytes, then each
    value's padding bytes are dropped."""
    offsets, data = _offsets_and_data(texts)
    # the values' digits back to back are base64 too once each padding `=` reads as a zero digit ("A"): one C call
    decoded = np.frombuffer(binascii.a2b_base64(np.where(data == _PAD, _ZERO_DIGIT, data)), np.uint8)
    lengths = np.diff(offsets)
    ends = offsets[1:]
    padded = np.flatnonzero(lengths > 0)
    pads = np.zeros(len(lengths), np.int64)
    pads[padded] = (data[ends[padded] - 1] == _PAD).astype(np.int64) + (data[ends[padded] - 2] == _PAD)
    keep = np.ones(len(decoded), bool)
    decoded_ends = ends // 4 * 3
    keep[decoded_ends[pads >= 1] - 1] = False
    keep[decoded_ends[pads == 2] - 2] = False
    return _binary(np.asarray(texts.is_valid()), lengths // 4 * 3 - pads, decoded[keep])


def _hex_decoded(texts: pa.Array) -> pa.Array:
    """Hex digit pairs (checked before) over the whole data buffer."""
    offsets, data = _offsets_and_data(texts)
    pairs = _HEX_DIGITS[data].reshape(-1, 2)
    return _binary(np.asarray(texts.is_valid()), np.diff(offsets) // 2, (pairs[:, 0] << 4) | pairs[:, 1])


def _payloads(texts: pa.Array, codecs: pa.Array, base64_proven: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """A key or value column decoded with each row's codec, and per row whether the reader decodes it the same way
    (the rest is left to the reader, for its error message); `base64_proven` rows are canonical base64 already."""
    if base64_proven.all():
        return _base64_decoded(texts), base64_proven
    decoded = pa.nulls(len(texts), pa.binary())
    accepted = np.asarray(texts.is_null())
    for codec in CODECS:
        of_codec = np.asarray(pc.equal(codecs, codec)) & ~accepted
        if not of_codec.any():
            continue
        candidates = texts.filter(pa.array(of_codec))
        if codec == "base64":
            shaped = base64_proven[of_codec] | np.asarray(pc.match_substring_regex(candidates, _PAYLOAD_SHAPE[codec]))
        else:
            shaped = np.asarray(pc.match_substring_regex(candidates, _PAYLOAD_SHAPE[codec]))
        texts_of_codec = candidates.filter(pa.array(shaped))
        if codec == "base64":
            values = _base64_decoded(texts_of_codec)
        elif codec == "hex":
            values = _hex_decoded(texts_of_codec)
        else:
            values = texts_of_codec.cast(pa.binary())
        rows = np.flatnonzero(of_codec)[shaped]
        accepted[rows] = True
        index = np.zeros(len(texts), np.int64)
        index[rows] = np.arange(len(rows))
        mine = np.zeros(len(texts), bool)
        mine[rows] = True
        decoded = pc.if_else(pa.array(mine), values.take(pa.array(index, mask=~mine)), decoded)
    return decoded, accepted


def _utf8_texts(lines: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The lines that are UTF-8 as a string array, and which they are (the others are the reader's to report)."""
    try:
        return lines.cast(pa.large_string()), np.ones(len(lines), bool)
    except pa.ArrowInvalid:
        valid = np.ones(len(lines), bool)
        for i, raw in enumerate(lines.to_pylist()):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                valid[i] = False
        return lines.filter(pa.array(valid)).cast(pa.large_string()), valid


def fast_path_rows(lines: pa.Array) -> tuple[dict[str, pa.Array], np.ndarray]:
    """The parsed columns (`PARSED_DUMP`'s first six) of the lines (binary, line ends kept) the fast path accepts,
    and which lines those are."""
    texts, utf8 = _utf8_texts(lines)
    base64_shaped = np.asarray(pc.match_substring_regex(texts, BASE64_DUMP_LINE_SHAPE))
    shaped = base64_shaped.copy()
    if not shaped.all():
        shaped[~shaped] = np.asarray(pc.match_substring_regex(texts.filter(pa.array(~shaped)), DUMP_LINE_SHAPE))
    candidates = np.flatnonzero(utf8)[shaped]
    accepted = np.zeros(len(lines), bool)
    if not len(candidates):
        return {}, accepted
    _, data = _offsets_and_data(texts.filter(pa.array(shaped)))
    parsed = pa_json.read_json(
        pa.BufferReader(pa.py_buffer(data)),
        read_options=pa_json.ReadOptions(use_threads=False, block_size=max(len(data), 1 << 20)),
        parse_options=pa_json.ParseOptions(explicit_schema=_JSON_SCHEMA, unexpected_field_behavior="error"),
    ).combine_chunks()
    if parsed.num_rows != len(candidates):  # cannot happen for this shape; if it did, the reader takes them all
        return {}, accepted
    column = {name: parsed.column(name).chunk(0) for name in _JSON_SCHEMA.names}
    codecs = column["codec"].fill_null("base64")
    base64_proven = base64_shaped[shaped]
    keys, keys_ok = _payloads(column["key"], codecs, base64_proven)
    values, values_ok = _payloads(column["value"], codecs, base64_proven)
    ok = keys_ok & values_ok
    keep = pa.array(ok)
    accepted[candidates[ok]] = True
    return {
        "key": keys.filter(keep),
        "value": values.filter(keep),
        "topic": column["topic"].filter(keep),
        "partition": column["partition"].filter(keep).cast(pa.int32()),
        "offset": column["offset"].filter(keep),
        "timestamp_ms": column["timestamp"].filter(keep).fill_null(0),
    }, accepted


def _positions(selected: np.ndarray, first: int = 0) -> np.ndarray:
    """For every selected row: its position among the selected rows (+ `first`)."""
    return np.cumsum(selected, dtype=np.int64)[selected] - 1 + first


def decode_dump_chunk(dump: DumpLines, indices: np.ndarray, name: str, first_line: int = 1) -> pa.RecordBatch:
    """The `PARSED_DUMP` rows of the (non-blank, ascending) lines at `indices`, in their order: the fast path's where
    it accepts a line, the reader's for every other line. `first_line`: the number of `dump`'s first line in its
    file (a piece of a large dump starts further in)."""
    n = len(indices)
    if not n:
        return pa.RecordBatch.from_pylist([], schema=PARSED_DUMP)
    first, last = int(indices[0]), int(indices[-1])
    # every line from the first to the last, with its line end, over the file's bytes; then the blank ones dropped
    offsets = np.append(dump.starts[first : last + 1], dump.stops[last]) - dump.starts[first]
    span = pa.Array.from_buffers(
        pa.large_binary(), last + 1 - first, [None, pa.py_buffer(offsets), dump.content.slice(int(dump.starts[first]))]
    )
    lines = span if n == last + 1 - first else span.filter(pa.array(~dump.blank[first : last + 1]))
    numbers = indices.astype(np.int64) + first_line
    fast, accepted = fast_path_rows(lines)
    declined = np.flatnonzero(~accepted)
    by_rows = decode_dump_lines_by_rows([dump.raw(i) for i in indices[declined]], numbers[declined].tolist(), name)
    if not accepted.any():
        return by_rows
    accepted_count = int(accepted.sum())
    fast_batch = pa.RecordBatch.from_arrays(
        [
            *(fast[column] for column in PARSED_DUMP.names[:6]),
            pa.nulls(accepted_count, pa.string()),
            pa.repeat(pa.scalar(name, pa.string()), accepted_count),
            pa.array(numbers[accepted]),
        ],
        schema=PARSED_DUMP,
    )
    if not len(declined):
        return fast_batch
    order = np.empty(n, np.int64)  # fast rows first, then the reader's; one take puts each row back at its line
    order[accepted] = _positions(accepted)
    order[~accepted] = _positions(~accepted, accepted_count)
    both = pa.Table.from_batches([fast_batch, by_rows]).combine_chunks().to_batches()[0]
    return both.take(pa.array(order))


def decode_dump_content(
    content: pa.Buffer, name: str, lines_per_batch: int, first_line: int = 1
) -> Iterator[pa.RecordBatch]:
    """Every non-blank line of one dump file (or of a piece of one whose first line is `first_line`) as `PARSED_DUMP`
    rows, in line order, at most `lines_per_batch` rows a batch; `name` is the file as the user gave it, for
    `source_file` and the reader's FILE:LINE."""
    dump = DumpLines.of(content)
    lines = np.flatnonzero(~dump.blank)
    for first in range(0, len(lines), lines_per_batch):
        yield decode_dump_chunk(dump, lines[first : first + lines_per_batch], name, first_line)


def holds_only_topic(content: pa.Buffer, topic: str) -> bool:
    """Whether no line of a dump's `content` can be read as a record of a topic other than `topic`, proven by
    counting rather than parsing: the replay's telemetry query skips such a file (a dump of `__consumer_offsets`
    alone, the usual replay) instead of parsing all of it a second time to keep none of it.

    With no backslash in the file, a JSON key "topic" is the literal text `"topic"` and no string value contains
    that text, so if every `"topic"` is followed by `:` (one space at most) and `topic`'s string and a comma, every
    line's topic field, wherever and however often it appears, names `topic`. Anything else (an escape anywhere,
    another topic, other spacing, the topic as the last field) proves nothing, and the file is parsed as before."""
    data = content.to_pybytes()
    if b"\\" in data:
        return False
    name = json.dumps(topic).encode()
    named = data.count(b'"topic":' + name + b",") + data.count(b'"topic": ' + name + b",")
    return data.count(b'"topic"') == named
