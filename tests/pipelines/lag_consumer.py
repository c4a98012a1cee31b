"""A consumer for the lag live test, run as its own process (`python -m tests.pipelines.lag_consumer`): it commits
what it processed every 0.5 s (for `--commit-for-s` from its first commit, so a slow join under load does not eat the
window, then never again, polling on) until SIGTERM; `--hang-revoke-s`
makes its first revocation hang that long (an application finishing its work), holding its group's rebalance open.
Its own process, as the scenario members are (`pipelines.local.member`): librdkafka clients whose callbacks block for
seconds stay out of the test process. Prints one JSON line per assignment, revocation and first commit."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException

FORGIVEN_COMMIT_ERRORS = (KafkaError._NO_OFFSET, KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION)
"""A commit with nothing consumed yet, or during a rebalance: the consumer commits again next time."""


def say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--client-id", default="lag-consumer")
    parser.add_argument("--commit-for-s", type=float, default=None)
    parser.add_argument("--hang-revoke-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "client.id": args.client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 30_000,
            "max.poll.interval.ms": 60_000,
        }
    )
    hung = False

    def assigned(_consumer: Consumer, partitions: list[Any]) -> None:
        say(assigned=[p.partition for p in partitions])

    def revoked(_consumer: Consumer, partitions: list[Any]) -> None:
        nonlocal hung
        say(revoked=[p.partition for p in partitions])
        if args.hang_revoke_s and partitions and not hung:
            hung = True
            time.sleep(args.hang_revoke_s)

    consumer.subscribe([args.topic], on_assign=assigned, on_revoke=revoked)
    first_commit: float | None = None
    last_commit = time.monotonic()
    try:
        while not stopping:
            consumer.poll(0.2)
            now = time.monotonic()
            committing = args.commit_for_s is None or first_commit is None or now - first_commit < args.commit_for_s
            if committing and now - last_commit >= 0.5 and consumer.assignment():
                last_commit = now
                try:
                    consumer.commit(asynchronous=False)
                except KafkaException as failure:
                    if failure.args[0].code() not in FORGIVEN_COMMIT_ERRORS:
                        raise
                    continue
                if first_commit is None:
                    first_commit = now
                    say(committed=True)
    finally:
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
