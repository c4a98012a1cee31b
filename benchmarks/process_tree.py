"""The processes a command started, read from /proc: what the long-running benchmarks sample (`soak`, `idle_run`)."""

from __future__ import annotations

import os
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> dict[int, str]:
    """pid -> command line (arguments joined by spaces) of every process below `root`."""
    parent, command = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                raw = (entry / "cmdline").read_bytes()
                command[int(entry.name)] = raw.replace(b"\0", b" ").decode(errors="replace")
            except (OSError, IndexError, ValueError):
                continue
    found, stack = {}, [root]
    while stack:
        pid = stack.pop()
        for child, up in parent.items():
            if up == pid:
                found[child] = command.get(child, "")
                stack.append(child)
    return found


def radar_part(command: str) -> str:
    """Which of a radar command's processes a command line (from `descendants`) is: its embedded `broker`, the Spark
    driver `jvm`, Spark's `python_workers`, or `python` (radar's own)."""
    if "kafka.Kafka" in command or "kafka.logs.dir" in command:
        return "broker"
    if command.split(" ")[0].endswith("java"):
        return "jvm"
    if "pyspark" in command or "local_runtime" in command or "transform_with_state" in command:
        return "python_workers"
    return "python"


def rss_bytes(pid: int) -> int:
    """A process's resident memory; 0 once it has gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system); 0 once it has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S
