"""Group events -> per-group trackers on `transformWithState` -> gold rebalances, detections and group health.

The events: in a replay, the silver tables that speak about groups, read as Delta streams; in a live run, the same
rows decoded from the Kafka streams by ingest's own routers (`routed_detector_input`), so a detection does not wait
for an ingest micro-batch and its Delta commits (the clock ticks that move the watermark take that path too). Either
way they are projected onto `DETECTOR_INPUT` and unioned;
one event-time watermark (max event time minus `detect.lateness_ms`) says which events are known. Clock ticks
(`clock_ticks`, written by `radar run` every second) reach the operator under a key that keeps nothing: they move
event time forward while every group is silent, so "nothing happened" rules fire live, and because ticks are data
a replay of the same dump moves time the same way. Each (cluster, group_id) key holds one tracker snapshot in
RocksDB; the tracker decides only on events at or below the watermark, in its own event order, so the output
depends on the events and the final watermark, not on how micro-batches cut them. Gold rows are upserted by their
deterministic ids (MERGEd, or appended when the process knows the table holds none of a batch's ids: `merge_gold`),
never written twice, and an older version of a row never replaces a newer one.

Where the gold MERGEs run: a Delta MERGE rebuilds the table's state, materialises its source and rewrites files
(0.7 s alone on an idle 2-core machine, 5 s under a live run's load, three of them in every detection micro-batch
before this split). Live, the detection query runs none: it appends the first row of each new detection to
`detections`, and every other new version (of `rebalances` and `group_health` rows, and of detections the table
holds) to `detector_output` (blind appends: no table state); the gold query MERGEs them from there on its own, slower
trigger (`detect.gold_trigger_interval`), coalescing many micro-batches into one upsert, and a stop drains it. To
completion (`radar replay`, availableNow) the detection query MERGEs all three itself. Both paths end in the same
gold rows (tested). Live, the two queries also take turns (`pipelines.stages.detection_turn`): a detection micro-batch
runs alone, the gold query's writes in the gaps between detection batches, one at a time, a waiting detection batch
first; a detection batch that ends while writes wait lends the turn to one and returns after it, so the next batch
fixes its offsets after that write, not before.

Provisional detections (live): a tracker decides on the events at or below the watermark only, which trails the
newest event by `lateness_ms` and is computed from the previous micro-batch, so a detection would wait that long
plus a micro-batch or two. Live, each tracker also previews the events ahead of the watermark on a copy of its state
(`GroupTracker.preview`) and shows what they open as `provisional` rows in the same micro-batch; the watermark then
confirms or withdraws each. Upserts rank a provisional row below any decided one, so the decided rows end as a
replay's.

The watermark's end in a replay: the watermark trails the newest event by `detect.lateness_ms`, so at the end of a
dump the events of its last `lateness_ms` would stay buffered (and the deadlines due in that window unevaluated).
Before the replay's detection runs, `seal_replay_time` appends one clock tick (emitter `REPLAY_END_EMITTER`) at
the dump's newest event time + `lateness_ms` to `clock_ticks`: the final watermark then equals the newest event
time, so the replay decides on every event of the dump, exactly as the live stream did once its clock passed
them. The tick is derived from the data alone (deterministic, written once per event time), and a live run's own
ticks move time past it anyway.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle, StreamingQuery
from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues

from rebalance_radar.pipelines.config import OWN_GROUP_PREFIX, RadarConfig
from rebalance_radar.pipelines.runtime.phases import phase
from rebalance_radar.pipelines.stages.broker_settings import learnt_thresholds
from rebalance_radar.pipelines.stages.detection_turn import detection_turn, write_turn
from rebalance_radar.pipelines.stages.streams import (
    RunningQueries,
    Stage,
    Trigger,
    failure_log_of,
    start_query,
    wait_a_while,
)
from rebalance_radar.pipelines.storage.data_dir_locks import writing
from rebalance_radar.pipelines.storage.delta_log import history_without_checkpoint, timestamp_maximum
from rebalance_radar.pipelines.storage.tables import (
    HeldKeys,
    TableCatalog,
    append_rows,
    ensure_tables,
    held_keys,
    log_says_empty,
    merge_retrying_conflicts,
    note_written_keys,
    warm_snapshot,
    write_lock,
)
from rebalance_radar.transforms.schemas import (
    CLOCK_TICKS,
    DECODED_OFFSETS_BATCH,
    DETECTION_STATUS_RANK,
    DETECTIONS,
    DETECTOR_INPUT,
    DETECTOR_MEMBER_TEXTS,
    DETECTOR_OUTPUT,
    EMIT_SEQ_COLUMN,
    GOLD_TABLES,
    GROUP_HEALTH,
    GROUP_LAG,
    GROUP_METADATA,
    GROUP_RECORDS,
    HEARTBEAT_EVENTS,
    OFFSET_COMMITS,
    PARSED_TELEMETRY_BATCH,
    PARTITION_END_OFFSETS,
    REBALANCES,
    ROUTED_SOURCE_COLUMNS,
    STAGED_GOLD_TABLES,
    DetectionStatus,
    RoutedBatch,
    RoutedPayload,
    TableSchema,
    routed_gold_columns,
)

DETECT_QUERY = "radar-detect"
DETECT_FROM_KAFKA = "radar-detect-from-kafka"  # the checkpoint folder of a live run's detection query
GOLD_QUERY = "radar-gold"
# Each silver source of the detectors and the column holding its event time (others use src_timestamp).
DETECTOR_SOURCES: dict[str, str] = {
    OFFSET_COMMITS.name: "src_timestamp",
    GROUP_METADATA.name: "src_timestamp",
    GROUP_RECORDS.name: "src_timestamp",
    HEARTBEAT_EVENTS.name: "event_time",
    CLOCK_TICKS.name: "tick_time",
    PARTITION_END_OFFSETS.name: "polled_at",
}
SOURCE_TABLES: dict[str, TableSchema] = {
    t.name: t
    for t in (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS, HEARTBEAT_EVENTS, CLOCK_TICKS, PARTITION_END_OFFSETS)
}
STATE_DDL = "snapshot BINARY, emitted BIGINT"
# A group's idle-expiry timer is set to a multiple of this (event-time ms): it moves once a minute, not on every
# micro-batch (each registration and deletion is a round trip to the JVM's state server).
TTL_TIMER_STEP_MS = 60_000
KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    REBALANCES.name: ("rebalance_id",),
    DETECTIONS.name: ("detection_id",),
    GROUP_HEALTH.name: ("cluster", "group_id"),
    GROUP_LAG.name: ("cluster", "group_id", "topic", "partition", "measured_at"),
}
DETECTOR_KEY: tuple[str, ...] = ("cluster", "group_id")  # one tracker per key
DETECTOR_TIME = "detector_time_ms"  # a row's event time (else src_timestamp) in epoch ms (`packed_detector_input`)
DETECTOR_ROW = "detector_row"  # the rest of a `DETECTOR_INPUT` row, as one JSON text (`packed_detector_input`)


# --- the input view -------------------------------------------------------------------------------------------


def _projected(table: TableSchema, column_of: Callable[[str], SparkColumn | None]) -> list[SparkColumn]:
    """`DETECTOR_INPUT`'s column values (cast, not named) for rows of `table`, where `column_of(name)` is the
    expression of a column the rows have (None: they do not)."""
    columns: list[SparkColumn] = []
    for column in DETECTOR_INPUT.columns:
        if column.name == "src_table":
            value = F.lit(table.name)
        elif column.name == "event_time":
            value = column_of(DETECTOR_SOURCES[table.name])
        else:
            value = column_of(column.name)
        columns.append((F.lit(None) if value is None else value).cast(column.ddl))
    return columns


def detector_input_projection(rows: DataFrame, table: TableSchema) -> DataFrame:
    """Rows of one silver table as `DETECTOR_INPUT` rows: its own columns where it has them, null elsewhere."""
    if table.name not in DETECTOR_SOURCES:
        raise ValueError(f"{table.name} is not a detector source; expected one of {sorted(DETECTOR_SOURCES)}")
    present = set(table.column_names)
    values = _projected(table, lambda name: F.col(name) if name in present else None)
    return rows.select(
        *(value.alias(column.name) for value, column in zip(values, DETECTOR_INPUT.columns, strict=True))
    )


def routed_detector_input(routed: DataFrame, config: RadarConfig, contract: RoutedBatch) -> DataFrame:
    """The rows of a routed batch (ingest's `mapInArrow` output, before it is split into silver tables) that a
    detector source table would receive, as `DETECTOR_INPUT` rows: the same values `detector_input_projection`
    gives for those silver rows (tested), in one pass over the batch (a union of per-table selects would decode
    it once per table)."""
    source = {c.name for c in ROUTED_SOURCE_COLUMNS}
    payloads = [p for p in contract.payloads if p.table.name in DETECTOR_SOURCES]
    per_table: list[tuple[SparkColumn, list[SparkColumn]]] = []
    for payload in payloads:
        fields = set(payload.field_names)

        def column_of(name: str, payload: RoutedPayload = payload, fields: set[str] = fields) -> SparkColumn | None:
            if name == "cluster":
                return F.lit(config.cluster)
            if name in source:
                return F.col(name)
            return F.col(f"{payload.column}.{name}") if name in fields else None

        per_table.append((F.col("target") == F.lit(payload.table.name), _projected(payload.table, column_of)))
    columns: list[SparkColumn] = []
    for index, column in enumerate(DETECTOR_INPUT.columns):
        chosen: SparkColumn | None = None
        for condition, projected in per_table:
            value = projected[index]
            chosen = F.when(condition, value) if chosen is None else chosen.when(condition, value)
        assert chosen is not None, "a routed batch without detector payloads"
        columns.append(chosen.alias(column.name))
    return routed.where(F.col("target").isin(*(p.table.name for p in payloads))).select(*columns)


@dataclass(frozen=True)
class KafkaDetectorSources:
    """The Kafka streams of a live run (`pipelines.stages.sources.kafka_stream`, as the ingest stage reads them): the
    detection query decodes them itself instead of waiting for silver (see the module docstring)."""

    offsets: DataFrame
    telemetry: DataFrame


def detector_input_from_kafka(config: RadarConfig, sources: KafkaDetectorSources) -> DataFrame:
    """`DETECTOR_INPUT` rows straight from the Kafka streams, decoded and parsed by ingest's own routers."""
    from rebalance_radar.pipelines.stages.ingest import parse_telemetry, route_offsets

    offsets = route_offsets(sources.offsets.where(F.col("topic") == config.kafka.offsets_topic), spread=False)
    telemetry_topics = list(config.kafka.telemetry_topics)
    telemetry = parse_telemetry(sources.telemetry.where(F.col("topic").isin(*telemetry_topics)), spread=False)
    return routed_detector_input(offsets, config, DECODED_OFFSETS_BATCH).unionByName(
        routed_detector_input(telemetry, config, PARSED_TELEMETRY_BATCH)
    )


def _read_source(spark: SparkSession, config: RadarConfig, table: TableSchema, streaming: bool) -> DataFrame:
    """A detector source, as a Delta stream or a batch read. A new stream on a local table whose log is still a few
    commits from version 0 with no checkpoint (a replay into a new data dir) reads those commits (`startingVersion`)
    instead of reconstructing a snapshot first: the same rows for these append-only tables (OPTIMIZE's rewrites
    carry no data change and are skipped either way), without the Spark jobs of five state reconstructions (~4 s of
    a short replay in a cold JVM). A longer log keeps the snapshot (thousands of commits would be slower to read one
    by one); a resumed stream follows its checkpoint whatever the option says."""
    catalog = TableCatalog(config)
    location = catalog.location(table)
    reader = spark.readStream if streaming else spark.read
    if location is None:
        return reader.table(catalog.name(table))
    if streaming and history_without_checkpoint(location):
        reader = reader.option("startingVersion", "0")
    return reader.format("delta").load(str(location))


def detector_input(spark: SparkSession, config: RadarConfig, *, streaming: bool = True) -> DataFrame:
    """The union of every detector source as `DETECTOR_INPUT` (a Delta stream, or a batch read of the tables).

    The sources are read and projected side by side: each reads its table's log and is analysed in the JVM, ~1 s
    for the five one after the other at a replay's detection."""

    def projected(table: TableSchema) -> DataFrame:
        return detector_input_projection(_read_source(spark, config, table, streaming), table)

    tables = [SOURCE_TABLES[name] for name in DETECTOR_SOURCES]
    with ThreadPoolExecutor(max_workers=len(tables), thread_name_prefix="radar-detector-source") as pool:
        frames = list(pool.map(projected, tables))
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union


# --- the routed output shape ------------------------------------------------------------------------------------

ROUTED_OUTPUT_COLUMNS = routed_gold_columns(GOLD_TABLES.values())
ROUTED_OUTPUT_DDL = ", ".join(f"`{c.name}` {c.ddl}" for c in ROUTED_OUTPUT_COLUMNS)


# --- the tracker binding ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrackerBinding:
    """Which per-group rules the operator runs: `transforms.detectors` in production; tests of the Spark mechanics
    bind a minimal implementation of the same contract, so a failure there is a pipeline failure, not a rule's."""

    tracker: Any  # a class with GroupTracker's constructor, restore, snapshot, accept_packed, advance_to, ...
    thresholds: type  # a frozen dataclass of thresholds, every field with a default


def default_binding() -> TrackerBinding:
    """The real tracker of `transforms.detectors` (imported only when a detection query starts)."""
    from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
    from rebalance_radar.transforms.detectors.tracker import GroupTracker

    return TrackerBinding(GroupTracker, DetectorThresholds)


# --- the stateful processor -------------------------------------------------------------------------------------


def _or_none(text: SparkColumn) -> SparkColumn:
    """What Python's `str` makes of a missing value, which is what `group_events` makes of one."""
    return F.coalesce(text, F.lit("None"))


def packed_member(member: SparkColumn) -> SparkColumn:
    """A `members` struct shaped as `DETECTOR_MEMBER_TEXTS` says, exactly as `group_events` converts the whole struct:
    an assignment entry without partitions adds none, a missing topic or partition reads "None", and texts sort by
    code point (Spark compares UTF-8 bytes, which orders them the same way). The tracker then reads a member from
    three lists: a GroupMetadata row of ten members (two topics each) converts in 41 us instead of 97 us."""
    texts = F.array(*(member[name].cast("string") for name in DETECTOR_MEMBER_TEXTS))
    partitions = F.array_sort(
        F.flatten(
            F.transform(
                member["assigned_partitions"],
                lambda entry: F.coalesce(
                    F.transform(
                        entry["partitions"],
                        lambda p: F.concat(_or_none(entry["topic"]), F.lit("-"), _or_none(p.cast("string"))),
                    ),
                    F.array().cast("array<string>"),
                ),
            )
        )
    )
    subscribed = F.array_sort(F.transform(member["subscribed_topics"], _or_none))
    return F.struct(texts.alias("f"), partitions.alias("p"), subscribed.alias("s"))


def packed_detector_input(rows: DataFrame) -> DataFrame:
    """`DETECTOR_INPUT` rows as their key, their event time in epoch ms (`DETECTOR_TIME`: `event_time`, else
    `src_timestamp`, as the events take it) and one JSON text of everything else (`DETECTOR_ROW`), which is what the
    trackers' operator receives (`GroupTracker.accept_packed`). pyspark hands `transformWithState` its input one
    Arrow cell at a time (an `as_py` a cell, its `TransformWithStateInPySparkRowSerializer`): 35 cells a row cost
    more than the rules they feed (42 % of a large replay's detection CPU), and one text a row is parsed in C
    (`json.loads`), only when the watermark reaches the row. Timestamps go as epoch milliseconds (what the tracker
    keeps, exact whatever the worker's time zone), members as the tracker reads them, with only the fields the
    detectors read (`packed_member`); null fields are left out, an empty array is kept (a group with no members is
    not a record without a member list)."""
    fields: list[SparkColumn] = []
    for column in DETECTOR_INPUT.columns:
        if column.name in DETECTOR_KEY:
            continue
        value = F.col(column.name)
        if column.ddl == "TIMESTAMP":
            value = F.unix_millis(value)
        elif column.name == "members":
            value = F.transform(value, packed_member)
        fields.append(value.alias(column.name))
    packed = F.to_json(F.struct(*fields), {"ignoreNullFields": "true"})
    time_ms = F.coalesce(F.unix_millis("event_time"), F.unix_millis("src_timestamp"))
    return rows.select(*DETECTOR_KEY, time_ms.alias(DETECTOR_TIME), packed.alias(DETECTOR_ROW))


class GroupTrackerProcessor(StatefulProcessor):
    """One tracker per (cluster, group_id): restore, accept the batch's events, advance to the watermark, emit,
    snapshot, and wake up again (event-time timer) when the tracker says something could become due."""

    def __init__(self, binding: TrackerBinding, thresholds: Any, state_ttl_ms: int, *, preview: bool = False) -> None:
        self._binding = binding
        self._thresholds = thresholds
        self._state_ttl_ms = state_ttl_ms
        self._preview = preview  # live: show what the events ahead of the watermark say (`GroupTracker.preview`)
        self._names = tuple(c.name for c in ROUTED_OUTPUT_COLUMNS)
        self._row = Row(*self._names)

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        # No ttlDurationMs: Spark refuses state TTL in EventTime mode (STATEFUL_PROCESSOR_INCORRECT_TIME_MODE_TO_
        # ASSIGN_TTL); idle groups expire in event time instead (see `_advance`).
        self._state = handle.getValueState("tracker", STATE_DDL)

    def _load(self, cluster: str, group_id: str) -> tuple[Any, int] | None:
        """The group's stored tracker and emit count; None when it has none. Every state call is a round trip to
        the JVM's state server (milliseconds each on 2 busy cores), so `get` alone answers (None: no value)."""
        stored = self._state.get()
        if stored is None:
            return None
        return self._binding.tracker.restore(bytes(stored[0]), self._thresholds), int(stored[1])

    # Spark calls these by name, with these keyword names: pyspark's spelling, not ours.
    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues: TimerValues) -> Iterator[Row]:  # noqa: N802, N803
        cluster, group_id = key
        if group_id is None:  # the clock's key: its rows only moved the watermark; no state, no output
            for _ in rows:
                pass
            return
        loaded = self._load(cluster, group_id)
        if loaded is None:
            loaded = self._binding.tracker(cluster, group_id, self._thresholds), 0
        tracker, emitted = loaded
        # converted to events when the watermark reaches them; a row with no time says nothing (`group_events`)
        at = len(DETECTOR_KEY)  # the time, then the text (`packed_detector_input`); by position: a name is slower
        tracker.accept_packed((row[at], row[at + 1]) for row in rows if row[at] is not None)
        yield from self._advance(tracker, emitted, timerValues.getCurrentWatermarkInMs(), preview=self._preview)

    def handleExpiredTimer(  # noqa: N802
        self,
        key: Any,
        timerValues: TimerValues,  # noqa: N803
        expiredTimerInfo: ExpiredTimerInfo,  # noqa: N803
    ) -> Iterator[Row]:
        cluster, group_id = key
        loaded = self._load(cluster, group_id)
        if loaded is None:
            return
        tracker, emitted = loaded
        yield from self._advance(tracker, emitted, timerValues.getCurrentWatermarkInMs())

    def _advance(self, tracker: Any, emitted: int, watermark_ms: int, *, preview: bool = False) -> Iterator[Row]:
        output = tracker.advance_to(watermark_ms) if watermark_ms > 0 else None
        routed: list[tuple[str, Mapping[str, Any]]] = []
        if output is not None:
            routed = [(REBALANCES.name, row) for row in output.rebalances]
            routed += [(DETECTIONS.name, row) for row in output.detections]
            if output.health is not None:
                routed.append((GROUP_HEALTH.name, output.health))
            routed += [(GROUP_LAG.name, row) for row in output.lag]
        if preview:  # after the confirmations: a preview never re-shows an id the ordered events hold
            routed += [(DETECTIONS.name, row) for row in tracker.preview()]
        for target, values in routed:
            emitted += 1
            yield self._routed_row(target, emitted, values)
        # expired timers (the one firing now) are Spark's to remove; the others are kept where still wanted
        registered = {timer for timer in self._handle.listTimers() if timer > watermark_ms}
        wanted: set[int] = set()
        expired = watermark_ms > 0 and tracker.is_expired(watermark_ms)
        if not expired:
            self._state.update((tracker.snapshot(), emitted))
            wakeup = tracker.next_wakeup()
            if wakeup is not None:
                wanted.add(max(int(wakeup), watermark_ms + 1))
            # The state's TTL, in event time: wake up `state_ttl_ms` after this activity (rounded up to
            # `TTL_TIMER_STEP_MS`, so that most micro-batches keep the timer they have instead of replacing it) and
            # let the tracker say whether the group is idle (`is_expired`); a group with an open detection stays.
            # (Before the first watermark there is no event time yet; the wakeup brings the group back once there
            # is.)
            if watermark_ms > 0:
                wanted.add(-(-(watermark_ms + self._state_ttl_ms) // TTL_TIMER_STEP_MS) * TTL_TIMER_STEP_MS)
        for timer in registered - wanted:
            self._handle.deleteTimer(timer)
        for timer in wanted - registered:
            self._handle.registerTimer(timer)
        if expired:
            self._state.clear()

    def _routed_row(self, target: str, seq: int, values: Mapping[str, Any]) -> Row:
        full = {"target": target, "emit_seq": seq, **values}
        return self._row(*(full.get(name) for name in self._names))

    def close(self) -> None:
        pass


# --- the sink: MERGE by deterministic id, newer versions only --------------------------------------------------


def _version(table: TableSchema, side: str) -> list[SparkColumn]:
    """What orders two versions of one gold row: event-time columns (so live and replay agree), after a detection's
    status rank (`DETECTION_STATUS_RANK`: a provisional row never replaces a decided one)."""

    def col(name: str) -> SparkColumn:
        return F.col(f"{side}.{name}") if side else F.col(name)

    if table is DETECTIONS:
        rank = F.lit(None).cast("int")
        for status, value in DETECTION_STATUS_RANK.items():
            rank = F.when(col("status") == F.lit(str(status)), F.lit(value)).otherwise(rank)
        resolved = (col("status") == F.lit(str(DetectionStatus.RESOLVED))).cast("int")
        return [rank, col("last_seen"), resolved, col("resolved_at")]
    if table is REBALANCES:
        return [col("stabilized_at").isNotNull().cast("int"), F.coalesce(col("duration_ms"), F.lit(-1))]
    if table is GROUP_LAG:  # one row per poll: its versions are equal
        return [col("measured_at")]
    return [col("last_event_at")]


def _not_older(table: TableSchema) -> str:
    """SQL condition: the source row (s) is not an older version than the stored one (t)."""

    def sql(side: str) -> list[str]:
        if table is DETECTIONS:
            ranks = " ".join(f"WHEN '{status}' THEN {value}" for status, value in DETECTION_STATUS_RANK.items())
            return [
                f"CASE {side}.status {ranks} END",
                f"{side}.last_seen",
                f"CAST({side}.status = '{DetectionStatus.RESOLVED}' AS INT)",
                f"coalesce({side}.resolved_at, TIMESTAMP'1970-01-01')",
            ]
        if table is REBALANCES:
            return [f"CAST({side}.stabilized_at IS NOT NULL AS INT)", f"coalesce({side}.duration_ms, -1)"]
        if table is GROUP_LAG:
            return [f"{side}.measured_at"]
        return [f"{side}.last_event_at"]

    return f"named_struct({_pairs(sql('s'))}) >= named_struct({_pairs(sql('t'))})"


def _pairs(expressions: list[str]) -> str:
    return ", ".join(f"'v{i}', {expr}" for i, expr in enumerate(expressions))


def latest_per_key(rows: DataFrame, table: TableSchema) -> DataFrame:
    """One row per key: the newest version (event-time order, then the order the tracker emitted them)."""
    keys = KEY_COLUMNS[table.name]
    order = [c.desc_nulls_last() for c in _version(table, "")] + [F.col(EMIT_SEQ_COLUMN.name).desc()]
    window = Window.partitionBy(*keys).orderBy(*order)
    return rows.withColumn("_rank", F.row_number().over(window)).where("_rank = 1").drop("_rank")


def _merge_into(source: DataFrame, config: RadarConfig, table: TableSchema) -> None:
    """MERGE `source` (one row per key) into `table`: insert new ids, update known ids unless the stored version is
    newer."""
    from delta.tables import DeltaTable

    spark = source.sparkSession
    catalog = TableCatalog(config)
    location = catalog.location(table)
    target = (
        DeltaTable.forName(spark, catalog.name(table)) if location is None else DeltaTable.forPath(spark, str(location))
    )
    on = " AND ".join(f"t.{key} = s.{key}" for key in KEY_COLUMNS[table.name])
    (
        target.alias("t")
        .merge(source.alias("s"), on)
        .whenMatchedUpdateAll(condition=_not_older(table))
        .whenNotMatchedInsertAll()
        .execute()
    )


def merge_gold(
    rows: DataFrame,
    config: RadarConfig,
    table: TableSchema,
    *,
    turn: Callable[[], AbstractContextManager[None]] = nullcontext,
    alone: bool = False,
) -> None:
    """Upsert one table's rows of a batch (the newest version per key, `_merge_into`).

    Every gold table has one MERGE writer (the detection query, or live the gold query; live, the detection query
    only appends a detection's first row, `split_detections`): when this process knows a local table's ids
    (`tables.held_keys`) and none of the batch's is among them, the rows are inserted with a plain append instead of
    a MERGE, the cheap path for a replay into new tables (an empty table's ids are known without a read). A batch
    redone after a crash runs in a new process, which reads the ids first and finds its rows there: it MERGEs.
    Tables in a catalog (Databricks), and tables another process writes meanwhile (not `alone`,
    `data_dir_locks.writing`: what this process knows may be stale by its commit), are always MERGEd.

    `turn` is held for the write alone (the gold query's `write_turn`): the reads before it (the batch's newest
    versions and their keys, the ids the table holds, the table's file list, `tables.warm_snapshot`) run beside
    live detection batches instead of holding them up."""
    location = TableCatalog(config).location(table)
    source = latest_per_key(rows, table).select(*table.column_names)
    if location is None or not alone:
        with turn():
            merge_retrying_conflicts(partial(_merge_into, source, config, table))
        return
    keys = KEY_COLUMNS[table.name]
    source = source.persist()  # read for its keys, then written
    try:
        batch_keys = [tuple(r) for r in source.select(*keys).collect()]
        held = held_keys(rows.sparkSession, location, keys)
        if held is not None and not held.keys.intersection(batch_keys):
            with turn():
                append_rows(source, config, table)
        else:
            warm_snapshot(rows.sparkSession, location)
            with turn():
                _merge_retrying_collisions(source, config, table, location)
        note_written_keys(location, held, batch_keys)
    finally:
        source.unpersist()


OPTIMISTIC_MERGE_ATTEMPTS = 3
"""MERGE attempts without `write_lock` before one holding it (`_merge_retrying_collisions`)."""


def _merge_retrying_collisions(source: DataFrame, config: RadarConfig, table: TableSchema, location: Path) -> None:
    """MERGE; if another writer appended to the table meanwhile (Delta OSS runs every transaction at Serializable
    isolation, so the MERGE fails with ConcurrentAppendException), MERGE again,
    up to `OPTIMISTIC_MERGE_ATTEMPTS` times without the lock, then once holding `write_lock`, which those appends
    take. A failed attempt committed nothing. The appender is a new detection's first row: it waits only for a MERGE
    that collided three times, not for the retry of every collision (a live run's retry under the lock held a new
    detection's append 4.7 s, its latency 7.3 s), and the MERGE cannot be starved by appends. Within one live
    process the detection query's appends and the gold query's MERGEs no longer overlap (`detection_turn`); this
    is for any other writer of the table."""
    from delta.exceptions import ConcurrentAppendException

    for _ in range(OPTIMISTIC_MERGE_ATTEMPTS):
        try:
            _merge_into(source, config, table)
            return
        except ConcurrentAppendException:
            continue
    with write_lock(location):  # no appender of this process now; another process's commit is retried
        merge_retrying_conflicts(partial(_merge_into, source, config, table))


@dataclass(frozen=True)
class DetectionSplit:
    """A live batch's `detections` rows, newest version per id: those of ids the table holds none of (`new`,
    appended now) and those of ids it holds (`held`, staged for the gold query's MERGE)."""

    new: DataFrame | None
    held: DataFrame | None
    new_keys: tuple[tuple[object, ...], ...]
    known: HeldKeys
    latest: DataFrame  # persisted; `release()` it after the writes

    def append_new(self, config: RadarConfig, location: Path) -> None:
        """The first rows of new detections, straight into `detections` (a blind append: no MERGE, no table state),
        never while a MERGE retries after colliding with one (`write_lock`, `_merge_retrying_collisions`). A MERGE
        since `known` was read makes what the table holds unknown again (`note_written_keys`); its ids stay
        held (no writer deletes a detection)."""
        assert self.new is not None
        with write_lock(location):
            append_rows(self.new.select(*DETECTIONS.column_names).coalesce(1), config, DETECTIONS)
            note_written_keys(location, self.known, self.new_keys)

    def release(self) -> None:
        self.latest.unpersist()


def split_detections(rows: DataFrame, config: RadarConfig, location: Path) -> DetectionSplit | None:
    """Live: which detection rows are first rows (appended to `detections` in this micro-batch, so a detection is
    queryable at once) and which update a row the table holds (staged to `detector_output`; the gold query MERGEs
    them on its own trigger; the two writers take turns, `detection_turn`). None when the table's ids cannot be
    known (it is missing)."""
    latest = latest_per_key(rows, DETECTIONS).persist()
    ids = [row["detection_id"] for row in latest.select("detection_id").collect()]
    known = held_keys(rows.sparkSession, location, KEY_COLUMNS[DETECTIONS.name])
    if known is None:
        latest.unpersist()
        return None
    new_ids = [i for i in ids if (i,) not in known.keys]
    held_ids = [i for i in ids if (i,) in known.keys]
    return DetectionSplit(
        new=latest.where(F.col("detection_id").isin(*new_ids)) if new_ids else None,
        held=latest.where(F.col("detection_id").isin(*held_ids)) if held_ids else None,
        new_keys=tuple((i,) for i in new_ids),
        known=known,
        latest=latest,
    )


def append_staged(rows: DataFrame, config: RadarConfig) -> None:
    """Append routed rows to `detector_output` (a blind Delta append: no table state is read, unlike a MERGE's, so
    it costs a fraction of one; see `transforms.schemas.DETECTOR_OUTPUT`). A live micro-batch stages a few rows
    per group: one task writes them to one file (one per partition of the batch was a task and a file each)."""
    given = {"staged_at": F.current_timestamp()}
    staged = rows.select(*(given.get(c.name, F.col(c.name)).cast(c.ddl).alias(c.name) for c in DETECTOR_OUTPUT.columns))
    append_rows(staged.coalesce(1), config, DETECTOR_OUTPUT)


def gold_batch_writer(config: RadarConfig, *, staged: bool = False) -> Callable[[DataFrame, int], None]:
    """The foreachBatch body: upsert the batch's rows into the gold tables they name (new ids appended, see
    `merge_gold`; tables with no rows are skipped). `staged` (live): append the first rows of new detections to
    `detections` (`split_detections`), and the versions of the staged gold tables (`STAGED_GOLD_TABLES`) and of
    detections the table already holds to `detector_output`, for the gold query (`start_gold_query`) to MERGE off
    this query's path: a live detection micro-batch runs no MERGE."""
    staged_names = {table.name for table in STAGED_GOLD_TABLES}

    tables_dir = TableCatalog(config).tables_dir

    def write(batch: DataFrame, batch_id: int) -> None:
        if staged:
            # the live detection batch runs alone among this process's writes; other writes wait for its end
            with detection_turn(), writing(tables_dir) as alone:
                write_batch(batch, alone)
        else:
            with writing(tables_dir) as alone:
                write_batch(batch, alone)

    def write_batch(batch: DataFrame, alone: bool) -> None:
        batch.persist()
        split: DetectionSplit | None = None
        try:
            present = {row["target"] for row in batch.select("target").distinct().collect()}
            to_stage: list[DataFrame] = []
            if staged and present & staged_names:
                to_stage.append(batch.where(F.col("target").isin(*staged_names)))
            location = TableCatalog(config).location(DETECTIONS)
            # a first row appended blindly only while no other process writes `detections`; otherwise MERGEd
            if staged and alone and DETECTIONS.name in present and location is not None:
                split = split_detections(batch.where(F.col("target") == DETECTIONS.name), config, location)
            merged = [
                t
                for t in GOLD_TABLES.values()
                if t.name in present
                and not (staged and (t.name in staged_names or (t is DETECTIONS and split is not None)))
            ]
            # the gold query (or a replay's detection query) writes between live detection batches: each write
            # takes the turn for its write alone (`merge_gold`); a live detection batch holds it already
            turn = nullcontext if staged else write_turn
            writes: list[Callable[[], None]] = [
                partial(merge_gold, batch.where(F.col("target") == table.name), config, table, turn=turn, alone=alone)
                for table in merged
            ]
            if split is not None and split.new is not None:
                assert location is not None
                writes.append(partial(split.append_new, config, location))
            if split is not None and split.held is not None:
                to_stage.append(split.held)
            if to_stage:
                union = to_stage[0]
                for more in to_stage[1:]:
                    union = union.unionByName(more)
                writes.append(partial(append_staged, union, config))
            if not writes:
                return
            # concurrently: each write is mostly driver-side latency (as `TableWriter`'s appends)
            with ThreadPoolExecutor(max_workers=len(writes), thread_name_prefix="radar-gold") as pool:
                done = [pool.submit(write_one) for write_one in writes]
            for future in done:
                future.result()
        finally:
            if split is not None:
                split.release()
            batch.unpersist()

    return write


# --- the queries -------------------------------------------------------------------------------------------------


def users_groups(input_rows: DataFrame, config: RadarConfig) -> DataFrame:
    """The rows of the users' groups and the clock's (group_id null): radar's own source consumers
    (`OWN_GROUP_PREFIX`) are left out unless `detect.include_own_groups`."""
    if config.detect.include_own_groups:
        return input_rows
    group = F.col("group_id")
    return input_rows.where(group.isNull() | ~group.startswith(OWN_GROUP_PREFIX))


def tracked_groups(
    input_rows: DataFrame,
    config: RadarConfig,
    binding: TrackerBinding,
    *,
    preview: bool = False,
    learnt: Mapping[str, Any] | None = None,
) -> DataFrame:
    """Watermark on event time, then one tracker per group (`preview`: each also shows the detections of the events
    ahead of the watermark as provisional rows, `GroupTracker.preview`).

    Clock ticks (group_id null) are not filtered out here: Spark pushes a filter that does not read the event-time
    column below `withWatermark`, so the ticks would never reach the watermark (seen: it stayed at the last group
    event while ticks streamed in). They go to the operator under the key (cluster, null), which keeps no state.
    `learnt`: threshold values read from the cluster before the start (`pipelines.stages.broker_settings`).
    """
    thresholds = binding.thresholds(**config.detect.threshold_overrides(), **(learnt or {}))  # validated at load
    processor = GroupTrackerProcessor(binding, thresholds, config.detect.state_ttl_ms, preview=preview)
    input_rows = users_groups(input_rows, config)
    return (
        packed_detector_input(input_rows.withWatermark("event_time", f"{config.detect.lateness_ms} milliseconds"))
        .groupBy(*DETECTOR_KEY)
        .transformWithState(
            statefulProcessor=processor,
            outputStructType=ROUTED_OUTPUT_DDL,
            outputMode="Append",
            timeMode="EventTime",
        )
    )


def start_gold_query(
    spark: SparkSession, config: RadarConfig, checkpoint_name: str, trigger: Trigger
) -> StreamingQuery:
    """`detector_output` (a Delta stream) -> MERGE into `rebalances` and `group_health`, then `incidents` refreshed
    (`pipelines.stages.incidents`). Rows `radar maintain` deletes are skipped, not replayed (`skipChangeCommits`)."""
    catalog = TableCatalog(config)
    location = catalog.location(DETECTOR_OUTPUT)
    reader = spark.readStream.option("skipChangeCommits", "true")
    rows = (
        reader.table(catalog.name(DETECTOR_OUTPUT)) if location is None else reader.format("delta").load(str(location))
    )
    from rebalance_radar.pipelines.stages.incidents import incident_refreshing

    return start_query(
        rows,
        f"{GOLD_QUERY}-{checkpoint_name}",
        config.checkpoint_dir / checkpoint_name / GOLD_QUERY,
        incident_refreshing(gold_batch_writer(config), config),  # cross-group incidents from the rows it MERGEd
        trigger,
    )


DRAIN_BOUND_S = 10.0
"""How long a stopping run lets the gold query MERGE what is staged (`DetectStage.drain_staged`)."""


class DetectStage(Stage):
    """The detection as a stage of a run: its input (`kafka`: the run's Kafka streams, decoded here; else the silver
    Delta streams) -> trackers -> gold.

    Live (processing-time trigger) it is two queries: the detection query MERGEs `detections` and appends the other
    gold rows to `detector_output`, and the gold query MERGEs those on its own, slower trigger
    (`detect.gold_trigger_interval`), so a detection never waits for history and health upserts. Stopping drains
    `detector_output` (the gold query once more, to completion). To completion (availableNow, `radar replay`) it is
    the detection query alone, MERGEing every gold table itself: nothing waits on it, and the gold tables end equal.
    """

    name = "detect"

    def __init__(
        self,
        spark: SparkSession,
        config: RadarConfig,
        *,
        checkpoint_name: str = "detect",
        available_now: bool = False,
        binding: TrackerBinding | None = None,
        kafka: KafkaDetectorSources | None = None,
        cluster: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.spark, self.config, self.checkpoint_name = spark, config, checkpoint_name
        self.trigger = Trigger(available_now, config.detect.trigger_interval)
        self.binding = binding
        self.kafka = kafka
        self.cluster = cluster  # the client settings of the cluster read live: it is asked its group session timeouts
        self._drained = False

    @property
    def staged(self) -> bool:
        return not self.trigger.available_now

    def stream(self) -> tuple[Path, str]:
        return self.config.checkpoint_dir, self.checkpoint_name

    def start_queries(self) -> RunningQueries:
        tables = [*SOURCE_TABLES.values(), *GOLD_TABLES.values(), *([DETECTOR_OUTPUT] if self.staged else [])]
        with phase("detect tables"):
            ensure_tables(self.spark, self.config, tables)
        events = (
            detector_input(self.spark, self.config)
            if self.kafka is None
            else detector_input_from_kafka(self.config, self.kafka)
        )
        preview = self.staged and self.config.detect.provisional_detections
        with phase("broker group settings"):
            learnt = learnt_thresholds(self.spark, self.config, self.cluster)
        binding = self.binding or default_binding()
        tracked = tracked_groups(events, self.config, binding, preview=preview, learnt=learnt)
        query = start_query(
            tracked,
            f"{DETECT_QUERY}-{self.checkpoint_name}",
            # its own folder per input: a checkpoint of Delta sources cannot resume as one of Kafka sources (an
            # existing data dir from before live detection read Kafka starts this one afresh; gold upserts are
            # idempotent)
            self.config.checkpoint_dir
            / self.checkpoint_name
            / (DETECT_QUERY if self.kafka is None else DETECT_FROM_KAFKA),
            gold_batch_writer(self.config, staged=self.staged),
            self.trigger,
        )
        if not self.staged:
            return RunningQueries((query,), failure_log_of(self.config))
        gold_trigger = Trigger(False, self.config.detect.gold_trigger_interval)
        gold = start_gold_query(self.spark, self.config, self.checkpoint_name, gold_trigger)
        return RunningQueries((query, gold), failure_log_of(self.config))

    @property
    def detection_query(self) -> StreamingQuery:
        """The query that MERGEs `detections` (the first of the stage's queries)."""
        return self.queries.all[0]

    def stop(self) -> None:
        if self._queries is not None:
            self._queries.stop()
        if self.staged and self._queries is not None and not self._drained:
            self.drain_staged()
            self._drained = True  # stopped queries stage nothing more: a second stop has nothing to drain
        super().stop()  # the stream's lock last: the drain writes its checkpoint

    def drain_staged(self) -> None:
        """MERGE what `detector_output` still holds for the gold query (availableNow on its checkpoint): a stopped
        run leaves `rebalances` and `group_health` complete. A drain that takes longer than `DRAIN_BOUND_S` is
        stopped (a stop must end within its bound), and a failure is raised as a sentence: either way the next
        start's gold query MERGEs what is left."""
        with phase("drain detector_output"):
            drain = start_gold_query(self.spark, self.config, self.checkpoint_name, Trigger(True))
            running = RunningQueries((drain,), failure_log_of(self.config))
            deadline = time.monotonic() + DRAIN_BOUND_S
            while drain.isActive and time.monotonic() < deadline:
                wait_a_while(drain, 1.0)
            if drain.isActive:
                running.stop_within_bound()
                print(
                    f"radar: the gold tables' last updates take longer than {DRAIN_BOUND_S:.0f} s to write; the next "
                    "start writes them",
                    file=sys.stderr,
                )
                return
            running.raise_failures()


def start_detect(
    spark: SparkSession,
    config: RadarConfig,
    *,
    checkpoint_name: str = "detect",
    available_now: bool = False,
    binding: TrackerBinding | None = None,
) -> DetectStage:
    """Start the detection stage alone (outside a run's stages); returns the started stage (`stop()` it)."""
    stage = DetectStage(spark, config, checkpoint_name=checkpoint_name, available_now=available_now, binding=binding)
    stage.start()
    return stage


# --- the end of a replay's time ----------------------------------------------------------------------------------

REPLAY_END_EMITTER = "radar-replay@end-of-dump"
"""`clock_ticks.emitter` of the tick `seal_replay_time` writes (see the module docstring)."""


def newest_event_ms(spark: SparkSession, config: RadarConfig) -> int | None:
    """The newest event time over every detector source (earlier end-of-dump ticks excluded), epoch ms.

    Local tables answer from their files' statistics in the Delta log (`delta_log.timestamp_maximum`, no Spark job:
    the scans cost ~4 s of a short replay in a cold JVM); the sources the log cannot answer exactly (no statistics
    on the column, a table on Databricks, `clock_ticks` holding rows, whose end-of-dump ticks a statistic cannot
    leave out) are read by one Spark job over the union of their maxima."""
    catalog = TableCatalog(config)
    newest: list[int] = []
    maxima: DataFrame | None = None
    for name, time_column in DETECTOR_SOURCES.items():
        location = catalog.location(SOURCE_TABLES[name])
        from_log = None if location is None else timestamp_maximum(location, time_column)
        if from_log is not None and (name != CLOCK_TICKS.name or from_log.ms is None):
            if from_log.ms is not None:
                newest.append(from_log.ms)
            continue
        rows = _read_source(spark, config, SOURCE_TABLES[name], streaming=False)
        if name == CLOCK_TICKS.name:
            rows = rows.where(F.col("emitter").isNull() | (F.col("emitter") != F.lit(REPLAY_END_EMITTER)))
        newest_here = rows.select(F.max(F.unix_millis(time_column)).alias("newest"))
        maxima = newest_here if maxima is None else maxima.unionByName(newest_here)
    if maxima is not None:
        found = maxima.select(F.max("newest").alias("newest")).first()
        if found is not None and found["newest"] is not None:
            newest.append(int(found["newest"]))
    return max(newest, default=None)


def seal_replay_time(spark: SparkSession, config: RadarConfig) -> int | None:
    """Append the end-of-dump tick (newest event + lateness) unless it is there already; returns its time (ms)."""
    newest = newest_event_ms(spark, config)
    if newest is None:
        return None
    seal_ms = newest + config.detect.lateness_ms
    ensure_tables(spark, config, [CLOCK_TICKS])
    if not log_says_empty(config, CLOCK_TICKS):
        ticks = _read_source(spark, config, CLOCK_TICKS, streaming=False)
        end = (F.col("emitter") == F.lit(REPLAY_END_EMITTER)) & (F.unix_millis("tick_time") >= seal_ms)
        if not ticks.where(end).isEmpty():
            return seal_ms
    stamp = F.timestamp_millis(F.lit(seal_ms))
    given: dict[str, SparkColumn] = {
        "cluster": F.lit(config.cluster),
        "src_timestamp": stamp,
        "tick_time": stamp,
        "emitter": F.lit(REPLAY_END_EMITTER),
    }
    row = spark.range(1).select(
        *(given.get(c.name, F.lit(None)).cast(c.ddl).alias(c.name) for c in CLOCK_TICKS.columns)
    )
    catalog = TableCatalog(config)
    location = catalog.location(CLOCK_TICKS)
    if location is None:
        row.write.format("delta").mode("append").saveAsTable(catalog.name(CLOCK_TICKS))
    else:
        row.write.format("delta").mode("append").save(str(location))
    return seal_ms
