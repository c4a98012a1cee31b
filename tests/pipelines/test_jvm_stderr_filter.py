"""The driver JVM's stderr reaches the console minus the transformWithState worker's start-up prints: the exact
lines pyspark 4.1's `transform_with_state_driver_worker` prints (each `print(f"...\\n")` ends in a blank line),
through a real pipe, while log lines, errors and stack traces pass unchanged."""

from __future__ import annotations

import os
import select
import threading

import pytest

from rebalance_radar.pipelines.runtime.local_runtime import JvmStderrFilter

WORKER = "Streaming TransformWithStateInPandas Python worker"
CHATTER = [
    f"Starting {WORKER}.\n",
    "\n",
    f"{WORKER} finish init stage of Python runner. Received UDF from JVM: <function transformWithStateUDF at "
    "0x7f>, received return type of UDF: StructType([StructField('target', StringType(), True)]).\n",
    "\n",
    f"{WORKER} received parameters for UDF. State server port/path: 40467, key schema: "
    "StructType([StructField('cluster', StringType(), True), StructField('group_id', StringType(), True)]).\n",
    "\n",
    f"{WORKER} Starting execution of UDF: <function transformWithStateUDF at 0x7f>.\n",
    "\n",
    f"{WORKER} Completed execution of UDF: <function transformWithStateUDF at 0x7f>.\n",
    "\n",
]
KEPT = [
    "13:02:11 ERROR MicroBatchExecution: Query radar-detect-live terminated with error\n",
    "org.apache.spark.SparkException: TransformWithStateInPySpark driver worker exited unexpectedly\n",
    "\tat org.apache.spark.api.python.StreamingPythonRunner.init(StreamingPythonRunner.scala:90)\n",
    "\n",
    "Traceback (most recent call last):\n",
    '  File "worker.py", line 3, in main\n',
    "ModuleNotFoundError: No module named 'google.protobuf'\n",
]


def test_worker_startup_prints_are_dropped_and_everything_else_passes() -> None:
    jvm_read, jvm_write = os.pipe()
    out_read, out_write = os.pipe()
    with os.fdopen(jvm_read, "rb") as source:
        stderr_filter = JvmStderrFilter(source, out_write).start()
        stream = [KEPT[0], *CHATTER[:4], KEPT[1], KEPT[2], *CHATTER[4:], KEPT[3], *KEPT[4:]]
        os.write(jvm_write, "".join(stream).encode())
        os.close(jvm_write)
        stderr_filter._thread.join(timeout=10)
        assert not stderr_filter._thread.is_alive(), "the filter did not end with the JVM's stderr"
    os.close(out_write)
    with os.fdopen(out_read, "rb") as result:
        shown = result.read().decode()
    assert shown == "".join(KEPT)
    assert stderr_filter.dropped == 5


def test_a_silenced_filter_drops_everything_after_and_still_drains_the_pipe() -> None:
    """After `radar run` stops its queries, the abandoned batch's worker traceback (KEPT above) stays off the
    console, while the JVM's pipe is still read to its end (a JVM with a full stderr pipe blocks)."""
    jvm_read, jvm_write = os.pipe()
    out_read, out_write = os.pipe()
    with os.fdopen(jvm_read, "rb") as source, os.fdopen(out_read, "rb", buffering=0) as result:
        stderr_filter = JvmStderrFilter(source, out_write).start()
        os.write(jvm_write, KEPT[0].encode())
        assert select.select([result], [], [], 10)[0], "the line before the silence never came through"
        first = result.read(len(KEPT[0].encode()))
        stderr_filter.silence()
        writer = threading.Thread(target=os.write, args=(jvm_write, "".join(KEPT[1:] * 2000).encode()))
        writer.start()  # more than a pipe holds: it returns only if the filter keeps reading
        writer.join(timeout=10)
        assert not writer.is_alive(), "the silenced filter stopped draining the JVM's stderr"
        os.close(jvm_write)
        stderr_filter._thread.join(timeout=10)
        os.close(out_write)
        rest = result.read()
    assert first.decode() == KEPT[0]
    assert rest == b""


