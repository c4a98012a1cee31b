"""A protocol tap: a TCP proxy in front of one Kafka broker that mirrors group-protocol calls as telemetry.

Why: brokers do not publish heartbeats, but every JoinGroup/Heartbeat/ConsumerGroupHeartbeat... passes the wire;
a tap sees who called, with which generation/epoch, and how the coordinator answered, without touching clients.

    radar tap --listen 127.0.0.1:19092 --broker 127.0.0.1:9092 \\
        --bootstrap telemetry:9092 --topic radar.telemetry [-X security.protocol=SASL_SSL -X ...]

(`python -m rebalance_radar.emitters.protocol_tap` takes the same arguments, for hosts with only the emitters
installed.)

Each connection is forwarded byte for byte in both directions (the bytes are written on before the tap looks at
them). Meanwhile the size-prefixed stream is scanned: client->broker request headers give api key, version,
correlation id and client id; broker->client responses are paired with their request by correlation id. Each
request/response pair of a group API (`MIRRORED_API_KEYS`) becomes one `radar.frame/1` `exchange` record
(framing: as on the wire; time: when the response passed; key: the client's address), produced by the emitters'
bounded `TelemetryProducer`: a record that does not fit, or is not delivered in time, is counted in `dropped` —
the forwarded traffic never waits for telemetry. Other APIs (Produce, Fetch, Metadata...)
are skipped by length without being copied. Settings given with -X are passed to the producer and never printed.

Clients only keep talking to the tap if the broker advertises the tap: a client bootstraps through it, then
connects to whatever `advertised.listeners` says. So:
- embedded broker: `advertise_through(broker_config, host, tap_port)` returns a `BrokerConfig` whose
  `extra_properties` set `advertised.listeners` to the tap (the broker still listens on its own port);
- a real cluster needs one tap per broker and each broker advertising its tap's address (a separate listener,
  e.g. `TAPPED://tap-host-1:19092`, so unmonitored clients keep the direct one), or a port-mirroring tool (a SPAN
  port / `tc mirred` / a packet capture that reassembles TCP) feeding the same scanner, which needs no
  advertised-address change at all.
Not parsed: TLS listeners (the tap sees ciphertext; terminate TLS at the tap or mirror a plaintext listener), and
SASL v0 raw authentication tokens (size-prefixed but without a Kafka header; no group API key is mirrored from
them except by an unlucky byte pattern, which the ingest then counts as an undecodable frame).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import struct
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, Self, TypeVar

from rebalance_radar.emitters.telemetry_producer import (
    DEFAULT_TELEMETRY_TOPIC,
    TelemetryProducer,
    add_producer_arguments,
    producer_settings_from,
)
from rebalance_radar.transforms.wire.frame_envelope import FRAMING_SIZED, encode_frame_envelope

# Group APIs mirrored (key -> name, as in transforms.wire.frames.APIS); FindCoordinator is left out: no event.
MIRRORED_API_KEYS: dict[int, str] = {
    8: "OffsetCommit",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
    76: "ShareGroupHeartbeat",
    88: "StreamsGroupHeartbeat",
    89: "StreamsGroupDescribe",
}
# A group frame larger than this is forwarded but not mirrored (a SyncGroup of a huge group can be MBs).
MAX_MIRRORED_FRAME_BYTES = 1 << 20
# Kafka refuses frames above socket.request.max.bytes (100 MiB); a larger or negative size means the stream is not
# Kafka framing (or the scanner lost sync): stop scanning that direction, keep forwarding.
MAX_FRAME_BYTES = 1 << 30
MAX_PENDING_PER_CONNECTION = 1024
READ_CHUNK_BYTES = 256 * 1024
_SIZE = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_INT16 = struct.Struct(">h")
# A frame costs more than its bytes in a group storm: a deeper byte bound than the agent's.
TAP_PRODUCER_DEFAULTS: dict[str, Any] = {"queue.buffering.max.kbytes": 32 * 1024}


class BrokerProperties(Protocol):
    """What `advertise_through` needs of a broker config (`pipelines.config.BrokerConfig`, a frozen model)."""

    extra_properties: dict[str, str]

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self: ...


BrokerT = TypeVar("BrokerT", bound=BrokerProperties)


def advertise_through(broker: BrokerT, host: str, port: int) -> BrokerT:
    """The embedded broker's config with `advertised.listeners` pointing at a tap (its own listener unchanged)."""
    extra = {**broker.extra_properties, "advertised.listeners": f"PLAINTEXT://{host}:{port}"}
    return broker.model_copy(update={"extra_properties": extra})


