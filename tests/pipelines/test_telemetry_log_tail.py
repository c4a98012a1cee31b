"""The shipper's tail over real files: partial lines wait, truncation and rename rotation lose nothing."""

from __future__ import annotations

import os
from pathlib import Path

from emitters.log_shipper import DEFAULT_KEYWORDS, LogTail, keyword_filter


def _append(path: Path, text: str) -> None:
    with path.open("a") as fh:
        fh.write(text)


def test_partial_lines_wait_for_their_newline(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    tail = LogTail(log)
    assert tail.read_lines() == []  # no file yet: nothing, no error
    _append(log, "one\ntw")
    assert tail.read_lines() == [b"one"]
    _append(log, "o\n")
    assert tail.read_lines() == [b"two"]


def test_from_end_skips_what_the_first_file_holds(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    _append(log, "old\n")
    tail = LogTail(log, from_start=False)
    assert tail.read_lines() == []
    _append(log, "new\n")
    assert tail.read_lines() == [b"new"]


def test_truncation_rereads_from_the_start(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    tail = LogTail(log)
    _append(log, "a long first line\nsecond\n")
    assert len(tail.read_lines()) == 2
    log.write_text("x\n")  # copytruncate: same inode, smaller file
    assert tail.read_lines() == [b"x"]
    assert tail.truncations == 1


def test_rename_rotation_drains_the_old_file_then_reads_the_new_one(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    tail = LogTail(log)
    _append(log, "1\n")
    assert tail.read_lines() == [b"1"]
    _append(log, "2\n")  # written after our last read, before the rotation
    os.rename(log, tmp_path / "server.log.1")
    assert tail.read_lines() == [b"2"]  # rotated away, not yet recreated
    _append(log, "3\n4\n")
    assert tail.read_lines() == [b"3", b"4"]
    assert tail.rotations == 1
    tail.close()


def test_default_keywords_keep_coordinator_lines_of_both_wordings() -> None:
    keep = keyword_filter(DEFAULT_KEYWORDS)
    assert keep(b"[2025-01-01 00:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 2 (x)")
    assert keep(b"[t] INFO [GroupId g] Member m left the consumer group. (org.apache.kafka.coordinator.group.X)")
    assert not keep(b"[t] INFO [LogLoader partition=t-0] Loading producer state (kafka.log.UnifiedLog$)")
    assert keyword_filter(())(b"anything") and not keyword_filter(())(b"  ")
