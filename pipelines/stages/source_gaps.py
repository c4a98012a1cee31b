"""Keeps `source_gaps` while queries run: each micro-batch's progress report, as the run's status line reads it
(`pipelines.runtime.console.StatusLine`), gives its Kafka offsets (`transforms.source_gaps`); each gap is said in
one line, and a writer thread upserts the rows, so the status line never waits on a Delta commit.

Not a StreamingQueryListener: PySpark turns every progress event of every query into a Python object over dozens of
Py4J calls, several of which make the JVM look a class name up in every jar, to read two offsets per batch; an idle
`radar run` spent a large share of its driver's CPU there."""

from __future__ import annotations

import json
import queue
import sys
import threading
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from pyspark.sql import SparkSession

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.storage.tables import upsert_by_key
from rebalance_radar.transforms.schemas import SOURCE_GAPS
from rebalance_radar.transforms.source_gaps import SourceGap, kafka_offsets, source_gaps

if TYPE_CHECKING:
    from pyspark.sql.streaming.listener import StreamingQueryProgress


def progress_time(text: str | None) -> datetime:
    """A progress report's timestamp (ISO 8601, Z), or now when absent."""
    if not text:
        return datetime.now(UTC)
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class SourceGapRecorder:
    """`with SourceGapRecorder(spark, config) as recorder:` records every source gap in the progress reports handed to
    `recorder.note` meanwhile (`run_until_stopped(on_progress=recorder.note)`); written by the time the block ends."""

    def __init__(self, spark: SparkSession, config: RadarConfig, label: str = "radar run") -> None:
        self.spark, self.config, self.label = spark, config, label
        self._found: queue.Queue[SourceGap | None] = queue.Queue()
        self._said: set[tuple[Any, ...]] = set()
        self._thread = threading.Thread(target=self._write_found, name="radar-source-gaps", daemon=True)
        self.recorded = 0
        self.failures: list[str] = []

    def note(self, progress: StreamingQueryProgress) -> None:
        """Find the gaps one micro-batch's progress report shows; each is said and queued for writing once."""
        for source in progress.sources:
            offsets = json.loads(source.json)  # as Spark wrote them (PySpark keeps them in its fields as Python reprs)
            gaps = source_gaps(
                kafka_offsets(offsets.get("startOffset")),
                kafka_offsets(offsets.get("endOffset")),
                cluster=self.config.cluster,
                query=progress.name or str(progress.id),
                batch_id=int(progress.batchId),
                detected_at=progress_time(progress.timestamp),
            )
            for gap in gaps:
                key = tuple(getattr(gap, name) for name in SOURCE_GAPS.record_key)
                if key in self._said:  # said once, whichever report shows it again
                    continue
                self._said.add(key)
                print(f"{self.label}: {gap.message} (table source_gaps)", file=sys.stderr, flush=True)
                self._found.put(gap)

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

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._found.put(None)
        self._thread.join(timeout=60)
        for failure in self.failures:
            print(f"radar: {failure}", file=sys.stderr)
