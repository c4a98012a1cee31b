"""librdkafka log lines (C, confluent-kafka-python/-go/-dotnet, node-rdkafka...) -> heartbeat events.

librdkafka's own logger prints `%<level>|<epoch s>.<ms>|<FAC>|<client name>| [thrd:<thread>]: <message>`
(`rd_kafka_log_print`); confluent-kafka-python hands the same to a Python logger as `<FAC> [<client name>]
[thrd:<thread>]: <message>`. Only what it logs at its default level (`log_level` 6) is read here; the `debug=cgrp`
lines (HEARTBEAT, JOINGROUP, SYNCGROUP... at `%7`) are debug output and not relied on. Wording from
`src/rdkafka_cgrp.c`, unchanged from v1.6 to v2.15:

- MAXPOLL (WARNING): "Application maximum poll interval (Nms) exceeded by Mms (adjust max.poll.interval.ms for
  long-running message processing): leaving group"
- SESSTMOUT (WARNING): "Consumer group session timed out (in join-state S) after N ms without a successful response
  from the group coordinator (broker B, last error was E): revoking assignment and rejoining group"
- COMMITFAIL (WARNING): "Offset commit (R) failed for K/N partition(s) in join-state S: E: t[p]@o(E), ..." (2.x
  newer prints the topic id too: `t(<id>)[p]@o`)
- HEARTBEAT (ERROR, KIP-848 groups, v2.15+; earlier the same text only reaches the application as an error):
  "ConsumerGroupHeartbeat failed: E: <message>"
- FATAL (EMERG, only when the application listens for error events): "Fatal error: E: Fatal consumer error: E"

The default layout's own time (epoch seconds, ms) is the event time, even over a JSON shipper's timestamp: it is
when librdkafka logged. None of these names the group: the `client.id` part of the client name
(`client.id#consumer-N`) is kept as the client id, and the group comes only from a JSON shipper's `group_id` field
(without one the detectors cannot use the event). Errors are `rd_kafka_err2str` texts ("Broker: Unknown member"),
mapped back to Kafka error names by `kafka_errors`.
"""

from __future__ import annotations

import dataclasses
import re

from transforms.schemas import HeartbeatEventKind, TelemetrySource
from transforms.telemetry.events import HeartbeatEvent
from transforms.telemetry.kafka_errors import error_name_in_text
from transforms.telemetry.log_line import LogLine, MessageRule, RuleTable, apply_rules

SOURCE = TelemetrySource.CLIENT_LOG
Kind = HeartbeatEventKind

LIBRDKAFKA_MARKERS: tuple[str, ...] = ("[thrd:", "rdkafka#")

# `%4|1700000000.123|MAXPOLL|rdkafka#consumer-1| ...` (default logger) or `MAXPOLL [rdkafka#consumer-1] [thrd:...`
_STDERR_ENVELOPE = re.compile(r"%(\d)\|(\d{9,11})\.(\d{3})\|([A-Z0-9_]+)\|([^|]*)\|")
_PYTHON_ENVELOPE = re.compile(r"\b([A-Z0-9_]{3,})\s+\[([^\]\s]+)\]\s+\[thrd:")
# `orders[3]@42(Broker: Unknown member)`, or with a topic id `orders(AbCd...)[3]@42` / `orders((null))[3]@42`
_PARTITION = re.compile(r"([^\s,()\[\]]+)(?:\((?:\(null\)|[\w-]*)\))?\[(\d+)\](?:@(-?\d+))?")


def _client_id(name: str) -> str | None:
    """`orders-worker#consumer-1` -> `orders-worker`: the `client.id` the coordinator knows the member by."""
    return name.strip().split("#", 1)[0] or None


def _envelope(line: LogLine) -> LogLine:
    """The line with librdkafka's own time (epoch seconds in the default logger) and client id, when present."""
    found = _STDERR_ENVELOPE.search(line.message)
    if found is not None:
        _level, seconds, millis, _facility, name = found.groups()
        return dataclasses.replace(
            line, event_time=int(seconds) * 1000 + int(millis), client_id=line.client_id or _client_id(name)
        )
    found = _PYTHON_ENVELOPE.search(line.message)
    if found is not None:
        return dataclasses.replace(line, client_id=line.client_id or _client_id(found.group(2)))
    return line


