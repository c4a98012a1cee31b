"""Delta tables by name: created once, re-pointed per data dir, appended exactly once per (app id, version), and
upserted by key (MERGE) through the streaming skeleton's multi-table writer."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.stages.streams import ONE_FILE_MAX_ROWS, TableWriter
from rebalance_radar.pipelines.storage import tables
from rebalance_radar.pipelines.storage.delta_log import (
    ColumnMaximum,
    history_without_checkpoint,
    live_files,
    log_version,
    rearranged_only,
    record_count_where,
    rows_from_files,
    timestamp_maximum,
)
from rebalance_radar.pipelines.storage.tables import (
    CHECKPOINT_INTERVAL,
    TableCatalog,
    append_idempotent,
    append_new_records,
    ensure_tables,
    ensure_tables_in_background,
    forget_held_keys,
    held_keys,
    held_offsets_known,
    register_existing_tables,
    stats_columns,
    upsert_by_key,
    upserting,
    warm_snapshot,
)
from rebalance_radar.transforms.schemas import GOLD_TABLES, GROUP_HEALTH, OFFSET_COMMITS, QUARANTINE, RECORD_KEY, TABLES


def _quarantine_rows(spark, config: RadarConfig, n: int, first: int = 0, partition: int = 0):  # type: ignore[no-untyped-def]
    given = {"cluster": config.cluster, "src_topic": "t", "src_partition": partition, "stage": "decode_offsets"}
    rows = [
        tuple(
            {**given, "kind": "malformed", "src_offset": i, "reason": f"bad {i}", "value": b"x"}.get(name)
            for name in QUARANTINE.column_names
        )
        for i in range(first, first + n)
    ]
    return spark.createDataFrame(rows, QUARANTINE.ddl)


@pytest.mark.spark
def test_names_follow_the_data_dir_and_appends_are_idempotent(spark, radar_config: RadarConfig, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = radar_config.with_data_dir(tmp_path / "first")
    second = radar_config.with_data_dir(tmp_path / "second")
    ensure_tables(spark, first, [QUARANTINE])
    append_idempotent(_quarantine_rows(spark, first, 3), first, QUARANTINE, "test:q", 0)
    append_idempotent(_quarantine_rows(spark, first, 3), first, QUARANTINE, "test:q", 0)  # a replayed batch
    name = TableCatalog(first).name(QUARANTINE)
    assert spark.table(name).count() == 3

    ensure_tables(spark, second, [QUARANTINE])
    assert spark.table(name).count() == 0  # the name now points at the second data dir
    assert register_existing_tables(spark, first) == [name]
    assert spark.sql(f"SELECT count(*) FROM {QUARANTINE.name}").first()[0] == 3  # `USE radar` + the first dir
    assert set(TABLES) >= {"offset_commits", "quarantine", "heartbeat_events"}
    # statistics only on the record key (the dedup read filters on it) and the Z-order columns (cluster, group,
    # event time: queries filter on them, and Delta refuses to Z-order by a column without statistics)
    properties = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    assert properties["delta.dataSkippingStatsColumns"] == ",".join(stats_columns(QUARANTINE))
    assert properties["delta.checkpointInterval"] == str(CHECKPOINT_INTERVAL)
    assert set(stats_columns(QUARANTINE)) == set(QUARANTINE.record_key) | {"src_timestamp"}
    assert set(stats_columns(OFFSET_COMMITS)) == {*RECORD_KEY, "group_id", "commit_ts", "src_timestamp"}


def _health_rows(spark, config: RadarConfig, rows: list[tuple[str, int, int]]):  # type: ignore[no-untyped-def]
    """group_health rows (group, generation, members); the other columns null."""
    data = [
        (config.cluster, group, "classic", "Stable", gen, members, None, 0, 0, None) for group, gen, members in rows
    ]
    return spark.createDataFrame(data, GROUP_HEALTH.ddl)


@pytest.mark.spark
def test_upsert_by_key_replaces_matching_rows_and_is_idempotent(
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A MERGE write through `TableWriter`: a replayed batch changes nothing, a newer row replaces the old one."""
    config = radar_config.with_data_dir(tmp_path / "merge")
    ensure_tables(spark, config, [GROUP_HEALTH])
    upsert = upserting({GROUP_HEALTH.name: ("cluster", "group_id")})
    writer = TableWriter(config, "test:health", upsert, GOLD_TABLES)
    first = {GROUP_HEALTH.name: _health_rows(spark, config, [("a", 1, 2), ("b", 4, 1)])}
    writer.write_tables(first, 0)
    writer.write_tables(first, 0)  # a replayed batch
    name = TableCatalog(config).name(GROUP_HEALTH)

    def state() -> list[tuple[str, int, int]]:
        return sorted((r.group_id, r.generation, r.members) for r in spark.table(name).collect())

    assert state() == [("a", 1, 2), ("b", 4, 1)]
    writer.write_tables({GROUP_HEALTH.name: _health_rows(spark, config, [("a", 2, 3), ("c", 1, 1)])}, 1)
    assert state() == [("a", 2, 3), ("b", 4, 1), ("c", 1, 1)]


