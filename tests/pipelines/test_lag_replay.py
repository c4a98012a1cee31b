"""Lag from a dump, on real Spark and Delta: `radar.end_offsets/1` records on the telemetry topic become
`partition_end_offsets` rows at ingest, and the detection query judges them against the group's commits from
`__consumer_offsets` into `group_lag` (with the group's total and maximum) and a `lag_stalled` detection: what a
replay of a captured cluster computes, as `radar run` computed it live."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.formats.dump import DumpRecord, dump_line
from rebalance_radar.pipelines.stages.detect import DetectStage, seal_replay_time
from rebalance_radar.pipelines.stages.ingest import ingest_dumps, replay_checkpoint_name
from rebalance_radar.transforms.schemas import DETECTIONS, GROUP_LAG, PARTITION_END_OFFSETS, LagStatus
from rebalance_radar.transforms.telemetry.end_offsets import EndOffsetsPoll, PartitionEndOffset, end_offsets_record
from rebalance_radar.transforms.wire.coordinator_records import encode_coordinator_record
from tests.pipelines.ingest_support import isolated_config, table

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.lag]

BASE_MS = 1_795_000_000_000
S = 1000
G = "billing"
TELEMETRY = "radar.telemetry"


def write_dump(path: Path) -> None:
    """Commits of partition 0 every 5 s for 30 s, then none, while its end offset grows; polls every 10 s of both
    partitions (partition 1 deleted halfway)."""
    records: list[DumpRecord] = []

    def commit(offset: int, t_ms: int, partition: int = 0) -> None:
        key, value = encode_coordinator_record(
            "OffsetCommit",
            {"group": G, "topic": "invoices", "partition": partition},
            3,
            {"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": t_ms},
        )
        records.append(DumpRecord("__consumer_offsets", 7, len(records), t_ms, key, value))

    def poll(t_ms: int, end: int, partition_1: int | str) -> None:
        second = (
            PartitionEndOffset("invoices", 1, partition_1)
            if isinstance(partition_1, int)
            else PartitionEndOffset("invoices", 1, None, partition_1)
        )
        value = end_offsets_record(
            EndOffsetsPoll(t_ms, "radar-run@test", G, (PartitionEndOffset("invoices", 0, end), second))
        )
        records.append(DumpRecord(TELEMETRY, 0, len(records), t_ms, G.encode(), value))

    poll(BASE_MS, 0, 0)
    for i in range(7):
        commit(10 * i, BASE_MS + 1000 + i * 5 * S)
        commit(5, BASE_MS + 1000 + i * 5 * S, partition=1)
    t, end = BASE_MS + 10 * S, 10
    while t <= BASE_MS + 130 * S:
        poll(t, end, 5 if t < BASE_MS + 70 * S else "UNKNOWN_TOPIC_OR_PART")
        t, end = t + 10 * S, end + 50
    path.write_text("".join(dump_line(r) + "\n" for r in sorted(records, key=lambda r: r.timestamp)))


def test_a_replayed_dump_gives_partition_end_offsets_group_lag_and_a_stall(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    config = isolated_config(radar_config, tmp_path / "data")
    dump = tmp_path / "lag.jsonl"
    write_dump(dump)
    ingest_dumps(spark, config, [str(dump)])
    seal_replay_time(spark, config)
    with DetectStage(spark, config, checkpoint_name=replay_checkpoint_name([str(dump)]), available_now=True) as d:
        d.queries.await_with_progress("test")

    polled = table(spark, config, PARTITION_END_OFFSETS).collect()
    assert len(polled) == 2 * 14
    assert {r["error"] for r in polled if r["partition"] == 1} == {None, "UNKNOWN_TOPIC_OR_PART"}

    lag = sorted((r.asDict() for r in table(spark, config, GROUP_LAG).collect()), key=lambda r: r["measured_at"])
    assert len(lag) == 2 * 14
    newest = {r["partition"]: r for r in lag}
    assert newest[0]["lag_status"] == LagStatus.STOP and newest[0]["committed_offset"] == 60
    assert newest[0]["lag"] == newest[0]["end_offset"] - 60 == newest[0]["group_total_lag"]
    assert (newest[1]["lag_status"], newest[1]["lag"]) == (LagStatus.PARTITION_GONE, None)
    assert newest[0]["group_max_lag"] == newest[0]["lag"]

    detections = [r.asDict() for r in table(spark, config, DETECTIONS).collect()]
    stalled = [d for d in detections if d["kind"] == "lag_stalled"]
    assert [(d["topic"], d["partition"], d["status"]) for d in stalled] == [("invoices", 0, "open")]
