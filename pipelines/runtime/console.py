"""What `radar` prints while it works: Spark and py4j quiet unless `--verbose`, one live status line for the
streaming queries (records/s, micro-batches, how far behind the end of each topic), and a summary at stop.

On-call engineers read this console in an incident: library chatter and stack traces hide the one line that
matters, so the JVM logs at ERROR by default and the status is one line, redrawn in place on a terminal.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.streaming.listener import StreamingQueryProgress
    from rich.console import Console
    from rich.table import Table

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
PLAIN_STATUS_EVERY_S = 10.0
"""Without a terminal: a status line this often, changed or not: a log that goes quiet looks like a hung command."""
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


ProgressHook = Callable[["StreamingQueryProgress"], None]
"""Called once with each new micro-batch's progress report, in batch order (`pipelines.stages.source_gaps`)."""


@dataclass
class QueryTally:
    """What one query did so far: records per batch id (recentProgress keeps only the last
    `spark.sql.streaming.numRecentProgressUpdates` batches, 100 by default: a poll a second keeps up)."""

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

    def update(self, query: StreamingQuery) -> list[StreamingQueryProgress]:
        """Count the batches run since the last call; returns their reports. The newest report is one request; the
        list of recent ones (a request per report) is read only when batches ran in between."""
        last = query.lastProgress
        if last is None:
            return []
        if last.batchId > self.last_batch_id + 1:
            new = [progress for progress in query.recentProgress if progress.batchId > self.last_batch_id]
        else:
            new = [last] if last.batchId > self.last_batch_id else []
        counted = []
        for progress in new:
            if progress.batchId > self.last_batch_id:  # a batch's report, then idle reports with its id
                self.records += int(progress.numInputRows or 0)
                self.batches += 1
                self.last_batch_id = progress.batchId
                self.last_batch_at = progress.timestamp
                counted.append(progress)
        self.rate = float(last.processedRowsPerSecond or 0.0)
        duration = (last.durationMs or {}).get("triggerExecution")
        self.batch_ms = int(duration) if duration is not None else None
        if last.stateOperators:
            self.state_rows = sum(int(op.numRowsTotal or 0) for op in last.stateOperators)
            self.state_memory_bytes = sum(int(op.memoryUsedBytes or 0) for op in last.stateOperators)
            self.state_sst_bytes = sum(
                int((op.customMetrics or {}).get(ROCKSDB_SST_BYTES, 0)) for op in last.stateOperators
            )
        behind = [offsets_behind(json.loads(source.json)) for source in last.sources]  # offsets as Spark wrote them
        known = [b for b in behind if b is not None]
        self.behind = sum(known) if known else None
        return counted

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
        on_progress: ProgressHook | None = None,
    ) -> None:
        self.label = label
        self.problems = problems
        self.on_progress = on_progress
        self._said: set[str] = set()
        self.queries = tuple(queries)
        self.tallies = {q.name: QueryTally(q.name, unit=unit) for q in self.queries}
        self.detections = detections
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self._last_plain = 0.0
        self._last_detections = 0.0
        self._counting = threading.Event()
        self._detections: int | None = None
        self._live: Any = None
        if is_terminal(self.stream):
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

    def count(self) -> None:
        """Read the queries' new progress reports (also once they stopped: their last batches' reports stay)."""
        for query in self.queries:
            try:
                counted = self.tallies[query.name].update(query)
            except Exception:  # a query stopping under us: keep the last known numbers
                continue
            if self.on_progress is not None:  # outside the guard: a failing hook is not a stopping query
                for progress in counted:
                    self.on_progress(progress)

    def update(self) -> None:
        self.count()
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
            self._last_plain = time.monotonic()
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


# --- output that fits where it goes ----------------------------------------------------------------------------
# A terminal gets rich's live views and colours; a pipe (`| tee`, a CI log, `ssh host radar ... > file`) gets plain
# lines, each ended by a newline as it happens, with no control characters: what is printed there is read later,
# by a person or by grep.

