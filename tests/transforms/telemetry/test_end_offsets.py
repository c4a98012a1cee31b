"""`radar.end_offsets/1`: what the poller writes reads back whole; a record naming the schema that is not valid is
not a poll (the general parser then counts it unrecognised), never a made-up offset."""

from __future__ import annotations

import json

import pytest

from rebalance_radar.transforms.telemetry.end_offsets import (
    EndOffsetsPoll,
    PartitionEndOffset,
    end_offsets_record,
    parse_end_offsets,
)

pytestmark = pytest.mark.lag

POLL = EndOffsetsPoll(
    1_795_000_000_000,
    "radar-run@host",
    "orders",
    (PartitionEndOffset("orders", 0, 1234), PartitionEndOffset("audit", 3, None, "TOPIC_AUTHORIZATION_FAILED")),
)


def test_a_poll_reads_back_whole() -> None:
    assert parse_end_offsets(end_offsets_record(POLL)) == POLL


def body(**changes: object) -> bytes:
    obj = json.loads(end_offsets_record(POLL))
    obj.update(changes)
    return json.dumps(obj).encode()


@pytest.mark.parametrize(
    "value",
    [
        body(partitions=[]),  # nothing polled: no rows
        body(partitions=[{"topic": "orders", "partition": 0, "end_offset": -1}]),  # a negative end offset
        body(partitions=[{"topic": "orders", "partition": 0}]),  # neither an offset nor why not
        body(partitions=[{"topic": "orders", "partition": 0, "end_offset": 5, "error": "X"}]),  # both
        body(partitions=[{"topic": "orders", "partition": 0, "error": "not a name"}]),
        body(partitions=[{"topic": "", "partition": 0, "end_offset": 5}]),
        body(partitions=[{"topic": "orders", "partition": "0", "end_offset": 5}]),
        body(group_id=""),
        body(ts=-5),
        body(extra=1),
        body(schema="radar.end_offsets/2"),
        b'{"schema": "radar.end_offsets/1", truncated',
        b"radar.end_offsets/1 in a log line",
        None,
    ],
)
def test_an_invalid_record_is_not_a_poll(value: bytes | None) -> None:
    assert parse_end_offsets(value) is None
