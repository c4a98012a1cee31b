"""`radar decode`: dump files in, one JSON object per record out (Kafka's formatter conventions).

The decoding itself is the codec's (`transforms.wire.json_form.coordinator_record_json`); this module reads dumps and
writes JSON Lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from rebalance_radar.pipelines.formats.dump import DumpFormatError, DumpRecord, read_dump
from rebalance_radar.transforms.wire.json_form import coordinator_record_json


@dataclass
class DecodeCounts:
    """What a decode run saw, so the summary on stderr reconciles: records = decoded + failed + telemetry; bad lines
    (not dump records at all) are counted apart, as replay quarantines them at stage read_dump."""

    records: int = 0
    bad_lines: int = 0
    decoded: int = 0
    failed: int = 0
    telemetry: int = 0
    failures_by_kind: dict[str, int] = field(default_factory=dict)


def dump_record_json(record: DumpRecord, *, embedded: bool = False) -> dict[str, Any]:
    """The output object for one dump record; never raises for bad bytes (they become `error`)."""
    src = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
    }
    if not record.is_coordinator_record:
        return {"src": src, "key": None, "value": None, "error": None, "telemetry": True}
    return {"src": src, **coordinator_record_json(record.key, record.value, embedded=embedded)}


def run_decode(
    paths: Iterable[str],
    *,
    embedded: bool = False,
    out: IO[str] | None = None,
    errors: IO[str] | None = None,
    shown_bad_lines: int = 20,
) -> DecodeCounts:
    """Decode every record of every dump to `out`; a bad line is reported on `errors` as "FILE:LINE: reason" (the
    first `shown_bad_lines` of them; all are counted) and decoding goes on. Raises `DumpFormatError` for a missing
    input."""
    counts = DecodeCounts()
    out = out or sys.stdout  # looked up at call time, so a redirected sys.stdout is used

    def report(problem: DumpFormatError) -> None:
        counts.bad_lines += 1
        if counts.bad_lines <= shown_bad_lines:
            print(f"radar decode: {problem}", file=errors or sys.stderr)

    for record in read_dump(paths, on_bad_line=report):
        line = dump_record_json(record, embedded=embedded)
        counts.records += 1
        if line.get("telemetry"):
            counts.telemetry += 1
        elif line["error"] is None:
            counts.decoded += 1
        else:
            counts.failed += 1
            kind = line["error"]["kind"]
            counts.failures_by_kind[kind] = counts.failures_by_kind.get(kind, 0) + 1
        out.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False))
        out.write("\n")
    return counts
