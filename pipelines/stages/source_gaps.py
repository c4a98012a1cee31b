"""Keeps `source_gaps` while queries run: a StreamingQueryListener reads each progress report's Kafka offsets
(`transforms.source_gaps`), says each gap in one line, and a writer thread upserts the rows, so the listener bus
is never held by a Delta commit."""

from __future__ import annotations

import queue
import sys
import threading
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQueryListener

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.storage.tables import upsert_by_key
from rebalance_radar.transforms.schemas import SOURCE_GAPS
from rebalance_radar.transforms.source_gaps import SourceGap, kafka_offsets, source_gaps


def progress_time(text: str | None) -> datetime:
    """A progress report's timestamp (ISO 8601, Z), or now when absent."""
    if not text:
        return datetime.now(UTC)
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class SourceGapListener(StreamingQueryListener):
    """Turns progress reports into `source_gaps` rows, handed to `write` (called from the listener thread)."""

    def __init__(self, config: RadarConfig, found: queue.Queue[SourceGap | None], label: str) -> None:
        self.config, self.found, self.label = config, found, label
        self.said: set[tuple[Any, ...]] = set()
        self.started: set[str] = set()
        self.terminated: set[str] = set()
        self.changed = threading.Condition()

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's listener interface
        with self.changed:
            self.started.add(str(event.runId))
            self.changed.notify_all()

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        with self.changed:
            self.terminated.add(str(event.runId))
            self.changed.notify_all()

    def wait_for_terminations(self, timeout_s: float) -> bool:
        """True once every query this listener saw start has been seen to end: a listener receives a query's events
        in order, so its last progress report has then arrived too."""
        with self.changed:
            return self.changed.wait_for(lambda: self.started <= self.terminated, timeout=timeout_s)

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        progress = event.progress
        for source in progress.sources:
            gaps = source_gaps(
                kafka_offsets(source.startOffset),
                kafka_offsets(source.endOffset),
                cluster=self.config.cluster,
                query=progress.name or str(progress.id),
                batch_id=int(progress.batchId),
                detected_at=progress_time(progress.timestamp),
            )
            for gap in gaps:
                key = tuple(getattr(gap, name) for name in SOURCE_GAPS.record_key)
                if key in self.said:  # progress without new data repeats the last batch's offsets
                    continue
                self.said.add(key)
                print(f"{self.label}: {gap.message} (table source_gaps)", file=sys.stderr, flush=True)
                self.found.put(gap)


class SourceGapRecorder:
    """`with SourceGapRecorder(spark, config):` records every source gap of the session's queries meanwhile."""

    def __init__(self, spark: SparkSession, config: RadarConfig, label: str = "radar run") -> None:
        self.spark, self.config = spark, config
        self._found: queue.Queue[SourceGap | None] = queue.Queue()
        self._listener = SourceGapListener(config, self._found, label)
        self._thread = threading.Thread(target=self._write_found, name="radar-source-gaps", daemon=True)
        self.recorded = 0
        self.failures: list[str] = []

    def _write_found(self) -> None:
        """Write what was found, in as few commits as it arrives; ends at the `None` that `__exit__` queues."""
        done = False
        while not done:
            gaps: list[SourceGap] = []
            item = self._found.get()
            while True:
                if item is None:
                    done = True
                    break
                gaps.append(item)
                try:
                    item = self._found.get_nowait()
                except queue.Empty:
                    break
            if gaps:
                self._write(gaps)

    def _write(self, gaps: list[SourceGap]) -> None:
        try:
            rows = self.spark.createDataFrame([gap.as_row() for gap in gaps], SOURCE_GAPS.ddl)
            upsert_by_key(rows, self.config, SOURCE_GAPS, SOURCE_GAPS.record_key)
            self.recorded += len(gaps)
        except Exception as error:  # said at stop; each gap was already said on stderr when found
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            self.failures.append(f"{len(gaps)} source gap row(s) not written: {first[:300]}")

    def _wait_for_listener_events(self, timeout_s: float = 10.0) -> None:
        """Progress reports reach listeners asynchronously: let the last ones of the stopped queries arrive (each
        query's termination event comes after them)."""
        if not self._listener.wait_for_terminations(timeout_s):  # a bus still busy after the bound: said, not raised
            self.failures.append(f"progress reports of a stopped query still queued after {timeout_s:.0f} s")

    def __enter__(self) -> Self:
        self.spark.streams.addListener(self._listener)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._wait_for_listener_events()
        self.spark.streams.removeListener(self._listener)
        self._found.put(None)
        self._thread.join(timeout=60)
        for failure in self.failures:
            print(f"radar: {failure}", file=sys.stderr)
