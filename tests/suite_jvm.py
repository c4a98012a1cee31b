"""The Java options of the Spark JVMs the suite starts: the session's driver, every `radar` command's (through the
environment they inherit), a standalone cluster's daemons and executors. Each does many small jobs of cold code, where
C2's compiler threads took about a third of a test module's JVM CPU; C1 alone, with the tiered code cache's size (C1's
own 48 MB filled, and its sweeper then cost as much as C2), did the same work for two thirds of it. Users' commands
keep the JVM's default for long runs (`pipelines.runtime.local_runtime`)."""

from __future__ import annotations

import json
from collections.abc import MutableMapping

QUICK_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
EXTRA_CONF_VARIABLE = "RADAR__SPARK__EXTRA_CONF"
QUICK_EXTRA_CONF = {
    "spark.driver.extraJavaOptions": QUICK_JAVA_OPTIONS,
    "spark.executor.extraJavaOptions": QUICK_JAVA_OPTIONS,
}


def use_quick_jvms(environ: MutableMapping[str, str]) -> None:
    """Every radar config loaded from `environ`, and every process started with it, gets the quick options, unless
    `spark.extra_conf` is already set there (a developer's own run wins)."""
    environ.setdefault(EXTRA_CONF_VARIABLE, json.dumps(QUICK_EXTRA_CONF))
