"""Streaming sources with one schema: Spark's built-in Kafka source, and `replay` over dump files.

Both give `key, value, topic, partition, offset, timestamp, source_error`; `source_error` is set only for a dump
line that is not a dump record, so the pipeline can quarantine it instead of stopping. Dump lines are read by the
same reader as `radar decode` (`pipelines.formats.dump.decode_dump_line`).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
import tempfile
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.emitters.kafka_settings import ClientSettings
from rebalance_radar.pipelines.config import OWN_GROUP_PREFIX, RadarConfig, SecretLookup, kafka_client_options
from rebalance_radar.pipelines.formats.dump import check_dump_files
from rebalance_radar.pipelines.formats.dump_columns import (
    PARSED_DUMP,
    decode_dump_content,
    decode_dump_lines_by_rows,
    holds_only_topic,
)
from rebalance_radar.pipelines.formats.log_files import SNIFFED_BYTES, is_log_file, log_file_rows, log_partition
from rebalance_radar.pipelines.runtime.session import on_databricks

SOURCE_COLUMNS = (
    *("key", "value", "topic", "partition", "offset", "timestamp"),
    *("source_error", "source_file", "source_line"),  # set by replay only: a dump line's problem, file, line number
)
# Spark's Admin-based Kafka offset reader drops internal topics (its ConsumerStrategy filters `isInternal`), so
# `__consumer_offsets` reads as empty; the consumer-based offset fetching subscribes by name and reads it.
DEPRECATED_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
# A replayed dump line as `parse_dump_batches` gives it (the timestamp is typed afterwards, in Spark).
PARSED_DUMP_DDL = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp_ms BIGINT, source_error STRING, "
    "source_file STRING, source_line BIGINT"
)
LINES_PER_ARROW_BATCH = 10_000
PIECE_BYTES = 128 << 20
"""The most a piece of a cut dump holds, about (a line longer than that stays whole): a `binaryFile` row holds a
whole file in the JVM's heap (a 164 MB dump read whole exhausted Spark's default 1 GB; no row may exceed 2 GB), so
the heap a replay needs does not grow with the dump. A micro-batch's fixed cost (its caches, a write and a commit per
table) favours few large batches: the 400k-record benchmark dump (169 MB) ingested in 7.3-10.5 s warm as two
pieces in one batch, 9.1-10.4 s as four pieces in two."""
PIECES_TOGETHER = 2
"""Pieces a micro-batch reads side by side, each parsed by a task of its own: a file is one task, and a whole 128 MiB
piece parsed on one core while the other waited, then moved to both cores by a shuffle. A dump is cut into a
multiple of this many pieces of equal size. Fixed, not the session's cores: the same file must give the same pieces
on any machine, or a replay resumed elsewhere reads it all again."""
CUT_ABOVE_BYTES = 16 << 20
"""A dump bigger than this is cut into pieces (`staged_inputs`); a smaller one parses on one core in ~0.3 s."""
PIECE_STAMP_STEP_NS = 1_000_000  # piece k is stamped the input's modification time + k of these (the stream's ms)
PIECE_MARK = "@line-"  # a piece's staging name: <entry>@line-<its first line's number, 12 digits>
BINARY_FILE_DDL = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"  # Spark's binaryFile
CONSUMER_FETCH_OPTIONS = {"kafka.max.poll.records": "5000", "kafka.max.partition.fetch.bytes": str(4 << 20)}
"""Spark's Kafka reader seeks before every poll (`InternalKafkaConsumer.fetch`: `seek` then `poll`), so each poll
is a fetch of its own and returns at most `max.poll.records`: with Kafka's defaults (500 records, 1 MiB a partition)
a large backlog took a round trip per 500 records; these read it in a fraction of that time (`benchmarks/ingest.py`,
its results in `benchmarks/results/`). A live micro-batch of a few records is one poll either way.
At most 4 MiB is buffered per partition."""


def databricks_secret_lookup(spark: SparkSession) -> SecretLookup:
    """Secrets from a Databricks secret scope (dbutils.secrets); values are never logged."""
    from pyspark.dbutils import DBUtils  # type: ignore[import-not-found]  # only on Databricks

    secrets = DBUtils(spark).secrets
    return lambda scope, key: secrets.get(scope=scope, key=key)


def kafka_source_options(
    config: RadarConfig,
    topics: Sequence[str],
    bootstrap_servers: str | None,
    secret_lookup: SecretLookup | None = None,
) -> dict[str, str]:
    """Options of Spark's Kafka source. `__consumer_offsets` is compacted and transactional: read committed data
    only, tolerate compaction gaps, and subscribe by name (pattern subscriptions skip internal topics)."""
    options: dict[str, str] = dict(
        kafka_client_options(config.kafka, bootstrap_servers, secret_lookup=secret_lookup, shaded=on_databricks())
    )
    options.update(
        {
            "subscribe": ",".join(topics),
            "failOnDataLoss": "false",
            "kafka.isolation.level": "read_committed",
            "includeHeaders": "false",
            "groupIdPrefix": OWN_GROUP_PREFIX,
            **CONSUMER_FETCH_OPTIONS,
        }
    )
    options.update(starting_options(config.kafka.starting_offsets))
    if config.kafka.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(config.kafka.max_offsets_per_trigger)
    if config.kafka.max_records_per_task:
        options["maxRecordsPerPartition"] = str(config.kafka.max_records_per_task)
    return options


def starting_options(starting: str | datetime) -> dict[str, str]:
    """Spark's options for where a new checkpoint starts: `earliest`/`latest`, or a moment (`startingTimestamp`, in
    ms), where a partition with no record since then starts at its end rather than failing the query."""
    if isinstance(starting, datetime):
        return {
            "startingTimestamp": str(int(starting.timestamp() * 1000)),
            "startingOffsetsByTimestampStrategy": "latest",
        }
    return {"startingOffsets": starting}


def secret_lookup_of(spark: SparkSession, config: RadarConfig) -> SecretLookup | None:
    """Databricks' secret scope when the config names one and radar runs there; else secrets come from env."""
    return databricks_secret_lookup(spark) if on_databricks() and config.kafka.security.secret_scope else None


