"""The vectorised path for the hot `__consumer_offsets` records: OffsetCommit (key record type 0/1, value v0-v4)
decoded over whole Arrow buffers with numpy, straight into the `offset_commit` output columns.

Nine records in ten on a busy cluster are offset commits, and a Python loop per record caps ingest at the decoder's
~230k records/s per core. This path reads every field of every candidate record at once (gathers at per-row byte
positions) and *accepts* only what it can decode exactly as the schema-driven reader would: well-formed records
whose key and value end exactly where their last field ends, ASCII or valid UTF-8 strings, a compact length of one
or two bytes and at most the `topicId` tag in v4. Everything else (other record types, unknown versions, trailing bytes,
bad bytes) is left to `transforms.wire.coordinator_records.decode_record`, which stays the single source of truth:
the fast path never quarantines, it only declines. tests/transforms/test_offset_commit_columns.py proves the two
give the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

_TIMESTAMP_MS_LIMIT = (2**63 - 1) // 1000  # beyond it ms * 1000 overflows int64: the reader's path decides
_B64URL = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8)
_TOPIC_ID_TAG = 0  # OffsetCommitValue.topicId: tag 0, a 16-byte uuid


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


def _strings(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[pa.Array, np.ndarray]:
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


def _topic_id_text(raw: np.ndarray) -> pa.Array:
    """16-byte uuids (rows of `raw`) as Kafka prints them: URL-safe base64 without padding, 22 characters."""
    n = len(raw)
    b = raw.astype(np.uint32)
    chars = np.empty((n, 22), np.uint8)
    for group in range(5):  # 15 bytes -> 20 characters
        word = (b[:, 3 * group] << 16) | (b[:, 3 * group + 1] << 8) | b[:, 3 * group + 2]
        for k in range(4):
            chars[:, 4 * group + k] = _B64URL[(word >> (18 - 6 * k)) & 0x3F]
    chars[:, 20] = _B64URL[b[:, 15] >> 2]
    chars[:, 21] = _B64URL[(b[:, 15] & 0x3) << 4]
    offsets = np.arange(0, 22 * n + 1, 22, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars.reshape(-1)))


@dataclass(frozen=True)
class OffsetCommitColumns:
    """What the fast path decoded: `accepted[i]` for every input row, and the `offset_commit` structs of the
    accepted rows, in input order."""

    accepted: np.ndarray
    rows: pa.StructArray


def _timestamps(ms: np.ndarray, present: np.ndarray) -> pa.Array:
    """Kafka milliseconds as Arrow microseconds; -1 (any negative) means 'not set', as the reader's `_ts`."""
    keep = present & (ms >= 0)
    return pa.array(np.where(keep, ms, 0) * 1000, pa.timestamp("us", tz="UTC"), mask=~keep)


