"""A binary Arrow column read as numpy: big-endian numbers gathered at per-row byte positions, and byte slices
turned into an Arrow string array at once. The vectorised decoders (`offset_commit_columns`,
`consumer_protocol_columns`) read Kafka's bytes through it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


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
        """The big-endian number at each byte position: one gather from a view that starts a number at every byte
        (stride 1), so no per-byte index matrix is built."""
        at_every_byte = np.ndarray((len(self.data) - width + 1,), dtype=dtype, buffer=self.data, strides=(1,))
        return at_every_byte[np.clip(pos, 0, len(self.data) - width)].astype(np.int64)

    def uint8(self, pos: np.ndarray) -> np.ndarray:
        return self.data[np.clip(pos, 0, len(self.data) - 1)].astype(np.int64)

    def int16(self, pos: np.ndarray) -> np.ndarray:
        return self._read(pos, ">i2", 2)

    def int32(self, pos: np.ndarray) -> np.ndarray:
        return self._read(pos, ">i4", 4)

    def int64(self, pos: np.ndarray) -> np.ndarray:
        return self._read(pos, ">i8", 8)

    def bytes16(self, pos: np.ndarray) -> np.ndarray:
        """16 raw bytes at each position, one row each."""
        windows = np.lib.stride_tricks.as_strided(self.data, (len(self.data) - 15, 16), (1, 1), writeable=False)
        return windows[np.clip(pos, 0, len(self.data) - 16)]


def string_slices(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """`data[start:start+length]` per row as an Arrow string array, and per row whether it is strict UTF-8.

    Built as Arrow string views over `data` (16 bytes per row: the length, then up to 12 bytes inline, or a
    4-byte prefix and the position), then cast to a plain string array by Arrow, so no per-byte index is built in
    numpy. The result's bytes are checked for non-ASCII at once; the rare rows with such bytes are checked by
    Python's decoder (the reader's), so a slice the reader would repair with U+FFFD is declined, not guessed."""
    n = len(starts)
    views = np.zeros((n, 16), np.uint8)
    words = views.view("<i4")
    words[:, 0] = lengths
    windows = np.lib.stride_tricks.as_strided(data, (len(data) - 11, 12), (1, 1), writeable=False)
    inline = windows[np.clip(starts, 0, len(data) - 12)]
    views[:, 4:] = np.where(np.arange(12) < lengths[:, None], inline, 0)
    long = lengths > 12
    words[long, 2] = 0
    words[long, 3] = starts[long]
    as_views = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views), pa.py_buffer(data)])
    array = as_views.cast(pa.string())
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
