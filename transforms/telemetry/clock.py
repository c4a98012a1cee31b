"""`radar.clock/1`: the clock tick `radar run` writes to the telemetry topic every second (silver `clock_ticks`).

    {"schema": "radar.clock/1", "ts": 1714564800123, "emitter": "radar-run@host-1"}

`ts` is the emitter's wall clock in epoch milliseconds. Ticks are data: they move the detectors' event-time
watermark while every group is silent, and a dump of the telemetry topic replays the same passage of time.
A record that names this schema but is not a valid tick is left to the general parser (counted unrecognised).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

CLOCK_SCHEMA = "radar.clock/1"
_MARKER = CLOCK_SCHEMA.encode()
_MAX_TICK_BYTES = 512
_KEYS = frozenset({"schema", "ts", "emitter"})


@dataclass(frozen=True, slots=True)
class ClockTick:
    """One tick: when (epoch ms) and who wrote it."""

    tick_time: int
    emitter: str


def clock_tick_record(tick_time_ms: int, emitter: str) -> bytes:
    """The record value of one tick (what the emitter produces)."""
    return json.dumps({"schema": CLOCK_SCHEMA, "ts": int(tick_time_ms), "emitter": emitter}).encode()


def parse_clock_tick(value: bytes | None) -> ClockTick | None:
    """A `radar.clock/1` record -> its tick; None for anything else (cheap: one bounded substring test first)."""
    if not value or len(value) > _MAX_TICK_BYTES or _MARKER not in value:
        return None
    try:
        obj = json.loads(value)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or set(obj) != _KEYS or obj["schema"] != CLOCK_SCHEMA:
        return None
    ts, emitter = obj["ts"], obj["emitter"]
    if type(ts) is not int or ts < 0 or not isinstance(emitter, str) or not emitter:
        return None
    return ClockTick(ts, emitter)
