"""The detection query on real Spark and real Delta, running the real `transforms.detectors` tracker: projection,
ordering, watermark and lateness, clock ticks, the end-of-dump tick, MERGE, replay determinism, restart.

Input rows are made the way ingest makes them (tests/transforms/detectors/silver_rows.py: coordinator records as
real bytes routed by the codec, real-format broker lines and agent events), written to the silver Delta tables.
The oracle is the tracker alone, fed every event and advanced to the final watermark: what the Spark side writes
to gold must be exactly that, however micro-batches cut, reorder or delay the rows.
"""

from __future__ import annotations

import json
import random
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from rebalance_radar.pipelines.cli.monitor import summarise_detections
from rebalance_radar.pipelines.config import OWN_GROUP_PREFIX, RadarConfig
from rebalance_radar.pipelines.stages.detect import (
    DETECTOR_KEY,
    DETECTOR_ROW,
    DETECTOR_TIME,
    REPLAY_END_EMITTER,
    SOURCE_TABLES,
    detector_input,
    detector_input_projection,
    gold_batch_writer,
    packed_detector_input,
    packed_member,
    routed_detector_input,
    seal_replay_time,
    start_detect,
    start_gold_query,
    users_groups,
)
from rebalance_radar.pipelines.stages.detection_turn import detection_turn
from rebalance_radar.pipelines.stages.ingest import run_ingest_replay
from rebalance_radar.pipelines.stages.sources import kafka_source_options
from rebalance_radar.pipelines.stages.streams import Trigger
from rebalance_radar.pipelines.storage.tables import TableCatalog, ensure_tables, forget_held_keys
from rebalance_radar.transforms.detectors.group_events import group_event_from_packed, group_event_from_row
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.detectors.tracker import GroupTracker
from rebalance_radar.transforms.schemas import (
    CLOCK_TICKS,
    DECODED_OFFSETS_BATCH,
    DETECTIONS,
    DETECTOR_INPUT,
    DETECTOR_OUTPUT,
    GROUP_HEALTH,
    GROUP_METADATA,
    GROUP_RECORDS,
    HEARTBEAT_EVENTS,
    INCIDENTS,
    MEMBER_STRUCT_DDL,
    OFFSET_COMMITS,
    PARSED_TELEMETRY_BATCH,
    REBALANCES,
    DetectionKind,
    DetectionStatus,
    TableSchema,
)
from tests.pipelines.ingest_support import isolated_config, table, wait_for
from tests.transforms.detectors.silver_rows import BASE_MS, CLUSTER, TELEMETRY_TOPIC, Member, Silver, run

pytestmark = pytest.mark.spark

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "consumer_offsets.sample.jsonl"
G = "orders"
A = Member("consumer-orders-1-aaa", [("orders", 0), ("orders", 1)], client_id="worker-a")
B = Member("consumer-orders-2-bbb", [("orders", 2), ("orders", 3)], client_id="worker-b", host="10.0.0.2")
ALL_TO_A = Member(A.member_id, [("orders", p) for p in range(4)], client_id="worker-a")
SILVER_TABLES: dict[str, TableSchema] = {
    t.name: t for t in (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS, HEARTBEAT_EVENTS, CLOCK_TICKS)
}
LATENESS_MS = 2000  # conf/local.yml detect.lateness_ms, which the tests' config keeps


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def naive(t_ms: int) -> datetime:
    """How a TIMESTAMP read back from Delta looks in the tests' session (UTC, naive)."""
    return datetime.fromtimestamp(t_ms / 1000, tz=UTC).replace(tzinfo=None)


# --- scenario rows ---------------------------------------------------------------------------------------------


def expiry_scenario() -> tuple[Silver, int]:
    """Generation 7 [A, B]; B's heartbeats stop at t+19 s, the 4.x coordinator removes it at t+31 s, generation 8
    [A] at t+32.5 s; A keeps heartbeating to t+40 s. Returns (rows, t)."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A, B], t)
    for beat in range(t + 1000, t + 40_000, 3000):
        s.agent("heartbeat", G, beat, member_id=A.member_id, generation=7, client_id=A.client_id)
        if beat < t + 20_000:
            s.agent("heartbeat", G, beat, member_id=B.member_id, generation=7, client_id=B.client_id)
    expired = t + 31_000
    s.broker(f"Member {B.member_id} in group {G} has failed, removing it from the group.", expired)
    s.broker(
        f"Preparing to rebalance group {G} in state PreparingRebalance with old generation 7 "
        f"(reason: removing member {B.member_id} on heartbeat expiration).",
        expired,
    )
    s.generation(G, 8, [ALL_TO_A], expired + 1500)
    s.commit(G, "orders", 0, 120, expired + 2500)
    return s, t


def tick(s: Silver, t_ms: int) -> dict[str, Any]:
    """A clock tick row, as ingest writes `radar.clock/1` records to `clock_ticks`."""
    row = s._base(CLOCK_TICKS.name, TELEMETRY_TOPIC, 0, t_ms)
    row["tick_time"], row["emitter"] = row["event_time"], "radar-run@test"
    s.rows.append(row)
    return row


# --- writing silver, reading gold --------------------------------------------------------------------------------


def append(spark: SparkSession, config: RadarConfig, rows: Sequence[dict[str, Any]]) -> None:
    """Write `rows` (DETECTOR_INPUT-shaped, any mix of tables, in the given order) to their silver tables, one
    Delta commit per table, as an ingest micro-batch would."""
    catalog = TableCatalog(config)
    by_table: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        schema = SILVER_TABLES[row["src_table"]]
        values = dict(row)
        if schema is OFFSET_COMMITS:
            values["commit_date"] = date.fromtimestamp(ms(row["src_timestamp"]) / 1000)
        by_table.setdefault(schema.name, []).append(tuple(values.get(name) for name in schema.column_names))
    for name, full in by_table.items():
        schema = SILVER_TABLES[name]
        frame = spark.createDataFrame(full, schema.ddl)
        frame.write.format("delta").mode("append").save(str(catalog.location(schema)))


def gold_detections(spark: SparkSession, config: RadarConfig) -> dict[str, dict[str, Any]]:
    return {row["detection_id"]: row.asDict() for row in table(spark, config, DETECTIONS).collect()}


def run_once(spark: SparkSession, config: RadarConfig, checkpoint: str = "detect") -> None:
    query = start_detect(spark, config, checkpoint_name=checkpoint, available_now=True).detection_query
    query.awaitTermination(600)
    assert query.exception() is None, query.exception()


def comparable(detections: dict[str, dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What must match between two runs, or a run and the oracle: ids, kinds, members, times, status, evidence."""
    out = []
    for d in detections.values():
        times = [d[name] for name in ("first_seen", "last_seen", "detected_at", "resolved_at")]
        times = [None if v is None else (v.replace(tzinfo=None) if v.tzinfo is None else naive(ms(v))) for v in times]
        out.append((d["detection_id"], d["kind"], d["member_id"], d["generation"], *times, d["status"], d["summary"]))
    return sorted(out)


