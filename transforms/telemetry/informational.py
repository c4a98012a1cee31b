"""Log lines known to carry no group event, named so that `telemetry_unrecognised` tells them from wording radar
does not know: a client's configuration listing (`ConsumerConfig values:` then one `key = value` line per setting,
most of a Kafka Streams application's log at start), version banners, and Kafka Streams' processing, restoration
and offset-reset narration. They are still counted (records in = events + counted + quarantined); only their
`reason` differs, so a query for wording to audit can leave them out.
"""

from __future__ import annotations

import re

CONFIG_LISTING = "configuration listing, no group event"
KNOWN_NARRATION = "known client narration, no group event"
COORDINATOR_NARRATION = "known coordinator narration, no group event"
KNOWN_REASONS = frozenset({CONFIG_LISTING, KNOWN_NARRATION, COORDINATOR_NARRATION})

_INFORMATIONAL: tuple[tuple[re.Pattern[str], str], ...] = (
    # AbstractConfig.logAll (2.x-4.x): "<Class> values: " then "\t<key> = <value>" per setting (shippers strip the tab)
    (re.compile(r"^[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)* =(?: [^\n]*)?$"), CONFIG_LISTING),
    (re.compile(r"\b\w*Config values:\s*$"), CONFIG_LISTING),
    (re.compile(r"These configurations '\[.*\]' were supplied but are not used yet"), CONFIG_LISTING),
    # the lines after the first of Streams' multi-line assignment messages (TaskManager "Handle new assignment with:",
    # StreamsMembershipManager "Assigned tasks with local epoch E ...": read from the first line alone)
    (
        re.compile(
            r"^(?:Member|(?:New|Existing|Assigned|Owned) (?:active|standby|warm-up) tasks|Active tasks to revoke):\s"
        ),
        KNOWN_NARRATION,
    ),
    # start-up banners: AppInfoParser, KafkaStreams, Metadata, KafkaProducer, StateDirectory (2.x-4.x)
    (re.compile(r"Kafka (?:version|commitId|startTimeMs): \S+\s*$"), KNOWN_NARRATION),
    (re.compile(r"Kafka Streams (?:version|commit ID): \S+\s*$"), KNOWN_NARRATION),
    (re.compile(r"\] Cluster ID: \S+\s*$"), KNOWN_NARRATION),
    (
        re.compile(
            r"initializing Kafka metrics collector|Instantiated an idempotent producer|Created new process id: "
        ),
        KNOWN_NARRATION,
    ),
    # (4.1 ends at "consumer client"; 4.2+ adds " for thread T")
    (re.compile(r"Creating (?:restore )?consumer client(?: for thread |\s*$)"), KNOWN_NARRATION),
    (re.compile(r"Restoration took \d+ ms for all active tasks "), KNOWN_NARRATION),
    # KafkaStreams / StreamThread lifecycle narration around the state changes they log (2.x-4.x)
    (re.compile(r"(?:Started|Shutting down) \d+ stream threads|Streams client stopped completely"), KNOWN_NARRATION),
    (
        re.compile(
            r"stream-thread \[[^\]]+\] "
            r"(?:Starting|Shutting down (?:clean|unclean)|Shutdown complete|Informed to shut down)$"
        ),
        KNOWN_NARRATION,
    ),
    # Kafka Streams 3.x/4.x: StreamThread's periodic summaries, the state updater's and changelog reader's restoration,
    # the task lifecycle lines not read as state changes, and the consumers' offset resets
    (re.compile(r"Processed \d+ total records, ran \d+ punctuators"), KNOWN_NARRATION),
    (re.compile(r"Committed \d+ total tasks since the last update"), KNOWN_NARRATION),
    (re.compile(r"state-updater \[[^\]]+\] "), KNOWN_NARRATION),
    (re.compile(r"\b(?:stream-)?task \[[^\]]+\] "), KNOWN_NARRATION),
    (re.compile(r"(?:Resetting|Setting) offset for partition \S+ to "), KNOWN_NARRATION),
    (re.compile(r"Found no committed offset for partition "), KNOWN_NARRATION),
    (re.compile(r"Seeking to \S+ offset of partition "), KNOWN_NARRATION),
    # the group coordinator's metadata bookkeeping before an epoch bump, which is logged on its own line (KIP-848:
    # 3.7-3.9 "Computed new subscription metadata: {...}.", 4.1+ "Computed new metadata hash: H." of a consumer group)
    (re.compile(r"\[GroupId [^\]]+\] Computed new (?:subscription metadata|metadata hash): "), COORDINATOR_NARRATION),
)


def informational_reason(message: str) -> str | None:
    """Why a line that gave no event is known to carry none, or None when its wording is simply not known."""
    for pattern, reason in _INFORMATIONAL:
        if pattern.search(message):
            return reason
    return None
