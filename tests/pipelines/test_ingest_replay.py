"""Replay reconciles: every offsets record lands in exactly the silver table it belongs to or in quarantine,
bronze holds every readable record, and replaying the same files again (or a batch again) writes nothing twice."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.formats.dump import OFFSETS_TOPIC, DumpRecord, dump_line
from rebalance_radar.pipelines.local.sample_dump import consumer_members, example_value
from rebalance_radar.pipelines.stages.ingest import (
    OFFSETS_QUERY,
    TELEMETRY_QUERY,
    replay_checkpoint_name,
    run_ingest_replay,
)
from rebalance_radar.pipelines.storage.tables import TableCatalog
from rebalance_radar.transforms.schemas import (
    GROUP_METADATA,
    GROUP_RECORDS,
    HEARTBEAT_EVENTS,
    OFFSET_COMMITS,
    OFFSETS_RAW,
    QUARANTINE,
    TABLES,
    TELEMETRY_RAW,
    TELEMETRY_UNRECOGNISED,
)
from rebalance_radar.transforms.wire import primitives as prim
from rebalance_radar.transforms.wire.coordinator_records import RECORD_TYPES, encode_coordinator_record
from tests.pipelines.ingest_support import coordinates, duplicates, isolated_config, table

pytestmark = [pytest.mark.spark]

TELEMETRY_TOPIC = "radar.telemetry"
BASE_TS = 1_763_780_000_000
GROUP = "reconcile"


def offsets_records() -> list[tuple[bytes | None, bytes | None, str, str | None]]:
    """(key, value, expected table, expected quarantine kind) for every record type and version, tombstones,
    and every kind of bad bytes the decoder must quarantine rather than fail on."""
    out: list[tuple[bytes | None, bytes | None, str, str | None]] = []

    def add(record: tuple[bytes, bytes | None], target: str, kind: str | None = None) -> None:
        out.append((record[0], record[1], target, kind))

    commit_value = {
        "offset": 42,
        "leaderEpoch": 3,
        "metadata": "m",
        "commitTimestamp": BASE_TS,
        "expireTimestamp": BASE_TS + 1,
        "topicId": "MKXx1fIkQy2J9jXHhK8m1w",
    }
    add(
        encode_coordinator_record(0, {"group": GROUP, "topic": "orders", "partition": 0}, 0, commit_value),
        OFFSET_COMMITS.name,
    )
    for version in RECORD_TYPES[1].value.valid:
        key = {"group": GROUP, "topic": "orders", "partition": version}
        add(encode_coordinator_record(1, key, version, commit_value | {"offset": 100 + version}), OFFSET_COMMITS.name)
    for version in RECORD_TYPES[2].value.valid:
        value = {
            "protocolType": "consumer",
            "generation": version + 1,
            "protocol": "range",
            "leader": "consumer-payments-0-5f0c9a9e",
            "currentStateTimestamp": BASE_TS,
            "members": consumer_members(2, version),
        }
        add(encode_coordinator_record(2, {"group": GROUP}, version, value), GROUP_METADATA.name)
    connect = {
        "protocolType": "connect",
        "generation": 9,
        "protocol": "sessioned",
        "leader": "w-0",
        "currentStateTimestamp": BASE_TS,
        "members": [],
    }
    add(encode_coordinator_record(2, {"group": "connect-cluster"}, 3, connect), GROUP_METADATA.name)
    for record_type in RECORD_TYPES.values():
        if record_type.id in (0, 1, 2):
            continue
        key = example_value(record_type.key, record_type.key.valid.low)
        for version in record_type.value.valid:
            add(
                encode_coordinator_record(record_type.id, key, version, example_value(record_type.value, version)),
                GROUP_RECORDS.name,
            )
        add(encode_coordinator_record(record_type.id, key, None, None), GROUP_RECORDS.name)  # tombstone
    add(
        encode_coordinator_record(1, {"group": GROUP, "topic": "orders", "partition": 0}, None, None),
        OFFSET_COMMITS.name,
    )
    add(encode_coordinator_record(2, {"group": "retired"}, None, None), GROUP_METADATA.name)

    good_key, good_value = encode_coordinator_record(1, {"group": GROUP, "topic": "o", "partition": 1}, 3, commit_value)
    assert good_value is not None
    group_key, group_value = next(r[:2] for r in out if r[2] == GROUP_METADATA.name and r[1] is not None)
    assert group_key is not None and group_value is not None
    add((good_key, good_value[:-3]), QUARANTINE.name, "malformed")  # truncated value
    add((good_key[:-2], good_value), QUARANTINE.name, "malformed")  # truncated key
    add((group_key, group_value[: len(group_value) // 2]), QUARANTINE.name, "malformed")  # truncated members
    add((prim.INT16.pack(99) + b"\x00\x03abc", b"\x00\x00"), QUARANTINE.name, "unsupported")  # unknown type
    add((prim.INT16.pack(-7) + b"\x00\x01x", b"\x00\x00"), QUARANTINE.name, "unsupported")  # negative type
    add((good_key, prim.INT16.pack(9) + good_value[2:]), QUARANTINE.name, "unsupported")  # newer offset value
    add((group_key, prim.INT16.pack(5) + group_value[2:]), QUARANTINE.name, "unsupported")  # newer group value
    add((b"\xff", b"\x00\x00"), QUARANTINE.name, "malformed")  # one-byte key
    add((good_key, b""), QUARANTINE.name, "malformed")  # empty value
    out.append((None, good_value, QUARANTINE.name, "malformed"))  # no key at all
    return out


UNREADABLE_LINES = [
    "this is not json",
    json.dumps({"topic": OFFSETS_TOPIC, "offset": 1, "key": None, "value": None}),  # no partition
    json.dumps({"topic": OFFSETS_TOPIC, "partition": 0, "offset": 1, "key": "AAE=", "value": None, "codec": "rot13"}),
    json.dumps({"topic": OFFSETS_TOPIC, "partition": 0, "offset": 1, "key": "!!not base64!!", "value": None}),
    json.dumps({"topic": OFFSETS_TOPIC, "partition": 0, "offset": 1, "key": "zz", "value": None, "codec": "hex"}),
    "[1, 2, 3]",
    json.dumps({"topic": OFFSETS_TOPIC, "partition": True, "offset": 1, "key": None, "value": None}),  # a bool
    r'{"topic": "\ud800", "partition": 0, "offset": 1, "key": null, "value": null}',  # a lone surrogate
]

TELEMETRY_LINES = [
    b"[2025-11-22 02:53:24,388] INFO [GroupCoordinator 1]: Stabilized group payments generation 10 "
    b"(__consumer_offsets-12) with 2 members (kafka.coordinator.group.GroupCoordinator)",
    b"\x00\xff\xfe binary noise \x81",
]


def write_dump(path: Path) -> list[tuple[int, int, str, str | None]]:
    """The dump file; returns (partition, offset, expected table, expected kind) per offsets record."""
    records = offsets_records()
    expected = []
    lines = []
    for index, (key, value, target, kind) in enumerate(records):
        partition, offset = index % 3, index // 3
        expected.append((partition, offset, target, kind))
        lines.append(dump_line(DumpRecord(OFFSETS_TOPIC, partition, offset, BASE_TS + index, key, value)))
        if index % 10 == 0:  # unreadable lines scattered among good ones, hex and utf8 codecs too
            lines.append(UNREADABLE_LINES[(index // 10) % len(UNREADABLE_LINES)])
    lines += UNREADABLE_LINES  # every unreadable kind at least once
    lines.insert(5, dump_line(DumpRecord(OFFSETS_TOPIC, 9, 0, BASE_TS, records[1][0], records[1][1]), codec="hex"))
    expected.append((9, 0, OFFSET_COMMITS.name, None))
    for offset, line in enumerate(TELEMETRY_LINES):
        lines.append(dump_line(DumpRecord(TELEMETRY_TOPIC, 0, offset, BASE_TS + offset, None, line)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return expected


def delta_versions(config: RadarConfig) -> dict[str, int]:
    """Commits per table in its Delta log: a rerun that writes nothing adds none (Delta skips a seen txn)."""
    catalog = TableCatalog(config)
    return {name: len(list((catalog.location(s) / "_delta_log").glob("*.json"))) for name, s in TABLES.items()}


def test_replay_reconciles_and_is_idempotent(spark: SparkSession, radar_config: RadarConfig, tmp_path: Path) -> None:
    config = isolated_config(radar_config, tmp_path / "data")
    dump = tmp_path / "dump" / "mixed.jsonl"  # alone in its folder: the file source lists the folder
    dump.parent.mkdir()
    expected = write_dump(dump)
    unreadable = sum(1 for line in dump.read_text().splitlines() if line in UNREADABLE_LINES)
    assert unreadable >= len(UNREADABLE_LINES)

    counts = run_ingest_replay(config, [str(dump)])

    per_table = Counter(target for *_, target, _ in expected)
    assert counts[OFFSETS_RAW.name] == len(expected)
    assert counts[OFFSET_COMMITS.name] == per_table[OFFSET_COMMITS.name]
    assert counts[GROUP_METADATA.name] == per_table[GROUP_METADATA.name]
    assert counts[GROUP_RECORDS.name] == per_table[GROUP_RECORDS.name]
    assert counts[TELEMETRY_RAW.name] == len(TELEMETRY_LINES)
    # rows in = rows decoded + rows quarantined, for each query
    silver = sum(counts[t.name] for t in (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS))
    quarantine = table(spark, config, QUARANTINE)
    offsets_quarantine = quarantine.where(F.col("stage") != "parse_telemetry")
    assert silver + offsets_quarantine.count() == len(expected) + unreadable
    telemetry_out = counts[HEARTBEAT_EVENTS.name] + quarantine.where(F.col("stage") == "parse_telemetry").count()
    unrecognised = table(spark, config, TELEMETRY_UNRECOGNISED).agg(F.sum("records")).first()[0] or 0
    assert (counts[HEARTBEAT_EVENTS.name], telemetry_out + unrecognised) == (1, len(TELEMETRY_LINES))

    # each record in exactly the table it belongs to
    where: dict[tuple[int, int], list[str]] = {}
    for schema in (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS, QUARANTINE):
        rows = table(spark, config, schema).where(F.col("src_topic") == OFFSETS_TOPIC)
        if schema is QUARANTINE:
            rows = rows.where(F.col("stage") == "decode_offsets")  # unreadable lines have no real coordinates
        for _topic, partition, offset in coordinates(rows):
            where.setdefault((partition, offset), []).append(schema.name)
    assert where == {(p, o): [target] for p, o, target, _ in expected}

    # every quarantine row says where, what kind and why; decode failures keep their raw bytes
    rows = quarantine.collect()
    assert all(r.stage and r.kind and r.reason for r in rows), [r for r in rows if not (r.stage and r.kind)]
    decode_failures = {(r.src_partition, r.src_offset): r for r in rows if r.stage == "decode_offsets"}
    wanted = {(p, o): kind for p, o, target, kind in expected if target == QUARANTINE.name}
    assert {k: r.kind for k, r in decode_failures.items()} == wanted
    assert all(r.value is not None or r.key is not None for r in decode_failures.values())
    assert Counter(r.stage for r in rows if r.stage == "read_dump")["read_dump"] == unreadable
    # an unreadable line can be found: its file and line number (it has no Kafka coordinates, src_offset is -1)
    unreadable_at = {n for n, line in enumerate(dump.read_text().splitlines(), 1) if line in UNREADABLE_LINES}
    read_dump = [r for r in rows if r.stage == "read_dump"]
    assert {(r.src_file, r.src_line) for r in read_dump} == {(str(dump), n) for n in unreadable_at}
    assert all(r.reason.startswith(f"{dump}:{r.src_line}: ") for r in read_dump)
    assert {r.record_type for r in decode_failures.values() if r.kind == "unsupported"} >= {99, 1, 2}

    # decoded values are the encoded ones
    commits = table(spark, config, OFFSET_COMMITS).where("NOT is_tombstone AND key_version = 1").collect()
    assert sorted((r.partition, r.committed_offset, r.value_version) for r in commits if r.src_partition != 9) == [
        (v, 100 + v, v) for v in RECORD_TYPES[1].value.valid
    ]
    members = table(spark, config, GROUP_METADATA).where("protocol_type = 'consumer'").collect()
    assert all(m.member_count == 2 and m.members[1].assigned_partitions[0].partitions == [1] for m in members)

    before = delta_versions(config)

    # replaying the same files again: the checkpoint knows them, nothing is written
    assert run_ingest_replay(config, [str(dump)]) == counts

    # a crash after the Delta commits but before the checkpoint commit: the batch runs again with the same
    # batch id, and Delta's (txnAppId, txnVersion) makes every write a no-op
    checkpoint = config.checkpoint_dir / replay_checkpoint_name([str(dump)])
    for query in (OFFSETS_QUERY, TELEMETRY_QUERY):
        commits_dir = checkpoint / query / "commits"
        last = max(int(p.name) for p in commits_dir.iterdir() if p.name.isdigit())
        (commits_dir / str(last)).unlink()
        (commits_dir / f".{last}.crc").unlink(missing_ok=True)
    assert run_ingest_replay(config, [str(dump)]) == counts
    assert delta_versions(config) == before
    assert not duplicates(coordinates(table(spark, config, OFFSETS_RAW)))

    # another dump into the same tables has its own checkpoint, whose batch ids start at 0 again: its writes are
    # new (not "already committed" to Delta) and must all land
    second = tmp_path / "dump2" / "more.jsonl"
    second.parent.mkdir()
    more = [
        DumpRecord(OFFSETS_TOPIC, 0, 1000 + index, BASE_TS, key, value)
        for index, (key, value, *_) in enumerate(offsets_records()[:3])
    ]
    second.write_text("".join(dump_line(record) + "\n" for record in more), encoding="utf-8")
    grown = run_ingest_replay(config, [str(second)])
    assert grown[OFFSETS_RAW.name] == counts[OFFSETS_RAW.name] + 3
    assert grown[OFFSET_COMMITS.name] == counts[OFFSET_COMMITS.name] + 3


@pytest.mark.spark
def test_an_ingest_stage_has_its_tables_once_started(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """The tables are created while the queries start up, but the stage counts as started only once they exist:
    callers read them right after (a run's status line, a test polling a table)."""
    from rebalance_radar.pipelines.stages.ingest import IngestStage
    from rebalance_radar.pipelines.stages.sources import replay_stream
    from rebalance_radar.transforms.schemas import TABLES

    config = isolated_config(radar_config, tmp_path / "data")
    sample = Path(__file__).resolve().parents[2] / "samples" / "consumer_offsets.sample.jsonl"
    source = replay_stream(spark, [str(sample)], staging_root=config.data_dir / "replay-inputs")
    stage = IngestStage(
        spark, config, source, checkpoint_name="started", available_now=True, telemetry_from_every_other_topic=True
    )
    catalog = TableCatalog(config)
    with stage:
        missing = [t.name for t in TABLES.values() if not (catalog.location(t) / "_delta_log").is_dir()]
        assert missing == []
        stage.queries.await_all_or_raise()
    assert table(spark, config, OFFSET_COMMITS).count() > 0
