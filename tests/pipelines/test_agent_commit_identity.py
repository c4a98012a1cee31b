"""Which identity the agent reports a commit under (`emitters.agent.commit_identity`), without a broker.

Why: after an eviction librdkafka's group metadata pairs the rejoin's new member id (MEMBER_ID_REQUIRED) with the
evicted member's generation; a zombie's commit reported under that pair named the live rejoined member (CI:
test_telemetry_broker_4x, run 11). The group metadata bytes here follow librdkafka's serialization
(rd_kafka_consumer_group_metadata_write: "CGMDv2:", native int32 generation, group\\0, member\\0, instance-is-null
flag[, instance\\0]); one check reads the bytes of a real, unconnected librdkafka consumer.
"""

from __future__ import annotations

import struct

from confluent_kafka import Consumer

from rebalance_radar.emitters.agent import GroupIdentity, client_identity_details, commit_identity, parse_group_metadata

GROUP = "orders"
EVICTED = "rdkafka-0f3c"
REJOINED = "rdkafka-9a71"


def group_metadata(generation: int, member_id: str, group_id: str = GROUP) -> bytes:
    """librdkafka's `consumer_group_metadata()` bytes for a dynamic member (no group.instance.id)."""
    return b"CGMDv2:" + struct.pack("=i", generation) + f"{group_id}\0{member_id}\0".encode() + b"\x01"


def classic(member_id: str | None, generation: int | None) -> GroupIdentity:
    return GroupIdentity(GROUP, member_id, None, generation, None)


def kip848(member_id: str, epoch: int) -> GroupIdentity:
    return GroupIdentity(GROUP, member_id, None, None, epoch)


def test_rejoin_id_with_the_evicted_generation_is_reported_as_the_evicted_member() -> None:
    """The racy pair of the CI failure: new member id, old generation. The commit is the evicted member's; what
    librdkafka held (and most likely sent) stays in the client_* details."""
    client = parse_group_metadata(group_metadata(7, REJOINED), consumer_protocol=False)
    assert client == classic(REJOINED, 7)
    membership = classic(EVICTED, 7)
    reported = commit_identity(client, membership, consumer_protocol=False)
    assert reported == membership
    assert client_identity_details(reported, client) == {"client_member_id": REJOINED, "client_generation": "7"}


def test_cleared_member_id_is_reported_as_the_last_assignment() -> None:
    """librdkafka clears its member id on UNKNOWN_MEMBER_ID; the generation is still the evicted one."""
    client = parse_group_metadata(group_metadata(7, ""), consumer_protocol=False)
    assert client == classic(None, 7)
    reported = commit_identity(client, classic(EVICTED, 7), consumer_protocol=False)
    assert (reported.member_id, reported.generation) == (EVICTED, 7)
    assert client_identity_details(reported, client) == {"client_generation": "7"}


def test_a_pair_the_group_granted_is_reported_as_librdkafka_holds_it() -> None:
    steady = classic(EVICTED, 7)
    assert commit_identity(steady, steady, consumer_protocol=False) == steady
    assert client_identity_details(steady, steady) == {}
    # ILLEGAL_GENERATION: librdkafka keeps the member id and resets the generation to -1 (reported as none)
    reset = parse_group_metadata(group_metadata(-1, EVICTED), consumer_protocol=False)
    assert commit_identity(reset, steady, consumer_protocol=False) == reset == classic(EVICTED, None)
    # a JoinGroup granted generation 8 to the new id: a real identity, even before its assignment is served
    granted = classic(REJOINED, 8)
    assert commit_identity(granted, steady, consumer_protocol=False) == granted
    # nothing assigned yet: nothing better to report
    assert commit_identity(granted, None, consumer_protocol=False) == granted


def test_classic_auto_commit_is_the_last_assignments_whatever_librdkafka_holds_at_callback_time() -> None:
    """Its positions were the last assignment's, and its callback is served before the next assignment's."""
    membership = classic(EVICTED, 7)
    for at_callback in (classic(REJOINED, 8), classic(REJOINED, 7), classic(None, 7), membership):
        assert commit_identity(at_callback, membership, consumer_protocol=False, auto_commit=True) == membership
    assert commit_identity(classic(REJOINED, 8), None, consumer_protocol=False, auto_commit=True).member_id == REJOINED


def test_kip848_keeps_its_member_id_and_reports_the_epoch_librdkafka_holds() -> None:
    """KIP-848 member ids survive a rejoin; the epoch (fenced: back to 0, then the new one) is what tells."""
    membership = kip848(REJOINED, 5)
    for client in (kip848(REJOINED, 4), kip848(REJOINED, 0), kip848(REJOINED, 6)):
        assert commit_identity(client, membership, consumer_protocol=True) == client
        assert commit_identity(client, membership, consumer_protocol=True, auto_commit=True) == client
    parsed = parse_group_metadata(group_metadata(4, REJOINED), consumer_protocol=True)
    assert parsed == kip848(REJOINED, 4)


def test_real_librdkafka_group_metadata_before_any_join_parses_to_no_membership() -> None:
    """The layout the helpers above assume is librdkafka's: an unconnected consumer (generation -1, no member)."""
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "identity-check", "log_level": 0})
    try:
        blob = consumer.consumer_group_metadata()
    finally:
        consumer.close()
    assert blob.startswith(b"CGMDv2:") and blob == group_metadata(-1, "", "identity-check")
    client = parse_group_metadata(blob, consumer_protocol=False)
    assert client == GroupIdentity("identity-check", None, None, None, None)
    assert commit_identity(client, None, consumer_protocol=False) == client


def test_a_static_members_instance_id_is_read_from_real_librdkafka_bytes() -> None:
    """A static member's metadata: the "instance id is null" flag is a NUL byte itself, then the instance id (read
    from a real, unconnected librdkafka consumer); a dynamic member's flag is 1 and it has none."""
    identities = {}
    for name, extra in (("static", {"group.instance.id": "orders-worker-3"}), ("dynamic", {})):
        consumer = Consumer({"group.id": GROUP, "bootstrap.servers": "127.0.0.1:1", **extra})
        try:
            identities[name] = parse_group_metadata(consumer.consumer_group_metadata(), consumer_protocol=False)
        finally:
            consumer.close()
    assert identities["static"] == GroupIdentity(GROUP, None, "orders-worker-3", None, None)
    assert identities["dynamic"] == GroupIdentity(GROUP, None, None, None, None)
    hand_made = b"CGMDv2:" + struct.pack("=i", 9) + b"orders\0rdkafka-1\0\0orders-worker-3\0"
    assert parse_group_metadata(hand_made, consumer_protocol=False) == GroupIdentity(
        GROUP, "rdkafka-1", "orders-worker-3", 9, None
    )