def oracle(s: Silver, watermark_ms: int) -> dict[str, dict[str, Any]]:
    """The tracker alone over every row of `s`, advanced once to `watermark_ms`."""
    return run(G, s.rows, watermark_ms).detections


@pytest.fixture
def config(radar_config: RadarConfig, tmp_path: Path, spark: SparkSession) -> RadarConfig:
    config = isolated_config(radar_config, tmp_path / "data")
    assert config.detect.lateness_ms == LATENESS_MS
    ensure_tables(spark, config)
    return config


@pytest.fixture(scope="module")
def replayed_expiry(
    spark: SparkSession, radar_config: RadarConfig, tmp_path_factory: pytest.TempPathFactory
) -> tuple[RadarConfig, Silver, int]:
    """The expiry scenario with clock ticks to t+49 s, appended in 8 s chunks of event time (each newest first) and
    detected in one availableNow run: the replay both the restart test and the live test compare with (read only)."""
    s, t = expiry_scenario()
    for second in range(41, 50):
        tick(s, t + second * 1000)
    replayed = isolated_config(radar_config, tmp_path_factory.mktemp("replayed-expiry"))
    ensure_tables(spark, replayed)
    for chunk in _chunks(s, 8000):
        append(spark, replayed, chunk)
    run_once(spark, replayed)
    return replayed, s, t


# --- tests -------------------------------------------------------------------------------------------------------


def test_the_kafka_path_gives_the_rows_silver_gives(spark: SparkSession, config: RadarConfig) -> None:
    """A live run's detection query decodes the Kafka streams itself (`detector_input_from_kafka`): for the same
    records, its `DETECTOR_INPUT` rows must be exactly those the silver tables give the replay's detection query
    (`detector_input_projection` over ingest's split), for every detector source table."""
    from rebalance_radar.pipelines.formats.dump import read_dump
    from rebalance_radar.pipelines.stages.ingest import (
        parse_telemetry,
        route_offsets,
        split_decoded,
        split_parsed_telemetry,
    )
    from rebalance_radar.transforms.telemetry.clock import clock_tick_record

    records = [(r.key, r.value, r.topic, r.partition, r.offset, r.timestamp) for r in read_dump([SAMPLE])]
    agent = {
        "schema": "radar.event/1",
        "event": "heartbeat",
        "ts": BASE_MS + 2000,
        "group_id": G,
        "member_id": A.member_id,
        "generation": 7,
        "client_id": A.client_id,
        "details": {"partition": "3"},
    }
    extra = [json.dumps(agent).encode(), clock_tick_record(BASE_MS + 3000, "radar-run@test")]
    records += [(None, value, TELEMETRY_TOPIC, 0, 100 + i, BASE_MS + 3000) for i, value in enumerate(extra)]
    rows = [
        (key, value, topic, partition, offset, datetime.fromtimestamp(ts / 1000, tz=UTC), None)
        for key, value, topic, partition, offset, ts in records
    ]
    kafka_ddl = "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, "
    frame = spark.createDataFrame(rows, kafka_ddl + "source_error STRING")
    offsets = route_offsets(frame.where(F.col("topic") == config.kafka.offsets_topic), spread=False)
    telemetry = parse_telemetry(frame.where(F.col("topic") == TELEMETRY_TOPIC), spread=False)

    direct = routed_detector_input(offsets, config, DECODED_OFFSETS_BATCH).unionByName(
        routed_detector_input(telemetry, config, PARSED_TELEMETRY_BATCH)
    )
    silver = {**split_decoded(offsets, config), **split_parsed_telemetry(telemetry, config)}
    via_silver = [detector_input_projection(silver[name], SILVER_TABLES[name]) for name in SILVER_TABLES]
    expected = via_silver[0]
    for projected in via_silver[1:]:
        expected = expected.unionByName(projected)

    def comparable_rows(frame: Any) -> list[str]:
        return sorted(repr(sorted(row.asDict(recursive=True).items())) for row in frame.collect())

    assert direct.columns == list(DETECTOR_INPUT.column_names)
    assert comparable_rows(direct) == comparable_rows(expected)
    sources = {row["src_table"] for row in direct.select("src_table").distinct().collect()}
    assert sources == set(SILVER_TABLES)  # every detector source table is exercised


def odd_members(member: dict[str, Any]) -> list[dict[str, Any] | None]:
    """Members a decoder could hand the tracker, each shaped to stray from the usual one: partitions that sort
    differently as numbers and as texts, topics that sort differently by code point and by case, a missing topic,
    partition list or partition, missing subscribed topics, no member id, unset and negative timeouts, a host
    without its slash, empty texts, a member that is null."""
    return [
        member | {"member_id": "m-1", "session_timeout_ms": 45_000, "rebalance_timeout_ms": 300_000,
                  "client_host": "10.0.0.9", "group_instance_id": "", "client_id": "",
                  "subscribed_topics": ["zeta", "Zeta", "été", "alpha", "🛒", None],
                  "assigned_partitions": [
                      {"topic": "orders", "partitions": [10, 2, 1]}, {"topic": None, "partitions": [3]},
                      {"topic": "été", "partitions": None}, {"topic": "Orders", "partitions": [None, 0]},
                      None, {"topic": "orders-1", "partitions": [0]},
                  ]},
        member | {"member_id": "m-2", "session_timeout_ms": -1, "rebalance_timeout_ms": 0, "client_host": None,
                  "subscribed_topics": None, "assigned_partitions": None, "group_instance_id": "static-2"},
        member | {"member_id": "m-3", "session_timeout_ms": None, "client_host": "/", "subscribed_topics": [],
                  "assigned_partitions": []},
        member | {"member_id": ""},
        member | {"member_id": None},
        None,
    ]  # fmt: skip


