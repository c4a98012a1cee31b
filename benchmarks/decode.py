"""Records/s of `decode_coordinator_record` on one core, on a realistic `__consumer_offsets` mix.

≈90% OffsetCommit values (v3/v4, topicIds in v4), ≈10% GroupMetadata (v3/v4, 10 `consumer` members with real
ConsumerProtocol subscription/assignment bytes), and a few KIP-848 records, all built with the writer. The baseline
in the same process reads only the key type and value version with `struct.unpack_from`: the floor of any Python
decoder, so the ratio says how much of the budget the codec itself spends.
Rates are by this process's CPU time (one core; other load on a shared machine does not count), wall clock beside.
`route_offsets_batch` (the `mapInArrow` body: the vectorised OffsetCommit path, the codec for the rest) is
measured on Arrow batches of Spark's default 10,000 rows, on OffsetCommit records only and on the mix; its output
schema is parsed by Spark, so that part starts a local session.
Run: `python -m benchmarks.decode [--records N] [--repeat R] [--profile] [--no-arrow]`; prints JSON and writes it to
`benchmarks/results/decode-<UTC start>.json` (`benchmarks.result_file`).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import statistics
import struct
import sys
import time
from collections import defaultdict
from collections.abc import Callable

from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.consumer_protocol import encode_assignment, encode_subscription
from rebalance_radar.transforms.wire.coordinator_records import decode_coordinator_record, encode_coordinator_record

Record = tuple[bytes, bytes | None]
TARGET_RECORDS_PER_S = 150_000
TARGET_ARROW_OFFSET_COMMITS_PER_S = 500_000  # issue #11: decode inside mapInArrow, per core
ARROW_BATCH_ROWS = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch's default

SERVICES = ("payments", "orders", "inventory", "fraud-scoring", "search-indexer", "notifications", "billing")
STAGES = ("enricher", "aggregator", "sink", "router", "projector")
ENVS = ("prod", "staging", "prod-eu-west-1", "prod-us-east-1")
DOMAINS = ("orders", "payments", "customers", "clickstream", "shipments", "ledger")


def _group(rng: random.Random) -> str:
    return f"{rng.choice(SERVICES)}-{rng.choice(STAGES)}-{rng.choice(ENVS)}"


def _topic(rng: random.Random) -> str:
    kind = rng.choice(("events", "changelog", "commands"))
    return f"{rng.choice(ENVS)}.{rng.choice(DOMAINS)}.{kind}.v{rng.randint(1, 3)}"


def _uuid(rng: random.Random) -> str:
    return prim.uuid_to_text(rng.randbytes(16))


def _metadata(rng: random.Random) -> str:
    """Most clients commit no metadata; some (Flink, Connect, Streams) commit a short string."""
    roll = rng.random()
    if roll < 0.7:
        return ""
    if roll < 0.9:
        return f"checkpoint-{rng.randrange(10**6)}"
    return json.dumps({"source": "connect", "task": rng.randrange(32), "ts": rng.randrange(10**12)})


def offset_commit(rng: random.Random) -> tuple[str, Record]:
    version = rng.choice((3, 4))
    key = {"group": _group(rng), "topic": _topic(rng), "partition": rng.randrange(64)}
    value = {
        "offset": rng.randrange(10**10),
        "leaderEpoch": rng.randrange(40),
        "metadata": _metadata(rng),
        "commitTimestamp": 1_714_564_800_000 + rng.randrange(10**8),
    }
    if version == 4:
        value["topicId"] = _uuid(rng)
    return f"OffsetCommit v{version}", encode_coordinator_record(1, key, version, value)


def group_metadata(rng: random.Random) -> tuple[str, Record]:
    version = rng.choice((3, 4))
    topics = sorted({_topic(rng) for _ in range(3)})
    members = []
    for i in range(10):
        member_id = f"consumer-{_group(rng)}-{i}-{_uuid(rng)}"
        owned = [{"topic": t, "partitions": list(range(i, 24, 10))} for t in topics]
        subscription = encode_subscription(
            3, {"topics": topics, "userData": None, "ownedPartitions": owned, "generationId": 41, "rackId": "use1-az2"}
        )
        assignment = encode_assignment(3, {"assignedPartitions": owned, "userData": None})
        members.append(
            {
                "memberId": member_id,
                "groupInstanceId": None if i % 3 else f"pod-{i}",
                "clientId": f"consumer-{i}",
                "clientHost": f"/10.0.{rng.randrange(256)}.{rng.randrange(256)}",
                "rebalanceTimeout": 300_000,
                "sessionTimeout": 45_000,
                "subscription": subscription,
                "assignment": assignment,
            }
        )
    value = {
        "protocolType": "consumer",
        "generation": 42,
        "protocol": "cooperative-sticky",
        "leader": members[0]["memberId"],
        "currentStateTimestamp": 1_714_564_800_000,
        "members": members,
    }
    return f"GroupMetadata v{version}", encode_coordinator_record(2, {"group": _group(rng)}, version, value)


def _topic_partitions(rng: random.Random) -> list[dict[str, object]]:
    return [{"topicId": _uuid(rng), "partitions": sorted(rng.sample(range(48), 6))} for _ in range(2)]


def kip848(rng: random.Random) -> tuple[str, Record]:
    group, member = _group(rng), _uuid(rng)
    kind = rng.randrange(3)
    if kind == 0:
        value = {
            "instanceId": None,
            "rackId": "use1-az1",
            "clientId": "consumer-1",
            "clientHost": "/10.0.3.7",
            "subscribedTopicNames": [_topic(rng) for _ in range(3)],
            "subscribedTopicRegex": None,
            "rebalanceTimeoutMs": 300_000,
            "serverAssignor": "uniform",
        }
        return "ConsumerGroupMemberMetadata", encode_coordinator_record(
            5, {"groupId": group, "memberId": member}, 0, value
        )
    if kind == 1:
        value = {
            "memberEpoch": 17,
            "previousMemberEpoch": 16,
            "state": 0,
            "assignedPartitions": _topic_partitions(rng),
            "partitionsPendingRevocation": [],
        }
        return "ConsumerGroupCurrentMemberAssignment", encode_coordinator_record(
            8, {"groupId": group, "memberId": member}, 0, value
        )
    value = {"topicPartitions": _topic_partitions(rng)}
    return "ConsumerGroupTargetAssignmentMember", encode_coordinator_record(
        7, {"groupId": group, "memberId": member}, 0, value
    )


def build_mix(count: int, seed: int) -> list[tuple[str, Record]]:
    """`count` (type label, record) pairs: 89.5% offset commits, 9.5% group metadata, 1% KIP-848 records."""
    rng = random.Random(seed)
    mix = []
    for _ in range(count):
        roll = rng.random()
        build = offset_commit if roll < 0.895 else group_metadata if roll < 0.99 else kip848
        mix.append(build(rng))
    return mix


def decode_all(records: list[Record]) -> None:
    decode = decode_coordinator_record
    for key, value in records:
        decode(key, value)


def baseline_all(records: list[Record]) -> None:
    """The floor: a Python loop that only reads the key type and the value version."""
    unpack = struct.unpack_from
    for key, value in records:
        unpack(">h", key, 0)
        if value is not None:
            unpack(">h", value, 0)


def rates(run: Callable[[list[Record]], None], records: list[Record], repeat: int) -> tuple[list[float], list[float]]:
    """Records/s per repetition, by this process's CPU time (one core, robust to other load on a shared machine)
    and by wall-clock time."""
    cpu, wall = [], []
    for _ in range(repeat):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        run(records)
        cpu.append(len(records) / (time.process_time() - cpu_start))
        wall.append(len(records) / (time.perf_counter() - wall_start))
    return cpu, wall


def summary(values: list[float]) -> dict[str, int]:
    return {"median": round(statistics.median(values)), "min": round(min(values)), "max": round(max(values))}


def arrow_batches(records: list[Record]) -> list[object]:
    """Kafka-shaped Arrow batches of `ARROW_BATCH_ROWS` rows, as Spark hands them to `mapInArrow`."""
    import pyarrow as pa

    batches = []
    for start in range(0, len(records), ARROW_BATCH_ROWS):
        chunk = records[start : start + ARROW_BATCH_ROWS]
        n = len(chunk)
        batches.append(
            pa.RecordBatch.from_pydict(
                {
                    "key": pa.array([k for k, _ in chunk], pa.binary()),
                    "value": pa.array([v for _, v in chunk], pa.binary()),
                    "topic": pa.array(["__consumer_offsets"] * n),
                    "partition": pa.array([i % 50 for i in range(n)], pa.int32()),
                    "offset": pa.array(range(start, start + n), pa.int64()),
                    "timestamp": pa.array([1_714_564_800_000_000] * n, pa.timestamp("us", tz="UTC")),
                }
            )
        )
    return batches


def arrow_rates(records: list[Record], repeat: int) -> dict[str, object]:
    """Records/s (CPU time, one core) of the `mapInArrow` body on OffsetCommit-only batches and on the mix."""
    from pyspark.sql import SparkSession
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    from rebalance_radar.transforms.offsets_batch import (
        decoded_batch_ddl,
        route_offsets_batch,
        route_offsets_batch_by_rows,
    )

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    schema = to_arrow_schema(StructType.fromDDL(decoded_batch_ddl()))
    spark.stop()
    commits = [r for r in records if r[0][:2] in (b"\x00\x00", b"\x00\x01")]

    def batch_rates(route: Callable[..., object], batches: list[object], count: int, times: int) -> list[float]:
        cpu = []
        for _ in range(times):
            start = time.process_time()
            for batch in batches:
                route(batch, schema)
            cpu.append(count / (time.process_time() - start))
        return cpu

    out: dict[str, object] = {"batch_rows": ARROW_BATCH_ROWS}
    for label, subset in (("offset_commits", commits), ("mix", records)):
        batches = arrow_batches(subset)
        batch_rates(route_offsets_batch, batches[:2], 1, 1)  # warm-up
        out[f"{label}_records_per_s"] = summary(batch_rates(route_offsets_batch, batches, len(subset), repeat))
        by_rows = batch_rates(route_offsets_batch_by_rows, batches, len(subset), max(1, repeat // 2))
        out[f"{label}_row_by_row_records_per_s"] = summary(by_rows)
    median = out["offset_commits_records_per_s"]["median"]  # type: ignore[index]
    out["target_offset_commits_per_s"] = TARGET_ARROW_OFFSET_COMMITS_PER_S
    out["meets_target"] = median >= TARGET_ARROW_OFFSET_COMMITS_PER_S
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="cProfile one pass; top 15 by tottime on stderr")
    parser.add_argument("--no-arrow", action="store_true", help="skip the mapInArrow body (no Spark session)")
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()

    mix = build_mix(args.records, args.seed)
    records = [record for _, record in mix]
    by_type: dict[str, list[Record]] = defaultdict(list)
    for label, record in mix:
        by_type[label].append(record)
    decode_all(records[:20_000])  # warm-up: compiles the readers, warms caches
    baseline_all(records[:20_000])

    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(decode_all, records)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(15)

    decoded, decoded_wall = rates(decode_all, records, args.repeat)
    floor, floor_wall = rates(baseline_all, records, args.repeat)
    per_type = {
        label: round(statistics.median(rates(decode_all, subset, args.repeat)[0]))
        for label, subset in sorted(by_type.items())
    }
    bytes_total = sum(len(k) + len(v or b"") for k, v in records)
    report = {
        "records": len(records),
        "mean_record_bytes": round(bytes_total / len(records), 1),
        "repeat": args.repeat,
        "records_per_s": summary(decoded),
        "wall_clock_records_per_s": summary(decoded_wall),
        "per_type_records_per_s": per_type,
        "per_type_count": {label: len(subset) for label, subset in sorted(by_type.items())},
        "baseline_struct_unpack_records_per_s": summary(floor),
        "baseline_wall_clock_records_per_s": summary(floor_wall),
        "ratio_to_baseline": round(statistics.median(decoded) / statistics.median(floor), 3),
        "target_records_per_s": TARGET_RECORDS_PER_S,
        "meets_target": statistics.median(decoded) >= TARGET_RECORDS_PER_S,
    }
    if not args.no_arrow:
        report["map_in_arrow_body"] = arrow_rates(records, args.repeat)
    print(json.dumps(report, indent=2))
    write_run_result("decode", report, args, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