def _details(line: LogLine, **extra: str | None) -> dict[str, str | None]:
    details: dict[str, str | None] = {"client": "librdkafka"}
    if line.logger:
        details["logger"] = line.logger
    details.update(extra)
    return details


def _max_poll_exceeded(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    return line.event(
        Kind.POLL_TIMEOUT,
        SOURCE,
        reason="max.poll.interval.ms exceeded: leaving group",
        details=_details(line, max_poll_interval_ms=m.group(1), exceeded_ms=m.group(2)),
    )


def _session_timed_out(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    last_error = m.group(4)
    return line.event(
        Kind.SESSION_TIMEOUT,
        SOURCE,
        error=error_name_in_text(last_error),
        reason="session timed out without a successful response from the group coordinator",
        details=_details(line, join_state=m.group(1), elapsed_ms=m.group(2), coordinator=m.group(3)),
    )


def _commit_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    text = m.group(5)
    partitions = [f"{topic}-{partition}" for topic, partition, _offset in _PARTITION.findall(text)]
    return line.event(
        Kind.COMMIT_FAILED,
        SOURCE,
        error=error_name_in_text(text),
        reason=text.strip() or None,
        details=_details(
            line,
            commit_mode=m.group(1),
            failed_count=m.group(2),
            partition_count=m.group(3),
            join_state=m.group(4),
            failed_partitions=",".join(partitions) or None,
        ),
    )


def _group_heartbeat_failed(m: re.Match[str], line: LogLine) -> HeartbeatEvent:
    text = m.group(2)
    return line.event(
        Kind.HEARTBEAT_FAILED,
        SOURCE,
        error=error_name_in_text(text),
        reason=text.strip() or None,
        details=_details(line, api=m.group(1), protocol="consumer" if m.group(1).startswith("Consumer") else "share"),
    )


def _fatal_fenced(m: re.Match[str], line: LogLine) -> HeartbeatEvent | None:
    error = error_name_in_text(m.group(1))
    if error != "FENCED_INSTANCE_ID":
        return None  # other fatal errors say nothing about membership
    return line.event(
        Kind.HEARTBEAT_FAILED, SOURCE, error=error, reason=m.group(1).strip(), details=_details(line, fatal="true")
    )


RULES = RuleTable.of(
    (
        MessageRule(
            "Application maximum poll interval",
            re.compile(r"Application maximum poll interval \((\d+)ms\) exceeded by (\d+)ms"),
            _max_poll_exceeded,
        ),
        MessageRule(
            "Consumer group session timed out",
            re.compile(
                r"Consumer group session timed out \(in join-state ([\w-]+)\) after (\d+) ms without a successful "
                r"response from the group coordinator \(broker (-?\d+), last error was (.*?)\)"
            ),
            _session_timed_out,
        ),
        MessageRule(
            "Offset commit (",
            re.compile(
                r"Offset commit \(([^)]*)\) failed for (\d+)/(\d+) partition\(s\) in join-state ([\w-]+): ?(.*)$"
            ),
            _commit_failed,
        ),
        MessageRule(
            "GroupHeartbeat failed: ",
            re.compile(r"\b((?:Consumer|Share)GroupHeartbeat) failed: (.*)$"),
            _group_heartbeat_failed,
        ),
        MessageRule("Fatal error: ", re.compile(r"Fatal error: (.*)$"), _fatal_fenced),
    )
)


def looks_like_librdkafka_log(text: str) -> bool:
    """Whether a line carries librdkafka's logging envelope (for counting unrecognised lines per source)."""
    return any(marker in text for marker in LIBRDKAFKA_MARKERS) or _STDERR_ENVELOPE.search(text) is not None


def parse_librdkafka_message(line: LogLine) -> HeartbeatEvent | None:
    """The heartbeat event of a librdkafka log line already split into its envelope, or None."""
    if RULES.gate.search(line.message) is None:
        return None
    return apply_rules(RULES, _envelope(line))
