"""What only a local master needs (`spark.master: local[N]`): the driver JVM started in a session of its own, and the
start-up tuning of a laptop's few cores. Nothing here runs for a cluster master, spark-submit or Databricks
(`pipelines.session` decides), and this is the only module that uses PySpark's private API.

Each tuning piece can be turned off (`spark.local_tuning`), and stays only while turning it off costs at least 10 % of
what a user waits for: a replay of the sample (`benchmarks/local_tuning.py`) or live detection's p95
(`benchmarks/detect.py --live`); benchmarks/README.md has the numbers:

- `worker_daemon`: Spark's Python workers start from a daemon that imports radar's worker modules once, without
  Spark's archives on their import path (a launcher script does the same for the workers Spark starts without it);
- `shell_free_fs`: Hadoop's local file system without a `chmod` process per file (classes compiled once with javac);
- `quick_start`: a short command's JVM compiles with C1 only;
- `unix_sockets`: the JVM talks to its Python workers over Unix sockets, not loopback TCP;
- `checkpoint_rename`: checkpoint files are committed by Hadoop's FileSystem rename, not FileContext's.

The daemon itself is this module run as `python -m pipelines.local_runtime` (`spark.python.daemon.module`): only the
standard library is imported at module level, so the archives are dropped before pyspark is first imported.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.config import RadarConfig

# A JVM that lives for one short command spends most of its time in cold code: C2 compiler threads then compete
# with the work for the cores. A long-running JVM (`radar run`, a big replay) keeps the default tiered compilation,
# whose C2 code is faster in steady state.
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
# Checkpoint files through Hadoop's FileSystem rename, not FileContext's: on a local disk the FileContext commit of
# one small file costs a live micro-batch noticeably. A POSIX rename is atomic, and only this process writes its
# checkpoints.
CHECKPOINT_FILE_MANAGER = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
DAEMON_MODULE = "pipelines.local_runtime"
# One daemon for every Python task: Spark keeps a daemon per set of worker environment variables, and sets
# SPARK_SIMPLIFIED_TRACEBACK for `mapInArrow` tasks but not for `transformWithState`'s.
SIMPLIFIED_TRACEBACK = "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled"


def local_session_conf(config: RadarConfig, *, quick_start: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """The Spark settings and the environment (PYSPARK_PYTHON) a local session adds to the generic ones, per the
    pieces `spark.local_tuning` leaves on. `quick_start`: the JVM serves one short command."""
    tuning = config.spark.local_tuning
    cache_dir = _cache_dir(config)
    conf: dict[str, str] = {}
    env: dict[str, str] = {}
    if tuning.worker_daemon:
        worker = worker_python(cache_dir.parent / "python-launchers")
        env["PYSPARK_PYTHON"] = worker
        conf["spark.pyspark.python"] = worker
        conf["spark.python.daemon.module"] = DAEMON_MODULE
        conf[SIMPLIFIED_TRACEBACK] = "false"
    socket_dir = python_socket_dir() if tuning.unix_sockets else None
    if socket_dir is not None:
        # over loopback TCP every task's input reached its Python function late (Nagle against delayed ACKs)
        conf["spark.python.unix.domain.socket.enabled"] = "true"
        conf["spark.python.unix.domain.socket.dir"] = str(socket_dir)
    if tuning.checkpoint_rename:
        conf["spark.sql.streaming.checkpointFileManagerClass"] = CHECKPOINT_FILE_MANAGER
    if quick_start and tuning.quick_start:
        conf["spark.driver.extraJavaOptions"] = QUICK_START_JAVA_OPTIONS
    fs_jar = local_filesystem_jar(cache_dir) if tuning.shell_free_fs else None
    if fs_jar is not None:
        # on the JVM's own classpath: spark-submit reads local files through Hadoop before it loads `spark.jars`
        conf["spark.driver.extraClassPath"] = str(fs_jar)
        conf.update(LOCAL_FILESYSTEM_CONF)
    return conf, env


def _cache_dir(config: RadarConfig) -> Path:
    from pipelines.jvm import default_cache_dir

    return default_cache_dir(config)


def launch_jvm(config: RadarConfig, session_conf: dict[str, str]) -> JvmStderrFilter | None:
    """Start the driver JVM as the session would, but (1) in a session of its own, so a terminal's Ctrl-C reaches
    only `radar`, which then stops the queries within a bound, and (2) with its stderr (and stdout) through
    `JvmStderrFilter`, so the transformWithState worker's start-up prints stay off the console. None when a JVM
    already runs here.

    Why (1): PySpark makes the JVM ignore SIGINT, but the Python workers the JVM forks (transformWithState,
    mapInArrow) restore Python's handler: a Ctrl-C sent to the terminal's process group killed them mid-task, and
    the queries failed with Py4J errors and Java stack overflows instead of stopping. The JVM still exits with
    this process: it ends when its stdin pipe from PySpark closes (and `kill_jvm` ends it at once).
    Why the stdout too: a JVM holding `radar`'s stdout kept a pipe reading `radar` open while it ran its shutdown
    hooks, and nothing of the JVM's may mix into a command's stdout."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    spark_conf = SparkConf(loadDefaults=False).setMaster(config.spark.master).setAppName(config.spark.app_name)
    for key, value in session_conf.items():
        spark_conf.set(key, value)
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
    gateway = launch_gateway(spark_conf, popen_kwargs={**streams, "start_new_session": True})
    SparkContext._ensure_initialized(gateway=gateway)
    global _jvm_stderr
    _jvm_stderr = JvmStderrFilter(gateway.proc.stdout, os.dup(2)).start()  # to where the JVM's stderr would go
    return _jvm_stderr


