"""Rows of a local Delta table from its transaction log (the `numRecords` statistic of every live file), read in
Python: no Spark job, no snapshot state reconstruction.

Why: the summaries after `radar replay` / `radar run` count every table, and a fresh JVM took ~9 s of cold Spark jobs
for fourteen counts of a few dozen rows; the append path asks "is this table still empty?" before reading its keys.
The log already holds both answers. The reader follows the Delta protocol's log replay: the newest classic
checkpoint (single or multi-part parquet, from `_last_checkpoint` or the listing), then every JSON commit after it,
a file being (path, deletion vector). It answers None where it cannot be sure (a V2 checkpoint, a file without
`numRecords`, a commit not backfilled yet) and the caller then counts with Spark. A small table's rows are read the
same way, from its live files with pyarrow (`rows_from_files`): the checks `radar run` runs every minute.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    import pyarrow as pa

COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
CLASSIC_CHECKPOINT_FILE = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?\.parquet$")
V2_CHECKPOINT_FILE = re.compile(r"^\d{20}\.checkpoint\.[0-9a-fA-F-]{36}\.(?:json|parquet)$")
# Table features under which the JSON commits in `_delta_log` are not the whole log (commits owned by a catalog
# or a commit coordinator may not be backfilled yet).
FOREIGN_COMMIT_FEATURES = frozenset({"catalogManaged", "catalogOwned-preview", "coordinatedCommits-preview"})


DRIVER_READ_MAX_BYTES = 16 * 1024 * 1024
"""A local table whose live files hold up to this many bytes may be read in the driver with pyarrow
(`rows_from_files`): a few hundred thousand narrow rows, tens of milliseconds; a larger one is Spark's to read."""


@dataclass(frozen=True)
class LiveFile:
    """One data file of the current table version: its rows per the `numRecords` statistic (None without one),
    less the rows its deletion vector removes; `deleted` those removed rows, whose values the file's statistics
    still cover; `size` its bytes; `max_values` / `null_counts` / `min_values` the file's statistics of its
    top-level columns."""

    path: str
    records: int | None
    deleted: int = 0
    size: int = 0
    max_values: Mapping[str, Any] = field(default_factory=dict, compare=False)
    null_counts: Mapping[str, Any] = field(default_factory=dict, compare=False)
    min_values: Mapping[str, Any] = field(default_factory=dict, compare=False)


def _file_key(action: dict[str, Any]) -> tuple[str, str]:
    vector = action.get("deletionVector") or {}
    vector_id = f"{vector.get('storageType')}{vector.get('pathOrInlineDv')}@{vector.get('offset')}" if vector else ""
    return str(action["path"]), vector_id


def _live_file(action: dict[str, Any]) -> LiveFile:
    stats = json.loads(action["stats"]) if action.get("stats") else {}
    records = stats.get("numRecords")
    deleted = int((action.get("deletionVector") or {}).get("cardinality") or 0)
    return LiveFile(
        str(action["path"]),
        None if records is None else int(records) - deleted,
        deleted,
        int(action.get("size") or 0),
        stats.get("maxValues") or {},
        stats.get("nullCount") or {},
        stats.get("minValues") or {},
    )


def _checkpoint_parts(log: Path, names: list[str], up_to: int | None = None) -> tuple[int, list[Path]] | None:
    """The newest complete classic checkpoint (at or below version `up_to`, if given): (version, its parquet parts);
    None without one."""
    found: dict[tuple[int, int], list[Path]] = {}
    for name in names:
        match = CLASSIC_CHECKPOINT_FILE.match(name)
        if match and (up_to is None or int(match[1]) <= up_to):
            version, parts = int(match[1]), int(match[3] or 1)
            found.setdefault((version, parts), []).append(log / name)
    complete = [(version, paths) for (version, parts), paths in found.items() if len(paths) == parts]
    return max(complete, key=lambda item: item[0], default=None)


