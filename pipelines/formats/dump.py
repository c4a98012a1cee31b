"""The dump format (docs/OPERATIONS.md): JSON Lines, one Kafka record per line, read by `radar decode` and `replay`
and written by `radar capture`. `CODECS` and `parse_dump_line` are its one declaration and its one reader: replay
runs the same reader inside Spark (`pipelines.stages.sources.parse_dump_files`).

`{"topic", "partition", "offset", "timestamp" (ms), "key", "value", "codec": "base64"|"hex"|"utf8"}`;
`codec` (default base64, also when null) applies to key and value; a null value is a tombstone.
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

CODECS = ("base64", "hex", "utf8")
OFFSETS_TOPIC = "__consumer_offsets"


class DumpFormatError(ValueError):
    """An input that is not a usable dump (missing file, a line that is not a dump record)."""


@dataclass(frozen=True)
class DumpRecord:
    """One Kafka record from a dump file."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None

    @property
    def is_coordinator_record(self) -> bool:
        return self.topic == OFFSETS_TOPIC


def _decode_payload(text: Any, codec: str, field: str, where: str) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise DumpFormatError(f"{where}: `{field}` must be a string or null, got {type(text).__name__}")
    try:
        if codec == "base64":
            return base64.b64decode(text, validate=True)
        if codec == "hex":
            return bytes.fromhex(text)
        return text.encode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise DumpFormatError(f"{where}: `{field}` is not valid {codec}: {exc}") from None


def parse_dump_line(line: str, where: str) -> DumpRecord:
    """One dump line; `where` (file:line) goes into the error so the user can find the bad line."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DumpFormatError(f"{where}: not a JSON object ({exc.msg}); is this a radar dump file?") from None
    if not isinstance(obj, dict):
        raise DumpFormatError(f"{where}: expected a JSON object per line, got {type(obj).__name__}")
    codec = obj.get("codec")
    if codec is None:
        codec = "base64"
    if codec not in CODECS:
        raise DumpFormatError(f"{where}: unknown codec {codec!r}; use one of {', '.join(CODECS)}")
    try:
        topic, partition, offset = obj["topic"], obj["partition"], obj["offset"]
    except KeyError as exc:
        raise DumpFormatError(
            f"{where}: missing required field {exc.args[0]!r} (need topic, partition, offset)"
        ) from None
    timestamp = obj.get("timestamp")
    if timestamp is None:
        timestamp = 0
    # JSON true/false are Python ints (bool): not a partition, offset or timestamp
    numbers = (partition, offset, timestamp)
    if not isinstance(topic, str) or not all(isinstance(v, int) and not isinstance(v, bool) for v in numbers):
        raise DumpFormatError(f"{where}: topic must be a string and partition/offset/timestamp integers")
    if not topic.isascii():
        try:
            topic.encode("utf-8")  # a lone surrogate escape ("\ud800") is valid JSON but no text a table can hold
        except UnicodeEncodeError:
            raise DumpFormatError(f"{where}: topic is not Unicode text (a lone surrogate escape)") from None
    if not (-(2**31) <= partition < 2**31 and all(-(2**63) <= v < 2**63 for v in (offset, timestamp))):
        raise DumpFormatError(f"{where}: partition must fit an int32, offset and timestamp an int64")
    return DumpRecord(
        topic,
        partition,
        offset,
        timestamp,
        _decode_payload(obj.get("key"), codec, "key", where),
        _decode_payload(obj.get("value"), codec, "value", where),
    )


def check_dump_files(paths: Iterable[str | Path]) -> None:
    """Fail before any work (Spark starts in seconds) when an input is not a readable file; `-` is stdin."""
    missing = [str(p) for p in paths if str(p) != "-" and not Path(p).is_file()]
    if missing:
        raise DumpFormatError(
            f"dump file(s) not found: {', '.join(missing)}; pass JSON Lines dumps written by `radar capture`."
        )


BadLine = Callable[[DumpFormatError], None]
"""What a reader does with a line that is not a dump record (`radar decode` reports it and goes on)."""


def decode_dump_line(raw: bytes, where: str) -> DumpRecord:
    """One dump line as read from a file (bytes): a line that is not UTF-8 text is a bad line like any other."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DumpFormatError(
            f"{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "is this a radar dump file?"
        ) from None
    return parse_dump_line(text, where)


def _lines(source: IO[bytes], name: str, on_bad_line: BadLine | None) -> Iterator[DumpRecord]:
    for number, raw in enumerate(source, 1):
        if not raw.strip():
            continue
        try:
            yield decode_dump_line(raw, f"{name}:{number}")
        except DumpFormatError as exc:
            if on_bad_line is None:
                raise
            on_bad_line(exc)


def read_dump(paths: Iterable[str | Path], on_bad_line: BadLine | None = None) -> Iterator[DumpRecord]:
    """Records of every dump file in order; `-` reads standard input. A bad line raises `DumpFormatError` naming
    FILE:LINE, or, with `on_bad_line`, is handed to it and reading goes on (as replay quarantines it and goes on)."""
    paths = list(paths)
    check_dump_files(paths)
    for path in paths:
        if str(path) == "-":
            yield from _lines(sys.stdin.buffer, "<stdin>", on_bad_line)
            continue
        with Path(path).open("rb") as fh:
            yield from _lines(fh, str(path), on_bad_line)


def dump_line(record: DumpRecord, codec: str = "base64") -> str:
    """The dump line for a record (the inverse of `parse_dump_line`)."""

    def enc(raw: bytes | None) -> str | None:
        if raw is None:
            return None
        if codec == "hex":
            return raw.hex()
        if codec == "utf8":
            return raw.decode("utf-8")
        return base64.b64encode(raw).decode("ascii")

    return json.dumps(
        {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key": enc(record.key),
            "value": enc(record.value),
            "codec": codec,
        },
        separators=(",", ":"),
    )
