"""The one telemetry producer every emitter uses: bounded, never blocks its caller, counts what it loses.

Why: the agent runs inside a consumer's poll loop, the shipper on a broker host, the tap in a connection's data
path; none of them may wait for a telemetry cluster that is slow or down. A confluent-kafka producer with a bounded
queue (`queue.buffering.max.messages` / `.kbytes`) and a delivery timeout (`message.timeout.ms`) gives that if
nobody calls a blocking method: a record that does not fit is counted as `rejected`, one the cluster refuses or
that times out as `failed`, and what is still queued when `close()`'s flush bound runs out as `abandoned` —
together `dropped`, so nothing is lost silently. Client-level errors (an unreachable cluster) are counted in
`errors`, never raised. Settings are never logged (they may hold credentials).
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Producer

from rebalance_radar.emitters.cluster_probe import client_logger
from rebalance_radar.transforms.telemetry.json_events import RadarEventV1

DEFAULT_TELEMETRY_TOPIC = "radar.telemetry"
DEFAULT_FLUSH_TIMEOUT_S = 5.0
# Defaults every emitter starts from; its own `defaults` and then the user's settings override them.
BASE_PRODUCER_SETTINGS: dict[str, Any] = {
    "linger.ms": 50,
    "queue.buffering.max.messages": 10_000,
    "queue.buffering.max.kbytes": 16 * 1024,
    "message.timeout.ms": 30_000,
    "socket.connection.setup.timeout.ms": 10_000,
    "reconnect.backoff.max.ms": 5_000,
    "log_level": 2,
}


@dataclass(frozen=True, slots=True)
class ProducerCounts:
    """What a telemetry producer did: `produced` = queued; every queued record ends `delivered` or `dropped`."""

    produced: int
    delivered: int
    rejected: int  # not queued: the bounded queue was full
    failed: int  # queued, then refused by the cluster or expired (message.timeout.ms)
    abandoned: int  # still queued when close() stopped waiting
    errors: int  # client-level errors reported by librdkafka (e.g. all brokers down)

    @property
    def dropped(self) -> int:
        return self.rejected + self.failed + self.abandoned


class TelemetryProducer:
    """Produces telemetry records to one topic without ever waiting; `close()` flushes within a bound."""

    def __init__(
        self,
        settings: Mapping[str, Any],
        topic: str = DEFAULT_TELEMETRY_TOPIC,
        *,
        client_id: str,
        defaults: Mapping[str, Any] | None = None,
        flush_timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S,
    ) -> None:
        config: dict[str, Any] = {**BASE_PRODUCER_SETTINGS, "client.id": client_id, **(defaults or {}), **settings}
        config["error_cb"] = self._on_error  # an unreachable telemetry cluster is counted, not raised
        config.setdefault("logger", client_logger())  # and librdkafka's retries are not streamed to stderr
        self.topic = topic
        self.flush_timeout_s = flush_timeout_s
        self._lock = threading.Lock()
        self._produced = self._delivered = self._rejected = self._failed = self._abandoned = self._errors = 0
        self._closed = False
        self._producer = Producer(config)

    def _on_error(self, _error: KafkaError) -> None:
        with self._lock:
            self._errors += 1

    def _on_delivery(self, error: KafkaError | None, _message: object) -> None:
        with self._lock:
            if error is None:
                self._delivered += 1
            else:
                self._failed += 1

    def send(self, value: bytes, key: bytes | None = None) -> bool:
        """Queue one record; False (counted as rejected) when the bounded queue is full. Never waits."""
        try:
            self._producer.produce(self.topic, value, key, on_delivery=self._on_delivery)
        except BufferError:
            with self._lock:
                self._rejected += 1
            return False
        finally:
            self._producer.poll(0)  # serve delivery reports; never waits
        with self._lock:
            self._produced += 1
        return True

    def send_event(self, event: RadarEventV1, key: bytes | None = None) -> bool:
        """Queue one `radar.event/1` event, serialised by its model."""
        return self.send(event.to_json_bytes(), key)

    def serve(self) -> None:
        """Serve delivery reports without sending (for callers that go quiet for a while)."""
        self._producer.poll(0)

    @property
    def queued(self) -> int:
        return len(self._producer)

    def flush(self, timeout_s: float | None = None) -> int:
        """Deliver what is queued, up to a timeout; returns what is still queued."""
        return self._producer.flush(self.flush_timeout_s if timeout_s is None else timeout_s)

    def close(self, timeout_s: float | None = None) -> ProducerCounts:
        """Flush within the bound, count what is left as abandoned; safe to call twice."""
        left = self.flush(timeout_s)
        with self._lock:
            if not self._closed:
                self._abandoned += left
                self._closed = True
        return self.counts

    @property
    def counts(self) -> ProducerCounts:
        with self._lock:
            return ProducerCounts(
                self._produced, self._delivered, self._rejected, self._failed, self._abandoned, self._errors
            )

    @property
    def produced(self) -> int:
        return self.counts.produced

    @property
    def delivered(self) -> int:
        return self.counts.delivered

    @property
    def dropped(self) -> int:
        return self.counts.dropped

    def count_dropped(self) -> None:
        """Count a record the caller could not even build (telemetry must never break the caller)."""
        with self._lock:
            self._rejected += 1


def producer_setting(text: str) -> tuple[str, str]:
    """One `-X key=value` librdkafka producer setting (argparse type)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got a setting without '=' for {key or '?'}")
    return key.strip(), value


def add_producer_arguments(parser: argparse.ArgumentParser, *, bootstrap_required: bool) -> None:
    """--bootstrap, --topic and -X: where an emitter's command line sends its telemetry (values never printed)."""
    parser.add_argument(
        "--bootstrap",
        required=bootstrap_required,
        default=None,
        help="bootstrap servers of the telemetry cluster"
        + ("" if bootstrap_required else " (default: kafka.bootstrap_servers)"),
    )
    parser.add_argument("--topic", default=None, help=f"telemetry topic (default {DEFAULT_TELEMETRY_TOPIC})")
    parser.add_argument(
        "-X",
        dest="producer_settings",
        action="append",
        type=producer_setting,
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka producer setting (e.g. security.protocol=SASL_SSL), repeatable; values are never printed",
    )


def producer_settings_from(args: argparse.Namespace, client_settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The cluster's settings (bootstrap + security), then --bootstrap, then -X settings."""
    return {
        **(client_settings or {}),
        **({"bootstrap.servers": args.bootstrap} if args.bootstrap else {}),
        **dict(args.producer_settings),
    }
