"""`radar repair-checkpoint`: find the streaming checkpoints a crash or a full disk left damaged, and mend them the
one way that loses and duplicates nothing.

A query's checkpoint logs each micro-batch twice: `offsets/N` (what batch N reads, written before it runs) and
`commits/N` (written after its writes committed). Spark reads the newest entries when a query starts; a truncated or
half-written one (its `.N.crc` disagrees, or its text is not the log's format) stops the query at every start.
Deleting only `offsets/N`, the obvious repair, makes the next start fail again (`CONCURRENT_STREAM_LOG_UPDATE`):
`commits/N` says batch N is done, and Spark refuses to write `offsets/N` anew. So the repair sets aside the damaged
newest batch whole (`offsets/N` and `commits/N`, with their checksums) into `checkpoints/repaired/<time>/`: the
query plans batch N again from `offsets/N-1`, and every table write being idempotent (Delta transaction ids,
record keys, MERGE by detection id), the redone batch writes nothing twice. A stateful query's state for version N
is overwritten by the redone batch, as Spark does after any crash between a batch's writes and its commit.

Damage anywhere but the newest batch (Spark reads only the newest) is reported and left alone.
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

LOGS = ("offsets", "commits")


@dataclass(frozen=True)
class Damage:
    """One damaged entry: the query's checkpoint folder, the log (offsets or commits), the batch, and why."""

    query_dir: Path
    log: str
    batch: int
    reason: str

    @property
    def path(self) -> Path:
        return self.query_dir / self.log / str(self.batch)

    def line(self, checkpoint_dir: Path) -> str:
        return f"{self.path.relative_to(checkpoint_dir)}: {self.reason}"


def crc_file(path: Path) -> Path:
    return path.with_name(f".{path.name}.crc")


def checksum_problem(path: Path, data: bytes) -> str | None:
    """What Hadoop's checksum file beside `path` says against its bytes ('crc\\0', bytes per sum, a CRC32 per
    chunk); None when it agrees or there is none."""
    crc = crc_file(path)
    if not crc.is_file():
        return None
    raw = crc.read_bytes()
    if len(raw) < 8 or raw[:4] != b"crc\x00":
        return "its checksum file is damaged"
    per = struct.unpack(">i", raw[4:8])[0]
    if per <= 0:
        return "its checksum file is damaged"
    stored = [struct.unpack(">I", raw[i : i + 4])[0] for i in range(8, len(raw) - 3, 4)]
    actual = [zlib.crc32(data[i : i + per]) for i in range(0, len(data), per)]
    return None if stored == actual else "checksum error (the file was cut short or changed after it was written)"


def format_problem(log: str, data: bytes) -> str | None:
    """Whether the entry reads as Spark wrote it: a version line `v1`, then JSON lines (an offsets entry: the batch's
    metadata, then one offset per source, `-` for a source with none)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not text"
    lines = text.split("\n")
    if not lines or not lines[0].startswith("v") or not lines[0][1:].isdigit():
        return "empty, or no version line" if not text.strip() else "no version line"
    body = [line for line in lines[1:] if line != ""]
    if not body:
        return "cut short (no entry after the version line)"
    for line in body:
        if log == "offsets" and line == "-":
            continue
        try:
            json.loads(line)
        except ValueError:
            return "cut short or garbled (a line is not JSON)"
    return None


def entry_problem(path: Path, log: str) -> str | None:
    try:
        data = path.read_bytes()
    except OSError as error:
        return f"unreadable ({error.strerror})"
    return checksum_problem(path, data) or format_problem(log, data)


def batches(log_dir: Path) -> list[int]:
    return sorted(int(p.name) for p in log_dir.iterdir() if p.name.isdigit()) if log_dir.is_dir() else []


def query_dirs(checkpoint_dir: Path) -> list[Path]:
    """Every query checkpoint under `checkpoint_dir` (a folder with an `offsets` log), set-aside copies excepted."""
    found = []
    for offsets in sorted(checkpoint_dir.rglob("offsets")):
        relative = offsets.relative_to(checkpoint_dir).parts
        if offsets.is_dir() and relative[0] not in ("moved", "repaired"):
            found.append(offsets.parent)
    return found


def find_damage(checkpoint_dir: Path) -> list[Damage]:
    """The damaged newest entries of every query's offsets and commits logs."""
    damage = []
    for query in query_dirs(checkpoint_dir):
        for log in LOGS:
            numbers = batches(query / log)
            if numbers:
                problem = entry_problem(query / log / str(numbers[-1]), log)
                if problem is not None:
                    damage.append(Damage(query, log, numbers[-1], problem))
    return damage


def set_aside(damage: list[Damage], checkpoint_dir: Path) -> tuple[Path | None, list[str]]:
    """Move each damaged batch whole (its offsets and commits entries, with their checksums, and any newer ones) to
    `checkpoints/repaired/<time>/`; returns that folder and what was moved (relative paths)."""
    if not damage:
        return None, []
    aside = checkpoint_dir / "repaired" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = []
    first: dict[Path, int] = {}
    for d in damage:
        first[d.query_dir] = min(d.batch, first.get(d.query_dir, d.batch))
    for query, batch in sorted(first.items()):
        # from the damaged batch on, in both logs: a newer offsets entry needs the one before it to start from
        entries = [query / log / str(n) for log in LOGS for n in batches(query / log) if n >= batch]
        for entry in entries:
            for path in (entry, crc_file(entry)):
                if path.exists():
                    target = aside / path.relative_to(checkpoint_dir)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    path.rename(target)
                    moved.append(str(path.relative_to(checkpoint_dir)))
    return aside, moved
