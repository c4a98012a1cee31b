"""DETECTOR_INPUT rows -> group events: every table, every timestamp form, and rows that say nothing."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from rebalance_radar.transforms.detectors.group_events import (
    GroupEvent,
    MemberInfo,
    epoch_ms,
    event_order,
    group_event_from_packed,
    group_event_from_row,
)
from rebalance_radar.transforms.schemas import DETECTOR_INPUT
from tests.transforms.detectors.silver_rows import BASE_MS, Member, Silver, events_of
from tests.transforms.detectors.test_replay_determinism import drive


def test_timestamps_in_every_form_give_the_same_epoch_ms() -> None:
    aware = datetime.fromtimestamp(BASE_MS / 1000, tz=UTC)
    naive = aware.replace(tzinfo=None)
    assert epoch_ms(aware) == epoch_ms(naive) == epoch_ms(pd.Timestamp(aware)) == epoch_ms(BASE_MS) == BASE_MS
    assert epoch_ms("yesterday") is None
    assert epoch_ms(None) is None


def test_classic_generation_row_keeps_members_partitions_and_timeouts() -> None:
    silver = Silver()
    row = silver.generation(
        "orders", 4, [Member("m-1", [("orders", 0), ("orders", 1)], instance_id="i-1")], BASE_MS, leader="m-1"
    )
    event = group_event_from_row(row)
    assert event is not None
    assert (event.src_table, event.generation, event.leader, event.src_offset) == ("group_metadata", 4, "m-1", 0)
    (member,) = event.members or ()
    assert member.partitions == ("orders-0", "orders-1")
    assert (member.instance_id, member.host, member.session_timeout_ms) == ("i-1", "10.0.0.1", 10_000)


def test_a_waiting_row_packed_before_members_were_shaped_converts_as_a_shaped_one() -> None:
    """A tracker snapshotted by the previous release keeps its waiting GroupMetadata rows with members by their field
    names (`DETECTOR_MEMBER_TEXTS` replaced them): they convert to the event the shaped row gives."""
    row = {
        "event_time": BASE_MS,
        "src_table": "group_metadata",
        "src_topic": "__consumer_offsets",
        "src_partition": 1,
        "src_offset": 7,
        "generation": 3,
        "protocol_type": "consumer",
        "leader": "m-1",
        "is_tombstone": False,
    }
    by_name = {
        "member_id": "m-1",
        "client_id": "c-1",
        "client_host": "/10.0.0.1",
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 30_000,
        "subscribed_topics": ["orders", "audit"],
        "assigned_partitions": [{"topic": "orders", "partitions": [1, 0]}],
    }
    shaped = {
        "f": ["m-1", None, "c-1", "/10.0.0.1", "10000", "30000"],
        "p": ["orders-0", "orders-1"],
        "s": ["audit", "orders"],
    }
    before = group_event_from_packed("c", "g", json.dumps(row | {"members": [by_name, {"member_id": None}]}))
    now = group_event_from_packed("c", "g", json.dumps(row | {"members": [shaped, {"f": [None] * 6}]}))
    assert before == now
    assert now is not None and now.members == (
        MemberInfo("m-1", None, "c-1", "10.0.0.1", 10_000, 30_000, ("orders-0", "orders-1"), ("audit", "orders")),
    )  # fmt: skip


def test_kip848_member_assignment_row_carries_epoch_state_and_pending_revocation() -> None:
    silver = Silver()
    topic = "AAAAAAAAAAAAAAAAAAAABQ"
    row = silver.record(
        "ConsumerGroupCurrentMemberAssignment",
        {"groupId": "g", "memberId": "m"},
        {
            "memberEpoch": 5,
            "previousMemberEpoch": 4,
            "state": 1,
            "assignedPartitions": [{"topicId": topic, "partitions": [0]}],
            "partitionsPendingRevocation": [{"topicId": topic, "partitions": [1]}],
        },
        BASE_MS,
    )
    event = group_event_from_row(row)
    assert event is not None
    assert (event.epoch, event.previous_epoch, event.member_state) == (5, 4, "UNREVOKED_PARTITIONS")
    assert (event.partitions, event.pending) == ((f"{topic}-0",), (f"{topic}-1",))


def test_kip848_member_metadata_row_carries_its_subscription_and_a_classic_members_session_timeout() -> None:
    """A 4.3.1 broker's record of a consumer-protocol member (tests/data/vectors), then a classic member's and a
    regex subscriber's as the same codec writes them."""
    silver = Silver()
    vectors = (Path(__file__).parents[2] / "data" / "vectors" / "embedded_broker_offsets.jsonl").read_text()
    vector = next(
        json.loads(line)
        for line in vectors.splitlines()
        if json.loads(line)["id"] == "kafka-4.3.1-consumer-06-consumer-group-member-metadata"
    )
    recorded = group_event_from_row(
        silver._decoded(bytes.fromhex(vector["key_hex"]), bytes.fromhex(vector["value_hex"]), BASE_MS)
    )
    assert recorded is not None
    assert (recorded.subscribed, recorded.classic_session_timeout_ms) == (("vec-orders",), None)

    key = {"groupId": "g", "memberId": "m"}
    classic = {
        "clientId": "c",
        "subscribedTopicNames": ["b", "a"],
        "classicMemberMetadata": {"sessionTimeoutMs": 10_000},
    }
    event = group_event_from_row(silver.record("ConsumerGroupMemberMetadata", key, classic, BASE_MS))
    assert event is not None and (event.subscribed, event.classic_session_timeout_ms) == (("a", "b"), 10_000)
    regex = {"clientId": "c", "subscribedTopicNames": [], "subscribedTopicRegex": "orders-.*"}
    event = group_event_from_row(silver.record("ConsumerGroupMemberMetadata", key, regex, BASE_MS))
    assert event is not None and event.subscribed == ("regex:orders-.*",)


