"""One telemetry Kafka record -> heartbeat events, auto-detecting its format per record.

Detection is a registry: `parse_telemetry_record` asks each `RecordDetector` in order and takes the first
answer. The default chain is `protocol_frames.protocol_frame_detector` (binary `radar.frame/1` records of
a tap, decoded with `transforms.wire`), then one detector for UTF-8 text, which splits the record into lines
and reads each as JSON (`radar.event/*`, librdkafka stats, or a JSON-wrapped log line with a `message`) or as a plain
broker/client log line (Java consumer, Kafka Streams or librdkafka). Other binary formats plug in as detectors placed
before the text one:

    parse_telemetry_record(value, ts, detectors=(my_detector, *DEFAULT_DETECTORS))

A detector returns None for bytes that are not its format, so the next one is asked. Nothing raises on bad
input: empty, oversized, non-UTF-8 or unknown records are unrecognised outcomes, counted by the caller.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from rebalance_radar.transforms.schemas import TelemetrySource
from rebalance_radar.transforms.telemetry.broker_log import looks_like_broker_log, parse_broker_message
from rebalance_radar.transforms.telemetry.client_log import looks_like_client_log, parse_client_message
from rebalance_radar.transforms.telemetry.config_listing import listing_header, parse_config_listing
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent, ParseOutcome, RecordContext, RecordDetector
from rebalance_radar.transforms.telemetry.informational import CONFIG_LISTING, KNOWN_REASONS, informational_reason
from rebalance_radar.transforms.telemetry.json_events import is_radar_event, parse_radar_event
from rebalance_radar.transforms.telemetry.librdkafka_log import looks_like_librdkafka_log, parse_librdkafka_message
from rebalance_radar.transforms.telemetry.librdkafka_stats import is_librdkafka_stats, parse_librdkafka_stats
from rebalance_radar.transforms.telemetry.log_line import LogLine, split_log_line, timestamp_ms_from_value, zone
from rebalance_radar.transforms.telemetry.protocol_frames import protocol_frame_detector

# Larger records are refused unread: no telemetry format needs more, and regexes must stay bounded.
MAX_RECORD_BYTES = 1 << 20
# Plain-text lines are matched on their head only; every recognised message says what it is early on.
MAX_TEXT_LINE_CHARS = 16 << 10

_MESSAGE_KEYS = ("message", "msg", "log", "@message")
_TIME_KEYS = ("@timestamp", "timestamp", "time", "ts", "date")
_LOGGER_KEYS = ("logger", "logger_name", "loggerName", "log.logger")
# A shipper's own field for the consumer group, for lines that do not name it (librdkafka's never do).
_GROUP_KEYS = ("group_id", "groupId", "group.id", "consumer_group")


def _text_outcome(line: LogLine, hint: str) -> ParseOutcome:
    event = parse_broker_message(line)
    if event is not None:
        return ParseOutcome((event,), TelemetrySource.BROKER_LOG)
    event = parse_client_message(line) or parse_librdkafka_message(line)
    if event is not None:
        return ParseOutcome((event,), TelemetrySource.CLIENT_LOG)
    # librdkafka's envelope first: its lines name "GroupCoordinator/1" (the coordinator broker), a broker-log marker
    if looks_like_librdkafka_log(hint):
        return ParseOutcome.unrecognised(TelemetrySource.CLIENT_LOG, "no known consumer or Streams message")
    known = informational_reason(line.message)
    if looks_like_broker_log(hint):
        return ParseOutcome.unrecognised(TelemetrySource.BROKER_LOG, known or "no known group-coordinator message")
    if looks_like_client_log(hint):
        return ParseOutcome.unrecognised(TelemetrySource.CLIENT_LOG, known or "no known consumer or Streams message")
    return ParseOutcome.unrecognised(None, known or "text matches no known log message")


def parse_plain_log_line(text: str, context: RecordContext) -> ParseOutcome:
    """A plain log4j-style line, broker or client: the wording decides which."""
    head = text[:MAX_TEXT_LINE_CHARS]
    return _text_outcome(split_log_line(head, context.record_timestamp_ms, context.tz), head)


def _first_text(obj: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _wrapped_logger(obj: dict[str, Any]) -> str | None:
    logger = _first_text(obj, _LOGGER_KEYS)
    nested = obj.get("log")
    if logger is None and isinstance(nested, dict):
        logger = _first_text(nested, ("logger",))
    return logger


def _wrapped_host(obj: dict[str, Any]) -> str | None:
    host = obj.get("host") or obj.get("hostname")
    if isinstance(host, dict):
        host = host.get("name") or host.get("hostname")
    return host if isinstance(host, str) and host else None


def parse_json_wrapped_log(obj: dict[str, Any], message: str, context: RecordContext) -> ParseOutcome:
    """A log line shipped as JSON: the wrapper's time, logger and host win over what the text says."""
    event_time = None
    for key in _TIME_KEYS:
        if key in obj:
            event_time = timestamp_ms_from_value(obj[key], context.tz)
            if event_time is not None:
                break
    logger = _wrapped_logger(obj)
    head, newline, rest = message.partition("\n")
    if newline and listing_header(head) is not None:  # a multiline shipper's configuration listing (Filebeat)
        first = split_log_line(
            head[:MAX_TEXT_LINE_CHARS],
            context.record_timestamp_ms,
            context.tz,
            event_time=event_time,
            logger=logger,
            host=_wrapped_host(obj),
        )
        event = parse_config_listing(first, rest.splitlines())
        return ParseOutcome((event,), event.source) if event else ParseOutcome.unrecognised(None, CONFIG_LISTING)
    line = split_log_line(
        message[:MAX_TEXT_LINE_CHARS],
        context.record_timestamp_ms,
        context.tz,
        event_time=event_time,
        logger=logger,
        host=_wrapped_host(obj),
    )
    group_id = _first_text(obj, _GROUP_KEYS)
    if line.group_id is None and group_id is not None:
        line = dataclasses.replace(line, group_id=group_id)
    return _text_outcome(line, f"{logger or ''} {line.message}")


