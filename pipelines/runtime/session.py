"""The one SparkSession of a radar process, whatever the master: Databricks' own session, the session of a
`spark-submit` (its master and jars), or one radar builds for `spark.master` (`local[N]`, `spark://`, `k8s://`,
`yarn`). The same settings serve every master; what only a local master needs lives in
`pipelines.runtime.local_runtime`, used for no other.

Connector jars go by `spark.jars` (Spark serves them to the executors), and radar's own Python packages by
`addPyFile` (a zip of them), so a cluster's executors run the same code with the same connectors; their Python is
the interpreter radar runs with (`spark.executor_python` names another). A session whose Delta extension is set but
whose jar is missing starts anyway with only a WARN, so every session is verified after creation and fails with a
sentence when a configured format does not resolve.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import zipfile
from pathlib import Path

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.config import REPO_ROOT, ConfigError, RadarConfig
from rebalance_radar.pipelines.runtime.console import quiet_python_logging, write_log4j2_properties
from rebalance_radar.pipelines.runtime.jvm import default_cache_dir, spark_connector_jars
from rebalance_radar.pipelines.runtime.phases import phase
from rebalance_radar.pipelines.runtime.python_startup import driver_jvm_environment

ROCKSDB_STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
AUTO_COMPACT_ENABLED = "spark.databricks.delta.autoCompact.enabled"
ALL_FILES_IN_CHECKSUM = "spark.databricks.delta.allFilesInCrc.enabled"
# Compiled expression classes kept for reuse (Spark's default: 100). A live run's queries (ingest into ten tables,
# detection, the gold MERGEs, the checks) need more than 100 at once, so every micro-batch evicted what the next one
# compiled again (live p95, in the benchmarks' journal under benchmarks/results/). Any master: it is the number
# of queries, not the machine, that needs it.
CODEGEN_CACHE_ENTRIES = 4000
NAMESPACE = "rebalance_radar"
PROJECT_PACKAGES = ("pipelines", "transforms", "emitters", "expectations")
PROJECT_ARCHIVE_SUFFIXES = (".py", ".yml", ".json")
SUBMIT_OWNS = ("spark.jars", "spark.driver.", "spark.pyspark.driver.python")
"""What spark-submit has set before radar runs: the driver JVM is started, with its jars."""
# The conditions Spark raises when a format's classes are not on the classpath.
FORMAT_NOT_FOUND = ("DATA_SOURCE_NOT_FOUND", "_LEGACY_ERROR_TEMP_1140")


class SparkSessionError(RuntimeError):
    """The session cannot serve the pipelines; the message says what to do."""


def on_databricks() -> bool:
    return "DATABRICKS_RUNTIME_VERSION" in os.environ


def under_spark_submit() -> bool:
    """This Python was started by `spark-submit` (or the `pyspark` shell): its JVM, master and jars are given."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def is_local_master(master: str) -> bool:
    """`local`, `local[N]`, `local[*]`, `local[N,F]`: driver and executors in one JVM on this machine."""
    return master == "local" or master.startswith("local[")


KNOWN_MASTER_PREFIXES = ("local[", "spark://", "k8s://")  # Spark 4 has no Mesos
KNOWN_MASTERS = ("local", "yarn")


def check_master(master: str) -> None:
    """One sentence for a master Spark would reject only after starting a JVM."""
    if master in KNOWN_MASTERS or master.startswith(KNOWN_MASTER_PREFIXES):
        return
    raise ConfigError(
        f"spark.master {master!r} is not a Spark master: use local[N] (this machine), spark://HOST:PORT (a standalone "
        "cluster), k8s://https://HOST:PORT or yarn; set RADAR__SPARK__MASTER or spark.master in the conf."
    )


STOP_TIMEOUT_S = 15
"""How long a stop waits for each query's micro-batch (side by side) before it abandons it (redone at the next
start): with the gold tables' drain (`detect.DRAIN_BOUND_S`), a stop ends within 30 s."""

SPARK_LOG = Path("logs") / "spark.log"
"""Under the data dir: Spark's own errors at the default log level (`console.log4j2_properties`)."""


