"""Every table, column, heartbeat event kind and detection kind, declared once and used by name.

Columns are Spark SQL DDL types so the same declaration builds Spark schemas, Arrow schemas and SQL views.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


@dataclass(frozen=True)
class Column:
    """One column of a table: its name, its Spark SQL type and what it holds."""

    name: str
    ddl: str
    doc: str = ""


@dataclass(frozen=True)
class TableSchema:
    """A table's name, layer (bronze/silver/gold), columns, partition columns, and `record_key`: the columns naming
    the source record a row came from, so a record written once is never written again, whatever file or checkpoint
    brings it back (`pipelines.storage.tables.append_new_records`); empty for tables that are not per record."""

    name: str
    layer: str
    columns: tuple[Column, ...]
    partition_by: tuple[str, ...] = ()
    record_key: tuple[str, ...] = ()

    @property
    def ddl(self) -> str:
        """The schema as a Spark DDL string (`a INT, b STRING`)."""
        return ", ".join(f"`{c.name}` {c.ddl}" for c in self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


# Kafka coordinates every row keeps, so any fact can be traced to the record that produced it.
SOURCE_COLUMNS: tuple[Column, ...] = (
    Column("cluster", "STRING", "logical cluster name from config"),
    Column("src_topic", "STRING", "Kafka topic the record was read from"),
    Column("src_partition", "INT", "Kafka partition of the record"),
    Column("src_offset", "BIGINT", "Kafka offset of the record"),
    Column("src_timestamp", "TIMESTAMP", "Kafka record timestamp"),
)


# A Kafka record is one record whatever file or checkpoint it came through: its natural key. Every table built by
# `_table` holds rows of source records and is keyed by it. A record's rows are written in one Delta commit, so a
# table with several rows per record (heartbeat_events: one log line can hold several events) holds all of them or
# none, and the record key needs no ordinal. Exceptions are declared where the table is: `quarantine` (dump lines
# that are no record have src_offset -1 and are told apart by file and line), `telemetry_unrecognised` (an
# aggregate per micro-batch, no record key) and the gold tables (MERGEd by their own deterministic ids).
RECORD_KEY: tuple[str, ...] = ("cluster", "src_topic", "src_partition", "src_offset")


def _table(
    name: str,
    layer: str,
    columns: tuple[Column, ...],
    partition_by: tuple[str, ...] = (),
    record_key: tuple[str, ...] = RECORD_KEY,
) -> TableSchema:
    return TableSchema(name, layer, SOURCE_COLUMNS + columns, partition_by, record_key)


OFFSETS_RAW = _table(
    "offsets_raw",
    "bronze",
    (
        Column("key", "BINARY"),
        Column("value", "BINARY", "null for a tombstone"),
        Column("ingest_date", "DATE"),
    ),
    ("ingest_date",),
)

TELEMETRY_RAW = _table(
    "telemetry_raw",
    "bronze",
    (
        Column("key", "BINARY"),
        Column("value", "BINARY"),
        Column("ingest_date", "DATE"),
    ),
    ("ingest_date",),
)

OFFSET_COMMITS = _table(
    "offset_commits",
    "silver",
    (
        Column("group_id", "STRING"),
        Column("topic", "STRING"),
        Column("partition", "INT"),
        Column("committed_offset", "BIGINT"),
        Column("leader_epoch", "INT", "-1 when the value version has none"),
        Column("metadata", "STRING"),
        Column("commit_ts", "TIMESTAMP"),
        Column("expire_ts", "TIMESTAMP", "only value version 1"),
        Column("topic_id", "STRING", "Kafka's base64url topic id, value version 4+"),
        Column("is_tombstone", "BOOLEAN"),
        Column("key_version", "SMALLINT", "record type: 0 legacy, 1 current"),
        Column("value_version", "SMALLINT"),
        Column("commit_date", "DATE"),
    ),
    ("commit_date",),
)


def struct_ddl(columns: tuple[Column, ...]) -> str:
    """Spark DDL of a struct with these fields (`STRUCT<a: INT, b: STRING>`)."""
    return "STRUCT<" + ", ".join(f"`{c.name}`: {c.ddl}" for c in columns) + ">"


@dataclass(frozen=True)
class MemberColumn(Column):
    """A field of a classic member's struct; `kafka_field` names the GroupMetadata member field it is copied from
    (empty: decoded from the member's consumer-protocol subscription or assignment)."""

    kafka_field: str = ""


_PARTITIONS_DDL = "ARRAY<STRUCT<topic: STRING, partitions: ARRAY<INT>>>"

MAX_TIMESTAMP_MS = (2**63 - 1) // 1000
"""Kafka milliseconds beyond this overflow a TIMESTAMP column's microseconds: such a record is bad bytes."""

# One classic member of `group_metadata.members`: the DDL and the row builder (transforms/offsets_batch.py) both
# come from this declaration.
MEMBER_COLUMNS: tuple[MemberColumn, ...] = (
    MemberColumn("member_id", "STRING", kafka_field="memberId"),
    MemberColumn("group_instance_id", "STRING", kafka_field="groupInstanceId"),
    MemberColumn("client_id", "STRING", kafka_field="clientId"),
    MemberColumn("client_host", "STRING", kafka_field="clientHost"),
    MemberColumn("rebalance_timeout_ms", "INT", kafka_field="rebalanceTimeout"),
    MemberColumn("session_timeout_ms", "INT", kafka_field="sessionTimeout"),
    MemberColumn("subscribed_topics", "ARRAY<STRING>"),
    MemberColumn("assigned_partitions", _PARTITIONS_DDL),
    MemberColumn("owned_partitions", _PARTITIONS_DDL),
    MemberColumn("subscription_generation", "INT"),
    MemberColumn("rack_id", "STRING"),
    MemberColumn("subscription_version", "SMALLINT"),
    MemberColumn("assignment_version", "SMALLINT"),
    MemberColumn("embedded_error", "STRING", "why the subscription or assignment bytes did not decode"),
    MemberColumn("subscription", "BINARY", kafka_field="subscription"),
    MemberColumn("assignment", "BINARY", kafka_field="assignment"),
)
MEMBER_STRUCT_DDL = struct_ddl(MEMBER_COLUMNS)

GROUP_METADATA = _table(
    "group_metadata",
    "silver",
    (
        Column("group_id", "STRING"),
        Column("protocol_type", "STRING"),
        Column("generation", "INT"),
        Column("protocol", "STRING"),
        Column("leader", "STRING"),
        Column("state_ts", "TIMESTAMP", "currentStateTimestamp, value version 2+"),
        Column("member_count", "INT"),
        Column("members", f"ARRAY<{MEMBER_STRUCT_DDL}>"),
        Column("is_tombstone", "BOOLEAN"),
        Column("value_version", "SMALLINT"),
    ),
)

GROUP_RECORDS = _table(
    "group_records",
    "silver",
    (
        Column("group_id", "STRING"),
        Column("group_type", "STRING", "consumer | share | streams"),
        Column("record_type", "STRING", "record name, e.g. ConsumerGroupMemberMetadata"),
        Column("record_type_id", "SMALLINT"),
        Column("key_version", "SMALLINT"),
        Column("value_version", "SMALLINT"),
        Column("epoch", "INT", "group epoch, assignment epoch or member epoch, whichever the record carries"),
        Column("member_id", "STRING"),
        Column(
            "member_state", "STRING", "named state of *CurrentMemberAssignment records (codes differ by group type)"
        ),
        Column("is_tombstone", "BOOLEAN"),
        Column("payload", "STRING", "decoded value as JSON text in Kafka's conventions"),
    ),
)

HEARTBEAT_EVENTS = _table(
    "heartbeat_events",
    "silver",
    (
        Column("event_time", "TIMESTAMP"),
        Column("group_id", "STRING"),
        Column("member_id", "STRING"),
        Column("group_instance_id", "STRING"),
        Column("generation", "INT", "classic generation"),
        Column("member_epoch", "INT", "KIP-848/1071 member epoch"),
        Column("event", "STRING", "one of HeartbeatEventKind"),
        Column("error", "STRING", "Kafka error name"),
        Column("reason", "STRING"),
        Column("client_id", "STRING"),
        Column("host", "STRING"),
        Column("source", "STRING", "one of TelemetrySource"),
        Column("details", "MAP<STRING, STRING>"),
    ),
)

# What a stage that refuses a record says about it (the `quarantine` table minus the source columns).
QUARANTINE_PAYLOAD: tuple[Column, ...] = (
    Column("stage", "STRING", "the stage that refused the record, e.g. decode_offsets"),
    Column("kind", "STRING", "malformed | unsupported | unrecognised"),
    Column("reason", "STRING"),
    Column("record_type", "SMALLINT"),
    Column("value_version", "SMALLINT"),
    Column("error_offset", "INT", "byte offset where decoding stopped"),
    Column("key", "BINARY"),
    Column("value", "BINARY"),
    Column("src_file", "STRING", "the dump file of a replayed line that is not a dump record (stage read_dump)"),
    Column("src_line", "BIGINT", "its line number in src_file (1-based)"),
)

# A record is refused by one stage; a dump line that is no record (stage read_dump) is one per file and line.
QUARANTINE = _table(
    "quarantine", "silver", QUARANTINE_PAYLOAD, record_key=(*RECORD_KEY, "stage", "src_file", "src_line")
)


def quarantine_row(stage: QuarantineStage, kind: str, reason: str | None, **values: Any) -> dict[str, Any]:
    """One quarantine payload row: every `QUARANTINE_PAYLOAD` field, those not given null."""
    unknown = values.keys() - {c.name for c in QUARANTINE_PAYLOAD}
    if unknown:
        raise ValueError(f"not quarantine columns: {sorted(unknown)}")
    row: dict[str, Any] = dict.fromkeys(c.name for c in QUARANTINE_PAYLOAD)
    row.update(values, stage=str(stage), kind=kind, reason=reason)
    return row


# Counts per micro-batch, no record key: records replayed again through another checkpoint (an overlapping set of
# dump files) are counted again here, while every per-record table keeps them once.
TELEMETRY_UNRECOGNISED = TableSchema(
    "telemetry_unrecognised",
    "silver",
    (
        Column("cluster", "STRING"),
        Column("src_topic", "STRING"),
        Column("source", "STRING", "the telemetry kind the records looked like (TelemetrySource)"),
        Column("reason", "STRING", "why no event came out"),
        Column("records", "BIGINT", "how many records of one micro-batch"),
        Column("first_seen", "TIMESTAMP", "earliest Kafka timestamp among them"),
        Column("last_seen", "TIMESTAMP", "latest Kafka timestamp among them"),
    ),
)

CLOCK_TICKS = _table(
    "clock_ticks",
    "silver",
    (
        Column("tick_time", "TIMESTAMP", "the emitter's wall clock when it wrote the tick"),
        Column("emitter", "STRING", "who wrote it, e.g. radar-run@host"),
    ),
)
"""The clock as data: `radar run` writes a `radar.clock/1` record to the telemetry topic every second, so event
time (and with it the detectors' watermark) advances while every group is silent, and a dump that captured the
telemetry topic replays the same passage of time."""

PARTITION_END_OFFSETS = _table(
    "partition_end_offsets",
    "silver",
    (
        Column("polled_at", "TIMESTAMP", "the poller's wall clock when the admin API answered"),
        Column("group_id", "STRING", "the monitored group whose committed partitions were polled"),
        Column("topic", "STRING"),
        Column("partition", "INT"),
        Column("end_offset", "BIGINT", "log-end offset (ListOffsets, latest); null when `error` says why not"),
        Column("error", "STRING", "Kafka error name when the partition's end offset could not be read"),
        Column("emitter", "STRING", "who polled, e.g. radar-run@host"),
    ),
)
"""Log-end offsets as data: `radar run` and `radar poll-groups` publish a `radar.end_offsets/1` record per group
every `lag.poll_interval` on the telemetry topic, so lag is computed live and a dump of the telemetry topic replays
it (`transforms.telemetry.end_offsets`)."""

# Columns the detectors read: the union of the silver tables that speak about groups, projected onto one row
# shape (`src_table` says which table a row came from; a column a table does not have is null). Declared once so
# the Spark projection (pipelines/stages/detect.py) and the pure conversion to group events (transforms/detectors)
# agree.
DETECTOR_INPUT = TableSchema(
    "detector_input",
    "view",
    (
        Column("cluster", "STRING"),
        Column("group_id", "STRING", "null only on clock ticks"),
        Column("event_time", "TIMESTAMP", "heartbeat_events.event_time, clock_ticks.tick_time, else src_timestamp"),
        Column(
            "src_table",
            "STRING",
            "offset_commits | group_metadata | group_records | heartbeat_events | clock_ticks | partition_end_offsets",
        ),
        *SOURCE_COLUMNS[1:],
        # offset_commits
        Column("topic", "STRING"),
        Column("partition", "INT"),
        Column("committed_offset", "BIGINT"),
        Column("leader_epoch", "INT"),
        Column("is_tombstone", "BOOLEAN", "offset_commits, group_metadata, group_records"),
        # group_metadata
        Column("protocol_type", "STRING"),
        Column("generation", "INT", "group_metadata and heartbeat_events: classic generation"),
        Column("protocol", "STRING"),
        Column("leader", "STRING"),
        Column("member_count", "INT"),
        Column("members", f"ARRAY<{MEMBER_STRUCT_DDL}>"),
        # group_records
        Column("group_type", "STRING"),
        Column("record_type", "STRING"),
        Column("epoch", "INT"),
        Column("member_id", "STRING", "group_records and heartbeat_events"),
        Column("member_state", "STRING"),
        Column("payload", "STRING"),
        # heartbeat_events
        Column("event", "STRING"),
        Column("group_instance_id", "STRING"),
        Column("member_epoch", "INT"),
        Column("error", "STRING"),
        Column("reason", "STRING"),
        Column("client_id", "STRING"),
        Column("host", "STRING"),
        Column("source", "STRING"),
        Column("details", "MAP<STRING, STRING>"),
        # partition_end_offsets (topic, partition too)
        Column("end_offset", "BIGINT"),
    ),
)

# A `members` struct as the detection query hands it to the trackers (`pipelines.stages.detect.packed_detector_input`),
# not its subscription and assignment bytes: "f", these fields as texts in this order (what `group_events` reads
# positionally); "p", its assigned partitions as sorted `topic-partition` texts; "s", its subscribed topics sorted.
# Shaped by Spark, a member costs the tracker a few list reads instead of a walk through nested objects.
DETECTOR_MEMBER_TEXTS: tuple[str, ...] = (
    "member_id",
    "group_instance_id",
    "client_id",
    "client_host",
    "session_timeout_ms",
    "rebalance_timeout_ms",
)

EVIDENCE_DOC = "JSON array of the source records: [{table, topic, partition, offset, event_time}]"

REBALANCES = TableSchema(
    "rebalances",
    "gold",
    (
        Column("cluster", "STRING"),
        Column("group_id", "STRING"),
        Column("rebalance_id", "STRING", "deterministic: cluster, group, protocol and the generation/epoch left"),
        Column("group_protocol", "STRING", "classic | consumer | streams | share"),
        Column("from_generation", "INT", "generation (classic) or group epoch (KIP-848/1071) before"),
        Column("generation", "INT", "generation or group epoch reached; null while not stabilised"),
        Column("started_at", "TIMESTAMP"),
        Column("stabilized_at", "TIMESTAMP", "null while the rebalance is in progress or never completed"),
        Column("duration_ms", "BIGINT"),
        Column("members_before", "INT"),
        Column("members_after", "INT"),
        Column("joined", "ARRAY<STRING>", "member ids that joined while it ran (also those gone before it ended)"),
        Column("left", "ARRAY<STRING>", "member ids that left (LeaveGroup, shutdown)"),
        Column("expired", "ARRAY<STRING>", "member ids removed on session/heartbeat expiry"),
        Column("leader", "STRING"),
        Column("cause", "STRING", "one of RebalanceCause"),
        Column(
            "cause_detail",
            "STRING",
            "the reason text that decided the cause, then `also <cause> (<members>)` for every other cause it had",
        ),
        Column("evidence", "STRING", EVIDENCE_DOC),
        Column(
            "topology_epoch",
            "INT",
            "streams groups: the topology epoch the coordinator had initialized or validated (its log); else null",
        ),
        Column(
            "assignment",
            "MAP<STRING, STRING>",
            "streams groups: member id -> its active tasks (`0_1,1_0`) once stabilised; else null",
        ),
    ),
)

DETECTIONS = TableSchema(
    "detections",
    "gold",
    (
        Column("cluster", "STRING"),
        Column("detection_id", "STRING", "deterministic: same incident, same id, live or replayed"),
        Column("kind", "STRING", "one of DetectionKind"),
        Column("severity", "STRING", "one of Severity"),
        Column("group_id", "STRING"),
        Column("generation", "INT", "generation or epoch the incident is about"),
        Column("member_id", "STRING"),
        Column("topic", "STRING"),
        Column("partition", "INT"),
        Column("first_seen", "TIMESTAMP", "event time of the first evidence"),
        Column("last_seen", "TIMESTAMP", "event time of the latest evidence"),
        Column("detected_at", "TIMESTAMP", "event time at which the rule decided"),
        Column("status", "STRING", "provisional (live, ahead of the watermark) | open | resolved | withdrawn"),
        Column("resolved_at", "TIMESTAMP"),
        Column(
            "summary",
            "STRING",
            'what happened, for a human, then "What to do: ..." (the rule\'s remedy, docs/DETECTIONS.md)',
        ),
        Column("evidence", "STRING", EVIDENCE_DOC),
    ),
)

GROUP_HEALTH = TableSchema(
    "group_health",
    "gold",
    (
        Column("cluster", "STRING"),
        Column("group_id", "STRING"),
        Column("group_protocol", "STRING", "classic | consumer | streams | share"),
        Column("state", "STRING", "Stable | PreparingRebalance | CompletingRebalance | Reconciling | Empty | Dead"),
        Column("generation", "INT", "generation or group epoch"),
        Column("members", "INT"),
        Column("last_rebalance_at", "TIMESTAMP"),
        Column("rebalances_1h", "INT", "completed rebalances in the hour before last_event_at"),
        Column("open_detections", "INT"),
        Column("last_event_at", "TIMESTAMP"),
    ),
)

GROUP_LAG = TableSchema(
    "group_lag",
    "gold",
    (
        Column("cluster", "STRING"),
        Column("group_id", "STRING"),
        Column("topic", "STRING"),
        Column("partition", "INT"),
        Column("measured_at", "TIMESTAMP", "polled_at of the end offset this row compares with"),
        Column("committed_offset", "BIGINT", "the group's newest committed offset at measured_at"),
        Column("end_offset", "BIGINT", "the partition's log-end offset at measured_at"),
        Column("lag", "BIGINT", "end_offset - committed_offset; null when no honest number exists (lag_status)"),
        Column("lag_status", "STRING", "one of LagStatus: Burrow's statuses, rebalancing, or what the input lacks"),
        Column("status_reason", "STRING", "why this status, in a sentence"),
        Column("rebalance_id", "STRING", "the rebalance a `rebalancing` status points at"),
        Column("group_total_lag", "BIGINT", "the sum of the group's partition lags at measured_at"),
        Column("group_max_lag", "BIGINT", "the largest partition lag of the group at measured_at"),
    ),
)
"""Lag per group, topic and partition over time, one row per end-offset poll, with a rebalance-aware status
(`transforms.lag.evaluation`); the group's total and maximum are repeated on each row of one poll."""

SOURCE_GAPS = TableSchema(
    "source_gaps",
    "silver",
    (
        Column("cluster", "STRING", "logical cluster name from config"),
        Column("query", "STRING", "the streaming query that read the partition"),
        Column("src_topic", "STRING", "Kafka topic"),
        Column("src_partition", "INT", "Kafka partition"),
        Column("kind", "STRING", "what happened (SourceGapKind)"),
        Column("from_offset", "BIGINT", "where the query stood: the offset it was to read next"),
        Column("to_offset", "BIGINT", "where the source said it stands now (null: the partition is gone)"),
        Column("batch_id", "BIGINT", "the micro-batch that met it"),
        Column("detected_at", "TIMESTAMP", "when the query reported it"),
        Column("message", "STRING", "what it means and what to do"),
    ),
    record_key=("cluster", "query", "src_topic", "src_partition", "kind", "from_offset", "to_offset"),
)
"""Where a source's offsets moved backwards or a partition vanished under a running query (a topic deleted and
recreated, an unclean leader election truncating a log): Spark reads on (failOnDataLoss is off, so one bad topic
cannot stop the monitor), and this table keeps each event countable and queryable instead of a log line."""

ALERTS = TableSchema(
    "alerts",
    "gold",
    (
        Column("alert_id", "STRING", "deterministic: rule, cluster, group and the incident's first_seen"),
        Column("rule", "STRING", "the expectation rule that failed (expectations.rules)"),
        Column("severity", "STRING", "one of Severity"),
        Column("cluster", "STRING"),
        Column("group_id", "STRING", "null for a rule about the whole cluster (quarantine rate, monitor lag)"),
        Column("status", "STRING", "one of AlertStatus"),
        Column("first_seen", "TIMESTAMP", "the check run that first saw the rule fail (the incident start)"),
        Column("last_seen", "TIMESTAMP", "the latest check run that saw it fail"),
        Column("updated_at", "TIMESTAMP", "the latest check run that changed this row"),
        Column("resolved_at", "TIMESTAMP", "the check run that saw the rule pass again"),
        Column("notified_at", "TIMESTAMP", "when the current status was delivered; null: pending, retried next run"),
        Column("observed_value", "DOUBLE", "the value that broke the rule, at last_seen"),
        Column("threshold", "DOUBLE"),
        Column("message", "STRING", "one sentence for a human"),
        Column("details", "STRING", "JSON: the failing row of the check view and the expectation"),
    ),
)

INCIDENTS = TableSchema(
    "incidents",
    "gold",
    (
        Column("cluster", "STRING"),
        Column("incident_id", "STRING", "deterministic: cluster, cause kind, what it names and the window's start"),
        Column("cause_kind", "STRING", "one of IncidentCause"),
        Column("cause", "STRING", "the cause for a human: the broker, the hosts or client-id prefixes named"),
        Column("broker", "STRING", "the broker a broker_restart or coordinator_moved names (its node id)"),
        Column("window_start", "TIMESTAMP", "event time of the incident's first evidence"),
        Column("window_end", "TIMESTAMP", "event time of its latest evidence"),
        Column("groups", "ARRAY<STRING>", "the groups it explains, sorted"),
        Column("detection_ids", "ARRAY<STRING>", "the detections of those groups within the window"),
        Column("rebalance_ids", "ARRAY<STRING>", "the rebalances of those groups within the window"),
        Column("status", "STRING", "one of IncidentStatus"),
        Column("evidence", "STRING", "JSON array of the coordinator events and member restarts that name the cause"),
    ),
)
"""Cross-group incidents: many groups rebalancing or moving at once, linked to one cause (a broker restart, a
coordinator move, a deployment wave, else "unexplained" with the groups listed). Not a detection's occurrences
(`detections`, folded per group, kind and member identity): one row here spans groups (`transforms.incidents`)."""

# The detection query's outputs (`alerts` is written by the checks, pipelines/checks/check.py, not by detection).
GOLD_TABLES: dict[str, TableSchema] = {t.name: t for t in (REBALANCES, DETECTIONS, GROUP_HEALTH, GROUP_LAG)}

# What the detection query emits, routed like an ingest batch: one row per new version of a gold row, `target`
# naming its table, every gold column once (a name shared by two tables shares its type), and `emit_seq`, the
# per-group emission counter that orders two versions of one row emitted in the same event time.
TARGET_COLUMN = Column("target", "STRING", "the table the row goes to")
EMIT_SEQ_COLUMN = Column("emit_seq", "BIGINT", "per-group emission counter: a later row of one key replaces earlier")


def routed_gold_columns(tables: Iterable[TableSchema]) -> tuple[Column, ...]:
    """`target`, `emit_seq`, then every column of `tables` once (a name two tables share must share its type)."""
    columns: dict[str, Column] = {}
    for table in tables:
        for column in table.columns:
            known = columns.get(column.name)
            if known is not None and known.ddl != column.ddl:
                raise ValueError(
                    f"gold column {column.name} is {known.ddl} in one table and {column.ddl} in {table.name}: "
                    "a routed row cannot carry both; rename one of them in transforms/schemas.py"
                )
            columns.setdefault(column.name, column)
    return (TARGET_COLUMN, EMIT_SEQ_COLUMN, *columns.values())


# Upserted from `detector_output` by the gold query of a live run, off the detection query's critical path;
# `detections` is MERGEd by the detection query itself (a detection is what an on-call engineer waits for).
STAGED_GOLD_TABLES: tuple[TableSchema, ...] = (REBALANCES, GROUP_HEALTH, GROUP_LAG)

DETECTOR_OUTPUT = TableSchema(
    "detector_output",
    "gold",
    (
        *routed_gold_columns((*STAGED_GOLD_TABLES, DETECTIONS)),
        Column("staged_at", "TIMESTAMP", "processing time of the detection micro-batch that emitted the row"),
    ),
)
"""The channel between the live detection query and the gold query: every new version of a `rebalances` or
`group_health` row, and of a `detections` row the table already holds (a detection's first row is appended to
`detections` at once), appended as emitted (cheap: a Delta append reads no table state) and MERGEd by the gold query on
its own trigger, so those upserts never delay a detection. A micro-batch redone after a crash appends its rows
again; the upsert is idempotent (the newest version per key wins, equal rows are equal), so that is harmless.
`radar maintain` deletes rows older than `detect.staged_retention_hours`."""

TABLES: dict[str, TableSchema] = {
    t.name: t
    for t in (
        OFFSETS_RAW,
        TELEMETRY_RAW,
        OFFSET_COMMITS,
        GROUP_METADATA,
        GROUP_RECORDS,
        HEARTBEAT_EVENTS,
        TELEMETRY_UNRECOGNISED,
        QUARANTINE,
        CLOCK_TICKS,
        PARTITION_END_OFFSETS,
        SOURCE_GAPS,
        *GOLD_TABLES.values(),
        DETECTOR_OUTPUT,
        ALERTS,
        INCIDENTS,
    )
}


# The routed-batch contract: what the `mapInArrow` stages of the ingest (transforms/offsets_batch.py,
# transforms/telemetry/batch.py) hand to pipelines/stages/ingest.py. One row per routed record: its Kafka coordinates,
# the `target` table, and one struct column per target filled for that target only (the others null).
ROUTED_SOURCE_COLUMNS: tuple[Column, ...] = SOURCE_COLUMNS[1:]  # the cluster is added by the pipeline
# Columns of a table the pipeline fills itself: the cluster, the Kafka coordinates, partition dates.
PIPELINE_COLUMNS = frozenset({c.name for c in SOURCE_COLUMNS} | {"commit_date"})


@dataclass(frozen=True)
class RoutedPayload:
    """One struct column of a routed batch (`column`), its fields, and the table its rows go to."""

    column: str
    table: TableSchema
    fields: tuple[Column, ...]

    @staticmethod
    def of_table(column: str, table: TableSchema) -> RoutedPayload:
        """The payload of a table whose rows are the struct's fields plus the pipeline's own columns."""
        return RoutedPayload(column, table, tuple(c for c in table.columns if c.name not in PIPELINE_COLUMNS))

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.fields)


