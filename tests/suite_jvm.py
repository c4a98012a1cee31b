"""The Java options of the short-lived JVMs the suite starts: every `radar` command's (through the environment they
inherit), a standalone cluster's daemons and executors, the embedded brokers. Each does a minute or two of cold code,
where C2's compiler threads compete with the work for the cores; C1 alone, with the tiered code cache's size (C1's own
cache fills, and its sweeper then costs what C2 did), does the same work for less CPU (docs/local-stack-traps.md).
The session's own JVM lives the whole run and keeps tiered compilation, whose C2 code pays back there, as users' long
commands do (`pipelines.runtime.local_runtime`). Every JVM of the suite, the session's too, collects with the parallel
collector: on two cores G1's concurrent work competes with the tests' own, and the suite's short bursts of garbage are
cheaper to copy in a pause (docs/local-stack-traps.md)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, MutableMapping

from rebalance_radar.pipelines.config import BrokerConfig

SUITE_COLLECTOR = "-XX:+UseParallelGC"
QUICK_JAVA_OPTIONS = f"{SUITE_COLLECTOR} -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
EXTRA_CONF_VARIABLE = "RADAR__SPARK__EXTRA_CONF"
BROKER_OPTIONS_VARIABLE = "RADAR__BROKER__JAVA_OPTIONS"
QUICK_EXTRA_CONF = {
    "spark.driver.extraJavaOptions": QUICK_JAVA_OPTIONS,
    "spark.executor.extraJavaOptions": QUICK_JAVA_OPTIONS,
}
SESSION_EXTRA_CONF = {"spark.driver.extraJavaOptions": SUITE_COLLECTOR}
COLLECTOR_OPTION = re.compile(r"-XX:\+Use\w+GC")


def use_quick_jvms(environ: MutableMapping[str, str]) -> None:
    """Every radar config loaded from `environ`, and every process started with it, gets the quick options, unless
    `spark.extra_conf` or `broker.java_options` is already set there (a developer's own run wins)."""
    environ.setdefault(EXTRA_CONF_VARIABLE, json.dumps(QUICK_EXTRA_CONF))
    environ.setdefault(BROKER_OPTIONS_VARIABLE, f"{broker_options_without_collector()} {QUICK_JAVA_OPTIONS}".strip())


def broker_options_without_collector() -> str:
    """The broker's configured default options less its collector (a JVM refuses two)."""
    return " ".join(o for o in shlex.split(BrokerConfig().java_options) if not COLLECTOR_OPTION.fullmatch(o))


def session_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` for the config of the session's own JVM: the suite's collector in place of the quick options
    `use_quick_jvms` set."""
    if environ.get(EXTRA_CONF_VARIABLE) != json.dumps(QUICK_EXTRA_CONF):
        return dict(environ)
    return {**environ, EXTRA_CONF_VARIABLE: json.dumps(SESSION_EXTRA_CONF)}
