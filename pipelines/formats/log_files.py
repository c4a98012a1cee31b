"""Log files replayed as telemetry: `radar replay --input server.log` reads a broker's or a client's log file as if
its lines had been shipped to a telemetry topic, so an incident's logs can be replayed beside a dump of
`__consumer_offsets` without a cluster to ship them through.

A file is a log file when none of its first lines is a dump record and at least one is telemetry (a line the
telemetry parsers recognise, or one that starts with a timestamp); anything else stays a dump, whose bad lines are
quarantined as before. Each log record becomes one row on `REPLAYED_LOG_TOPIC`, partition = a CRC-32 of the file's
resolved path (`log_partition`: two files never share a record key, and a file replayed again, alone or with
others, is written once), offset = its first line's number - 1, key = the file's name as given, and its
time = the time its first line starts with (a time-only layout takes the date nearest the file's modification time;
read in UTC: the telemetry parsers read the line's own time again, in `telemetry.timezone`). A Java stack trace
(indented `at ...` lines, `Caused by: ...`, an exception's class line, `... N more`; also behind `docker compose
logs`' `service | ` prefix) is one record with the line it
follows, as a multi-line log shipper sends it: the exception names the error; so is a configuration listing
(`transforms.telemetry.multiline`). (A gzip-compressed input arrives here
decompressed: `pipelines.stages.sources` reads every replay input by its magic bytes.)
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import pyarrow as pa

from rebalance_radar.pipelines.formats.dump import DumpFormatError, decode_dump_line
from rebalance_radar.pipelines.formats.dump_columns import PARSED_DUMP
from rebalance_radar.transforms.telemetry.log_line import timestamp_ms_in_text
from rebalance_radar.transforms.telemetry.multiline import MultilineJoiner
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

REPLAYED_LOG_TOPIC = "radar.replayed-log"
"""The topic a replayed log file's records carry (any topic but `__consumer_offsets` is telemetry)."""
SNIFFED_LINES = 50
"""How many non-blank lines decide whether a file is a log file..."""
SNIFFED_BYTES = 1 << 20
"""... at most from its first MiB."""


def log_partition(resolved_path: str) -> int:
    """The partition a log file's records carry: stable for one file, whatever else a replay reads with it."""
    return zlib.crc32(resolved_path.encode("utf-8", "surrogateescape")) & 0x7FFFFFFF


def _is_dump_record(line: bytes) -> bool:
    try:
        decode_dump_line(line, "sniff")
    except DumpFormatError:
        return False
    return True


def is_log_file(content: bytes, modified_ms: int) -> bool:
    """True when `content` reads as a log file rather than a dump (see the module docstring)."""
    sniffed = [line for line in content[:SNIFFED_BYTES].splitlines() if line.strip()][:SNIFFED_LINES]
    if not sniffed or any(_is_dump_record(line) for line in sniffed):
        return False
    return any(
        timestamp_ms_in_text(line.decode("utf-8", "replace"), modified_ms) is not None
        or parse_telemetry_record(line, modified_ms).recognised
        for line in sniffed
    )


def log_records(content: bytes, modified_ms: int) -> Iterator[tuple[int, int, bytes]]:
    """(first line number, time in epoch ms, record bytes) per record of a log file, continuation lines joined
    (`transforms.telemetry.multiline`: a stack trace, a configuration listing), within the joiner's bounds."""
    joiner = MultilineJoiner(flush_timeout_s=float("inf"))
    first = 0
    time_ms = started_ms = modified_ms
    for number, raw in enumerate(content.splitlines(), 1):
        line = raw.rstrip(b"\r")
        if not line.strip():
            continue
        for event in joiner.feed(line, 0.0):
            yield first, time_ms, event
        if joiner.pending_lines == 1:  # this line starts a record
            found = timestamp_ms_in_text(line.decode("utf-8", "replace"), started_ms)
            started_ms = found if found is not None else started_ms
            first, time_ms = number, started_ms
    for event in joiner.drain():
        yield first, time_ms, event


def log_file_rows(
    content: bytes, name: str, partition: int, modified_ms: int, lines_per_batch: int
) -> Iterator[pa.RecordBatch]:
    """A log file's records as `PARSED_DUMP` rows (`name` is the file as the user gave it)."""
    batch: list[tuple[int, int, bytes]] = []
    key = name.encode("utf-8", "surrogateescape")  # the record key names the file (`telemetry_raw.key`)

    def rows() -> pa.RecordBatch:
        count = len(batch)
        return pa.RecordBatch.from_pydict(
            {
                "key": [key] * count,
                "value": [value for _, _, value in batch],
                "topic": [REPLAYED_LOG_TOPIC] * count,
                "partition": [partition] * count,
                "offset": [number - 1 for number, _, _ in batch],
                "timestamp_ms": [time_ms for _, time_ms, _ in batch],
                "source_error": [None] * count,
                "source_file": [name] * count,
                "source_line": [number for number, _, _ in batch],
            },
            schema=PARSED_DUMP,
        )

    for record in log_records(content, modified_ms):
        batch.append(record)
        if len(batch) >= lines_per_batch:
            yield rows()
            batch = []
    if batch:
        yield rows()