@dataclass(frozen=True)
class RoutedBatch:
    """The columns of a routed batch: Kafka coordinates, `target`, then one struct per payload."""

    payloads: tuple[RoutedPayload, ...]

    @property
    def columns(self) -> tuple[Column, ...]:
        structs = tuple(Column(p.column, struct_ddl(p.fields)) for p in self.payloads)
        return (*ROUTED_SOURCE_COLUMNS, TARGET_COLUMN, *structs)

    @property
    def ddl(self) -> str:
        """Spark DDL of the batch (the `mapInArrow` output schema)."""
        return ", ".join(f"`{c.name}` {c.ddl}" for c in self.columns)

    def payload(self, column: str) -> RoutedPayload:
        return next(p for p in self.payloads if p.column == column)


QUARANTINE_ROUTED = RoutedPayload("quarantine", QUARANTINE, QUARANTINE_PAYLOAD)

DECODED_OFFSETS_BATCH = RoutedBatch(
    (
        RoutedPayload.of_table("offset_commit", OFFSET_COMMITS),
        RoutedPayload.of_table("group_metadata", GROUP_METADATA),
        RoutedPayload.of_table("group_record", GROUP_RECORDS),
        QUARANTINE_ROUTED,
    )
)
"""`__consumer_offsets` records routed into the silver tables (or quarantine), one row per record."""

