"""The SparkSession per environment: Databricks' own session, or a local one with the resolved connector jars.

Connector jars must be on the JVM classpath when the JVM starts (`spark.jars`), and a session whose Delta
extension is set but whose jar is missing starts anyway with only a WARN, so every session is verified
after creation and fails loudly when a configured format does not resolve.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.class_archive import ClassArchive, class_archive, settle_class_archive
from pipelines.config import RadarConfig
from pipelines.console import JvmStderrFilter, quiet_python_logging, write_log4j2_properties
from pipelines.jvm import default_cache_dir, spark_connector_jars
from pipelines.local_filesystem import LOCAL_FILESYSTEM_CONF, local_filesystem_jar
from pipelines.phases import phase
from pipelines.python_daemon import batches_unchanged, worker_python

ROCKSDB_STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
ALL_FILES_IN_CHECKSUM = "spark.databricks.delta.allFilesInCrc.enabled"
# Classes that must load for a format to really work (the Kafka source also needs the token provider).
FORMAT_CLASSES = {
    "kafka": (
        "org.apache.spark.sql.kafka010.KafkaSourceProvider",
        "org.apache.spark.kafka010.KafkaConfigUpdater",
        "org.apache.kafka.clients.consumer.KafkaConsumer",
    ),
    "delta": ("org.apache.spark.sql.delta.sources.DeltaDataSource", "io.delta.tables.DeltaTable"),
}


class SparkSessionError(RuntimeError):
    """The session cannot serve the pipelines; the message says what to do."""


def on_databricks() -> bool:
    return "DATABRICKS_RUNTIME_VERSION" in os.environ


# A JVM that lives for one short command spends most of its time in cold code: C2 compiler threads then compete
# with the work for the cores (measured on 2 cores: `radar sql` 52-75 s -> 33-35 s under load). A long-running
# JVM (`radar run`, a big replay) keeps the default tiered compilation, whose C2 code is faster in steady state.
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
# Spark compiles a plan's expressions and stages to Java (Janino) the first time it runs them; for a command whose
# input is a few thousand records, compiling is much of its work, so it evaluates them interpreted instead. Measured
# on 2 cores (`radar replay`, fresh data dir): the 42-record sample 18.6-18.9 s against 20.8-23.1 s compiled; a
# 10k-record dump (4 MiB) 22.4 and 19.4 s against 26.7 and 20.7 s; a 50k-record dump (20 MiB) slower, 28.1 and
# 34.6 s against 26.9 and 26.8 s. On the sample's tables, alternating: `radar detections` 6.7, 7.3, 8.0 s against
# 8.1, 8.2, 8.8 s; `radar sql --file queries/groups_rebalancing_most.sql` 10.0, 10.0, 9.0 s against 10.6, 10.5, 9.8 s.
INTERPRETED_CONF = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
INTERPRETED_MAX_INPUT_BYTES = 4 * 1024 * 1024  # a dump of ~10k records, or tables holding that much
LOCAL_CHECKPOINT_FILE_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)
PYTHON_DAEMON_MODULE = "pipelines.python_daemon"
SIMPLIFIED_TRACEBACK = "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled"
CODEGEN_CACHE_ENTRIES = 4000


def codegen_compilations(spark: SparkSession) -> int:
    """Classes Spark's code generator has compiled in this JVM so far (Janino; a cache hit compiles nothing):
    compiling while a run is warm means the cache (`CODEGEN_CACHE_ENTRIES`) lets classes go."""
    return int(spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount())


SOCKET_PATH_MAX_BYTES = 103
"""The longest Unix socket path every platform binds (Linux 107, macOS 103)."""
SPARK_SOCKET_NAME_BYTES = len(".00000000-0000-0000-0000-000000000000.sock")
"""Spark names each socket `.{uuid4}.sock` inside the folder it is given."""


@functools.cache
def python_socket_dir() -> Path | None:
    """This process's folder for the Unix sockets of its Python workers' daemon and its accumulator server, removed
    when the process exits: Spark removes them only on `spark.stop()`, which a radar command does not wait for (one
    file was left in the temp folder per command). None when the temp folder's path is too long for a socket path
    (the session then talks TCP, as Spark does by default: slower per task, nothing else changes)."""
    folder = Path(tempfile.mkdtemp(prefix="radar-py-"))
    if len(os.fsencode(folder)) + 1 + SPARK_SOCKET_NAME_BYTES > SOCKET_PATH_MAX_BYTES:
        folder.rmdir()
        return None
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def local_session_conf(
    config: RadarConfig,
    jars: list[Path],
    *,
    quick_start: bool = False,
    archive: ClassArchive | None = None,
    interpreted: bool = False,
    local_fs_jar: Path | None = None,
    worker_python: str = sys.executable,
) -> dict[str, str]:
    """Everything a local session is started with; small and quiet because it runs on laptops and CI.
    `quick_start`: the JVM serves one short command (`QUICK_START_JAVA_OPTIONS`), mapping or dumping `archive`;
    `interpreted`: its input is tiny (`INTERPRETED_CONF`); `local_fs_jar`: Hadoop's local file system without a
    process per file (`pipelines.local_filesystem`); `worker_python`: what the Python workers run
    (`python_daemon.worker_python`)."""
    data_dir = config.data_dir.expanduser().resolve()
    log_conf = write_log4j2_properties(data_dir / "spark", config.spark.log_level)
    java_options = f"-Dderby.system.home={data_dir / 'derby'} -Dlog4j2.configurationFile=file:{log_conf}"
    if quick_start:
        java_options += f" {QUICK_START_JAVA_OPTIONS}"
        if archive is not None:
            java_options += f" {archive.java_options}"
    conf = {
        "spark.jars": ",".join(str(jar) for jar in jars),
        "spark.sql.shuffle.partitions": str(config.spark.shuffle_partitions),
        "spark.default.parallelism": str(config.spark.shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "false",
        # Delta's VACUUM lists files in a job of this many tasks (default 10,000: minutes on 2 cores for a tiny table)
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(config.spark.shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_STATE_STORE,
        # each micro-batch uploads a changelog of its state changes, not a RocksDB snapshot (every batch of a live
        # detection query uploaded one: ~0.45 s of file sync and zipping); snapshots are made in the background
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # Checkpoint files (offsets and commit logs, the state store's changelogs) through Hadoop's FileSystem
        # rename, not FileContext's: on a local disk the FileContext commit of one small file took ~0.1 s (a
        # trivial stateful query's batch: state commit 227 -> 13 ms, offsets log 34 -> 9 ms, commit log 78 -> 20 ms,
        # the batch 546 -> 295 ms). A POSIX rename is atomic; only this process writes its checkpoints.
        "spark.sql.streaming.checkpointFileManagerClass": LOCAL_CHECKPOINT_FILE_MANAGER,
        "spark.sql.warehouse.dir": str(data_dir / "warehouse"),
        "spark.driver.extraJavaOptions": java_options,
        "spark.driver.memory": config.spark.driver_memory,
        # Python workers run this interpreter, not the first python3 on PATH (which may lack pyarrow).
        "spark.pyspark.python": worker_python,
        "spark.pyspark.driver.python": sys.executable,
        # workers without Spark's zips and jar on their import path: each task re-read them (`python_daemon`)
        "spark.python.daemon.module": PYTHON_DAEMON_MODULE,
        # One daemon for every Python task: Spark keeps a daemon per set of worker environment variables, and sets
        # SPARK_SIMPLIFIED_TRACEBACK for `mapInArrow` tasks but not for `transformWithState`'s, so a session that
        # ran both started a second daemon (its imports again, ~0.6 s of a replay's detection query, then new
        # workers instead of idle ones). Tracebacks of Python tasks then keep pyspark's frames.
        SIMPLIFIED_TRACEBACK: "false",
        # Ctrl-C must end `radar run` within a bound: a query whose micro-batch does not stop is abandoned.
        "spark.sql.streaming.stopTimeout": "30s",
        # Compiled expression classes kept for reuse (Spark's default: 100). A live run's queries (ingest into ten
        # tables, detection, the gold MERGEs, the checks) need more than 100 at once, so every micro-batch evicted
        # what the next one compiled again: 3,236-6,343 Janino compilations per live benchmark run after its
        # warm-up, 14 % of the driver's sampled Java time, against 494-1,074 with this cache (live p95 6.50 s ->
        # 3.76-4.37 s over 300 s runs; benchmarks/README.md).
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
    }
    socket_dir = python_socket_dir()
    if socket_dir is not None:
        # JVM <-> Python workers over Unix sockets, not TCP on loopback: over TCP every task's input reached its
        # Python function ~41 ms late (Nagle's algorithm against delayed ACKs: the worker socket has no
        # TCP_NODELAY). A 1-task `mapInArrow` job 82 -> 59 ms, its input 41 -> 1.1 ms.
        conf["spark.python.unix.domain.socket.enabled"] = "true"
        conf["spark.python.unix.domain.socket.dir"] = str(socket_dir)
    if "delta" in config.spark.connectors:
        conf["spark.sql.extensions"] = DELTA_EXTENSION
        conf["spark.sql.catalog.spark_catalog"] = DELTA_CATALOG
        conf["spark.databricks.delta.snapshotPartitions"] = str(config.spark.shuffle_partitions)
        # Delta 4.4 lists a small table's files in each version's checksum file, which nothing in open-source Delta
        # reads back (`Snapshot.allFiles` is always a state reconstruction): a table's first commit, its CREATE, ran
        # a Spark job to list the files of the empty table before it. Fifteen CREATE TABLEs 4.0-4.5 -> 2.3-2.8 s
        # warm, 10.8-11.3 -> 6.0-6.4 s in a new JVM (benchmarks/README.md, 2026-11-28).
        conf[ALL_FILES_IN_CHECKSUM] = "false"
    if local_fs_jar is not None:
        # on the JVM's own classpath: spark-submit reads local files through Hadoop before it loads `spark.jars`
        conf["spark.driver.extraClassPath"] = str(local_fs_jar)
        conf.update(LOCAL_FILESYSTEM_CONF)
    if interpreted:
        conf.update(INTERPRETED_CONF)
    conf.update(config.spark.extra_conf)
    if local_fs_jar is not None and conf["spark.driver.extraClassPath"] != str(local_fs_jar):
        # a configured class path keeps the classes `fs.file.impl` names, or the JVM would not start
        conf["spark.driver.extraClassPath"] = os.pathsep.join([str(local_fs_jar), conf["spark.driver.extraClassPath"]])
    return conf


def missing_classes(spark: SparkSession, names: tuple[str, ...]) -> list[str]:
    """Class names the driver's class loader (which sees spark.jars) cannot load."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    missing = []
    for name in names:
        try:
            jvm.java.lang.Class.forName(name, False, loader)
        except Exception:
            missing.append(name)
    return missing


