"""The envelope of one log line: its time, logger, client/group prefix, and the message rules match against.

Layouts seen in shipped logs, all handled by searching rather than anchoring (shippers add `node0.log: ` or
`kafka-1 | ` in front): log4j `[2024-05-01 12:00:00,123] INFO ... (logger)`, the seeds' time-only
`[11:10:57,345] INFO ...`, Spring Boot `2023-08-01 14:17:45.290  INFO 7 --- [thread] logger : ...`, ISO-8601
with `T`, a zone (`Z`, `+02:00`) or none. A naive time is read in the configured zone; a time without a
date takes the date (in that zone) that puts it nearest the Kafka record time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo

from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent

# A line's own time starts within its first characters (after at most a shipper's `host | ` or `file: `
# prefix); a date further in belongs to the message ("scheduled for 2024-...") and is not the line's time.
TIMESTAMP_MAX_START = 40
TIMESTAMP_SEARCH_CHARS = TIMESTAMP_MAX_START + 36

_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(?: ?(Z|[+-]\d{2}:?\d{2})\b)?"
)
_TIME_ONLY = re.compile(r"\[(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,6}))?\]")
_LOGGER_SUFFIX = re.compile(r"\s\(((?:kafka|org\.apache\.kafka)[\w.$]*)(?::\d+)?\)\s*$")
_CONSUMER_PREFIX = re.compile(r"\[Consumer (?:instanceId=([^,\]]*), )?clientId=([^,\]]*), groupId=([^\]]*)\]")
_STREAM_THREAD_PREFIX = re.compile(r"stream-thread \[([^\]]+)\]")
_STREAM_CLIENT_PREFIX = re.compile(r"stream-client \[([^\]]+)\]")
_STREAMS_CLIENT_NAME = re.compile(r"^(.+?)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_STREAMS_THREAD_NAME = re.compile(
    r"^(.+?)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-StreamThread-\d+(?:-consumer)?$"
)
GENERATION = re.compile(r"Generation\{generationId=(-?\d+), memberId='([^']*)', protocol='([^']*)'\}")


@lru_cache(maxsize=64)
def zone(tz: str) -> tzinfo:
    """A time zone by name, cached: `ZoneInfo` lookups are too slow to repeat per line."""
    return UTC if tz in {"UTC", "Z", "Etc/UTC"} else ZoneInfo(tz)


def _offset_zone(text: str) -> tzinfo:
    if text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))


def _fraction_us(fraction: str | None) -> int:
    return int((fraction or "0")[:6].ljust(6, "0"))


def timestamp_ms_in_text(text: str, record_timestamp_ms: int, tz: str = "UTC") -> int | None:
    """Epoch ms of the first timestamp near the start of a log line, or None when it has none."""
    head = text[:TIMESTAMP_SEARCH_CHARS]
    found = _DATETIME.search(head)
    if found is not None and found.start() <= TIMESTAMP_MAX_START:
        year, month, day, hour, minute, second, fraction, offset = found.groups()
        try:
            moment = datetime(
                int(year),
                int(month),
                int(day),
                int(hour),
                int(minute),
                int(second),
                _fraction_us(fraction),
                tzinfo=_offset_zone(offset) if offset else zone(tz),
            )
        except ValueError:
            return None
        return int(moment.timestamp() * 1000)
    found = _TIME_ONLY.search(head)
    if found is None or found.start() > TIMESTAMP_MAX_START:
        return None
    hour, minute, second, fraction = found.groups()
    try:
        local = zone(tz)
        record_day = datetime.fromtimestamp(record_timestamp_ms / 1000, tz=local).date()
        candidates = (
            datetime.combine(record_day + timedelta(days=shift), datetime.min.time(), tzinfo=local).replace(
                hour=int(hour), minute=int(minute), second=int(second), microsecond=_fraction_us(fraction)
            )
            for shift in (-1, 0, 1)
        )
        return min((int(c.timestamp() * 1000) for c in candidates), key=lambda ms: abs(ms - record_timestamp_ms))
    except (ValueError, OverflowError, OSError):
        return None


def timestamp_ms_from_value(value: object, tz: str = "UTC") -> int | None:
    """Epoch ms from a JSON timestamp: ISO-8601 text, or a number of seconds or milliseconds since the epoch."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if value != value or value in {float("inf"), float("-inf")}:
            return None
        return int(value) if abs(value) >= 1e11 else int(value * 1000)
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.replace(".", "", 1).isdigit():
            return timestamp_ms_from_value(float(stripped), tz)
        return timestamp_ms_in_text(stripped, 0, tz) if _DATETIME.match(stripped) else None
    return None


def instance_id_value(printed: str | None) -> str | None:
    """`Optional[x]`, `Some(x)` or `x` -> `x`; `Optional.empty`, `None`, `null` -> None."""
    if printed is None:
        return None
    text = printed.strip().rstrip(",.")
    if text in {"", "Optional.empty", "None", "null", "Optional[null]"}:
        return None
    for opening, closing in (("Optional[", "]"), ("Some(", ")")):
        if text.startswith(opening) and text.endswith(closing):
            return text[len(opening) : -len(closing)] or None
    return text