PARSED_TELEMETRY_BATCH = RoutedBatch(
    (
        RoutedPayload.of_table("event", HEARTBEAT_EVENTS),
        RoutedPayload.of_table("tick", CLOCK_TICKS),
        RoutedPayload.of_table("end_offset", PARTITION_END_OFFSETS),
        RoutedPayload(
            "unrecognised",
            TELEMETRY_UNRECOGNISED,
            tuple(c for c in TELEMETRY_UNRECOGNISED.columns if c.name in ("source", "reason")),
        ),
        QUARANTINE_ROUTED,
    )
)
"""Telemetry records routed into heartbeat events (one row per event), counted records, or quarantine."""


class HeartbeatEventKind(StrEnum):
    """Normalised `heartbeat_events.event` values."""

    HEARTBEAT = "heartbeat"
    HEARTBEAT_FAILED = "heartbeat_failed"
    SESSION_TIMEOUT = "session_timeout"
    POLL_TIMEOUT = "poll_timeout"
    JOIN = "join"
    JOIN_FAILED = "join_failed"
    SYNC = "sync"
    SYNC_FAILED = "sync_failed"
    LEAVE = "leave"
    MEMBER_REMOVED = "member_removed"
    MEMBER_EXPIRED = "member_expired"
    REBALANCE_PREPARE = "rebalance_prepare"
    REBALANCE_STABLE = "rebalance_stable"
    GROUP_EMPTY = "group_empty"
    # The coordinator's own moves (`transforms.telemetry.broker_log`), what cross-group incidents are explained by:
    # an `__consumer_offsets` partition loaded or unloaded (group_id null), a group loaded or unloaded with it, and
    # the group coordinator of a broker starting up or shutting down (group_id null).
    COORDINATOR_LOADED = "coordinator_loaded"
    COORDINATOR_UNLOADED = "coordinator_unloaded"
    GROUP_LOADED = "group_loaded"
    GROUP_UNLOADED = "group_unloaded"
    COORDINATOR_STARTED = "coordinator_started"
    COORDINATOR_STOPPING = "coordinator_stopping"
    COMMIT = "commit"
    COMMIT_FAILED = "commit_failed"
    FOLLOWUP_REBALANCE = "followup_rebalance"
    PROBING_REBALANCE = "probing_rebalance"
    VERSION_PROBING = "version_probing"
    SHUTDOWN_REQUESTED = "shutdown_requested"
    ASSIGNMENT = "assignment"
    STATE_CHANGE = "state_change"
    """A client's own state machine moved (KafkaStreams, StreamThread, a KIP-848/1071 membership manager)."""
    SUBSCRIPTION = "subscription"
    """A member of a KIP-848 group changed the topics (or the regex) it subscribes to, as the coordinator logs it."""
    TOPOLOGY = "topology"
    """A streams group's topology was configured, initialized or validated by the coordinator (KIP-1071)."""
    CLIENT_CONFIG = "client_config"
    """A client's configuration listing at start (`ConsumerConfig values:` ...): its group, timeouts, poll bounds."""
    BROKER_CONFIG = "broker_config"
    """A broker's `KafkaConfig values:` listing at start: the group session timeouts it enforces (group_id null)."""
    GROUP_CONFIG = "group_config"
    """A group's own session timeouts as the cluster describes them (Kafka 4.x group configs), published by radar's
    poller when they change while it runs (details empty: the group sets none any more)."""