@pytest.mark.spark
def test_a_small_tables_rows_are_read_from_its_files_as_spark_reads_them(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """A table's rows come from the files its log keeps (MERGE's rewritten files left out), the rows Spark reads,
    before and after a checkpoint, partition columns too; no answer for a missing column, or past the size cap."""
    config = radar_config.with_data_dir(tmp_path)
    ensure_tables(spark, config, [GROUP_HEALTH])
    location = TableCatalog(config).location(GROUP_HEALTH)
    assert location is not None
    columns = ("group_id", "generation", "members")
    empty = rows_from_files(location, columns)  # no file yet: no rows
    assert empty is not None and empty.num_rows == 0 and empty.column_names == list(columns)
    upsert = upserting({GROUP_HEALTH.name: ("cluster", "group_id")})
    writer = TableWriter(config, "test:health", upsert, GOLD_TABLES)
    writer.write_tables({GROUP_HEALTH.name: _health_rows(spark, config, [("a", 1, 2), ("b", 4, 1)])}, 0)
    writer.write_tables({GROUP_HEALTH.name: _health_rows(spark, config, [("a", 2, 3), ("c", 1, 1)])}, 1)

    def spark_rows() -> list[tuple[object, ...]]:
        return sorted(tuple(r) for r in spark.read.format("delta").load(str(location)).select(*columns).collect())

    def file_rows() -> list[tuple[object, ...]]:
        read = rows_from_files(location, columns)
        assert read is not None
        return sorted(zip(*(read[c].to_pylist() for c in columns), strict=True))

    assert file_rows() == spark_rows() == [("a", 2, 3), ("b", 4, 1), ("c", 1, 1)]  # "a"'s old file is removed
    assert rows_from_files(location, ("group_id", "no_such_column")) is None
    assert rows_from_files(tmp_path / "no-table-here", columns) is None
    size = sum(f.size for f in live_files(location) or ())
    assert size > 0
    assert rows_from_files(location, columns, max_bytes=size) is not None
    assert rows_from_files(location, columns, max_bytes=size - 1) is None

    partitioned = radar_config.with_data_dir(tmp_path / "partitioned")
    ensure_tables(spark, partitioned, [OFFSET_COMMITS])
    commits = TableCatalog(partitioned).location(OFFSET_COMMITS)
    assert commits is not None and OFFSET_COMMITS.partition_by
    read = rows_from_files(commits, OFFSET_COMMITS.partition_by)
    assert read is not None and read.num_rows == 0 and read.column_names == list(OFFSET_COMMITS.partition_by)

    # after a checkpoint, its files and metadata are the log's start; a MERGE after it removes one of its files
    spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('delta.checkpointInterval' = '1')")
    writer.write_tables({GROUP_HEALTH.name: _health_rows(spark, config, [("d", 1, 1)])}, 2)
    assert list((location / "_delta_log").glob("*.checkpoint*.parquet"))
    assert file_rows() == spark_rows() == [("a", 2, 3), ("b", 4, 1), ("c", 1, 1), ("d", 1, 1)]  # all in it
    spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('delta.checkpointInterval' = '100')")
    writer.write_tables({GROUP_HEALTH.name: _health_rows(spark, config, [("b", 5, 2)])}, 3)
    assert file_rows() == spark_rows() == [("a", 2, 3), ("b", 5, 2), ("c", 1, 1), ("d", 1, 1)]

    # an older version: from the checkpoint at or below it and the commits up to it, as Spark's time travel
    newest = log_version(location)
    assert newest is not None
    for version in range(1, newest + 1):
        at = rows_from_files(location, columns, version=version)
        assert at is not None
        travelled = spark.read.format("delta").option("versionAsOf", version).load(str(location)).select(*columns)
        assert sorted(zip(*(at[c].to_pylist() for c in columns), strict=True)) == sorted(
            tuple(r) for r in travelled.collect()
        ), version
    assert rows_from_files(location, columns, version=newest + 1) is None  # not in the log (yet)


@pytest.mark.spark
def test_the_keys_a_small_table_holds_are_read_from_its_files_without_a_spark_job(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`held_keys` after another writer moved the version (a live detection batch after the gold query's MERGE):
    the keys Spark would read, from the table's files, no Spark job on the detection's path."""
    config = radar_config.with_data_dir(tmp_path)
    ensure_tables(spark, config, [GROUP_HEALTH])
    location = TableCatalog(config).location(GROUP_HEALTH)
    assert location is not None
    key = ("cluster", "group_id")
    upsert = upserting({GROUP_HEALTH.name: key})
    writer = TableWriter(config, "test:health-keys", upsert, GOLD_TABLES)
    context = spark.sparkContext
    group = f"held-keys-{tmp_path.name}"
    for batch_id, groups in enumerate([[("a", 1, 2), ("b", 4, 1)], [("a", 2, 3), ("c", 1, 1)]]):
        writer.write_tables({GROUP_HEALTH.name: _health_rows(spark, config, groups)}, batch_id)
        context.setJobGroup(group, "the keys of a small table")
        try:
            held = held_keys(spark, location, key)
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)
        assert context.statusTracker().getJobIdsForGroup(group) == []
        assert held is not None and held.version == log_version(location)
        expected = {tuple(r) for r in spark.read.format("delta").load(str(location)).select(*key).collect()}
        assert held.keys == expected == {(config.cluster, g) for g in "abc"[: 2 + batch_id]}
    assert tables._HELD_KEYS[str(location)].keys == expected  # small: kept for the next batch

    # a run that lasts months keeps no more than HELD_KEYS_MAX keys of a table: the answer is the same, not kept
    monkeypatch.setattr(tables, "HELD_KEYS_MAX", 2)
    forget_held_keys(location)
    held = held_keys(spark, location, key)
    assert held is not None and held.keys == expected
    assert str(location) not in tables._HELD_KEYS


@pytest.mark.spark
def test_a_merge_after_warm_snapshot_finds_the_tables_file_list_made(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """The gold query lists a table's files (`warm_snapshot`) before it takes the turn live detection batches
    wait for: the MERGE that follows at the same version then runs one Spark job fewer (Delta's state
    reconstruction), and writes the same rows."""
    config = radar_config.with_data_dir(tmp_path)
    ensure_tables(spark, config, [GROUP_HEALTH])
    location = TableCatalog(config).location(GROUP_HEALTH)
    assert location is not None
    key = ("cluster", "group_id")
    context = spark.sparkContext

    def merge_jobs(rows: list[tuple[str, int, int]], *, warm: bool, name: str) -> int:
        append_idempotent(_health_rows(spark, config, [(f"other-{name}", 1, 1)]), config, GROUP_HEALTH, name, 0)
        if warm:  # another writer's append moved the version: list the files of the new one
            warm_snapshot(spark, location)
        group = f"merge-{name}-{tmp_path.name}"
        context.setJobGroup(group, "one MERGE")
        try:
            upsert_by_key(_health_rows(spark, config, rows), config, GROUP_HEALTH, key)
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)
        return len(context.statusTracker().getJobIdsForGroup(group))

    upsert_by_key(_health_rows(spark, config, [("a", 1, 2), ("b", 1, 2)]), config, GROUP_HEALTH, key)
    cold = merge_jobs([("a", 2, 3)], warm=False, name="cold")
    warm = merge_jobs([("b", 2, 1)], warm=True, name="warm")
    assert warm == cold - 1
    stored = {(r["group_id"], r["generation"]) for r in spark.read.format("delta").load(str(location)).collect()}
    assert stored == {("a", 2), ("b", 2), ("other-cold", 1), ("other-warm", 1)}


@pytest.mark.spark
def test_tables_created_in_the_background_hand_a_failure_to_the_first_write(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """A stage starts its queries while its tables are created: a write waits for them, and raises what their
    creation raised instead of writing anywhere."""
    config = radar_config.with_data_dir(tmp_path)
    folder = TableCatalog(config).location(QUARANTINE)
    assert folder is not None
    folder.parent.parent.mkdir(parents=True, exist_ok=True)
    folder.parent.write_text("a file where the tables' folder goes")
    creation = ensure_tables_in_background(spark, config, [QUARANTINE, OFFSET_COMMITS])
    failure = creation.exception(timeout=300)
    assert failure is not None
    writer = TableWriter(config, "test:background", tables_ready=creation)
    with pytest.raises(type(failure)) as raised:
        writer.write_tables({QUARANTINE.name: _quarantine_rows(spark, config, 2)}, 0)
    assert raised.value is failure
    assert folder.parent.read_text() == "a file where the tables' folder goes"

    fine = config.with_data_dir(tmp_path / "fine")
    created = ensure_tables_in_background(spark, fine, [QUARANTINE])
    TableWriter(fine, "test:background", tables_ready=created).write_tables(
        {QUARANTINE.name: _quarantine_rows(spark, fine, 2)}, 0
    )
    assert created.done() and created.exception() is None
    assert spark.read.format("delta").load(str(TableCatalog(fine).location(QUARANTINE))).count() == 2


@pytest.mark.spark
def test_a_small_batch_is_appended_as_one_file_and_a_large_one_by_every_partition(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """A live micro-batch's few rows per table go to one file (one task), however many partitions the batch had;
    a batch whose source offsets may hold more than ONE_FILE_MAX_ROWS rows, or whose offsets are unknown, keeps
    its partitions (a backlog is written by every core). The rows are the same either way."""
    config = radar_config.with_data_dir(tmp_path)
    ensure_tables(spark, config, [QUARANTINE])
    location = TableCatalog(config).location(QUARANTINE)
    assert location is not None
    writer = TableWriter(config, "test:one-file")

    def file_count() -> int:
        files = live_files(location)
        assert files is not None
        return len(files)

    def added_files(rows, batch_id: int, ranges) -> int:  # type: ignore[no-untyped-def]
        before = file_count()
        writer.write_tables({QUARANTINE.name: rows}, batch_id, {QUARANTINE.name: ranges} if ranges else None)
        return file_count() - before

    def span(low: int, high: int, partition: int = 0) -> Row:
        return Row(cluster=config.cluster, src_topic="t", src_partition=partition, low=low, high=high)

    small = _quarantine_rows(spark, config, 6).repartition(3)
    assert small.rdd.getNumPartitions() == 3
    assert added_files(small, 0, [span(0, 5)]) == 1
    # offsets that may hold more rows than the bound (partition 2's span alone): the batch's own partitions
    wide = (
        _quarantine_rows(spark, config, 3, first=10, partition=1)
        .unionByName(_quarantine_rows(spark, config, 3, first=ONE_FILE_MAX_ROWS, partition=2))
        .repartition(3)
    )
    assert added_files(wide, 1, [span(10, 12, 1), span(0, ONE_FILE_MAX_ROWS + 2, 2)]) == 3
    unknown = _quarantine_rows(spark, config, 4, first=20, partition=3).repartition(2)
    assert added_files(unknown, 2, None) == 2  # the write finds the ranges itself; no bound known
    held = spark.read.format("delta").load(str(location))
    assert held.count() == 6 + 6 + 4
    assert held.select("src_partition", "src_offset").distinct().count() == 16


@pytest.mark.spark
def test_the_newest_source_time_is_read_from_the_log_as_spark_reads_it(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """A replay's end is the newest event time: the files' maximum statistics give what a scan gives (Delta keeps
    milliseconds of a microsecond timestamp, as `unix_millis` does), and no answer where they cannot say."""
    config = radar_config.with_data_dir(tmp_path)
    ensure_tables(spark, config, [QUARANTINE])
    location = TableCatalog(config).location(QUARANTINE)
    assert location is not None
    assert timestamp_maximum(location, "src_timestamp") == ColumnMaximum(None)  # no file yet
    written = [
        ("2026-11-25 10:00:00.123999", 0),
        ("2026-11-25 09:59:59.999999", 1),
        (None, 2),
    ]
    for stamp, offset in written:  # one commit each: the newest is in the first file, a null-only file last
        rows = _quarantine_rows(spark, config, 1, first=offset).withColumn(
            "src_timestamp", F.to_timestamp(F.lit(stamp)) if stamp else F.lit(None).cast("timestamp")
        )
        rows.write.format("delta").mode("append").save(str(location))
    scanned = spark.read.format("delta").load(str(location)).select(F.max(F.unix_millis("src_timestamp"))).first()
    assert timestamp_maximum(location, "src_timestamp") == ColumnMaximum(scanned[0])
    assert scanned[0] % 1000 == 123  # the microseconds were there, and both dropped them
    # a column Delta keeps no statistics on (only the record key and src_timestamp here): the log cannot say
    assert "reason" not in stats_columns(QUARANTINE)
    assert timestamp_maximum(location, "reason") is None
    assert timestamp_maximum(tmp_path / "no-table-here", "src_timestamp") is None


@pytest.mark.spark
def test_one_clusters_rows_are_counted_from_the_log_as_spark_counts_them(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """`radar run`'s checks count the growing silver tables per cluster from the log: files holding only that
    cluster count whole, files of other clusters not at all, as a scan's filter counts; a file holding both, a
    cluster name Delta truncates in its statistics, or a column without statistics leave it to Spark (None)."""
    config = radar_config.with_data_dir(tmp_path)
    ensure_tables(spark, config, [QUARANTINE])
    location = TableCatalog(config).location(QUARANTINE)
    assert location is not None
    assert record_count_where(location, "cluster", "east") == 0  # no file yet
    long_name = "a-cluster-name-longer-than-delta-keeps-in-statistics"
    for cluster, n in (("east", 3), ("west", 2), ("east", 4), (long_name, 1)):
        rows = _quarantine_rows(spark, config, n, first=n * 10).withColumn("cluster", F.lit(cluster))
        rows.coalesce(1).write.format("delta").mode("append").save(str(location))

    def scanned(cluster: str) -> int:
        return spark.read.format("delta").load(str(location)).where(F.col("cluster") == cluster).count()

    assert record_count_where(location, "cluster", "east") == scanned("east") == 7
    assert record_count_where(location, "cluster", "west") == scanned("west") == 2
    assert record_count_where(location, "cluster", "north") == scanned("north") == 0
    assert record_count_where(location, "cluster", long_name) is None  # Delta keeps a 32-character prefix
    assert record_count_where(location, "reason", "bad 1") is None  # no statistics on it
    mixed = _quarantine_rows(spark, config, 2, first=90).withColumn(
        "cluster", F.when(F.col("src_offset") == 90, "east").otherwise("west")
    )
    mixed.coalesce(1).write.format("delta").mode("append").save(str(location))
    assert record_count_where(location, "cluster", "east") is None
    assert record_count_where(tmp_path / "no-table-here", "cluster", "east") is None


@pytest.mark.spark
def test_a_log_is_read_commit_by_commit_only_until_its_first_checkpoint(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """A new detection stream reads a table's commits from version 0 only while they are a few JSON files: once
    Delta wrote a checkpoint (every CHECKPOINT_INTERVAL commits; 3 here, set on the table), the snapshot is the
    cheaper read."""
    config = radar_config.with_data_dir(tmp_path)
    ensure_tables(spark, config, [QUARANTINE])
    location = TableCatalog(config).location(QUARANTINE)
    assert location is not None
    assert not history_without_checkpoint(tmp_path / "no-table-here")
    assert history_without_checkpoint(location)  # version 0: the CREATE
    spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('delta.checkpointInterval' = '3')")
    version = 1
    while not list((location / "_delta_log").glob("*.checkpoint*.parquet")):
        assert history_without_checkpoint(location), version
        _quarantine_rows(spark, config, 1, first=version).write.format("delta").mode("append").save(str(location))
        version += 1
        assert version <= 10, "Delta wrote no checkpoint"
    assert not history_without_checkpoint(location)


@pytest.mark.spark
def test_the_first_append_into_a_new_table_reads_nothing(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """A new table's log says it holds no file: its first append (every replay into a new data dir, the demo's first
    batch) runs the same Spark jobs as any later append above the held offsets, with no read of the table."""
    config = radar_config.with_data_dir(tmp_path)
    ensure_tables(spark, config, [QUARANTINE])
    location = TableCatalog(config).location(QUARANTINE)
    assert location is not None
    # the append's own jobs are counted: not those of Delta's compaction after it (its own test is below)
    spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('{tables.AUTO_COMPACT}' = 'false')")
    context = spark.sparkContext

    def jobs_of_append(batch_id: int, first: int) -> int:
        rows = _quarantine_rows(spark, config, 10, first=first).persist()
        rows.count()  # the rows' own job, outside the count
        ranges = [Row(cluster=config.cluster, src_topic="t", src_partition=0, low=first, high=first + 9)]
        group = f"first-append-{tmp_path.name}-{batch_id}"
        context.setJobGroup(group, "an append above the held offsets")
        try:
            append_new_records(rows, config, QUARANTINE, "run:q", batch_id, ranges=ranges, alone=True)
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)
        rows.unpersist()
        return len(context.statusTracker().getJobIdsForGroup(group))

    first = jobs_of_append(0, 0)
    assert held_offsets_known(location) == {(config.cluster, "t", 0): 9}
    later = jobs_of_append(1, 10)
    assert held_offsets_known(location) == {(config.cluster, "t", 0): 19}
    assert first == later > 0
    assert spark.read.format("delta").load(str(location)).count() == 20


def test_appends_above_the_held_offsets_skip_the_read_and_another_writer_is_noticed(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """A streaming append of new offsets needs no read of the table (what this process appended is known); a
    commit by another writer makes that unknown, and the next append reads the table again: no record twice."""
    config = radar_config.with_data_dir(tmp_path)
    ensure_tables(spark, config, [QUARANTINE])
    location = TableCatalog(config).location(QUARANTINE)
    assert location is not None

    def offsets() -> list[tuple[int, int]]:
        rows = spark.read.format("delta").load(str(location)).where("src_offset IS NOT NULL")
        return sorted((r[0], r[1]) for r in rows.select("src_partition", "src_offset").collect())

    append_new_records(_quarantine_rows(spark, config, 10), config, QUARANTINE, "run:q", 0, alone=True)
    assert held_offsets_known(location) == {(config.cluster, "t", 0): 9}
    append_new_records(_quarantine_rows(spark, config, 10, first=10), config, QUARANTINE, "run:q", 1, alone=True)
    assert held_offsets_known(location) == {(config.cluster, "t", 0): 19}
    # another writer (another process, a replay) commits offsets 20-25 of partition 0 and 0-4 of partition 1
    append_idempotent(_quarantine_rows(spark, config, 6, first=20), config, QUARANTINE, "other:q", 0)
    append_idempotent(_quarantine_rows(spark, config, 5, partition=1), config, QUARANTINE, "other:q", 1)
    assert held_offsets_known(location) is None
    append_new_records(_quarantine_rows(spark, config, 10, first=20), config, QUARANTINE, "run:q", 2, alone=True)
    append_new_records(_quarantine_rows(spark, config, 8, partition=1), config, QUARANTINE, "run:q", 3, alone=True)
    assert offsets() == [(0, i) for i in range(30)] + [(1, i) for i in range(8)]
    assert held_offsets_known(location) == {(config.cluster, "t", 0): 29, (config.cluster, "t", 1): 7}
    # the same batch again (a retry after a crash): every record is held, so nothing is committed at all
    version = log_version(location)
    append_new_records(_quarantine_rows(spark, config, 8, partition=1), config, QUARANTINE, "run:q", 3, alone=True)
    assert log_version(location) == version
    # a batch overlapping what the table holds (a replayed dump under another checkpoint) writes only what is new
    append_new_records(_quarantine_rows(spark, config, 10, first=25), config, QUARANTINE, "replay:q", 0, alone=True)
    assert offsets() == [(0, i) for i in range(35)] + [(1, i) for i in range(8)]
    # a dump line that is no record (no topic, partition or offset) bounds nothing; records after it still append
    line = _quarantine_rows(spark, config, 1).selectExpr(
        *[f"CAST(NULL AS {c.ddl}) AS {c.name}" if c.name in ("src_topic", "src_partition", "src_offset") else c.name
          for c in QUARANTINE.columns]
    )  # fmt: skip
    append_new_records(line, config, QUARANTINE, "replay:q", 1, alone=True)
    append_new_records(_quarantine_rows(spark, config, 2, first=35), config, QUARANTINE, "run:q", 4, alone=True)
    assert offsets() == [(0, i) for i in range(37)] + [(1, i) for i in range(8)]
    assert spark.read.format("delta").load(str(location)).count() == 37 + 8 + 1
    # while another process writes the table (not alone), an overlapping batch is MERGEd on the record key: only
    # what is new is inserted, whatever this process knows
    append_new_records(_quarantine_rows(spark, config, 10, first=30), config, QUARANTINE, "other:q", 2)
    assert offsets() == [(0, i) for i in range(40)] + [(1, i) for i in range(8)]
    assert spark.read.format("delta").load(str(location)).count() == 40 + 8 + 1
    history = spark.sql(f"DESCRIBE HISTORY delta.`{location}` LIMIT 1").first()
    assert history is not None and history["operation"] == "MERGE"


@pytest.mark.spark
def test_a_new_table_writes_no_checkpoint_every_ten_commits(spark, radar_config: RadarConfig, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Delta's default interval made every tenth commit a state reconstruction and a parquet checkpoint in the
    committing thread (every tenth live detection micro-batch); new tables checkpoint every CHECKPOINT_INTERVAL."""
    config = radar_config.with_data_dir(tmp_path / "commits")
    ensure_tables(spark, config, [QUARANTINE])
    for version in range(11):
        append_idempotent(_quarantine_rows(spark, config, 1), config, QUARANTINE, "test:c", version)
    log = TableCatalog(config).location(QUARANTINE) / "_delta_log"
    assert (log / f"{11:020d}.json").is_file()  # the create and eleven appends
    assert not [p.name for p in log.iterdir() if ".checkpoint." in p.name]


@pytest.mark.spark
def test_creating_tables_runs_no_spark_job(spark, radar_config: RadarConfig, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A table's CREATE is one Delta commit and nothing more: Delta 4.4's file list in the checksum made each
    CREATE list the files of the empty table before it with a Spark job (fifteen CREATEs 4.0-4.5 s warm, 2.3-2.8 s
    without it)."""
    tracker = spark.sparkContext.statusTracker()
    before = max(tracker.getJobIdsForGroup(None), default=-1)  # the DDL threads set no job group
    config = radar_config.with_data_dir(tmp_path / "new")
    ensure_tables(spark, config)
    assert [j for j in tracker.getJobIdsForGroup(None) if j > before] == []
    for table in TABLES.values():
        location = TableCatalog(config).location(table)
        assert location is not None and (location / "_delta_log" / f"{0:020d}.json").is_file(), table.name
    # and the tables work: an append after it is read back
    append_idempotent(_quarantine_rows(spark, config, 2), config, QUARANTINE, "test:new", 0)
    assert spark.read.format("delta").load(str(TableCatalog(config).location(QUARANTINE))).count() == 2


@pytest.mark.spark
def test_appended_tables_compact_their_small_files_themselves_and_gold_tables_do_not(  # type: ignore[no-untyped-def]
    spark, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """A run that never stops keeps files per table bounded without an outside `radar maintain`: radar OPTIMIZEs a
    table micro-batches append to after every `storage.compact_after_writes` writes (50 by default; 4 here), and
    Delta's own per-commit auto compaction is off, even on a table created with it on."""
    config = radar_config.with_data_dir(tmp_path / "compacting")
    config = config.model_copy(update={"storage": config.storage.model_copy(update={"compact_after_writes": 4})})
    ensure_tables(spark, config, [QUARANTINE, GROUP_HEALTH])
    catalog = TableCatalog(config)
    for table in (QUARANTINE, GROUP_HEALTH):
        properties = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {catalog.name(table)}").collect()}
        assert tables.AUTO_COMPACT not in properties, table.name
    assert tables.compacts_itself(QUARANTINE) and not tables.compacts_itself(GROUP_HEALTH)
    # a table an earlier radar created with Delta's auto compaction on: the session turns it off
    spark.sql(f"ALTER TABLE {catalog.name(QUARANTINE)} SET TBLPROPERTIES ('{tables.AUTO_COMPACT}' = 'true')")
    for version in range(6):
        rows = _quarantine_rows(spark, config, 1, first=version)
        append_idempotent(rows, config, QUARANTINE, "test:compact", version)
    location = catalog.location(QUARANTINE)
    assert location is not None
    assert len(live_files(location)) <= 3  # six one-row appends, compacted after the fourth
    assert spark.read.format("delta").load(str(location)).count() == 6
    history = spark.sql(f"DESCRIBE HISTORY delta.`{location}`").select("version", "operation").collect()
    operations = [row["operation"] for row in sorted(history, key=lambda row: row["version"])]
    assert operations[-7:] == ["WRITE"] * 4 + ["OPTIMIZE"] + ["WRITE"] * 2, operations  # radar's, never Delta's
    compactions = [row["version"] for row in history if row["operation"] == "OPTIMIZE"]
    # what a writer knew the table held before a compaction it still holds after it; not across an append
    assert rearranged_only(location, compactions[0] - 1, compactions[0])
    assert not rearranged_only(location, 0, max(row["version"] for row in history))
