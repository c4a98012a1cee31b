"""A local Delta table's files, counts and small reads in the driver, with `deltalake` (delta-rs): no Spark job, no
snapshot state reconstruction in the JVM.

Why: the summaries after `radar replay` / `radar run` count every table, the append path asks whether a table is
still empty before reading its keys, and `radar run` checks every minute beside its live queries; each answer read
with Spark is a snapshot and a job or two (seconds in a cold or busy JVM), while the Delta log already holds it.
Every answer is None where the log alone cannot say exactly (no table there, a file without statistics, deletion
vectors, column mapping, a table feature delta-rs does not read): the caller reads with Spark then.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset as ds

COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
CHECKPOINT_FILE = re.compile(r"^\d{20}\.checkpoint\..*parquet$|^\d{20}\.checkpoint\.[0-9a-fA-F-]{36}\.json$")
# Table features under which a file's rows are not its statistics' or its columns' as written: the counts and reads
# here decline them (Spark applies them).
ROW_CHANGING_FEATURES = frozenset({"deletionVectors", "columnMapping"})

DRIVER_READ_MAX_BYTES = 16 * 1024 * 1024
"""A local table whose live files hold up to this many bytes may be read in the driver (`rows_from_files`): a few
hundred thousand narrow rows, tens of milliseconds; a larger one is Spark's to read."""


@dataclass(frozen=True)
class LiveFile:
    """One data file of the table's current version, with its statistics (empty when Delta kept none)."""

    path: str
    size: int
    records: int | None
    min_values: dict[str, Any] = field(default_factory=dict)
    max_values: dict[str, Any] = field(default_factory=dict)
    null_counts: dict[str, int] = field(default_factory=dict)


def _table(location: Path, version: int | None = None) -> DeltaTable | None:
    """The Delta table at `location` (at `version`), or None: no table there, or one delta-rs declines to read
    (a reader feature it lacks). Its rows are then Spark's to read, never a guess."""
    if not (location / "_delta_log").is_dir():
        return None
    try:
        table = DeltaTable(str(location), version=version)
    except DeltaError:
        return None
    features = set(table.protocol().reader_features or ())
    mapping = table.metadata().configuration.get("delta.columnMapping.mode", "none")
    if features & ROW_CHANGING_FEATURES or mapping != "none":
        return None
    return table


def created_at(location: Path) -> datetime | None:
    """When the local table at `location` was created (its metadata's creation time), or None where delta-rs cannot
    say (no table, a reader feature it lacks): Spark says then."""
    table = _table(location)
    created_ms = None if table is None else table.metadata().created_time
    return None if created_ms is None else datetime.fromtimestamp(created_ms / 1000, UTC)


def _files_of(table: DeltaTable) -> list[LiveFile]:
    """The table's add actions, a row each, with their statistics by kind (`min.<column>`, `max.<column>`,
    `null_count.<column>` in delta-rs's flattened form; a null statistic is one Delta did not keep)."""
    import pyarrow as pa

    files = []
    for action in pa.table(table.get_add_actions(flatten=True)).to_pylist():
        stats: dict[str, dict[str, Any]] = {"min": {}, "max": {}, "null_count": {}}
        for name, value in action.items():
            kind, _, column = name.partition(".")
            if kind in stats and column and value is not None:
                stats[kind][column] = value
        records = action["num_records"]
        files.append(
            LiveFile(action["path"], action["size_bytes"], records, stats["min"], stats["max"], stats["null_count"])
        )
    return files


def live_files(location: Path) -> list[LiveFile] | None:
    """The live files of the Delta table at `location` (empty list: no rows), or None (see the module docstring)."""
    table = _table(location)
    return None if table is None else _files_of(table)


def record_count(location: Path) -> int | None:
    """Rows of the Delta table at `location` from its log; None when the log alone cannot say: count with Spark."""
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


def _epoch_ms(value: Any) -> int | None:
    """A timestamp statistic as epoch ms, as Spark's `unix_millis` gives it (Delta keeps them in milliseconds);
    None for anything else."""
    if not isinstance(value, datetime):
        return None
    moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def timestamp_maximum(location: Path, column: str) -> ColumnMaximum | None:
    """The newest `column` value of the Delta table at `location` from its files' maximum statistics, no Spark
    job; None when the log cannot say exactly (no table, a file without statistics on the column): read the table
    then."""
    files = live_files(location)
    if files is None:
        return None
    newest: int | None = None
    for live in files:
        if live.records is None:
            return None
        if live.records == 0:
            continue
        if column not in live.max_values:
            if live.null_counts.get(column) == live.records:
                continue  # every row of the file holds null there
            return None
        ms = _epoch_ms(live.max_values[column])
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
    if any(CHECKPOINT_FILE.match(name) for name in names):
        return False
    return f"{0:020d}.json" in names


def log_version(location: Path) -> int | None:
    """The newest committed version of the local Delta table at `location` (its newest commit file, a listing
    rather than a table load: the append path asks it per micro-batch); None without a log."""
    log = location / "_delta_log"
    if not log.is_dir():
        return None
    versions = [int(m[1]) for p in log.iterdir() if (m := COMMIT_FILE.match(p.name))]
    return max(versions) if versions else None


REARRANGING_OPERATIONS = frozenset({"OPTIMIZE"})
"""Commits that move rows between files and change none (compaction, Delta's own after a write included)."""


def rearranged_only(location: Path, after: int, up_to: int) -> bool:
    """True when every commit of the table at `location` in versions (`after`, `up_to`] only rearranged its rows
    (`REARRANGING_OPERATIONS`): what a process knew the table held at `after` still holds at `up_to`."""
    if up_to <= after:
        return True
    table = _table(location)
    if table is None:
        return False
    wanted = range(after + 1, up_to + 1)
    commits = {c.get("version"): c.get("operation") for c in table.history(table.version() - after)}
    return all(commits.get(version) in REARRANGING_OPERATIONS for version in wanted)


def dataset_of(location: Path) -> ds.Dataset | None:
    """The local Delta table at `location` as a pyarrow dataset over its live files (scanned lazily, e.g. by DuckDB);
    None when the files alone are not the rows (see `_table`)."""
    table = _table(location)
    return None if table is None else _dataset(table)


def _dataset(table: DeltaTable) -> ds.Dataset:
    from pyarrow.dataset import ParquetReadOptions

    return table.to_pyarrow_dataset(parquet_read_options=ParquetReadOptions(coerce_int96_timestamp_unit="us"))


def rows_from_files(
    location: Path, columns: Sequence[str], *, max_bytes: int | None = None, version: int | None = None
) -> pa.Table | None:
    """`columns` of every row of the local Delta table at `location` (at `version`, else its newest), read in the
    driver (delta-rs and pyarrow), no Spark job; timestamps in microseconds, as Spark holds them. None when the
    files alone are not the rows (see `_table`), when a column is not in the table, or when the live files hold more
    than `max_bytes`: read the table with Spark then."""
    table = _table(location, version)
    if table is None:
        return None
    if max_bytes is not None and sum(f.size for f in _files_of(table)) > max_bytes:
        return None
    dataset = _dataset(table)
    if any(name not in dataset.schema.names for name in columns):
        return None
    return dataset.to_table(columns=list(columns))
