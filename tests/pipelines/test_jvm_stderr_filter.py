"""The driver JVM's stderr reaches the console minus the transformWithState worker's start-up prints: the exact
lines pyspark 4.1's `transform_with_state_driver_worker` prints (each `print(f"...\\n")` ends in a blank line),
through a real pipe, while log lines, errors and stack traces pass unchanged."""

from __future__ import annotations

import os
import time

from pipelines.console import JvmStderrFilter

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
        deadline = time.monotonic() + 10
        while stderr_filter._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
    os.close(out_write)
    with os.fdopen(out_read, "rb") as result:
        shown = result.read().decode()
    assert shown == "".join(KEPT)
    assert stderr_filter.dropped == 5
