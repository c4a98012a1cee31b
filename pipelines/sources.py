"""Streaming sources with one schema: Spark's built-in Kafka source, and `replay` over dump files.

Both give `key, value, topic, partition, offset, timestamp, source_error`; `source_error` is set only for a dump
line that is not a dump record, so the pipeline can quarantine it instead of stopping. Dump lines are read by the
same parser as `radar decode` (`pipelines.dump.parse_dump_line`).
"""

from __future__ import annotations

import glob
import hashlib
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from pipelines.config import RadarConfig, SecretLookup, kafka_client_options
from pipelines.dump import DumpFormatError, check_dump_files, parse_dump_line
from pipelines.session import on_databricks

SOURCE_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "source_error")
# Spark's Admin-based Kafka offset reader drops internal topics (its ConsumerStrategy filters `isInternal`), so
# `__consumer_offsets` reads as empty; the consumer-based offset fetching subscribes by name and reads it.
DEPRECATED_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
# A replayed dump line as `parse_dump_batches` gives it (the timestamp is typed afterwards, in Spark).
PARSED_DUMP_DDL = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp_ms BIGINT, source_error STRING"
)
_PARSED_DUMP = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp_ms", pa.int64()),
        ("source_error", pa.string()),
    ]
)


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
            "startingOffsets": config.kafka.starting_offsets,
            "failOnDataLoss": "false",
            "kafka.isolation.level": "read_committed",
            "includeHeaders": "false",
        }
    )
    if config.kafka.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(config.kafka.max_offsets_per_trigger)
    return options


def kafka_stream(
    spark: SparkSession, config: RadarConfig, topics: Sequence[str], bootstrap_servers: str | None = None
) -> DataFrame:
    """A stream of Kafka records from `topics` in the common source schema."""
    lookup = databricks_secret_lookup(spark) if on_databricks() and config.kafka.security.secret_scope else None
    options: Mapping[str, str] = kafka_source_options(config, topics, bootstrap_servers, lookup)
    if any(topic.startswith("__") for topic in topics):
        spark.conf.set(DEPRECATED_OFFSET_FETCHING, "true")
    raw = spark.readStream.format("kafka").options(**options).load()
    return raw.select(
        "key", "value", "topic", "partition", "offset", "timestamp", F.lit(None).cast("string").alias("source_error")
    )


def parse_dump_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`mapInArrow` body of the replay: every text line through the one dump parser (`pipelines.dump`); a line that
    is not a dump record keeps its text as the value and says why in `source_error`."""
    for batch in batches:
        rows: dict[str, list[Any]] = {name: [] for name in _PARSED_DUMP.names}
        for line in batch.column("value").to_pylist():
            try:
                record = parse_dump_line(line, "dump line")
            except DumpFormatError as exc:
                parsed: tuple[Any, ...] = (None, line.encode("utf-8"), "", -1, -1, 0, str(exc))
            else:
                parsed = (
                    record.key,
                    record.value,
                    record.topic,
                    record.partition,
                    record.offset,
                    record.timestamp,
                    None,
                )
            for name, value in zip(_PARSED_DUMP.names, parsed, strict=True):
                rows[name].append(value)
        yield pa.RecordBatch.from_pydict(rows, schema=_PARSED_DUMP)


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


def replay_stream(spark: SparkSession, paths: Sequence[str | Path], staging_root: Path | None = None) -> DataFrame:
    """Dump files read as a stream (run it with an available-now trigger to finish), same schema as Kafka."""
    if not paths:
        raise ValueError("replay needs at least one dump file (--input DUMP)")
    check_dump_files(paths)
    # A file stream reads folders, and infers partition columns from `key=value` subfolders; read a private
    # folder holding only links to the inputs (deterministic, so a checkpoint resumes on the same source).
    staging = replay_staging_dir(paths, staging_root)
    lines: DataFrame | None = None
    for link in staging_links(paths, staging):
        one = (
            spark.readStream.format("text")
            .option("maxFilesPerTrigger", 1)
            .option("pathGlobFilter", glob.escape(link.name))
            .load(str(staging))
        )
        lines = one if lines is None else lines.unionByName(one)
    assert lines is not None
    parsed = lines.where(F.length(F.trim("value")) > 0).mapInArrow(parse_dump_batches, PARSED_DUMP_DDL)
    return parsed.select(
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        F.timestamp_millis("timestamp_ms").alias("timestamp"),
        "source_error",
    )
