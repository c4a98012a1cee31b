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

from rebalance_radar.transforms.binary_column import BinaryColumn, string_slices
from rebalance_radar.transforms.schemas import MAX_TIMESTAMP_MS

_B64URL = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8)
_TOPIC_ID_TAG = 0  # OffsetCommitValue.topicId: tag 0, a 16-byte uuid


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
    value_ok &= tombstone | ((commit_ms <= MAX_TIMESTAMP_MS) & (~has_expire | (expire_ms <= MAX_TIMESTAMP_MS)))
    ok &= value_ok

    # strings: only rows whose strings are strict UTF-8 (the reader's 'replace' is left to the reader)
    rows = np.flatnonzero(ok)
    dead = tombstone[rows]
    present = ~dead
    group_id, group_ok = string_slices(k.data, group_start[rows], group_len[rows])
    topic, topic_ok = string_slices(k.data, topic_start[rows], topic_len[rows])
    metadata, metadata_ok = string_slices(v.data, metadata_start[rows], np.where(dead, 0, metadata_len[rows]))
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