def parse_json_line(text: str, context: RecordContext) -> ParseOutcome:
    """One JSON object: the project's event, librdkafka stats, or a wrapped log line."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return ParseOutcome.unrecognised(None, "invalid JSON")
    if not isinstance(obj, dict):
        return ParseOutcome.unrecognised(None, "JSON that is not an object")
    if is_radar_event(obj):
        return parse_radar_event(obj)
    if is_librdkafka_stats(obj):
        return parse_librdkafka_stats(obj, context.record_timestamp_ms)
    message = _first_text(obj, _MESSAGE_KEYS)
    if message is not None:
        return parse_json_wrapped_log(obj, message, context)
    return ParseOutcome.unrecognised(None, "JSON object of unknown shape")


def _line_outcome(line: str, context: RecordContext) -> ParseOutcome:
    if line.startswith("{"):
        return parse_json_line(line, context)
    return parse_plain_log_line(line, context)


def text_record_detector(value: bytes, context: RecordContext) -> ParseOutcome | None:
    """UTF-8 text: one line or many (a shipper's batch, JSON Lines); None for bytes that are not UTF-8."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.strip().lstrip("\ufeff")
    if not text:
        return ParseOutcome.unrecognised(None, "blank text")
    if "\n" not in text:
        return _line_outcome(text, context)
    if text.startswith("{") and text.endswith("}"):
        whole = parse_json_line(text, context)
        if whole.reason != "invalid JSON":
            return whole
    listing = _config_listing_outcome(text, context)
    if listing is not None:
        return listing
    events: list[HeartbeatEvent] = []
    sources: list[TelemetrySource] = []
    first_reason: str | None = None
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line:
            continue
        outcome = _line_outcome(line, context)
        events.extend(outcome.events)
        first_reason = first_reason or outcome.reason
        if outcome.source is not None:
            sources.append(outcome.source)
    if events:
        return ParseOutcome(tuple(events), events[0].source)
    # a multi-line event (a stack trace joined to its line) is known or not by its first line
    known = first_reason if first_reason in KNOWN_REASONS else None
    return ParseOutcome.unrecognised(sources[0] if sources else None, known or "no line of the record was recognised")


def _config_listing_outcome(text: str, context: RecordContext) -> ParseOutcome | None:
    """A configuration listing joined into one record (`transforms.telemetry.multiline`): one event, or one known
    listing of another config class; None when the record's first line starts no listing."""
    head, _, rest = text[:MAX_RECORD_BYTES].partition("\n")
    if listing_header(head) is None:
        return None
    first = split_log_line(head[:MAX_TEXT_LINE_CHARS], context.record_timestamp_ms, context.tz)
    event = parse_config_listing(first, rest.splitlines())
    if event is None:
        return ParseOutcome.unrecognised(None, CONFIG_LISTING)
    return ParseOutcome((event,), event.source)


# Binary first: a `radar.frame/1` record is recognised by its 4-byte magic, so text records pay one comparison.
DEFAULT_DETECTORS: tuple[RecordDetector, ...] = (protocol_frame_detector, text_record_detector)


def parse_telemetry_record(
    value: bytes | None,
    record_timestamp_ms: int,
    tz: str = "UTC",
    detectors: tuple[RecordDetector, ...] = DEFAULT_DETECTORS,
) -> ParseOutcome:
    """A telemetry record's value -> events or an unrecognised outcome; never raises on the bytes.

    Times come from the record's content (naive ones read in `tz`, default UTC), else `record_timestamp_ms`.
    An unknown `tz` is a configuration error and raises once, on the first record.
    """
    zone(tz)
    if not value:
        return ParseOutcome.unrecognised(None, "empty record")
    if len(value) > MAX_RECORD_BYTES:
        return ParseOutcome.unrecognised(None, f"record larger than {MAX_RECORD_BYTES} bytes")
    context = RecordContext(record_timestamp_ms, tz)
    data = value if isinstance(value, bytes) else bytes(value)
    for detector in detectors:
        try:
            outcome = detector(data, context)
        except (ValueError, OverflowError, RecursionError) as failure:
            # A number too long for int() or a date out of range inside otherwise known text.
            return ParseOutcome.unrecognised(None, f"unparseable field: {type(failure).__name__}")
        if outcome is not None:
            return outcome
    return ParseOutcome.unrecognised(None, "not UTF-8 text nor a registered binary format")
