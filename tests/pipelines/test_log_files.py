"""`radar replay --input server.log`: a broker's or client's log file replays as the telemetry a shipper would have
produced from it. Which files are logs, how their lines become records (stack traces joined, times from the lines),
and, through the real `radar replay`, that an incident whose broker lines come from a log file gives the detections
the pure tracker gives over the same records."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from rebalance_radar.pipelines.cli import main
from rebalance_radar.pipelines.formats.dump import DumpRecord, dump_line
from rebalance_radar.pipelines.formats.log_files import REPLAYED_LOG_TOPIC, is_log_file, log_partition, log_records
from rebalance_radar.pipelines.stages.sources import parse_dump_files
from tests.pipelines.incident_tables import CONF, ORDERS, incident_scenario
from tests.transforms.detectors.silver_rows import TELEMETRY_TOPIC, run

AGENT_TOPIC = "app.radar-events"
MODIFIED_MS = int(datetime(2025, 11, 22, 23, 0, tzinfo=UTC).timestamp() * 1000)
BROKER_LOG = (
    b"[2025-11-22 02:53:21,101] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] Member m-b in "
    b"group orders has failed, removing it from the group. "
    b"(org.apache.kafka.coordinator.group.GroupMetadataManager)\n"
    b"[2025-11-22 02:53:21,102] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] Preparing to "
    b"rebalance group orders in state PreparingRebalance with old generation 7 (reason: removing member m-b on "
    b"heartbeat expiration.). (org.apache.kafka.coordinator.group.GroupMetadataManager)\n"
)
CLIENT_LOG = (
    b"[2025-11-22 02:53:40,500] ERROR [Consumer clientId=worker-b, groupId=orders] Offset commit with offsets "
    b"{orders-2=OffsetAndMetadata{offset=120, leaderEpoch=null, metadata=''}} failed "
    b"(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)\n"
    b"org.apache.kafka.clients.consumer.CommitFailedException: Commit cannot be completed since the group has "
    b"already rebalanced and assigned the partitions to another member.\n"
    b"\tat org.apache.kafka.clients.consumer.internals.ConsumerCoordinator.sendOffsetCommitRequest"
    b"(ConsumerCoordinator.java:1300)\n"
    b"Caused by: org.apache.kafka.common.errors.IllegalGenerationException: illegal generation\n"
    b"\t... 12 more\n"
    b"\n"
    b"[2025-11-22 02:53:41,000] INFO [Consumer clientId=worker-b, groupId=orders] Resetting generation "
    b"(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)\n"
)


def test_log_files_are_told_from_dumps() -> None:
    dump = dump_line(DumpRecord(TELEMETRY_TOPIC, 0, 0, MODIFIED_MS, None, BROKER_LOG.splitlines()[0])).encode()
    assert is_log_file(BROKER_LOG, MODIFIED_MS)
    assert is_log_file(CLIENT_LOG, MODIFIED_MS)
    assert is_log_file(b"[11:10:57,345] INFO this layout has a time and no date\n", MODIFIED_MS)
    assert not is_log_file(dump, MODIFIED_MS)
    # a dump whose first lines are bad stays a dump: its bad lines are quarantined with their reason, as before
    assert not is_log_file(b"not json\n" + BROKER_LOG + dump, MODIFIED_MS)
    assert not is_log_file(b"\x00\xff binary garbage, no time, no telemetry\n", MODIFIED_MS)
    assert not is_log_file(b"\n\n", MODIFIED_MS)


def test_a_stack_trace_is_one_record_with_the_line_it_follows_and_times_come_from_the_lines() -> None:
    records = list(log_records(CLIENT_LOG, MODIFIED_MS))
    assert [(line, time_ms) for line, time_ms, _ in records] == [
        (1, int(datetime(2025, 11, 22, 2, 53, 40, 500_000, tzinfo=UTC).timestamp() * 1000)),
        (7, int(datetime(2025, 11, 22, 2, 53, 41, tzinfo=UTC).timestamp() * 1000)),
    ]
    first = records[0][2].decode()
    assert first.count("\n") == 4 and "CommitFailedException" in first and first.endswith("... 12 more")
    # a time-only layout takes the date nearest the file's modification time
    ((_, time_ms, _),) = log_records(b"[22:59:58,000] INFO x\n", MODIFIED_MS)
    assert time_ms == MODIFIED_MS - 2000


def test_docker_compose_logs_keep_stack_traces_with_their_line() -> None:
    compose = b"".join(b"kafka-1  | " + line + b"\n" for line in CLIENT_LOG.splitlines() if line.strip())
    records = list(log_records(compose, MODIFIED_MS))
    assert [line for line, _, _ in records] == [1, 6]
    assert records[0][2].count(b"\n") == 4 and records[0][2].startswith(b"kafka-1  | [2025-11-22 02:53:40,500] ERROR")


def test_a_line_with_its_own_time_is_never_a_continuation() -> None:
    """A layout that pads the level first (`%5p %d ...`) starts every line with a space: each is its own record."""
    padded = b" INFO 2025-11-22 02:53:40,500 first\n WARN 2025-11-22 02:53:41,000 second\n\tat x.y(Z.java:1)\n"
    assert [(line, text.count(b"\n")) for line, _, text in log_records(padded, MODIFIED_MS)] == [(1, 0), (2, 1)]


def parsed(contents: list[bytes]) -> pa.Table:
    """`parse_dump_files` (the replay's `mapInArrow` body) over files with these contents, as Spark hands them."""
    files = pa.RecordBatch.from_pydict(
        {
            "path": [f"file:///staging/{index:04d}-input" for index in range(len(contents))],
            "modificationTime": pa.array([MODIFIED_MS] * len(contents), pa.timestamp("ms")),
            "content": pa.array(contents, pa.binary()),
        }
    )
    names = {f"{index:04d}-input": f"given-{index}" for index in range(len(contents))}
    return pa.Table.from_batches(list(parse_dump_files(iter([files]), names)))


def test_gzip_compressed_inputs_read_as_their_contents_and_a_corrupt_one_is_one_quarantine_row() -> None:
    """Rotated logs and archived dumps come gzip-compressed (`server.log.2025-11-22-02.gz`): told by magic bytes."""
    dump = (dump_line(DumpRecord(TELEMETRY_TOPIC, 0, 7, MODIFIED_MS, None, b"x")) + "\n").encode()
    plain = parsed([dump, CLIENT_LOG])
    compressed = parsed([gzip.compress(dump), gzip.compress(CLIENT_LOG)])
    assert compressed.equals(plain)
    assert plain.column("topic").to_pylist() == [TELEMETRY_TOPIC, REPLAYED_LOG_TOPIC, REPLAYED_LOG_TOPIC]
    (broken,) = parsed([gzip.compress(CLIENT_LOG)[:40]]).to_pylist()
    assert broken["source_file"] == "given-0" and broken["value"] is None
    assert broken["source_error"].startswith("given-0: gzip data that cannot be decompressed")


@pytest.mark.spark
def test_replay_reads_a_broker_log_file_beside_the_dump(spark: SparkSession, tmp_path: Path) -> None:
    """The incident tables' scenario with its broker lines in `server.log` (the 4.x coordinator's layout) instead of
    the dump, and its agent events on a topic the conf does not name: heartbeat events, the rebalance's cause and
    the detections (the zombie commit needs the agent's events) are the pure tracker's over the same records, and
    every log record's source is its file and line."""
    scenario = incident_scenario()
    log_lines, dumped = [], []
    for record in scenario.records:
        value = base64.b64decode(record["value"]) if record["value"] is not None else b""
        if record["topic"] == TELEMETRY_TOPIC and value.startswith(b"["):  # a broker line, not an agent event
            log_lines.append(value)
        elif record["topic"] == TELEMETRY_TOPIC:  # agent events on a topic the conf does not name: still telemetry
            dumped.append({**record, "topic": AGENT_TOPIC})
        else:
            dumped.append(record)
    assert log_lines, "the scenario has broker lines"
    dump = tmp_path / "offsets-and-agent.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in dumped))
    server_log = tmp_path / "server.log"
    server_log.write_bytes(b"\n".join(log_lines) + b"\n")
    data_dir = tmp_path / "data"
    argv = [
        "replay",
        "--input",
        str(dump),
        "--input",
        str(server_log),
        "--data-dir",
        str(data_dir),
        "--conf",
        str(CONF),
    ]
    assert main(argv) == 0

    def table(name: str) -> list[dict[str, object]]:
        return [row.asDict() for row in spark.read.format("delta").load(str(data_dir / "tables" / name)).collect()]

    assert {e["src_topic"] for e in table("heartbeat_events")} == {REPLAYED_LOG_TOPIC, AGENT_TOPIC}
    from_log = [e for e in table("heartbeat_events") if e["src_topic"] == REPLAYED_LOG_TOPIC]
    assert len(from_log) == len([row for row in scenario.rows if row.get("source") == "broker_log"])
    assert {e["src_partition"] for e in from_log} == {log_partition(str(server_log.resolve()))}
    assert sorted(e["src_offset"] + 1 for e in from_log) == list(range(1, len(log_lines) + 1))
    raw_keys = {bytes(r["key"]) for r in table("telemetry_raw") if r["src_topic"] == REPLAYED_LOG_TOPIC}
    assert raw_keys == {str(server_log).encode()}  # the record key names the file
    newest = max(r["timestamp"] for r in scenario.records)
    for group in {r["group_id"] for r in table("detections")} | {ORDERS}:
        oracle = run(group, scenario.rows, newest)
        replayed = [d for d in table("detections") if d["group_id"] == group]
        assert sorted((d["kind"], d["member_id"], d["generation"]) for d in replayed) == sorted(
            (d["kind"], d["member_id"], d["generation"]) for d in oracle.detections.values()
        ), group
    assert {"heartbeat_expiration", "zombie_commit"} <= {d["kind"] for d in table("detections")}
    (expired,) = [r for r in table("rebalances") if r["group_id"] == ORDERS and r["generation"] == 8]
    assert expired["cause"] == "heartbeat_expiration"
    refs = [
        ref for d in table("detections") if d["kind"] == "heartbeat_expiration" for ref in json.loads(d["evidence"])
    ]
    assert any(ref["topic"] == REPLAYED_LOG_TOPIC for ref in refs), refs
    # the same log file replayed again, alone, into the same tables: its records are written once
    assert main(["replay", "--input", str(server_log), "--data-dir", str(data_dir), "--conf", str(CONF)]) == 0
    again = [e for e in table("heartbeat_events") if e["src_topic"] == REPLAYED_LOG_TOPIC]
    assert len(again) == len(from_log)
