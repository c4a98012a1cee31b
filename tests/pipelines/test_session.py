"""The local SparkSession really resolves format('delta') and format('kafka')."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyspark
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

from rebalance_radar.pipelines.config import ConfigError, RadarConfig
from rebalance_radar.pipelines.runtime.local_runtime import (
    CHECKPOINT_FILE_MANAGER,
    DAEMON_MODULE,
    LOCAL_FILESYSTEM_CONF,
    WORKER_MODULES,
    codegen_compilations,
    local_session_conf,
    python_socket_dir,
)
from rebalance_radar.pipelines.runtime.python_startup import STARTUP_DIR
from rebalance_radar.pipelines.runtime.session import (
    CODEGEN_CACHE_ENTRIES,
    build_spark_session,
    check_master,
    verify_formats,
    with_extra_conf,
    with_local_conf,
)

pytestmark = pytest.mark.spark


def test_session_settings(spark: SparkSession) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.ui.enabled") == "false"
    assert conf.get("spark.sql.streaming.stateStore.providerClass").endswith("RocksDBStateStoreProvider")
    # checkpoints commit by a FileSystem rename (FileContext's took ~0.1 s a file); restarts: test_ingest_crash
    assert conf.get("spark.sql.streaming.checkpointFileManagerClass") == CHECKPOINT_FILE_MANAGER
    assert conf.get("spark.jars")
    # Python workers over Unix sockets (over TCP each task's input waited ~41 ms), in this process's own folder
    assert conf.get("spark.python.unix.domain.socket.enabled") == "true"
    assert Path(conf.get("spark.python.unix.domain.socket.dir")).is_dir()


def test_a_compiled_class_is_reused_after_more_than_sparks_default_cache_of_others(spark: SparkSession) -> None:
    """A live run needs more than Spark's default 100 compiled classes at once: with that cache every micro-batch
    compiled again what the one before had evicted (3,236-6,343 compilations per live benchmark run)."""
    base = 7_919_000  # literals no other test uses: every class here is new to the session's cache

    def run(step: int) -> None:  # a literal is part of the generated code: one new class per step
        assert spark.range(1).selectExpr(f"id + {base + step} AS v").collect()[0].v == base + step

    spark.conf.set("spark.sql.codegen.wholeStage", "false")  # small classes (one projection each): a quick test
    try:
        run(-1)
        first = codegen_compilations(spark)
        others = spark.range(1).selectExpr(f"id + {base} AS v")
        for step in range(1, 120):  # 120 more classes in one job: each child of the union compiles its projection
            others = others.unionByName(spark.range(1).selectExpr(f"id + {base + step} AS v"))
        assert sorted(row.v for row in others.collect()) == list(range(base, base + 120))
        assert codegen_compilations(spark) - first > 100  # compiled (not interpreted): more than Spark's cache holds
        before = codegen_compilations(spark)
        run(-1)
        assert codegen_compilations(spark) == before  # ...and the first class is still there
    finally:
        spark.conf.unset("spark.sql.codegen.wholeStage")
    assert CODEGEN_CACHE_ENTRIES > 120


def test_python_sockets_fall_back_to_tcp_where_the_temp_folder_is_too_deep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A socket path over 103 bytes does not bind: under such a temp folder no socket folder is made (the session
    keeps TCP); under a short one it is made there."""
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert python_socket_dir.__wrapped__() is None  # a socket path there would not bind
    assert list(deep.iterdir()) == []
    short = Path(tempfile.mkdtemp(prefix="s", dir="/tmp"))  # this machine's /tmp: short enough
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    found = python_socket_dir.__wrapped__()
    assert found is not None and found.parent == short and found.is_dir()
    shutil.rmtree(short)


def test_a_thread_without_an_active_session_is_given_the_running_one_unchanged(
    spark: SparkSession, radar_config: RadarConfig
) -> None:
    """Spark keeps the active session per thread: in a thread Spark has not run in there is none, and building the
    session there must give the running one, its settings unchanged (a short command's hints included)."""
    seen: dict[str, object] = {}

    def in_another_thread() -> None:
        seen["active"] = SparkSession.getActiveSession()
        seen["built"] = build_spark_session(radar_config, quick_start=True)

    before = spark.sparkContext.getConf().getAll()
    worker = threading.Thread(target=in_another_thread)
    worker.start()
    worker.join(120)
    assert seen["active"] is None  # what the test is about: Spark has no active session in that thread
    assert seen["built"] is spark
    assert spark.sparkContext.getConf().getAll() == before


