"""The streaming skeleton every pipeline shares (ingest now; detection and checks next).

- `start_query`: a named query with its checkpoint and trigger (processing time, or availableNow to completion).
- `TableWriter`: the multi-table `foreachBatch` body: a stage turns each micro-batch into rows per table,
  and every table is written concurrently and idempotently (appends leave out the records a table holds, see
  `tables.append_new_records`; a stage that upserts passes its own `TableWrite`, e.g. a MERGE by deterministic ids).
- `RunningQueries`: the queries of a run, with await / stop / progress and failures turned into sentences.
- `Stage`: one lifecycle (start, stop, context manager) so `radar run` composes stages; `run_until_stopped` keeps
  them running until Ctrl-C / SIGTERM / a deadline, and stops them cleanly (the current micro-batch completes).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Self

from pyspark.sql import DataFrame, Row
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from rebalance_radar.pipelines.config import OWN_GROUP_PREFIX, RadarConfig
from rebalance_radar.pipelines.runtime.run_status import RunStatusFile
from rebalance_radar.pipelines.storage.data_dir_locks import hold_stream, release_stream, writing
from rebalance_radar.pipelines.storage.tables import TableCatalog, TableWrite, append_new_records
from rebalance_radar.transforms.schemas import TABLES, TableSchema

if TYPE_CHECKING:
    from rebalance_radar.pipelines.runtime.console import ProgressHook

BatchWriter = Callable[[DataFrame, int], None]
"""A `foreachBatch` body: (micro-batch, batch id)."""


ONE_FILE_MAX_ROWS = 50_000
"""A table's rows of one micro-batch that their source offsets bound to at most this many are written by one task,
to one file (`in_one_file_when_small`)."""


def rows_at_most(ranges: Sequence[Row]) -> int:
    """An upper bound on the rows a batch's `source_ranges` cover: each (topic, partition) holds at most one row
    per offset from `low` to `high` (a compacted topic's gaps only lower it)."""
    return sum(int(r["high"]) - int(r["low"]) + 1 for r in ranges)


def in_one_file_when_small(rows: DataFrame, ranges: Sequence[Row] | None) -> DataFrame:
    """`rows` in one partition when their source offsets show they are few (a live micro-batch): the append is
    then one task and one file instead of one per partition of the batch (three to ten of a few rows each, every
    one a Parquet writer and a task slot the live detection batch waits for, and small files for every later
    read). Rows of unknown count (no ranges, or a dump line without offsets) and large batches keep their
    partitions, so a backlog is still written by every core."""
    if not ranges or any(r["low"] is None or r["high"] is None for r in ranges):
        return rows
    return rows.coalesce(1) if rows_at_most(ranges) <= ONE_FILE_MAX_ROWS else rows


@dataclass(frozen=True)
class SplitBatch:
    """One micro-batch as rows per table name (tables with no rows left out), and the source offsets each table's
    rows cover where the stage computed them for all tables at once (one Spark job instead of one per table)."""

    tables: Mapping[str, DataFrame]
    source_ranges: Mapping[str, Sequence[Row]] = field(default_factory=dict)


BatchTables = Callable[[DataFrame], AbstractContextManager[SplitBatch]]
"""A stage's split of one micro-batch; a context manager, so the stage can cache what it computed once (e.g. a
routed batch) for the duration of the writes."""


@dataclass(frozen=True)
class Trigger:
    """When a query runs its micro-batches: every `processing_time`, or everything available now, then stop."""

    available_now: bool = False
    processing_time: str = "1 second"

    def apply(self, stream: DataStreamWriter) -> DataStreamWriter:
        if self.available_now:
            return stream.trigger(availableNow=True)
        return stream.trigger(processingTime=self.processing_time)


JAVA_FRAME_PREFIXES = ("\tat ", "\t... ")
MAX_JAVA_ERROR_LINES = 12


def compact_java_error(error: Exception) -> str:
    """A Java failure raised through Py4J, without its stack frames: the exception and cause lines, each cut short.

    Why: Spark decides whether a failed `foreachBatch` was only interrupted by `query.stop()` with a regex,
    `Py4JJavaError: An error occurred while calling((.|\\r\\n|\\r|\\n)*)(InterruptedException|...)`, over the Python
    traceback; on a full Java stack that recursion overflows the stream thread's stack (a StackOverflowError of
    thousands of lines on Ctrl-C). Kept short, the same text is recognised as an interruption, and a real failure
    still names its exception and causes.
    """
    lines = [
        line[:300] for line in str(error).splitlines() if line.strip() and not line.startswith(JAVA_FRAME_PREFIXES)
    ]
    causes = [line for line in lines[1:] if line.startswith("Caused by: ")]  # where an interruption shows
    others = [line for line in lines[1:] if not line.startswith("Caused by: ")]
    return "\n".join((lines[:1] + causes + others)[:MAX_JAVA_ERROR_LINES])


class JavaBatchFailure(RuntimeError):
    """A micro-batch's Java-side failure, compacted by `compact_java_error` (see there for why)."""


def raising_compact_java_errors(writer: BatchWriter) -> BatchWriter:
    """`writer`, whose Java failures reach Spark compacted (`compact_java_error`)."""
    from py4j.protocol import Py4JJavaError

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        try:
            writer(batch, batch_id)
        except Py4JJavaError as error:
            raise JavaBatchFailure(f"py4j.protocol.Py4JJavaError: {compact_java_error(error)}") from None

    return write_batch


# Spark writes a log entry N to `.N.<uuid>.tmp` and renames it (CheckpointFileManager.generateTempPath); Hadoop's
# local file system keeps a checksum beside it, `..N.<uuid>.tmp.crc`
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ABANDONED_LOG_WRITE = re.compile(rf"\.\d+\.{_UUID}\.tmp|\.\.\d+\.{_UUID}\.tmp\.crc")
CHECKPOINT_LOGS = ("offsets", "commits")


def clear_abandoned_log_writes(checkpoint: Path) -> list[Path]:
    """Delete the temporary files of log entries a stopped query never finished; returns them.

    Why: a query stopped while it writes its first offsets entry can leave `.0.<uuid>.tmp` behind (measured: 2 of
    150 stops within 0.6 s of a start). With no entry to resume from, Spark 4 treats the next start as a new query
    and refuses a checkpoint whose `offsets` folder is not empty (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY), so
    every later start of that checkpoint failed. A temporary file is never an entry: no query of this checkpoint
    runs when it is started, so none is being written.
    """
    abandoned = [
        path
        for log in CHECKPOINT_LOGS
        if (checkpoint / log).is_dir()
        for path in sorted((checkpoint / log).iterdir())
        if ABANDONED_LOG_WRITE.fullmatch(path.name)
    ]
    for path in abandoned:
        path.unlink(missing_ok=True)
    return abandoned


def start_query(
    rows: DataFrame, query_name: str, checkpoint: Path, writer: BatchWriter, trigger: Trigger
) -> StreamingQuery:
    """Start one named `foreachBatch` query; its checkpoint makes a restart resume where it stopped (and one a
    stop interrupted while it wrote its first entry starts afresh: `clear_abandoned_log_writes`)."""
    clear_abandoned_log_writes(checkpoint)
    stream = rows.writeStream.queryName(query_name).foreachBatch(raising_compact_java_errors(writer))
    stream = stream.option("checkpointLocation", str(checkpoint))
    return trigger.apply(stream).start()


@dataclass(frozen=True)
class TableWriter:
    """Writes micro-batches to several tables, each idempotently: appends by default (`append_new_records`: no
    record twice by the table's `record_key`, and where the table may hold some of them, Delta txnAppId
    `{app_id}:{table}` with txnVersion = batch id), or any other `TableWrite` (e.g. `tables.upserting`).

    `app_id` must name the checkpoint: batch ids restart at 0 in every checkpoint, so one app id for two
    checkpoints writing the same tables would make the second skip its first batches as already written.
    """

    config: RadarConfig
    app_id: str
    write: TableWrite = append_new_records
    schemas: Mapping[str, TableSchema] = field(default_factory=lambda: TABLES)
    # False when the stage caches what it derives from the batch itself (ingest's routed batch): caching the
    # source batch as well would hold every binary key/value twice
    persist_batch: bool = True
    # the tables being created meanwhile (`tables.ensure_tables_in_background`): waited for before the first write
    tables_ready: Future[None] | None = None

    def write_tables(
        self, tables: Mapping[str, DataFrame], batch_id: int, source_ranges: Mapping[str, Sequence[Row]] | None = None
    ) -> None:
        """Write one micro-batch to its tables concurrently: each Delta commit is mostly driver-side latency, so
        the tables' commits overlap instead of queueing. The first failure is raised after all writes finished,
        and the batch is retried whole (every write being idempotent on its own)."""
        if not tables:
            return
        if self.tables_ready is not None:
            self.tables_ready.result()  # raises what their creation raised
        ranges_of = source_ranges or {}
        with (
            writing(TableCatalog(self.config).tables_dir) as alone,
            ThreadPoolExecutor(max_workers=len(tables), thread_name_prefix="radar-write") as pool,
        ):
            futures = [
                pool.submit(
                    self.write,
                    in_one_file_when_small(rows, ranges_of.get(name)),
                    self.config,
                    self.schemas[name],
                    f"{self.app_id}:{name}",
                    batch_id,
                    ranges=ranges_of.get(name),
                    alone=alone,
                )
                for name, rows in tables.items()
            ]
            for future in futures:  # within `writing`: the batch is alone until its last write commits
                future.result()

    def foreach_batch(self, tables_of: BatchTables) -> BatchWriter:
        """A `foreachBatch` body: split the batch into tables (`tables_of`), then write them all.

        A table left out of a batch is not written at all: a Delta commit costs most of a second even when empty,
        and skipping a txnVersion is harmless (a replayed batch leaves out the same tables again).
        """

        def write_batch(batch: DataFrame, batch_id: int) -> None:
            if self.persist_batch:
                batch.persist()
            try:
                with tables_of(batch) as split:
                    self.write_tables(split.tables, batch_id, split.source_ranges)
            finally:
                if self.persist_batch:
                    batch.unpersist()

        return write_batch


KAFKA_ERROR = re.compile(r"org\.apache\.kafka\.common\.errors\.(\w+Exception): ([^\n]*)")
KAFKA_ACCESS_ADVICE = {
    "TopicAuthorizationException": "grant the principal radar runs as Read and Describe on that topic "
    "(kafka-acls.sh --add --allow-principal User:NAME --operation Read --operation Describe --topic TOPIC)",
    "GroupAuthorizationException": "grant the principal radar runs as Read on the consumer groups of Spark's Kafka "
    "source (kafka-acls.sh --add --allow-principal User:NAME --operation Read --resource-pattern-type prefixed "
    f"--group {OWN_GROUP_PREFIX})",
    "ClusterAuthorizationException": "grant the principal radar runs as Describe on the cluster",
    "SaslAuthenticationException": "check the credentials kafka.security names (expired or changed?) and its "
    "sasl_mechanism",
    "SslAuthenticationException": "check the CA kafka.security's truststore location names, and the broker's address "
    "against its certificate",
}
"""What to do about a Kafka client error that ends a query: access, not a bug, so a sentence and no plan."""


CHECKPOINT_DAMAGE = re.compile(
    r"Checksum error: \S*/(?:offsets|commits|sources)/|CONCURRENT_STREAM_LOG_UPDATE|Log file was malformed"
    r"|Unexpected end-of-input|JsonParseException|incomplete log file|UNSUPPORTED_LOG_VERSION|Unsupported log version"
)
"""How Spark says a query's checkpoint log is damaged (a truncated or half-written entry, or one entry of a batch
deleted without the other): `pipelines.storage.checkpoint_repair` mends it."""


def query_failure_sentence(name: str, error: str, failure_log: Path | None = None) -> str:
    """A failed query in a sentence: a Kafka access error named with what grants it; otherwise the error's condition
    and innermost cause, where its whole text is (`failure_log`), and what to do."""
    found = KAFKA_ERROR.search(error)
    if found is not None and found.group(1) in KAFKA_ACCESS_ADVICE:
        return (
            f"streaming query {name} stopped: the Kafka cluster refused it ({found.group(1)}: "
            f"{found.group(2).strip()[:300]}); {KAFKA_ACCESS_ADVICE[found.group(1)]}."
        )
    condition = re.search(r"\[([A-Z][A-Z_.]+)\]", error)
    # the innermost cause a user can act on: the last `SomeError: message` line (a Python traceback's own last
    # line, or a Java "Caused by:"), else the first line
    causes = re.findall(r"^(?:Caused by: )?([\w.$]*(?:Exception|Error)): (.+)$", error, flags=re.MULTILINE)
    lines = error.strip().splitlines()
    cause = f"{causes[-1][0].rsplit('.', 1)[-1]}: {causes[-1][1]}" if causes else (lines[0] if lines else "no message")
    said = f"{condition.group(1)}, {cause.strip()}" if condition and condition.group(1) not in cause else cause.strip()
    where = f"; the full error is in {failure_log}" if failure_log is not None else ""
    if CHECKPOINT_DAMAGE.search(error):
        return (
            f"streaming query {name} cannot read its checkpoint ({said[:400]}){where}. Run `radar repair-checkpoint` "
            "(with the same --data-dir): it sets the damaged batch aside, the batch is redone and no record is "
            "written twice; then start radar again."
        )
    return (
        f"streaming query {name} failed ({said[:400]}){where}. Its checkpoint resumes where it stopped: start radar "
        "again (a supervisor or a Databricks continuous job does so by itself)."
    )


FAILURE_LOG = Path("logs") / "query-failures.log"
"""Under the data dir: every failed query's whole error (Java stack, query state and plan), for the sentence."""


def failure_log_of(config: RadarConfig) -> Path:
    return config.data_dir / FAILURE_LOG


def keep_failure(failure_log: Path | None, name: str, error: str) -> Path | None:
    """Append a failed query's whole error to `failure_log`; the log's path, or None where it cannot be written
    (a read-only data dir: the sentence then stands alone)."""
    if failure_log is None:
        return None
    try:
        failure_log.parent.mkdir(parents=True, exist_ok=True)
        with failure_log.open("a", encoding="utf-8") as log:
            log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} streaming query {name} failed\n")
            log.write(error.rstrip() + "\n")
    except OSError:
        return None
    return failure_log