def parse_host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


@dataclass
class TapStats:
    """Counters a tap reports on exit: what it forwarded, mirrored, delivered and had to drop."""

    connections: int = 0
    requests: int = 0
    responses: int = 0
    bytes_to_broker: int = 0
    bytes_to_client: int = 0
    group_requests: int = 0
    produced: int = 0
    delivered: int = 0
    dropped: int = 0
    unanswered: int = 0  # group requests still pending when their connection closed (or evicted)
    oversize: int = 0
    desynced: int = 0
    by_api: dict[str, int] = field(default_factory=dict)


class FrameScanner:
    """Splits one direction of a Kafka connection into size-prefixed frames, copying only the ones it keeps.

    `decide(head)` sees the first `head_size` bytes after the size and says whether to keep the whole frame;
    kept frames (size prefix included) go to `on_frame`, the others are skipped by count.
    """

    def __init__(self, head_size: int, decide: Callable[[bytes], bool], on_frame: Callable[[bytes], None]) -> None:
        self.head_size = head_size
        self.decide = decide
        self.on_frame = on_frame
        self.broken = False
        self.oversize = 0
        self._head = bytearray()
        self._frame_size = -1
        self._skip = 0
        self._capture: bytearray | None = None
        self._remaining = 0

    def feed(self, data: bytes) -> None:
        if self.broken:
            return
        view = memoryview(data)
        pos, end = 0, len(data)
        while pos < end:
            if self._skip:
                taken = min(self._skip, end - pos)
                self._skip -= taken
                pos += taken
            elif self._capture is not None:
                taken = min(self._remaining, end - pos)
                self._capture += view[pos : pos + taken]
                self._remaining -= taken
                pos += taken
                if not self._remaining:
                    frame, self._capture = bytes(self._capture), None
                    self.on_frame(frame)
            else:
                pos = self._read_head(view, pos, end)
                if self.broken:
                    return

    def _read_head(self, view: memoryview, pos: int, end: int) -> int:
        if self._frame_size < 0:
            taken = min(4 - len(self._head), end - pos)
            self._head += view[pos : pos + taken]
            pos += taken
            if len(self._head) < 4:
                return pos
            (self._frame_size,) = _SIZE.unpack_from(self._head)
            if not 0 <= self._frame_size <= MAX_FRAME_BYTES:
                self.broken = True
                return end
        need = 4 + min(self.head_size, self._frame_size)
        taken = min(need - len(self._head), end - pos)
        self._head += view[pos : pos + taken]
        pos += taken
        if len(self._head) < need:
            return pos
        head, size, rest = bytes(self._head), self._frame_size, self._frame_size - (need - 4)
        self._head.clear()
        self._frame_size = -1
        keep = size >= self.head_size and self.decide(head[4:])
        if keep and size > MAX_MIRRORED_FRAME_BYTES:
            self.oversize += 1
            keep = False
        if not keep:
            self._skip = rest
        elif rest == 0:
            self.on_frame(head)
        else:
            self._capture, self._remaining = bytearray(head), rest
        return pos


