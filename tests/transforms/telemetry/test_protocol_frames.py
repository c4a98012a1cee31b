"""Protocol frames of a tap (`radar.frame/1`) -> heartbeat events, through the default detector chain.

Bodies come from the golden protocol vectors in tests/data (sarama's and Kafka's own test bytes) and from frames built
with the codec's writer (request/response headers included, size-prefixed as on the wire).
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_radar.transforms.schemas import HeartbeatEventKind as K
from rebalance_radar.transforms.schemas import TelemetrySource as S
from rebalance_radar.transforms.telemetry.record_parser import parse_telemetry_record
from rebalance_radar.transforms.wire.consumer_protocol import encode_assignment
from rebalance_radar.transforms.wire.error_codes import ERROR_NAME_BY_CODE, error_name
from rebalance_radar.transforms.wire.frame_envelope import (
    FRAMING_BODY,
    FRAMING_HEADER,
    MAGIC,
    decode_frame_envelope,
    encode_frame_envelope,
)
from rebalance_radar.transforms.wire.frames import APIS, APIS_BY_NAME, request_header_version, response_header_version
from rebalance_radar.transforms.wire.messages import REQUEST_HEADER, RESPONSE_HEADER
from rebalance_radar.transforms.wire.writer import write_message
from tests.data_files import load_jsonl

TS = 1_714_564_800_000
PROTOCOL = load_jsonl("vectors", "protocol_vectors.jsonl")
HANDLED = {
    "Heartbeat",
    "JoinGroup",
    "SyncGroup",
    "LeaveGroup",
    "OffsetCommit",
    "ConsumerGroupHeartbeat",
    "StreamsGroupHeartbeat",
    "ShareGroupHeartbeat",
    "DescribeGroups",
    "ConsumerGroupDescribe",
    "StreamsGroupDescribe",
}
DESCRIBES = {"DescribeGroups", "ConsumerGroupDescribe", "StreamsGroupDescribe"}
TOPIC_ID = "AQIDBAUGBwgJCgsMDQ4PEA"


def request_frame(api: str, version: int, body: dict[str, Any], client_id: str = "app-1") -> bytes:
    """A size-prefixed request as a client writes it: header v1/v2 + body."""
    spec = APIS_BY_NAME[api]
    header = {"requestApiKey": spec.key, "requestApiVersion": version, "correlationId": 7, "clientId": client_id}
    payload = write_message(REQUEST_HEADER, request_header_version(spec, version), header)
    payload += write_message(spec.request, version, body)
    return struct.pack(">i", len(payload)) + payload


def response_frame(api: str, version: int, body: dict[str, Any]) -> bytes:
    spec = APIS_BY_NAME[api]
    payload = write_message(RESPONSE_HEADER, response_header_version(spec, version), {"correlationId": 7})
    payload += write_message(spec.response, version, body)
    return struct.pack(">i", len(payload)) + payload


def exchange(api: str, version: int, request: dict[str, Any], response: dict[str, Any], **kw: Any) -> bytes:
    return encode_frame_envelope(
        api_key=APIS_BY_NAME[api].key,
        api_version=version,
        request=request_frame(api, version, request),
        response=response_frame(api, version, response),
        **kw,
    )


def events(value: bytes) -> list[Any]:
    outcome = parse_telemetry_record(value, TS)
    assert outcome.source is S.PROTOCOL, outcome.reason
    assert outcome.recognised, outcome.reason
    assert all(e.source is S.PROTOCOL for e in outcome.events)
    return list(outcome.events)


# --- golden vectors, wrapped body-only ------------------------------------------------------------------------


@pytest.mark.parametrize("vector", [v for v in PROTOCOL if v["api"] in HANDLED], ids=lambda v: v["id"])
def test_every_group_vector_parses_through_the_default_chain(vector: dict) -> None:
    body = bytes.fromhex(vector["value_hex"])
    direction = vector["direction"]
    value = encode_frame_envelope(
        api_key=vector["api_key"],
        api_version=vector["api_version"],
        framing=FRAMING_BODY,
        **{direction: body},
    )
    outcome = parse_telemetry_record(value, TS)
    assert outcome.source is S.PROTOCOL
    if vector["api"] in DESCRIBES and direction == "request":
        assert not outcome.recognised and "carries no group state" in (outcome.reason or "")
        return
    groups = vector["expected"]["body"].get("groups")
    if groups is not None and not any(g.get("errorCode") == 0 and g.get("groupState") for g in groups):
        assert not outcome.recognised  # empty describe: nothing to snapshot
        return
    assert outcome.recognised, outcome.reason
    for event in outcome.events:
        assert event.event_time == TS
        assert event.details["api"] == vector["api"]
        assert event.details["observed"] == direction


def _vector(vector_id: str) -> dict:
    return next(v for v in PROTOCOL if v["id"] == vector_id)


def _wrapped(vector_id: str) -> bytes:
    v = _vector(vector_id)
    return encode_frame_envelope(
        api_key=v["api_key"],
        api_version=v["api_version"],
        framing=FRAMING_BODY,
        **{v["direction"]: bytes.fromhex(v["value_hex"])},
    )


def test_vector_heartbeat_request_names_group_member_generation() -> None:
    (event,) = events(_wrapped("sarama-basicHeartbeatRequestV4_GID-v4"))
    assert (event.event, event.group_id, event.member_id, event.generation, event.group_instance_id) == (
        K.HEARTBEAT,
        "foo",
        "baz",
        66051,
        "gid",
    )


def test_vector_leave_group_v3_response_reports_each_member_and_its_error() -> None:
    found = events(_wrapped("sarama-leaveGroupResponseV3NoError-v3"))
    assert [(e.event, e.member_id, e.error) for e in found] == [
        (K.LEAVE, "mid1", None),
        (K.LEAVE, "mid2", "UNKNOWN_MEMBER_ID"),
    ]


def test_vector_offset_commit_v7_request_is_a_commit_with_generation() -> None:
    (event,) = events(_wrapped("sarama-offsetCommitRequestOneBlockV7-v7"))
    assert (event.event, event.group_id, event.member_id, event.generation) == (K.COMMIT, "foo", "mid", 1)
    assert event.details["partitions"] == "topic-1"


def test_vector_consumer_group_heartbeat_response_gives_epoch_and_assignment() -> None:
    beat, assignment = events(_wrapped("kafka-rrt-cgh-resp-v0"))
    assert (beat.event, beat.member_id, beat.member_epoch) == (K.HEARTBEAT, "memberid", 11)
    assert assignment.event is K.ASSIGNMENT
    assert assignment.details["assigned_partitions"] == "6"
    assert assignment.details["assignment"].startswith(f"{TOPIC_ID}-0,")


def test_vector_describe_groups_v3_snapshots_the_live_group_only() -> None:
    (member,) = events(_wrapped("sarama-describeGroupsResponsePopulatedV3-v3"))
    assert (member.event, member.group_id, member.member_id, member.client_id, member.host) == (
        K.HEARTBEAT,
        "foo",
        "id",
        "sarama",
        "localhost",
    )
    assert member.details["snapshot"] == "DescribeGroups"
    assert member.details["state"] == "bar"


def test_vector_empty_consumer_group_describe_is_group_empty() -> None:
    (event,) = events(_wrapped("kafka-rrt-cgd-resp-v0"))
    assert (event.event, event.group_id, event.details["state"]) == (K.GROUP_EMPTY, "group", "Empty")
    assert event.details["assignor"] == "range"


# --- full frames built with the codec writer -------------------------------------------------------------------


def test_heartbeat_exchange_rejected_for_old_generation_is_a_zombie_signal() -> None:
    value = exchange(
        "Heartbeat",
        4,
        {"groupId": "orders", "generationId": 5, "memberId": "m-1", "groupInstanceId": None},
        {"errorCode": 22},
        peer="10.0.3.17:51234",
        time_ms=TS + 5,
    )
    (event,) = events(value)
    assert event.event is K.HEARTBEAT_FAILED
    assert (event.group_id, event.member_id, event.generation, event.error) == (
        "orders",
        "m-1",
        5,
        "ILLEGAL_GENERATION",
    )
    assert (event.client_id, event.host, event.event_time) == ("app-1", "10.0.3.17", TS + 5)
    assert event.details["observed"] == "exchange"


def test_heartbeat_request_alone_is_a_heartbeat_with_the_header_client_id() -> None:
    body = {"groupId": "orders", "generationId": 5, "memberId": "m-1"}
    value = encode_frame_envelope(api_key=12, api_version=3, request=request_frame("Heartbeat", 3, body, "c-9"))
    (event,) = events(value)
    assert (event.event, event.client_id, event.event_time) == (K.HEARTBEAT, "c-9", TS)


def test_join_then_sync_with_consumer_assignment() -> None:
    join_req = {
        "groupId": "orders",
        "sessionTimeoutMs": 10000,
        "rebalanceTimeoutMs": 30000,
        "memberId": "",
        "protocolType": "consumer",
        "protocols": [],
        "reason": "rebalance failed due to UnknownMemberIdException",
    }
    join_resp = {"errorCode": 0, "generationId": 8, "protocolName": "range", "leader": "m-1", "memberId": "m-1"}
    (join,) = events(exchange("JoinGroup", 9, join_req, join_resp))
    assert (join.event, join.member_id, join.generation, join.reason) == (K.JOIN, "m-1", 8, join_req["reason"])
    assert join.details["is_leader"] == "true"

    failed = events(exchange("JoinGroup", 9, join_req, {"errorCode": 79, "memberId": "m-2", "generationId": -1}))
    assert [(e.event, e.error, e.member_id) for e in failed] == [(K.JOIN_FAILED, "MEMBER_ID_REQUIRED", "m-2")]

    assignment = encode_assignment(0, {"assignedPartitions": [{"topic": "t", "partitions": [0, 2]}]})
    sync_req = {
        "groupId": "orders",
        "generationId": 8,
        "memberId": "m-1",
        "protocolType": "consumer",
        "assignments": [],
    }
    sync, assigned = events(exchange("SyncGroup", 5, sync_req, {"errorCode": 0, "assignment": assignment}))
    assert (sync.event, sync.generation) == (K.SYNC, 8)
    assert (assigned.event, assigned.details["assignment"], assigned.details["assigned_partitions"]) == (
        K.ASSIGNMENT,
        "t-0,t-2",
        "2",
    )
    (sync_failed,) = events(exchange("SyncGroup", 5, sync_req, {"errorCode": 27, "assignment": b""}))
    assert (sync_failed.event, sync_failed.error) == (K.SYNC_FAILED, "REBALANCE_IN_PROGRESS")


def test_zombie_offset_commit_fails_with_unknown_member_and_keeps_its_generation() -> None:
    request = {
        "groupId": "orders",
        "generationIdOrMemberEpoch": 3,
        "memberId": "m-zombie",
        "topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": 42}]}],
    }
    response = {"topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "errorCode": 25}]}]}
    (event,) = events(exchange("OffsetCommit", 8, request, response))
    assert (event.event, event.member_id, event.generation, event.error) == (
        K.COMMIT_FAILED,
        "m-zombie",
        3,
        "UNKNOWN_MEMBER_ID",
    )
    assert event.details["failed_partitions"] == "t-0"


def test_leave_group_v5_request_lists_every_leaving_member_with_reason() -> None:
    body = {
        "groupId": "orders",
        "members": [{"memberId": "a", "reason": "the consumer is being closed"}, {"memberId": "b"}],
    }
    value = encode_frame_envelope(api_key=13, api_version=5, request=request_frame("LeaveGroup", 5, body))
    found = events(value)
    assert [(e.event, e.member_id, e.reason) for e in found] == [
        (K.LEAVE, "a", "the consumer is being closed"),
        (K.LEAVE, "b", None),
    ]


CGH_REQUEST = {
    "groupId": "orders",
    "memberId": "u-1",
    "memberEpoch": 0,
    "rebalanceTimeoutMs": 30000,
    "subscribedTopicNames": ["t"],
    "topicPartitions": [],
}


def test_consumer_group_heartbeat_join_beat_fence_and_leave() -> None:
    joined = {
        "errorCode": 0,
        "memberId": "u-1",
        "memberEpoch": 4,
        "heartbeatIntervalMs": 1000,
        "assignment": {"topicPartitions": [{"topicId": TOPIC_ID, "partitions": [0, 1]}]},
    }
    join, assignment = events(exchange("ConsumerGroupHeartbeat", 0, CGH_REQUEST, joined))
    assert (join.event, join.member_id, join.member_epoch) == (K.JOIN, "u-1", 4)
    assert (assignment.event, assignment.details["assignment"]) == (K.ASSIGNMENT, f"{TOPIC_ID}-0,{TOPIC_ID}-1")

    beat_req = {**CGH_REQUEST, "memberEpoch": 4}
    fenced = {"errorCode": 110, "errorMessage": "The member epoch is fenced", "memberId": "u-1", "memberEpoch": 7}
    (failed,) = events(exchange("ConsumerGroupHeartbeat", 0, beat_req, fenced))
    assert (failed.event, failed.error, failed.member_epoch) == (K.HEARTBEAT_FAILED, "FENCED_MEMBER_EPOCH", 4)
    assert failed.details["error_message"] == "The member epoch is fenced"

    leave_req = {**CGH_REQUEST, "memberEpoch": -1}
    (leave,) = events(exchange("ConsumerGroupHeartbeat", 0, leave_req, {"memberId": "u-1", "memberEpoch": -1}))
    assert (leave.event, leave.member_epoch) == (K.LEAVE, -1)


def test_streams_group_heartbeat_assignment_is_active_tasks() -> None:
    request = {"groupId": "app", "memberId": "s-1", "memberEpoch": 2, "rebalanceTimeoutMs": 30000}
    response = {
        "memberId": "s-1",
        "memberEpoch": 3,
        "activeTasks": [{"subtopologyId": "0", "partitions": [0, 1]}],
        "standbyTasks": [],
        "warmupTasks": [],
    }
    beat, assignment = events(exchange("StreamsGroupHeartbeat", 0, request, response))
    assert (beat.event, beat.member_epoch) == (K.HEARTBEAT, 3)
    assert assignment.details["assignment"] == "0-0,0-1"


def test_share_group_heartbeat_response_alone_without_error() -> None:
    response = {"memberId": "sh-1", "memberEpoch": 2, "heartbeatIntervalMs": 500, "assignment": None}
    value = encode_frame_envelope(
        api_key=76, api_version=1, response=response_frame("ShareGroupHeartbeat", 1, response)
    )
    (beat,) = events(value)
    assert (beat.event, beat.member_id, beat.member_epoch, beat.group_id) == (K.HEARTBEAT, "sh-1", 2, None)


def test_describe_snapshots_classic_consumer_and_streams_groups() -> None:
    assignment = encode_assignment(0, {"assignedPartitions": [{"topic": "t", "partitions": [1]}]})
    classic = {
        "groups": [
            {
                "groupId": "orders",
                "groupState": "Stable",
                "protocolType": "consumer",
                "protocolData": "range",
                "members": [
                    {
                        "memberId": "m-1",
                        "clientId": "c",
                        "clientHost": "/10.0.0.1",
                        "memberMetadata": b"",
                        "memberAssignment": assignment,
                    },
                ],
            },
            {"groupId": "gone", "groupState": "Dead", "members": [], "protocolType": "", "protocolData": ""},
        ]
    }
    value = encode_frame_envelope(api_key=15, api_version=5, response=response_frame("DescribeGroups", 5, classic))
    (member,) = events(value)
    assert (member.group_id, member.member_id, member.host) == ("orders", "m-1", "10.0.0.1")
    assert (member.details["state"], member.details["assignment"], member.details["protocol"]) == (
        "Stable",
        "t-1",
        "range",
    )

    tp = {"topicPartitions": [{"topicId": TOPIC_ID, "topicName": "t", "partitions": [0]}]}
    consumer = {
        "groups": [
            {
                "groupId": "new",
                "groupState": "Reconciling",
                "groupEpoch": 6,
                "assignmentEpoch": 6,
                "assignorName": "uniform",
                "members": [
                    {
                        "memberId": "u-1",
                        "memberEpoch": 5,
                        "clientId": "c",
                        "clientHost": "/h",
                        "subscribedTopicNames": ["t"],
                        "assignment": {"topicPartitions": []},
                        "targetAssignment": tp,
                    },
                ],
            }
        ]
    }
    value = encode_frame_envelope(
        api_key=69, api_version=0, response=response_frame("ConsumerGroupDescribe", 0, consumer)
    )
    (member,) = events(value)
    assert (member.member_epoch, member.details["group_epoch"], member.details["target_assignment"]) == (5, "6", "t-0")
    assert member.details["assigned_partitions"] == "0"

    streams = {
        "groups": [
            {
                "groupId": "app",
                "groupState": "STABLE",
                "groupEpoch": 2,
                "assignmentEpoch": 2,
                "members": [
                    {
                        "memberId": "s-1",
                        "memberEpoch": 2,
                        "clientId": "c",
                        "clientHost": "/h",
                        "processId": "p",
                        "topologyEpoch": 0,
                        "clientTags": [],
                        "taskOffsets": [],
                        "taskEndOffsets": [],
                        "assignment": {
                            "activeTasks": [{"subtopologyId": "0", "partitions": [3]}],
                            "standbyTasks": [],
                            "warmupTasks": [],
                        },
                        "targetAssignment": {"activeTasks": [], "standbyTasks": [], "warmupTasks": []},
                    },
                ],
            }
        ]
    }
    value = encode_frame_envelope(
        api_key=89, api_version=0, response=response_frame("StreamsGroupDescribe", 0, streams)
    )
    (member,) = events(value)
    assert (member.member_id, member.details["assignment"], member.details["process_id"]) == ("s-1", "0-3", "p")


def test_header_framing_without_size_prefix() -> None:
    body = {"groupId": "g", "generationId": 1, "memberId": "m"}
    frame = request_frame("Heartbeat", 4, body)[4:]
    (event,) = events(encode_frame_envelope(api_key=12, api_version=4, request=frame, framing=FRAMING_HEADER))
    assert event.group_id == "g"


# --- bad input never raises and is attributed to `protocol` ----------------------------------------------------


def test_envelope_round_trip() -> None:
    value = encode_frame_envelope(api_key=12, api_version=4, request=b"r", response=b"s", peer="p:1", client_id="ć")
    env = decode_frame_envelope(value)
    assert (env.kind, env.request, env.response, env.peer, env.client_id, env.time_ms) == (
        2,
        b"r",
        b"s",
        "p:1",
        "ć",
        -1,
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (MAGIC + b"\x00", "bad radar.frame/1 envelope"),
        (MAGIC + b"\x07\x00" + bytes(20), "bad radar.frame/1 envelope"),
        (encode_frame_envelope(api_key=10, api_version=4, request=b"x"), "carries no group telemetry"),
        (encode_frame_envelope(api_key=12, api_version=4, request=b"\x00\x00"), "undecodable Heartbeat frame"),
        (encode_frame_envelope(api_key=12, api_version=99, request=b"\x00" * 30), "undecodable Heartbeat frame"),
    ],
)
def test_bad_envelopes_are_unrecognised_protocol_records(value: bytes, reason: str) -> None:
    outcome = parse_telemetry_record(value, TS)
    assert (outcome.recognised, outcome.source) == (False, S.PROTOCOL)
    assert reason in (outcome.reason or "")


def test_request_header_must_agree_with_the_envelope() -> None:
    frame = request_frame("Heartbeat", 4, {"groupId": "g", "generationId": 1, "memberId": "m"})
    outcome = parse_telemetry_record(encode_frame_envelope(api_key=12, api_version=3, request=frame), TS)
    assert not outcome.recognised and "envelope 12 v3" in (outcome.reason or "")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_arbitrary_bytes_after_the_magic_never_raise(tail: bytes) -> None:
    outcome = parse_telemetry_record(MAGIC + tail, TS)
    assert outcome.source is S.PROTOCOL
    assert outcome.recognised or outcome.reason


def test_error_table_names_the_group_errors() -> None:
    assert error_name(0) is None and error_name(None) is None
    assert [error_name(c) for c in (22, 25, 27, 82, 110, 113)] == [
        "ILLEGAL_GENERATION",
        "UNKNOWN_MEMBER_ID",
        "REBALANCE_IN_PROGRESS",
        "FENCED_INSTANCE_ID",
        "FENCED_MEMBER_EPOCH",
        "STALE_MEMBER_EPOCH",
    ]
    assert error_name(9999) == "ERROR_9999"
    assert set(ERROR_NAME_BY_CODE.values()) >= {"UNKNOWN_MEMBER_ID", "STREAMS_TOPOLOGY_FENCED"}
    assert {a.name for a in APIS.values()} >= HANDLED
