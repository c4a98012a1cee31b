"""What `radar` prints while it works: Spark and py4j quiet unless `--verbose`, one live status line for the
streaming queries (records/s, micro-batches, how far behind the end of each topic), and a summary at stop.

On-call engineers read this console in an incident: library chatter and stack traces hide the one line that
matters, so the JVM logs at ERROR by default and the status is one line, redrawn in place on a terminal.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pyspark.sql.streaming import StreamingQuery

if TYPE_CHECKING:
    from rebalance_radar.pipelines.runtime.run_status import QueryStatus

# Spark WARNs that are expected in normal operation and say nothing actionable, muted even with --verbose.
EXPECTED_WARNING_LOGGERS = (
    # "Current batch is falling behind. The trigger interval is ..." on every slow micro-batch
    "org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor",
    "org.apache.spark.sql.execution.streaming.ProcessingTimeExecutor",
)
# ERRORs Spark libraries log for conditions radar handles itself, muted at the default level (shown with --verbose);
# a real failure still reaches the user, as the failed query's sentence.
EXPECTED_ERROR_LOGGERS = (
    # "Fatal error in MERGE with materialized source in attempt N" and a ConcurrentAppendException's whole stack, on
    # every live gold MERGE that collides with a new detection's append; `detect._merge_retrying_collisions` redoes it
    "org.apache.spark.sql.delta.commands.MergeIntoCommand",
    # "Error in TaskFailureListener" and an InterruptedException's stack when a stop interrupts a stateful task
    # whose RocksDB changelog is being cancelled (seen stopping a live run); the task's failure is the stop's
    "org.apache.spark.TaskContextImpl",
    # "Store broadcast broadcast_N fail, remove all pieces of the broadcast" when a stop interrupts a micro-batch
    # while it broadcasts (seen at the end of two live benchmark runs); the broadcast's exception is rethrown, so a
    # real failure still ends its query with a sentence
    "org.apache.spark.broadcast.TorrentBroadcast",
)
PLAIN_STATUS_EVERY_S = 10.0  # without a terminal: a line at most this often, when something changed
PLAIN_STATUS_UNCHANGED_S = 60.0  # and at least this often, as a sign of life
DETECTIONS_EVERY_S = 10.0  # counting a Delta table is a Spark job: not on every redraw
ROCKSDB_SST_BYTES = "rocksdbSstFileSize"  # a RocksDB state store's custom metric: the state's size on disk


SPARK_LOG_BYTES = "10MB"
SPARK_LOG_FILES = 5


def log4j2_properties(level: str, log_file: Path | None = None) -> str:
    """Spark's driver logging: everything at `level` on stderr, the expected WARNs muted (see above).

    At the default level (ERROR) with a `log_file`, Spark's errors go to that file (rolled at `SPARK_LOG_BYTES`,
    `SPARK_LOG_FILES` kept) and not to the console: a failed task or query logged its Java stack, state and plan
    there (a hundred lines and more) before radar's own sentence, which names the file where the whole error is.
    Only FATAL still reaches the console."""
    quiet = level.upper() == "ERROR" and log_file is not None
    lines = [
        f"rootLogger.level = {level.lower()}",
        "rootLogger.appenderRef.stderr.ref = console",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.target = SYSTEM_ERR",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex",
    ]
    if quiet:
        assert log_file is not None
        lines += [
            "rootLogger.appenderRef.stderr.level = fatal",
            "rootLogger.appenderRef.file.ref = file",
            "appender.file.type = RollingFile",
            "appender.file.name = file",
            f"appender.file.fileName = {log_file}",
            f"appender.file.filePattern = {log_file}.%i",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = %d{yyyy-MM-dd HH:mm:ss} %p %c: %m%n%ex",
            "appender.file.policies.type = Policies",
            "appender.file.policies.size.type = SizeBasedTriggeringPolicy",
            f"appender.file.policies.size.size = {SPARK_LOG_BYTES}",
            "appender.file.strategy.type = DefaultRolloverStrategy",
            f"appender.file.strategy.max = {SPARK_LOG_FILES}",
        ]
    # PySpark's gateway counts as a shell: Spark then sets the console to the level of the shell's logger (WARN if
    # unset) and says so in two lines; at the root's level it does neither.
    for index, name in enumerate(("org.apache.spark.api.python.PythonGatewayServer", "org.apache.spark.repl.Main")):
        lines += [f"logger.shell{index}.name = {name}", f"logger.shell{index}.level = {level.lower()}"]
    for index, name in enumerate(EXPECTED_WARNING_LOGGERS):
        lines += [f"logger.expected{index}.name = {name}", f"logger.expected{index}.level = error"]
    if level.upper() == "ERROR":
        for index, name in enumerate(EXPECTED_ERROR_LOGGERS):
            lines += [f"logger.handled{index}.name = {name}", f"logger.handled{index}.level = fatal"]
    return "\n".join(lines) + "\n"


def write_log4j2_properties(folder: Path, level: str, log_file: Path | None = None) -> Path:
    """The logging config file the driver JVM is started with (`-Dlog4j2.configurationFile`)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = log4j2_properties(level, log_file)
    path = folder / f"log4j2-{level.lower()}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.properties"
    if not path.is_file():
        path.write_text(text)
    return path


PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def quiet_python_logging(verbose: bool) -> None:
    """py4j logs every callback-server hiccup (and the Python traceback of an interrupted `foreachBatch`); PySpark
    logs every analysis error as a JSON line of many kilobytes with the Java stack, before raising it."""
    from pyspark.logger import PySparkLogger

    logging.getLogger("py4j").setLevel(logging.INFO if verbose else logging.CRITICAL)
    for name in PYSPARK_ERROR_LOGGERS:  # created as PySparkLoggers: PySpark passes them keyword arguments
        PySparkLogger.getLogger(name).setLevel(logging.ERROR if verbose else logging.CRITICAL)


def offsets_behind(source: Mapping[str, Any]) -> int | None:
    """Records between what a Kafka source read (endOffset) and the end of its topics (latestOffset); None for
    sources that do not know their end (files)."""

    def parsed(value: object) -> dict[str, dict[str, int]] | None:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        return value if isinstance(value, dict) else None

    end, latest = parsed(source.get("endOffset")), parsed(source.get("latestOffset"))
    if end is not None and latest is not None:
        try:
            return sum(
                max(int(offset) - int(end.get(topic, {}).get(partition, offset)), 0)
                for topic, partitions in latest.items()
                for partition, offset in partitions.items()
            )
        except (AttributeError, TypeError, ValueError):
            pass
    metrics = source.get("metrics") or {}
    if "maxOffsetsBehindLatest" in metrics:
        return int(float(metrics["maxOffsetsBehindLatest"]))
    return None


@dataclass
class QueryTally:
    """What one query did so far: records per batch id (recentProgress keeps only the last few batches)."""

    name: str
    records: int = 0
    batches: int = 0
    last_batch_id: int = -1  # what was counted: a monitor that runs for months keeps no entry per batch
    last_batch_at: str | None = None  # the newest progress's timestamp (ISO, UTC)
    rate: float = 0.0
    behind: int | None = None
    unit: str = "records"  # what its input rows are: a replay's file streams read files (or pieces of one)
    batch_ms: int | None = None  # the newest micro-batch's duration
    state_rows: int | None = None  # what a stateful query's state holds now
    state_memory_bytes: int | None = None
    """The state store's memory (RocksDB: its block cache and write buffers, bounded by their configured sizes;
    it grows until they fill, whatever the state's size)."""
    state_sst_bytes: int | None = None
    """The state's size on disk (RocksDB's SST files): what grows if the state does."""

    def update(self, query: StreamingQuery) -> None:
        for progress in query.recentProgress:
            if progress.batchId > self.last_batch_id:
                self.records += int(progress.numInputRows or 0)
                self.batches += 1
                self.last_batch_id = progress.batchId
                self.last_batch_at = progress.timestamp
        last = query.lastProgress
        if last is None:
            return
        self.rate = float(last.processedRowsPerSecond or 0.0)
        duration = (last.durationMs or {}).get("triggerExecution")
        self.batch_ms = int(duration) if duration is not None else None
        if last.stateOperators:
            self.state_rows = sum(int(op.numRowsTotal or 0) for op in last.stateOperators)
            self.state_memory_bytes = sum(int(op.memoryUsedBytes or 0) for op in last.stateOperators)
            self.state_sst_bytes = sum(
                int((op.customMetrics or {}).get(ROCKSDB_SST_BYTES, 0)) for op in last.stateOperators
            )
        behind = [offsets_behind(source) for source in last.sources]
        known = [b for b in behind if b is not None]
        self.behind = sum(known) if known else None

    def describe(self, with_rate: bool = True) -> str:
        rate = f" ({self.rate:,.0f}/s)" if with_rate else ""
        behind = "" if self.behind is None else f", {self.behind:,} behind"
        return f"{self.name}: {self.records:,} {self.unit}{rate} in {self.batches} batches{behind}"


