"""Streaming sources with one schema: Spark's built-in Kafka source, and `replay` over dump files.

Both give `key, value, topic, partition, offset, timestamp, source_error`; `source_error` is set only for a dump
line that is not a dump record, so the pipeline can quarantine it instead of stopping.
"""

from __future__ import annotations

import glob
import hashlib
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from pipelines.config import RadarConfig, SecretLookup, kafka_client_options
from pipelines.session import on_databricks

SOURCE_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "source_error")
# Spark's Admin-based Kafka offset reader drops internal topics (its ConsumerStrategy filters `isInternal`), so
# `__consumer_offsets` reads as empty; the consumer-based offset fetching subscribes by name and reads it.
DEPRECATED_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
DUMP_LINE_DDL = "topic STRING, partition INT, offset BIGINT, timestamp BIGINT, key STRING, value STRING, codec STRING"


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


def _payload(text: Column, codec: Column) -> Column:
    """Key/value bytes from their dump text; null when the text is not valid for its codec."""
    return (
        F.when(codec == "hex", F.try_to_binary(text, F.lit("hex")))
        .when(codec == "utf8", F.try_to_binary(text, F.lit("utf-8")))
        .otherwise(F.try_to_binary(text, F.lit("base64")))
    )


def _dump_error(line: Column, parsed: Column, codec: Column) -> Column:
    return (
        F.when(parsed.isNull(), F.lit("not a JSON object"))
        .when(
            parsed["topic"].isNull() | parsed["partition"].isNull() | parsed["offset"].isNull(),
            F.lit("missing topic, partition or offset"),
        )
        .when(~codec.isin("base64", "hex", "utf8"), F.concat(F.lit("unknown codec "), codec))
        .when(
            (parsed["key"].isNotNull() & _payload(parsed["key"], codec).isNull())
            | (parsed["value"].isNotNull() & _payload(parsed["value"], codec).isNull()),
            F.concat(F.lit("key or value is not valid "), codec),
        )
    )


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
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise FileNotFoundError(f"dump file(s) not found: {', '.join(missing)}; pass files written by `radar capture`")
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
    parsed = F.from_json(F.col("value"), DUMP_LINE_DDL, {"mode": "PERMISSIVE"})
    rows = lines.where(F.length(F.trim("value")) > 0).select(F.col("value").alias("line"), parsed.alias("d"))
    codec = F.coalesce(F.col("d.codec"), F.lit("base64"))
    error = _dump_error(F.col("line"), F.col("d"), codec)
    return rows.select(
        F.when(error.isNull(), _payload(F.col("d.key"), codec)).alias("key"),
        F.when(error.isNull(), _payload(F.col("d.value"), codec)).otherwise(F.encode("line", "UTF-8")).alias("value"),
        F.coalesce(F.col("d.topic"), F.lit("")).alias("topic"),
        F.coalesce(F.col("d.partition"), F.lit(-1)).alias("partition"),
        F.coalesce(F.col("d.offset"), F.lit(-1).cast("bigint")).alias("offset"),
        F.timestamp_millis(F.coalesce(F.col("d.timestamp"), F.lit(0).cast("bigint"))).alias("timestamp"),
        error.alias("source_error"),
    )
