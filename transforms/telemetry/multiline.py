"""Multi-line log events kept whole: a log line that continues the one before it is joined to it, as Filebeat's and
Fluent Bit's multiline readers do, so a client's configuration listing (`ConsumerConfig values:` then one
`\\tkey = value` line per setting), a Java stack trace, or a Streams assignment with its task lists on the next
lines reaches the parsers as one record instead of lines without context.

A continuation line starts with whitespace (a listing's tab, a stack frame's `\\tat ...`, the `(logger)` a layout
prints after a message that ends in a newline), or is a stack trace's `Caused by: ...`, `Suppressed: ...`,
`... N more` or exception class line; never a line with a time of its own (a `%5p` layout starts " INFO 2025-...").
Events are bounded (`MAX_EVENT_LINES`, `MAX_EVENT_BYTES`: past them the event is sent and the rest goes alone) and a
live tail sends a pending event once no line has continued it for `flush_timeout_s`.
"""

from __future__ import annotations

import re

from rebalance_radar.transforms.telemetry.log_line import timestamp_ms_in_text

MAX_EVENT_LINES = 2000
"""A broker's `KafkaConfig values:` listing is the longest event known (about 400 settings in 3.9/4.x)."""
MAX_EVENT_BYTES = 512 << 10
"""Half the largest telemetry record radar reads (`record_parser.MAX_RECORD_BYTES`)."""
DEFAULT_FLUSH_TIMEOUT_S = 1.0
"""How long a live tail holds an event for a continuation (a logger writes a multi-line event in one write)."""

_CONTINUATION = re.compile(
    r"^(?:[ \t]+\S|Caused by: |Suppressed: |\.\.\. \d+ more|[a-z][\w$]*(?:\.[\w$]+)+(?:Exception|Error)(?::|$))"
)
_SERVICE_PREFIX = re.compile(r"^[\w.-]+\s*\| ")  # `docker compose logs`: "kafka-1  | <the container's line>"


def is_continuation(line: str) -> bool:
    """A line that belongs to the event of the line before it (also behind a `docker compose logs` prefix)."""
    if _CONTINUATION.match(_SERVICE_PREFIX.sub("", line, count=1)) is None:
        return False
    return timestamp_ms_in_text(line, 0) is None


class MultilineJoiner:
    """Joins the lines of a live log into events: `feed` returns the events a new line completed, `due` the pending
    one once `flush_timeout_s` passed without a continuation, `drain` whatever is pending (at stop)."""

    def __init__(
        self,
        *,
        max_lines: int = MAX_EVENT_LINES,
        max_bytes: int = MAX_EVENT_BYTES,
        flush_timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S,
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.flush_timeout_s = flush_timeout_s
        self._lines: list[bytes] = []
        self._bytes = 0
        self._last_s = 0.0
        self.cut = 0
        """Events sent before their end because they reached a bound."""

    def feed(self, line: bytes, now_s: float) -> list[bytes]:
        """The line joins the pending event (a continuation within the bounds) or completes it and starts one."""
        out: list[bytes] = []
        if self._lines and is_continuation(line.decode("utf-8", "replace")):
            if len(self._lines) < self.max_lines and self._bytes + 1 + len(line) <= self.max_bytes:
                self._lines.append(line)
                self._bytes += 1 + len(line)
                self._last_s = now_s
                return out
            self.cut += 1
        out.extend(self.drain())
        self._lines, self._bytes, self._last_s = [line], len(line), now_s
        return out

    @property
    def pending_lines(self) -> int:
        """Lines of the pending event (1 right after a line started one)."""
        return len(self._lines)

    def due(self, now_s: float) -> list[bytes]:
        """The pending event when no line continued it for `flush_timeout_s`."""
        if self._lines and now_s - self._last_s >= self.flush_timeout_s:
            return self.drain()
        return []

    def drain(self) -> list[bytes]:
        """The pending event, if any, as one record."""
        if not self._lines:
            return []
        event = b"\n".join(self._lines)
        self._lines, self._bytes = [], 0
        return [event]
