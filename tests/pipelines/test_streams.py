"""The streaming skeleton's handling of Java failures inside `foreachBatch` (issue #9: Ctrl-C spilled a
StackOverflowError from Spark's interruption regex run over a full Java stack), of errors a requested stop
causes, and of the files a stop leaves in a checkpoint."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.stages.streams import (
    MAX_JAVA_ERROR_LINES,
    JavaBatchFailure,
    RunningQueries,
    Trigger,
    clear_abandoned_log_writes,
    compact_java_error,
    raising_compact_java_errors,
    start_query,
)


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


@pytest.mark.spark
def test_an_error_a_requested_stop_causes_is_reported_not_raised(spark: SparkSession, tmp_path: Path) -> None:
    """A query running when `radar run` asks it to stop, which then ends in an error (CI: a transformWithState
    runner interrupted while starting), is named as interrupted and not raised; the same error is raised as a
    failure when no stop was asked for."""
    running, release = threading.Event(), threading.Event()

    def batch_failing_once_stopping(_batch: object, _batch_id: int) -> None:
        running.set()
        release.wait(60)
        raise RuntimeError("the batch broke while the query was stopping")

    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 1)
        .load()
        .writeStream.foreachBatch(batch_failing_once_stopping)
        .queryName("radar-test-stopping")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    queries = RunningQueries((query,))
    try:
        assert running.wait(120), "the first micro-batch never started"
        stopped_by_request = queries.active_ids()
        assert stopped_by_request == frozenset({query.id})
        threading.Timer(1.0, release.set).start()  # the batch fails while stop() waits for it
        queries.stop_within_bound()
        assert query.exception() is not None, "the batch's error did not end the query"
        interrupted = queries.interrupted_by_stop(stopped_by_request)
        assert len(interrupted) == 1 and interrupted[0].startswith("radar-test-stopping (")
        queries.raise_failures(stopped_by_request)  # not raised: the stop caused it
        with pytest.raises(RuntimeError, match="streaming query radar-test-stopping failed"):
            queries.raise_failures()
    finally:
        release.set()
        if query.isActive:
            query.stop()


# what a query stopped while writing its first offsets entry left (seen: 2 of 150 stops, and `radar run`'s gold query
# on Ctrl-C in CI); the second is Hadoop's checksum of the first
ABANDONED_FIRST_ENTRY = (
    ".0.63020f73-1206-4573-891e-0681fe0e80cc.tmp",
    "..0.63020f73-1206-4573-891e-0681fe0e80cc.tmp.crc",
)


def checkpoint_with_an_abandoned_first_entry(checkpoint: Path) -> Path:
    (checkpoint / "offsets").mkdir(parents=True)
    for name in ABANDONED_FIRST_ENTRY:
        (checkpoint / "offsets" / name).write_bytes(b"v1\n")  # cut short, as a stopped write leaves it
    return checkpoint


@pytest.mark.spark
def test_a_first_entry_a_stop_abandoned_does_not_block_the_next_start(spark: SparkSession, tmp_path: Path) -> None:
    """Spark refuses to start afresh on a checkpoint whose `offsets` folder holds anything, even the temporary file
    of an entry never written; `start_query` clears such files and starts, and keeps every written entry."""
    source = str(tmp_path / "source")
    spark.range(5).write.format("delta").save(source)
    refused = checkpoint_with_an_abandoned_first_entry(tmp_path / "plain")
    plain = (
        spark.readStream.format("delta")
        .load(source)
        .writeStream.format("noop")
        .option("checkpointLocation", str(refused))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY"):
        plain.awaitTermination(120)

    checkpoint = checkpoint_with_an_abandoned_first_entry(tmp_path / "radar")
    seen: list[int] = []
    query = start_query(
        spark.readStream.format("delta").load(source),
        "radar-test-abandoned-entry",
        checkpoint,
        lambda batch, _batch_id: seen.extend(row.id for row in batch.collect()),
        Trigger(True),
    )
    assert query.awaitTermination(120) and query.exception() is None
    assert sorted(seen) == [0, 1, 2, 3, 4]
    written = sorted(path.name for path in (checkpoint / "offsets").iterdir())
    assert "0" in written and not set(ABANDONED_FIRST_ENTRY) & set(written)
    assert clear_abandoned_log_writes(checkpoint) == []  # the entries and their checksums are kept
    assert sorted(path.name for path in (checkpoint / "offsets").iterdir()) == written


def test_a_query_the_kafka_cluster_refuses_ends_in_a_sentence_that_names_the_grant() -> None:
    """Spark's error for a Kafka ACL the principal lacks (its whole plan after it) becomes what to grant."""
    from rebalance_radar.pipelines.stages.streams import query_failure_sentence

    error = (
        "[STREAM_FAILED] Query [id = 1] terminated with exception: org.apache.kafka.common.errors."
        "TopicAuthorizationException: Not authorized to access topics: [__consumer_offsets]\n=== Streaming Query ===\n"
        "Logical Plan:\n~WriteToMicroBatchDataSourceV1 ForeachBatchSink"
    )
    said = query_failure_sentence("radar-offsets", error)
    assert said.startswith("streaming query radar-offsets stopped: the Kafka cluster refused it (TopicAuthorization")
    assert "[__consumer_offsets]" in said and "--operation Read" in said and "Logical Plan" not in said
    other = query_failure_sentence("radar-offsets", "[DIVIDE_BY_ZERO] something else")
    assert other.startswith("streaming query radar-offsets failed ([DIVIDE_BY_ZERO] something else). Its checkpoint")


def test_any_other_failed_query_is_one_sentence_with_its_cause_and_where_the_whole_error_is(tmp_path: Path) -> None:
    """The detection query's worker died under load: 216 lines of state and plan became one sentence, and the
    whole text went to the data dir's failure log."""
    from rebalance_radar.pipelines.stages.streams import keep_failure, query_failure_sentence

    error = (
        "[STREAM_FAILED] Query radar-detect [id = 1, runId = 2] terminated with exception: Job aborted due to stage "
        "failure: Task 0 in stage 3.0 failed 1 times\norg.apache.spark.SparkException: Job aborted due to stage "
        "failure\n\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2)\n"
        "Caused by: org.apache.spark.SparkException: Python worker failed to connect back.\n\tat x.y(Z.java:1)\n"
        "=== Streaming Query ===\nCurrent State: ACTIVE\nLogical Plan:\n~WriteToMicroBatchDataSourceV1\n" * 3
    )
    log = keep_failure(tmp_path / "logs" / "query-failures.log", "radar-detect", error)
    said = query_failure_sentence("radar-detect", error, log)
    assert said.startswith("streaming query radar-detect failed (STREAM_FAILED, SparkException: Python worker failed")
    assert f"the full error is in {tmp_path / 'logs' / 'query-failures.log'}" in said
    assert "start radar again" in said and "\n" not in said and "Logical Plan" not in said
    assert log is not None and "Logical Plan:" in log.read_text() and "radar-detect failed" in log.read_text()
    assert keep_failure(None, "radar-detect", error) is None
