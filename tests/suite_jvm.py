"""The Java options of the short-lived JVMs the suite starts: every `radar` command's (through the environment they
inherit), a standalone cluster's daemons and executors, the embedded brokers. Each does a minute or two of cold code,
where C2's compiler threads compete with the work for the cores; C1 alone, with the tiered code cache's size (C1's own
cache fills, and its sweeper then costs what C2 did), does the same work for less CPU (docs/local-stack-traps.md).
The session's own JVM lives the whole run and keeps the default, whose C2 code pays back there, as users' long
commands do (`pipelines.runtime.local_runtime`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping

from rebalance_radar.pipelines.config import BrokerConfig

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
    environ.setdefault(BROKER_OPTIONS_VARIABLE, f"{BrokerConfig().java_options} {QUICK_JAVA_OPTIONS}")


def session_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` for the config of the session's own JVM: without the quick options `use_quick_jvms` set."""
    ours = {EXTRA_CONF_VARIABLE: json.dumps(QUICK_EXTRA_CONF)}
    return {key: value for key, value in environ.items() if ours.get(key) != value}