PIPED_WIDTH = 160
"""A pipe has no width: tables are laid out this wide there unless COLUMNS says otherwise (a log is read in an
editor or a browser, rarely at 80 columns)."""
FLEXIBLE_MIN_WIDTH = 40  # the column that folds (a summary) keeps at least this much room before others are dropped
OUTPUT_FORMATS = ("table", "json", "csv")


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal a live view can redraw (a closed or odd stream counts as a pipe)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def output_width(stream: TextIO) -> int:
    """The width to lay tables out in: COLUMNS when set, else the terminal's, else `PIPED_WIDTH`."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if is_terminal(stream):
        return shutil.get_terminal_size().columns
    return PIPED_WIDTH


def output_console(stream: TextIO | None = None) -> Console:
    """A rich console for `stream` (stdout by default): colours and styles on a terminal; on a pipe plain text
    (rich writes no escape codes to what is not a terminal), `output_width` wide."""
    from rich.console import Console

    stream = stream or sys.stdout
    terminal = is_terminal(stream)
    return Console(
        file=stream,
        width=output_width(stream),
        force_terminal=terminal,
        no_color=not terminal,
        highlight=terminal,
        emoji=False,
    )


def print_line(console: Console, text: str) -> None:
    """One line printed whole: never wrapped (a hint or a command must paste as it is), no markup read in it."""
    console.print(text, soft_wrap=True, markup=False, highlight=False)


def print_table(console: Console, table: Table) -> None:
    """`table` on `console`; on a pipe without the spaces rich pads each line with to the full width."""
    if console.is_terminal:
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    console.out("\n".join(line.rstrip() for line in captured.get().splitlines()), highlight=False)


def fitted_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    flexible: str | None = None,
    droppable: Sequence[str] = (),
    styles: Sequence[str] | None = None,
) -> tuple[Table, tuple[str, ...]]:
    """A table of `rows` (cells as text) within `width`: every column as wide as its widest cell and never wrapped,
    except `flexible` (a summary), which folds into the room left; when that room is below `FLEXIBLE_MIN_WIDTH`,
    the `droppable` columns go, in that order (kubectl's narrow view). Returns the table and the columns shown."""
    from rich import box
    from rich.table import Table

    natural = {
        name: max([len(name), *(len(line) for row in rows for line in row[index].splitlines() or [""])])
        for index, name in enumerate(columns)
    }
    shown = list(columns)

    def room_left() -> int:  # box.SIMPLE: one space of padding each side of a cell, a space between columns
        fixed = sum(natural[name] + 2 for name in shown if name != flexible)
        return width - fixed - (len(shown) - 1) - (2 if flexible in shown else 0)

    for name in droppable:
        if flexible is None or room_left() >= min(FLEXIBLE_MIN_WIDTH, natural.get(flexible, 0)):
            break
        if name in shown:
            shown.remove(name)
    table = Table(title=title or None, box=box.SIMPLE, expand=False, title_justify="left", pad_edge=False)
    for name in shown:
        if name == flexible:
            table.add_column(name, overflow="fold", min_width=min(FLEXIBLE_MIN_WIDTH, natural[name]))
        else:
            table.add_column(name, no_wrap=True, overflow="ellipsis", min_width=natural[name])
    indexes = [columns.index(name) for name in shown]
    for row_index, row in enumerate(rows):
        style = styles[row_index] if styles is not None else ""
        table.add_row(*(row[i] for i in indexes), style=style or None)
    return table, tuple(shown)


def record_value(value: Any) -> Any:
    """A value as JSON and CSV carry it: timestamps in ISO-8601 (UTC as stored), the rest as it is."""
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def write_records(
    rows: Iterable[Mapping[str, Any]], columns: Sequence[str], output_format: str, stream: TextIO
) -> None:
    """Rows for a program: `json` one object a line (JSON Lines), `csv` with a header row; each line ends with a
    newline, whatever the platform."""
    if output_format == "json":
        for row in rows:
            record = {name: record_value(row.get(name)) for name in columns}
            stream.write(json.dumps(record, default=str, separators=(",", ":")) + "\n")
    elif output_format == "csv":
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if row.get(name) is None else record_value(row.get(name)) for name in columns])
    else:
        raise ValueError(f"--format {output_format} is not one of {', '.join(OUTPUT_FORMATS)}.")


class PlainTicker:
    """While a long step runs (a JVM starting, a script playing): on a pipe, a line `label: text()` every
    `PLAIN_STATUS_EVERY_S`, so a log shows the command is alive; on a terminal nothing (its live view shows it)."""

    def __init__(self, label: str, text: Callable[[], str], stream: TextIO | None = None) -> None:
        self.label, self.text = label, text
        self.stream = stream or sys.stderr
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def waiting(cls, label: str, what: str) -> PlainTicker:
        """`label: <what>, N s` every few seconds on a pipe while a step with nothing else to say runs."""
        started = time.monotonic()
        return cls(label, lambda: f"{what}, {time.monotonic() - started:.0f} s")

    def _run(self) -> None:
        while not self._stop.wait(PLAIN_STATUS_EVERY_S):
            with contextlib.suppress(Exception):  # a status that cannot be said now is said at the next tick
                print(f"{self.label}: {self.text()}", file=self.stream, flush=True)

    def __enter__(self) -> PlainTicker:
        if not is_terminal(self.stream):
            self._thread = threading.Thread(target=self._run, name="radar-plain-status", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)


