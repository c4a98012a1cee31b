"""Broker-log shipper: tails a Kafka broker's log file and produces its group-coordinator lines to a telemetry topic.

Brokers do not publish heartbeats; their coordinator logs do say who joined, left, expired and why, so this ships
them (one log event = one record, keyed by host so a broker's lines stay ordered in one partition; continuation
lines, a stack trace's or a configuration listing's, are joined to their line as Filebeat's multiline does). It runs
next to the embedded broker (`start_shipper`, a daemon thread; `radar run` starts one for the embedded broker) or
standalone on a real broker host:

    radar ship-logs --log /var/log/kafka/server.log --bootstrap HOST:9092 \\
        --topic radar.telemetry [--keyword coordinator.group ...] [--from-end] [-X security.protocol=SASL_SSL ...]

(`python -m rebalance_radar.emitters.log_shipper` takes the same arguments, for hosts with only the emitters installed.)

Rotation-safe: a file that shrinks (truncated / copytruncate) is read again from the start; a path that now names
another inode (rename-and-create rotation) has the old file drained, then the new one read from its start.
Never blocks the broker host: lines go through the emitters' bounded `TelemetryProducer`; a line that does not
fit, is not delivered in time, or is still queued when `stop()`'s flush bound runs out is counted (`dropped`).
Producer settings given with -X are never logged (they may hold secrets).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from rebalance_radar.emitters.telemetry_producer import (
    DEFAULT_TELEMETRY_TOPIC,
    TelemetryProducer,
    add_producer_arguments,
    producer_settings_from,
)
from rebalance_radar.transforms.telemetry.multiline import DEFAULT_FLUSH_TIMEOUT_S, MultilineJoiner

# What a coordinator line contains: the logger (the layout prints it), the Scala/Java prefixes, KIP-848 context.
DEFAULT_KEYWORDS: tuple[str, ...] = (
    "coordinator.group",
    "GroupCoordinator",
    "GroupMetadataManager",
    "[GroupId ",
    # the broker's own start and stop, which name the broker of a cross-group incident (`transforms.incidents`)
    "to SHUTTING_DOWN",
    "Kafka Server started",
    "[KafkaServer id=",
    # the broker's configuration at start (its group session timeouts), one record with its settings
    "KafkaConfig values:",
)
READ_CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 64 << 10  # longer lines are cut: no coordinator message needs more
DEFAULT_POLL_INTERVAL_S = 0.2
DEFAULT_QUEUE_MESSAGES = 100_000
# A broker log bursts (a rebalance storm writes thousands of lines): a deeper queue than the agent's, compressed.
SHIPPER_PRODUCER_DEFAULTS: dict[str, Any] = {
    "queue.buffering.max.messages": DEFAULT_QUEUE_MESSAGES,
    "queue.buffering.max.kbytes": 64 * 1024,
    "compression.type": "lz4",
    "log_level": 3,
}


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """Which file a path named when it was opened: rotation replaces the inode, truncation shrinks the size."""

    device: int
    inode: int

    @staticmethod
    def of(stat: os.stat_result) -> FileIdentity:
        return FileIdentity(stat.st_dev, stat.st_ino)


class LogTail:
    """Complete new lines of a growing, rotating log file; `read_lines()` never blocks and never raises on a
    missing file (a broker that has not written its log yet, or a rotation in progress)."""

    def __init__(self, path: Path, *, from_start: bool = True) -> None:
        self.path = Path(path)
        self._skip_existing = not from_start
        self._file: BinaryIO | None = None
        self._identity: FileIdentity | None = None
        self._position = 0
        self._partial = b""
        self.rotations = 0
        self.truncations = 0

    def _open(self) -> bool:
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return False
        stat = os.fstat(handle.fileno())
        self._file, self._identity = handle, FileIdentity.of(stat)
        self._position = stat.st_size if self._skip_existing else 0
        self._skip_existing = False  # only the first file may be skipped to its end; rotated ones are read whole
        handle.seek(self._position)
        self._partial = b""
        return True

    def _read_available(self) -> Iterator[bytes]:
        assert self._file is not None
        while True:
            chunk = self._file.read(READ_CHUNK_BYTES)
            if not chunk:
                return
            self._position += len(chunk)
            data = self._partial + chunk
            lines = data.split(b"\n")
            self._partial = lines.pop()
            if len(self._partial) > MAX_LINE_BYTES:
                lines.append(self._partial[:MAX_LINE_BYTES])
                self._partial = b""
            yield from (line[:MAX_LINE_BYTES] for line in lines)

    def read_lines(self) -> list[bytes]:
        """Every complete line written since the last call (a trailing partial line waits for its newline)."""
        if self._file is None and not self._open():
            return []
        lines = list(self._read_available())
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            return lines  # rotated away, not recreated yet: keep draining the old file next time
        assert self._file is not None
        if FileIdentity.of(current) != self._identity:
            lines += self._read_available()  # the old file's last words, then the new file from its start
            if self._partial:
                lines.append(self._partial)
            self.close()
            self.rotations += 1
            if self._open():
                lines += self._read_available()
        elif current.st_size < self._position:
            self.truncations += 1
            self._file.seek(0)
            self._position, self._partial = 0, b""
            lines += self._read_available()
        return lines

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = None


def keyword_filter(keywords: Sequence[str]) -> Callable[[bytes], bool]:
    """A cheap substring gate; an empty keyword list keeps every non-blank line."""
    needles = tuple(k.encode() for k in keywords if k)
    if not needles:
        return lambda line: bool(line.strip())
    return lambda line: any(needle in line for needle in needles)


@dataclass(frozen=True, slots=True)
class ShipperCounts:
    """What a shipper did so far; `lines_kept` = log events kept (a multi-line event counts once); `dropped` = those
    not delivered (queue full, delivery failed, or still queued
    when stopped), `failed` = those of them the cluster refused or that timed out."""

    lines_read: int
    lines_kept: int
    produced: int
    delivered: int
    dropped: int
    failed: int
    rotations: int
    truncations: int


class LogShipper:
    """Tails `log_file` and produces kept lines to `topic`; `start()` runs it in a daemon thread."""

    def __init__(
        self,
        log_file: Path,
        bootstrap_servers: str,
        topic: str,
        *,
        keywords: Sequence[str] = DEFAULT_KEYWORDS,
        from_start: bool = True,
        poll_interval_s: float = DEFAULT_POLL_INTERVAL_S,
        producer_config: Mapping[str, Any] | None = None,
        host: str | None = None,
        flush_timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S,
    ) -> None:
        self.topic = topic
        self.bootstrap_servers = bootstrap_servers
        self.tail = LogTail(Path(log_file), from_start=from_start)
        self._keep = keyword_filter(keywords)
        self._joiner = MultilineJoiner(flush_timeout_s=flush_timeout_s)
        self._poll_interval_s = poll_interval_s
        self._key = (host or socket.gethostname()).encode()
        self.producer = TelemetryProducer(
            {**(producer_config or {}), "bootstrap.servers": bootstrap_servers},
            topic,
            client_id="radar-log-shipper",
            defaults=SHIPPER_PRODUCER_DEFAULTS,
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._read = self._kept = 0

    def ship_once(self, *, final: bool = False) -> int:
        """Read what is new, produce the kept log events (continuation lines joined to their line: a stack trace,
        the broker's `KafkaConfig values:` listing); returns how many were queued. An event waits for its
        continuation lines up to the joiner's flush timeout (or until `final`)."""
        lines = self.tail.read_lines()
        now = time.monotonic()
        events: list[bytes] = []
        for line in lines:
            events += self._joiner.feed(line.rstrip(b"\r"), now)
        events += self._joiner.drain() if final else self._joiner.due(now)
        queued = 0
        kept = 0
        for event in events:
            if not self._keep(event):
                continue
            kept += 1
            queued += self.producer.send(event, self._key)
        self.producer.serve()
        with self._lock:
            self._read += len(lines)
            self._kept += kept
        return queued

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                shipped = self.ship_once()
            except Exception as failure:  # a shipper must outlive any one bad read; say why once per failure
                print(f"log shipper: {type(failure).__name__}: {failure}", file=sys.stderr)
                shipped = 0
            if not shipped:
                self._stop.wait(self._poll_interval_s)
        self.ship_once(final=True)  # what the broker wrote while we were asked to stop

    def start(self) -> LogShipper:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"radar-log-shipper:{self.tail.path}", daemon=True)
            self._thread.start()
        return self

    def stop(self, flush_timeout_s: float = 10.0) -> ShipperCounts:
        """Stop tailing, deliver what is queued (up to the timeout), close the file; safe to call twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=flush_timeout_s)
            self._thread = None
        if self._joiner.pending_lines:
            self.ship_once(final=True)  # an event still waiting for continuation lines goes as it is
        self.producer.close(flush_timeout_s)
        self.tail.close()
        return self.counts

    @property
    def counts(self) -> ShipperCounts:
        sent = self.producer.counts
        with self._lock:
            return ShipperCounts(
                self._read,
                self._kept,
                sent.produced,
                sent.delivered,
                sent.dropped,
                sent.failed,
                self.tail.rotations,
                self.tail.truncations,
            )

    def __enter__(self) -> LogShipper:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def start_shipper(
    log_file: Path | str,
    bootstrap_servers: str,
    topic: str,
    *,
    keywords: Sequence[str] = DEFAULT_KEYWORDS,
    from_start: bool = True,
    producer_config: Mapping[str, Any] | None = None,
) -> LogShipper:
    """A running shipper (daemon thread) for a broker log; call `.stop()` to flush and end it."""
    return LogShipper(
        Path(log_file),
        bootstrap_servers,
        topic,
        keywords=keywords,
        from_start=from_start,
        producer_config=producer_config,
    ).start()


def add_arguments(parser: argparse.ArgumentParser, *, bootstrap_required: bool = True) -> None:
    """The shipper's options, shared by `python -m rebalance_radar.emitters.log_shipper` and `radar ship-logs`."""
    parser.add_argument("--log", required=True, help="the broker's log file (server.log)")
    add_producer_arguments(parser, bootstrap_required=bootstrap_required)
    parser.add_argument(
        "--keyword", action="append", default=None, help="keep lines containing this (repeatable; default: coordinator)"
    )
    parser.add_argument("--all-lines", action="store_true", help="ship every line (no keyword filter)")
    parser.add_argument("--from-end", action="store_true", help="skip what the log already holds")
    parser.add_argument("--poll-interval", type=float, default=DEFAULT_POLL_INTERVAL_S, metavar="S")
    parser.add_argument("--once", action="store_true", help="ship what the log holds now, flush and exit")