HUNG_UP = [
    "Traceback (most recent call last):\n",
    '  File "pyspark/daemon.py", line 229, in manager\n',
    "Traceback (most recent call last):\n",  # a second worker's, interleaved
    "    write_int(os.getpid(), outfile)\n",
    '  File "pyspark/worker.py", line 1900, in main\n',
    "BrokenPipeError: [Errno 32] Broken pipe\n",
    '  File "pyspark/serializers.py", line 597, in write_int\n',
    "ConnectionResetError: [Errno 104] Connection reset by peer\n",
    "\n",
    "During handling of the above exception, another exception occurred:\n",
    "\n",
    "Traceback (most recent call last):\n",
    '  File "pyspark/daemon.py", line 230, in manager\n',
    "BrokenPipeError: [Errno 32] Broken pipe\n",
]


def test_tracebacks_of_hung_up_workers_are_dropped_and_any_other_traceback_passes() -> None:
    """A worker or the daemon whose JVM side closed first (a stop, a cancelled task) ends in BrokenPipeError: two
    interleaved tracebacks at the end of a healthy demo; dropped, chained exceptions and all. A traceback that ends
    otherwise is shown whole, even after one that was dropped."""
    jvm_read, jvm_write = os.pipe()
    out_read, out_write = os.pipe()
    with os.fdopen(jvm_read, "rb") as source:
        stderr_filter = JvmStderrFilter(source, out_write).start()
        os.write(jvm_write, "".join([KEPT[0], *HUNG_UP, *KEPT[1:]]).encode())
        os.close(jvm_write)
        stderr_filter._thread.join(timeout=10)
    os.close(out_write)
    with os.fdopen(out_read, "rb") as result:
        shown = result.read().decode()
    assert shown == "".join(KEPT)
    assert stderr_filter.dropped == len(HUNG_UP)


STOPPED_THREAD = [
    'Exception in thread "stateConnectionListenerThread" java.nio.channels.ClosedByInterruptException\n',
    "\tat java.base/java.nio.channels.spi.AbstractInterruptibleChannel.end(AbstractInterruptibleChannel.java:199)\n",
    "\tat org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer.run(x.scala:142)\n",
    "\tat java.base/java.lang.Thread.run(Thread.java:840)\n",
]


def test_a_thread_interrupted_by_a_stop_is_dropped_and_any_other_uncaught_exception_passes() -> None:
    """Each query stop ends transformWithState's state-server listener with ClosedByInterruptException, which the
    JVM prints with its stack (seen twice at the end of a demo): the stop, not an error. Another thread's death
    (an OutOfMemoryError) is shown whole."""
    fatal = ['Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n', "\tat x.y(Z.java:1)\n"]
    jvm_read, jvm_write = os.pipe()
    out_read, out_write = os.pipe()
    with os.fdopen(jvm_read, "rb") as source:
        stderr_filter = JvmStderrFilter(source, out_write).start()
        os.write(jvm_write, "".join([*STOPPED_THREAD, KEPT[0], *STOPPED_THREAD, *fatal]).encode())
        os.close(jvm_write)
        stderr_filter._thread.join(timeout=10)
    os.close(out_write)
    with os.fdopen(out_read, "rb") as result:
        shown = result.read().decode()
    assert shown == "".join([KEPT[0], *fatal])
    assert stderr_filter.dropped == 2 * len(STOPPED_THREAD)


def test_the_worker_daemon_ends_hung_up_workers_quietly(capsys: pytest.CaptureFixture[str]) -> None:
    """At the source: pyspark's daemon, as radar runs it, prints no traceback for a worker whose JVM hung up (its
    forked child's `traceback.print_exc()`, its worker loop's BrokenPipeError), and still prints any other."""
    import pyspark.daemon

    from rebalance_radar.pipelines.runtime.local_runtime import QuietHangUps, quiet_worker

    quiet = QuietHangUps()
    for error in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset"), EOFError()):
        try:
            raise error
        except BaseException:
            quiet.print_exc()
    assert capsys.readouterr().err == ""
    try:
        raise ValueError("a real failure")
    except ValueError:
        quiet.print_exc()
    assert "ValueError: a real failure" in capsys.readouterr().err
    assert quiet.format_exc is not None  # everything else is the traceback module's

    def hung_up(_sock: object, _authenticated: bool) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert quiet_worker(hung_up)(None, True) == 1
    assert quiet_worker(lambda _sock, _authenticated: 0)(None, True) == 0
    assert callable(pyspark.daemon.worker) and hasattr(pyspark.daemon, "traceback")  # what quiet_hang_ups patches
