"""A binary Arrow column read as numpy: big-endian numbers gathered at per-row byte positions, and byte slices
turned into an Arrow string array at once. The vectorised decoders (`offset_commit_columns`,
`consumer_protocol_columns`) read Kafka's bytes through it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


def _inside(pos: np.ndarray, last: int) -> np.ndarray:
    """Positions clipped to [0, last]. Not `np.clip`: with Python bounds it checks their range on every call (numpy 2),
    6.4 us against 2.0 us for this on the 1,000-element arrays the decoders read a field at a time."""
    return np.minimum(np.maximum(pos, 0), last)


def _numbers_at(data: np.ndarray, pos: np.ndarray, dtype: str, width: int) -> np.ndarray:
    """The number of `dtype` (byte order included) at each byte position: one gather from a view that starts a
    number at every byte (stride 1), so no per-byte index matrix is built; positions are clipped inside `data`."""
    at_every_byte = np.ndarray((len(data) - width + 1,), dtype=dtype, buffer=data, strides=(1,))
    return at_every_byte[_inside(pos, len(data) - width)]


@dataclass(frozen=True)
class BinaryColumn:
    """A binary Arrow array as numpy views: per-row start/end positions into one data buffer, and validity.

    The data buffer is padded so fixed-width gathers at any clipped position stay inside it."""

    data: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    valid: np.ndarray

    @staticmethod
    def of(array: pa.Array) -> BinaryColumn:
        if pa.types.is_large_binary(array.type):
            offset_type: type[np.signedinteger] = np.int64
        elif pa.types.is_binary(array.type):
            offset_type = np.int32
        else:
            raise TypeError(f"a binary column is expected, got {array.type}")
        n = len(array)
        _, offsets_buffer, data_buffer = array.buffers()
        offsets = np.frombuffer(offsets_buffer, dtype=offset_type)[array.offset : array.offset + n + 1].astype(np.int64)
        raw = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.empty(0, np.uint8)
        data = np.concatenate([raw[: offsets[-1] if n else 0], np.zeros(24, np.uint8)])
        valid = np.ones(n, bool) if array.null_count == 0 else ~np.asarray(array.is_null())
        return BinaryColumn(data, offsets[:-1], offsets[1:], valid)

    def _read(self, pos: np.ndarray, dtype: str, width: int) -> np.ndarray:
        """The big-endian number at each byte position, as int64."""
        return _numbers_at(self.data, pos, dtype, width).astype(np.int64)

    def uint8(self, pos: np.ndarray) -> np.ndarray:
        return self.data[_inside(pos, len(self.data) - 1)].astype(np.int64)

    def int16(self, pos: np.ndarray) -> np.ndarray:
        return self._read(pos, ">i2", 2)

    def int32(self, pos: np.ndarray) -> np.ndarray:
        return self._read(pos, ">i4", 4)

    def int64(self, pos: np.ndarray) -> np.ndarray:
        return self._read(pos, ">i8", 8)

    def bytes16(self, pos: np.ndarray) -> np.ndarray:
        """16 raw bytes at each position, one row each."""
        windows = np.lib.stride_tricks.as_strided(self.data, (len(self.data) - 15, 16), (1, 1), writeable=False)
        return windows[_inside(pos, len(self.data) - 16)]


MAX_LISTED = 4096  # elements of one list a vectorised decoder reads (a longer list is left to the reader)
_MAX_STRING_LENGTH = 32767  # Kafka's limit for a string, as the reader enforces it


def _views(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, view_type: pa.DataType) -> pa.Array:
    """Arrow string/binary views over `data` (16 bytes per row: the length, then up to 12 bytes inline, zero-padded,
    or a 4-byte prefix, buffer 0 and the position): Arrow's cast to a plain array then copies the bytes, so no
    per-byte index is built in numpy. Each view is two 64-bit words built from two gathers, not 12 bytes a row."""
    n = len(starts)
    length = lengths.astype(np.uint64)
    head = _numbers_at(data, starts, "<u8", 8).astype(np.uint64)  # a slice's bytes 0-7
    tail = _numbers_at(data, starts + 8, "<u4", 4).astype(np.uint64)  # its bytes 8-11
    head &= np.where(length >= 8, np.uint64(2**64 - 1), (np.uint64(1) << (np.minimum(length, 7) * np.uint64(8))) - 1)
    tail &= (np.uint64(1) << (_inside(lengths - 8, 4).astype(np.uint64) * np.uint64(8))) - 1
    words = np.empty((n, 2), "<u8")  # Arrow's views are little-endian, whatever the machine
    words[:, 0] = length | (head << np.uint64(32))
    words[:, 1] = (head >> np.uint64(32)) | (tail << np.uint64(32))
    long = lengths > 12
    words[long, 1] = starts[long].astype(np.uint64) << np.uint64(32)
    return pa.Array.from_buffers(view_type, n, [None, pa.py_buffer(words), pa.py_buffer(data)])


def byte_slices(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """`data[start:start+length]` per row as an Arrow binary array."""
    return _views(data, starts, lengths, pa.binary_view()).cast(pa.binary())


def string_slices(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """`data[start:start+length]` per row as an Arrow string array, and per row whether it is strict UTF-8.

    The result's bytes are checked for non-ASCII at once; the rare rows with such bytes are checked by Python's
    decoder (the reader's), so a slice the reader would repair with U+FFFD is declined, not guessed."""
    n = len(starts)
    array = _views(data, starts, lengths, pa.string_view()).cast(pa.string())
    valid = np.ones(n, bool)
    chars = (
        np.frombuffer(array.buffers()[2], np.uint8) if n and array.buffers()[2] is not None else np.empty(0, np.uint8)
    )
    high = chars >= 0x80
    if high.any():
        offsets = np.frombuffer(array.buffers()[1], np.int32)[: n + 1]
        before = np.zeros(len(chars) + 1, np.int64)
        np.cumsum(high, out=before[1:])
        for row in np.flatnonzero(before[offsets[1:]] != before[offsets[:-1]]):
            try:
                chars[offsets[row] : offsets[row + 1]].tobytes().decode("utf-8")
            except UnicodeDecodeError:
                valid[row] = False
    return array, valid


@dataclass(frozen=True)
class Slices:
    """Byte runs (strings, bytes) read across payloads: for each, its row, start and length, in the order read."""

    rows: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray

    @staticmethod
    def joined(parts: list[Slices]) -> Slices:
        if not parts:
            empty = np.empty(0, np.int64)
            return Slices(empty, empty, empty)
        return Slices(*(np.concatenate([getattr(p, name) for p in parts]) for name in ("rows", "starts", "lengths")))


def decline_invalid_strings(data: np.ndarray, slices: Slices, accepted: np.ndarray) -> None:
    """Decline (in `accepted`) the rows any of whose strings among `slices` is not strict UTF-8: the reader would
    repair it with U+FFFD, so the reader decodes that row."""
    keep = np.flatnonzero(accepted[slices.rows])
    if len(keep):
        _, valid = string_slices(data, slices.starts[keep], slices.lengths[keep])
        accepted[slices.rows[keep[~valid]]] = False


class FieldCursor:
    """Reads a message field by field for chosen rows of a `BinaryColumn`: a read position and a verdict per row.
    A row that fails a check is declined for good; reads for it still happen (clipped inside the buffer) but no
    longer count. What the cursor accepts, the reader decodes the same way (tests prove it per decoder)."""

    def __init__(self, column: BinaryColumn, ok: np.ndarray, pos: np.ndarray) -> None:
        self.column = column
        self.ends = column.ends
        self.ok = ok
        self.pos = pos

    def advance(self, rows: np.ndarray, width: np.ndarray | int) -> None:
        self.pos[rows] += width
        self.ok[rows] &= self.pos[rows] <= self.ends[rows]

    def int32(self, rows: np.ndarray) -> np.ndarray:
        value = self.column.int32(self.pos[rows])
        self.advance(rows, 4)
        return value

    def int64(self, rows: np.ndarray) -> np.ndarray:
        value = self.column.int64(self.pos[rows])
        self.advance(rows, 8)
        return value

    def uvarint(self, rows: np.ndarray) -> np.ndarray:
        """An unsigned varint of one to three bytes (up to 2^21 - 1); a longer one declines the row."""
        at = self.pos[rows]
        b0, b1, b2 = (self.column.uint8(at + i) for i in range(3))
        one, two = b0 < 0x80, (b0 >= 0x80) & (b1 < 0x80)
        three = (b0 >= 0x80) & (b1 >= 0x80) & (b2 < 0x80)
        self.ok[rows] &= one | two | three
        value = np.where(one, b0, np.where(two, (b0 & 0x7F) | (b1 << 7), (b0 & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14)))
        self.advance(rows, np.where(one, 1, np.where(two, 2, 3)))
        return value

    def _length(self, rows: np.ndarray, *, wide: bool, compact: bool) -> np.ndarray:
        """A length prefix: compact = uvarint - 1, else int16 (strings) or int32 (bytes, arrays); negative is null."""
        if compact:
            return self.uvarint(rows) - 1
        value = self.column.int32(self.pos[rows]) if wide else self.column.int16(self.pos[rows])
        self.advance(rows, 4 if wide else 2)
        return value

    def count(self, rows: np.ndarray, min_element_size: int, *, compact: bool = False) -> np.ndarray:
        """A non-nullable array's element count (0 for a declined row): null, longer than `MAX_LISTED` or more than
        the bytes left can hold is declined."""
        n = self._length(rows, wide=True, compact=compact)
        self.ok[rows] &= (n >= 0) & (n <= MAX_LISTED) & (n * min_element_size <= self.ends[rows] - self.pos[rows])
        return np.where(self.ok[rows], n, 0)

    def length_prefixed(
        self, rows: np.ndarray, *, wide: bool, nullable: bool, compact: bool = False
    ) -> tuple[Slices, np.ndarray]:
        """A string (`wide` False) or bytes per row, and where it is null (any negative length, as the reader)."""
        n = self._length(rows, wide=wide, compact=compact)
        null = n < 0
        if not nullable:
            self.ok[rows] &= ~null
        if not wide:
            self.ok[rows] &= n <= _MAX_STRING_LENGTH
        starts = self.pos[rows].copy()
        lengths = np.maximum(n, 0)
        self.advance(rows, lengths)
        return Slices(rows, starts, lengths), null

    def no_tagged_fields(self, rows: np.ndarray) -> None:
        """A flexible struct's tagged-field section that holds none (one 0 byte); any tag declines the row."""
        self.ok[rows] &= self.column.uint8(self.pos[rows]) == 0
        self.advance(rows, 1)
