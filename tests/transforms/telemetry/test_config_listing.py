"""Configuration listings kept whole and read as facts: a real Kafka Streams 4.3.1 application's log
(tests/data/streams-app) and a broker's `KafkaConfig values:` listing quoted in Kafka's own format."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from rebalance_radar.emitters.log_shipper import LogShipper
from rebalance_radar.pipelines.formats.log_files import log_records
from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent
from rebalance_radar.transforms.telemetry.informational import CONFIG_LISTING
from rebalance_radar.transforms.telemetry.multiline import MultilineJoiner, is_continuation
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record

STREAMS_APP = Path(__file__).resolve().parents[2] / "data" / "streams-app"

# A 3.9.1 broker's listing as `AbstractConfig.logAll` (kafka-clients 3.9.1, org/apache/kafka/common/config/
# AbstractConfig.java) prints it: "KafkaConfig values: " + NL, then "\t<key> = <value>" + NL per setting, sorted;
# the broker's log4j layout `[%d] %p %m (%c)%n` puts the logger (AbstractConfig's) after the message's last NL.
BROKER_LISTING = (
    "[2026-12-02 09:20:01,101] INFO KafkaConfig values: \n"
    "\tadvertised.listeners = PLAINTEXT://localhost:9092\n"
    "\tbroker.id = 1\n"
    "\tgroup.consumer.heartbeat.interval.ms = 5000\n"
    "\tgroup.consumer.session.timeout.ms = 10000\n"
    "\tgroup.coordinator.rebalance.protocols = [classic, consumer, streams]\n"
    "\tgroup.initial.rebalance.delay.ms = 0\n"
    "\tgroup.max.session.timeout.ms = 1800000\n"
    "\tgroup.min.session.timeout.ms = 6000\n"
    "\tgroup.streams.session.timeout.ms = 10000\n"
    "\tnode.id = 1\n"
    "\tssl.key.password = null\n"
    " (org.apache.kafka.common.config.AbstractConfig)\n"
)


def _joined(lines: list[bytes]) -> list[bytes]:
    joiner = MultilineJoiner(flush_timeout_s=float("inf"))
    events: list[bytes] = []
    for line in lines:
        events += joiner.feed(line, 0.0)
    return events + joiner.drain()


def _streams_app_events(name: str) -> list[HeartbeatEvent]:
    lines = [line for line in (STREAMS_APP / name).read_bytes().splitlines() if line.strip()]
    return [event for record in _joined(lines) for event in parse_telemetry_record(record, 0).events]


def test_a_streams_apps_listings_are_joined_into_one_event_each_with_the_settings_detectors_use() -> None:
    configs = [e for e in _streams_app_events("healthy-H1.log") if e.event == HeartbeatEventKind.CLIENT_CONFIG]
    assert Counter(e.details["config"] for e in configs) == {
        "StreamsConfig": 1,
        "AdminClientConfig": 1,
        "ConsumerConfig": 2,
        "ProducerConfig": 1,
    }
    streams = next(e for e in configs if e.details["config"] == "StreamsConfig")
    assert (streams.client_id, streams.group_id) == ("healthy-H1", "streams-healthy-1796203474784619073")
    assert streams.details["group.protocol"] == "streams"
    main = next(e for e in configs if e.client_id == "healthy-H1-StreamThread-1-consumer")
    assert main.group_id == "streams-healthy-1796203474784619073"
    assert main.group_instance_id is None  # printed "group.instance.id = null"
    assert main.source == TelemetrySource.CLIENT_LOG
    assert main.details["max.poll.interval.ms"] == "300000"
    assert main.details["max.poll.records"] == "1000"
    assert main.details["session.timeout.ms"] == "45000"
    assert main.details["partition.assignment.strategy"] == "StreamsPartitionAssignor"
    restore = next(e for e in configs if e.client_id == "healthy-H1-StateUpdater-1-restore-consumer")
    assert restore.group_id is None  # "group.id = null": no group to tell
    assert restore.details["partition.assignment.strategy"] == "RangeAssignor, CooperativeStickyAssignor"
    assert main.event_time == 1796203480286  # the listing's own first line: 2026-12-02 09:24:40,286 UTC


def test_joined_listings_leave_far_fewer_records_unrecognised_than_their_lines_did() -> None:
    lines = [line for line in (STREAMS_APP / "healthy-H1.log").read_bytes().splitlines() if line.strip()]
    per_line = Counter(o.reason for o in (parse_telemetry_record(line, 0) for line in lines) if not o.recognised)
    joined = Counter(o.reason for o in (parse_telemetry_record(r, 0) for r in _joined(lines)) if not o.recognised)
    assert per_line[CONFIG_LISTING] > 500  # each `\tkey = value` line alone is still known as a listing's
    assert joined[CONFIG_LISTING] <= 1  # only StreamsConfig's "These configurations '[...]' were supplied ..."
    assert sum(joined.values()) < sum(per_line.values()) / 4


def test_a_brokers_listing_gives_its_group_session_timeouts() -> None:
    outcome = parse_telemetry_record(BROKER_LISTING.encode(), 0)
    (event,) = outcome.events
    assert event.event == HeartbeatEventKind.BROKER_CONFIG
    assert event.source == TelemetrySource.BROKER_LOG
    assert event.group_id is None
    assert event.details["group.consumer.session.timeout.ms"] == "10000"
    assert event.details["group.streams.session.timeout.ms"] == "10000"
    assert event.details["group.min.session.timeout.ms"] == "6000"
    assert event.details["group.initial.rebalance.delay.ms"] == "0"
    assert event.details["node.id"] == "1"


def test_listing_lines_cut_apart_by_an_old_capture_are_still_known_as_a_listing() -> None:
    for line in (b"\tsession.timeout.ms = 45000", b"session.timeout.ms = 45000", b"\tapplication.server = "):
        outcome = parse_telemetry_record(line, 0)
        assert not outcome.recognised
        assert outcome.reason == CONFIG_LISTING


def test_a_listing_of_another_config_class_is_one_known_listing() -> None:
    text = b"[2026-12-02 09:20:01,101] INFO LogConfig values: \n\tcleanup.policy = delete\n\tretention.ms = 1"
    outcome = parse_telemetry_record(text, 0)
    assert not outcome.recognised and outcome.reason == CONFIG_LISTING


def test_continuations_are_indented_lines_and_stack_frames_never_a_line_with_its_own_time() -> None:
    assert is_continuation("\tmax.poll.records = 500")
    assert is_continuation("\tat org.apache.kafka.clients.consumer.KafkaConsumer.poll(KafkaConsumer.java:1)")
    assert is_continuation("Caused by: org.apache.kafka.common.errors.TimeoutException: x")
    assert is_continuation("\t... 12 more")
    assert is_continuation(" (org.apache.kafka.common.config.AbstractConfig)")
    assert not is_continuation(" INFO 2025-01-01 10:00:00.000 --- [main] o.a.k.c.c.KafkaConsumer : x")
    assert not is_continuation("[2026-12-02 09:20:01,101] INFO [GroupCoordinator 1]: Stabilized group g")


def test_events_are_bounded_and_a_live_tail_sends_a_pending_one_after_the_flush_timeout() -> None:
    joiner = MultilineJoiner(max_lines=3, flush_timeout_s=1.0)
    assert joiner.feed(b"head", 10.0) == []
    assert joiner.feed(b"\ta = 1", 10.1) == []
    assert joiner.feed(b"\tb = 2", 10.2) == []
    assert joiner.feed(b"\tc = 3", 10.3) == [b"head\n\ta = 1\n\tb = 2"]  # the 4th line is past max_lines
    assert joiner.cut == 1
    assert joiner.due(11.0) == []
    assert joiner.due(11.3) == [b"\tc = 3"]
    assert joiner.pending_lines == 0
    small = MultilineJoiner(max_bytes=10)
    assert small.feed(b"head", 0.0) == [] and small.feed(b"\tlong = value", 0.0) == [b"head"]


def test_a_replayed_log_file_reads_a_listing_as_one_record_at_its_first_line() -> None:
    content = (STREAMS_APP / "crash-loop-C0.log").read_bytes()
    records = list(log_records(content, 0))
    first_line, time_ms, value = records[0]
    assert first_line == 1 and time_ms == 1796203490488  # 2026-12-02 09:24:50,488 UTC
    assert value.startswith(b"2026-12-02 09:24:50,488 INFO") and value.count(b"\n") > 60
    assert records[1][0] == 77  # the line after the listing (and its trailing blank line)
    assert [r[0] for r in records if b"AdminClientConfig values:" in r[2]] == [83]
    (event,) = parse_telemetry_record(value, 0).events
    assert event.details["config"] == "StreamsConfig"


def test_the_log_shipper_sends_the_brokers_listing_as_one_record(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    coordinator = "[2026-12-02 09:20:02,000] INFO [GroupCoordinator 1]: Stabilized group g generation 2 (x)\n"
    log.write_text(
        BROKER_LISTING + "[2026-12-02 09:20:01,900] INFO [LogLoader partition=t-0] Loading (y)\n" + coordinator
    )
    shipper = LogShipper(log, "127.0.0.1:1", "t", flush_timeout_s=0.0)  # nothing listens: counted, not delivered
    try:
        assert shipper.ship_once() == 2  # the listing (kept by "KafkaConfig values:") and the coordinator line
        assert shipper.counts.lines_read == 15
        assert shipper.counts.lines_kept == 2
    finally:
        shipper.stop(flush_timeout_s=0.1)


def test_a_json_wrapped_listing_from_a_multiline_shipper_keeps_the_wrappers_time_and_host() -> None:
    # Filebeat with multiline joins the listing into one `message` and adds its own @timestamp and host
    message = (STREAMS_APP / "healthy-H1.log").read_text().split("\n2026-12-02 09:24:39,894")[0].split("\n", 180)[-1]
    assert message.startswith("2026-12-02 09:24:39,811 INFO  [main] org.apache.kafka.common.config.AbstractConfig")
    wrapped = {"@timestamp": "2026-12-02T09:24:39.811Z", "host": {"name": "app-7"}, "message": message}
    (event,) = parse_telemetry_record(json.dumps(wrapped).encode(), 0).events
    assert event.event == HeartbeatEventKind.CLIENT_CONFIG
    assert (event.client_id, event.host) == ("healthy-H1-StateUpdater-1-restore-consumer", "app-7")
    assert event.event_time == 1796203479811