def cluster_client_settings(spark: SparkSession, config: RadarConfig, bootstrap_servers: str) -> ClientSettings:
    """librdkafka settings for the cluster radar reads (its clock ticks, the cluster id), with the credentials
    `kafka.security` names: the one builder, as for Spark's source."""
    from rebalance_radar.emitters.kafka_settings import client_settings

    return client_settings(bootstrap_servers, config.kafka.security, secret_lookup=secret_lookup_of(spark, config))


def kafka_cluster_id(spark: SparkSession, config: RadarConfig, bootstrap_servers: str, timeout_s: float = 30.0) -> str:
    """The Kafka cluster id (Admin describeCluster): a stream checkpoint holds offsets of one cluster only, so a
    checkpoint is named by it and another cluster (a wiped or re-created broker at the same address) starts afresh
    instead of resuming at offsets that do not exist there."""
    from confluent_kafka.admin import AdminClient

    from rebalance_radar.emitters.cluster_probe import client_logger

    settings = dict(cluster_client_settings(spark, config, bootstrap_servers))
    admin = AdminClient({**settings, "log_level": 3, "logger": client_logger()})
    try:
        cluster_id = admin.describe_cluster(request_timeout=timeout_s).result(timeout=timeout_s + 5).cluster_id
    except Exception as exc:
        raise RuntimeError(
            f"could not read the Kafka cluster id from {bootstrap_servers} within {timeout_s:.0f} s ({exc}); "
            "check kafka.bootstrap_servers and the security settings."
        ) from None
    if not cluster_id:
        raise RuntimeError(f"the Kafka cluster at {bootstrap_servers} reported no cluster id.")
    return str(cluster_id)


