"""What radar prints fits where it goes: tables within the width (kubectl's narrow view when it is small), plain
newline-ended lines on a pipe, rows for programs as JSON Lines or CSV, library messages in a log file, and a
mistake said in one line, at once, without a JVM."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from rebalance_radar.pipelines.cli.demo import next_commands
from rebalance_radar.pipelines.cli.detections_view import render_detections
from rebalance_radar.pipelines.runtime import console as console_module
from rebalance_radar.pipelines.runtime.console import (
    CountLine,
    LibraryLog,
    fitted_table,
    output_console,
    print_line,
    write_records,
)
from tests.pipelines.radar_run_process import radar_without_a_jvm

CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")  # every control character but the newline


def plain_lines(text: str, width: int | None = None) -> list[str]:
    """`text` as a pipe must carry it: no control character but newlines, every line ended by one, none wider
    than `width`."""
    assert not CONTROL.search(text), repr(CONTROL.search(text))
    assert text == "" or text.endswith("\n"), repr(text[-200:])
    lines = text.splitlines()
    if width is not None:
        assert max((len(line) for line in lines), default=0) <= width, max(lines, key=len)
    return lines


def _detection(second: int) -> dict[str, object]:
    return {
        "cluster": "local",
        "kind": "heartbeat_expiration",
        "severity": "warning",
        "group_id": "orders",
        "generation": 7,
        "member_id": f"consumer-orders-{second}-0123456789abcdef",
        "detected_at": datetime(2026, 11, 23, 9, 0, second),
        "status": "open",
        "summary": "member x of group orders was silent 12 s against its 10 s session timeout and was removed. "
        "What to do: raise session.timeout.ms above the silence seen or fix the pauses.",
    }


@pytest.mark.parametrize("width", [70, 100, 250])
def test_detections_fit_the_width_and_the_summary_keeps_room(width: int) -> None:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    render_detections([_detection(1), _detection(2)], console)
    lines = plain_lines(out.getvalue(), width)
    header = next(line for line in lines if "summary" in line)
    assert "summary" in header and "kind" in header
    if width < 150:  # narrow: the member column goes first, so the summary is readable
        assert "member_id" not in header
    else:
        assert "member_id" in header
    summary_start = header.index("summary")
    assert width - summary_start >= 30, header
    # the summary folds inside its column; nothing is cut off
    text = " ".join(line[summary_start:].strip() for line in lines if len(line) > summary_start)
    assert "fix the pauses." in text


def test_rows_for_programs_as_json_lines_and_csv() -> None:
    rows = [{"group_id": "orders", "n": 2, "at": datetime(2026, 11, 23, 19, 3, tzinfo=UTC), "note": None}]
    columns = ("group_id", "n", "at", "note")
    as_json = io.StringIO()
    write_records(rows, columns, "json", as_json)
    assert [json.loads(line) for line in plain_lines(as_json.getvalue())] == [
        {"group_id": "orders", "n": 2, "at": "2026-11-23T19:03:00+00:00", "note": None}
    ]
    as_csv = io.StringIO()
    write_records(rows, columns, "csv", as_csv)
    assert list(csv.reader(io.StringIO(as_csv.getvalue()))) == [
        list(columns),
        ["orders", "2", "2026-11-23T19:03:00+00:00", ""],
    ]


def test_a_hint_is_printed_whole_however_narrow_the_console() -> None:
    out = io.StringIO()
    console = Console(file=out, width=40, color_system=None)
    commands = next_commands(Path("/tmp/radar demo"))
    for command in commands:
        print_line(console, command)
    assert plain_lines(out.getvalue()) == commands  # one line each: they paste as they are
    assert "'/tmp/radar demo'" in commands[0]  # quoted for the shell


def test_a_pipe_gets_plain_counts_never_a_carriage_return(monkeypatch: pytest.MonkeyPatch) -> None:
    """Maven's download count: one line now and then on a pipe (not one 2,000-character line of redraws)."""
    out = io.StringIO()
    clock = iter(range(0, 10_000, 4))
    monkeypatch.setattr(console_module.time, "monotonic", lambda: float(next(clock)))
    count = CountLine("files downloaded", stream=out)
    for _ in range(12):
        count.add()
    count.done()
    lines = plain_lines(out.getvalue())
    assert lines[-1] == "  12 files downloaded"
    assert 2 <= len(lines) <= 6, lines