def wait_a_while(query: StreamingQuery, timeout_s: float) -> None:
    """Up to `timeout_s`, or until `query` ends; a query that failed raises here in pyspark, which the caller's next
    look at the queries finds and says as a sentence (`raise_failures`), never as a Py4J traceback."""
    from pyspark.errors import StreamingQueryException

    with contextlib.suppress(StreamingQueryException):
        query.awaitTermination(timeout_s)


@dataclass(frozen=True)
class RunningQueries:
    """The running queries of one or more stages; a failure is said in a sentence, its whole error kept in
    `failure_log`."""

    all: tuple[StreamingQuery, ...] = ()
    failure_log: Path | None = None

    def __add__(self, other: RunningQueries) -> RunningQueries:
        return RunningQueries(self.all + other.all, self.failure_log or other.failure_log)

    def __iter__(self) -> Iterator[StreamingQuery]:
        return iter(self.all)

    @property
    def all_active(self) -> bool:
        return all(q.isActive for q in self.all)

    def stop(self) -> None:
        """Stop every query (the current micro-batch is abandoned; the next start redoes it)."""
        self.stop_within_bound()

    def await_all(self) -> None:
        """Wait until every query terminated; raises the first query's failure."""
        for query in self.all:
            query.awaitTermination()

    def await_all_or_raise(self) -> None:
        """Wait until every query terminated; a failed query is raised as a sentence (`raise_failures`)."""
        for query in self.all:
            try:
                query.awaitTermination()
            except Exception:  # pyspark's StreamingQueryException: raise_failures says it as a sentence
                continue
        self.raise_failures()

    def raise_failures(self, stopped_by_request: Collection[str] = ()) -> None:
        """A failed query as a sentence (`radar` prints RuntimeErrors without a stack trace). Queries whose ids are
        in `stopped_by_request` were running when a stop was asked for: an error they ended with came from that stop
        (`interrupted_by_stop`), not from their work, and is not raised."""
        for query in self.all:
            if query.id in stopped_by_request:
                continue
            error = query.exception()
            if error is not None:
                text = str(error)
                kept = keep_failure(self.failure_log, query.name, text)
                raise RuntimeError(query_failure_sentence(query.name, text, kept)) from None

    def active_ids(self) -> frozenset[str]:
        """The ids of the queries still running: those a stop asked for now interrupts."""
        return frozenset(q.id for q in self.all if q.isActive)

    def interrupted_by_stop(self, stopped_by_request: Collection[str]) -> list[str]:
        """The queries that a requested stop interrupted into an error, each as `name (CONDITION)`.

        Why: Spark counts a stop that interrupts a micro-batch as a clean stop only when the interruption surfaces
        as an InterruptedException. A stop that lands while a transformWithState query's Python runner is starting
        surfaces as STREAMING_PYTHON_RUNNER_INITIALIZATION_COMMUNICATION_FAILURE ("Cause: null") instead, and the
        query ends "failed" (CI saw it on a loaded host). The abandoned micro-batch is redone on the next start."""
        interrupted = []
        for query in self.all:
            error = query.exception() if query.id in stopped_by_request else None
            if error is not None:
                text = str(error).strip()
                condition = re.match(r"\[([A-Z_]+)\]", text)
                interrupted.append(f"{query.name} ({condition.group(1) if condition else text.splitlines()[0][:120]})")
        return interrupted

    def await_with_progress(self, label: str, poll_s: float = 1.0, *, unit: str = "records") -> None:
        """Wait for the queries, with a live status line on stderr and a summary at the end (`unit`: what the
        queries' input rows are)."""
        from rebalance_radar.pipelines.runtime.console import StatusLine

        status = StatusLine(label, self.all, unit=unit)
        try:
            while active := [q for q in self.all if q.isActive]:
                status.update()
                wait_a_while(active[0], poll_s)
            status.update()
        finally:
            status.finish()
        self.raise_failures()

    def stop_within_bound(self) -> list[str]:
        """Stop every query; a query that does not stop within `spark.sql.streaming.stopTimeout` is abandoned (its
        micro-batch is redone on the next start, every write being idempotent). Returns what went wrong.

        Side by side: one after another, four queries each taking most of the timeout made a stop last minutes.
        """

        def stop(query: StreamingQuery) -> str | None:
            try:
                if query.isActive:
                    query.stop()
            except Exception as error:  # a timeout or an interrupted batch: the next start redoes the batch
                first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                return f"{query.name}: {first[:200]}"
            return None

        if not self.all:
            return []
        with ThreadPoolExecutor(max_workers=len(self.all), thread_name_prefix="radar-stop") as pool:
            return [problem for problem in pool.map(stop, self.all) if problem is not None]