def test_the_packed_rows_give_the_tracker_the_events_the_full_rows_give(spark: SparkSession) -> None:
    """The trackers' operator receives each `DETECTOR_INPUT` row as its key, its event time and one JSON text
    (`packed_detector_input`), converted when the watermark reaches it (`GroupTracker.accept_packed`): every row
    must convert to the event the full row converts to (the detector tests' oracle), members' partitions and
    timeouts, an empty member list (not a missing one), a tombstone, broker and client lines, agent details and a
    non-ASCII group included; and a tracker fed the packed rows, snapshotted between watermarks that cut through
    them, must decide what the tracker fed the events decides."""
    s, t = expiry_scenario()
    s.generation(G, 9, [], t + 50_000)  # the group's last member left: a generation with no members
    s.record("ConsumerGroupMetadata", {"groupId": "größe-🛒"}, {"epoch": 3}, t + 51_000)
    s.record("ConsumerGroupMetadata", {"groupId": "größe-🛒"}, None, t + 52_000)  # a tombstone
    s.client(A.client_id, G, "Request joining group due to: need to re-join with the given member-id", t + 53_000)
    s.agent("assignment", G, t + 54_000, member_id=A.member_id, generation=9, details={"revoked": "orders-0,orders-1"})
    tick(s, t + 60_000)
    odd_group = next(r for r in s.rows if r["src_table"] == GROUP_METADATA.name and r["members"])
    s.rows.append(odd_group | {"group_id": "odd", "src_offset": 10**6, "members": odd_members(odd_group["members"][0])})
    frame = spark.createDataFrame([tuple(row[name] for name in DETECTOR_INPUT.column_names) for row in s.rows],
                                  DETECTOR_INPUT.ddl)  # fmt: skip

    packed = packed_detector_input(frame)
    assert packed.columns == [*DETECTOR_KEY, DETECTOR_TIME, DETECTOR_ROW]
    collected = packed.collect()
    received = []
    for row in collected:
        assert not {*DETECTOR_KEY} & json.loads(row[DETECTOR_ROW]).keys()
        event = group_event_from_packed(row["cluster"], row["group_id"], row[DETECTOR_ROW])
        assert event is None or event.event_time_ms == row[DETECTOR_TIME]
        received.append(event)
    expected = [group_event_from_row(row) for row in s.rows]

    def coordinates(event: Any) -> tuple[str, int]:
        return event.src_topic, event.src_offset

    assert len(received) == len(expected) == len(s.rows)
    assert sorted(filter(None, received), key=coordinates) == sorted(filter(None, expected), key=coordinates)
    assert received.count(None) == expected.count(None) >= 1  # the tick
    emptied = [e for e in expected if e is not None and e.generation == 9 and e.src_table == GROUP_METADATA.name]
    assert [e.members for e in emptied] == [()]
    assert {e.group_id for e in expected if e is not None} >= {G, "größe-🛒"}
    with_members = [e for e in expected if e is not None and e.members and e.group_id != "odd"]
    assert with_members and all(m.partitions and m.session_timeout_ms for e in with_members for m in e.members)
    assert any(e is not None and e.details for e in expected)
    (odd,) = [e for e in expected if e is not None and e.group_id == "odd"]
    assert [m.member_id for m in odd.members or ()] == ["m-1", "m-2", "m-3"]
    assert odd.members is not None and odd.members[0].partitions[:3] == ("None-3", "Orders-0", "Orders-None")

    # the tracker: packed rows in two batches, read back from its snapshot before each watermark, as the operator
    steps = [t + 20_000, t + 32_000, t + 33_000, t + 60_000]
    tracker = GroupTracker(CLUSTER, G, DetectorThresholds())
    ours = [(row[DETECTOR_TIME], row[DETECTOR_ROW]) for row in collected if row["group_id"] == G]
    tracker.accept_packed(ours[: len(ours) // 2])
    detections: dict[str, dict[str, Any]] = {}
    for index, watermark in enumerate(steps):
        tracker = GroupTracker.restore(tracker.snapshot(), DetectorThresholds())
        if index == 1:
            tracker.accept_packed(ours[len(ours) // 2 :])
        detections |= {row["detection_id"]: row for row in tracker.advance_to(watermark).detections}
    oracle_run = run(G, s.rows, steps[-1], steps=steps[:-1])
    assert detections == oracle_run.detections
    assert {row["kind"] for row in detections.values()} >= {str(DetectionKind.HEARTBEAT_EXPIRATION)}
    assert tracker.next_wakeup() is None or tracker.next_wakeup() > steps[-1]


def test_members_shaped_by_spark_convert_as_the_whole_members_do(spark: SparkSession) -> None:
    """`packed_member` (Spark) and the tracker's reading of it against `group_events`' conversion of the whole
    struct, on 400 members drawn at random (seeded): texts that sort differently by case, code point and as numbers,
    empty texts, nulls anywhere the struct allows one, timeouts unset, negative or at their limit. One Spark job."""
    rng = random.Random(1071)
    words = ["orders", "Orders", "orders-1", "été", "zeta", "Zeta", "🛒", "a", "", "10", "9", "größe"]

    def maybe(value: Any, chance: float = 0.15) -> Any:
        return None if rng.random() < chance else value

    def partitions() -> list[int | None]:
        return [maybe(rng.randint(-1, 12), 0.1) for _ in range(rng.randint(0, 4))]

    def member() -> dict[str, Any] | None:
        return maybe({
            "member_id": maybe(rng.choice(["m-1", "consumer-1-5f0c9a9e", "", "größe-🛒"]), 0.1),
            "group_instance_id": maybe(rng.choice(words)),
            "client_id": maybe(rng.choice(words)),
            "client_host": maybe(rng.choice(["/10.0.0.1", "10.0.0.2", "/", "", "//10.0.0.3"])),
            "rebalance_timeout_ms": maybe(rng.choice([-1, 0, 1, 300_000, 2**31 - 1])),
            "session_timeout_ms": maybe(rng.choice([-1, 0, 1, 45_000, 2**31 - 1])),
            "subscribed_topics": maybe([maybe(rng.choice(words), 0.1) for _ in range(rng.randint(0, 4))]),
            "assigned_partitions": maybe([
                maybe({"topic": maybe(rng.choice(words), 0.1), "partitions": maybe(partitions(), 0.1)}, 0.1)
                for _ in range(rng.randint(0, 4))
            ]),
        }, 0.05)  # fmt: skip

    members = [member() for _ in range(400)]
    frame = spark.createDataFrame(list(enumerate(members)), f"i INT, m {MEMBER_STRUCT_DDL}")
    shaped = frame.select("i", F.to_json(F.array(packed_member(F.col("m"))), {"ignoreNullFields": "true"}).alias("t"))
    texts = {row["i"]: row["t"] for row in shaped.collect()}
    row = {"event_time": BASE_MS, "src_table": GROUP_METADATA.name, "src_offset": 1, "generation": 1}
    converted, expected = [], []
    for i, raw in enumerate(members):
        packed = group_event_from_packed(CLUSTER, "g", json.dumps(row | {"members": json.loads(texts[i])}))
        whole = group_event_from_row(row | {"cluster": CLUSTER, "group_id": "g", "members": [raw]})
        assert packed is not None and whole is not None
        converted.append(packed.members)
        expected.append(whole.members)
    assert converted == expected
    kept = [m for one in expected for m in one or ()]
    assert len(kept) > 200 and any(m.partitions for m in kept) and any(m.session_timeout_ms for m in kept)
    assert any(len(m.partitions) > 2 for m in kept) and any("None" in p for m in kept for p in m.partitions)


def test_projection_of_replayed_silver_tables(spark: SparkSession, config: RadarConfig) -> None:
    counts = run_ingest_replay(config, [str(SAMPLE)])
    rows = detector_input(spark, config, streaming=False)

    assert tuple(rows.columns) == DETECTOR_INPUT.column_names
    assert [f.dataType.simpleString() for f in rows.schema.fields] == [
        f.dataType.simpleString() for f in spark.createDataFrame([], DETECTOR_INPUT.ddl).schema.fields
    ]
    per_table = {r["src_table"]: r["count"] for r in rows.groupBy("src_table").count().collect()}
    expected = {t.name: counts[t.name] for t in (OFFSET_COMMITS, GROUP_METADATA, GROUP_RECORDS, HEARTBEAT_EVENTS)}
    assert {k: v for k, v in per_table.items()} == {k: v for k, v in expected.items() if v}
    assert sum(expected.values()) > 0
    commits = rows.where("src_table = 'offset_commits'")
    assert commits.where("event_time IS NULL OR event_time <> src_timestamp").count() == 0
    assert commits.where("committed_offset IS NULL AND NOT is_tombstone").count() == 0
    assert commits.where("members IS NOT NULL OR event IS NOT NULL").count() == 0
    metadata = rows.where("src_table = 'group_metadata' AND NOT is_tombstone")
    assert metadata.count() == 0 or metadata.where("generation IS NULL").count() == 0


def test_unordered_late_rows_merge_and_the_end_of_dump_tick(spark: SparkSession, config: RadarConfig) -> None:
    """Batch 1 arrives newest first and lacks the coordinator's removal lines; they arrive in batch 2, 1.5 s late
    (within the 2 s lateness). Gold must equal the tracker alone on the ordered events, an at-risk detection
    opened in batch 1 must be updated in place (same id, one row), and the end-of-dump tick must let the last
    `lateness` of events be decided."""
    s, t = expiry_scenario()
    expired = t + 31_000
    removal = [r for r in s.rows if r["src_table"] == HEARTBEAT_EVENTS.name and ms(r["event_time"]) == expired]
    assert removal, "the scenario's removal lines parse into heartbeat events"
    first = [r for r in s.rows if ms(r["event_time"]) <= expired + 1500 and r not in removal]
    append(spark, config, list(reversed(first)))  # newest first: the watermark after it is t+32.5 s - 2 s
    run_once(spark, config)
    after_first = gold_detections(spark, config)
    late = [r for r in s.rows if r not in first]
    assert min(ms(r["event_time"]) for r in late) == expired  # late, but above the watermark t+30.5 s
    append(spark, config, late)
    run_once(spark, config)
    newest = max(ms(r["event_time"]) for r in s.rows)
    assert comparable(gold_detections(spark, config)) == comparable(oracle(s, newest - LATENESS_MS))

    def last_event_at() -> datetime:
        (health,) = table(spark, config, GROUP_HEALTH).collect()
        return health["last_event_at"]

    assert last_event_at() == naive(newest - 3000)  # A's heartbeat at t+34 s; the one at t+37 s is buffered
    sealed_at = seal_replay_time(spark, config)
    assert sealed_at == newest + LATENESS_MS
    assert seal_replay_time(spark, config) == sealed_at  # written once
    ticks = table(spark, config, CLOCK_TICKS).where(f"emitter = '{REPLAY_END_EMITTER}'").count()
    assert ticks == 1
    run_once(spark, config)
    final = gold_detections(spark, config)
    assert comparable(final) == comparable(oracle(s, newest))
    assert last_event_at() == naive(newest)  # the end-of-dump tick let the last event through

    # what batch 1 alone could decide: B at risk 7 s after its last heartbeat (t+19 s), still open
    (risk_first,) = [d for d in after_first.values() if d["kind"] == str(DetectionKind.HEARTBEAT_AT_RISK)]
    assert (risk_first["member_id"], risk_first["status"]) == (B.member_id, str(DetectionStatus.OPEN))
    assert risk_first["detected_at"] == naive(t + 19_000 + 7_000)
    kinds = sorted(d["kind"] for d in final.values())
    assert kinds == [str(DetectionKind.HEARTBEAT_AT_RISK), str(DetectionKind.HEARTBEAT_EXPIRATION)]
    risk = final[risk_first["detection_id"]]  # the same row, updated (MERGE by id)
    assert risk["status"] == str(DetectionStatus.RESOLVED)
    assert table(spark, config, DETECTIONS).count() == len(final) == 2
    (expiry,) = [d for d in final.values() if d["kind"] == str(DetectionKind.HEARTBEAT_EXPIRATION)]
    assert (expiry["member_id"], expiry["generation"]) == (B.member_id, 7)
    evidence = json.loads(expiry["evidence"])
    assert any(e["table"] == HEARTBEAT_EVENTS.name for e in evidence)
    rebalances = table(spark, config, REBALANCES).collect()
    assert [(r["cause"], r["expired"]) for r in rebalances if r["stabilized_at"]] == [
        ("heartbeat_expiration", [B.member_id])
    ]
    health = table(spark, config, GROUP_HEALTH).collect()
    assert [(h["group_id"], h["generation"], h["members"]) for h in health] == [(G, 8, 1)]


def test_clock_ticks_alone_fire_a_silence_detection(spark: SparkSession, config: RadarConfig) -> None:
    """The group goes silent after t+2 s; only the clock speaks. At 70 % of A's 10 s session timeout after its
    last heartbeat, heartbeat_at_risk must fire live, decided at that event time."""
    s = Silver()
    t = BASE_MS
    s.generation(G, 7, [A], t)
    for beat in (t + 1000, t + 2000):
        s.agent("heartbeat", G, beat, member_id=A.member_id, generation=7, client_id=A.client_id)
    append(spark, config, s.rows)
    stage = start_detect(spark, config, checkpoint_name="live")
    query = stage.detection_query
    try:
        wait_for(lambda: query.lastProgress is not None, 600, "the first detection batch")
        for first in (3, 8, 13):  # three commits of ticks, one per second of event time
            append(spark, config, [tick(s, t + second * 1000) for second in range(first, first + 5)])
        wait_for(lambda: len(gold_detections(spark, config)) > 0, 600, "the silence detection fired by ticks")
    except AssertionError as failure:
        raise AssertionError(f"{failure}; last progress {query.lastProgress}") from None
    finally:
        stage.stop()
    assert query.exception() is None
    (found,) = gold_detections(spark, config).values()
    assert (found["kind"], found["member_id"]) == (str(DetectionKind.HEARTBEAT_AT_RISK), A.member_id)
    assert found["detected_at"] == naive(t + 2000 + 7000)


def gold_rows(spark: SparkSession, config: RadarConfig, schema: TableSchema) -> list[tuple[Any, ...]]:
    """A gold table's rows, comparable across two data dirs (sorted tuples)."""
    return sorted((tuple(r) for r in table(spark, config, schema).collect()), key=repr)


def _confirmed_ids(spark: SparkSession, config: RadarConfig) -> set[str]:
    """Ids with a confirmed version written: in `detections` (a first row is appended at once) or staged for the
    gold query (a later version of a row the table holds)."""
    confirmed = F.col("status").isin("open", "resolved")
    ids = {r["detection_id"] for r in table(spark, config, DETECTIONS).where(confirmed).collect()}
    staged = table(spark, config, DETECTOR_OUTPUT)
    if "detection_id" in staged.columns:
        staged = staged.where((F.col("target") == DETECTIONS.name) & confirmed)
        ids |= {r["detection_id"] for r in staged.select("detection_id").collect()}
    return ids


def test_a_live_run_stages_history_and_health_and_ends_with_the_gold_of_a_replay(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path, replayed_expiry: tuple[RadarConfig, Silver, int]
) -> None:
    """Live, the detection query runs no MERGE: a detection's first row (here the provisional row of its preview)
    is appended to `detections` at once, and every later version of it, and of `rebalances` and `group_health`
    rows, goes to `detector_output`; the gold query MERGEs those on its own trigger, and stopping the stage drains
    what is left. The gold tables must end exactly as a replay (availableNow: one query MERGEing all three) leaves
    them, and a micro-batch of staged rows written twice (a batch redone after a crash) changes nothing."""
    replayed, s, _t = replayed_expiry  # the rows in chunks, one availableNow run
    live = isolated_config(radar_config, tmp_path / "live")
    ensure_tables(spark, live)
    append(spark, live, s.rows)  # live: every row in one commit
    expected = {schema.name: gold_rows(spark, replayed, schema) for schema in (REBALANCES, DETECTIONS, GROUP_HEALTH)}
    assert expected[REBALANCES.name] and expected[GROUP_HEALTH.name] and expected[DETECTIONS.name]
    for schema in (REBALANCES, DETECTIONS, GROUP_HEALTH):  # new tables: their first rows appended, not MERGEd
        history = spark.sql(f"DESCRIBE HISTORY delta.`{TableCatalog(replayed).location(schema)}`").collect()
        assert [r["operation"] for r in history][-2] == "WRITE", schema.name
    replayed_statuses = {r["status"] for r in table(spark, replayed, DETECTIONS).collect()}
    assert replayed_statuses <= {"open", "resolved"}  # a replay shows nothing provisional
    expected_ids = {r["detection_id"] for r in table(spark, replayed, DETECTIONS).collect()}

    stage = start_detect(spark, live, checkpoint_name="live")
    try:
        assert [q.name for q in stage.queries] == ["radar-detect-live", "radar-gold-live"]
        wait_for(lambda: _confirmed_ids(spark, live) == expected_ids, 600, "the confirmed live detections")
    finally:
        stage.stop()  # drains detector_output into rebalances, group_health and detections
    assert all(q.exception() is None for q in stage.queries)
    staged = table(spark, live, DETECTOR_OUTPUT)
    assert {r["target"] for r in staged.select("target").distinct().collect()} == {
        REBALANCES.name,
        GROUP_HEALTH.name,
        DETECTIONS.name,
    }
    for schema in (REBALANCES, DETECTIONS, GROUP_HEALTH):
        assert gold_rows(spark, live, schema) == expected[schema.name], schema.name

    # the first micro-batch (its watermark still 0) previewed the expiry and the at-risk before it: provisional rows,
    # appended, under the ids a replay gives them (A's at-risk at t+44 s is past the newest event, t+37 s: only the
    # clock's watermark decides it)
    location = TableCatalog(live).location(DETECTIONS)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{location}`").collect()
    first_write = min(r["version"] for r in history if r["operation"] != "CREATE TABLE")
    assert [r["operation"] for r in history if r["version"] == first_write] == ["WRITE"]
    shown = spark.read.format("delta").option("versionAsOf", first_write).load(str(location)).collect()
    assert {r["status"] for r in shown} == {str(DetectionStatus.PROVISIONAL)}
    kinds = {r["detection_id"]: r["kind"] for r in table(spark, replayed, DETECTIONS).collect()}
    assert sorted(kinds[r["detection_id"]] for r in shown) == ["heartbeat_at_risk", "heartbeat_expiration"]
    assert len(expected_ids) == 3

    # the staged rows once more, as a redone micro-batch appends them: the upsert leaves gold as it was
    routed = staged.drop("staged_at")
    again = spark.createDataFrame(routed.collect(), routed.schema)
    gold_batch_writer(live, staged=True)(again, 0)
    start_gold_query(spark, live, "live", Trigger(True)).awaitTermination(600)
    for schema in (REBALANCES, GROUP_HEALTH, DETECTIONS):
        assert gold_rows(spark, live, schema) == expected[schema.name], schema.name
    assert table(spark, live, DETECTOR_OUTPUT).count() == 2 * again.count()

    # the detections once more, as a batch redone in a new process (which knows no ids, reads them, finds them):
    # staged, then MERGEd by the gold query, nothing doubled
    forget_held_keys(location)
    stored = table(spark, live, DETECTIONS)
    redone = spark.createDataFrame(stored.collect(), stored.schema)
    redone = redone.withColumn("target", F.lit(DETECTIONS.name)).withColumn("emit_seq", F.lit(0).cast("bigint"))
    redone = redone.select(  # the operator's routed rows carry every gold column (null where not this table's)
        *(
            F.col(c.name) if c.name in redone.columns else F.lit(None).cast(c.ddl).alias(c.name)
            for c in DETECTOR_OUTPUT.columns
            if c.name != "staged_at"
        )
    )
    gold_batch_writer(live, staged=True)(redone, 0)
    start_gold_query(spark, live, "live", Trigger(True)).awaitTermination(600)
    assert gold_rows(spark, live, DETECTIONS) == expected[DETECTIONS.name]
    assert spark.sql(f"DESCRIBE HISTORY delta.`{location}`").first()["operation"] == "MERGE"


def _detection(detection_id: str, status: DetectionStatus, last_seen_ms: int, seq: int) -> dict[str, Any]:
    """A routed `detections` row (what the operator emits)."""
    return {
        "target": DETECTIONS.name,
        "emit_seq": seq,
        "cluster": CLUSTER,
        "detection_id": detection_id,
        "kind": str(DetectionKind.HEARTBEAT_AT_RISK),
        "severity": "info",
        "group_id": G,
        "member_id": B.member_id,
        "first_seen": naive(BASE_MS),
        "last_seen": naive(last_seen_ms),
        "detected_at": naive(last_seen_ms),
        "status": str(status),
        "summary": f"{status} at {last_seen_ms}",
        "evidence": "[]",
    }


def test_a_provisional_row_is_replaced_by_what_the_watermark_decides(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """The upsert's order of versions, on Delta (replay's writer: every write MERGEs once the id is held): a
    withdrawal replaces a provisional row; a provisional row (a redone micro-batch) replaces neither a withdrawal
    nor a confirmation; a confirmation replaces both, even with an earlier last_seen; in one batch the
    confirmation wins."""
    config = isolated_config(radar_config, tmp_path / "data")
    ensure_tables(spark, config)
    write = gold_batch_writer(config)
    columns = [c.name for c in (*DETECTOR_OUTPUT.columns,) if c.name != "staged_at"]

    def batch(*rows: dict[str, Any]) -> None:
        frame = spark.createDataFrame([tuple(r.get(c) for c in columns) for r in rows], schema=routed_schema)
        write(frame, 0)

    def stored() -> dict[str, tuple[str, int]]:
        return {
            r["detection_id"]: (r["status"], ms(r["last_seen"].replace(tzinfo=UTC)))
            for r in table(spark, config, DETECTIONS).collect()
        }

    routed_schema = table(spark, config, DETECTOR_OUTPUT).drop("staged_at").schema
    p, w, o = DetectionStatus.PROVISIONAL, DetectionStatus.WITHDRAWN, DetectionStatus.OPEN
    batch(_detection("x", p, BASE_MS + 9000, 1))
    assert stored() == {"x": ("provisional", BASE_MS + 9000)}
    batch(_detection("x", w, BASE_MS + 9000, 2))
    assert stored() == {"x": ("withdrawn", BASE_MS + 9000)}
    batch(_detection("x", p, BASE_MS + 9500, 3))
    assert stored() == {"x": ("withdrawn", BASE_MS + 9000)}
    batch(_detection("x", o, BASE_MS + 5000, 4))
    assert stored() == {"x": ("open", BASE_MS + 5000)}
    batch(
        _detection("x", p, BASE_MS + 9900, 5),
        _detection("y", o, BASE_MS + 3000, 7),
        _detection("y", p, BASE_MS + 4000, 6),
    )
    assert stored() == {"x": ("open", BASE_MS + 5000), "y": ("open", BASE_MS + 3000)}


def test_the_two_live_writers_of_detections_take_turns(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """Live, the detection query appends new detections while the gold query MERGEs later versions of held ones.
    Delta OSS runs both at Serializable isolation, where the MERGE fails (ConcurrentAppendException) if an append
    commits while it runs: seen in the live benchmark, the gold query died. A MERGE that collides runs again
    holding the lock the appends take. Both writers at once, several rounds: no failure, every id once, each the
    newest version written."""
    config = isolated_config(radar_config, tmp_path / "data")
    ensure_tables(spark, config)
    detection_query = gold_batch_writer(config, staged=True)
    gold_query = gold_batch_writer(config)
    columns = [c.name for c in DETECTOR_OUTPUT.columns if c.name != "staged_at"]
    routed_schema = table(spark, config, DETECTOR_OUTPUT).drop("staged_at").schema

    def frame(rows: list[dict[str, Any]]) -> Any:
        return spark.createDataFrame([tuple(r.get(c) for c in columns) for r in rows], schema=routed_schema)

    p, o = DetectionStatus.PROVISIONAL, DetectionStatus.OPEN
    held = [f"held-{i}" for i in range(6)]
    detection_query(frame([_detection(i, p, BASE_MS + 1000, 1) for i in held]), 0)
    rounds = 4

    def appends() -> None:
        for r in range(rounds):
            detection_query(frame([_detection(f"new-{r}-{i}", p, BASE_MS + 2000, 1) for i in range(3)]), r + 1)

    def merges() -> None:
        for r in range(rounds):
            gold_query(frame([_detection(i, o, BASE_MS + 1000 + r, 2 + r) for i in held]), r)

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = [pool.submit(appends), pool.submit(merges)]
    for future in done:
        future.result()
    rows = [r.asDict() for r in table(spark, config, DETECTIONS).collect()]
    ids = [r["detection_id"] for r in rows]
    assert len(ids) == len(set(ids)) == len(held) + rounds * 3
    by_id = {r["detection_id"]: r for r in rows}
    assert {by_id[i]["status"] for i in held} == {"open"}
    assert {ms(by_id[i]["last_seen"].replace(tzinfo=UTC)) for i in held} == {BASE_MS + 1000 + rounds - 1}
    assert {r["status"] for r in rows if r["detection_id"].startswith("new-")} == {"provisional"}


def test_a_live_detection_batch_runs_alone_the_gold_writes_between_batches(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path
) -> None:
    """On two cores a gold MERGE beside a live detection micro-batch stretched it 3-4x (the latency's tail), and a
    MERGE colliding with a detection's append was redone: the detection batch holds the turn for its whole body, the
    gold query for each write. While the turn is held (as by a detection batch), neither writes anything; released,
    both complete their writes."""
    config = isolated_config(radar_config, tmp_path / "data")
    ensure_tables(spark, config)
    columns = [c.name for c in DETECTOR_OUTPUT.columns if c.name != "staged_at"]
    routed_schema = table(spark, config, DETECTOR_OUTPUT).drop("staged_at").schema

    def frame(rows: list[dict[str, Any]]) -> Any:
        return spark.createDataFrame([tuple(r.get(c) for c in columns) for r in rows], schema=routed_schema)

    p, o = DetectionStatus.PROVISIONAL, DetectionStatus.OPEN
    writes = {
        "detection batch": lambda: gold_batch_writer(config, staged=True)(frame([_detection("d", p, BASE_MS, 1)]), 0),
        "gold query": lambda: gold_batch_writer(config)(frame([_detection("g", o, BASE_MS, 1)]), 0),
    }
    with ThreadPoolExecutor(max_workers=len(writes)) as pool:
        with detection_turn():
            pending = {name: pool.submit(write) for name, write in writes.items()}
            waited = wait(pending.values(), timeout=3.0)
            assert waited.done == set()  # every write waits for the turn
            assert table(spark, config, DETECTIONS).count() == 0
        for future in pending.values():
            future.result(timeout=120)
    assert sorted(r["detection_id"] for r in table(spark, config, DETECTIONS).collect()) == ["d", "g"]


def _chunks(s: Silver, size_ms: int) -> list[list[dict[str, Any]]]:
    """The rows in arrival order, cut every `size_ms` of event time, each chunk written newest first."""
    chunks: dict[int, list[dict[str, Any]]] = {}
    start = min(ms(r["event_time"]) for r in s.rows)
    for row in s.rows:
        chunks.setdefault((ms(row["event_time"]) - start) // size_ms, []).append(row)
    return [list(reversed(chunks[k])) for k in sorted(chunks)]


def test_replay_determinism_one_run_versus_many_and_restarts(
    spark: SparkSession, radar_config: RadarConfig, tmp_path: Path, replayed_expiry: tuple[RadarConfig, Silver, int]
) -> None:
    """The same rows and ticks, detected in one availableNow run and in several runs restarted from the
    checkpoint: the same detection ids, kinds and detected_at, equal to the tracker alone; a restart with nothing
    new writes nothing, and no id is ever written twice."""
    one, s, t = replayed_expiry
    many = isolated_config(radar_config, tmp_path / "many")
    ensure_tables(spark, many)
    chunks = _chunks(s, 8000)
    for index, chunk in enumerate(chunks):
        append(spark, many, chunk)
        if index % 2 == 1 or index == len(chunks) - 1:
            run_once(spark, many)

    expected = comparable(gold_detections(spark, one))
    assert expected == comparable(oracle(s, t + 49_000 - LATENESS_MS))  # the last tick is at t+49 s
    assert {row[1] for row in expected} == {"heartbeat_at_risk", "heartbeat_expiration"}
    assert comparable(gold_detections(spark, many)) == expected

    before = sorted(tuple(r) for r in table(spark, many, DETECTIONS).collect())
    run_once(spark, many)  # restart, nothing new
    assert sorted(tuple(r) for r in table(spark, many, DETECTIONS).collect()) == before
    ids = [r["detection_id"] for r in table(spark, many, DETECTIONS).collect()]
    assert len(ids) == len(set(ids))
    rebalance_ids = [r["rebalance_id"] for r in table(spark, many, REBALANCES).collect()]
    assert len(rebalance_ids) == len(set(rebalance_ids)) > 0
    assert [(r["cluster"], r["group_id"]) for r in table(spark, many, GROUP_HEALTH).collect()] == [(CLUSTER, G)]


def test_a_new_detection_stream_reads_every_commit_once_after_an_optimize(
    spark: SparkSession, config: RadarConfig
) -> None:
    """A new detection stream reads a local source table's commits from version 0 instead of reconstructing a
    snapshot first: it must give exactly the table's rows, also after OPTIMIZE rewrote files (no new data), and
    run fewer Spark jobs than the snapshot path of the same tables (the reconstruction's)."""
    s, _t = expiry_scenario()
    for chunk in _chunks(s, 5_000):
        append(spark, config, chunk)
    catalog = TableCatalog(config)
    location = catalog.location(HEARTBEAT_EVENTS)
    files_before = len(list(location.glob("*.parquet")))
    spark.sql(f"OPTIMIZE delta.`{location}`")
    rewrites = [
        json.loads(line)["add"]
        for commit in sorted((location / "_delta_log").glob("*.json"))
        for line in commit.read_text().splitlines()
        if '"add"' in line
    ]
    assert files_before > 1 and any(not add["dataChange"] for add in rewrites)  # the compaction happened

    def streamed(rows: Any, name: str) -> tuple[list[tuple[Any, ...]], int]:
        """The rows an available-now run of the stream gives, and the Spark jobs it ran."""
        got: list[tuple[Any, ...]] = []
        query = (
            rows.writeStream.foreachBatch(lambda batch, _id: got.extend(tuple(r) for r in batch.collect()))
            .option("checkpointLocation", str(config.checkpoint_dir / name))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(300)
        assert query.exception() is None
        return sorted(got, key=repr), len(spark.sparkContext.statusTracker().getJobIdsForGroup(str(query.runId)))

    snapshots = [
        detector_input_projection(spark.readStream.format("delta").load(str(catalog.location(t))), t)
        for t in SOURCE_TABLES.values()
    ]
    from_snapshots = snapshots[0]
    for frame in snapshots[1:]:
        from_snapshots = from_snapshots.unionByName(frame)
    commits_rows, commits_jobs = streamed(detector_input(spark, config, streaming=True), "from-version-0")
    snapshot_rows, snapshot_jobs = streamed(from_snapshots, "from-snapshots")
    table_rows = sorted((tuple(r) for r in detector_input(spark, config, streaming=False).collect()), key=repr)
    assert len(table_rows) == len(s.rows) > 0
    assert commits_rows == snapshot_rows == table_rows
    assert commits_jobs < snapshot_jobs, (commits_jobs, snapshot_jobs)


def test_incidents_of_empty_tables_read_nothing_and_merge_nothing(spark: SparkSession, config: RadarConfig) -> None:
    """A replay with nothing to link across groups (most of them): no Spark job reads the empty inputs, and no MERGE
    is committed to `incidents`."""
    from deltalake import DeltaTable

    from rebalance_radar.pipelines.stages.incidents import refresh_incidents

    context = spark.sparkContext
    group = f"incidents-{config.data_dir.name}"
    context.setJobGroup(group, "the incidents of empty tables")
    try:
        assert refresh_incidents(spark, config) == 0
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert context.statusTracker().getJobIdsForGroup(group) == []
    location = TableCatalog(config).location(INCIDENTS)
    assert location is not None
    assert [commit["operation"] for commit in DeltaTable(str(location)).history()] == ["CREATE TABLE"]


def test_the_run_summary_counts_detections_and_reads_no_empty_table(spark: SparkSession, config: RadarConfig) -> None:
    """What `radar replay` and `radar run` print at the end: nothing read for a table the log says is empty, else
    the detections by kind and severity and the first summaries in detection order."""
    context = spark.sparkContext
    group = f"summary-{config.data_dir.name}"
    context.setJobGroup(group, "the summary of an empty detections table")
    try:
        empty = summarise_detections(spark, config)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert empty.lines() == ["no detections"] and empty.total == 0
    assert context.statusTracker().getJobIdsForGroup(group) == []

    s, _t = expiry_scenario()
    append(spark, config, s.rows)
    run_once(spark, config)
    stored = [r.asDict() for r in table(spark, config, DETECTIONS).collect()]
    assert stored
    context.setJobGroup(group, "the summary of a detections table whose log is its JSON commits")
    try:
        with warnings.catch_warnings():  # what users see after a replay: no library's deprecation warning
            warnings.simplefilter("error")
            summary = summarise_detections(spark, config)  # read from the files the log names
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert context.statusTracker().getJobIdsForGroup(group) == []
    location = TableCatalog(config).location(DETECTIONS)
    for _ in range(2):  # the second commit at interval 1 writes a checkpoint: the log is no longer read alone
        spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('delta.checkpointInterval' = '1')")
    assert list((location / "_delta_log").glob("*.checkpoint*.parquet"))
    assert summarise_detections(spark, config) == summary  # read by Spark: the same summary
    by_kind: dict[tuple[str, str], int] = {}
    for d in stored:
        by_kind[(d["kind"], d["severity"])] = by_kind.get((d["kind"], d["severity"]), 0) + 1
    assert summary.by_kind_and_severity == by_kind
    ordered = sorted(stored, key=lambda d: (d["detected_at"], d["detection_id"]))
    assert summary.examples == tuple(d["summary"] for d in ordered[:5])
    assert summary.lines()[0].startswith(f"{len(stored)} detection(s): ")


def test_radars_own_source_groups_are_left_out_unless_asked_for(spark: SparkSession, radar_config: RadarConfig) -> None:
    """The consumers of radar's own Kafka source join groups too; they are not the users' groups."""
    rows = spark.createDataFrame(
        [("orders",), (f"{OWN_GROUP_PREFIX}-6f1c-1234-driver-0",), (None,), ("spark-kafka-source-users-app",)],
        "group_id STRING",
    )
    kept = sorted((r.group_id or "") for r in users_groups(rows, radar_config).collect())
    assert kept == ["", "orders", "spark-kafka-source-users-app"]  # the clock's rows and other Spark apps stay
    data = radar_config.model_dump(exclude_unset=True)
    watching = RadarConfig.model_validate({**data, "detect": {**data.get("detect", {}), "include_own_groups": True}})
    assert users_groups(rows, watching).count() == 4
    assert kafka_source_options(radar_config, ["t"], "broker:9092")["groupIdPrefix"] == OWN_GROUP_PREFIX