def test_the_local_file_system_classes_stay_on_a_configured_class_path(
    radar_config: RadarConfig, tmp_path: Path
) -> None:
    """`fs.file.impl` names classes from the compiled jar: a class path the user configures keeps the jar on it, or
    the JVM would not start (spark-submit reads files through Hadoop before anything else)."""
    config = radar_config.with_data_dir(tmp_path)
    local = local_session_conf(config)
    jar = local["spark.driver.extraClassPath"]
    assert {key: local[key] for key in LOCAL_FILESYSTEM_CONF} == LOCAL_FILESYSTEM_CONF
    theirs = with_extra_conf(local, {"spark.driver.extraClassPath": "/opt/theirs.jar"})
    assert theirs["spark.driver.extraClassPath"] == f"{jar}{os.pathsep}/opt/theirs.jar"
    java = with_local_conf({"spark.driver.extraJavaOptions": "-Dmine=1"}, {"spark.driver.extraJavaOptions": "-Dx=2"})
    assert java["spark.driver.extraJavaOptions"] == "-Dmine=1 -Dx=2"  # appended, never replaced
    options = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
    configured = with_extra_conf({"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=x"}, options)
    assert configured["spark.driver.extraJavaOptions"] == "-Dlog4j2.configurationFile=x -XX:TieredStopAtLevel=1"


def test_a_master_spark_does_not_know_is_one_sentence() -> None:
    for master in ("local", "local[2]", "local[*]", "spark://h:7077", "k8s://https://h:6443", "yarn"):
        check_master(master)
    with pytest.raises(ConfigError, match=r"spark.master 'sprak://h:7077' is not a Spark master: use local\[N\]"):
        check_master("sprak://h:7077")


def test_delta_round_trip(spark: SparkSession, radar_config: RadarConfig) -> None:
    if "delta" not in radar_config.spark.connectors:
        pytest.skip("delta is not among spark.connectors in this configuration")
    path = str(radar_config.data_dir / "tables" / "round_trip")
    spark.createDataFrame([("g1", 1), ("g2", 2)], "group_id string, generation int").write.format("delta").mode(
        "overwrite"
    ).save(path)
    rows = spark.read.format("delta").load(path).orderBy("group_id").collect()
    assert [(row.group_id, row.generation) for row in rows] == [("g1", 1), ("g2", 2)]


def test_kafka_format_resolves(spark: SparkSession, radar_config: RadarConfig) -> None:
    if "kafka" not in radar_config.spark.connectors:
        pytest.skip("kafka is not among spark.connectors in this configuration")
    verify_formats(spark, ("kafka",))