_jvm_stderr: JvmStderrFilter | None = None  # the filter `launch_jvm` started, if it did


def silence_jvm_stderr() -> None:
    """Drop the local JVM's stderr from now on (it is still drained): once `radar` stops its queries, what the
    abandoned micro-batch's Python workers print (a traceback from a closed socket) is expected noise. Does nothing
    without a JVM of ours."""
    if _jvm_stderr is not None:
        _jvm_stderr.silence()


def kill_jvm() -> None:
    """Kill this process's local Spark JVM and the Python workers it forked, at once and without a word: a second
    Ctrl-C quits now. Does nothing without a local JVM of ours (a cluster's driver JVM under spark-submit, or
    Databricks', is not radar's to kill)."""
    import signal

    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        if os.getpgid(process.pid) == process.pid:  # started by `launch_jvm`
            os.killpg(process.pid, signal.SIGKILL)


def codegen_compilations(spark: SparkSession) -> int:
    """Classes Spark's code generator has compiled in this (local) JVM so far: compiling while a run is warm means
    the cache (`session.CODEGEN_CACHE_ENTRIES`) lets classes go. For tests and benchmarks of a local session."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return int(jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount())


# --- unix_sockets ---------------------------------------------------------------------------------------------

SOCKET_PATH_MAX_BYTES = 103
"""The longest Unix socket path every platform binds (Linux 107, macOS 103)."""
SPARK_SOCKET_NAME_BYTES = len(".00000000-0000-0000-0000-000000000000.sock")
"""Spark names each socket `.{uuid4}.sock` inside the folder it is given."""


@functools.cache
def python_socket_dir() -> Path | None:
    """This process's folder for the Unix sockets of its Python workers' daemon and its accumulator server, removed
    when the process exits (Spark removes them only on `spark.stop()`, which a radar command does not wait for).
    None when the temp folder's path is too long for a socket path (the session then talks TCP)."""
    folder = Path(tempfile.mkdtemp(prefix="radar-py-"))
    if len(os.fsencode(folder)) + 1 + SPARK_SOCKET_NAME_BYTES > SOCKET_PATH_MAX_BYTES:
        folder.rmdir()
        return None
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


# --- the JVM's stderr ------------------------------------------------------------------------------------------

TWS_WORKER_CHATTER = (
    b"Starting Streaming TransformWithStateInPandas Python worker.",
    b"Streaming TransformWithStateInPandas Python worker ",
)
"""What pyspark's transformWithState driver worker prints to stdout on every query start (its UDF, the state server
port, the key schema), which the JVM copies verbatim onto its stderr: start-up noise, never an error (its errors
reach the driver as exceptions)."""


def is_worker_chatter(line: bytes) -> bool:
    return line.lstrip().startswith(TWS_WORKER_CHATTER)


class JvmStderrFilter:
    """Copies the driver JVM's stderr (and its stdout, in the same pipe) to this process's stderr, line by line, minus
    the transformWithState worker's start-up prints (and the blank line each print ends with). Everything else
    passes unchanged: log4j output at the configured level, errors, stack traces."""

    def __init__(self, source: Any, target_fd: int) -> None:
        self._source = source
        self._target_fd = target_fd
        self.dropped = 0
        self._silenced = threading.Event()
        self._thread = threading.Thread(target=self._pump, name="radar-jvm-stderr", daemon=True)

    def start(self) -> JvmStderrFilter:
        self._thread.start()
        return self

    def silence(self) -> None:
        """Drop every line from now on, still draining the pipe (a JVM whose stderr fills up blocks)."""
        self._silenced.set()

    def _pump(self) -> None:
        skip_blank = False
        for line in iter(self._source.readline, b""):
            if self._silenced.is_set() or is_worker_chatter(line):
                self.dropped += 1
                skip_blank = True
                continue
            if skip_blank and not line.strip():
                skip_blank = False
                continue
            skip_blank = False
            with contextlib.suppress(OSError):  # our stderr is gone: keep draining, the JVM must never block
                os.write(self._target_fd, line)