def decode_offset_commits(keys: pa.Array, values: pa.Array, row_type: pa.StructType) -> OffsetCommitColumns:
    """Decode every OffsetCommit record the fast path accepts (see the module docstring) into `row_type`
    (the `offset_commit` struct of `DECODED_OFFSETS_BATCH`)."""
    k = BinaryColumn.of(keys)
    v = BinaryColumn.of(values)

    # key: int16 type, string group, string topic, int32 partition, and nothing after it
    ks, ke = k.starts, k.ends
    key_type = k.int16(ks)
    ok = k.valid & (ke - ks >= 10) & ((key_type == 0) | (key_type == 1))
    group_len = k.int16(ks + 2)
    group_start = ks + 4
    topic_at = group_start + np.maximum(group_len, 0)
    topic_len = k.int16(topic_at)
    topic_start = topic_at + 2
    partition_at = topic_start + np.maximum(topic_len, 0)
    ok &= (group_len >= 0) & (topic_len >= 0) & (partition_at + 4 == ke)
    partition = k.int32(partition_at)

    # value: int16 version, then the fields of that version; a null value is a tombstone
    tombstone = ~v.valid
    vs, ve = v.starts, v.ends
    version = np.where(tombstone | (ve - vs < 2), -1, v.int16(vs))
    allowed = np.where(key_type == 0, version == 0, (version >= 0) & (version <= 4))
    value_ok = tombstone | ((ve - vs >= 18) & allowed)
    committed = v.int64(vs + 2)
    at = vs + 10
    has_epoch = version >= 3
    leader_epoch = np.where(has_epoch, v.int32(at), -1)
    at = at + np.where(has_epoch, 4, 0)
    compact = version == 4
    # a compact string's length is an unsigned varint: one byte below 128, two up to 16383 (longer: decline)
    low, high = v.uint8(at), v.uint8(at + 1)
    two_bytes = low >= 0x80
    compact_len = np.where(two_bytes, (low & 0x7F) | (high << 7), low)
    value_ok &= ~compact | ((compact_len >= 1) & (~two_bytes | (high < 0x80)))  # null (0) or 3+ bytes: decline
    metadata_len = np.where(compact, compact_len - 1, v.int16(at))
    metadata_start = at + np.where(compact, np.where(two_bytes, 2, 1), 2)
    value_ok &= tombstone | (metadata_len >= 0)  # a tombstone has no bytes: what was read belongs to the next row
    at = metadata_start + np.maximum(metadata_len, 0)
    commit_ms = v.int64(at)
    at = at + 8
    has_expire = version == 1
    expire_ms = v.int64(at)
    at = at + np.where(has_expire, 8, 0)
    tag_count = v.uint8(at)
    one_topic_id = (tag_count == 1) & (v.uint8(at + 1) == _TOPIC_ID_TAG) & (v.uint8(at + 2) == 16)
    value_ok &= ~compact | (tag_count == 0) | one_topic_id
    with_topic_id = compact & one_topic_id
    topic_id_raw = v.bytes16(at + 3)
    at = at + np.where(compact, np.where(one_topic_id, 19, 1), 0)
    value_ok &= tombstone | (at == ve)
    value_ok &= tombstone | ((commit_ms <= _TIMESTAMP_MS_LIMIT) & (~has_expire | (expire_ms <= _TIMESTAMP_MS_LIMIT)))
    ok &= value_ok

    # strings: only rows whose strings are strict UTF-8 (the reader's 'replace' is left to the reader)
    rows = np.flatnonzero(ok)
    dead = tombstone[rows]
    present = ~dead
    group_id, group_ok = _strings(k.data, group_start[rows], group_len[rows])
    topic, topic_ok = _strings(k.data, topic_start[rows], topic_len[rows])
    metadata, metadata_ok = _strings(v.data, metadata_start[rows], np.where(dead, 0, metadata_len[rows]))
    if dead.any():
        null_bitmap = pa.py_buffer(np.packbits(present, bitorder="little"))
        metadata = pa.StringArray.from_buffers(len(rows), metadata.buffers()[1], metadata.buffers()[2], null_bitmap)
    keep = group_ok & topic_ok & metadata_ok
    if not keep.all():
        ok[rows[~keep]] = False
        rows, dead, present = rows[keep], dead[keep], present[keep]
        group_id, topic, metadata = group_id.filter(keep), topic.filter(keep), metadata.filter(keep)
    topic_id_rows = with_topic_id[rows] & present & topic_id_raw[rows].any(axis=1)  # the all-zero default: absent
    topic_id = pa.nulls(len(rows), pa.string())
    if topic_id_rows.any():
        which = np.flatnonzero(topic_id_rows)
        texts = _topic_id_text(topic_id_raw[rows[which]])
        index = np.full(len(rows), -1, np.int64)
        index[which] = np.arange(len(which))
        topic_id = texts.take(pa.array(index, mask=index < 0))
    ver = version[rows]
    arrays = {
        "group_id": group_id,
        "topic": topic,
        "partition": pa.array(partition[rows].astype(np.int32)),
        "committed_offset": pa.array(committed[rows], pa.int64(), mask=dead),
        "leader_epoch": pa.array(leader_epoch[rows].astype(np.int32), mask=dead),
        "metadata": metadata,
        "commit_ts": _timestamps(commit_ms[rows], present),
        "expire_ts": _timestamps(expire_ms[rows], present & (ver == 1)),
        "topic_id": topic_id,
        "is_tombstone": pa.array(dead),
        "key_version": pa.array(key_type[rows].astype(np.int16)),
        "value_version": pa.array(ver.astype(np.int16), mask=dead),
    }
    fields = list(row_type)
    columns = [arrays[f.name].cast(f.type) for f in fields]
    return OffsetCommitColumns(ok, pa.StructArray.from_arrays(columns, fields=fields))
