"""The processes a command started (psutil): what the long-running benchmarks sample (`soak`, `idle_run`,
`catch_up`), and the `radar` command they start, as a user starts it."""

from __future__ import annotations

import sys

import psutil

from rebalance_radar.pipelines.config import REPO_ROOT

RADAR = (sys.executable, "-m", "rebalance_radar.pipelines.cli")
CONF = REPO_ROOT / "conf" / "local.yml"


def descendants(root: int) -> dict[int, str]:
    """pid -> command line (arguments joined by spaces) of every process below `root`."""
    try:
        below = psutil.Process(root).children(recursive=True)
    except psutil.NoSuchProcess:
        return {}
    found = {}
    for process in below:
        try:
            found[process.pid] = " ".join(process.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
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
        return psutil.Process(pid).memory_info().rss
    except psutil.NoSuchProcess:
        return 0


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system); 0 once it has gone."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return times.user + times.system