# --- worker_daemon -------------------------------------------------------------------------------------------

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
            "# rebalance-radar (pipelines/local_runtime.py): Spark's Python workers without Spark's archives",
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
    "pandas",  # pyarrow imports it at a worker's first `pa.array` of a Python list, in every new worker
    "transforms.offsets_batch",
    "transforms.telemetry.batch",
    "pipelines.detect",
)
"""What the workers of a radar session import for their tasks (the decode, the telemetry parse, the detection
operator, whose pickled processor names `pipelines.detect`). Imported once by the daemon, before it forks a worker
per task slot: each worker starts with them in memory instead of importing them again."""


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
    full collection walks every object the worker holds, nearly all of them the modules imported above. In the
    workers of a warm session running 1-task jobs, that was most of their CPU time (benchmarks/README.md). Frozen
    before the fork (`gc.freeze`, Python's own advice for
    forking servers), they are never walked; what a task allocates is collected as before."""
    import gc

    gc.collect()  # what is garbage now is freed, not frozen
    gc.freeze()


# --- shell_free_fs: Hadoop's local file system without a process per file ----------------------------------------
# pip's pyspark ships no Hadoop native library, so Hadoop 3.4 sets the permission of every file it creates on a local
# disk by starting `chmod`, and reads a path's link status on each rename by starting `readlink`: hundreds
# in a replay of the sample. The classes in `pipelines/java/` do both through java.nio; they are compiled once, with
# the JDK's `javac`, into the jar cache, against the Hadoop jar pyspark ships.

SOURCES_DIR = Path(__file__).resolve().parent / "java"
JAR_PREFIX = "radar-local-fs-"
# Hadoop's local file system for FileSystem (Parquet files, streaming checkpoints) and for FileContext (Delta's log).
LOCAL_FILESYSTEM_CONF = {
    "spark.hadoop.fs.file.impl": "radar.hadoop.ShellFreeLocalFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "radar.hadoop.ShellFreeLocalFs",
}
JAVA_RELEASE = "17"  # Spark 4's minimum


def java_sources() -> list[Path]:
    return sorted(SOURCES_DIR.rglob("*.java"))


def hadoop_api_jar() -> Path | None:
    """The Hadoop API jar pyspark ships (what the classes compile against), if this pyspark has one."""
    from pipelines.jvm import pyspark_jars_dir

    found = sorted(pyspark_jars_dir().glob("hadoop-client-api-*.jar"))
    return found[-1] if found else None


def jar_key(sources: list[Path], hadoop_jar: Path) -> str:
    """The jar's name follows its sources and the Hadoop jar they compile against."""
    digest = hashlib.sha256(hadoop_jar.name.encode())
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:12]


def javac() -> str | None:
    """The JDK's compiler: beside the `java` Spark starts (JAVA_HOME), else on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def local_filesystem_jar(cache_dir: Path) -> Path | None:
    """The compiled classes' jar in `cache_dir`, built the first time. None where it cannot be built (no `javac`: a
    JRE only; a pyspark without Hadoop's jar); Hadoop's own local file system then serves, as it always did, and
    the first command says so once (a marker file beside where the jar would be)."""
    sources, hadoop_jar = java_sources(), hadoop_api_jar()
    if not sources or hadoop_jar is None:
        return None
    jar = cache_dir / f"{JAR_PREFIX}{jar_key(sources, hadoop_jar)}.jar"
    if jar.is_file():
        return jar
    compiler = javac()
    error = None
    if compiler is None:
        error = "no javac (the JDK's compiler) was found"
    else:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="radar-javac-") as work:
            classes = Path(work) / "classes"
            done = subprocess.run(
                [compiler, "--release", JAVA_RELEASE, "-nowarn", "-cp", str(hadoop_jar), "-d", str(classes)]
                + [str(s) for s in sources],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                first_line = next(iter((done.stderr or done.stdout).strip().splitlines()), "no output")
                error = f"javac failed ({first_line})"
            else:
                partial = jar.with_name(f"{jar.name}.{os.getpid()}.partial")  # same folder: a rename, not a copy
                with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
                    for path in sorted(classes.rglob("*.class")):
                        archive.write(path, path.relative_to(classes).as_posix())
                os.replace(partial, jar)  # only ever complete under its final name
                return jar
    marker = jar.with_suffix(".unavailable")
    if not marker.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text(error + "\n")
        print(
            f"radar: {error}, so Hadoop writes local files as it does by default, starting a `chmod` process per "
            "file (slower). Install a JDK (javac) for faster local runs.",
            file=sys.stderr,
        )
    return None


if __name__ == "__main__":
    if archives_are_redundant():
        drop_archives_from_import_path()
    import_worker_modules()
    from pyspark.daemon import manager  # imports the worker's own modules (`pyspark.worker`) too

    freeze_imported_objects()
    manager()
