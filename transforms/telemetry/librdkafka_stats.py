"""librdkafka statistics JSON (`statistics.interval.ms`) -> a consumer-group snapshot and its last rebalance.

librdkafka (and confluent-kafka, which forwards it) emits one object per interval: `type` ("consumer"),
`name`/`client_id`, `time` (wall clock, seconds since the epoch; `ts` is a monotonic microsecond clock, not
a date), and `cgrp` with `state` ("up" once the coordinator is known), `stateage`, `join_state` ("steady",
"wait-join", "wait-sync", ...), `rebalance_age` (ms since the last assign/revoke), `rebalance_cnt`,
`rebalance_reason` and `assignment_size`. The stats carry no group id or member id: a wrapper may add
`group_id` (top level or in `cgrp`), and then it is used.

Events: a snapshot (`heartbeat` while `state` is "up", `heartbeat_failed` while the coordinator is lost;
none in "init"/"term"), plus a `rebalance_prepare` at `time - rebalance_age` when `rebalance_cnt` > 0 and a
reason is given. Every stats object repeats the last rebalance, so that event carries
`details.dedupe_key = "<client_id>:<rebalance_cnt>"` for downstream de-duplication.
"""

from __future__ import annotations

from typing import Any

from rebalance_radar.transforms.schemas import HeartbeatEventKind, TelemetrySource
from rebalance_radar.transforms.telemetry.events import HeartbeatEvent, ParseOutcome

SOURCE = TelemetrySource.LIBRDKAFKA_STATS

_CGRP_DETAIL_FIELDS: tuple[str, ...] = (
    "state",
    "stateage",
    "join_state",
    "rebalance_age",
    "rebalance_cnt",
    "rebalance_reason",
    "assignment_size",
)
_QUIET_STATES = frozenset({"init", "term"})


def cgrp_details(cgrp: dict[str, Any]) -> dict[str, str]:
    """The consumer-group fields of librdkafka statistics worth keeping, as event details."""
    return {key: str(cgrp[key]) for key in _CGRP_DETAIL_FIELDS if cgrp.get(key) not in (None, "")}


def is_librdkafka_stats(obj: dict[str, Any]) -> bool:
    """librdkafka stats have a client `type`, a clock (`ts`/`time`) and per-client sections (`cgrp`, `brokers`)."""
    return (
        obj.get("type") in {"consumer", "producer"}
        and ("ts" in obj or "time" in obj)
        and any(key in obj for key in ("cgrp", "brokers", "name", "client_id"))
    )


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def parse_librdkafka_stats(stats: dict[str, Any], record_timestamp_ms: int) -> ParseOutcome:
    """A parsed stats object -> outcome: snapshot and rebalance events, or unrecognised (producer, no `cgrp`)."""
    cgrp = stats.get("cgrp")
    if stats.get("type") != "consumer" or not isinstance(cgrp, dict):
        return ParseOutcome.unrecognised(SOURCE, "librdkafka stats without a consumer group (cgrp)")
    wall_seconds = _int_or_none(stats.get("time"))
    now_ms = wall_seconds * 1000 if wall_seconds is not None and wall_seconds > 0 else record_timestamp_ms
    client_id = stats.get("client_id") or stats.get("name")
    client_id = str(client_id) if client_id is not None else None
    group_id = stats.get("group_id") or cgrp.get("group_id")
    group_id = str(group_id) if group_id is not None else None
    details = cgrp_details(cgrp)
    if stats.get("name") is not None:
        details["name"] = str(stats["name"])
    state = str(cgrp.get("state", ""))

    def event(kind: HeartbeatEventKind, time_ms: int, reason: str | None, extra: dict[str, str]) -> HeartbeatEvent:
        return HeartbeatEvent(
            event_time=time_ms,
            group_id=group_id,
            member_id=None,
            group_instance_id=None,
            generation=None,
            member_epoch=None,
            event=kind,
            error=None,
            reason=reason,
            client_id=client_id,
            host=None,
            source=SOURCE,
            details={**details, **extra},
        )

    events: list[HeartbeatEvent] = []
    if state == "up":
        events.append(event(HeartbeatEventKind.HEARTBEAT, now_ms, None, {}))
    elif state and state not in _QUIET_STATES:
        events.append(event(HeartbeatEventKind.HEARTBEAT_FAILED, now_ms, f"consumer group state {state}", {}))
    rebalance_count = _int_or_none(cgrp.get("rebalance_cnt"))
    reason = cgrp.get("rebalance_reason")
    if rebalance_count and rebalance_count > 0 and isinstance(reason, str) and reason:
        age_ms = _int_or_none(cgrp.get("rebalance_age")) or 0
        extra = {"observed_by": "client", "dedupe_key": f"{client_id}:{rebalance_count}"}
        events.append(event(HeartbeatEventKind.REBALANCE_PREPARE, now_ms - max(age_ms, 0), reason, extra))
    if not events:
        return ParseOutcome.unrecognised(SOURCE, f"consumer group state {state or 'missing'} carries no event")
    return ParseOutcome(tuple(events), SOURCE)
