"""A design weighed for issue #50 and not taken: OffsetCommit records read by Spark SQL written from Kafka's message
definitions, so a batch's commits would never cross to Python (`mapInArrow`). This script keeps that SQL and measures
it against the path radar takes, on the same cached batch of the realistic mix (`benchmarks.ingest.realistic_mix`):

- `python`: the rows routed as the offsets query routes them (`route_offsets`: the codec over Arrow, its numpy path
  for OffsetCommit, every record type) into `noop`;
- `sql`: the SQL's columns computed, persisted, and split into accepted commits and the rest (both into `noop`),
  with whole-stage code generation on and off; `sql_accepted` and `sql_commit`: the acceptance test and the struct
  alone, over the working columns cached; `baseline`: the cached rows into `noop`.

The SQL accepts only what it reads exactly as the codec would (bounds, UTF-8, the end of key and value, tags,
timestamps): a decoder that skips those checks is faster and wrong on bad bytes, which must reach quarantine. Spark
has no function that reads an integer from binary; `conv(hex(substring(...)))` is the only way, a string round trip
per field. The script checks the SQL's rows against the codec's on the batch (`rows_equal`).

    python -m benchmarks.sql_decode --records 400000 --repeat 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from benchmarks.ingest import realistic_mix
from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.pipelines.config import load_config
from rebalance_radar.pipelines.runtime.session import build_spark_session
from rebalance_radar.pipelines.stages.ingest import route_offsets
from rebalance_radar.transforms.schemas import DECODED_OFFSETS_BATCH, MAX_TIMESTAMP_MS, OFFSET_COMMITS
from rebalance_radar.transforms.wire.coordinator_records import RECORD_TYPES
from rebalance_radar.transforms.wire.spec import FIXED_SIZES, MessageSpec

RECORD_TYPE = 1  # OffsetCommit (0, the legacy key, is left to the codec)
HOT_VALUE_VERSIONS = (3, 4)  # what Kafka 3.x and 4.x brokers write; the SQL of every version took the optimizer and
# code generation seconds per batch, so older versions are left to the codec
ACCEPTED = "_radar_commit_accepted"  # added by `with_offset_commits`: read here, or left to the codec
COMMIT = "_radar_commit"  # added by `with_offset_commits`: the `offset_commit` struct of an accepted record

# `offset_commits` columns read from the key's and value's fields (Kafka's names)
KEY_FIELD_OF_COLUMN: dict[str, str] = {"group_id": "group", "topic": "topic", "partition": "partition"}
VALUE_FIELD_OF_COLUMN: dict[str, str] = {
    "committed_offset": "offset",
    "leader_epoch": "leaderEpoch",
    "metadata": "metadata",
    "commit_ts": "commitTimestamp",
    "expire_ts": "expireTimestamp",
    "topic_id": "topicId",
}
ABSENT_VALUE: dict[str, int] = {"leaderEpoch": -1}  # a field a version lacks is null but this, as in the codec's rows
_TIMESTAMP_FIELDS = frozenset({"commitTimestamp", "expireTimestamp"})
_SPARK_INTS = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint"}
_PREFIX = "_radar_oc_"  # the working columns, dropped at the end


def _unsigned(data: str, at: str, size: int) -> str:
    """Big-endian unsigned integer of `size` bytes (at most 4) at 1-based position `at`, as SQL."""
    return f"cast(conv(hex(substring({data}, {at}, {size})), 16, 10) as bigint)"


def _signed(data: str, at: str, size: int) -> str:
    """Big-endian two's-complement integer of `size` bytes at `at`, as SQL (a bigint)."""
    if size == 8:
        return f"cast(conv(hex(substring({data}, {at}, 8)), 16, -10) as bigint)"
    raw = _unsigned(data, at, size)
    half = 1 << (8 * size - 1)
    return f"(CASE WHEN {raw} >= {half} THEN {raw} - {half << 1} ELSE {raw} END)"


def _uuid_text(raw: str) -> str:
    """16 bytes as Kafka prints a uuid (URL-safe base64, no padding); the all-zero default is absent (null)."""
    return f"(CASE WHEN hex({raw}) != '{'0' * 32}' THEN replace(translate(base64({raw}), '+/', '-_'), '=', '') END)"


