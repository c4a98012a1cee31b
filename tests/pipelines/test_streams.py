"""The streaming skeleton's handling of Java failures inside `foreachBatch` (issue #9: Ctrl-C spilled a
StackOverflowError from Spark's interruption regex run over a full Java stack)."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from pipelines.streams import MAX_JAVA_ERROR_LINES, JavaBatchFailure, compact_java_error, raising_compact_java_errors


def java_failure(spark: SparkSession) -> Py4JJavaError:
    """A real Java exception raised through Py4J, with its stack (one PySpark does not convert to its own)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    with pytest.raises(Py4JJavaError) as caught:
        jvm.java.lang.Class.forName("no.such.Klass")
    return caught.value


@pytest.mark.spark
def test_a_java_failure_keeps_its_exception_lines_and_loses_its_frames(spark: SparkSession) -> None:
    error = java_failure(spark)
    assert "\tat " in str(error)  # the raw text carries the Java stack
    compact = compact_java_error(error)
    lines = compact.splitlines()
    assert lines[0].startswith("An error occurred while calling")
    assert any("java.lang.ClassNotFoundException" in line and "no.such.Klass" in line for line in lines)
    assert not any(line.startswith(("\tat ", "\t... ")) for line in lines)
    assert len(lines) <= MAX_JAVA_ERROR_LINES and len(compact) < len(str(error)) / 3


@pytest.mark.spark
def test_a_batch_writer_raises_the_compact_form_spark_recognises(spark: SparkSession) -> None:
    def failing_writer(_batch: object, _batch_id: int) -> None:
        raise java_failure(spark)

    with pytest.raises(JavaBatchFailure) as caught:
        raising_compact_java_errors(failing_writer)(spark.range(1), 0)
    message = str(caught.value)
    # the literal prefix Spark's StreamExecution.PROXY_ERROR regex looks for before the interruption class names
    assert message.startswith("py4j.protocol.Py4JJavaError: An error occurred while calling")
    assert "ClassNotFoundException" in message and "\tat " not in message
