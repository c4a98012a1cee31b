"""rebalance-radar's start-up hook for the Python processes a driver JVM that radar launched starts
(`pipelines.runtime.python_startup` puts this folder on that JVM's PYTHONPATH): a transformWithState query's
planning worker, and on a local master every worker.

Spark puts its own archives first on their import path (pyspark.zip, py4j's zip, the spark-core jar), and Python
compiles pyspark from the zip on every start (no bytecode is cached for a zip). Where those archives are the
pyspark installed beside them (SPARK_HOME is the pyspark package found without them), they are left out, and pyspark
is imported from its compiled files. Then the `sitecustomize` this one hides, if any, runs as it would have.

Only the standard library, and no I/O but a few stat calls: it runs first in every such process."""

from __future__ import annotations

import os
import sys


def archives_of_installed_pyspark(path: list[str], spark_home: str | None) -> list[str]:
    """The entries of `path` that are files inside `spark_home` (Spark's archives), when `spark_home` is the pyspark
    package that `path` finds without them, py4j found too; else none (a Spark distribution's zips stay)."""
    from importlib.machinery import PathFinder

    if not spark_home:
        return []
    home = os.path.realpath(spark_home)
    inside = [entry for entry in path if entry and os.path.realpath(entry).startswith(home + os.sep)]
    archives = [entry for entry in inside if os.path.isfile(entry)]
    if not archives:
        return []
    rest = [entry for entry in path if entry not in archives]
    pyspark = PathFinder.find_spec("pyspark", rest)
    if pyspark is None or pyspark.origin is None or os.path.dirname(os.path.realpath(pyspark.origin)) != home:
        return []
    if PathFinder.find_spec("py4j", rest) is None:
        return []
    return archives


def run_hidden_sitecustomize(here: str) -> None:
    """Run the `sitecustomize` further on the path (a distribution's own), which Python would have run without this
    one."""
    from importlib.machinery import PathFinder

    others = [entry for entry in sys.path if os.path.realpath(entry or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    import importlib.util

    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def _start() -> None:
    dropped = archives_of_installed_pyspark(sys.path, os.environ.get("SPARK_HOME"))
    if dropped:
        sys.path[:] = [entry for entry in sys.path if entry not in dropped]
        for entry in dropped:
            sys.path_importer_cache.pop(entry, None)
    run_hidden_sitecustomize(os.path.dirname(os.path.realpath(__file__)))


_start()
