"""The clock-tick emitter of `radar run`: a `radar.clock/1` record on the first telemetry topic every second.

Ticks make event time advance while every group is silent (the detectors' "nothing happened" rules fire live),
and since they are records on the telemetry topic, a dump of it replays the same passage of time.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from rebalance_radar.emitters.cluster_probe import client_logger
from rebalance_radar.transforms.telemetry.clock import clock_tick_record


def client_error_text(error: object) -> str:
    """A librdkafka error as its own sentence (`KafkaError.str()`), anything else as text."""
    return error.str() if isinstance(error, KafkaError) else str(error)


def default_emitter_name() -> str:
    return f"radar-run@{socket.gethostname()}"


class ClockTickEmitter:
    """Produces one tick per `interval_ms` from a daemon thread until `stop()`; `ticks` counts delivered ones,
    `failures` undelivered ones, and `problem()` says in a sentence when ticks are not arriving (the run's status
    line and its checks show it: the deadline rules go quiet without ticks)."""

    def __init__(
        self,
        settings: Mapping[str, Any],
        topic: str,
        *,
        interval_ms: int = 1000,
        emitter: str | None = None,
    ) -> None:
        """`settings`: the cluster's client settings from the one builder (`emitters.kafka_settings.client_settings`:
        bootstrap servers and credentials)."""
        self._topic = topic
        self._interval_s = interval_ms / 1000
        self.emitter = emitter or default_emitter_name()
        self.bootstrap_servers = str(settings.get("bootstrap.servers", "?"))
        # librdkafka's lines go to radar's client logger (silent unless --verbose): when `radar run` stops, the
        # embedded broker goes before this producer is destroyed, and its reconnect attempts are not news. Its
        # errors (authentication, ACLs, an unreachable broker) reach `problem()` through `error_cb` and delivery.
        producer_settings = {
            **settings,
            "linger.ms": 0,
            "acks": "1",
            "message.timeout.ms": max(5 * interval_ms, 5000),
            "logger": client_logger(),
            "error_cb": self._client_error,
        }
        self._producer = Producer(producer_settings)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="radar-clock", daemon=True)
        self.ticks = 0
        self.failures = 0
        self.last_error: str | None = None
        self._last_delivered = time.monotonic()

    def _delivered(self, error: object, _message: object) -> None:
        if error is None:
            self.ticks += 1
            self._last_delivered = time.monotonic()
            self.last_error = None
        else:
            self.failures += 1
            self.last_error = client_error_text(error)

    def _client_error(self, error: object) -> None:
        self.last_error = client_error_text(error)

    @property
    def running(self) -> bool:
        """The ticking thread is alive (a refused tick must never end it)."""
        return self._thread.is_alive()

    def problem(self, after_s: float | None = None) -> str | None:
        """A sentence when no tick was delivered for `after_s` (default: five periods) and something failed; None
        while ticks arrive."""
        quiet_s = time.monotonic() - self._last_delivered
        if quiet_s < (after_s if after_s is not None else 5 * self._interval_s) or (
            self.last_error is None and not self.failures
        ):
            return None
        cause = f": {self.last_error}" if self.last_error else ""
        return (
            f"clock ticks to {self._topic} on {self.bootstrap_servers} are not delivered ({self.failures} failed, "
            f"none for {quiet_s:.0f} s{cause}); check kafka.security and the Write ACL on {self._topic}"
        )

    def emit_once(self, now_ms: int | None = None) -> None:
        """Produce one tick stamped `now_ms` (default: the wall clock). A tick the client refuses at once (a topic
        it already knows it may not write, a full queue) counts as a failure, as a refused delivery does: the clock
        keeps ticking, and `problem()` says it."""
        stamp = int(time.time() * 1000) if now_ms is None else now_ms
        try:
            self._producer.produce(self._topic, clock_tick_record(stamp, self.emitter), on_delivery=self._delivered)
        except (KafkaException, BufferError) as error:
            self.failures += 1
            self.last_error = client_error_text(error.args[0] if error.args else error)
        self._producer.poll(0)

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.emit_once()
            next_at += self._interval_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def start(self) -> ClockTickEmitter:
        self._thread.start()
        return self

    def stop(self, flush_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._producer.flush(flush_s)

    def __enter__(self) -> ClockTickEmitter:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
