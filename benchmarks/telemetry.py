"""Throughput of `parse_telemetry_record` per source kind, on a realistic mix of lines (one process, one core).

Broker and client logs are mostly noise (log segment rolls, fetch resets...), so each text mix is 1 in 4
coordinator/consumer-group lines. Prints JSON `{"source_kind": lines_per_s, ...}` and writes it to
`benchmarks/results/telemetry-<UTC start>.json` (`benchmarks.result_file`).
Run: `python -m benchmarks.telemetry [--lines N]`.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

RECORD_TS = 1_714_564_800_000
SCALA = "(kafka.coordinator.group.GroupCoordinator)"
JAVA = "(org.apache.kafka.coordinator.group.GroupMetadataManager)"


def _ts(rng: random.Random) -> str:
    return f"[2024-05-01 12:{rng.randrange(60):02d}:{rng.randrange(60):02d},{rng.randrange(1000):03d}]"


def broker_lines(rng: random.Random) -> list[str]:
    group, member, gen, part = (
        f"orders-{rng.randrange(50)}",
        f"consumer-1-{rng.getrandbits(64):016x}",
        rng.randrange(900),
        rng.randrange(50),
    )
    j = f"[GroupCoordinator id=1 topic=__consumer_offsets partition={part}]"
    return [
        f"{_ts(rng)} INFO [GroupCoordinator 1]: Preparing to rebalance group {group} in state PreparingRebalance with "
        f"old generation {gen} (__consumer_offsets-{part}) (reason: removing member {member} on heartbeat expiration) {SCALA}",  # noqa: E501
        f"{_ts(rng)} INFO {j} Stabilized group {group} generation {gen + 1} with 3 members. {JAVA}",
        f"{_ts(rng)} INFO [GroupCoordinator 1]: Member {member} in group {group} has failed, removing it from the group {SCALA}",  # noqa: E501
        f"{_ts(rng)} INFO {j} [GroupId {group}] Bumped group epoch to {gen}. {JAVA}",
    ]


def broker_noise(rng: random.Random) -> str:
    return rng.choice(
        [
            f"{_ts(rng)} INFO [Log partition=orders-{rng.randrange(12)}, dir=/var/lib/kafka] Rolled new log segment at offset {rng.randrange(10**9)} in 3 ms. (kafka.log.LocalLog)",  # noqa: E501
            f"{_ts(rng)} INFO [ProducerStateManager partition=orders-3] Wrote producer snapshot at offset 1234 with 0 producer ids in 1 ms. (org.apache.kafka.storage.internals.log.ProducerStateManager)",  # noqa: E501
            f"{_ts(rng)} INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=4] Generated 0 tombstone records while cleaning up group metadata in 0 milliseconds. {JAVA}",  # noqa: E501
        ]
    )


def client_lines(rng: random.Random) -> list[str]:
    prefix = f"[Consumer clientId=consumer-orders-{rng.randrange(9)}, groupId=orders]"
    gen = f"Generation{{generationId={rng.randrange(900)}, memberId='consumer-orders-1-{rng.getrandbits(64):016x}', protocol='range'}}"  # noqa: E501
    return [
        f"{_ts(rng)} INFO {prefix} Request joining group due to: group is already rebalancing (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:1072)",  # noqa: E501
        f"{_ts(rng)} INFO {prefix} Successfully joined group with generation {gen} (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:663)",  # noqa: E501
        f"{_ts(rng)} INFO {prefix} Attempt to heartbeat with {gen} and group instance id Optional.empty failed due to UNKNOWN_MEMBER_ID, resetting generation (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:1247)",  # noqa: E501
        f"{_ts(rng)} INFO stream-thread [app-225712b8-b54d-4043-a7e1-c489ee4f8fd5-StreamThread-1-consumer] 2 client nodes and 4 consumers participating in this rebalance:",  # noqa: E501
    ]


def client_noise(rng: random.Random) -> str:
    prefix = "[Consumer clientId=consumer-orders-1, groupId=orders]"
    return rng.choice(
        [
            f"{_ts(rng)} INFO {prefix} Resetting offset for partition orders-{rng.randrange(12)} to position FetchPosition{{offset={rng.randrange(10**6)}, offsetEpoch=Optional.empty}}. (org.apache.kafka.clients.consumer.internals.SubscriptionState:398)",  # noqa: E501
            f"{_ts(rng)} INFO stream-thread [app-StreamThread-1] Processed 51234 total records, ran 0 punctuators, and committed 12 total tasks since the last update (org.apache.kafka.streams.processor.internals.StreamThread:1015)",  # noqa: E501
            f"{_ts(rng)} DEBUG {prefix} Sending Heartbeat request with generation 12 and member id m to coordinator b-1:9092 (id: 2147483646 rack: null)",  # noqa: E501
        ]
    )


def mixed(rng: random.Random, signal: list[str], noise: str) -> str:
    return rng.choice(signal) if rng.random() < 0.25 else noise


def records(kind: str, count: int, rng: random.Random) -> list[bytes]:
    out: list[bytes] = []
    for _ in range(count):
        if kind == "broker_log":
            text = mixed(rng, broker_lines(rng), broker_noise(rng))
        elif kind == "client_log":
            text = mixed(rng, client_lines(rng), client_noise(rng))
        elif kind == "json_wrapped_log":
            line = mixed(rng, broker_lines(rng) + client_lines(rng), broker_noise(rng))
            text = json.dumps({"@timestamp": "2024-05-01T12:00:00.123Z", "logger": "x", "host": "b-1", "message": line})
        elif kind == "librdkafka_stats":
            text = json.dumps(
                {
                    "name": f"rdkafka#consumer-{rng.randrange(9)}",
                    "client_id": "rdkafka",
                    "type": "consumer",
                    "ts": 123456789,
                    "time": 1714564800,
                    "replyq": 0,
                    "msg_cnt": 0,
                    "brokers": {
                        f"b-{i}:9092/{i}": {"name": f"b-{i}", "state": "UP", "rtt": {"avg": 1200}} for i in range(3)
                    },
                    "topics": {
                        "orders": {"partitions": {str(p): {"consumer_lag": rng.randrange(100)} for p in range(6)}}
                    },
                    "cgrp": {
                        "state": "up",
                        "stateage": 12000,
                        "join_state": "steady",
                        "rebalance_age": 8000,
                        "rebalance_cnt": rng.randrange(1, 5),
                        "rebalance_reason": "group rebalanced",
                        "assignment_size": 6,
                    },
                }
            )
        elif kind == "json_event":
            text = json.dumps(
                {
                    "schema": "radar.event/1",
                    "event": rng.choice(["commit", "heartbeat", "join", "commit_failed"]),
                    "ts": RECORD_TS + rng.randrange(10**6),
                    "group_id": "orders",
                    "member_id": "m-1",
                    "generation": 41,
                    "client_id": "w-3",
                    "details": {"partition": rng.randrange(12)},
                }
            )
        else:
            raise ValueError(kind)
        out.append(text.encode())
    return out


KINDS = ("broker_log", "client_log", "json_wrapped_log", "librdkafka_stats", "json_event")


def lines_per_second(values: list[bytes]) -> float:
    start = time.perf_counter()
    for value in values:
        parse_telemetry_record(value, RECORD_TS)
    return len(values) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=50_000, help="records per source kind")
    add_out_arguments(parser)
    args = parser.parse_args()
    started = started_now()
    rng = random.Random(7)
    results = {}
    for kind in KINDS:
        values = records(kind, args.lines, rng)
        lines_per_second(values[:1000])  # warm caches (zone lookup, regex compilation)
        results[kind] = round(max(lines_per_second(values) for _ in range(2)))
    print(json.dumps(results))
    write_run_result("telemetry", results, args, started)


if __name__ == "__main__":
    main()