@dataclass
class _Walk:
    """One message version read through one binary column: the working columns it needs, stage by stage (a string's
    length and header size), the SQL of its fields, and the checks that must all hold to accept it."""

    data: str
    name: str  # unique among walks: names its working columns
    stages: list[dict[str, str]] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    at: str = "3"  # after the int16 record type or value version
    strings: int = 0

    def fits(self, size: int | str) -> None:
        self.checks.append(f"{self.at} + {size} - 1 <= length({self.data})")

    def fixed(self, size: int) -> str:
        """A fixed-size read at the cursor: its position, the cursor moved past it."""
        here = self.at
        self.fits(size)
        self.at = f"{here} + {size}"
        return here

    def string(self, compact: bool) -> str:
        """A non-null string at the cursor: its length and header become a stage's columns, the cursor moves past."""
        length, header = f"{_PREFIX}{self.name}_s{self.strings}_len", f"{_PREFIX}{self.name}_s{self.strings}_hdr"
        if compact:  # an unsigned varint of length + 1, one or two bytes (longer: declined)
            low, high = _unsigned(self.data, self.at, 1), _unsigned(self.data, f"{self.at} + 1", 1)
            stage = {
                length: f"(CASE WHEN {low} >= 128 THEN {low} - 128 + {high} * 128 ELSE {low} END) - 1",
                header: f"(CASE WHEN {low} >= 128 THEN 2 ELSE 1 END)",
            }
            self.checks.append(f"({low} < 128 OR {high} < 128)")
        else:
            stage = {length: _signed(self.data, self.at, 2), header: "2"}
        while len(self.stages) <= self.strings:
            self.stages.append({})
        self.stages[self.strings].update(stage)
        self.strings += 1
        start = f"{self.at} + {header}"
        text = f"cast(substring({self.data}, {start}, greatest({length}, 0)) as string)"
        self.checks += [f"{length} >= 0", f"{start} + {length} - 1 <= length({self.data})", f"is_valid_utf8({text})"]
        self.at = f"{start} + greatest({length}, 0)"
        return text

    def tagged_uuids(self, tags: dict[str, int]) -> None:
        """The tagged fields of a flexible version: none, or one of these uuids (one-byte count, tag and size)."""
        count, tag = _unsigned(self.data, self.at, 1), _unsigned(self.data, f"{self.at} + 1", 1)
        size = _unsigned(self.data, f"{self.at} + 2", 1)
        one = f"({count} = 1 AND {size} = 16)"
        raw = f"substring({self.data}, {self.at} + 3, 16)"
        for name, number in tags.items():
            self.values[name] = f"(CASE WHEN {one} AND {tag} = {number} THEN {_uuid_text(raw)} END)"
        known = " OR ".join(f"{tag} = {number}" for number in tags.values()) or "false"
        end = f"{self.at} + (CASE WHEN {count} = 0 THEN 1 ELSE 19 END)"
        self.checks += [f"({count} = 0 OR ({one} AND ({known})))", f"{end} - 1 <= length({self.data})"]
        self.at = end

    def ends(self) -> None:
        self.checks.append(f"{self.at} = length({self.data}) + 1")


def _walk(spec: MessageSpec, version: int, data: str, name: str) -> _Walk | None:
    """Every field of `spec` at `version` read from `data` after its two-byte prefix; None where the definition holds
    a type this SQL does not read (that version is left to the codec)."""
    walk = _Walk(data, name)
    flexible = spec.is_flexible(version)
    tags: dict[str, int] = {}
    for f in spec.fields:
        if not f.present_in(version):
            continue
        if f.tagged_in(version):
            if f.type != "uuid" or f.tag is None:
                return None
            tags[f.name] = f.tag
        elif f.type in _SPARK_INTS:
            size = FIXED_SIZES[f.type]
            walk.values[f.name] = f"cast({_signed(data, walk.fixed(size), size)} as {_SPARK_INTS[f.type]})"
        elif f.type == "string":
            walk.values[f.name] = walk.string(compact=flexible)
        elif f.type == "uuid":
            walk.values[f.name] = _uuid_text(f"substring({data}, {walk.fixed(16)}, 16)")
        else:
            return None
    if flexible:
        walk.tagged_uuids(tags)
    walk.ends()
    walk.checks += [f"{walk.values[f]} <= {MAX_TIMESTAMP_MS}" for f in _TIMESTAMP_FIELDS if f in walk.values]
    return walk


