"""The group of a Kafka Streams client's log lines that name none.

Streams' own prefixes name a thread (`stream-thread [T]`), the thread's consumer (`stream-thread [T-consumer]`, the
partition assignor's lines: version probing, follow-up rebalances) or the client (`stream-client [C]`). They name
the application, which is the group, only while `client.id` is left at its default (`<app>-<process uuid>`). With a
`client.id` set, the group is named by the same consumer's own lines: `[Consumer clientId=T-consumer, groupId=G]`.
Events from those lines teach which group each client id belongs to, and the group-less events of the same clients
from the same source are given it; a client id seen in two groups stays unattributed. The source is the record's key
(the log shipper's host, a replayed file's name): client ids are unique only within a process (librdkafka's default
`rdkafka#consumer-1` is every application's).
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from typing import Any

STREAMS_CONSUMER = re.compile(r"^((.+)-StreamThread-\d+)-consumer$")
"""A Streams thread's consumer client id: `<client id>-StreamThread-<n>-consumer` (thread = without `-consumer`)."""
GROUP_FROM = "group_from"
"""The detail an attributed event carries: the group came from the client id's other lines."""
GROUP_FROM_CLIENT_ID = "client_id"


class ClientGroups:
    """(source, client id) -> the groups its lines named, accumulated over the batches of one task (one source
    partition's records in order), so a line is attributed from the lines before it and from its own batch."""

    def __init__(self) -> None:
        self._groups: dict[tuple[bytes | None, str], set[str]] = {}

    def learn(self, source: bytes | None, client_id: str, group_id: str) -> None:
        """A line named both: the client id, and for a Streams thread's consumer its thread and its client too."""
        names = [client_id]
        streams = STREAMS_CONSUMER.match(client_id)
        if streams is not None:
            names += [streams.group(1), streams.group(2)]
        for name in names:
            self._groups.setdefault((source, name), set()).add(group_id)

    def group_of(self, source: bytes | None, client_id: str) -> str | None:
        """The one group `client_id`'s lines from `source` named; None when none or several did."""
        groups = self._groups.get((source, client_id))
        return next(iter(groups)) if groups is not None and len(groups) == 1 else None

    def attribute(self, rows: Sequence[MutableMapping[str, Any] | None], sources: Sequence[bytes | None]) -> int:
        """Learn from `rows` (`heartbeat_events` rows as the telemetry parse builds them; None for a record with no
        event; `sources[i]` the record key of `rows[i]`), then give each group-less row with a known client id its
        group; returns how many were given one."""
        kept = [(source, row) for row, source in zip(rows, sources, strict=True) if row and row.get("client_id")]
        for source, row in kept:
            if row.get("group_id"):
                self.learn(source, row["client_id"], row["group_id"])
        given = 0
        for source, row in kept:
            if row.get("group_id"):
                continue
            group = self.group_of(source, row["client_id"])
            if group is not None:
                row["group_id"] = group
                row["details"] = [*row.get("details", ()), (GROUP_FROM, GROUP_FROM_CLIENT_ID)]
                given += 1
        return given