def verify_formats(spark: SparkSession, formats: tuple[str, ...]) -> None:
    """Fail loudly unless every configured format resolves through Spark's data source lookup."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    problems = []
    for name in formats:
        missing = missing_classes(spark, FORMAT_CLASSES[name])
        if not missing:
            try:
                jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
                    name, spark._jsparkSession.sessionState().conf()
                )
            except Exception as error:
                missing.append(f"data source lookup failed: {str(error).splitlines()[0][:200]}")
        if missing:
            problems.append(f"format('{name}') does not resolve (missing: {', '.join(missing)})")
    if problems:
        raise SparkSessionError(
            "; ".join(problems) + ". The connector jars are not on this JVM's classpath: run `radar jars` "
            "(or pass --jars-dir with a folder from `radar jars --export`) and start a new process, because "
            "jars are read only when the JVM starts."
        )


def launch_local_jvm(config: RadarConfig, session_conf: dict[str, str]) -> JvmStderrFilter | None:
    """Start the driver JVM as the session would, but (1) in a session of its own, so a terminal's Ctrl-C reaches
    only `radar`, which then stops the queries within a bound, and (2) with its stderr (and stdout) through
    `JvmStderrFilter`, so the transformWithState worker's start-up prints stay off the console. None when a JVM
    already runs here.

    Why (1): PySpark makes the JVM ignore SIGINT, but the Python workers the JVM forks (transformWithState,
    mapInArrow) restore Python's handler: a Ctrl-C sent to the terminal's process group killed them mid-task, and
    the queries failed with Py4J errors and Java stack overflows instead of stopping. The JVM still exits with
    this process: it ends when its stdin pipe from PySpark closes (and `kill_local_jvm` ends it at once)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    spark_conf = SparkConf(loadDefaults=False).setMaster(config.spark.master).setAppName(config.spark.app_name)
    for key, value in session_conf.items():
        spark_conf.set(key, value)
    # stdout into the same pipe: the JVM then holds none of this process's own streams, so a pipe reading `radar`
    # (`| tee`, a script, CI) ends when `radar` exits, not ~0.7 s later, when the JVM has run its shutdown hooks
    # (it runs them once this process is gone); and nothing of the JVM's can mix into a command's stdout.
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
    gateway = launch_gateway(spark_conf, popen_kwargs={**streams, "start_new_session": True})
    SparkContext._ensure_initialized(gateway=gateway)
    global _local_jvm_stderr
    _local_jvm_stderr = JvmStderrFilter(gateway.proc.stdout, os.dup(2)).start()  # to where the JVM's stderr would go
    return _local_jvm_stderr