class Stage(ABC):
    """One part of a run (ingest, detect, ...) with one lifecycle: `start()` its queries, `stop()` them, or
    `with stage:`. A stage is started at most once."""

    name: str = "stage"

    def __init__(self) -> None:
        self._queries: RunningQueries | None = None
        self._stream_lock: Path | None = None

    @abstractmethod
    def start_queries(self) -> RunningQueries:
        """Create the stage's tables if needed and start its queries."""

    def stream(self) -> tuple[Path, str] | None:
        """(checkpoint dir, checkpoint name) of the stream the stage writes, which one process at a time may run
        (`data_dir_locks.hold_stream`); None for a stage with no checkpoint of its own."""
        return None

    def start(self) -> RunningQueries:
        if self._queries is not None:
            raise RuntimeError(f"stage {self.name} was already started")
        stream = self.stream()
        if stream is not None:
            self._stream_lock = hold_stream(*stream)  # before any query touches the checkpoint
        try:
            self._queries = self.start_queries()
        except BaseException:
            self._release_stream()
            raise
        return self._queries

    def _release_stream(self) -> None:
        if self._stream_lock is not None:
            release_stream(self._stream_lock)
            self._stream_lock = None

    @property
    def queries(self) -> RunningQueries:
        if self._queries is None:
            raise RuntimeError(f"stage {self.name} is not started")
        return self._queries

    def stop(self) -> None:
        if self._queries is not None:
            self._queries.stop()
        self._release_stream()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_stages(stack: ExitStack, stages: Sequence[Stage]) -> RunningQueries:
    """Start `stages` in order, each stopped when `stack` closes (in reverse order); returns all their queries."""
    running = RunningQueries()
    for stage in stages:
        running += stack.enter_context(stage).queries
    return running


