"""Which group a client's group-less events belong to (`transforms.telemetry.client_groups`), on the rows the
telemetry parse builds: pure Python, no session."""

from __future__ import annotations

from typing import Any

from rebalance_radar.transforms.telemetry.client_groups import GROUP_FROM, GROUP_FROM_CLIENT_ID, ClientGroups


def row(client_id: str | None, group_id: str | None = None) -> dict[str, Any]:
    return {"client_id": client_id, "group_id": group_id, "details": [("kind", "x")]}


def test_a_streams_threads_client_and_assignor_take_the_group_of_the_threads_consumer() -> None:
    rows = [
        row("app-StreamThread-1"),  # before the consumer's line in the batch: the batch is read whole first
        row("app-StreamThread-1-consumer", "orders"),
        row("app-StreamThread-1-consumer"),  # the assignor's prefix
        row("app"),  # the KafkaStreams client's prefix
    ]
    assert ClientGroups().attribute(rows, [b"host-a"] * len(rows)) == 3
    assert [r["group_id"] for r in rows] == ["orders"] * 4
    assert rows[0]["details"] == [("kind", "x"), (GROUP_FROM, GROUP_FROM_CLIENT_ID)]
    assert rows[1]["details"] == [("kind", "x")]  # named its group itself


def test_another_source_a_second_group_or_no_group_gives_none() -> None:
    groups = ClientGroups()
    named = [row("rdkafka#consumer-1", "orders"), row("app-StreamThread-1-restore-consumer")]
    groups.attribute(named, [b"host-a", b"host-a"])
    elsewhere = [row("rdkafka#consumer-1")]  # librdkafka's default name, on another host
    assert groups.attribute(elsewhere, [b"host-b"]) == 0 and elsewhere[0]["group_id"] is None
    restore = [row("app-StreamThread-1-restore-consumer")]  # Streams' restore consumer is in no group
    assert groups.attribute(restore, [b"host-a"]) == 0
    two = [row("worker", "orders"), row("worker", "payments"), row("worker")]
    assert ClientGroups().attribute(two, [None] * 3) == 0 and two[2]["group_id"] is None


def test_what_a_tasks_earlier_batch_said_holds_for_its_later_batches() -> None:
    groups = ClientGroups()
    groups.attribute([row("app-StreamThread-2-consumer", "orders"), None], [b"k", b"k"])
    later = [None, row("app-StreamThread-2")]
    assert groups.attribute(later, [b"k", b"k"]) == 1 and later[1]["group_id"] == "orders"