class CountLine:
    """A count that grows while a step runs (files downloaded): redrawn in place on a terminal, a plain line at most
    every `PLAIN_STATUS_EVERY_S` on a pipe; `done()` ends it with a newline."""

    def __init__(self, what: str, stream: TextIO | None = None) -> None:
        self.what = what
        self.stream = stream or sys.stderr
        self.terminal = is_terminal(self.stream)
        self.count = 0
        self._printed = time.monotonic()
        self._shown = 0

    def add(self, n: int = 1) -> None:
        self.count += n
        if self.terminal:
            self.stream.write(f"\r  {self.count} {self.what}")
            self.stream.flush()
            self._shown = self.count
        elif time.monotonic() - self._printed >= PLAIN_STATUS_EVERY_S:
            self._printed = time.monotonic()
            self._shown = self.count
            print(f"  {self.count} {self.what}", file=self.stream, flush=True)

    def done(self) -> None:
        if self.terminal and self._shown:
            self.stream.write("\n")
        elif not self.terminal and self.count != self._shown:
            print(f"  {self.count} {self.what}", file=self.stream)
        self.stream.flush()


# --- third-party messages: a log file under the data dir ---------------------------------------------------------

LOGS_DIR = "logs"


class LibraryLog:
    """Where a command's third-party messages go: librdkafka's lines, py4j's, Maven's output,
    `<data dir>/logs/radar-<command>.log`. They are kept (a support question needs them), not printed; the file is
    named once, on stderr, the first time something is written to it."""

    def __init__(self, data_dir: Path, command: str, stream: TextIO | None = None) -> None:
        self.path = data_dir / LOGS_DIR / f"radar-{command}.log"
        self.command = command
        self.stream = stream  # None: the process's stderr when the line is printed (it may be replaced meanwhile)
        self._named = False
        self._lock = threading.Lock()

    def write(self, source: str, text: str) -> None:
        """Append `text` (one message or many lines) from `source` (librdkafka, maven, ...)."""
        stamp = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S")
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8", errors="replace") as log:
                    for line in text.splitlines() or [""]:
                        log.write(f"{stamp} {source}: {line}\n")
            except OSError:
                return  # a read-only data dir: the messages are dropped, as they were before
            if not self._named:
                self._named = True
                said = f"radar {self.command}: library messages are kept in {self.path}"
                with contextlib.suppress(ValueError):  # a stream closed under a thread (the JVM's pump at exit)
                    print(said, file=self.stream or sys.stderr, flush=True)


class LibraryLogHandler(logging.Handler):
    """A logging handler that writes to the command's `LibraryLog` (librdkafka's `logger`, py4j)."""

    def __init__(self, log: LibraryLog, source: str) -> None:
        super().__init__(logging.DEBUG)
        self.log, self.source = log, source

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            self.log.write(self.source, record.getMessage())


_library_log: LibraryLog | None = None


def keep_library_messages(data_dir: Path, command: str) -> LibraryLog:
    """From now on, route the third-party loggers of this process to `<data dir>/logs/radar-<command>.log`."""
    global _library_log
    _library_log = LibraryLog(data_dir, command)
    from rebalance_radar.emitters.cluster_probe import CLIENT_LOGGER

    for name, source in ((CLIENT_LOGGER, "librdkafka"), ("py4j", "py4j")):
        logger = logging.getLogger(name)
        logger.handlers = [h for h in logger.handlers if not isinstance(h, (LibraryLogHandler, logging.NullHandler))]
        logger.addHandler(LibraryLogHandler(_library_log, source))
        logger.propagate = False
    return _library_log


def library_log() -> LibraryLog | None:
    """The running command's log of third-party messages (None outside a `radar` command)."""
    return _library_log


@contextlib.contextmanager
def kept_in_library_log(source: str) -> Iterator[Callable[[str], None]]:
    """A writer for a third-party tool's output lines (Maven's): to the command's log, or dropped outside one."""
    log = library_log()
    yield (lambda text: log.write(source, text)) if log is not None else (lambda _text: None)