def test_heartbeat_event_row_from_a_real_broker_line() -> None:
    silver = Silver()
    (row,) = silver.broker("Member m-1 in group orders has failed, removing it from the group.", BASE_MS)
    event = group_event_from_row(row)
    assert event is not None
    assert (event.event, event.member_id, event.source) == ("member_expired", "m-1", "broker_log")
    assert event.details["coordinator"] == "1"


def test_rows_without_a_group_or_unknown_event_or_clock_ticks_are_none() -> None:
    base = dict.fromkeys(DETECTOR_INPUT.column_names)
    tick = {**base, "src_table": "clock_ticks", "event_time": BASE_MS}
    assert group_event_from_row(tick) is None
    odd = {**base, "src_table": "heartbeat_events", "group_id": "g", "event_time": BASE_MS, "event": "bogus"}
    assert group_event_from_row(odd) is None
    no_time = {**base, "src_table": "offset_commits", "group_id": "g", "topic": "t", "partition": 0}
    assert group_event_from_row(no_time) is None
    garbage = {**base, "src_table": "group_records", "group_id": "g", "event_time": BASE_MS, "record_type": "X"}
    garbage["payload"] = "{not json"
    assert group_event_from_row(garbage) is None


def test_event_order_is_time_then_table_then_offset_and_json_round_trips() -> None:
    silver = Silver()
    commit = group_event_from_row(silver.commit("g", "t", 0, 5, BASE_MS))
    meta = group_event_from_row(silver.generation("g", 1, [Member("m", [("t", 0)])], BASE_MS))
    assert commit is not None and meta is not None
    assert sorted([commit, meta], key=event_order) == [meta, commit]
    assert GroupEvent.from_json(meta.as_json()) == meta


def test_rows_as_pandas_gives_them_numpy_arrays_and_map_pairs() -> None:
    """The Spark layer may hand rows over through Arrow/pandas: list columns arrive as numpy arrays."""
    silver = Silver()
    silver.generation("orders", 4, [Member("m-1", [("orders", 0), ("orders", 1)])], BASE_MS)
    silver.agent("heartbeat", "orders", BASE_MS + 1, member_id="m-1", details={"state": "up"})
    frame = pa.Table.from_pylist(silver.rows).to_pandas()
    assert type(frame["members"][0]).__module__ == "numpy"
    meta, beat = (group_event_from_row(row) for row in frame.to_dict("records"))
    assert meta is not None and beat is not None
    (member,) = meta.members or ()
    assert member.partitions == ("orders-0", "orders-1")
    assert beat.details["state"] == "up"
    arrow_like = {**silver.rows[1], "details": [("state", "up"), ("observed_by", "agent")]}
    converted = group_event_from_row(arrow_like)
    assert converted is not None and converted.details == {"state": "up", "observed_by": "agent"}


