"""Delta tables: names, locations, partitioning, creation, and the two idempotent writes a micro-batch uses (append
by transaction id, MERGE by deterministic key). Columns come from `transforms.schemas`.

Locally every table lives under `<data_dir>/tables/<name>` and is registered in the `radar` database of the
session catalog each time a session starts, so `radar sql` and Spark SQL see them by name. On Databricks the
names are Unity Catalog `catalog.schema.<prefix><name>` managed tables.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, TypeVar

from pyspark.sql import Column, DataFrame, Row, SparkSession

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.storage.data_dir_locks import creating_tables
from rebalance_radar.pipelines.storage.delta_log import (
    DRIVER_READ_MAX_BYTES,
    live_files,
    log_version,
    rearranged_only,
    record_count,
    rows_from_files,
)
from rebalance_radar.transforms.schemas import DETECTOR_OUTPUT, GOLD_TABLES, RECORD_KEY, TABLES, TableSchema

LOCAL_DATABASE = "radar"


@dataclass(frozen=True)
class TableCatalog:
    """Where each table lives for one configuration."""

    config: RadarConfig

    @property
    def unity_catalog(self) -> bool:
        storage = self.config.storage
        return bool(storage.catalog and storage.schema_name)

    @property
    def database(self) -> str:
        storage = self.config.storage
        return f"{storage.catalog}.{storage.schema_name}" if self.unity_catalog else LOCAL_DATABASE

    def name(self, table: TableSchema) -> str:
        """The fully qualified table name to use in SQL."""
        return f"{self.database}.{self.config.storage.table_prefix}{table.name}"

    @property
    def tables_dir(self) -> Path | None:
        """The folder of the local tables; None for Unity Catalog managed tables."""
        if self.unity_catalog:
            return None
        return (self.config.data_dir / "tables").resolve()

    def location(self, table: TableSchema) -> Path | None:
        """The folder of a local table; None for Unity Catalog managed tables."""
        tables_dir = self.tables_dir
        return None if tables_dir is None else tables_dir / table.name


# Columns the on-call queries filter on, besides a table's event time; Z-ordered when a table has them.
FILTER_COLUMNS: tuple[str, ...] = ("cluster", "group_id")
# A table's event time is the first of these it has (source timestamp last: every row has one).
EVENT_TIME_COLUMNS: tuple[str, ...] = (
    "event_time",
    "started_at",
    "first_seen",
    "commit_ts",
    "tick_time",
    "last_event_at",
    "src_timestamp",
)


def zorder_columns(table: TableSchema) -> tuple[str, ...]:
    """The columns OPTIMIZE Z-orders `table` by: cluster, group_id and its event time, those it has and that are not
    partition columns (Delta refuses to Z-order by a partition column)."""
    names = [c for c in table.column_names if c not in table.partition_by]
    event_time = next((c for c in EVENT_TIME_COLUMNS if c in names), None)
    return tuple(c for c in (*FILTER_COLUMNS, event_time) if c is not None and c in names)


def stats_columns(table: TableSchema) -> tuple[str, ...]:
    """The columns Delta keeps file statistics on: those the writes filter on (the record key, read back over the
    batch's offset range by `existing_record_keys`) and those queries filter on and OPTIMIZE Z-orders by
    (`zorder_columns`: Delta refuses to Z-order by a column without statistics), and the source timestamp, whose
    newest value a replay reads from the log (`delta_log.timestamp_maximum`). Statistics on every column
    (Delta's default: the first 32, binary key/value and nested members included) cost time in every commit."""
    source_time = ("src_timestamp",) if "src_timestamp" in table.column_names else ()
    wanted = (*table.record_key, *zorder_columns(table), *source_time)
    return tuple(dict.fromkeys(c for c in wanted if c not in table.partition_by))


# Commits between two Delta checkpoints. Delta's default (10) made every tenth commit of a table reconstruct its
# whole state and write a parquet checkpoint in the committing thread: ~1-1.7 s of Spark jobs on 2 cores under a
# live run's load, so every tenth live detection micro-batch (one commit each to `detector_output`) came out seconds
# late. A reader that builds a snapshot from scratch now replays up to this many small JSON commits instead.
CHECKPOINT_INTERVAL = 100


AUTO_COMPACT = "delta.autoOptimize.autoCompact"
"""Delta's own per-commit compaction: off in every session (`session.session_conf`), also for tables an earlier
radar created with it on. Its post-commit hook rebuilt the table's state and compacted even a fresh table's first
few files, inside the write: most of a small replay's Spark jobs. `compact_when_due` replaces it."""


def compacts_itself(table: TableSchema) -> bool:
    """Whether radar compacts the table's small files after its writes (`compact_when_due`): every table appended to
    by a micro-batch, so a run that never stops keeps a bounded number of files without an outside `radar maintain`.
    Not the MERGE targets (a compaction between two MERGEs of another thread is one more conflict to retry), and not
    `detector_output`, which the live detection micro-batch appends to: the compaction would run on its latency."""
    return table.name not in GOLD_TABLES and table is not DETECTOR_OUTPUT


_WRITES_SINCE_COMPACTION: dict[str, int] = {}
_WRITES_LOCK = threading.Lock()


def compact_when_due(spark: SparkSession, config: RadarConfig, table: TableSchema) -> None:
    """After a write of this process to `table`: every `storage.compact_after_writes`-th one OPTIMIZEs it (bin-packing
    its small files), in the writer's thread as Delta's auto compaction did. Counting its own writes costs nothing,
    where Delta's hook rebuilt the table's state after every commit to decide; a restarted process starts counting
    again, and `radar maintain` (Z-ordered) does the rest. The version moves by two, as `delta_log.rearranged_only`
    allows. An OPTIMIZE that loses a commit race (another process's MERGE or DELETE removed files it read) is not
    the write's failure: the next write of this process tries again."""
    if not compacts_itself(table):
        return
    catalog = TableCatalog(config)
    location = catalog.location(table)
    key = str(location) if location is not None else catalog.name(table)
    with _WRITES_LOCK:
        writes = _WRITES_SINCE_COMPACTION.get(key, 0) + 1
        due = writes >= config.storage.compact_after_writes
        _WRITES_SINCE_COMPACTION[key] = 0 if due else writes
    if due:
        target = catalog.name(table) if location is None else f"delta.`{location}`"
        try:
            spark.sql(f"OPTIMIZE {target}")
        except delta_conflicts():
            with _WRITES_LOCK:
                _WRITES_SINCE_COMPACTION[key] = config.storage.compact_after_writes - 1


def table_properties(table: TableSchema) -> dict[str, str]:
    """The Delta properties a new table is created with (a table that exists keeps its own)."""
    properties = {"delta.checkpointInterval": str(CHECKPOINT_INTERVAL)}
    stats = stats_columns(table)
    if stats:
        properties["delta.dataSkippingStatsColumns"] = ",".join(stats)
    return properties


def _create_statement(catalog: TableCatalog, table: TableSchema) -> str:
    partition = f" PARTITIONED BY ({', '.join(table.partition_by)})" if table.partition_by else ""
    location = catalog.location(table)
    where = f" LOCATION '{location}'" if location is not None else ""
    properties = ", ".join(f"'{name}' = '{value}'" for name, value in table_properties(table).items())
    return (
        f"CREATE TABLE IF NOT EXISTS {catalog.name(table)} ({table.ddl}) USING DELTA{partition}{where}"
        f" TBLPROPERTIES ({properties})"
    )


# (table name -> (Spark application id, location)) of what `ensure_tables` created or registered in this process: a
# name this session already points at an existing table in the same folder needs no DDL (each statement is a Delta
# snapshot load: seconds in a cold JVM, and a replay ensured the same tables three times).
_ENSURED: dict[str, tuple[str, str]] = {}
# Statements run concurrently: a CREATE is mostly driver-side latency (a Delta commit), as table writes are.
ENSURE_THREADS = 4


def _ensure_table(spark: SparkSession, catalog: TableCatalog, table: TableSchema) -> None:
    location = catalog.location(table)
    if location is None:
        spark.sql(_create_statement(catalog, table))
        return
    spark.sql(f"DROP TABLE IF EXISTS {catalog.name(table)}")  # external table: its files stay
    if (location / "_delta_log").is_dir():
        spark.sql(f"CREATE TABLE {catalog.name(table)} USING DELTA LOCATION '{location}'")
    else:
        spark.sql(_create_statement(catalog, table))


# One `ensure_tables` at a time: a stage may create its tables in the background (`ensure_tables_in_background`)
# while the next stage ensures its own, and two threads must not drop and create one name at once.
_ENSURE_LOCK = threading.Lock()


def ensure_tables(spark: SparkSession, config: RadarConfig, tables: Iterable[TableSchema] | None = None) -> None:
    """Create missing tables (idempotent) and register local ones by name.

    A local name is only a pointer to a folder, so it is re-pointed at this config's data dir unless this session
    already pointed it there (and the table is still on disk): a session that served another data dir must not
    read or write the old folder under the same name.
    """
    with _ENSURE_LOCK:
        _ensure_tables(spark, config, tables)


def ensure_tables_in_background(
    spark: SparkSession, config: RadarConfig, tables: Iterable[TableSchema] | None = None
) -> Future[None]:
    """`ensure_tables` (every table unless `tables` names some) in a thread of its own: a stage starts its queries
    meanwhile, and waits for the future before it counts as started and before each query's first write
    (`TableWriter.tables_ready`). Creating fifteen tables takes ~3.8 s of a cold JVM, and a query's start and first
    read (~3 s) need none of them."""
    from rebalance_radar.pipelines.runtime.phases import phase

    future: Future[None] = Future()

    def ensure() -> None:
        future.set_running_or_notify_cancel()
        try:
            with phase("ingest tables"):
                ensure_tables(spark, config, tables)
        except BaseException as error:  # handed to whoever waits: the stage's first write, or its stop
            future.set_exception(error)
        else:
            future.set_result(None)

    threading.Thread(target=ensure, name="radar-ddl-background").start()
    return future


def _ensure_tables(spark: SparkSession, config: RadarConfig, tables: Iterable[TableSchema] | None) -> None:
    catalog = TableCatalog(config)
    app_id = spark.sparkContext.applicationId
    wanted = [
        table
        for table in (TABLES.values() if tables is None else tables)
        if not _already_ensured(catalog, table, app_id)
    ]
    if not wanted:
        return
    if not catalog.unity_catalog:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {LOCAL_DATABASE}")
    # one process at a time creates a data dir's tables: two creating the same Delta log raced into
    # DELTA_PROTOCOL_CHANGED; the second now finds them and only registers them
    with (
        nullcontext() if catalog.tables_dir is None else creating_tables(catalog.tables_dir),
        ThreadPoolExecutor(max_workers=min(ENSURE_THREADS, len(wanted)), thread_name_prefix="radar-ddl") as pool,
    ):
        for done in [pool.submit(_ensure_table, spark, catalog, table) for table in wanted]:
            done.result()
    for table in wanted:
        _ENSURED[catalog.name(table)] = (app_id, str(catalog.location(table)))


def _already_ensured(catalog: TableCatalog, table: TableSchema, app_id: str) -> bool:
    location = catalog.location(table)
    if _ENSURED.get(catalog.name(table)) != (app_id, str(location)):
        return False
    return location is None or (location / "_delta_log").is_dir()


def register_existing_tables(spark: SparkSession, config: RadarConfig, named: Sequence[TableSchema] = ()) -> list[str]:
    """Register the local tables that exist on disk (for `radar sql` in a fresh session); returns the names of all
    that exist. With `named` (the tables a query mentions), only those are registered: each registration loads the
    table's Delta snapshot, seconds for all of them in a cold JVM; a query naming none (`SHOW TABLES`) gets all."""
    catalog = TableCatalog(config)
    if catalog.unity_catalog:
        return [catalog.name(t) for t in TABLES.values()]
    present = [t for t in TABLES.values() if (catalog.location(t) / "_delta_log").is_dir()]  # type: ignore[operator]
    wanted = [t for t in present if t in named] if named else present
    ensure_tables(spark, config, wanted)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {LOCAL_DATABASE}")  # a data dir with no table yet has none
    spark.sql(f"USE {LOCAL_DATABASE}")
    return [catalog.name(t) for t in present]


def append_idempotent(df: DataFrame, config: RadarConfig, table: TableSchema, app_id: str, version: int) -> None:
    """Append a micro-batch once: Delta skips a (txnAppId, txnVersion) it has already committed, so a batch
    replayed after a crash writes nothing twice."""
    append_rows(df, config, table, transaction=(app_id, version))


def append_rows(
    df: DataFrame, config: RadarConfig, table: TableSchema, *, transaction: tuple[str, int] | None = None
) -> None:
    """Append rows to a table; with `transaction` (txnAppId, txnVersion), once per transaction."""
    catalog = TableCatalog(config)
    # columns may grow between releases: an older table takes the new columns on the next append
    writer = df.select(*table.column_names).write.format("delta").mode("append").option("mergeSchema", "true")
    if transaction is not None:
        writer = writer.option("txnAppId", transaction[0]).option("txnVersion", transaction[1])
    location = catalog.location(table)
    if location is None:
        writer.saveAsTable(catalog.name(table))
    else:
        writer.save(str(location))
    compact_when_due(df.sparkSession, config, table)


def within_ranges(ranges: Sequence[Row], prefix: str = "") -> Column:
    """Rows of a table keyed by source record inside the batch's offset range of each (cluster, topic, partition):
    the predicate Delta's file statistics skip the rest of the table by (`prefix`: the table's alias and a dot)."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    within = F.lit(False)
    for r in ranges:
        within = within | (
            F.col(f"{prefix}cluster").eqNullSafe(r["cluster"])
            & F.col(f"{prefix}src_topic").eqNullSafe(r["src_topic"])
            & F.col(f"{prefix}src_partition").eqNullSafe(r["src_partition"])
            & F.col(f"{prefix}src_offset").between(r["low"], r["high"])
        )
    return within


def existing_record_keys(
    df: DataFrame, config: RadarConfig, table: TableSchema, ranges: list[Row] | None = None
) -> DataFrame | None:
    """The `record_key` values of `table` among the records of `df`: the table read only over the batch's offset range
    per (cluster, topic, partition), so Delta's file statistics skip the rest. None when the table is empty."""
    catalog = TableCatalog(config)
    location = catalog.location(table)
    spark = df.sparkSession
    if location is not None and (not (location / "_delta_log").is_dir() or live_files(location) == []):
        return None  # no table, or its log says it holds no file: nothing to read (two Spark jobs saved)
    ranges = source_ranges(df) if ranges is None else ranges
    if not ranges:
        return None
    rows = spark.read.format("delta").load(str(location)) if location is not None else spark.table(catalog.name(table))
    # read now, outside the append's transaction: a read of the target inside it would make every concurrent
    # append to the table (the other query's quarantine rows) a conflict
    return rows.where(within_ranges(ranges)).select(*table.record_key).distinct().localCheckpoint(eager=True)


class _KnownAtVersion(Protocol):
    @property
    def version(self) -> int: ...


Known = TypeVar("Known", bound=_KnownAtVersion)


HELD_KEYS_MAX = 200_000
"""Keys of one table this process keeps between batches (`HeldKeys`): a run that lasts months must not hold every
detection id it ever wrote. A larger table's keys are read, used and let go each time (what a version moved by
another writer costs anyway)."""


def _known_at_current_version(
    cache: dict[str, Known], location: Path, empty: Callable[[int], Known], read: Callable[[int], Known]
) -> Known | None:
    """What this process knows a local table holds (`cache`, by folder), while the table's version is the one it
    knows; else `empty` for a table whose log says it holds no file, or `read` (a scan), remembered. None for a table
    that does not exist."""
    version = log_version(location)
    if version is None:
        return None
    known = cache.get(str(location))
    if known is not None and known.version == version:
        return known
    if known is not None and known.version < version and rearranged_only(location, known.version, version):
        known = replace(known, version=version)  # compacted since (Delta's auto compaction): the same rows
        cache[str(location)] = known
        return known
    # a new table, by its log: nothing to read
    known = empty(version) if live_files(location) == [] and log_version(location) == version else read(version)
    cache[str(location)] = known
    return known


def _after_own_write(
    cache: dict[str, Known], location: Path, before: Known | None, updated: Callable[[Known, int], Known]
) -> None:
    """After this process wrote to the table: `updated(before, new version)` if the write was the only commit since
    `before`, else what the table holds is unknown again."""
    after = log_version(location)
    own = None if before is None else before.version + 1
    if own is None or after is None or not (after in (before.version, own) or rearranged_only(location, own, after)):
        cache.pop(str(location), None)
        return
    cache[str(location)] = updated(before, after)


@dataclass(frozen=True)
class HeldOffsets:
    """The highest source offset per (cluster, topic, partition) a local table holds, true at Delta `version`."""

    version: int
    highest: dict[tuple[object, object, object], int]


# By table folder, in this process: what the appends of this process know a table holds. A streaming append of new
# offsets (every micro-batch from Kafka) starts above it, so its record-key check needs no read of the table: two
# Spark jobs and a Delta snapshot per table and micro-batch saved. Another writer's commit (the version moved)
# makes it unknown again, and the next check reads the table.
_HELD: dict[str, HeldOffsets] = {}


def _held_offsets(spark: SparkSession, location: Path) -> HeldOffsets | None:
    """What the table holds, from this process's knowledge while the table's version is the one it knows, else
    read (one scan of the key columns) and remembered."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    def read(version: int) -> HeldOffsets:
        rows = (
            spark.read.format("delta")
            .load(str(location))
            .groupBy("cluster", "src_topic", "src_partition")
            .agg(F.max("src_offset").alias("highest"))
            .collect()
        )
        # a dump line that is no record (quarantine, stage read_dump) has no source offset: it bounds nothing
        highest = {
            (r["cluster"], r["src_topic"], r["src_partition"]): int(r["highest"])
            for r in rows
            if r["highest"] is not None
        }
        return HeldOffsets(version, highest)

    return _known_at_current_version(_HELD, location, lambda version: HeldOffsets(version, {}), read)


def held_offsets_known(location: Path) -> dict[tuple[object, object, object], int] | None:
    """What this process knows the table at `location` holds, if that is still its current version (for tests and
    diagnostics)."""
    held = _HELD.get(str(location))
    return dict(held.highest) if held is not None and held.version == log_version(location) else None


def _note_append(location: Path, before: HeldOffsets | None, ranges: list[Row]) -> None:
    """After an append: the table now holds the batch's offsets too, if the append was the only commit since."""

    def updated(held: HeldOffsets, version: int) -> HeldOffsets:
        highest = dict(held.highest)
        for r in ranges:
            key = (r["cluster"], r["src_topic"], r["src_partition"])
            highest[key] = max(highest.get(key, -1), int(r["high"]))
        return HeldOffsets(version, highest)

    _after_own_write(_HELD, location, before, updated)


@dataclass(frozen=True)
class HeldKeys:
    """The key values (`key` columns) a local table holds, true at Delta `version`."""

    version: int
    keys: frozenset[tuple[object, ...]]


# By table folder, in this process: the keys of a table MERGEd by key (gold `detections`) as its last write by this
# process left them. A batch of keys none of which it holds is inserted with a plain append: no table state to
# rebuild, no source to materialise, no scan for matches (a MERGE's cost). Another writer's commit (the version
# moved) makes them unknown again, and the next batch reads the keys.
_HELD_KEYS: dict[str, HeldKeys] = {}


def held_keys(spark: SparkSession, location: Path, key: Sequence[str]) -> HeldKeys | None:
    """The keys the table at `location` holds: this process's knowledge while its version is the one known, else
    read and remembered. None for a table that does not exist. A small table's keys are read from its files in the
    driver (`delta_log.rows_from_files`): a live detection batch that opens a detection after the gold query's MERGE
    moved the version read them with a Delta snapshot and a Spark job, on its path to the detection's row."""

    def read(version: int) -> HeldKeys:
        stored = rows_from_files(location, key, max_bytes=DRIVER_READ_MAX_BYTES, version=version)
        if stored is not None:
            return HeldKeys(version, frozenset(zip(*(stored[name].to_pylist() for name in key), strict=True)))
        rows = spark.read.format("delta").option("versionAsOf", version).load(str(location)).select(*key).collect()
        return HeldKeys(version, frozenset(tuple(r) for r in rows))

    known = _known_at_current_version(_HELD_KEYS, location, lambda version: HeldKeys(version, frozenset()), read)
    if known is not None and len(known.keys) > HELD_KEYS_MAX:
        _HELD_KEYS.pop(str(location), None)  # bounded: used now, read again next time
    return known


def warm_snapshot(spark: SparkSession, location: Path) -> None:
    """Have Delta list the table's files at its current version now: its state reconstruction, a Spark job that
    every MERGE at a new version runs first ("Compute snapshot for version N"), and that the next write at the same
    version then finds done. The gold query calls it before it takes its turn (`detection_turn`), where that job
    held up live detection batches (a small table's MERGE after another writer's append: 1.17 s, 0.68 s after
    this, which took 0.56 s)."""
    spark.read.format("delta").load(str(location)).inputFiles()


_WRITE_LOCKS: dict[str, threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def write_lock(location: Path) -> threading.Lock:
    """The lock of one local table two queries of this process write (a live run's `detections`: the detection
    query's appends, the gold query's MERGE). Delta OSS runs every transaction at Serializable isolation, where a
    MERGE that read the whole table fails with ConcurrentAppendException if an append commits while it runs (seen
    live): the appends hold it, and a MERGE that collided with one retries holding it, so the retry cannot
    collide."""
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(str(location), threading.Lock())


def forget_held_keys(location: Path) -> None:
    """Forget what this process knows of the table's keys, as a new process starts (tests, diagnostics)."""
    _HELD_KEYS.pop(str(location), None)


def note_written_keys(location: Path, before: HeldKeys | None, written: Iterable[tuple[object, ...]]) -> None:
    """After a write of `written` keys (append or MERGE): the table holds them too, if the write was the only commit
    since `before`; otherwise what it holds is unknown again."""
    keys = frozenset(written)
    if before is not None and len(before.keys) + len(keys) > HELD_KEYS_MAX:
        _HELD_KEYS.pop(str(location), None)  # bounded: read again next time
        return
    _after_own_write(_HELD_KEYS, location, before, lambda held, version: HeldKeys(version, held.keys | keys))


def source_ranges(df: DataFrame) -> list[Row]:
    """(cluster, src_topic, src_partition, low, high): the source offsets a batch of rows covers."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    return (
        df.groupBy("cluster", "src_topic", "src_partition")
        .agg(F.min("src_offset").alias("low"), F.max("src_offset").alias("high"))
        .collect()
    )


def append_new_records(
    df: DataFrame,
    config: RadarConfig,
    table: TableSchema,
    app_id: str,
    version: int,
    /,
    *,
    ranges: Sequence[Row] | None = None,
    alone: bool = False,
) -> None:
    """`append_idempotent`, leaving out rows of records the table already holds (by its `record_key`): the same
    record replayed through another dump file, another set of files or another checkpoint is written once.
    Tables without a record key are appended as they are. `ranges`: the source offsets the rows cover, when the
    stage computed them for all its tables at once (`source_ranges` otherwise: a Spark job per table).

    A local table keyed by source record whose held offsets this process knows (`HeldOffsets`) is not read when
    every partition of the batch starts above them: none of its records can be there, so the rows are appended
    as they are and without Delta's transaction id. That id is what made every append cost a full Delta state
    reconstruction (Delta 4.4 looks the id up through `Snapshot.transactions`, a Spark job over the whole log,
    although the checksum file holds it): here the record key already makes a replayed batch write nothing (its
    records are held, so it takes the path below). When the table may hold some of the records, they are left
    out, nothing is written if none is left, and the rest is appended with the transaction id as before.

    All of that holds only while no other process writes the table (`alone`, `data_dir_locks.writing`): what this
    process knows, and any read before a blind append, may be stale by the time it commits. Otherwise the rows
    are MERGEd on the record key (`merge_new_records`), which Delta makes exactly-once across writers."""
    location = TableCatalog(config).location(table)
    if not alone and table.record_key:
        merge_new_records(df, config, table, ranges)
        return
    if location is not None and table.record_key[: len(RECORD_KEY)] == RECORD_KEY:
        ranges = source_ranges(df) if ranges is None else list(ranges)
        if any(r["src_partition"] is None or r["low"] is None for r in ranges):
            held = None  # dump lines that are no record: their key is their file and line
        else:
            held = _held_offsets(df.sparkSession, location)
        beyond = held is not None and all(
            r["low"] > held.highest.get((r["cluster"], r["src_topic"], r["src_partition"]), -1) for r in ranges
        )
        if beyond:
            append_rows(df, config, table)
        else:
            # cached: the emptiness check and the append would each evaluate the anti-join
            new = _without(df, existing_record_keys(df, config, table, ranges), table).persist()
            try:
                if new.isEmpty():
                    return  # a replayed batch: every record is held already, and an empty append is still a commit
                append_idempotent(new, config, table, app_id, version)
            finally:
                new.unpersist()
        if held is not None:
            _note_append(location, held, ranges)
        return
    existing = existing_record_keys(df, config, table) if table.record_key else None
    append_idempotent(_without(df, existing, table), config, table, app_id, version)


def delta_conflicts() -> tuple[type[Exception], ...]:
    """Delta's concurrent-modification errors, by name: in delta-spark 4 they do not share the base class
    `DeltaConcurrentModificationException` (each derives from PySparkException alone)."""
    from delta import exceptions

    return tuple(
        getattr(exceptions, name)
        for name in (
            "DeltaConcurrentModificationException",
            "ConcurrentAppendException",
            "ConcurrentDeleteReadException",
            "ConcurrentDeleteDeleteException",
            "ConcurrentTransactionException",
            "ConcurrentWriteException",
            "MetadataChangedException",
            "ProtocolChangedException",
        )
    )


MERGE_ATTEMPTS = 8
"""Tries of a MERGE that another writer's commit made conflict, before the batch fails (and Spark retries it)."""


def merge_retrying_conflicts(merge: Callable[[], None], attempts: int = MERGE_ATTEMPTS) -> None:
    """Run a Delta MERGE again after a concurrent-modification conflict (another process committed to the table
    while it ran): a failed attempt committed nothing, and the next one reads what the other wrote."""
    for attempt in range(attempts):
        try:
            merge()
            return
        except delta_conflicts():
            if attempt == attempts - 1:
                raise
            time.sleep(random.uniform(0.05, 0.25) * (attempt + 1))


def merge_new_records(
    df: DataFrame, config: RadarConfig, table: TableSchema, ranges: Sequence[Row] | None = None
) -> None:
    """Insert the rows whose record key the table does not hold, in one MERGE: Delta's conflict detection makes it
    exactly-once whatever the number of writers (a concurrent commit fails the attempt, which is run again). The
    target is read only over the batch's source offsets, where the records carry them, so file statistics skip
    the rest of the table."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    catalog = TableCatalog(config)
    location = catalog.location(table)
    spark = df.sparkSession
    rows = df.select(*table.column_names).dropDuplicates(list(table.record_key))
    condition = F.lit(True)
    for key in table.record_key:
        condition = condition & F.col(f"t.{key}").eqNullSafe(F.col(f"s.{key}"))
    if table.record_key[: len(RECORD_KEY)] == RECORD_KEY:
        ranges = source_ranges(rows) if ranges is None else list(ranges)
        if ranges and all(r["src_partition"] is not None and r["low"] is not None for r in ranges):
            condition = condition & within_ranges(ranges, "t.")
    rows = rows.persist()  # read by every attempt

    def merge() -> None:
        target = (
            DeltaTable.forName(spark, catalog.name(table))
            if location is None
            else DeltaTable.forPath(spark, str(location))
        )
        # columns may grow between releases, as the appends' mergeSchema allows
        target.alias("t").merge(rows.alias("s"), condition).withSchemaEvolution().whenNotMatchedInsertAll().execute()

    try:
        merge_retrying_conflicts(merge)
    finally:
        rows.unpersist()
    compact_when_due(spark, config, table)


def _without(df: DataFrame, existing: DataFrame | None, table: TableSchema) -> DataFrame:
    """`df` less the rows whose record key is among `existing`."""
    if existing is None:
        return df
    same = [df[key].eqNullSafe(existing[key]) for key in table.record_key]
    condition = same[0]
    for one in same[1:]:
        condition = condition & one
    return df.join(existing, condition, "left_anti")


def upsert_by_key(df: DataFrame, config: RadarConfig, table: TableSchema, keys: Sequence[str]) -> None:
    """MERGE a micro-batch into `table` by its key columns: a row whose key exists replaces it, the rest are
    inserted. Idempotent without a transaction id when the keys are deterministic ids (gold tables): a batch
    replayed after a crash upserts the same rows to the same values. The batch must hold one row per key."""
    from delta.tables import DeltaTable

    catalog = TableCatalog(config)
    location = catalog.location(table)
    spark = df.sparkSession
    target = (
        DeltaTable.forName(spark, catalog.name(table)) if location is None else DeltaTable.forPath(spark, str(location))
    )
    condition = " AND ".join(f"t.`{key}` <=> s.`{key}`" for key in keys)
    rows = df.select(*table.column_names).alias("s")
    merge_retrying_conflicts(
        lambda: target.alias("t").merge(rows, condition).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    )


class TableWrite(Protocol):
    """How one table takes its rows of one micro-batch: (rows, config, table, app id, batch id, the source offsets
    the rows cover where the stage knows them, and whether no other process writes meanwhile:
    `data_dir_locks.writing`); must be idempotent for a replayed batch and across writers.
    `append_new_records` (append, leaving out records the table already holds) is the default."""

    def __call__(
        self,
        df: DataFrame,
        config: RadarConfig,
        table: TableSchema,
        app_id: str,
        version: int,
        /,
        *,
        ranges: Sequence[Row] | None = None,
        alone: bool = False,
    ) -> None: ...


def upserting(keys: Mapping[str, Sequence[str]]) -> TableWrite:
    """A table write for `pipelines.stages.streams` (a `TableWrite`) that upserts each table by its key columns."""

    def upsert(
        df: DataFrame,
        config: RadarConfig,
        table: TableSchema,
        _app_id: str,
        _batch_id: int,
        /,
        *,
        ranges: Sequence[Row] | None = None,
        alone: bool = False,
    ) -> None:
        upsert_by_key(df, config, table, keys[table.name])

    return upsert


def log_says_empty(config: RadarConfig, table: TableSchema) -> bool:
    """True when the local table's Delta log says it holds no row (no Spark job); False when it holds some, when the
    log alone cannot say, or for a table in a catalog: the caller then reads the table."""
    location = TableCatalog(config).location(table)
    return location is not None and record_count(location) == 0


def count_if_exists(spark: SparkSession, config: RadarConfig, table: TableSchema) -> int | None:
    """Rows of `table`, or None while it does not exist yet (the live status shows detections once they do). A
    local table is counted from its Delta log (`pipelines.storage.delta_log`: no Spark job), or scanned where the log
    alone cannot say."""
    catalog = TableCatalog(config)
    location = catalog.location(table)
    if location is None:
        return spark.table(catalog.name(table)).count() if spark.catalog.tableExists(catalog.name(table)) else None
    if not (location / "_delta_log").is_dir():
        return None
    from_log = record_count(location)
    return from_log if from_log is not None else spark.read.format("delta").load(str(location)).count()
