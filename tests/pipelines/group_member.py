"""A consumer-group member run as a subprocess by the telemetry evidence tests (so it can be SIGSTOPped).

`python -m tests.pipelines.group_member --bootstrap B --topic T --group G [--agent-topic radar.telemetry] ...`:
polls, and every `--commit-every-s` synchronously commits offset 0 on every partition it holds; like a
batch-processing application it keeps holding partitions it *lost* (on_lost) until a commit fails, so a resumed
zombie commits with its old generation; `--stall-after-s/--stall-s` stops polling for a while
(a `max.poll.interval.ms` overrun), `--stalls N` times (each after a new assignment); it exits after `--run-s`
(closing cleanly = LeaveGroup, unless `--instance-id` makes it static) or on SIGTERM.
Prints one JSON line per assignment change and commit outcome.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition


def say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--protocol", default="classic")
    parser.add_argument("--client-id", default="member")
    parser.add_argument("--agent-topic", default=None)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--max-poll-interval-ms", type=int, default=30000)
    parser.add_argument("--commit-every-s", type=float, default=0.3)
    parser.add_argument("--stall-after-s", type=float, default=None)
    parser.add_argument("--stall-s", type=float, default=0.0)
    parser.add_argument("--stalls", type=int, default=1, help="stall again after each new assignment, N times")
    parser.add_argument("--run-s", type=float, default=120.0)
    parser.add_argument("--instance-id", default=None, help="group.instance.id (static membership)")
    args = parser.parse_args()
    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.client_id,
        "group.protocol": args.protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "max.poll.interval.ms": args.max_poll_interval_ms,
        "statistics.interval.ms": 1000,
        "log_level": 3,
    }
    if args.protocol == "classic":
        conf.update({"session.timeout.ms": args.session_timeout_ms, "heartbeat.interval.ms": 500})
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    if args.agent_topic:
        from emitters.agent import RadarConsumer

        consumer: Consumer = RadarConsumer(conf, {"topic": args.agent_topic, "linger.ms": 10})
    else:
        consumer = Consumer(conf)
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    assigned_at: list[float] = []
    held: dict[int, int] = {}  # partitions this process works on; a zombie keeps them after losing them

    def assigned(c: Consumer, ps: list[TopicPartition]) -> None:
        held.update({p.partition: 0 for p in ps})
        assigned_at.append(time.monotonic())
        say(assigned=[p.partition for p in ps], member=c.memberid())

    def revoked(_c: Consumer, ps: list[TopicPartition]) -> None:
        for p in ps:
            held.pop(p.partition, None)
        say(revoked=[p.partition for p in ps])

    def lost(_c: Consumer, ps: list[TopicPartition]) -> None:
        say(lost=[p.partition for p in ps])  # the zombie does not notice: it keeps committing what it holds

    consumer.subscribe([args.topic], on_assign=assigned, on_revoke=revoked, on_lost=lost)
    started = time.monotonic()
    last_commit = 0.0
    stalls = 0
    stalled_at_assignment = 0  # how many assignments there had been at the last stall
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
        if now - last_commit < args.commit_every_s:
            continue
        last_commit = now
        if not held:
            continue
        offsets = [TopicPartition(args.topic, partition, offset) for partition, offset in sorted(held.items())]
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


# --- the driver side, used by the tests ------------------------------------------------------------------------


class MemberProcess:
    """One `group_member` subprocess: its stdout lines as JSON, SIGSTOP/SIGCONT, and a kill that always ends it."""

    def __init__(
        self, out_dir: Any, name: str, bootstrap: str, topic: str, group: str, *extra: str, protocol: str = "classic"
    ) -> None:
        import subprocess
        from pathlib import Path

        self.name = name
        self.out = Path(out_dir) / f"{name}.jsonl"
        command = [
            sys.executable,
            "-m",
            "tests.pipelines.group_member",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--group",
            group,
            "--protocol",
            protocol,
            "--client-id",
            name,
            *extra,
        ]
        with self.out.open("w") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)

    def lines(self) -> list[dict[str, Any]]:
        found = []
        for line in self.out.read_text().splitlines():
            if line.startswith("{"):
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
        return found

    def wait_for(self, key: str, timeout_s: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in self.lines():
                if key in line:
                    return line
            time.sleep(0.1)
        raise AssertionError(f"{self.name} printed no {key!r} within {timeout_s} s: {self.out.read_text()[-2000:]}")

    def signal(self, number: int) -> None:
        import os

        os.kill(self.process.pid, number)

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGCONT (a stopped process ignores SIGTERM), SIGTERM for a clean close, SIGKILL if it hangs."""
        import subprocess

        if self.process.poll() is not None:
            return
        self.signal(signal.SIGCONT)
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout_s)