GROUP_CONSUMER_SESSION_TIMEOUT = "consumer.session.timeout.ms"
GROUP_STREAMS_SESSION_TIMEOUT = "streams.session.timeout.ms"
"""A group's own session timeouts (Kafka 4.x group configs), by Kafka's names, as `group_config` events carry them."""


class TelemetrySource(StrEnum):
    """Where a heartbeat event came from (`heartbeat_events.source`)."""

    BROKER_LOG = "broker_log"
    CLIENT_LOG = "client_log"
    LIBRDKAFKA_STATS = "librdkafka_stats"
    JSON = "json"
    PROTOCOL = "protocol"


class DetectionKind(StrEnum):
    """`detections.kind` values."""

    FAILING_GENERATION = "failing_generation"
    ZOMBIE_COMMIT = "zombie_commit"
    HEARTBEAT_EXPIRATION = "heartbeat_expiration"
    HEARTBEAT_AT_RISK = "heartbeat_at_risk"
    REBALANCE_STORM = "rebalance_storm"
    PROBING_REBALANCE_LOOP = "probing_rebalance_loop"
    MEMBERSHIP_FLAPPING = "membership_flapping"
    LEADER_INSTABILITY = "leader_instability"
    OFFSET_REGRESSION = "offset_regression"
    LAG_STALLED = "lag_stalled"
    LAG_GROWING = "lag_growing"