def request_client_id(frame: bytes) -> str | None:
    """The client id of a sized request frame (header v1/v2: int16-length string after the correlation id)."""
    pos = 4 + _REQUEST_HEAD.size
    if len(frame) < pos + 2:
        return None
    (length,) = _INT16.unpack_from(frame, pos)
    if length < 0 or len(frame) < pos + 2 + length:
        return None
    return frame[pos + 2 : pos + 2 + length].decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A group request waiting for its response on one connection."""

    api_key: int
    api_version: int
    frame: bytes
    client_id: str | None


class TappedConnection:
    """One client connection: forwards both directions, pairs group requests with their responses."""

    def __init__(self, tap: ProtocolTap, peer: str) -> None:
        self.tap = tap
        self.peer = peer
        self.pending: OrderedDict[int, PendingRequest] = OrderedDict()
        self._pending_head: tuple[int, int, int] | None = None
        self.requests = FrameScanner(_REQUEST_HEAD.size, self._decide_request, self._on_request)
        self.responses = FrameScanner(4, self._decide_response, self._on_response)

    def _decide_request(self, head: bytes) -> bool:
        api_key, api_version, correlation_id = _REQUEST_HEAD.unpack_from(head)
        self.tap.counters.requests += 1
        if api_key not in MIRRORED_API_KEYS:
            return False
        self._pending_head = (api_key, api_version, correlation_id)
        return True

    def _on_request(self, frame: bytes) -> None:
        assert self._pending_head is not None
        api_key, api_version, correlation_id = self._pending_head
        self._pending_head = None
        self.tap.counters.group_requests += 1
        self.pending[correlation_id] = PendingRequest(api_key, api_version, frame, request_client_id(frame))
        if len(self.pending) > MAX_PENDING_PER_CONNECTION:
            self.pending.popitem(last=False)
            self.tap.counters.unanswered += 1

    def _decide_response(self, head: bytes) -> bool:
        self.tap.counters.responses += 1
        (correlation_id,) = _SIZE.unpack_from(head)
        return correlation_id in self.pending

    def _on_response(self, frame: bytes) -> None:
        (correlation_id,) = _SIZE.unpack_from(frame, 4)
        request = self.pending.pop(correlation_id, None)
        if request is not None:
            self.tap.mirror(request, frame, self.peer)

    def close(self) -> None:
        self.tap.counters.unanswered += len(self.pending)
        self.tap.counters.oversize += self.requests.oversize + self.responses.oversize
        self.tap.counters.desynced += int(self.requests.broken) + int(self.responses.broken)
        self.pending.clear()


class ProtocolTap:
    """The asyncio proxy: one listening socket, one broker behind it, one telemetry producer."""

    def __init__(self, listen: tuple[str, int], broker: tuple[str, int], producer: TelemetryProducer) -> None:
        self.listen = listen
        self.broker = broker
        self.counters = TapStats()  # updated in place by the connections; `stats` adds the producer's counts
        self.producer = producer
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Future[None]] = set()  # cancelled on stop; their connections then close
        self._connections: set[asyncio.Task[Any]] = set()
        self._sink_task: asyncio.Task[None] | None = None
        self._stopping = False

    def mirror(self, request: PendingRequest, response: bytes, peer: str) -> None:
        value = encode_frame_envelope(
            api_key=request.api_key,
            api_version=request.api_version,
            request=request.frame,
            response=response,
            framing=FRAMING_SIZED,
            time_ms=int(time.time() * 1000),
            peer=peer,
            client_id=request.client_id,
        )
        name = MIRRORED_API_KEYS[request.api_key]
        self.counters.by_api[name] = self.counters.by_api.get(name, 0) + 1
        self.producer.send(value, peer.encode())

    @property
    def stats(self) -> TapStats:
        """The tap's counters, with the producer's produced/delivered/dropped as of now."""
        sent = self.producer.counts
        self.counters.produced, self.counters.delivered, self.counters.dropped = (
            sent.produced,
            sent.delivered,
            sent.dropped,
        )
        return self.counters

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.listen[0], self.listen[1])
        self._sink_task = asyncio.get_running_loop().create_task(self._serve_sink())

    async def _serve_sink(self) -> None:
        while True:
            self.producer.serve()
            await asyncio.sleep(0.1)

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.counters.connections += 1
        peer_address = client_writer.get_extra_info("peername") or ("?", 0)
        connection = TappedConnection(self, f"{peer_address[0]}:{peer_address[1]}")
        try:
            broker_reader, broker_writer = await asyncio.open_connection(*self.broker)
        except OSError:
            client_writer.close()  # the client sees the broker as down, as it would without a tap
            return
        if self._stopping:
            for writer in (client_writer, broker_writer):
                writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        upstream = asyncio.ensure_future(self._pump(client_reader, broker_writer, connection.requests, True))
        downstream = asyncio.ensure_future(self._pump(broker_reader, client_writer, connection.responses, False))
        self._pumps.update((upstream, downstream))
        try:
            await asyncio.wait({upstream, downstream}, return_when=asyncio.FIRST_COMPLETED)
        finally:  # either side closing (or the tap stopping) ends both directions
            for pump in (upstream, downstream):
                pump.cancel()
            await asyncio.gather(upstream, downstream, return_exceptions=True)
            connection.close()
            for writer in (client_writer, broker_writer):
                writer.close()
            self._pumps.difference_update((upstream, downstream))
            self._connections.discard(task)

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, scanner: FrameScanner, to_broker: bool
    ) -> None:
        """Copy one direction: write first, then scan (a scan never delays the bytes), drain for back-pressure."""
        while True:
            try:
                data = await reader.read(READ_CHUNK_BYTES)
            except OSError:
                return
            if not data:
                return
            writer.write(data)
            if to_broker:
                self.counters.bytes_to_broker += len(data)
            else:
                self.counters.bytes_to_client += len(data)
            scanner.feed(data)
            try:
                await writer.drain()
            except OSError:
                return

    async def stop(self, flush_timeout_s: float = 5.0) -> TapStats:
        self._stopping = True
        if self._server is not None:
            self._server.close()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._sink_task is not None:
            self._sink_task.cancel()
            await asyncio.gather(self._sink_task, return_exceptions=True)
        self.producer.close(flush_timeout_s)
        return self.stats


async def run(args: argparse.Namespace, client_settings: Mapping[str, Any] | None = None) -> TapStats:
    """Serve until SIGTERM/SIGINT; `client_settings` (bootstrap + security) lie under --bootstrap and -X."""
    producer_config = producer_settings_from(args, client_settings)
    if args.max_queued:
        producer_config["queue.buffering.max.messages"] = args.max_queued
    topic = args.topic or DEFAULT_TELEMETRY_TOPIC
    producer = TelemetryProducer(producer_config, topic, client_id="radar-protocol-tap", defaults=TAP_PRODUCER_DEFAULTS)
    tap = ProtocolTap(args.listen, args.broker, producer)
    await tap.start()
    print(json.dumps({"listening": f"{args.listen[0]}:{args.listen[1]}", "topic": topic}), flush=True)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stopping.set)
    while not stopping.is_set():
        try:
            await asyncio.wait_for(stopping.wait(), timeout=args.stats_interval_s or None)
        except TimeoutError:
            print(json.dumps({"stats": asdict(tap.stats)}), flush=True)
    return await tap.stop(args.flush_timeout_s)


def add_arguments(parser: argparse.ArgumentParser, *, bootstrap_required: bool = True) -> None:
    """The tap's options, shared by `python -m rebalance_radar.emitters.protocol_tap` and `radar tap`."""
    parser.add_argument("--listen", type=parse_host_port, required=True, help="HOST:PORT the clients connect to")
    parser.add_argument("--broker", type=parse_host_port, required=True, help="HOST:PORT of the tapped broker")
    add_producer_arguments(parser, bootstrap_required=bootstrap_required)
    parser.add_argument("--max-queued", type=int, default=0, help="producer queue bound (records); 0 = 10000")
    parser.add_argument("--flush-timeout-s", type=float, default=5.0)
    parser.add_argument("--stats-interval-s", type=float, default=0.0, help="print stats every N s (0 = at exit)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rebalance_radar.emitters.protocol_tap", description=__doc__.split("\n\n")[0]
    )
    add_arguments(parser)
    stats = asyncio.run(run(parser.parse_args(argv)))
    print(json.dumps({"stopped": asdict(stats)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
