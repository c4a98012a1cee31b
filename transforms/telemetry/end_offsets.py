"""`radar.end_offsets/1`: the log-end offsets of the partitions one monitored group consumes (silver
`partition_end_offsets`), published on the telemetry topic every `lag.poll_interval` by `radar run` and the poller.

    {"schema": "radar.end_offsets/1", "ts": 1714564800123, "emitter": "radar-run@host-1", "group_id": "orders",
     "partitions": [{"topic": "orders", "partition": 0, "end_offset": 1234},
                    {"topic": "audit", "partition": 3, "error": "TOPIC_AUTHORIZATION_FAILED"}]}

Why a telemetry record and not a table written by the poller: the same topic carries it live, `radar capture` keeps
it with the rest of the telemetry, and a replay computes the same lag from the dump (as clock ticks replay time).
One record per group, so the group's detection tracker receives its partitions' end offsets under its own key.
A record that names this schema but is not valid is left to the general parser (counted unrecognised).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

END_OFFSETS_SCHEMA = "radar.end_offsets/1"
_MARKER = END_OFFSETS_SCHEMA.encode()
_KEYS = frozenset({"schema", "ts", "emitter", "group_id", "partitions"})
_ERROR_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


@dataclass(frozen=True, slots=True)
class PartitionEndOffset:
    """One partition's log-end offset, or the Kafka error name that says why there is none."""

    topic: str
    partition: int
    end_offset: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class EndOffsetsPoll:
    """One poll for one group: when (epoch ms), who polled, and each committed partition's end offset."""

    polled_at: int
    emitter: str
    group_id: str
    partitions: tuple[PartitionEndOffset, ...]


def end_offsets_record(poll: EndOffsetsPoll) -> bytes:
    """The record value of one poll (what the emitter produces)."""
    partitions = []
    for p in poll.partitions:
        item: dict[str, object] = {"topic": p.topic, "partition": p.partition}
        if p.end_offset is not None:
            item["end_offset"] = p.end_offset
        if p.error is not None:
            item["error"] = p.error
        partitions.append(item)
    return json.dumps(
        {
            "schema": END_OFFSETS_SCHEMA,
            "ts": int(poll.polled_at),
            "emitter": poll.emitter,
            "group_id": poll.group_id,
            "partitions": partitions,
        },
        separators=(",", ":"),
    ).encode()


def _partition(item: object) -> PartitionEndOffset | None:
    if not isinstance(item, dict) or not {"topic", "partition"} <= set(item) <= {
        "topic",
        "partition",
        "end_offset",
        "error",
    }:
        return None
    topic, partition = item["topic"], item["partition"]
    end_offset, error = item.get("end_offset"), item.get("error")
    if not isinstance(topic, str) or not topic or type(partition) is not int or partition < 0:
        return None
    if (end_offset is None) == (error is None):  # exactly one of them: a number, or why there is none
        return None
    if end_offset is not None and (type(end_offset) is not int or end_offset < 0):
        return None
    if error is not None and (not isinstance(error, str) or not _ERROR_NAME.match(error)):
        return None
    return PartitionEndOffset(topic, partition, end_offset, error)


def parse_end_offsets(value: bytes | None) -> EndOffsetsPoll | None:
    """A `radar.end_offsets/1` record -> its poll; None for anything else (one substring test first)."""
    if not value or _MARKER not in value:
        return None
    try:
        obj = json.loads(value)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or set(obj) != _KEYS or obj["schema"] != END_OFFSETS_SCHEMA:
        return None
    ts, emitter, group_id, items = obj["ts"], obj["emitter"], obj["group_id"], obj["partitions"]
    if type(ts) is not int or ts < 0 or not isinstance(emitter, str) or not emitter:
        return None
    if not isinstance(group_id, str) or not group_id or not isinstance(items, list) or not items:
        return None
    partitions = tuple(_partition(item) for item in items)
    if any(p is None for p in partitions):
        return None
    return EndOffsetsPoll(ts, emitter, group_id, partitions)  # type: ignore[arg-type]
