"""Evidence (the source records behind a fact), deterministic ids and the wording of human summaries.

Ids hash only what defines an incident (cluster, group, kind, member, generation...), never processing time, so
a replay of the same records yields the same ids as the live stream did.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from rebalance_radar.transforms.detectors.group_events import GroupEvent

MAX_EVIDENCE = 20
"""Evidence kept per row: the first records (which opened the incident) and the latest ones."""


def stable_id(*parts: object) -> str:
    """A short deterministic id of the parts (None and '' differ; order matters)."""
    text = "\x1f".join("\x00" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def source_ref(event: GroupEvent) -> dict[str, Any]:
    """One evidence entry naming the record an event came from."""
    return {
        "table": event.src_table,
        "topic": event.src_topic,
        "partition": event.src_partition,
        "offset": event.src_offset,
        "event_time": event.event_time_ms,
    }


def merge_refs(refs: list[dict[str, Any]], more: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Refs plus more, without duplicates, bounded: the first half kept, then the newest."""
    seen = {(r["table"], r["topic"], r["partition"], r["offset"]) for r in refs}
    out = list(refs)
    for ref in more:
        key = (ref["table"], ref["topic"], ref["partition"], ref["offset"])
        if key not in seen:
            seen.add(key)
            out.append(ref)
    if len(out) > MAX_EVIDENCE:
        half = MAX_EVIDENCE // 2
        out = out[:half] + out[-(MAX_EVIDENCE - half) :]
    return out


def evidence_json(refs: Iterable[dict[str, Any]]) -> str:
    """The `evidence` column: JSON array of {table, topic, partition, offset, event_time (ISO-8601 UTC)}."""
    return json.dumps(
        [
            {
                "table": r["table"],
                "topic": r["topic"],
                "partition": r["partition"],
                "offset": r["offset"],
                "event_time": iso(r["event_time"]),
            }
            for r in refs
        ],
        separators=(",", ":"),
    )


def iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


def as_datetime(ms: int | None) -> datetime | None:
    """Epoch ms -> aware UTC datetime (the gold tables' TIMESTAMP values)."""
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


def seconds(ms: int | float | None) -> str:
    """A duration for a sentence: '31 s', '2.5 s', '12 min'."""
    if ms is None:
        return "an unknown time"
    if ms >= 120_000:
        return f"{ms / 60_000:.0f} min"
    if ms >= 10_000 or ms % 1000 == 0:
        return f"{ms / 1000:.0f} s"
    return f"{ms / 1000:.1f} s"


def clock_time(ms: int) -> str:
    """An event time for a sentence: 24-hour UTC, to the second ('19:03:07 UTC')."""
    return f"{datetime.fromtimestamp(ms / 1000, tz=UTC):%H:%M:%S} UTC"
