"""The shipper's tail over real files: partial lines wait, truncation and rename rotation lose nothing; and the
`radar ship-logs` subcommand ships what it kept."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from rebalance_radar.emitters.log_shipper import DEFAULT_KEYWORDS, LogTail, keyword_filter


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


@pytest.mark.kafka
def test_radar_ship_logs_ships_the_coordinator_lines_once(kafka_broker: Any, tmp_path: Path) -> None:
    """`radar ship-logs` wiring: --log, --bootstrap, --topic, --keyword and --once reach the shipper."""
    from rebalance_radar.pipelines.cli import main
    from tests.pipelines.group_member import create_topics, read_records

    topic = f"ship-logs-{time.time_ns()}"
    create_topics(kafka_broker.bootstrap_servers, {topic: 1})
    log = tmp_path / "server.log"
    _append(log, "[t] INFO [GroupCoordinator 1]: Stabilized group g generation 2\n[t] INFO other\n[t] INFO mine x\n")
    argv = ["ship-logs", "--log", str(log), "--bootstrap", kafka_broker.bootstrap_servers, "--topic", topic]
    assert main([*argv, "--keyword", "GroupCoordinator", "--keyword", "mine", "--once"]) == 0
    # the reader's group join alone can take seconds: its idle window must outlast it (1 s read nothing)
    values = [value for value, _ in read_records(kafka_broker.bootstrap_servers, topic, idle_s=5.0)]
    assert values == [b"[t] INFO [GroupCoordinator 1]: Stabilized group g generation 2", b"[t] INFO mine x"]


def test_radar_ship_logs_without_a_cluster_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rebalance_radar.pipelines.cli import main

    assert main(["ship-logs", "--log", str(tmp_path / "server.log"), "--once"]) == 2  # conf/local.yml: embedded
    assert "radar ship-logs needs a cluster: pass --bootstrap" in capsys.readouterr().err


def test_radar_ship_logs_once_to_a_dead_broker_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing delivered is a failure a script or supervisor sees: exit 1 and a sentence, never 0."""
    import socket

    from rebalance_radar.pipelines.cli import main

    with socket.socket() as unused:  # a port nothing listens on: the broker is down
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    log = tmp_path / "server.log"
    _append(log, "[t] INFO [GroupCoordinator 1]: Stabilized group g generation 2\n")
    argv = ["ship-logs", "--log", str(log), "--bootstrap", f"127.0.0.1:{port}", "--topic", "t", "--once"]
    assert main([*argv, "-X", "message.timeout.ms=2000"]) == 1
    err = capsys.readouterr().err
    assert "0 delivered, 1 dropped" in err
    assert "lines that did not reach t: 1; check the broker is up" in err