def _case(on: str, branches: dict[int, str], otherwise: str = "NULL") -> str:
    """One SQL value from per-version expressions: only the row's version's branch is evaluated."""
    whens = " ".join(f"WHEN {on} = {v} THEN {sql}" for v, sql in branches.items())
    return f"(CASE {whens} ELSE {otherwise} END)" if branches else otherwise


def _timestamp(ms: str) -> str:
    """Kafka milliseconds as a timestamp; negative means 'not set' (null), as in the codec's rows. The bound keeps
    the conversion from overflowing on a row the checks decline."""
    return f"(CASE WHEN {ms} >= 0 THEN timestamp_millis(least({ms}, {MAX_TIMESTAMP_MS})) END)"


@dataclass(frozen=True)
class OffsetCommitSql:
    """The staged SQL: the working columns stage by stage, then `ACCEPTED`, then `COMMIT`."""

    stages: tuple[dict[str, str], ...]
    accepted: str
    commit: str


@cache
def offset_commit_sql() -> OffsetCommitSql:
    """The SQL for OffsetCommit records of the hot value versions, from their definitions (built once)."""
    record_type, version = f"{_PREFIX}type", f"{_PREFIX}version"
    first = {
        record_type: f"(CASE WHEN length(key) >= 2 THEN {_signed('key', '1', 2)} END)",
        version: f"(CASE WHEN length(value) >= 2 THEN {_signed('value', '1', 2)} END)",
    }
    stages: list[dict[str, str]] = [first]
    spec = RECORD_TYPES[RECORD_TYPE]
    key = _walk(spec.key, spec.key.valid.low, "key", "key")
    assert key is not None, f"{spec.key.name}: a key this SQL cannot read"
    values = {
        v: w for v in HOT_VALUE_VERSIONS if v in spec.value.valid and (w := _walk(spec.value, v, "value", f"v{v}"))
    }
    for walk in (key, *values.values()):
        for depth, stage in enumerate(walk.stages, start=1):
            while len(stages) <= depth:
                stages.append({})
            stages[depth].update(stage)
    value_ok = _case(version, {v: " AND ".join(w.checks) for v, w in values.items()}, "false")
    accepted = (
        f"coalesce({record_type} = {RECORD_TYPE} AND ({' AND '.join(key.checks)}) AND (value IS NULL OR {value_ok}), "
        "false)"
    )
    columns = {column: key.values[f] for column, f in KEY_FIELD_OF_COLUMN.items()}
    for column, f in VALUE_FIELD_OF_COLUMN.items():
        per_version = {v: w.values[f] for v, w in values.items() if f in w.values}
        if f in _TIMESTAMP_FIELDS:
            per_version = {v: _timestamp(sql) for v, sql in per_version.items()}
        absent = str(ABSENT_VALUE[f]) if f in ABSENT_VALUE else "NULL"
        columns[column] = f"(CASE WHEN value IS NULL THEN NULL ELSE {_case(version, per_version, absent)} END)"
    columns["is_tombstone"] = "value IS NULL"
    columns["key_version"] = str(RECORD_TYPE)
    columns["value_version"] = f"(CASE WHEN value IS NULL THEN NULL ELSE {version} END)"
    fields = next(p.fields for p in DECODED_OFFSETS_BATCH.payloads if p.table is OFFSET_COMMITS)
    struct = ", ".join(f"'{f.name}', cast({columns[f.name]} as {f.ddl})" for f in fields)
    return OffsetCommitSql(tuple(stages), accepted, f"(CASE WHEN `{ACCEPTED}` THEN named_struct({struct}) END)")