class LagStatus(StrEnum):
    """`group_lag.lag_status`: Burrow's partition statuses (its evaluator's rules, `transforms.lag.evaluation`),
    `rebalancing` where the group's rebalance explains a pause, and what bad input makes of a partition."""

    OK = "OK"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"
    REWIND = "REWIND"
    ERR = "ERR"
    """A group's status when a partition is STALL, STOP or REWIND (Burrow's group status; never a partition's)."""
    REBALANCING = "rebalancing"
    PARTITION_GONE = "partition_gone"
    """The broker no longer has the partition (deleted, or the topic was deleted) while the group holds offsets."""
    BEYOND_END = "beyond_end"
    """The committed offset is past an end offset polled after it: the log was truncated or the topic recreated."""
    UNKNOWN = "unknown"
    """No end offset to compare with (not polled yet, or the principal may not describe the topic)."""


class QuarantineStage(StrEnum):
    """Which stage refused a record (`quarantine.stage`)."""

    READ_DUMP = "read_dump"
    DECODE_OFFSETS = "decode_offsets"
    PARSE_TELEMETRY = "parse_telemetry"


class SourceGapKind(StrEnum):
    """`source_gaps.kind` values."""

    OFFSETS_MOVED_BACK = "offsets_moved_back"  # the partition's end is now before where the query stood
    PARTITION_GONE = "partition_gone"  # the partition is no longer in the source's offsets