_local_jvm_stderr: JvmStderrFilter | None = None  # the filter `launch_local_jvm` started, if it did


def silence_local_jvm_stderr() -> None:
    """Drop the local JVM's stderr from now on (it is still drained): once `radar` stops its queries, what the
    abandoned micro-batch's Python workers print (a traceback from a closed socket) is expected noise. Does nothing
    without a JVM of ours."""
    if _local_jvm_stderr is not None:
        _local_jvm_stderr.silence()


def kill_local_jvm() -> None:
    """Kill this process's Spark JVM and the Python workers it forked, at once and without a word: a second
    Ctrl-C quits now, and a JVM left to notice its parent's exit logs every query it loses as an error. Does
    nothing without a local JVM (Databricks' driver is not ours)."""
    import signal

    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is None or process.poll() is not None:
        return
    try:
        if os.getpgid(process.pid) == process.pid:  # started by `launch_local_jvm`
            os.killpg(process.pid, signal.SIGKILL)
        else:
            os.kill(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def quick_start_archive(config: RadarConfig, jars: list[Path]) -> ClassArchive | None:
    """The class-data archive a short command's JVM maps (or dumps, the first time), unless turned off."""
    if not config.spark.class_archive:
        return None
    from pyspark.find_spark_home import _find_spark_home

    archive_dir = config.spark.class_archive_dir or default_cache_dir(config).parent / "class-archives"
    return class_archive(archive_dir, jars, Path(_find_spark_home()))


def _settle_archive_at_exit(archive: ClassArchive) -> None:
    """At exit: end the JVM (its shutdown hook stops Spark), let it write the archive, move that into place."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is not None and process.poll() is None:
        print("radar: saving the JVM's class-data archive once, so later commands start faster ...", file=sys.stderr)
        _quiet_accumulator_server()
    if process is not None:
        settle_class_archive(archive, process)


def _quiet_accumulator_server() -> None:
    """Ending the JVM closes its connection to PySpark's accumulator server, whose handler thread then raises
    EOFError and socketserver prints the traceback (seen on a first `radar replay`). The command is done: stop the
    server and keep that expected end off the console."""
    from pyspark import SparkContext

    server = getattr(SparkContext._active_spark_context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda _request, _address: None
        server.shutdown()


def start_python_workers(spark: SparkSession) -> Future[None]:
    """Start the session's Python worker daemon and a worker now, in a thread of their own (a one-row `mapInArrow`
    job), for a command whose first Python task comes soon (a replay): the daemon's imports (pyarrow, pandas, the
    decoders, the detection; 0.8 s on an idle machine) then pass while the driver starts its queries, instead of
    inside their first task (a sample replay's ingest queries 6.4-7.0 -> 5.6-6.4 s, alternating runs). Nothing
    waits for the future: a cause that fails it fails the command's own first Python task too, which reports it."""
    done: Future[None] = Future()

    def run() -> None:
        done.set_running_or_notify_cancel()
        try:
            spark.range(1, numPartitions=1).mapInArrow(batches_unchanged, "id long").collect()
        except BaseException as error:
            done.set_exception(error)
        else:
            done.set_result(None)

    threading.Thread(target=run, name="radar-python-workers", daemon=True).start()
    return done


def running_session() -> SparkSession | None:
    """This process's running session: the thread's active one, else the one the builder made. A thread Spark has
    not run in (or whose py4j connection was renewed) has no active session while the session runs, and the
    builder would then apply its options to the running session's conf (a tiny command's interpreted mode to
    everything that runs after it)."""
    from pyspark import SparkContext

    active = SparkSession.getActiveSession()
    if active is not None or SparkContext._active_spark_context is None:
        return active
    return SparkSession._instantiatedSession  # what `SparkSession.active()` falls back to; None once stopped


def build_spark_session(
    config: RadarConfig, *, quick_start: bool = False, archive_classes: bool = False, interpreted: bool = False
) -> SparkSession:
    """The one SparkSession of this process, verified to resolve the configured formats. `quick_start`: the
    process runs one short command, so a new local JVM is tuned to start fast (see `QUICK_START_JAVA_OPTIONS`);
    `archive_classes`: it also maps a class-data archive (`pipelines.class_archive`), for commands whose time is
    mostly the JVM's cold start (`radar sql`, `radar detections`, a short `radar replay`: 22.5 s -> 18.9 s on a
    quiet machine, its own archive, as its JVM loads the Kafka connector and streaming classes too);
    `interpreted`: the command's input is tiny, its plans are not compiled (`INTERPRETED_CONF`).
    An existing session is used as it is."""
    quiet_python_logging(config.spark.log_level != "ERROR")
    if on_databricks():
        spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        verify_formats(spark, config.spark.connectors)
        return spark
    with phase("connector jars"):
        jars = spark_connector_jars(config)
    existing = running_session()
    if existing is not None:
        # a session that resolves the formats serves (e.g. a delta-only command inside a process whose session was
        # started with every connector, from another cache folder); one without our jars is told so
        try:
            verify_formats(existing, config.spark.connectors)
        except SparkSessionError:
            loaded = set(existing.sparkContext.getConf().get("spark.jars", "").split(","))
            if not {str(jar) for jar in jars} <= loaded:
                raise SparkSessionError(
                    "A SparkSession already runs in this process without the connector jars, and jars are read "
                    "only at JVM start; stop it (spark.stop()) or build the session with build_spark_session first."
                ) from None
            raise
        return existing
    # PySpark hands PYSPARK_PYTHON (default: python3 on PATH) to every Python process Spark starts: this
    # interpreter, through a launcher that leaves Spark's archives off their import path where it can
    worker = worker_python(default_cache_dir(config).parent / "python-launchers")
    os.environ["PYSPARK_PYTHON"] = worker
    with phase("local file system jar"):  # only a new JVM takes it
        local_fs_jar = local_filesystem_jar(default_cache_dir(config))
    classpath = [*jars, local_fs_jar] if local_fs_jar is not None else jars
    archive = quick_start_archive(config, classpath) if quick_start and archive_classes else None
    session_conf = local_session_conf(
        config,
        jars,
        quick_start=quick_start,
        archive=archive,
        interpreted=interpreted,
        local_fs_jar=local_fs_jar,
        worker_python=worker,
    )
    with phase("jvm launch"):
        launched = launch_local_jvm(config, session_conf) is not None
    if launched and archive is not None and archive.pending is not None:
        atexit.register(_settle_archive_at_exit, archive)
    builder = SparkSession.builder.master(config.spark.master).appName(config.spark.app_name)
    for key, value in session_conf.items():
        builder = builder.config(key, value)
    with phase("spark session"):
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(config.spark.log_level)
    try:
        with phase("verify formats"):
            verify_formats(spark, config.spark.connectors)
    except SparkSessionError:
        spark.stop()
        raise
    return spark