def _checkpoint_files(parts: list[Path]) -> tuple[dict[tuple[str, str], LiveFile], dict[str, Any]]:
    """The live files a classic checkpoint holds, and its `metaData` action (the table's configuration and
    partition columns as of the checkpoint; a map column comes back from pyarrow as (key, value) pairs)."""
    import pyarrow.parquet as pq

    files: dict[tuple[str, str], LiveFile] = {}
    metadata: dict[str, Any] = {}
    for part in sorted(parts):
        actions = pq.read_table(part, columns=["add", "metaData"])
        for row in actions.column("add").to_pylist():
            if row is not None:
                files[_file_key(row)] = _live_file(row)
        for row in actions.column("metaData").to_pylist():
            if row is not None:
                configuration = row.get("configuration") or {}
                metadata = {**row, "configuration": dict(configuration)}
    return files, metadata


@dataclass(frozen=True)
class _ReplayedLog:
    """A log replayed to its newest version: the live files, and the table's newest `metaData` action (its JSON
    commits', else its checkpoint's)."""

    files: list[LiveFile]
    metadata: Mapping[str, Any]


def _replay_log(location: Path, version: int | None = None) -> _ReplayedLog | None:
    """The log replayed to its newest version, or to `version` (None if the log does not reach it)."""
    log = location / "_delta_log"
    if not log.is_dir():
        return None
    names = [p.name for p in log.iterdir()]
    if any(V2_CHECKPOINT_FILE.match(name) for name in names):
        return None
    checkpoint = _checkpoint_parts(log, names, version)
    start = -1
    files: dict[tuple[str, str], LiveFile] = {}
    metadata: dict[str, Any] = {}
    if checkpoint is not None:
        start, parts = checkpoint
        files, metadata = _checkpoint_files(parts)
    commits = sorted(
        int(m[1])
        for name in names
        if (m := COMMIT_FILE.match(name)) and start < int(m[1]) and (version is None or int(m[1]) <= version)
    )
    if checkpoint is None and (not commits or commits[0] != 0):
        return None  # no checkpoint and no first commit: not a table yet (or being created)
    if commits and commits != list(range(commits[0], commits[0] + len(commits))):
        return None  # a gap: a commit being written or not backfilled
    if version is not None and (commits[-1] if commits else start) != version:
        return None  # the log does not reach `version` (or lost it to a cleanup)
    for commit in commits:
        for line in (log / f"{commit:020d}.json").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "add" in action:
                files[_file_key(action["add"])] = _live_file(action["add"])
            elif "remove" in action:
                files.pop(_file_key(action["remove"]), None)
            elif "metaData" in action:
                metadata = action["metaData"]
            elif "protocol" in action:
                features = {
                    *action["protocol"].get("readerFeatures", ()),
                    *action["protocol"].get("writerFeatures", ()),
                }
                if features & FOREIGN_COMMIT_FEATURES:
                    return None
    return _ReplayedLog(list(files.values()), metadata)


def live_files(location: Path) -> list[LiveFile] | None:
    """The live files of the Delta table at `location` (empty list: no rows), or None when there is no table
    there or its log is not one this reader replays exactly (see the module docstring)."""
    replayed = _replay_log(location)
    return None if replayed is None else replayed.files


def record_count(location: Path) -> int | None:
    """Rows of the Delta table at `location` from its log; None when the log alone cannot say (no table there, or
    a file without statistics, or a log this reader does not replay): count with Spark then."""
    files = live_files(location)
    if files is None or any(f.records is None for f in files):
        return None
    return sum(f.records for f in files if f.records is not None)


def record_count_where(location: Path, column: str, value: str) -> int | None:
    """Rows of the Delta table at `location` whose string `column` equals `value`, from its log: a file whose
    statistics hold only `value` there counts whole, one whose range leaves `value` out counts nothing. None when
    the log alone cannot say (a file holding other values beside it, no statistics on the column, a value Delta
    truncated in its statistics, or `record_count`'s reasons): count with Spark then."""
    files = live_files(location)
    if files is None:
        return None
    total = 0
    for live in files:
        if live.records is None:
            return None
        if live.records == 0:
            continue
        low, high = live.min_values.get(column), live.max_values.get(column)
        if not isinstance(low, str) or not isinstance(high, str) or live.null_counts.get(column):
            return None
        if low == high == value:
            total += live.records
        elif not low <= value <= high:
            continue
        else:
            return None
    return total