_TEXT = st.none() | st.text(max_size=6)
_NUMBER = st.none() | st.integers(min_value=-(2**40), max_value=2**40)
_MEMBERS = st.lists(
    st.builds(
        MemberInfo,
        member_id=st.text(min_size=1, max_size=6),
        instance_id=_TEXT,
        session_timeout_ms=_NUMBER,
        partitions=st.lists(st.text(max_size=5), max_size=3).map(tuple),
        subscribed=st.lists(st.text(max_size=5), max_size=3).map(tuple),
    ),
    max_size=3,
).map(tuple)
_EVENTS = st.builds(
    GroupEvent,
    event_time_ms=st.integers(min_value=0, max_value=2**45),
    src_table=st.sampled_from(["offset_commits", "group_metadata", "group_records", "heartbeat_events"]),
    group_id=st.text(max_size=6),
    src_partition=_NUMBER,
    src_offset=_NUMBER,
    is_tombstone=st.booleans(),
    partition=_NUMBER,
    committed_offset=_NUMBER,
    generation=_NUMBER,
    leader=_TEXT,
    members=st.none() | _MEMBERS,
    cluster=_TEXT,
    src_topic=_TEXT,
    topic=_TEXT,
    protocol_type=_TEXT,
    protocol=_TEXT,
    group_type=_TEXT,
    record_type=_TEXT,
    epoch=_NUMBER,
    previous_epoch=_NUMBER,
    member_state=_TEXT,
    partitions=st.lists(st.text(max_size=5), max_size=3).map(tuple),
    pending=st.lists(st.text(max_size=5), max_size=3).map(tuple),
    rebalance_timeout_ms=_NUMBER,
    subscribed=st.none() | st.lists(st.text(max_size=5), max_size=3).map(tuple),
    classic_session_timeout_ms=_NUMBER,
    metadata_hash=_NUMBER,
    event=_TEXT,
    member_id=_TEXT,
    group_instance_id=_TEXT,
    member_epoch=_NUMBER,
    error=_TEXT,
    reason=_TEXT,
    client_id=_TEXT,
    host=_TEXT,
    source=_TEXT,
    details=st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3),
)


@given(_EVENTS)
def test_an_events_json_holds_what_differs_from_the_defaults_and_reads_back_whole(event: GroupEvent) -> None:
    """`as_json` (built field by field: it runs for every buffered event every micro-batch) is `dataclasses.asdict`
    less the fields at their defaults, and `from_json` of its JSON text gives the same event back: an Empty group's
    GroupMetadata (`members=()`, not the default None) included."""
    defaults = GroupEvent(event_time_ms=event.event_time_ms, src_table=event.src_table, group_id=event.group_id)
    written = {key: value for key, value in asdict(event).items() if value != getattr(defaults, key)}
    written |= {"event_time_ms": event.event_time_ms, "src_table": event.src_table, "group_id": event.group_id}
    assert event.as_json() == written
    assert GroupEvent.from_json(json.loads(json.dumps(event.as_json()))) == event


def test_an_empty_groups_generation_outlives_a_snapshot() -> None:
    """The tracker snapshots the events it has not processed after every micro-batch and restores them in the next:
    the record of a group's last member leaving (a new generation with no members) must still empty the group,
    as it does when no snapshot falls between (it was read back without its members and ignored)."""
    silver = Silver()
    silver.generation("orders", 7, [Member("a-1", [("orders", 0)])], BASE_MS, leader="a-1")
    silver.generation("orders", 8, [], BASE_MS + 10_000)
    events = list(events_of(silver.rows))
    outcomes = [
        drive(events, [BASE_MS + 5_000, BASE_MS + 900_000], snapshot_between=between, group="orders")
        for between in (False, True)
    ]
    assert outcomes[0] == outcomes[1]
    health = outcomes[1].health
    assert health is not None
    assert (health["state"], health["generation"], health["members"]) == ("Empty", 8, 0)
