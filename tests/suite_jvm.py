"""The Java options of the JVMs the suite starts: the session's Spark driver, every `radar` command's (through the
environment they inherit), a standalone cluster's daemons and executors, the embedded brokers. Each does many small
jobs of cold code, where C2's compiler threads compete with the work for the cores; C1 alone, with the tiered code
cache's size (C1's own cache fills, and its sweeper then costs what C2 did), does the same work for less CPU
(docs/local-stack-traps.md). Users' commands keep the default for long runs (`pipelines.runtime.local_runtime`), and
so does the session's own JVM, which lives the whole run: its hot code pays C2 back."""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping

QUICK_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
EXTRA_CONF_VARIABLE = "RADAR__SPARK__EXTRA_CONF"
BROKER_OPTIONS_VARIABLE = "RADAR__BROKER__JAVA_OPTIONS"
QUICK_EXTRA_CONF = {
    "spark.driver.extraJavaOptions": QUICK_JAVA_OPTIONS,
    "spark.executor.extraJavaOptions": QUICK_JAVA_OPTIONS,
}


def use_quick_jvms(environ: MutableMapping[str, str]) -> None:
    """Every radar config loaded from `environ`, and every process started with it, gets the quick options, unless
    `spark.extra_conf` or `broker.java_options` is already set there (a developer's own run wins)."""
    environ.setdefault(EXTRA_CONF_VARIABLE, json.dumps(QUICK_EXTRA_CONF))
    environ.setdefault(BROKER_OPTIONS_VARIABLE, f"-XX:+UseG1GC {QUICK_JAVA_OPTIONS}")


def session_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` for the config of the session's own JVM: without the quick options `use_quick_jvms` set."""
    ours = {EXTRA_CONF_VARIABLE: json.dumps(QUICK_EXTRA_CONF)}
    return {key: value for key, value in environ.items() if ours.get(key) != value}
