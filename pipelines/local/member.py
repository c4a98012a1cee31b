"""One consumer-group member of the demo fleet, run as its own process so a scenario can SIGSTOP or SIGKILL it.

`python -m rebalance_radar.pipelines.local.member --bootstrap B --topic T --group G [--protocol consumer]
[--agent-topic TOPIC]`
polls, and every `--commit-every-s` synchronously commits offset 0 on every partition it holds. Like a
batch-processing application it keeps working on partitions it *lost* (on_lost) until a commit fails, so a resumed
zombie commits with its old generation. `--block-revoke-s S` makes it hang S seconds in its first revocation
callback (an application stuck while the group waits for its partitions: the group cannot leave its
generation); `--stall-after-s A --stall-s S` stops polling for S seconds A seconds after an assignment (a
`max.poll.interval.ms` overrun), `--stalls N` times, each after a new assignment. `--hold-file F` makes it stop
itself (SIGSTOP) between a poll and its commit once F exists, printing `holding` first: an application frozen mid-batch
(a long GC pause), whose first act when continued is its stale commit. It runs until SIGTERM (a clean
close: LeaveGroup, unless `--instance-id` makes it static) or `--run-s`, and prints one JSON line per assignment
change and commit outcome, which the scenario runner (and the live tests) wait on.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

MEMBER_MODULE = "rebalance_radar.pipelines.local.member"


def say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def member_arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {MEMBER_MODULE}")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--protocol", default="classic", choices=("classic", "consumer"))
    parser.add_argument("--client-id", default="member")
    parser.add_argument("--agent-topic", default=None, help="report through the radar agent to this topic")
    parser.add_argument("--session-timeout-ms", type=int, default=3000, help="classic protocol only")
    parser.add_argument("--max-poll-interval-ms", type=int, default=30000)
    parser.add_argument("--commit-every-s", type=float, default=0.5)
    parser.add_argument("--block-revoke-s", type=float, default=0.0, help="hang this long in the first revocation")
    parser.add_argument("--stall-after-s", type=float, default=None, help="stop polling this long after assignment")
    parser.add_argument("--stall-s", type=float, default=0.0, help="for this long (a max.poll.interval.ms overrun)")
    parser.add_argument("--stalls", type=int, default=1, help="stall again after each new assignment, N times")
    parser.add_argument("--instance-id", default=None, help="group.instance.id (static membership)")
    parser.add_argument("--hold-file", default=None, help="once this file exists, stop (SIGSTOP) before a commit")
    parser.add_argument("--run-s", type=float, default=600.0)
    parser.add_argument(
        "--security",
        default=None,
        help="kafka.security as JSON (names of environment variables, never secrets), e.g. a SASL_SSL cluster's",
    )
    return parser


def consumer_settings(args: argparse.Namespace) -> dict[str, Any]:
    from rebalance_radar.emitters.kafka_settings import SecurityConfig, client_settings

    security = SecurityConfig.model_validate_json(args.security) if args.security else None
    settings: dict[str, Any] = {
        **client_settings(args.bootstrap, security),
        "group.id": args.group,
        "client.id": args.client_id,
        "group.protocol": args.protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "max.poll.interval.ms": args.max_poll_interval_ms,
        "statistics.interval.ms": 1000,
        "log_level": 0,  # the scenario's own lines are the output; librdkafka's errors are what the monitor sees
    }
    if args.protocol == "classic":  # KIP-848 session and heartbeat are the group's, set on the broker
        settings.update({"session.timeout.ms": args.session_timeout_ms, "heartbeat.interval.ms": 500})
    if args.instance_id:
        settings["group.instance.id"] = args.instance_id
    return settings


def main(argv: list[str] | None = None) -> int:
    args = member_arguments().parse_args(argv)
    settings = consumer_settings(args)
    if args.agent_topic:
        from rebalance_radar.emitters.agent import RadarConsumer

        consumer: Consumer = RadarConsumer(settings, {"topic": args.agent_topic, "linger.ms": 10})
    else:
        consumer = Consumer(settings)
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    held: dict[int, int] = {}  # partitions this process works on; a zombie keeps them after losing them
    blocked = False
    assigned_at: list[float] = []

    def assigned(c: Consumer, partitions: list[TopicPartition]) -> None:
        held.update({p.partition: 0 for p in partitions})
        assigned_at.append(time.monotonic())
        say(assigned=[p.partition for p in partitions], member=c.memberid())

    def revoked(_c: Consumer, partitions: list[TopicPartition]) -> None:
        nonlocal blocked
        if args.block_revoke_s and not blocked and partitions:
            blocked = True
            say(blocking_revoke=args.block_revoke_s)
            time.sleep(args.block_revoke_s)  # the application is stuck finishing its work on these partitions
        for p in partitions:
            held.pop(p.partition, None)
        say(revoked=[p.partition for p in partitions])

    def lost(_c: Consumer, partitions: list[TopicPartition]) -> None:
        say(lost=[p.partition for p in partitions])  # the zombie does not notice: it keeps committing what it holds

    consumer.subscribe([args.topic], on_assign=assigned, on_revoke=revoked, on_lost=lost)
    started = time.monotonic()
    last_commit = 0.0
    stalls = 0
    stalled_at_assignment = 0  # how many assignments there had been at the last stall
    held_once = False
    while not stopping and time.monotonic() - started < args.run_s:
        message = consumer.poll(0.1)
        if message is not None and message.error() is not None:
            say(poll_error=message.error().name())
        now = time.monotonic()
        if (
            args.stall_after_s is not None
            and stalls < args.stalls
            and len(assigned_at) > stalled_at_assignment
            and now - assigned_at[stalled_at_assignment] > args.stall_after_s
        ):
            stalls += 1
            stalled_at_assignment = len(assigned_at)
            say(stalling=args.stall_s, stalling_member=consumer.memberid())
            time.sleep(args.stall_s)
            continue
        if now - last_commit < args.commit_every_s or not held:
            continue
        last_commit = now
        offsets = [TopicPartition(args.topic, partition, offset) for partition, offset in sorted(held.items())]
        if args.hold_file and not held_once and Path(args.hold_file).exists():
            # Stopped here, not inside poll(): continued, the commit goes out before librdkafka's threads can learn
            # of the eviction and rejoin (then the commit would carry the new epoch and succeed, seen with KIP-848).
            held_once = True
            say(holding=True, member=consumer.memberid())
            os.kill(os.getpid(), signal.SIGSTOP)
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as failure:
            say(commit_error=failure.args[0].name())
            held.clear()  # the application learns it is a zombie from the failed commit
    consumer.close()
    if args.agent_topic:
        say(agent={"produced": consumer.agent.produced, "dropped": consumer.agent.dropped})  # type: ignore[attr-defined]
    say(closed=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