def test_library_messages_go_to_a_file_named_once(tmp_path: Path) -> None:
    said = io.StringIO()
    log = LibraryLog(tmp_path / "data", "run", stream=said)
    log.write("librdkafka", "%4|1764660000.123|BGQUEUE|rdkafka#producer-1| [thrd:app]: ...")
    log.write("maven", "Downloading from central: x\nDownloaded from central: x")
    assert said.getvalue() == f"radar run: library messages are kept in {log.path}\n"
    assert log.path == tmp_path / "data" / "logs" / "radar-run.log"
    kept = log.path.read_text().splitlines()
    assert len(kept) == 3 and "BGQUEUE" in kept[0] and kept[2].endswith("maven: Downloaded from central: x")


def test_the_output_console_is_plain_on_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    console = output_console(out)
    assert not console.is_terminal and console.width == console_module.PIPED_WIDTH
    console.print("[bold red]critical[/] zombie_commit")
    assert plain_lines(out.getvalue()) == ["critical zombie_commit"]
    monkeypatch.setenv("COLUMNS", "90")
    assert output_console(io.StringIO()).width == 90


def test_fitted_table_drops_the_droppable_columns_in_order() -> None:
    rows = [["a" * 30, "b" * 30, "c" * 30, "the summary " * 10]]
    _table, shown = fitted_table("t", ("x", "y", "z", "summary"), rows, 110, flexible="summary", droppable=("y", "z"))
    assert shown == ("x", "z", "summary")
    _table, shown = fitted_table("t", ("x", "y", "z", "summary"), rows, 300, flexible="summary", droppable=("y", "z"))
    assert shown == ("x", "y", "z", "summary")


MISTAKES: list[tuple[list[str], str]] = [
    (["detections", "--format", "xml"], r"radar detections: argument --format: invalid choice: 'xml'"),
    (["watch", "--interval", "soon"], r"radar watch: argument --interval: invalid float value: 'soon'"),
    (["detectons"], r"radar: argument command: invalid choice: 'detectons'"),
    (["watch", "--data-dir", "/nonexistent/radar-data"], r"No detections table under /nonexistent/radar-data"),
    (["watch", "--interval", "0"], r"--interval 0 is not a number of seconds above 0"),
    (["groups", "--data-dir", "/nonexistent/radar-data"], r"No detections table under /nonexistent/radar-data"),
    (["detections", "--format", "csv", "--data-dir", "/nonexistent/radar-data"], r"No detections table"),
    (
        ["sql", "SELEC 1", "--data-dir", "/nonexistent/radar-data"],
        r"The SQL does not parse near \"1\"",
    ),
    (
        ["sql", "SELECT * FROM nosuch", "--data-dir", "/nonexistent/radar-data"],
        r"DuckDB: Catalog Error: .*nosuch",
    ),
]


@pytest.fixture(scope="module")
def mistakes_answered() -> dict[tuple[str, ...], subprocess.CompletedProcess[str]]:
    """Every mistake's command, all started at once: each is a Python start-up, and one after another they took most
    of this module's time while the run's brokers start beside it."""
    with ThreadPoolExecutor(max_workers=len(MISTAKES), thread_name_prefix="mistake") as pool:
        answers = {tuple(argv): pool.submit(radar_without_a_jvm, *argv) for argv, _said in MISTAKES}
    return {argv: answer.result() for argv, answer in answers.items()}


@pytest.mark.parametrize(("argv", "said"), MISTAKES)
def test_a_mistake_is_one_line_at_once_without_a_jvm(
    argv: list[str], said: str, mistakes_answered: dict[tuple[str, ...], subprocess.CompletedProcess[str]]
) -> None:
    done = mistakes_answered[tuple(argv)]
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = plain_lines(done.stderr)
    assert len(lines) == 1 and re.search(said, lines[0]), done.stderr
    assert "Traceback" not in done.stderr


def test_a_long_commands_status_is_a_plain_line_every_ten_seconds_on_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """`radar run`'s status on a pipe: a whole line every `PLAIN_STATUS_EVERY_S`, changed or not (a sign of life),
    never a redraw; the summary at the end is a line of its own."""
    now = [1000.0]
    monkeypatch.setattr(console_module.time, "monotonic", lambda: now[0])
    out = io.StringIO()
    status = console_module.StatusLine("radar run", [], stream=out)
    for _ in range(31):  # 30 s of updates, one a second
        status.update()
        now[0] += 1.0
    status.finish()
    lines = plain_lines(out.getvalue())
    assert len(lines) == 5 and all(line.startswith("radar run: ") for line in lines), lines  # at 0, 10, 20, 30 s
    assert lines[-1].startswith("radar run: 31 s")
