"""What only a local master needs (`spark.master: local[N]`): the driver JVM started in a session of its own, and the
start-up tuning of a laptop's few cores. Nothing here runs for a cluster master, spark-submit or Databricks
(`pipelines.runtime.session` decides), and this is the only module that uses PySpark's private API.

Each tuning piece can be turned off (`spark.local_tuning`), and stays only while turning it off costs at least 10 % of
what a user waits for: a replay of the sample (`benchmarks/local_tuning.py`) or live detection's p95
(`benchmarks/detect.py --live`); their results in `benchmarks/results/` have the numbers:

- `worker_daemon`: Spark's Python workers start from a daemon that imports radar's worker modules once (without
  Spark's archives on their path, as every Python process of a JVM radar launches: `pipelines.runtime.python_startup`);
- `shell_free_fs`: Hadoop's local file system without a `chmod` process per file (classes compiled once with javac);
- `quick_start`: a short command's JVM compiles with C1 only;
- `class_archive`: a short command's JVM maps a class-data archive of its classpath (dumped by the first one);
- `unix_sockets`: the JVM talks to its Python workers over Unix sockets, not loopback TCP;
- `checkpoint_rename`: checkpoint files are committed by Hadoop's FileSystem rename, not FileContext's.

The daemon itself is this module run as `python -m rebalance_radar.pipelines.runtime.local_runtime`
(`spark.python.daemon.module`): only the standard library is imported at module level.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from rebalance_radar.pipelines.config import RadarConfig

# A JVM that lives for one short command spends most of its time in cold code: C2 compiler threads then compete
# with the work for the cores. A long-running JVM (`radar run`, a big replay) keeps the default tiered compilation,
# whose C2 code is faster in steady state. Stopping at C1 also shrinks the default code cache to 48 MB, which a
# replay that MERGEs (another writer on the data dir) on a loaded machine filled: "Out of space in CodeCache for
# adapters" failed its query. The tiered default, 240 MB, is kept.
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
# Checkpoint files through Hadoop's FileSystem rename, not FileContext's: on a local disk the FileContext commit of
# one small file costs a live micro-batch noticeably. A POSIX rename is atomic, and only this process writes its
# checkpoints.
CHECKPOINT_FILE_MANAGER = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
DAEMON_MODULE = "rebalance_radar.pipelines.runtime.local_runtime"
# One daemon for every Python task: Spark keeps a daemon per set of worker environment variables, and sets
# SPARK_SIMPLIFIED_TRACEBACK for `mapInArrow` tasks but not for `transformWithState`'s.
SIMPLIFIED_TRACEBACK = "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled"


def local_session_conf(config: RadarConfig, jars: Sequence[Path] = (), *, quick_start: bool = False) -> dict[str, str]:
    """The Spark settings a local session adds to the generic ones, per the pieces `spark.local_tuning` leaves on.
    `quick_start`: the JVM serves one short command (it maps the class-data archive of its classpath, `jars` and the
    local file system's, or dumps it at exit)."""
    tuning = config.spark.local_tuning
    cache_dir = _cache_dir(config)
    conf: dict[str, str] = {}
    if tuning.worker_daemon:
        conf["spark.python.daemon.module"] = DAEMON_MODULE
        conf[SIMPLIFIED_TRACEBACK] = "false"
    socket_dir = python_socket_dir() if tuning.unix_sockets else None
    if socket_dir is not None:
        # over loopback TCP every task's input reached its Python function late (Nagle against delayed ACKs)
        conf["spark.python.unix.domain.socket.enabled"] = "true"
        conf["spark.python.unix.domain.socket.dir"] = str(socket_dir)
    if tuning.checkpoint_rename:
        conf["spark.sql.streaming.checkpointFileManagerClass"] = CHECKPOINT_FILE_MANAGER
    fs_jar = local_filesystem_jar(cache_dir) if tuning.shell_free_fs else None
    if fs_jar is not None:
        # on the JVM's own classpath: spark-submit reads local files through Hadoop before it loads `spark.jars`
        conf["spark.driver.extraClassPath"] = str(fs_jar)
        conf.update(LOCAL_FILESYSTEM_CONF)
    java_options = []
    if quick_start and tuning.quick_start:
        java_options.append(QUICK_START_JAVA_OPTIONS)
    global _archive
    _archive = quick_start_archive(config, [*jars, *([fs_jar] if fs_jar else [])]) if quick_start else None
    if _archive is not None:
        java_options.append(_archive.java_options)
    if java_options:
        conf["spark.driver.extraJavaOptions"] = " ".join(java_options)
    return conf


_archive: ClassArchive | None = None  # the class-data archive of the session `local_session_conf` set up


def _cache_dir(config: RadarConfig) -> Path:
    from rebalance_radar.pipelines.runtime.jvm import default_cache_dir

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
    if _archive is not None and _archive.pending is not None:
        atexit.register(settle_archive_at_exit, _archive)
    atexit.register(_quiet_accumulator_server)  # the JVM ends with this process: its hang-up is no error
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


JVM_START_NOTICES = (b"WARNING: Using incubator modules:",)
"""What the JVM itself prints when it starts with Spark's options (the Vector API module Spark enables): a notice,
never an error."""


def is_worker_chatter(line: bytes) -> bool:
    return line.lstrip().startswith(TWS_WORKER_CHATTER) or line.startswith(JVM_START_NOTICES)


HUNG_UP = (b"BrokenPipeError", b"ConnectionResetError", b"EOFError")
"""How a Python worker or the worker daemon ends when the JVM closed its socket first (a query stopped, a task
cancelled, the command over): expected, never an error of radar's, and each one a traceback on the console."""
CHAINED = (b"During handling of the above exception", b"The above exception was the direct cause")
HELD_TRACEBACK_LINES = 400  # a traceback longer than this is shown, whatever it ends with


STOPPED_THREAD_EXCEPTIONS = (b"java.nio.channels.ClosedByInterruptException", b"java.lang.InterruptedException")
"""How a JVM thread that waits on a socket or a queue ends when a stop interrupts it (Spark's transformWithState
state server's listener, at every query stop): the JVM prints `Exception in thread "..." <this>` and its stack,
which says nothing but that the query stopped."""


def stopped_thread_exception(line: bytes) -> bool:
    """The first line of a JVM thread's uncaught exception that is only its stop (`STOPPED_THREAD_EXCEPTIONS`)."""
    if not line.startswith(b"Exception in thread "):
        return False
    return line.rsplit(b'" ', 1)[-1].strip().split(b":", 1)[0] in STOPPED_THREAD_EXCEPTIONS


def java_stack_line(line: bytes) -> bool:
    """A line of a Java stack trace after its first: a frame, `... N more`, or a cause."""
    return line.startswith((b"\tat ", b"\t... ", b"Caused by: ", b"\tSuppressed: ", b"\t\tat "))


def exception_line(line: bytes) -> bool:
    """The last line of a Python traceback: `Name: message` or `Name`, unindented."""
    head = line.split(b":", 1)[0].strip()
    return bool(head) and not line[:1].isspace() and head.replace(b".", b"").replace(b"_", b"").isalnum()


class JvmStderrFilter:
    """Copies the driver JVM's stderr (and its stdout, in the same pipe) to this process's stderr, line by line, minus
    the transformWithState worker's start-up prints (and the blank line each print ends with), and minus the Python
    tracebacks that end in a hung-up connection (`HUNG_UP`: a worker whose JVM side went away; two of them may
    interleave). Everything else passes unchanged: log4j output at the configured level, errors, stack traces,
    any other traceback."""

    def __init__(self, source: Any, target_fd: int) -> None:
        self._source = source
        self._target_fd = target_fd
        self.dropped = 0
        self._silenced = threading.Event()
        self._thread = threading.Thread(target=self._pump, name="radar-jvm-stderr", daemon=True)
        self._held: list[bytes] = []  # the lines of the tracebacks being read
        self._open = 0  # tracebacks begun and not ended
        self._endings: list[bytes] = []
        self._after_dropped = False

    def _write(self, line: bytes) -> None:
        with contextlib.suppress(OSError):  # our stderr is gone: keep draining, the JVM must never block
            os.write(self._target_fd, line)

    def _traceback(self, line: bytes) -> bool:
        """Whether `line` belongs to a traceback being held (and is dealt with here)."""
        if line.startswith(b"Traceback (most recent call last):"):
            self._open += 1
        elif not self._open:
            return False
        self._held.append(line)
        if self._open and line.strip() and exception_line(line) and not line.startswith(b"Traceback"):
            self._endings.append(line)
            self._open -= 1
        if self._open and len(self._held) < HELD_TRACEBACK_LINES:
            return True
        if self._endings and all(ending.startswith(HUNG_UP) for ending in self._endings) and not self._open:
            self.dropped += len(self._held)
            self._keep(self._held)
            self._after_dropped = True  # its chained exceptions' joining lines go too
        else:
            for held in self._held:
                self._write(held)
        self._held, self._open, self._endings = [], 0, []
        return True

    def _joins_dropped(self, line: bytes) -> bool:
        """A blank line or a chained exception's heading right after a dropped traceback."""
        if self._after_dropped and (not line.strip() or line.startswith(CHAINED)):
            self.dropped += 1
            self._keep([line])
            return True
        self._after_dropped = False
        return False

    @staticmethod
    def _keep(lines: list[bytes]) -> None:
        """What is not shown is kept in the command's log of library messages (`console.LibraryLog`)."""
        from rebalance_radar.pipelines.runtime.console import library_log

        log = library_log()
        if log is not None and lines:
            log.write("spark", b"".join(lines).decode("utf-8", errors="replace").rstrip("\n"))

    def start(self) -> JvmStderrFilter:
        self._thread.start()
        return self

    def silence(self) -> None:
        """Drop every line from now on, still draining the pipe (a JVM whose stderr fills up blocks)."""
        self._silenced.set()

    def _pump(self) -> None:
        skip_blank = False
        in_stopped_thread = False
        for line in iter(self._source.readline, b""):
            in_stopped_thread = stopped_thread_exception(line) or (in_stopped_thread and java_stack_line(line))
            if self._silenced.is_set() or is_worker_chatter(line) or in_stopped_thread:
                self.dropped += 1
                self._keep([line])
                skip_blank = True
                continue
            if skip_blank and not line.strip():
                skip_blank = False
                continue
            skip_blank = False
            if not self._traceback(line) and not self._joins_dropped(line):
                self._write(line)
        for held in self._held:  # the pipe ended inside a traceback: show what there is
            self._write(held)


# --- worker_daemon -------------------------------------------------------------------------------------------

WORKER_MODULES = (
    "pyarrow",
    "pyarrow.compute",
    "pandas",  # pyarrow imports it at a worker's first `pa.array` of a Python list, in every new worker
    "rebalance_radar.transforms.offsets_batch",
    "rebalance_radar.transforms.telemetry.batch",
    "rebalance_radar.pipelines.stages.detect",
)
"""What the workers of a radar session import for their tasks (the decode, the telemetry parse, the detection
operator, whose pickled processor names `pipelines.stages.detect`). Imported once by the daemon, before it forks a
worker per task slot: each worker starts with them in memory instead of importing them again."""


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
    workers of a warm session running 1-task jobs, that was most of their CPU time (the benchmarks' journal,
    `benchmarks/results/`). Frozen before the fork (`gc.freeze`, Python's own
    advice for forking servers), they are never walked; what a task allocates is collected as before."""
    import gc

    gc.collect()  # what is garbage now is freed, not frozen
    gc.freeze()


# --- shell_free_fs: Hadoop's local file system without a process per file ----------------------------------------
# pip's pyspark ships no Hadoop native library, so Hadoop 3.4 sets the permission of every file it creates on a local
# disk by starting `chmod`, and reads a path's link status on each rename by starting `readlink`: hundreds
# in a replay of the sample. The classes in `pipelines/runtime/java/` do both through java.nio; they are compiled once,
# with the JDK's `javac`, into the jar cache, against the Hadoop jar pyspark ships.

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
    from rebalance_radar.pipelines.runtime.jvm import pyspark_jars_dir

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


# --- class_archive: the class-data archive (Java's AppCDS) of a short command's JVM --------------------------------
# Classes a previous command loaded are mapped from one file instead of being read, verified and parsed again, which
# is much of a cold Spark start. The archive belongs to one Java installation and one classpath (the key hashes both).
# The first such command with no archive for its key dumps one when its JVM exits (`-XX:ArchiveClassesAtExit`, into a
# file named after this process), waits for that exit and renames the file into place; only a complete archive is
# ever under the final name (a truncated one makes the JVM that maps it crash). A clean exit without a dump leaves a
# marker, and no archive is tried again for the key; a JVM killed by Ctrl-C leaves nothing, and the next command
# tries again.

ARCHIVE_SUFFIX = ".jsa"
FAILED_SUFFIX = ".failed"
KEPT_ARCHIVES = 4  # a few classpaths (delta only for sql, every connector for a replay); older ones are removed
DUMP_WAIT_S = 180.0
STALE_DUMP_S = 3600.0
# Java's own notes about classes it cannot archive (signed jars, old class versions) are not for users.
QUIET_CDS_LOGGING = "-Xlog:cds*=off"


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one Java + classpath: mapped when it exists, else dumped by this process's JVM at exit."""

    path: Path
    pending: Path | None  # where this JVM dumps, when there is no archive yet

    @property
    def java_options(self) -> str:
        from rebalance_radar.pipelines.runtime.session import java_option

        if self.pending is None:
            return f"{java_option('-XX:SharedArchiveFile=', self.path)} {QUIET_CDS_LOGGING}"
        return f"{java_option('-XX:ArchiveClassesAtExit=', self.pending)} {QUIET_CDS_LOGGING}"


def java_identity() -> str:
    """What the Spark launcher will run: `$JAVA_HOME/bin/java`, else `java` on the PATH, with its size and time."""
    java_home = os.environ.get("JAVA_HOME")
    found = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not found or not Path(found).exists():
        return "java: not found"
    real = Path(found).resolve()
    stat = real.stat()
    return f"{real}:{stat.st_size}:{stat.st_mtime_ns}"


def archive_key(jars: Sequence[Path], spark_home: Path) -> str:
    """A hash of the Java installation, Spark's own jars and the connector jars (names and sizes, in order)."""
    digest = hashlib.sha256(java_identity().encode())
    for jar in [*sorted((spark_home / "jars").glob("*.jar")), *jars]:
        size = jar.stat().st_size if jar.exists() else -1
        digest.update(f"\n{jar.name}:{size}".encode())
    return digest.hexdigest()[:24]


def class_archive(archive_dir: Path, jars: Sequence[Path], spark_home: Path) -> ClassArchive | None:
    """The archive to map or to dump for this classpath; None when a dump for it failed before."""
    key = archive_key(jars, spark_home)
    path = archive_dir / f"{key}{ARCHIVE_SUFFIX}"
    if path.is_file():
        return ClassArchive(path, None)
    if (archive_dir / f"{key}{FAILED_SUFFIX}").exists():
        return None
    archive_dir.mkdir(parents=True, exist_ok=True)
    return ClassArchive(path, archive_dir / f"{key}.{os.getpid()}.dumping")


def settle_class_archive(archive: ClassArchive, jvm: subprocess.Popen[bytes], wait_s: float = DUMP_WAIT_S) -> bool:
    """After the command: end the JVM (its stdin closes, as at this process's exit), wait while it writes the
    archive, and move a complete archive into place. True when an archive now exists for the key."""
    if archive.pending is None:
        return True
    if jvm.stdin is not None and not jvm.stdin.closed:
        jvm.stdin.close()  # the gateway's JVM exits with code 0 when its stdin closes
    try:
        code = jvm.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        code = None
    dumped = archive.pending.is_file() and archive.pending.stat().st_size > 0
    if code == 0 and dumped:
        os.replace(archive.pending, archive.path)  # atomic: never a partial file under the final name
        _remove_old_files(archive.path.parent)
        return True
    if code == 0:  # a clean exit without an archive: this Java cannot dump one, do not pay for another attempt
        archive.path.with_suffix(FAILED_SUFFIX).touch()
    archive.pending.unlink(missing_ok=True)  # killed (Ctrl-C) or still running: the next command tries again
    return False


def _remove_old_files(archive_dir: Path) -> None:
    """Keep the newest `KEPT_ARCHIVES` archives; drop dumps left by processes that were killed an hour ago or more."""
    archives = sorted(archive_dir.glob(f"*{ARCHIVE_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[KEPT_ARCHIVES:]:
        old.unlink(missing_ok=True)
    for left in archive_dir.glob("*.dumping"):
        if time.time() - left.stat().st_mtime > STALE_DUMP_S:
            left.unlink(missing_ok=True)


def quick_start_archive(config: RadarConfig, classpath: Sequence[Path]) -> ClassArchive | None:
    """The class-data archive a short command's JVM maps (or dumps, the first time), unless turned off."""
    if not config.spark.local_tuning.class_archive:
        return None
    from pyspark.find_spark_home import _find_spark_home

    archive_dir = config.spark.class_archive_dir or _cache_dir(config).parent / "class-archives"
    return class_archive(archive_dir, classpath, Path(_find_spark_home()))


def settle_archive_at_exit(archive: ClassArchive) -> None:
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


# --- quiet_hang_ups: workers that are shutting down say nothing -------------------------------------------------

HUNG_UP_ERRORS: tuple[type[BaseException], ...] = (BrokenPipeError, ConnectionResetError, EOFError)
"""What a worker meets when the JVM closed its socket first (`HUNG_UP`, as exceptions)."""


class QuietHangUps:
    """`pyspark.daemon`'s `traceback` module, minus the tracebacks of a worker whose JVM side hung up: the daemon's
    forked child prints `traceback.print_exc()` for any exception of its worker loop, and at the end of a command
    every worker still connected ends in BrokenPipeError (two of them interleaved at the end of a healthy demo).
    Any other exception is printed as before."""

    def __getattr__(self, name: str) -> Any:
        import traceback

        return getattr(traceback, name)

    @staticmethod
    def print_exc(*args: Any, **kwargs: Any) -> None:
        import traceback

        if isinstance(sys.exc_info()[1], HUNG_UP_ERRORS):
            return
        traceback.print_exc(*args, **kwargs)


def quiet_worker(worker: Callable[..., int]) -> Callable[..., int]:
    """`pyspark.daemon.worker`, ending quietly (a failed worker's code, 1: the daemon's child then exits) when the
    JVM hung up on it, instead of a traceback on the console."""

    def run(*args: Any) -> int:
        try:
            return worker(*args)
        except HUNG_UP_ERRORS:
            return 1

    return run


def quiet_hang_ups() -> None:
    """In the daemon, before it forks: hung-up workers end without a word (`QuietHangUps`, `quiet_worker`); a
    failed flush to the JVM raises (and so ends quietly) instead of printing its traceback."""
    import pyspark.daemon

    os.environ["PYTHON_DAEMON_KILL_WORKER_ON_FLUSH_FAILURE"] = "1"  # pyspark.daemon.worker: raise, do not print
    pyspark.daemon.traceback = QuietHangUps()  # type: ignore[assignment]
    pyspark.daemon.worker = quiet_worker(pyspark.daemon.worker)


if __name__ == "__main__":
    import_worker_modules()
    from pyspark.daemon import manager  # imports the worker's own modules (`pyspark.worker`) too

    quiet_hang_ups()
    freeze_imported_objects()
    manager()
