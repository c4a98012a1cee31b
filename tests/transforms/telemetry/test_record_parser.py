"""Per-record auto-detection: JSON-wrapped lines, batches, the detector registry, and bytes that never raise."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.schemas import TelemetrySource as S
from rebalance_radar.transforms.telemetry.events import EVENT_COLUMNS, ParseOutcome, RecordContext
from rebalance_radar.transforms.telemetry.record_parser import (
    DEFAULT_DETECTORS,
    MAX_RECORD_BYTES,
    parse_telemetry_record,
)

TS = 1_714_564_800_000
BROKER = (
    "[2025-06-30 13:13:14,466] INFO [GroupCoordinator id=0 topic=__consumer_offsets partition=46] Stabilized group "
    "g generation 1 with 1 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)"
)


def test_json_wrapped_broker_line_takes_wrapper_time_logger_and_host() -> None:
    value = json.dumps(
        {
            "@timestamp": "2025-06-30T13:13:15.000Z",
            "logger": "org.apache.kafka.coordinator.group.GroupMetadataManager",
            "host": {"name": "broker-0"},
            "message": "Stabilized group g generation 4 with 3 members.",
        }
    ).encode()
    (event,) = parse_telemetry_record(value, TS).events
    assert (event.event, event.source, event.generation) == (K.REBALANCE_STABLE, S.BROKER_LOG, 4)
    assert (event.event_time, event.host) == (1_751_289_195_000, "broker-0")
    assert event.details["logger"] == "org.apache.kafka.coordinator.group.GroupMetadataManager"


def test_json_wrapped_client_line_with_epoch_seconds_and_full_log4j_text() -> None:
    value = json.dumps(
        {"timestamp": 1_714_564_801, "msg": "[Consumer clientId=c, groupId=g] consumer poll timeout has expired."}
    )
    (event,) = parse_telemetry_record(value.encode(), TS).events
    assert (event.event, event.source, event.event_time, event.group_id) == (
        K.POLL_TIMEOUT,
        S.CLIENT_LOG,
        TS + 1000,
        "g",
    )
    docker = json.dumps({"log": BROKER + "\n", "stream": "stdout", "time": "2025-06-30T13:13:14.999Z"})
    (event,) = parse_telemetry_record(docker.encode(), TS).events
    assert (event.event, event.event_time) == (K.REBALANCE_STABLE, 1_751_289_194_999)


def test_a_consumer_with_no_group_names_none() -> None:
    """Kafka prints a group-less consumer (Streams' restore consumer, `assign()`) as `groupId=null`: no group named
    "null" is made of it."""
    line = b"[Consumer clientId=app-StreamThread-1-restore-consumer, groupId=null] consumer poll timeout has expired."
    (event,) = parse_telemetry_record(line, TS).events
    assert (event.event, event.client_id, event.group_id) == (
        K.POLL_TIMEOUT,
        "app-StreamThread-1-restore-consumer",
        None,
    )


def test_record_time_is_used_when_the_line_has_none() -> None:
    (event,) = parse_telemetry_record(b"Stabilized group g generation 4", TS).events
    assert event.event_time == TS


def test_multi_line_record_collects_events_and_skips_stack_traces() -> None:
    value = "\n".join(
        [
            BROKER,
            "java.lang.IllegalStateException: boom",
            "\tat kafka.coordinator.group.GroupCoordinator.foo(GroupCoordinator.scala:1)",
            "[2025-06-30 13:13:14,468] INFO [GroupCoordinator id=0 topic=__consumer_offsets partition=46] Group g with "
            "generation 2 is now empty. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
        ]
    ).encode()
    outcome = parse_telemetry_record(value, TS)
    assert [e.event for e in outcome.events] == [K.REBALANCE_STABLE, K.GROUP_EMPTY]


def test_unrecognised_records_say_which_source_they_looked_like() -> None:
    broker = parse_telemetry_record(
        b"[GroupCoordinator id=1] Scheduling loading of metadata from __consumer_offsets-3 with epoch 2", TS
    )
    client = parse_telemetry_record(b"[Consumer clientId=c, groupId=g] Subscribed to topic(s): t", TS)
    wrapped = parse_telemetry_record(b'{"message": "Rolled new log segment", "logger": "kafka.log.LocalLog"}', TS)
    assert (broker.recognised, broker.source) == (False, S.BROKER_LOG)
    assert (client.recognised, client.source) == (False, S.CLIENT_LOG)
    assert (wrapped.recognised, wrapped.source) == (False, None)


def test_bad_input_is_an_outcome() -> None:
    for value, reason in [
        (None, "empty record"),
        (b"", "empty record"),
        (b"   \n ", "blank text"),
        (b"\xff\xfe\x00\x01", "not UTF-8"),
        (b"{not json", "invalid JSON"),
        (b"[1, 2, 3]", "no known log message"),
        (b'"just a string"', "no known log message"),
        (b"{" * 100_000, "invalid JSON"),
        (b"x" * (MAX_RECORD_BYTES + 1), "larger than"),
    ]:
        outcome = parse_telemetry_record(value, TS)
        assert not outcome.recognised
        assert reason in (outcome.reason or ""), (value[:20] if value else value, outcome.reason)


def test_huge_line_is_matched_on_its_head() -> None:
    value = (BROKER.replace("(org.apache", "x" * 200_000 + " (org.apache")).encode()
    (event,) = parse_telemetry_record(value, TS).events
    assert event.event is K.REBALANCE_STABLE


def test_a_registered_binary_detector_is_asked_first() -> None:
    frame = b"\x00\x0c\x00\x04binary-heartbeat"

    def protocol_frames(value: bytes, context: RecordContext) -> ParseOutcome | None:
        if not value.startswith(b"\x00\x0c"):
            return None
        return ParseOutcome.unrecognised(S.PROTOCOL, f"frame at {context.record_timestamp_ms}")

    detectors = (protocol_frames, *DEFAULT_DETECTORS)
    assert parse_telemetry_record(frame, TS, detectors=detectors).source is S.PROTOCOL
    assert parse_telemetry_record(BROKER.encode(), TS, detectors=detectors).recognised
    assert parse_telemetry_record(frame, TS).source is None


def test_event_rows_have_exactly_the_table_columns() -> None:
    (event,) = parse_telemetry_record(BROKER.encode(), TS).events
    row = event.as_row()
    assert tuple(row) == EVENT_COLUMNS
    assert row["event"] == "rebalance_stable"
    assert row["event_time"].isoformat() == "2025-06-30T13:13:14.466000+00:00"


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_never_raise(value: bytes) -> None:
    outcome = parse_telemetry_record(value, TS)
    assert isinstance(outcome, ParseOutcome)
    assert outcome.recognised or outcome.reason


KEYWORDS = st.sampled_from(
    [
        "Preparing to rebalance group ",
        " in state ",
        " with old generation ",
        "(reason: ",
        ")",
        "Stabilized group ",
        " generation ",
        "is now empty",
        "Generation{generationId=",
        "', protocol='",
        "Attempt to heartbeat with ",
        "SyncGroup failed",
        "[Consumer clientId=",
        ", groupId=",
        "]",
        "stream-thread [",
        "{",
        "}",
        '"message": ',
        '"schema": "radar.event/1"',
        "9" * 30,
        "[2024-13-45 99:99:99,999] ",
        "[11:10:57,345] ",
        "\n",
        " ",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(KEYWORDS, st.text(max_size=12)), max_size=30))
def test_keyword_soup_never_raises(parts: list[str]) -> None:
    outcome = parse_telemetry_record("".join(parts).encode("utf-8", "surrogatepass"), TS)
    assert isinstance(outcome, ParseOutcome)
