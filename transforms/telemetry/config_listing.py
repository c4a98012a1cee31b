"""A configuration listing read as a fact: the settings a Kafka client or broker started with, one telemetry event.

Every Kafka config class logs its values when built (`AbstractConfig.logAll`, kafka-clients 2.x-4.x):
`getClass().getSimpleName() + " values: " + NL`, then `"\\t" + key + " = " + value + NL` per setting, sorted by
key, at INFO. Java clients print `ConsumerConfig`, `ProducerConfig`, `AdminClientConfig`, Kafka Streams
`StreamsConfig`, the broker `KafkaConfig` (3.x and 4.x, its logger `kafka.server.KafkaConfig`). Log lines are joined
into one record before this reads them (`transforms.telemetry.multiline`); a listing cut into lines by an old
capture still counts as a known configuration listing (`informational.CONFIG_LISTING`).

The event keeps only the settings the detectors use: who the client is (`client.id`, `group.id` or a Streams
`application.id`, `group.instance.id`), its group protocol, timeouts and poll bounds, its assignor; the broker's
session timeouts of each group type and its initial rebalance delay.
"""

from __future__ import annotations

import re

from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent
from rebalance_radar.transforms.telemetry.log_line import LogLine, instance_id_value

_HEADER = re.compile(r"\b(?P<config>[A-Z]\w*Config) values:\s*$")
_SETTING = re.compile(r"^\s+(?P<key>[a-z][\w.-]*) = ?(?P<value>.*?)\s*$")

CLIENT_CONFIGS = frozenset({"ConsumerConfig", "StreamsConfig", "ProducerConfig", "AdminClientConfig"})
BROKER_CONFIGS = frozenset({"KafkaConfig"})

CLIENT_SETTINGS = (
    "group.protocol",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "max.poll.interval.ms",
    "max.poll.records",
    "partition.assignment.strategy",
    "group.remote.assignor",
    "num.stream.threads",
)
"""Client settings kept in the event's details, under their own names."""
BROKER_SETTINGS = (
    "node.id",
    "broker.id",
    "group.consumer.session.timeout.ms",
    "group.consumer.heartbeat.interval.ms",
    "group.streams.session.timeout.ms",
    "group.streams.heartbeat.interval.ms",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.initial.rebalance.delay.ms",
    "group.streams.initial.rebalance.delay.ms",
    "group.coordinator.rebalance.protocols",
)
"""Broker settings kept in the event's details (the classic protocol's min/max bound what members may ask for)."""
_NULL = frozenset({"null", ""})
_CLASS_LIST = re.compile(r"(?:class )?(?:[\w$]+\.)*([\w$]+)")


def listing_header(first_line: str) -> str | None:
    """The config class a record's first line starts a listing of (`ConsumerConfig`), or None."""
    found = _HEADER.search(first_line)
    return found.group("config") if found else None


def _settings(lines: list[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for line in lines:
        found = _SETTING.match(line)
        if found is not None:
            settings[found.group("key")] = found.group("value")
    return settings


def _assignors(printed: str) -> str:
    """`[class org.apache...RangeAssignor, class ...CooperativeStickyAssignor]` -> `RangeAssignor,
    CooperativeStickyAssignor`: the simple class names, as the docs name the assignors."""
    names = [_CLASS_LIST.fullmatch(part.strip()) for part in printed.strip("[]").split(",") if part.strip()]
    return ", ".join(found.group(1) for found in names if found is not None)


def _value(settings: dict[str, str], key: str) -> str | None:
    value = settings.get(key)
    if value is None or value in _NULL:
        return None
    return _assignors(value) if key == "partition.assignment.strategy" else value


def parse_config_listing(first: LogLine, rest: list[str]) -> HeartbeatEvent | None:
    """One `client_config` / `broker_config` event from a listing's first line (its envelope, read as any log line)
    and the lines after it; None when the first line starts no listing of a client or the broker."""
    config = listing_header(first.message)
    if config is None or not (config in CLIENT_CONFIGS or config in BROKER_CONFIGS):
        return None
    settings = _settings(rest)
    if not settings:
        return None
    if config in BROKER_CONFIGS:
        details = {key: _value(settings, key) for key in BROKER_SETTINGS}
        return first.event(
            HeartbeatEventKind.BROKER_CONFIG,
            TelemetrySource.BROKER_LOG,
            details={"config": config, "settings": str(len(settings)), **details},
        )
    group_id = _value(settings, "application.id" if config == "StreamsConfig" else "group.id")
    details = {key: _value(settings, key) for key in CLIENT_SETTINGS}
    return first.event(
        HeartbeatEventKind.CLIENT_CONFIG,
        TelemetrySource.CLIENT_LOG,
        group_id=group_id,
        client_id=_value(settings, "client.id"),
        group_instance_id=instance_id_value(_value(settings, "group.instance.id")),
        details={"config": config, "settings": str(len(settings)), **details},
    )