def run_shipper(args: argparse.Namespace, client_settings: Mapping[str, Any] | None = None) -> ShipperCounts:
    """Ship `args.log` until SIGTERM/Ctrl-C (or once); `client_settings` (bootstrap + security) under -X settings."""
    settings = producer_settings_from(args, client_settings)
    bootstrap = str(settings.get("bootstrap.servers") or "")
    topic = args.topic or DEFAULT_TELEMETRY_TOPIC
    keywords: Sequence[str] = () if args.all_lines else tuple(args.keyword or DEFAULT_KEYWORDS)
    shipper = LogShipper(
        Path(args.log),
        bootstrap,
        topic,
        keywords=keywords,
        from_start=not args.from_end,
        poll_interval_s=args.poll_interval,
        producer_config=settings,
    )
    print(f"log shipper: {args.log} -> {topic} on {bootstrap}", file=sys.stderr, flush=True)
    if args.once:
        shipper.ship_once(final=True)
        return shipper.stop()
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    shipper.start()
    try:
        while not stopping.wait(5.0):
            pass
    except KeyboardInterrupt:
        pass
    return shipper.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rebalance_radar.emitters.log_shipper", description=__doc__.split("\n")[0]
    )
    add_arguments(parser)
    counts = run_shipper(parser.parse_args(argv))
    print(f"log shipper: stopped; {counts}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