class StatusLine:
    """The queries' live status on stderr: redrawn in place on a terminal (rich), a plain line every
    `PLAIN_STATUS_EVERY_S` otherwise; `finish()` prints the summary."""

    def __init__(
        self,
        label: str,
        queries: Iterable[StreamingQuery],
        *,
        detections: Callable[[], int | None] | None = None,
        stream: TextIO | None = None,
        unit: str = "records",
        problems: Callable[[], list[str]] | None = None,
    ) -> None:
        self.label = label
        self.problems = problems
        self._said: set[str] = set()
        self.queries = tuple(queries)
        self.tallies = {q.name: QueryTally(q.name, unit=unit) for q in self.queries}
        self.detections = detections
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self._last_plain = 0.0
        self._last_text = ""
        self._last_detections = 0.0
        self._counting = threading.Event()
        self._detections: int | None = None
        self._live: Any = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.live import Live

            self._live = Live("", console=Console(file=self.stream), refresh_per_second=2, transient=True)
            self._live.start()

    def text(self, with_rate: bool = True) -> str:
        parts = [tally.describe(with_rate) for tally in self.tallies.values()]
        if self._detections is not None:
            parts.append(f"{self._detections:,} detections")
        return "; ".join(parts)

    def problem_text(self) -> str:
        """The telemetry paths failing now (`problems`), each said once more as a line of its own when it starts: on a
        terminal the status line is redrawn, and a failure must not scroll away unseen."""
        found = self.problems() if self.problems is not None else []
        for problem in found:
            if problem.split(" (")[0] not in self._said:
                self._said.add(problem.split(" (")[0])
                if self._live is not None:
                    self._live.console.print(f"{self.label}: {problem}")
                else:
                    print(f"{self.label}: {problem}", file=self.stream, flush=True)
        return "; ".join(f"FAILING: {problem.split(' (')[0]}" for problem in found)

    def update(self) -> None:
        for query in self.queries:
            try:
                self.tallies[query.name].update(query)
            except Exception:  # a query stopping under us: keep the last known numbers
                continue
        due = time.monotonic() - self._last_detections >= DETECTIONS_EVERY_S
        if self.detections is not None and due and not self._counting.is_set():
            self._last_detections = time.monotonic()
            self._counting.set()
            threading.Thread(target=self._count_detections, name="radar-status", daemon=True).start()
        failing = self.problem_text()
        if self._live is not None:
            self._live.update(f"{self.label}: {'; '.join(filter(None, (self.text(), failing)))}")
        elif time.monotonic() - self._last_plain >= PLAIN_STATUS_EVERY_S:
            text = "; ".join(filter(None, (self.text(), failing)))
            if text != self._last_text or time.monotonic() - self._last_plain >= PLAIN_STATUS_UNCHANGED_S:
                self._last_plain, self._last_text = time.monotonic(), text
                print(f"{self.label}: {text}", file=self.stream, flush=True)

    def query_statuses(self) -> list[QueryStatus]:
        """Each query as the run's status file records it (`pipelines.runtime.run_status`)."""
        from rebalance_radar.pipelines.runtime.run_status import QueryStatus

        statuses = []
        for query in self.queries:
            tally = self.tallies[query.name]
            try:
                active = bool(query.isActive)
            except Exception:  # the session is going away: a query we cannot ask is no longer running
                active = False
            statuses.append(
                QueryStatus(
                    name=query.name,
                    active=active,
                    batches=tally.batches,
                    records=tally.records,
                    last_batch_at=tally.last_batch_at,
                    batch_ms=tally.batch_ms,
                    state_rows=tally.state_rows,
                    state_memory_bytes=tally.state_memory_bytes,
                    state_sst_bytes=tally.state_sst_bytes,
                )
            )
        return statuses

    def _count_detections(self) -> None:
        """In the background: a count is a Spark job, and the status must not wait for it."""
        try:
            assert self.detections is not None
            with contextlib.suppress(Exception):  # the table is being created: count it next time
                self._detections = self.detections()
        finally:
            self._counting.clear()

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def finish(self) -> None:
        """Stop the live line and print the summary (records per query, batches, time)."""
        self.close()
        elapsed = time.monotonic() - self.started
        print(f"{self.label}: {elapsed:.0f} s; {self.text(with_rate=False)}", file=self.stream, flush=True)