def stop_stages(stages: Sequence[Stage]) -> None:
    """Stop `stages` now, in reverse order as their stack will (stopping again then is a no-op): a command reads
    what they leave behind (the detection stage's drained gold rows) only after this."""
    for stage in reversed(stages):
        stage.stop()


def run_until_stopped(
    queries: RunningQueries,
    *,
    label: str,
    stop_after_s: float | None = None,
    poll_s: float = 1.0,
    detections: Callable[[], int | None] | None = None,
    verbose: bool = False,
    problems: Callable[[], list[str]] | None = None,
    status_file: RunStatusFile | None = None,
    on_progress: ProgressHook | None = None,
) -> None:
    """Keep `queries` running, with a live status line (and `problems`' sentences: a telemetry path failing), until
    Ctrl-C, SIGTERM, `stop_after_s` or a failed query; then stop them within a bound and raise a failure as a
    sentence. `on_progress` gets each micro-batch's progress report, read as the status line reads them.

    The first Ctrl-C / SIGTERM asks for a stop (one line); a second one exits the process at once (one line): the
    unfinished micro-batch is redone on the next start, every table write being idempotent. PySpark's own SIGINT
    handler (cancel all jobs, raise KeyboardInterrupt inside a py4j call) is replaced meanwhile: it is what spilled
    Py4JErrors and thousands of Java stack lines.
    """
    from rebalance_radar.pipelines.runtime.console import StatusLine

    requests = 0

    def request_stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal requests
        requests += 1
        if requests == 1:
            print(f"\n{label}: stopping; Ctrl-C again to quit at once", file=sys.stderr, flush=True)
        else:
            print(f"{label}: quit; the next start redoes the unfinished micro-batch", file=sys.stderr, flush=True)
            from rebalance_radar.pipelines.runtime.session import kill_driver_jvm

            kill_driver_jvm()
            os._exit(130)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    stopped_by_request: frozenset[str] = frozenset()
    started = time.monotonic()
    status = StatusLine(label, queries.all, detections=detections, problems=problems, on_progress=on_progress)

    def report(state: str, error: str | None = None, *, force: bool = False) -> None:
        if status_file is not None:
            found = problems() if problems is not None and state == "running" else []
            status_file.write(state, status.query_statuses(), found, error, force=force)

    try:
        while not requests and queries.all_active:
            if stop_after_s is not None and time.monotonic() - started > stop_after_s:
                break
            status.update()
            report("running")
            if queries.all:
                wait_a_while(queries.all[0], poll_s)
            else:
                time.sleep(poll_s)
        status.update()
        status.close()
        if not verbose:  # an abandoned micro-batch logs its interruption; it is expected and redone on restart
            from rebalance_radar.pipelines.runtime.session import running_session, silence_driver_stderr

            spark = running_session()
            if spark is not None:
                spark.sparkContext.setLogLevel("OFF")
            silence_driver_stderr()  # and its Python workers print tracebacks past log4j
        stopped_by_request = queries.active_ids()
        problems = queries.stop_within_bound()
        status.count()  # the reports of the batches that ran until the stop
        if problems and verbose:
            print(f"{label}: abandoned while stopping: " + "; ".join(problems), file=sys.stderr)
        for interrupted in queries.interrupted_by_stop(stopped_by_request):
            print(
                f"{label}: the stop interrupted {interrupted}; the next start redoes its micro-batch",
                file=sys.stderr,
            )
    finally:
        status.finish()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    try:
        queries.raise_failures(stopped_by_request)
    except RuntimeError as failure:
        report("failed", str(failure), force=True)
        raise
    report("stopped", force=True)