def _worker_import_facts(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Inside a Python worker: its import path, where it imported pyspark from, what its daemon imported, and how
    many objects it inherited frozen (out of the cyclic collector's walks)."""
    import gc
    import os
    import sys
    from pathlib import Path

    for _ in batches:
        pass
    preloaded = [name for name in WORKER_MODULES if name in sys.modules]  # this test module imports none of them
    # a reused worker may have imported them for an earlier task; its parent, the daemon, imports pyarrow only
    # in `import_worker_modules` (pyspark's daemon does not): Arrow's library is then mapped in the daemon
    daemon = Path(f"/proc/{os.getppid()}")
    maps = (daemon / "maps").read_text().splitlines()
    arrow_in_daemon = any("libarrow" in line for line in maps)
    pandas_in_daemon = any("/pandas/_libs/" in line for line in maps)
    daemon_module = DAEMON_MODULE in (daemon / "cmdline").read_bytes().decode(errors="replace")
    yield pa.RecordBatch.from_pylist(
        [
            {
                "path": list(sys.path),
                "pyspark": pyspark.__file__,
                "preloaded": preloaded,
                "arrow_in_daemon": arrow_in_daemon and daemon_module,
                "pandas_in_daemon": pandas_in_daemon and daemon_module,
                "frozen_objects": gc.get_freeze_count(),
            }
        ]
    )


def test_python_workers_import_without_sparks_archives(spark: SparkSession) -> None:
    """The workers run the local runtime's daemon: no spark-core jar, pyspark or py4j zip on their path (each task
    re-read their directories), pyspark imported from a directory, the one the driver imports it from, and the
    modules radar's tasks use already imported, and frozen, when a worker starts."""

    schema = (
        "path array<string>, pyspark string, preloaded array<string>, arrow_in_daemon boolean, "
        "pandas_in_daemon boolean, frozen_objects long"
    )
    row = spark.range(1, numPartitions=1).mapInArrow(_worker_import_facts, schema).collect()[0]
    assert [entry for entry in row["path"] if is_spark_archive(entry)] == []
    assert row["pyspark"] == pyspark.__file__
    assert row["preloaded"] == list(WORKER_MODULES)
    assert row["arrow_in_daemon"]  # imported by the daemon before it forked the worker
    assert row["pandas_in_daemon"]  # which pyarrow imports at a worker's first `pa.array` of a list
    # the daemon froze what it imported before forking: the collection after each task does not walk it (a worker
    # of pyspark's own daemon has 0 frozen); ~65k objects with these modules
    assert row["frozen_objects"] > 20_000


def test_the_jvm_writes_both_its_streams_to_the_filter_not_to_this_processs_own(spark: SparkSession) -> None:
    """The local JVM's stdout and stderr are the one pipe `JvmStderrFilter` reads: holding this process's stdout, the
    JVM kept a pipe reading `radar` open until it had run its shutdown hooks (~0.7 s after `radar` exited)."""
    from pyspark import SparkContext

    process = SparkContext._gateway.proc
    jvm_fds = Path(f"/proc/{process.pid}/fd")
    filtered = os.readlink(f"/proc/self/fd/{process.stdout.fileno()}")
    assert filtered.startswith("pipe:")
    assert os.readlink(jvm_fds / "1") == os.readlink(jvm_fds / "2") == filtered


SPARK_HOME = Path(pyspark.__file__).parent  # pip's pyspark: the folder Spark's scripts export as SPARK_HOME


def is_spark_archive(entry: str) -> bool:
    """An archive Spark puts on its Python processes' path: a file inside SPARK_HOME (pyspark's and py4j's zips, the
    spark-core jar)."""
    path = Path(entry)
    return path.is_file() and SPARK_HOME in path.resolve().parents


_PATH_REPORT = "import json, sys, pyspark; print(json.dumps([sys.path, pyspark.__file__]))"


def _start_python(pythonpath: list[Path], spark_home: Path) -> tuple[list[str], str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath)), "SPARK_HOME": str(spark_home)}
    done = subprocess.run([sys.executable, "-c", _PATH_REPORT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    path, imported_from = json.loads(done.stdout)
    return path, imported_from


def test_the_start_up_hook_leaves_out_only_the_archives_of_the_installed_pyspark(tmp_path: Path) -> None:
    """A Python process of a JVM radar launched, on Spark's PYTHONPATH (its archives, the function's entries, the
    JVM's own): Spark's archives of the installed pyspark are left out (each start compiled pyspark from the zip),
    every other entry kept in order, pyspark imported from SPARK_HOME, and a `sitecustomize` the hook hides still
    runs."""
    archives = [*sorted(SPARK_HOME.glob("python/lib/*.zip")), *SPARK_HOME.glob("jars/spark-core_*.jar")]
    assert len(archives) == 3 and all(is_spark_archive(str(a)) for a in archives)
    mine = [tmp_path / "my modules", tmp_path / "python311.zip"]
    mine[0].mkdir()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    ran = tmp_path / "theirs-ran"
    (theirs / "sitecustomize.py").write_text(f"open({str(ran)!r}, 'w').close()\n", encoding="utf-8")
    pythonpath = [archives[0], mine[0], archives[1], archives[2], STARTUP_DIR, mine[1], theirs]

    path, imported_from = _start_python(pythonpath, SPARK_HOME)
    assert [entry for entry in path if is_spark_archive(entry)] == []
    assert [entry for entry in path if Path(entry) in (*mine, theirs)] == [*map(str, mine), str(theirs)]
    assert imported_from == str(SPARK_HOME / "__init__.py")
    assert ran.exists()


def test_the_start_up_hook_keeps_a_spark_distributions_own_archives(tmp_path: Path) -> None:
    """Where SPARK_HOME is not the pyspark installed beside it (a Spark distribution), its zip is its pyspark: kept,
    and imported from."""
    distribution = tmp_path / "spark-dist"
    (distribution / "python" / "lib").mkdir(parents=True)
    zipped = distribution / "python" / "lib" / "pyspark.zip"
    shutil.copy(SPARK_HOME / "python" / "lib" / "pyspark.zip", zipped)
    path, imported_from = _start_python([zipped, STARTUP_DIR], distribution)
    assert str(zipped) in path
    assert imported_from == str(zipped / "pyspark" / "__init__.py")


class _ImportPathReporter(StatefulProcessor):
    """Appends, from each Python process that runs its `init`, that process's module, import path and parent (a
    task's worker: its daemon) to a file."""

    def __init__(self, report: str) -> None:
        self._report = report

    def init(self, handle: StatefulProcessorHandle) -> None:
        import json
        import os
        import sys

        main = getattr(sys.modules["__main__"].__spec__, "name", None)
        with open(self._report, "a", encoding="utf-8") as out:
            out.write(json.dumps({"main": main, "path": sys.path, "parent": os.getppid()}) + "\n")

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:  # noqa: N802, N803
        yield from ()

    def close(self) -> None:
        pass


def _daemon_of_a_worker(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import os

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist([{"parent": os.getppid()}])


def test_a_stateful_querys_python_runs_without_sparks_archives_in_the_sessions_one_daemon(
    spark: SparkSession, tmp_path: Path
) -> None:
    """`transformWithState`'s driver-side worker (started without the daemon as the query plans) runs through the
    launcher: no archive on its path (with them, every detection query's planning imported pyspark from its zip).
    Its tasks run in workers of the daemon `mapInArrow` tasks use: Spark started a second daemon for them (its
    imports again, new workers) while the two kinds of task differed in one environment variable."""
    source = tmp_path / "input"
    source.mkdir()
    (source / "rows.json").write_text('{"k": "a"}\n', encoding="utf-8")
    report = tmp_path / "report.jsonl"
    rows = spark.readStream.schema("k string").json(str(source))
    query = (
        rows.groupBy("k")
        .transformWithState(_ImportPathReporter(str(report)), "k string", "Append", "None")
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120), "the stateful query did not end within 120 s"
    finally:
        query.stop()
    assert query.exception() is None
    reports = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
    planning = [r for r in reports if r["main"] == "pyspark.sql.streaming.transform_with_state_driver_worker"]
    assert planning, reports
    assert [entry for r in planning for entry in r["path"] if is_spark_archive(entry)] == []
    tasks = [r for r in reports if r["main"] == DAEMON_MODULE]
    assert tasks, reports
    arrow_daemon = spark.range(1, numPartitions=1).mapInArrow(_daemon_of_a_worker, "parent long").collect()[0].parent
    assert {r["parent"] for r in tasks} == {arrow_daemon}


_NO_JARS_SESSION = """
from pyspark.sql import SparkSession
from rebalance_radar.pipelines.runtime.session import SparkSessionError, verify_formats
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
try:
    verify_formats(spark, ("kafka", "delta"))
except SparkSessionError as error:
    print(error)
"""


def test_a_session_without_the_connector_jars_is_told_so_in_one_sentence(tmp_path: Path) -> None:
    """Spark starts a session whose jars are missing with only a WARN: the check (public API: a Kafka relation
    described without connecting, a Delta read of a missing path) says which formats do not resolve and what to do."""
    done = subprocess.run(
        [sys.executable, "-c", _NO_JARS_SESSION], cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    said = done.stdout.strip()
    assert done.returncode == 0, done.stderr[-2000:]
    assert said.startswith("format('kafka') does not resolve; format('delta') does not resolve. The connector jars")
    assert "radar jars" in said and len(said.splitlines()) == 1