class RebalanceCause(StrEnum):
    """`rebalances.cause` values: why a group left its generation/epoch."""

    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    HEARTBEAT_EXPIRATION = "heartbeat_expiration"
    POLL_TIMEOUT = "poll_timeout"
    ENFORCED = "enforced"
    SUBSCRIPTION_CHANGE = "subscription_change"
    FAILED_PREVIOUS = "failed_previous"
    UNKNOWN = "unknown"


class IncidentCause(StrEnum):
    """`incidents.cause_kind`: what links the groups of a cross-group incident."""

    BROKER_RESTART = "broker_restart"  # the broker that coordinated them stopped or started
    COORDINATOR_MOVED = "coordinator_moved"  # their coordinator moved (leadership of `__consumer_offsets` changed)
    DEPLOYMENT_WAVE = "deployment_wave"  # members on the same hosts or client-id prefixes restarted in each group
    UNEXPLAINED = "unexplained"  # several groups at once, and none of the above seen


class IncidentStatus(StrEnum):
    """`incidents.status`: open while evidence may still join the window, then closed."""

    OPEN = "open"
    CLOSED = "closed"


class Severity(StrEnum):
    """`detections.severity` values."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class DetectionStatus(StrEnum):
    """`detections.status`: an incident is open until its rule sees it end.

    A live run also shows what the events ahead of the watermark already say (`provisional`): the rules run on a
    copy of the group's state over those events, so a detection is queryable in the micro-batch that brings its
    deciding record instead of `detect.lateness_ms` and a batch or two later. When the watermark passes, the
    ordered events confirm it (the same id becomes `open` or `resolved`, as a replay writes it) or, where telemetry
    that arrived late says otherwise, withdraw it (`withdrawn`: the row stays as the record of what was shown)."""

    PROVISIONAL = "provisional"
    OPEN = "open"
    RESOLVED = "resolved"
    WITHDRAWN = "withdrawn"


UNRESOLVED_DETECTION_STATUSES: tuple[DetectionStatus, ...] = (DetectionStatus.PROVISIONAL, DetectionStatus.OPEN)
"""The statuses of an incident still going on (`--open`, open-detection counts and alerts)."""

DETECTION_STATUS_RANK: dict[DetectionStatus, int] = {
    DetectionStatus.PROVISIONAL: 0,
    DetectionStatus.WITHDRAWN: 1,
    DetectionStatus.OPEN: 2,
    DetectionStatus.RESOLVED: 2,
}
"""Which version of one detection row wins an upsert before its times are compared: a provisional row never
replaces one the ordered events wrote; a withdrawal replaces only a provisional row; a confirmation replaces both
(a withdrawn id the ordered events open later is confirmed)."""


class AlertStatus(StrEnum):
    """`alerts.status`: open while the rule fails, resolved on the first check run that sees it pass."""

    OPEN = "open"
    RESOLVED = "resolved"