@dataclass(frozen=True)
class ColumnMaximum:
    """The newest value of a timestamp column over a table's rows, epoch milliseconds (None: no row has one)."""

    ms: int | None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _timestamp_statistic_ms(value: Any) -> int | None:
    """A Delta timestamp statistic (ISO 8601 with an offset, milliseconds: Delta truncates them) as epoch ms, as
    Spark's `unix_millis` gives it; None for a value without an offset (not a TIMESTAMP column's)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def timestamp_maximum(location: Path, column: str) -> ColumnMaximum | None:
    """The newest `column` value of the Delta table at `location` from its files' maximum statistics, no Spark
    job; None when the log cannot say exactly (no table, a file without statistics on the column, rows removed by
    a deletion vector that the statistics still cover): read the table then."""
    files = live_files(location)
    if files is None:
        return None
    newest: int | None = None
    for live in files:
        if live.records is None or live.deleted:
            return None
        if live.records == 0:
            continue
        if column not in live.max_values:
            if live.null_counts.get(column) == live.records:
                continue  # every row of the file holds null there
            return None
        ms = _timestamp_statistic_ms(live.max_values[column])
        if ms is None:
            return None
        newest = ms if newest is None else max(newest, ms)
    return ColumnMaximum(newest)


def history_without_checkpoint(location: Path) -> bool:
    """True when the log of the Delta table at `location` still starts at its first commit and has no checkpoint
    yet (one every `tables.CHECKPOINT_INTERVAL` commits): its few JSON commits are the whole table, cheaper to read in
    order than a snapshot to reconstruct."""
    log = location / "_delta_log"
    if not log.is_dir():
        return False
    names = [p.name for p in log.iterdir()]
    if any(CLASSIC_CHECKPOINT_FILE.match(name) or V2_CHECKPOINT_FILE.match(name) for name in names):
        return False
    return f"{0:020d}.json" in names


def log_version(location: Path) -> int | None:
    """The newest committed version of the local Delta table at `location` (its newest commit file); None without
    a log. The record-key check of appends compares it with the version it last wrote."""
    log = location / "_delta_log"
    if not log.is_dir():
        return None
    versions = [int(m[1]) for p in log.iterdir() if (m := COMMIT_FILE.match(p.name))]
    return max(versions) if versions else None


def rows_from_files(
    location: Path, columns: Sequence[str], *, max_bytes: int | None = None, version: int | None = None
) -> pa.Table | None:
    """`columns` of every row of the local Delta table at `location` (at `version`, else its newest), read from its
    live data files with pyarrow, no Spark job (a table without a file gives zero rows, its columns typed null);
    timestamps in microseconds, as Spark holds them. Why: a small table read with Spark is a snapshot reconstruction
    and a job or two, seconds of a cold JVM or of a busy one: the detection summary that ends `radar replay` (~1.9
    s), `radar run`'s checks every minute beside the live queries, the ids a live detection batch looks up.

    None when the files alone are not the rows (a deletion vector, column mapping, a partition column asked for,
    a file outside the table's folder, a file without one of `columns`, a commit owned by a catalog, a log this
    reader does not replay) or when the live files hold more than `max_bytes`: read the table with Spark then."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    replayed = _replay_log(location, version)
    if replayed is None or any(live.deleted for live in replayed.files):
        return None  # not a log replayed here, or rows a deletion vector removes from a file
    if max_bytes is not None and sum(live.size for live in replayed.files) > max_bytes:
        return None
    mapping = (replayed.metadata.get("configuration") or {}).get("delta.columnMapping.mode", "none")
    if mapping != "none" or set(replayed.metadata.get("partitionColumns") or ()) & set(columns):
        return None
    parts = []
    for live in replayed.files:
        relative = unquote(live.path)
        if ":" in relative.split("/", 1)[0] or relative.startswith("/"):
            return None  # an absolute URI (a shallow clone's files): not this folder's
        data = pq.ParquetFile(location / relative, coerce_int96_timestamp_unit="us")  # Spark's INT96: microseconds
        if any(name not in data.schema_arrow.names for name in columns):
            return None  # written before a column was added: Spark fills it in, this reader does not
        parts.append(data.read(columns=list(columns)))
    if not parts:
        return pa.table({name: pa.nulls(0) for name in columns})
    return pa.concat_tables(parts, promote_options="permissive")