def kafka_stream(
    spark: SparkSession, config: RadarConfig, topics: Sequence[str], bootstrap_servers: str | None = None
) -> DataFrame:
    """A stream of Kafka records from `topics` in the common source schema."""
    options: Mapping[str, str] = kafka_source_options(
        config, topics, bootstrap_servers, secret_lookup_of(spark, config)
    )
    if any(topic.startswith("__") for topic in topics):
        spark.conf.set(DEPRECATED_OFFSET_FETCHING, "true")
    raw = spark.readStream.format("kafka").options(**options).load()
    return raw.select(
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        F.lit(None).cast("string").alias("source_error"),
        F.lit(None).cast("string").alias("source_file"),
        F.lit(None).cast("bigint").alias("source_line"),
    )


@dataclass(frozen=True)
class ReplayedFile:
    """One input of a replay as its `binaryFile` row brings it."""

    name: str  # the path the user gave
    partition: int  # a replayed log file's records' partition: its resolved path's CRC-32 (`log_partition`)
    modified_ms: int
    content: pa.Buffer
    is_log: bool  # a log file rather than a dump, by its first MiB (`pipelines.formats.log_files.is_log_file`)
    first_line: int = 1  # the number of its first line: a piece of a large dump starts further in (`staged_inputs`)

    @classmethod
    def of(cls, name: str, partition: int, modified_ms: int, content: pa.Buffer) -> ReplayedFile:
        head = content.slice(0, min(content.size, SNIFFED_BYTES)).to_pybytes()
        return cls(name, partition, modified_ms, content, is_log_file(head, modified_ms))


GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class UnreadableFile:
    """An input whose bytes cannot be read at all (a corrupt gzip file): one quarantine row says so."""

    name: str
    reason: str

    def rows(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist(
            [
                {
                    "value": None,
                    "topic": "",
                    "partition": -1,
                    "offset": -1,
                    "timestamp_ms": 0,
                    "source_error": f"{self.name}: {self.reason}",
                    "source_file": self.name,
                    "source_line": 0,
                }
            ],
            schema=PARSED_DUMP,
        )


def _dump_files(
    batches: Iterator[pa.RecordBatch], files: Mapping[str, str], first_lines: Mapping[str, int]
) -> Iterator[ReplayedFile | UnreadableFile]:
    """Every `binaryFile` row as a `ReplayedFile` (gzip-compressed files, as rotated logs are, decompressed);
    `files` maps a staging entry's name to the path the user gave, `first_lines` a piece's name to the number of its
    first line (`staged_inputs`)."""
    for batch in batches:
        contents = batch.column("content")
        modified = batch.column("modificationTime").cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()
        for index, path in enumerate(batch.column("path").to_pylist()):
            link = unquote(path.rsplit("/", 1)[-1])
            name = files.get(link, path)
            local = os.path.realpath(unquote(path.removeprefix("file:")))  # the staging link's target
            content = contents[index].as_buffer()
            if content.size >= 2 and content.slice(0, 2).to_pybytes() == GZIP_MAGIC:
                try:
                    content = pa.py_buffer(gzip.decompress(content.to_pybytes()))
                except (OSError, EOFError, zlib.error) as error:
                    yield UnreadableFile(
                        name, f"gzip data that cannot be decompressed ({error}); nothing of it was read"
                    )
                    continue
            first_line = first_lines.get(link)
            if first_line is not None:  # a piece: only dumps are cut into pieces (`staged_inputs` decided it)
                yield ReplayedFile(name, log_partition(local), modified[index] or 0, content, False, first_line)
            else:
                yield ReplayedFile.of(name, log_partition(local), modified[index] or 0, content)


def _in_batches_of(parsed: Iterable[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    """The rows of `parsed`, in order, cut into batches of `size` rows across files (the last one shorter)."""
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    for batch in parsed:
        pending.append(batch)
        pending_rows += batch.num_rows
        if pending_rows >= size:
            rows = pa.Table.from_batches(pending, schema=PARSED_DUMP).combine_chunks()
            while rows.num_rows >= size:
                yield from rows.slice(0, size).to_batches()
                rows = rows.slice(size)
            pending, pending_rows = rows.to_batches(), rows.num_rows
    if pending_rows:
        yield from pa.Table.from_batches(pending, schema=PARSED_DUMP).combine_chunks().to_batches()


def parse_dump_files(
    batches: Iterator[pa.RecordBatch],
    files: Mapping[str, str],
    first_lines: Mapping[str, int] | None = None,
    other_than_topic: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """`mapInArrow` body of the replay over whole dump files (`binaryFile` rows: path, content): the dump format's
    vectorised reader (`pipelines.formats.dump_columns`), which leaves every line it cannot prove to the one dump reader
    (`pipelines.formats.dump.decode_dump_line`, as `radar decode`); a line that is not a dump record keeps its bytes as
    the value, says why in `source_error`, and every row keeps its file and line number. Batches of
    `LINES_PER_ARROW_BATCH` rows across files, as `parse_dump_files_by_rows` cuts them.
    `files` maps a staging entry's name to the path the user gave; `first_lines` a piece's to its first line.
    With `other_than_topic` (the telemetry query's read), a dump proven to hold records of that topic only
    (`holds_only_topic`) gives no rows: that query keeps none of them, and parsing them cost it a whole parse."""
    read = _dump_files(batches, files, first_lines or {})
    if other_than_topic is not None:
        read = (file for file in read if not _holds_only(file, other_than_topic))
    return _in_batches_of((rows for file in read for rows in _file_rows(file)), LINES_PER_ARROW_BATCH)


def _holds_only(file: ReplayedFile | UnreadableFile, topic: str) -> bool:
    """A dump (not a log file, nor a file that could not be read) whose records are all of `topic`."""
    return isinstance(file, ReplayedFile) and not file.is_log and holds_only_topic(file.content, topic)


def _file_rows(file: ReplayedFile | UnreadableFile) -> Iterator[pa.RecordBatch]:
    """A dump's lines through the dump readers; a log file's records as telemetry (`pipelines.formats.log_files`)."""
    if isinstance(file, UnreadableFile):
        return iter([file.rows()])
    if file.is_log:
        content = file.content.to_pybytes()
        return log_file_rows(content, file.name, file.partition, file.modified_ms, LINES_PER_ARROW_BATCH)
    return decode_dump_content(file.content, file.name, LINES_PER_ARROW_BATCH, file.first_line)


def parse_dump_files_by_rows(
    batches: Iterator[pa.RecordBatch], files: Mapping[str, str], first_lines: Mapping[str, int] | None = None
) -> Iterator[pa.RecordBatch]:
    """`parse_dump_files` with every line through the one dump reader, row by row: the reference the vectorised
    reader must match, and the row-by-row side of benchmarks/dump_parse.py."""

    def by_rows() -> Iterator[pa.RecordBatch]:
        for file in _dump_files(batches, files, first_lines or {}):
            if isinstance(file, UnreadableFile) or file.is_log:  # as `parse_dump_files` routes them
                yield from _file_rows(file)
                continue
            lines = file.content.to_pybytes().splitlines()
            numbers = [number for number, raw in enumerate(lines, file.first_line) if raw.strip()]
            yield decode_dump_lines_by_rows([lines[number - file.first_line] for number in numbers], numbers, file.name)

    return _in_batches_of(by_rows(), LINES_PER_ARROW_BATCH)


def replay_staging_dir(paths: Sequence[str | Path], root: Path | None = None) -> Path:
    """The replay's own input folder: one per set of dump files, under `root` (default: the temp folder)."""
    digest = hashlib.sha256("\n".join(sorted(str(Path(p).resolve()) for p in paths)).encode()).hexdigest()[:12]
    return (root or Path(tempfile.gettempdir()) / "radar-replay-inputs") / digest


def staging_links(paths: Sequence[str | Path], staging: Path) -> list[Path]:
    """Symlinks to the dump files inside `staging`, numbered so two inputs with one name stay apart."""
    staging.mkdir(parents=True, exist_ok=True)
    links = []
    for index, path in enumerate(paths):
        link = staging / f"{index:04d}-{Path(path).name}"
        target = Path(path).resolve()
        if link.is_symlink() and link.resolve() != target:
            link.unlink()
        if not link.is_symlink():
            link.symlink_to(target)
        links.append(link)
    return links


@dataclass(frozen=True)
class StagedInput:
    """One input as the replay's file stream reads it: its link, or its pieces (`PIECE_BYTES`)."""

    path: str  # as the user gave it
    entry: str  # its staging name: the link's, or the pieces' common prefix
    pieces: tuple[tuple[str, int], ...]  # (staging name, first line) of each piece; empty: read whole, by the link

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.pieces) or (self.entry,)

    @property
    def glob_filter(self) -> str:
        """`pathGlobFilter` matching its staging names only."""
        return glob.escape(self.entry) + (f"{PIECE_MARK}*" if self.pieces else "")


def piece_count(size: int) -> int:
    """How many pieces a dump of `size` bytes is cut into: a multiple of `PIECES_TOGETHER`, none over
    `PIECE_BYTES` (but for a line longer than that)."""
    return PIECES_TOGETHER * -(-size // (PIECES_TOGETHER * PIECE_BYTES))


def _line_end_at_or_after(source: BinaryIO, position: int, size: int) -> int:
    """The offset just past the first `\n` at or after `position` (the file's size when there is none)."""
    source.seek(position)
    while True:
        chunk = source.read(1 << 16)
        if not chunk:
            return size
        found = chunk.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(chunk)


def _piece_ends(source: BinaryIO, size: int, count: int) -> list[int]:
    """Where each of about `count` equal pieces ends: at the first line end at or past each k/count of the file,
    so no line is split (a `\r\n` neither); a line longer than a piece leaves a piece fewer."""
    ends: list[int] = []
    for k in range(1, count):
        target = -(-size * k // count)
        if ends and ends[-1] >= target:
            continue
        end = _line_end_at_or_after(source, target - 1, size)
        if end < size:
            ends.append(end)
    return [*ends, size]


def _cut_into_pieces(target: Path, staging: Path, entry: str) -> tuple[tuple[str, int], ...]:
    """Copy `target` into `staging` as `piece_count` pieces of about equal size, each ending at a line end (a line
    longer than a piece stays whole), named by their first line's number (as `DumpLines` counts lines: `\n`, `\r`,
    `\r\n`). The same file always gives the same pieces, so a replay resumed from its checkpoint reads none again;
    pieces of an earlier version of the file are removed.

    Piece k is stamped the input's modification time + k ms: the file stream reads files oldest first, and pieces of
    one time were read in the folder's order, so a piece of lower offsets could follow a higher one and make every
    table's write look for its records in the table (`tables.append_new_records`) instead of appending."""
    pieces: list[tuple[str, int]] = []
    stamp = target.stat()
    with target.open("rb") as source:
        line, start = 1, 0
        for end in _piece_ends(source, stamp.st_size, piece_count(stamp.st_size)):
            source.seek(start)
            piece = source.read(end - start)
            name = f"{entry}{PIECE_MARK}{line:012d}"
            written = staging / name
            modified_ns = stamp.st_mtime_ns + len(pieces) * PIECE_STAMP_STEP_NS
            if not written.is_file() or written.stat().st_size != len(piece):
                partial_path = staging / f".{name}.partial"
                partial_path.write_bytes(piece)
                partial_path.replace(written)
            if written.stat().st_mtime_ns != modified_ns:
                os.utime(written, ns=(stamp.st_atime_ns, modified_ns))
            pieces.append((name, line))
            line += len(piece.splitlines())
            start = end
    names = {name for name, _ in pieces}
    for stale in staging.glob(glob.escape(entry) + f"{PIECE_MARK}*"):
        if stale.name not in names:
            stale.unlink()
    return tuple(pieces)


def _is_plain_dump(target: Path) -> bool:
    """Not gzip-compressed and not a log file, by its first MiB (as the replay's reader decides)."""
    with target.open("rb") as source:
        head = source.read(SNIFFED_BYTES)
    return not head.startswith(GZIP_MAGIC) and not is_log_file(head, int(target.stat().st_mtime * 1000))


def staged_inputs(paths: Sequence[str | Path], staging: Path) -> list[StagedInput]:
    """The replay's inputs inside `staging`: a link to each, except a dump bigger than `CUT_ABOVE_BYTES`, which is
    copied there in pieces (`_cut_into_pieces`). Gzip files and log files are read whole."""
    links = staging_links(paths, staging)
    staged = []
    for path, link in zip(paths, links, strict=True):
        target = link.resolve()
        if target.stat().st_size > CUT_ABOVE_BYTES and _is_plain_dump(target):
            staged.append(StagedInput(str(path), link.name, _cut_into_pieces(target, staging, link.name)))
        else:
            for stale in staging.glob(glob.escape(link.name) + f"{PIECE_MARK}*"):
                stale.unlink()
            staged.append(StagedInput(str(path), link.name, ()))
    return staged


def remove_pieces(paths: Sequence[str | Path], staging_root: Path | None = None) -> None:
    """Delete the staged pieces of a finished replay (copies of its large dumps). A replay of the same files again
    cuts the same pieces, which its checkpoint has read already."""
    for piece in replay_staging_dir(paths, staging_root).glob(f"*{PIECE_MARK}*"):
        piece.unlink()


@dataclass(frozen=True)
class ReplayFiles:
    """A replay's inputs as a stream of whole files; each query reads its records through `records` (one staging of
    the inputs for both: cutting a large dump into pieces reads all of it)."""

    files: DataFrame  # `binaryFile` rows: path, modificationTime, content
    given: Mapping[str, str]  # a staging name -> the path the user gave
    first_lines: Mapping[str, int]  # a piece's staging name -> the number of its first line

    def records(self, other_than_topic: str | None = None) -> DataFrame:
        """The files' records, same schema as Kafka. With `other_than_topic`, files proven to hold records of that
        topic only give no rows (`parse_dump_files`)."""
        body = partial(
            parse_dump_files, files=self.given, first_lines=self.first_lines, other_than_topic=other_than_topic
        )
        return self.files.mapInArrow(body, PARSED_DUMP_DDL).select(
            "key",
            "value",
            "topic",
            "partition",
            "offset",
            F.timestamp_millis("timestamp_ms").alias("timestamp"),
            "source_error",
            "source_file",
            "source_line",
        )


def replay_files(spark: SparkSession, paths: Sequence[str | Path], staging_root: Path | None = None) -> ReplayFiles:
    """Dump files read as a stream (run it with an available-now trigger to finish)."""
    if not paths:
        raise ValueError("replay needs at least one dump file (--input DUMP)")
    check_dump_files(paths)
    # A file stream reads folders, and infers partition columns from `key=value` subfolders; read a private
    # folder holding only links to the inputs (deterministic, so a checkpoint resumes on the same source).
    # Whole files (`binaryFile`), so each line keeps its number and its bytes (a text source numbers nothing and
    # replaces bytes that are not UTF-8); a file must then fit one row (2 GB).
    # A dump bigger than `CUT_ABOVE_BYTES` is read as pieces of it, `PIECES_TOGETHER` a micro-batch, side by side.
    staging = replay_staging_dir(paths, staging_root)
    files: DataFrame | None = None
    staged = staged_inputs(paths, staging)
    for one_input in staged:
        one = (
            spark.readStream.format("binaryFile")
            .schema(BINARY_FILE_DDL)
            .option("maxFilesPerTrigger", PIECES_TOGETHER if one_input.pieces else 1)
            .option("pathGlobFilter", one_input.glob_filter)
            .load(str(staging))
            .select("path", "modificationTime", "content")
        )
        files = one if files is None else files.unionByName(one)
    assert files is not None
    given = {name: one_input.path for one_input in staged for name in one_input.names}
    first_lines = {name: line for one_input in staged for name, line in one_input.pieces}
    return ReplayFiles(files, given, first_lines)


def replay_stream(spark: SparkSession, paths: Sequence[str | Path], staging_root: Path | None = None) -> DataFrame:
    """Dump files' records read as a stream (run it with an available-now trigger to finish), same schema as Kafka."""
    return replay_files(spark, paths, staging_root).records()
