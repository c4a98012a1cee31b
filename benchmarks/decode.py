"""Records/s of `decode_coordinator_record` on one core, on a realistic `__consumer_offsets` mix.

≈90% OffsetCommit values (v3/v4, topicIds in v4), ≈10% GroupMetadata (v3/v4, 10 `consumer` members with real
ConsumerProtocol subscription/assignment bytes), and a few KIP-848 records, all built with the writer. The baseline
in the same process reads only the key type and value version with `struct.unpack_from`: the floor of any Python
decoder, so the ratio says how much of the budget the codec itself spends.
Rates are by this process's CPU time (one core; other load on a shared machine does not count), wall clock beside.
Run: `python -m benchmarks.decode [--records N] [--repeat R] [--profile]`; prints JSON.
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

from transforms.wire import primitives as prim
from transforms.wire.consumer_protocol import encode_assignment, encode_subscription
from transforms.wire.coordinator_records import decode_coordinator_record, encode_coordinator_record

Record = tuple[bytes, bytes | None]
TARGET_RECORDS_PER_S = 150_000

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="cProfile one pass; top 15 by tottime on stderr")
    args = parser.parse_args(argv)

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
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
