"""The clock-tick emitter of `radar run`: a `radar.clock/1` record on the first telemetry topic every second.

Ticks make event time advance while every group is silent (the detectors' "nothing happened" rules fire live),
and since they are records on the telemetry topic, a dump of it replays the same passage of time.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

from confluent_kafka import Producer

from emitters.cluster_probe import client_logger
from transforms.telemetry.clock import clock_tick_record


def default_emitter_name() -> str:
    return f"radar-run@{socket.gethostname()}"


class ClockTickEmitter:
    """Produces one tick per `interval_ms` from a daemon thread until `stop()`; `ticks` counts delivered ones."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        *,
        interval_ms: int = 1000,
        emitter: str | None = None,
        producer_config: dict[str, str] | None = None,
    ) -> None:
        self._topic = topic
        self._interval_s = interval_ms / 1000
        self.emitter = emitter or default_emitter_name()
        # librdkafka's lines go to radar's client logger (silent unless --verbose): when `radar run` stops, the
        # embedded broker goes before this producer is destroyed, and its reconnect attempts are not news.
        settings = {"bootstrap.servers": bootstrap_servers, "linger.ms": 0, "acks": "1", "logger": client_logger()}
        self._producer = Producer({**settings, **(producer_config or {})})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="radar-clock", daemon=True)
        self.ticks = 0
        self.failures = 0

    def _delivered(self, error: object, _message: object) -> None:
        if error is None:
            self.ticks += 1
        else:
            self.failures += 1

    def emit_once(self, now_ms: int | None = None) -> None:
        """Produce one tick stamped `now_ms` (default: the wall clock)."""
        stamp = int(time.time() * 1000) if now_ms is None else now_ms
        self._producer.produce(self._topic, clock_tick_record(stamp, self.emitter), on_delivery=self._delivered)
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
