"""Broker-log shipper: tails a Kafka broker's log file and produces its group-coordinator lines to a telemetry topic.

Brokers do not publish heartbeats; their coordinator logs do say who joined, left, expired and why, so this ships
them (one line = one record, keyed by host so a broker's lines stay ordered in one partition). It runs next to
the embedded broker (`start_shipper`, a daemon thread; `radar run` starts one for the embedded broker) or
standalone on a real broker host:

    python -m pipelines.local.log_shipper --log /var/log/kafka/server.log --bootstrap HOST:9092 \\
        --topic radar.telemetry [--keyword coordinator.group ...] [--from-end] [-X security.protocol=SASL_SSL ...]

Rotation-safe: a file that shrinks (truncated / copytruncate) is read again from the start; a path that now names
another inode (rename-and-create rotation) has the old file drained, then the new one read from its start.
Never blocks the broker host: the producer queue is bounded, a full queue drops lines and counts them (`dropped`);
`stop()` flushes what is queued. Producer settings given with -X are never logged (they may hold secrets).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

# What a coordinator line contains: the logger (the layout prints it), the Scala/Java prefixes, KIP-848 context.
DEFAULT_KEYWORDS: tuple[str, ...] = (
    "coordinator.group",
    "GroupCoordinator",
    "GroupMetadataManager",
    "[GroupId ",
)
READ_CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 64 << 10  # longer lines are cut: no coordinator message needs more
DEFAULT_POLL_INTERVAL_S = 0.2
DEFAULT_QUEUE_MESSAGES = 100_000


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
    """What a shipper did so far; `dropped` = lines lost to a full queue, `failed` = delivery errors."""

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
    ) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.bootstrap_servers = bootstrap_servers
        self.tail = LogTail(Path(log_file), from_start=from_start)
        self._keep = keyword_filter(keywords)
        self._poll_interval_s = poll_interval_s
        self._key = (host or socket.gethostname()).encode()
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            "client.id": "radar-log-shipper",
            "linger.ms": 50,
            "queue.buffering.max.messages": DEFAULT_QUEUE_MESSAGES,
            "queue.buffering.max.kbytes": 64 * 1024,
            "message.timeout.ms": 30_000,
            "compression.type": "lz4",
            "log_level": 3,
        }
        config.update(producer_config or {})
        self._producer = Producer(config)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._read = self._kept = self._produced = self._delivered = self._dropped = self._failed = 0

    def _on_delivery(self, error: object, _message: object) -> None:
        with self._lock:
            if error is None:
                self._delivered += 1
            else:
                self._failed += 1

    def ship_once(self) -> int:
        """Read what is new, produce the kept lines; returns how many were queued."""
        lines = self.tail.read_lines()
        queued = 0
        kept = 0
        for line in lines:
            line = line.rstrip(b"\r")
            if not self._keep(line):
                continue
            kept += 1
            try:
                self._producer.produce(self.topic, line, self._key, on_delivery=self._on_delivery)
                queued += 1
            except BufferError:
                with self._lock:
                    self._dropped += 1
        self._producer.poll(0)
        with self._lock:
            self._read += len(lines)
            self._kept += kept
            self._produced += queued
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
        self.ship_once()  # what the broker wrote while we were asked to stop

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
        self._producer.flush(flush_timeout_s)
        self.tail.close()
        return self.counts

    @property
    def counts(self) -> ShipperCounts:
        with self._lock:
            return ShipperCounts(
                self._read,
                self._kept,
                self._produced,
                self._delivered,
                self._dropped,
                self._failed,
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


def _producer_property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got a value without '=' for {key or '?'}")
    return key.strip(), value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines.local.log_shipper", description=__doc__.split("\n")[0])
    parser.add_argument("--log", required=True, help="the broker's log file (server.log)")
    parser.add_argument("--bootstrap", required=True, help="HOST:PORT of the telemetry cluster")
    parser.add_argument("--topic", default="radar.telemetry", help="telemetry topic (default radar.telemetry)")
    parser.add_argument(
        "--keyword", action="append", default=None, help="keep lines containing this (repeatable; default: coordinator)"
    )
    parser.add_argument("--all-lines", action="store_true", help="ship every line (no keyword filter)")
    parser.add_argument("--from-end", action="store_true", help="skip what the log already holds")
    parser.add_argument("--poll-interval", type=float, default=DEFAULT_POLL_INTERVAL_S, metavar="S")
    parser.add_argument(
        "-X",
        dest="producer",
        action="append",
        type=_producer_property,
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka producer property (e.g. security.protocol=SASL_SSL); values are never printed",
    )
    args = parser.parse_args(argv)
    keywords: Sequence[str] = () if args.all_lines else tuple(args.keyword or DEFAULT_KEYWORDS)
    shipper = LogShipper(
        Path(args.log),
        args.bootstrap,
        args.topic,
        keywords=keywords,
        from_start=not args.from_end,
        poll_interval_s=args.poll_interval,
        producer_config=dict(args.producer),
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    print(f"log shipper: {args.log} -> {args.topic} on {args.bootstrap}", file=sys.stderr, flush=True)
    shipper.start()
    try:
        while not stopping.wait(5.0):
            pass
    except KeyboardInterrupt:
        pass
    counts = shipper.stop()
    print(f"log shipper: stopped; {counts}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
