"""The Python worker daemon of a local session (`spark.python.daemon.module`): pyspark's own daemon, started with
only the import path entries Python code can come from.

Why: Spark puts `pyspark.zip`, py4j's zip and the spark-core jar ahead of site-packages on its workers' path, and
every task's worker calls `importlib.invalidate_caches()` (`pyspark.worker_util.setup_spark_files`), which on
Python 3.11 re-reads the whole directory of every zip archive on the path in pure Python. With the jar's thousands
of entries that was most of a small task's time (a live detection micro-batch's decode and `transformWithState`
tasks: 0.2-0.9 s each, ~80 % of the workers' samples in `zipimport._read_directory`). A pip-installed pyspark
carries the same pyspark and py4j in site-packages (with compiled bytecode, which a zip import recompiles in every
new daemon), and the spark-core jar holds no Python, so these archives are dropped before the daemon imports
pyspark.

Spark starts some Python processes without the daemon (`transformWithState`'s driver-side worker, which runs the
processor's `init` when a query plans): those are started through a launcher (`worker_python`) that drops the
archives from `PYTHONPATH` before the interpreter starts. From the zips, that worker compiled pyspark again in every
detection query's planning (0.91 s for its imports against 0.41 s from site-packages).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

SPARK_ARCHIVES = ("spark-core_*.jar", "pyspark*.zip", "py4j*.zip")
"""The file names of the archives Spark adds to its workers' path (shell patterns: the launcher matches them too)."""


def is_spark_archive(entry: str) -> bool:
    """An archive Spark itself adds to its workers' path: the spark-core jar, pyspark's and py4j's zips. (Not a zip
    of the Python distribution, `python311.zip`, nor a package a job ships as a py-file, a jar among them.)"""
    name = Path(entry).name
    return any(fnmatchcase(name, pattern) for pattern in SPARK_ARCHIVES)


def path_without_archives(entries: list[str]) -> list[str]:
    """`sys.path` less Spark's archives."""
    return [entry for entry in entries if not is_spark_archive(entry)]


def drop_archives_from_import_path() -> None:
    """Remove the archives from `sys.path` and their importers from `sys.path_importer_cache` (the cache is what
    `invalidate_caches` walks)."""
    sys.path[:] = path_without_archives(sys.path)
    for entry in [e for e in sys.path_importer_cache if is_spark_archive(e)]:
        del sys.path_importer_cache[entry]


def archives_are_redundant() -> bool:
    """True when pyspark and py4j import from a directory (site-packages) once the archives are gone: only then
    can they be dropped (a Spark distribution without a pip-installed pyspark has them only in its zips)."""
    from importlib.machinery import PathFinder

    directories = path_without_archives(sys.path)
    for package in ("pyspark", "py4j"):
        spec = PathFinder.find_spec(package, directories)
        if spec is None or spec.origin is None or not Path(spec.origin).is_file():
            return False
    return True


def launcher_script(python: str) -> str:
    """A POSIX shell script that runs `python` with Spark's archives left out of `PYTHONPATH` (unset when nothing
    else is on it)."""
    return "\n".join(
        [
            "#!/bin/sh",
            "# rebalance-radar (pipelines/python_daemon.py): Spark's Python workers without Spark's archives",
            "set -f",  # the entries are names, not patterns to expand
            "kept=",
            "IFS=:",
            "for entry in $PYTHONPATH; do",
            '  case "${entry##*/}" in',
            f"    {'|'.join(SPARK_ARCHIVES)}) ;;",
            '    *) kept="${kept:+$kept:}$entry" ;;',
            "  esac",
            "done",
            "unset IFS",
            "set +f",
            'if [ -n "$kept" ]; then PYTHONPATH=$kept; export PYTHONPATH; else unset PYTHONPATH; fi',
            f'exec {shlex.quote(python)} "$@"',
            "",
        ]
    )


def worker_python(cache_dir: Path) -> str:
    """The interpreter a local session's Python workers run (PYSPARK_PYTHON): this one, through the launcher in
    `cache_dir` (written once, named by its content) when pyspark and py4j import without the archives; else this
    interpreter itself, as Spark starts it by default (slower to start, nothing else differs)."""
    if os.name != "posix" or not archives_are_redundant():
        return sys.executable
    script = launcher_script(sys.executable)
    launcher = cache_dir / f"python-{hashlib.sha256(script.encode()).hexdigest()[:12]}"
    if os.access(launcher, os.X_OK):
        return str(launcher)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = launcher.with_name(f"{launcher.name}.{os.getpid()}.partial")
        partial.write_text(script, encoding="utf-8")
        partial.chmod(0o755)
        os.replace(partial, launcher)  # only ever complete under its final name
    except OSError:
        return sys.executable
    return str(launcher)


WORKER_MODULES = (
    "pyarrow",
    "pyarrow.compute",
    "pandas",  # pyarrow imports it at a worker's first `pa.array` of a Python list: ~0.3 s in every new worker
    "transforms.offsets_batch",
    "transforms.telemetry.batch",
    "pipelines.detect",
)
"""What the workers of a radar session import for their tasks (the decode, the telemetry parse, the detection
operator, whose pickled processor names `pipelines.detect`). Imported once by the daemon, before it forks a worker
per task slot: each worker starts with them in memory (~0.6 s of CPU a worker; a short replay forks several)."""


def batches_unchanged(batches: Iterator[Any]) -> Iterator[Any]:
    """A `mapInArrow` body that passes its input on: what `session.start_python_workers` runs to start the daemon."""
    yield from batches


def import_worker_modules() -> None:
    """Import `WORKER_MODULES`; one that cannot be imported here is left to the task that needs it, which raises
    the import error where it is understood (the daemon must start either way: every Python task needs it)."""
    import importlib

    for module in WORKER_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            continue


def freeze_imported_objects() -> None:
    """Move every object the daemon holds now out of the cyclic collector's reach, in the daemon and in every worker
    it forks from here on.

    Why: with worker reuse, pyspark's daemon runs a full `gc.collect()` in a worker after each of its tasks, and a
    full collection walks every object the worker holds, nearly all of them the modules imported above (~65k
    objects). In the workers of a warm session running 1-task jobs, that was most of their CPU time (`py-spy`:
    1291 of 1587 samples in that `gc.collect()`, ~6.5 s of CPU in the 15 s recorded; none frozen), and a 1-task
    `mapInArrow` job took 97 ms against 82 ms frozen. Frozen before the fork (`gc.freeze`, Python's own advice for
    forking servers), they are never walked; what a task allocates is collected as before."""
    import gc

    gc.collect()  # what is garbage now is freed, not frozen
    gc.freeze()


if __name__ == "__main__":
    if archives_are_redundant():
        drop_archives_from_import_path()
    import_worker_modules()
    from pyspark.daemon import manager  # imports the worker's own modules (`pyspark.worker`) too

    freeze_imported_objects()
    manager()
