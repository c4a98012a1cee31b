"""What a Python process of Spark's driver costs to start: pyspark's transformWithState planning worker
(`pyspark.sql.streaming.transform_with_state_driver_worker`, which Spark must hear from within a fixed 10 s) started
as Spark starts it, with its archives first on PYTHONPATH, and the same with radar's start-up hook
(`pipelines/runtime/startup/sitecustomize.py`) on it; CPU seconds (user + system) and wall seconds per start, the
variants alternating round after round. Prints JSON and writes it to `benchmarks/results/python_startup-<UTC
start>.json` (`benchmarks.result_file`).

    python -m benchmarks.python_startup [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyspark

from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.pipelines.runtime.python_startup import STARTUP_DIR

WORKER_MODULE = "pyspark.sql.streaming.transform_with_state_driver_worker"
SPARK_HOME = Path(pyspark.__file__).parent


def spark_archives() -> list[str]:
    """What Spark puts first on a worker's PYTHONPATH: its pyspark and py4j zips and the spark-core jar."""
    return [str(p) for p in (*sorted(SPARK_HOME.glob("python/lib/*.zip")), *SPARK_HOME.glob("jars/spark-core_*.jar"))]


VARIANTS: dict[str, list[str]] = {
    "sparks_path": spark_archives(),
    "with_startup_hook": [*spark_archives(), str(STARTUP_DIR)],
}


def one_start(pythonpath: list[str]) -> tuple[float, float]:
    """(CPU s, wall s) of one interpreter importing the planning worker's module on `pythonpath`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath), "SPARK_HOME": str(SPARK_HOME)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {WORKER_MODULE}"], env=env, check=True, timeout=120)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    add_out_arguments(parser)
    args = parser.parse_args()
    started = started_now()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
    for _ in range(args.rounds):
        for name, pythonpath in VARIANTS.items():
            samples[name].append(one_start(pythonpath))
    figures: dict[str, Any] = {"rounds": args.rounds, "module": WORKER_MODULE, "load_average": os.getloadavg()[0]}
    for name, runs in samples.items():
        figures[name] = {
            "cpu_s_median": round(statistics.median(cpu for cpu, _ in runs), 3),
            "wall_s_median": round(statistics.median(wall for _, wall in runs), 3),
        }
    base = figures["sparks_path"]["cpu_s_median"]
    figures["cpu_ratio_hook_to_sparks_path"] = round(figures["with_startup_hook"]["cpu_s_median"] / base, 3)
    print(json.dumps(figures, indent=2))
    write_run_result("python_startup", figures, args, started)


if __name__ == "__main__":
    main()
