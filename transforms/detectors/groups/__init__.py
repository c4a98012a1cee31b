"""A group as the tracker models it, one class per protocol as Kafka's group coordinator has: `Group` (what all
share; a group seen through telemetry alone), `ClassicGroup`, `ConsumerGroup`, `StreamsGroup`, `ShareGroup`."""

from __future__ import annotations

from rebalance_radar.transforms.detectors.groups.classic import ClassicGroup
from rebalance_radar.transforms.detectors.groups.epochs import ConsumerGroup, EpochGroup, ShareGroup, StreamsGroup
from rebalance_radar.transforms.detectors.groups.group import Group

__all__ = ["GROUP_CLASSES", "ClassicGroup", "ConsumerGroup", "EpochGroup", "Group", "ShareGroup", "StreamsGroup"]

GROUP_CLASSES: dict[str | None, type[Group]] = {
    None: Group,
    "classic": ClassicGroup,
    "consumer": ConsumerGroup,
    "streams": StreamsGroup,
    "share": ShareGroup,
}
"""`GroupState.protocol` -> the class that models it."""