def streams_application_id(thread_name: str) -> str | None:
    """The application id (= group id) in a Streams thread name `<app>-<process uuid>-StreamThread-<n>`."""
    found = _STREAMS_THREAD_NAME.match(thread_name)
    return found.group(1) if found else None


def streams_client_application_id(client_id: str) -> str | None:
    """The application id in a KafkaStreams client id left at its default, `<app>-<process uuid>` (a `client.id`
    the user set names no application)."""
    found = _STREAMS_CLIENT_NAME.match(client_id)
    return found.group(1) if found else None


@dataclass(frozen=True, slots=True)
class LogLine:
    """A log line split into what every event from it shares and the message the rules match against."""

    message: str
    event_time: int
    logger: str | None = None
    client_id: str | None = None
    group_id: str | None = None
    group_instance_id: str | None = None
    host: str | None = None

    def event(
        self,
        kind: HeartbeatEventKind,
        source: TelemetrySource,
        *,
        group_id: str | None = None,
        member_id: str | None = None,
        group_instance_id: str | None = None,
        generation: int | None = None,
        member_epoch: int | None = None,
        error: str | None = None,
        reason: str | None = None,
        client_id: str | None = None,
        host: str | None = None,
        details: dict[str, str] | None = None,
    ) -> HeartbeatEvent:
        """An event from this line; fields not given fall back to what the line's prefix said."""
        return HeartbeatEvent(
            event_time=self.event_time,
            group_id=group_id or self.group_id,
            member_id=member_id or None,
            group_instance_id=group_instance_id or self.group_instance_id,
            generation=generation,
            member_epoch=member_epoch,
            event=kind,
            error=error,
            reason=reason,
            client_id=client_id or self.client_id,
            host=host or self.host,
            source=source,
            details={k: v for k, v in (details or {}).items() if v is not None},
        )


def split_log_line(
    text: str,
    record_timestamp_ms: int,
    tz: str = "UTC",
    *,
    event_time: int | None = None,
    logger: str | None = None,
    host: str | None = None,
) -> LogLine:
    """Split a log line into its envelope and message; explicit values (from a JSON wrapper) win."""
    message = text.strip()
    logger_found = _LOGGER_SUFFIX.search(message)
    if logger_found is not None:
        logger = logger or logger_found.group(1)
        message = message[: logger_found.start()]
    if event_time is None:
        event_time = timestamp_ms_in_text(message, record_timestamp_ms, tz)
    client_id = group_id = instance_id = None
    if "[Consumer " in message:
        prefix = _CONSUMER_PREFIX.search(message)
        if prefix is not None:
            instance_id, client_id, group_id = prefix.groups()
            if group_id == "null":  # a consumer with no group (Streams' restore and global consumers, assign())
                group_id = None
    elif "stream-thread [" in message:
        prefix = _STREAM_THREAD_PREFIX.search(message)
        if prefix is not None:
            client_id = prefix.group(1)
            group_id = streams_application_id(client_id)
            if client_id in {"...", "…"}:
                client_id = None
    elif "stream-client [" in message:
        prefix = _STREAM_CLIENT_PREFIX.search(message)
        if prefix is not None:
            client_id = prefix.group(1)
            group_id = streams_client_application_id(client_id)
    return LogLine(
        message=message,
        event_time=record_timestamp_ms if event_time is None else event_time,
        logger=logger,
        client_id=client_id or None,
        group_id=group_id or None,
        group_instance_id=instance_id_value(instance_id),
        host=host,
    )


EventBuilder = Callable[[re.Match[str], LogLine], HeartbeatEvent | None]


@dataclass(frozen=True, slots=True)
class MessageRule:
    """One recognised message: a cheap keyword gate, the regex that extracts its fields, and the event builder."""

    keyword: str
    pattern: re.Pattern[str]
    build: EventBuilder


@dataclass(frozen=True, slots=True)
class RuleTable:
    """Rules in priority order, behind one regex of all their keywords: most log lines match none, and one
    C-level search rejects them faster than a Python loop of `in` checks."""

    rules: tuple[MessageRule, ...]
    gate: re.Pattern[str]

    @staticmethod
    def of(rules: tuple[MessageRule, ...]) -> RuleTable:
        keywords = sorted({rule.keyword for rule in rules}, key=len, reverse=True)
        return RuleTable(rules, re.compile("|".join(re.escape(k) for k in keywords)))


def apply_rules(table: RuleTable, line: LogLine) -> HeartbeatEvent | None:
    """The event of the first rule whose keyword is in the message and whose regex matches it."""
    message = line.message
    if table.gate.search(message) is None:
        return None
    for rule in table.rules:
        if rule.keyword in message:
            found = rule.pattern.search(message)
            if found is not None:
                built = rule.build(found, line)
                if built is not None:
                    return built
    return None