def session_conf(config: RadarConfig, jars: list[Path]) -> dict[str, str]:
    """What every session radar builds is started with, whatever its master (`spark.extra_conf` applied last)."""
    data_dir = config.scratch_dir.expanduser().resolve()  # the data dir, unless it is read-only
    log_conf = write_log4j2_properties(data_dir / "spark", config.spark.log_level, data_dir / SPARK_LOG)
    conf = {
        "spark.jars": ",".join(str(jar) for jar in jars),
        "spark.sql.shuffle.partitions": str(config.spark.shuffle_partitions),
        "spark.default.parallelism": str(config.spark.shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # set as the SparkContext starts: a JVM radar did not launch (spark-submit's, with its INFO profile) is quiet
        # from then on, not only once the session is built
        "spark.log.level": config.spark.log_level,
        "spark.sql.adaptive.enabled": "false",
        # Delta's VACUUM lists files in a job of this many tasks (default 10,000: minutes on 2 cores for a tiny table)
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(config.spark.shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_STATE_STORE,
        # each micro-batch uploads a changelog of its state changes, not a RocksDB snapshot
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.warehouse.dir": str(data_dir / "warehouse"),
        "spark.driver.extraJavaOptions": java_option("-Dderby.system.home=", data_dir / "derby")
        + " "
        + java_option("-Dlog4j2.configurationFile=", log_conf.as_uri()),
        "spark.driver.memory": config.spark.driver_memory,
        # The executors' Python workers run this interpreter (or the configured one), not the first python3 on
        # their PATH (which may lack pyarrow or radar).
        "spark.pyspark.python": config.spark.executor_python or sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        # Ctrl-C must end `radar run` within a bound: a query whose micro-batch does not stop is abandoned.
        "spark.sql.streaming.stopTimeout": f"{STOP_TIMEOUT_S}s",
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
    }
    if "delta" in config.spark.connectors:
        conf["spark.sql.extensions"] = DELTA_EXTENSION
        conf["spark.sql.catalog.spark_catalog"] = DELTA_CATALOG
        conf["spark.databricks.delta.snapshotPartitions"] = str(config.spark.shuffle_partitions)
        # Delta 4.4 lists a small table's files in each version's checksum file, which nothing in open-source Delta
        # reads back: a table's first commit ran a Spark job to list the files of the empty table before it.
        conf[ALL_FILES_IN_CHECKSUM] = "false"
        # radar compacts the tables it appends to itself, every storage.compact_after_writes writes
        # (`tables.compact_when_due`): Delta's hook rebuilt a table's state after every commit to decide
        conf[AUTO_COMPACT_ENABLED] = "false"
    return conf


def java_option(option: str, value: object) -> str:
    """`option` + `value` as one word of `spark.driver.extraJavaOptions`, which Spark splits at blanks unless
    quoted: a data dir with a space in its path made the JVM take its second half for a class name, and every
    command ended in JAVA_GATEWAY_EXITED."""
    text = str(value)
    if not any(c.isspace() or c in "\"'\\" for c in text):
        return f"{option}{text}"
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'{option}"{escaped}"'


def with_local_conf(conf: dict[str, str], local: dict[str, str]) -> dict[str, str]:
    """`conf` with the local runtime's settings: its Java options appended to radar's, the rest set."""
    merged = dict(conf)
    for key, value in local.items():
        if key == "spark.driver.extraJavaOptions" and merged.get(key):
            merged[key] = f"{merged[key]} {value}"
        else:
            merged[key] = value
    return merged


def with_extra_conf(conf: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """`spark.extra_conf` has the last word, except that a configured class path keeps the entries radar put on it
    (classes a setting names, or the JVM would not start), and configured driver Java options come after radar's (its
    log configuration and Derby home stay; of a JVM flag given twice, the later counts)."""
    merged = {**conf, **extra}
    joined = {"spark.driver.extraClassPath": os.pathsep, "spark.driver.extraJavaOptions": " "}
    for key, separator in joined.items():
        if key in conf and key in extra and extra[key] != conf[key]:
            merged[key] = separator.join([conf[key], extra[key]])
    return merged


def verify_formats(spark: SparkSession, formats: tuple[str, ...]) -> None:
    """Fail with a sentence unless every configured format resolves through Spark's data source lookup (public
    API only: a Kafka relation is described without connecting; a Delta reader reports a path that does not exist,
    where a missing format reports itself missing)."""
    problems = []
    for name in formats:
        try:
            if name == "kafka":
                reader = spark.read.format("kafka").option("subscribe", "radar-format-probe")
                reader.option("kafka.bootstrap.servers", "127.0.0.1:9").load().schema  # noqa: B018 - the probe
            else:
                spark.read.format("delta").load(str(Path(spark.conf.get("spark.sql.warehouse.dir")) / "no-such"))
        except Exception as error:  # any answer but "not found" comes from the format's own reader: it resolved
            text = str(error)
            condition = error.getCondition() if isinstance(error, PySparkException) else None
            if condition in FORMAT_NOT_FOUND or any(mark in text for mark in (*FORMAT_NOT_FOUND, "ClassNotFound")):
                problems.append(f"format('{name}') does not resolve")
            elif not isinstance(error, PySparkException):  # a Java error: a class missing inside the connector
                cause = next((line for line in text.splitlines() if "Error" in line or "Exception" in line), text)
                problems.append(f"format('{name}') does not resolve ({cause.strip()[:200]})")
    if problems:
        how = (
            "pass the connector jars to spark-submit with --jars (`radar jars --spark-jars` prints them)"
            if under_spark_submit()
            else "run `radar jars` (or pass --jars-dir with a folder from `radar jars --export`) and start a new "
            "process, because jars are read only when the JVM starts"
        )
        raise SparkSessionError("; ".join(problems) + f". The connector jars are not on this JVM's classpath: {how}.")


def project_archive(cache_dir: Path) -> Path:
    """A zip of radar's own Python packages for `addPyFile`, so a cluster's executors import the driver's code
    (a wheel installed on them is then shadowed by the same code). Written once per content, atomically."""
    files = sorted(
        path
        for package in PROJECT_PACKAGES
        for path in (REPO_ROOT / package).rglob("*")
        if path.suffix in PROJECT_ARCHIVE_SUFFIXES and "__pycache__" not in path.parts
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(REPO_ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    archive = cache_dir / f"rebalance-radar-{digest.hexdigest()[:12]}.zip"
    if archive.is_file():
        return archive
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
        # the installed layout, `rebalance_radar.<package>`; a regular package in the zip (zipimport and a
        # namespace package spread over a zip and site-packages do not mix)
        out.writestr(f"{NAMESPACE}/__init__.py", "")
        for path in files:
            out.write(path, f"{NAMESPACE}/{path.relative_to(REPO_ROOT).as_posix()}")
    os.replace(partial, archive)
    return archive


def running_session() -> SparkSession | None:
    """This process's running session: the thread's active one, else the one the builder made (a thread Spark has
    not run in has no active session while the session runs, and the builder would then apply its options to the
    running session's conf)."""
    try:
        return SparkSession.active()
    except PySparkException:
        return None


_local_runtime_used = False  # the session of this process was built for a local master (`local_runtime`)


def silence_driver_stderr() -> None:
    """From now on, drop what the driver JVM radar started prints (a stopped run's abandoned tasks); nothing to do
    for a JVM radar did not start with a filter (a cluster master's, spark-submit's, Databricks')."""
    if _local_runtime_used:
        from rebalance_radar.pipelines.runtime import local_runtime

        local_runtime.silence_jvm_stderr()


def kill_driver_jvm() -> None:
    """A second Ctrl-C: end radar's own local JVM and its Python workers at once (a cluster's executors are the
    cluster's; the driver JVM of a client-mode session ends with this process)."""
    if _local_runtime_used:
        from rebalance_radar.pipelines.runtime import local_runtime

        local_runtime.kill_jvm()


def build_spark_session(config: RadarConfig, *, quick_start: bool = False) -> SparkSession:
    """The one SparkSession of this process, verified to resolve the configured formats. An existing session
    (Databricks', spark-submit's, or one this process built) is used as it is. Otherwise one is built for
    `spark.master`; `quick_start` (the command is short) is a hint only a local master acts on
    (`pipelines.runtime.local_runtime`)."""
    quiet_python_logging(config.spark.log_level != "ERROR")
    existing = running_session()
    if existing is None and on_databricks():
        existing = SparkSession.builder.getOrCreate()  # the runtime's session, its settings and libraries
    if existing is not None:
        verify_formats(existing, config.spark.connectors)
        return existing
    submitted = under_spark_submit()
    master = config.spark.master
    local = not submitted and is_local_master(master)
    if submitted:  # its JVM runs: its master, its --jars / --packages and its driver options
        conf = {key: value for key, value in session_conf(config, []).items() if not key.startswith(SUBMIT_OWNS)}
        builder = SparkSession.builder.appName(config.spark.app_name)
    else:
        check_master(master)
        with phase("connector jars"):
            conf = session_conf(config, spark_connector_jars(config))
        builder = SparkSession.builder.master(master).appName(config.spark.app_name)
    if local:
        from rebalance_radar.pipelines.runtime import local_runtime

        with phase("local runtime"):
            jars = [Path(jar) for jar in conf["spark.jars"].split(",") if jar]
            local_conf = local_runtime.local_session_conf(config, jars, quick_start=quick_start)
        conf = with_extra_conf(with_local_conf(conf, local_conf), config.spark.extra_conf)
    else:
        conf = with_extra_conf(conf, config.spark.extra_conf)
    # the interpreter of the Python functions pyspark sends to the JVM, read from the environment
    os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    if local:
        with phase("jvm launch"), driver_jvm_environment():
            local_runtime.launch_jvm(config, conf)
        global _local_runtime_used
        _local_runtime_used = True
    for key, value in conf.items():
        builder = builder.config(key, value)
    # a cluster master's driver JVM is launched here, by the builder: its environment is radar's to set
    launches_jvm = not submitted and not local
    with phase("spark session"), driver_jvm_environment() if launches_jvm else contextlib.nullcontext():
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(config.spark.log_level)
    try:
        if not local:
            spark.sparkContext.addPyFile(str(project_archive(default_cache_dir(config).parent / "python")))
        with phase("verify formats"):
            verify_formats(spark, config.spark.connectors)
    except SparkSessionError:
        spark.stop()
        raise
    return spark