def with_offset_commits(rows: DataFrame) -> DataFrame:
    """`rows` (Kafka's `key` and `value`) with `ACCEPTED` and, for accepted rows, `COMMIT`: the `offset_commit`
    struct of `DECODED_OFFSETS_BATCH`, as the codec would route it."""
    sql = offset_commit_sql()
    for stage in sql.stages:
        rows = rows.selectExpr("*", *(f"{expression} AS `{name}`" for name, expression in stage.items()))
    rows = rows.selectExpr("*", f"{sql.accepted} AS `{ACCEPTED}`")
    rows = rows.selectExpr("*", f"{sql.commit} AS `{COMMIT}`")
    return rows.drop(*(name for stage in sql.stages for name in stage))


def _best_seconds(run: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return round(best, 2)


def _noop(frame: DataFrame) -> None:
    frame.write.format("noop").mode("overwrite").save()


def _sql_split(rows: DataFrame) -> None:
    """The SQL path as ingest would run it: computed once (persisted), accepted commits and the rest apart."""
    read = with_offset_commits(rows).persist()
    try:
        _noop(read.where(F.col(ACCEPTED)).select(COMMIT))
        _noop(read.where(~F.col(ACCEPTED)).drop(COMMIT))
    finally:
        read.unpersist()


def _rows_equal(rows: DataFrame) -> bool:
    """The SQL's commits are the codec's rows for the same records (compared on 20,000 of them)."""
    sample = rows.limit(20_000).cache()
    ours = with_offset_commits(sample).where(F.col(ACCEPTED)).select("offset", F.col(COMMIT).alias("c"))
    codec = route_offsets(sample.withColumn("source_error", F.lit(None).cast("string")), spread=False)
    theirs = codec.where("target = 'offset_commits'").select(
        F.col("src_offset").alias("offset"), F.col("offset_commit").alias("c")
    )
    joined = ours.alias("o").join(theirs.alias("t"), "offset", "left")
    mismatched = joined.where(~F.col("o.c").eqNullSafe(F.col("t.c"))).count()
    accepted = ours.count()
    sample.unpersist()
    return mismatched == 0 and accepted > 0


def measure(spark: SparkSession, records: int, repeat: int) -> dict[str, Any]:
    mix, counts = realistic_mix(records)
    rows = (
        spark.createDataFrame(
            [(key, value, "__consumer_offsets", i % 2, i, None) for i, (key, value) in enumerate(mix)],
            "key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp",
        )
        .repartition(2)
        .cache()
    )
    rows.count()
    figures: dict[str, Any] = {"records": records, "mix": dict(counts), "repeat": repeat}
    figures["rows_equal"] = _rows_equal(rows)
    figures["accepted"] = with_offset_commits(rows).where(F.col(ACCEPTED)).count()
    seconds = {
        "baseline": _best_seconds(lambda: _noop(rows), repeat),
        "python": _best_seconds(
            lambda: _noop(route_offsets(rows.withColumn("source_error", F.lit(None).cast("string")), spread=False)),
            repeat,
        ),
        "sql": _best_seconds(lambda: _sql_split(rows), repeat),
    }
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    seconds["sql_without_whole_stage_codegen"] = _best_seconds(lambda: _sql_split(rows), repeat)
    spark.conf.set("spark.sql.codegen.wholeStage", "true")
    sql = offset_commit_sql()
    working = rows.select("key", "value")
    for stage in sql.stages:
        working = working.selectExpr("*", *(f"{expression} AS `{name}`" for name, expression in stage.items()))
    working = working.cache()
    working.count()
    seconds["sql_accepted"] = _best_seconds(lambda: _noop(working.selectExpr(f"{sql.accepted} AS a")), repeat)
    with_accepted = working.selectExpr("*", f"{sql.accepted} AS `{ACCEPTED}`").cache()
    with_accepted.count()
    seconds["sql_commit"] = _best_seconds(lambda: _noop(with_accepted.selectExpr(f"{sql.commit} AS c")), repeat)
    figures["seconds"] = seconds
    figures["records_per_s"] = {name: round(records / s) for name, s in seconds.items() if s > 0}
    figures["ratio_sql_to_python"] = round(seconds["python"] / seconds["sql"], 3)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--conf", default="conf/local.yml")
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    spark = build_spark_session(load_config(args.conf))
    figures = measure(spark, args.records, args.repeat)
    print(json.dumps(figures, indent=1))
    write_run_result("sql_decode", figures, args, started=started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
