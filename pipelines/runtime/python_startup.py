"""The start-up of the Python processes a driver JVM that radar launches starts itself, whatever the master: a
transformWithState query's planning worker (on the driver, before the query's first micro-batch), and on a local
master every worker of every task.

Spark puts its own copies of pyspark and py4j first on their import path, and Python compiles pyspark from that zip
on every start. Spark waits a fixed 10 s for a new worker to connect back, and a detection query dies with "Python
worker failed to connect back." when the driver is too busy to compile pyspark within it. The hook in `startup/`
(`sitecustomize`, which Python runs at start from any folder on PYTHONPATH) leaves the archives out where they are
the pyspark installed beside them. The driver JVM's environment is the only place for it: Spark builds a worker's
PYTHONPATH as its archives, then the function's, then the JVM's own, and each worker starts `python -m <module>`.

A JVM radar does not launch (spark-submit's, Databricks') is left as it is; so are a cluster's executors, whose
workers start once per executor from Spark's daemon.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

STARTUP_DIR = Path(__file__).resolve().parent / "startup"
"""The folder of the hook (`startup/sitecustomize.py`), put first on the driver JVM's PYTHONPATH."""


@contextlib.contextmanager
def driver_jvm_environment() -> Iterator[None]:
    """While a driver JVM is launched (pyspark starts it with this process's environment): the hook's folder first on
    PYTHONPATH. This process's own environment is restored after."""
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(STARTUP_DIR), *([previous] if previous else [])])
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous
