"""The Spark masters a benchmark runs on, one child process each: a master URL as given, or `standalone`, a Master
and one-core Workers started on this machine for the child's run (`pipelines/local/standalone_cluster.py`)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STANDALONE = "standalone"
MASTERS_HELP = f"each in its own process: a Spark master URL, or '{STANDALONE}' (a cluster started here)"


def each_master(masters: list[str], workers: int = 2) -> Iterator[tuple[str, str]]:
    """(label, master URL) for each of `masters`; a `standalone` cluster runs until the caller asks for the next."""
    from rebalance_radar.pipelines.local.standalone_cluster import StandaloneCluster

    for master in masters:
        if master != STANDALONE:
            yield master, master
            continue
        with (
            tempfile.TemporaryDirectory(prefix="radar-bench-cluster-") as folder,
            StandaloneCluster(Path(folder), workers=workers, cores=1) as cluster,
        ):
            yield f"{STANDALONE} {workers} x 1 core", cluster.url


def child_figures(command: list[str], label: str) -> dict[str, Any]:
    """Run one master's child (`command`, its stderr shown as it goes) and read the JSON it prints."""
    child = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if child.returncode != 0:
        raise RuntimeError(f"the {label} run exited {child.returncode}; its stderr is above")
    return json.loads(child.stdout)