def create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, n, 1) for t, n in partitions.items()]).values():
        future.result(30)


def read_records(bootstrap: str, topic: str, idle_s: float = 2.0, timeout_s: float = 30.0) -> list[tuple[bytes, int]]:
    """Every record of a (single-partition) topic: (value, timestamp ms), until `idle_s` without news."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.time_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records: list[tuple[bytes, int]] = []
    deadline = time.monotonic() + timeout_s
    last = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - last < idle_s:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            records.append((message.value(), message.timestamp()[1]))
            last = time.monotonic()
    consumer.close()
    return records


@dataclass
class ScenarioResult:
    """What one scenario left on its telemetry topic, parsed, plus what each member printed."""

    group: str
    telemetry_topic: str
    events: list[Any]
    outputs: dict[str, list[dict[str, Any]]]
    shipped: Any
    snapshot: Any

    def of(self, source: str, kind: str) -> list[Any]:
        return [e for e in self.events if e.source.value == source and e.event.value == kind]


def run_group_scenario(
    bootstrap: str,
    log_file: Any,
    out_dir: Any,
    *,
    protocol: str = "classic",
    stall_s: float = 7.0,
    with_poll_stall: bool = True,
) -> ScenarioResult:
    """Join A (agent) and B; SIGSTOP A past its session (the broker expires it); SIGCONT (its commits are
    refused); C (agent) overruns max.poll.interval.ms; B, C, A close. The broker log is shipped meanwhile."""
    from emitters.log_shipper import start_shipper
    from emitters.poll_groups import GroupPoller
    from transforms.telemetry.record_parser import parse_telemetry_record

    tag = f"{protocol}-{time.time_ns()}"
    topic, group, telemetry = f"work-{tag}", f"group-{tag}", f"telemetry-{tag}"
    create_topics(bootstrap, {topic: 3, telemetry: 1})
    shipper = start_shipper(log_file, bootstrap, telemetry, from_start=False)
    members: list[MemberProcess] = []

    def member(name: str, *extra: str) -> MemberProcess:
        started = MemberProcess(out_dir, name, bootstrap, topic, group, *extra, protocol=protocol)
        members.append(started)
        return started

    snapshot = None
    try:
        a = member("A", "--agent-topic", telemetry)
        a.wait_for("assigned")
        b = member("B")
        b.wait_for("assigned")
        time.sleep(1.5)
        snapshot = GroupPoller(bootstrap, telemetry, groups=[group]).run(0, once=True)
        a.signal(signal.SIGSTOP)
        time.sleep(stall_s)
        a.signal(signal.SIGCONT)
        a.wait_for("commit_error", 20)
        if with_poll_stall:
            c = member(
                "C",
                "--agent-topic",
                telemetry,
                "--max-poll-interval-ms",
                "3000",
                "--session-timeout-ms",
                "3000",
                "--stall-after-s",
                "2",
                "--stall-s",
                "5",
            )
            c.wait_for("poll_error", 25)
            time.sleep(1.5)  # one statistics interval: the agent reads the poll timeout from cgrp.rebalance_reason
        for started in (b, *members[2:], a):
            started.stop()
        shipped = shipper.stop()
    finally:
        for started in members:
            started.stop()
        shipper.stop()
    events = []
    for value, stamp in read_records(bootstrap, telemetry):
        events.extend(e for e in parse_telemetry_record(value, stamp).events if e.group_id == group)
    return ScenarioResult(group, telemetry, events, {m.name: m.lines() for m in members}, shipped, snapshot)
