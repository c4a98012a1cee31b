"""Byte runs of a binary column as Arrow arrays: the same bytes Python's slicing gives, whatever their length on either
side of the 12 bytes an Arrow view holds inline, and views as Arrow's format asks (inline bytes zero-padded)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_radar.transforms.binary_column import BinaryColumn, byte_slices, string_slices


@st.composite
def runs(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, int]]]:
    """A buffer and byte runs inside it, lengths around the inline limit (12) and the 8-byte word most often."""
    data = draw(st.binary(min_size=0, max_size=200))
    lengths = st.one_of(st.integers(0, 16), st.integers(0, 60))
    picked = []
    for length in draw(st.lists(lengths, max_size=30)):
        length = min(length, len(data))
        start = draw(st.integers(0, len(data) - length))
        picked.append((start, length))
    return data, picked


def _column(data: bytes) -> np.ndarray:
    """`data` as the decoders hold it (`BinaryColumn.of`: the buffer with its padding after it)."""
    return BinaryColumn.of(pa.array([data], pa.binary())).data


def _starts_and_lengths(picked: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([s for s, _ in picked], np.int64), np.array([n for _, n in picked], np.int64)


@settings(max_examples=300, deadline=None)
@given(runs())
def test_byte_slices_are_the_bytes_python_slices(case: tuple[bytes, list[tuple[int, int]]]) -> None:
    data, picked = case
    array = byte_slices(_column(data), *_starts_and_lengths(picked))
    assert array.type == pa.binary()
    assert array.to_pylist() == [data[s : s + n] for s, n in picked]


@settings(max_examples=300, deadline=None)
@given(runs())
def test_string_slices_give_the_text_and_flag_what_is_not_utf8(case: tuple[bytes, list[tuple[int, int]]]) -> None:
    data, picked = case
    array, valid = string_slices(_column(data), *_starts_and_lengths(picked))

    def is_utf8(raw: bytes) -> bool:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    expected = [data[s : s + n] for s, n in picked]
    assert valid.tolist() == [is_utf8(raw) for raw in expected]
    assert array.type == pa.string()
    assert array.cast(pa.binary()).to_pylist() == expected  # the bytes, whether or not they are text


def test_views_hold_short_runs_inline_zero_padded_and_long_ones_by_position() -> None:
    """Arrow's view layout: length, then up to 12 bytes inline with zeros after them; a longer run its first four
    bytes, buffer 0 and its position (read back through the view array itself, before any cast)."""
    from rebalance_radar.transforms.binary_column import _views

    data = bytes(range(1, 41))
    column = _column(data)
    starts = np.array([0, 3, 5, 10], np.int64)
    lengths = np.array([0, 7, 12, 13], np.int64)
    views = _views(column, starts, lengths, pa.binary_view())
    raw = np.frombuffer(views.buffers()[1], np.uint8)[: 16 * len(starts)].reshape(-1, 16)
    assert raw[0].tolist() == [0] * 16
    assert raw[1].tolist() == [7, 0, 0, 0, *data[3:10], *[0] * 5]
    assert raw[2].tolist() == [12, 0, 0, 0, *data[5:17]]
    assert raw[3, :8].tolist() == [13, 0, 0, 0, *data[10:14]]
    assert raw[3, 8:].view("<i4").tolist() == [0, 10]
    assert views.to_pylist() == [b"", data[3:10], data[5:17], data[10:23]]


def test_a_binary_column_reads_big_endian_numbers_at_any_byte() -> None:
    column = BinaryColumn.of(pa.array([b"\x00\x01\x00\x00\x00\x02", b"\xff\xff"], pa.binary()))
    assert column.int16(np.array([0, 6])).tolist() == [1, -1]
    assert column.int32(np.array([2])).tolist() == [2]
