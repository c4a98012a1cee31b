"""Link the rebalances, detections and coordinator moves of many groups to one cause: `incidents` rows.

In order of what explains best:
1. Coordinator moves. The coordinator's own lines (`transforms.telemetry.broker_log`) say which groups moved and
   where to: a burst of moves (events no more than `window_ms` apart) whose groups number `min_groups` or more is
   one incident. It names the broker the groups moved away from (the one that unloaded them, else the previous owner
   of their `__consumer_offsets` partitions or the groups themselves); `broker_restart` when that broker's
   coordinator stopped or started within the window, or started again later within `max_span_ms` (a broker's start,
   its logs recovered, can take minutes), else `coordinator_moved`. A coordinator move alone need not
   rebalance a classic group (its members find the new coordinator and heartbeat on): the moved groups are the
   incident, with whatever rebalances and detections they had in the window as evidence.
2. Deployment waves. The other rebalances, chained while no more than `window_ms` apart: where `min_groups` or more
   groups rebalanced, and members with the same host or client-id prefix came or went in `min_groups` or more of
   them, one `deployment_wave` incident names those hosts and prefixes.
3. Otherwise, where `unexplained_min_groups` or more groups rebalanced in one chain: `unexplained`, the groups listed.

Ids are deterministic (cluster, cause kind, what it names, the window's first event), so a replay writes the ids a
live run wrote and a recomputation over more data updates the same rows.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rebalance_radar.transforms.incidents.inputs import (
    CoordinatorEvent,
    DetectionRef,
    MemberSighting,
    RebalanceRef,
    client_id_of_member,
)
from rebalance_radar.transforms.schemas import INCIDENTS, HeartbeatEventKind, IncidentCause, IncidentStatus

K = HeartbeatEventKind

GENERIC_CLIENT_IDS = frozenset({"rdkafka", "consumer", "kafka-python", "sarama", "franz-go", "confluent-kafka"})
"""Client-id prefixes every client of a library shares by default: they say nothing about a deployment."""

# Trailing client-id segments that differ per instance: counters, UUID parts, pod-template hashes and pod suffixes.
_INSTANCE_SEGMENT = re.compile(r"^(?:\d+|[0-9a-f]{6,}|[0-9a-z]{5})$")


@dataclass(frozen=True)
class IncidentSettings:
    """How far apart events of one incident may be, and how many groups make one."""

    window_ms: int = 60_000
    """Kafka's default session timeout (45 s) plus a rebalance's join phase: the members of groups hit by one event
    have rejoined or been expired within it, so their rebalances start inside one window of each other."""
    min_groups: int = 2
    """Groups a named cause (a broker, a host) must explain for an incident."""
    unexplained_min_groups: int = 3
    """Groups rebalancing together with no cause seen before that is called an incident: two unrelated groups
    rebalancing within a minute is common on a busy cluster."""
    max_span_ms: int = 600_000
    """The longest chain of rebalances one wave or unexplained incident may span (a busy cluster never pauses)."""


def client_id_prefix(client_id: str) -> str | None:
    """The deployment a client id names: its trailing per-instance segments dropped (`billing-7f9c8d6b5-x2kqz` ->
    `billing`, `orders-worker-3` -> `orders-worker`); None for library defaults (`rdkafka`, `consumer`)."""
    segments = client_id.split("-")
    while len(segments) > 1 and _INSTANCE_SEGMENT.match(segments[-1]):
        segments.pop()
    prefix = "-".join(segments)
    return None if prefix.lower() in GENERIC_CLIENT_IDS else prefix


def incident_id(cluster: str, cause_kind: IncidentCause, names: str, window_start_ms: int) -> str:
    digest = hashlib.sha256(f"{cluster}|{cause_kind}|{names}|{window_start_ms}".encode()).hexdigest()
    return f"inc-{digest[:20]}"


def _bursts(times: Sequence[int], gap_ms: int, max_span_ms: int) -> list[tuple[int, int]]:
    """Index ranges [start, end) of sorted `times` chained while consecutive ones are at most `gap_ms` apart."""
    ranges: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(times) + 1):
        if i == len(times) or times[i] - times[i - 1] > gap_ms or times[i] - times[start] > max_span_ms:
            ranges.append((start, i))
            start = i
    return ranges


@dataclass(frozen=True)
class _Incident:
    cluster: str
    cause_kind: IncidentCause
    cause: str
    broker: str | None
    names: str
    start_ms: int
    end_ms: int
    groups: tuple[str, ...]
    evidence: tuple[dict[str, Any], ...]


def _moves(events: Sequence[CoordinatorEvent], settings: IncidentSettings) -> list[_Incident]:
    """Incidents of coordinator moves (rule 1 of the module docstring), one cluster's events sorted by time. Bursts
    are of group moves only: the partition loads of a cluster's start, which move no group, start none."""
    incidents: list[_Incident] = []
    lifecycle = [e for e in events if e.kind in (K.COORDINATOR_STARTED, K.COORDINATOR_STOPPING)]
    partition_events = [e for e in events if e.kind in (K.COORDINATOR_LOADED, K.COORDINATOR_UNLOADED)]
    partition_owner: dict[int, str] = {}
    partition_taken_from: dict[int, str] = {}  # the owner a partition's current owner took it over from
    group_owner: dict[str, str] = {}
    group_moves: list[tuple[CoordinatorEvent, str | None]] = []  # a group loaded or unloaded, and its owner before
    for event in events:
        if event.kind == K.COORDINATOR_LOADED and event.offsets_partition is not None and event.broker:
            previous = partition_owner.get(event.offsets_partition)
            if previous is not None and previous != event.broker:
                partition_taken_from[event.offsets_partition] = previous
            elif previous == event.broker:  # its owner loads it again (a restart): it took it from no one now
                partition_taken_from.pop(event.offsets_partition, None)
            partition_owner[event.offsets_partition] = event.broker
        elif event.kind in (K.GROUP_LOADED, K.GROUP_UNLOADED) and event.group_id:
            before = group_owner.get(event.group_id)
            if before is None and event.offsets_partition is not None:
                before = partition_owner.get(event.offsets_partition)
                if before == event.broker:
                    # the new owner's partition load came first (in the same millisecond, a partition load sorts
                    # first): the group's owner before is the one it took the partition over from (a stopping broker
                    # may log no unloading at all)
                    before = partition_taken_from.get(event.offsets_partition)
            group_moves.append((event, before))
            if event.kind == K.GROUP_LOADED and event.broker:
                group_owner[event.group_id] = event.broker
    times = [event.time_ms for event, _ in group_moves]
    for begin, end in _bursts(times, settings.window_ms, settings.max_span_ms):
        burst = group_moves[begin:end]
        groups = {event.group_id for event, _ in burst if event.group_id}
        if len(groups) < settings.min_groups:
            continue
        lost: dict[str, set[str]] = defaultdict(set)  # broker -> groups it lost
        gained: dict[str, set[str]] = defaultdict(set)
        for event, before in burst:
            assert event.group_id is not None
            if event.kind == K.GROUP_UNLOADED and event.broker:
                lost[event.broker].add(event.group_id)
            elif event.kind == K.GROUP_LOADED and event.broker:
                gained[event.broker].add(event.group_id)
                if before is not None and before != event.broker:
                    lost[before].add(event.group_id)
        start, end_ms = burst[0][0].time_ms, burst[-1][0].time_ms
        lo, hi = start - settings.window_ms, end_ms + settings.window_ms
        # a broker's start before its groups left it is an earlier life of it, not this restart (a cluster's start)
        near = [
            e
            for e in lifecycle
            if e.broker is not None
            and lo <= e.time_ms <= hi
            and not (e.kind == K.COORDINATOR_STARTED and e.broker in lost and e.time_ms < start)
        ]
        # a broker that lost groups and starts again later than a window, within a span, is back from its restart:
        # a broker's start (log recovery, a loaded host) can take minutes; its first start then, once
        started_near = {e.broker for e in near if e.kind == K.COORDINATOR_STARTED}
        for broker in sorted(set(lost) - started_near):
            later = (
                e
                for e in lifecycle
                if e.kind == K.COORDINATOR_STARTED
                and e.broker == broker
                and hi < e.time_ms <= end_ms + settings.max_span_ms
            )
            back = next(later, None)
            if back is not None:
                near.append(back)
        cycled = {e.broker for e in near}
        named = max(lost, key=lambda b: (len(lost[b]), b)) if lost else None
        if named is None and len(cycled) == 1:
            named = next(iter(cycled))
        sorted_groups = tuple(sorted(groups))
        shown = ", ".join(sorted_groups)
        moved_to = sorted(set(gained) - {named})
        to = f" to broker {', '.join(moved_to)}" if moved_to else ""
        if named is not None and named in cycled:
            kind = IncidentCause.BROKER_RESTART
            stopped = any(e.kind == K.COORDINATOR_STOPPING and e.broker == named for e in near)
            started = any(e.kind == K.COORDINATOR_STARTED and e.broker == named for e in near)
            # a stopping broker's last lines may never reach its log (a crash; log4j2 shut down before Kafka):
            # groups that left it, then its start, are its restart
            what = (
                "stopped and started"
                if stopped and started
                else "stopped"
                if stopped
                else "restarted"
                if named in lost
                else "started"
            )
            if moved_to:
                cause = f"broker {named} {what}: the coordinator of {len(groups)} groups moved{to} ({shown})"
            else:  # a single broker, or groups that came back: reloaded where they were
                cause = f"broker {named} {what}: it loaded the coordinator of {len(groups)} groups again ({shown})"
        elif named is not None:
            kind = IncidentCause.COORDINATOR_MOVED
            cause = f"the coordinator of {len(groups)} groups moved away from broker {named}{to} ({shown})"
        else:
            kind = IncidentCause.COORDINATOR_MOVED
            named = ", ".join(sorted(gained)) or None
            cause = f"the coordinator of {len(groups)} groups moved to broker {named or '?'} ({shown})"
        brokers = set(lost) | set(gained)
        own = [e for e in near if e.broker == named]  # the named broker's start and stop: in the window and evidence
        partitions = [e for e in partition_events if lo <= e.time_ms <= hi and e.broker in brokers]
        shown_events = sorted(
            (*(event for event, _ in burst), *partitions, *own), key=lambda e: (e.time_ms, str(e.kind))
        )
        if own:
            start = min(start, *(e.time_ms for e in own))
            end_ms = max(end_ms, *(e.time_ms for e in own))
        incidents.append(
            _Incident(
                events[0].cluster,
                kind,
                cause,
                named,
                named or "",
                start,
                end_ms,
                sorted_groups,
                tuple(_event_evidence(e) for e in shown_events),
            )
        )
    return incidents


def _event_evidence(event: CoordinatorEvent) -> dict[str, Any]:
    topic, partition, offset = event.src
    return {
        "table": "heartbeat_events",
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "event_time": _iso(event.time_ms),
        "event": str(event.kind),
        "broker": event.broker,
        "group_id": event.group_id,
    }


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _waves(
    rebalances: Sequence[RebalanceRef], sightings: Sequence[MemberSighting], settings: IncidentSettings
) -> list[_Incident]:
    """Deployment waves and unexplained incidents (rules 2 and 3) over one cluster's rebalances sorted by start."""
    by_member: dict[tuple[str, str], MemberSighting] = {}
    by_group: dict[str, list[MemberSighting]] = defaultdict(list)
    for sighting in sightings:
        if sighting.member_id:
            by_member[(sighting.group_id, sighting.member_id)] = sighting
        by_group[sighting.group_id].append(sighting)
    incidents: list[_Incident] = []
    times = [r.started_ms for r in rebalances]
    for begin, end in _bursts(times, settings.window_ms, settings.max_span_ms):
        chain = rebalances[begin:end]
        groups = sorted({r.group_id for r in chain})
        if len(groups) < settings.min_groups:
            continue
        start, end_ms = chain[0].started_ms, chain[-1].started_ms
        hosts: dict[str, set[str]] = defaultdict(set)
        prefixes: dict[str, set[str]] = defaultdict(set)
        for rebalance in chain:
            for member in rebalance.members:
                seen = by_member.get((rebalance.group_id, member))
                client = (seen.client_id if seen else None) or client_id_of_member(member)
                if client and (prefix := client_id_prefix(client)):
                    prefixes[prefix].add(rebalance.group_id)
                if seen is not None and seen.host:
                    hosts[seen.host].add(rebalance.group_id)
        for group in groups:  # sightings without a member id (a host's client went away) within the chain
            for seen in by_group.get(group, ()):
                near = start - settings.window_ms <= seen.time_ms <= end_ms + settings.window_ms
                if near and seen.host and seen.member_id is None:
                    hosts[seen.host].add(group)
        shared_hosts = sorted(h for h, g in hosts.items() if len(g) >= settings.min_groups)
        shared_prefixes = sorted(p for p, g in prefixes.items() if len(g) >= settings.min_groups)
        if shared_hosts or shared_prefixes:
            explained = sorted(set().union(*(hosts[h] for h in shared_hosts), *(prefixes[p] for p in shared_prefixes)))
            named = []
            if shared_hosts:
                named.append(f"hosts {', '.join(shared_hosts)}")
            if shared_prefixes:
                named.append(f"client-id prefixes {', '.join(shared_prefixes)}")
            what = " and ".join(named)
            cause = f"deployment wave: members on {what} restarted in {len(explained)} groups ({', '.join(explained)})"
            evidence = tuple({"host": h, "groups": sorted(hosts[h])} for h in shared_hosts) + tuple(
                {"client_id_prefix": p, "groups": sorted(prefixes[p])} for p in shared_prefixes
            )
            incidents.append(
                _Incident(
                    chain[0].cluster,
                    IncidentCause.DEPLOYMENT_WAVE,
                    cause,
                    None,
                    what,
                    start,
                    end_ms,
                    tuple(explained),
                    evidence,
                )
            )
        elif len(groups) >= settings.unexplained_min_groups:
            cause = f"{len(groups)} groups rebalanced together with no common cause seen ({', '.join(groups)})"
            incidents.append(
                _Incident(
                    chain[0].cluster, IncidentCause.UNEXPLAINED, cause, None, "", start, end_ms, tuple(groups), ()
                )
            )
    return incidents


def link_incidents(
    rebalances: Iterable[RebalanceRef],
    detections: Iterable[DetectionRef],
    coordinator_events: Iterable[CoordinatorEvent],
    sightings: Iterable[MemberSighting] = (),
    settings: IncidentSettings = IncidentSettings(),
    *,
    now_ms: int | None = None,
) -> list[dict[str, Any]]:
    """`incidents` rows (every column of `INCIDENTS`), oldest first. `now_ms`: the newest event time known (default:
    the newest among the inputs); an incident whose window may still grow (`window_ms` past its end not reached) is
    open, else closed."""
    per_cluster: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for name, rows in (
        ("rebalances", rebalances),
        ("detections", detections),
        ("events", coordinator_events),
        ("sightings", sightings),
    ):
        for row in rows:
            per_cluster[row.cluster][name].append(row)
    out: list[dict[str, Any]] = []
    for _, inputs in sorted(per_cluster.items()):
        events = sorted(inputs["events"], key=lambda e: (e.time_ms, str(e.kind), e.group_id or ""))
        found = _moves(events, settings)
        moved = [(set(i.groups), i.start_ms - settings.window_ms, i.end_ms + settings.window_ms) for i in found]
        all_rebalances = sorted(inputs["rebalances"], key=lambda r: (r.started_ms, r.group_id, r.rebalance_id))
        rest = [
            r
            for r in all_rebalances
            if not any(r.group_id in groups and lo <= r.started_ms <= hi for groups, lo, hi in moved)
        ]
        found += _waves(rest, inputs["sightings"], settings)
        newest = now_ms
        if newest is None:
            times = [e.time_ms for e in events] + [r.started_ms for r in all_rebalances]
            times += [d.last_seen_ms for d in inputs["detections"]]
            newest = max(times, default=0)
        for incident in sorted(found, key=lambda i: (i.start_ms, i.cause_kind)):
            out.append(_row(incident, all_rebalances, inputs["detections"], settings, newest))
    return out


def _row(
    incident: _Incident,
    rebalances: Sequence[RebalanceRef],
    detections: Sequence[DetectionRef],
    settings: IncidentSettings,
    now_ms: int,
) -> dict[str, Any]:
    lo, hi = incident.start_ms - settings.window_ms, incident.end_ms + settings.window_ms
    groups = set(incident.groups)
    linked_rebalances = sorted(r.rebalance_id for r in rebalances if r.group_id in groups and lo <= r.started_ms <= hi)
    linked_detections = sorted(
        d.detection_id for d in detections if d.group_id in groups and d.first_seen_ms <= hi and d.last_seen_ms >= lo
    )
    status = IncidentStatus.OPEN if now_ms < incident.end_ms + settings.window_ms else IncidentStatus.CLOSED
    row = {
        "cluster": incident.cluster,
        "incident_id": incident_id(incident.cluster, incident.cause_kind, incident.names, incident.start_ms),
        "cause_kind": str(incident.cause_kind),
        "cause": incident.cause,
        "broker": incident.broker,
        "window_start": datetime.fromtimestamp(incident.start_ms / 1000, tz=UTC),
        "window_end": datetime.fromtimestamp(incident.end_ms / 1000, tz=UTC),
        "groups": list(incident.groups),
        "detection_ids": linked_detections,
        "rebalance_ids": linked_rebalances,
        "status": str(status),
        "evidence": json.dumps(list(incident.evidence), sort_keys=True),
    }
    assert tuple(row) == INCIDENTS.column_names, "incidents row out of step with its schema"
    return row


def incident_rows_of(
    rebalance_rows: Iterable[Mapping[str, Any]],
    detection_rows: Iterable[Mapping[str, Any]],
    event_rows: Iterable[Mapping[str, Any]],
    settings: IncidentSettings = IncidentSettings(),
    *,
    now_ms: int | None = None,
) -> list[dict[str, Any]]:
    """`link_incidents` over table rows: `rebalances`, `detections`, and `heartbeat_events` (coordinator kinds and
    member sightings alike; other events are left out)."""
    events: list[CoordinatorEvent] = []
    sightings: list[MemberSighting] = []
    for row in event_rows:
        coordinator = CoordinatorEvent.of_row(row)
        if coordinator is not None:
            events.append(coordinator)
            continue
        sighting = MemberSighting.of_row(row)
        if sighting is not None:
            sightings.append(sighting)
    return link_incidents(
        (r for r in map(RebalanceRef.of_row, rebalance_rows) if r is not None),
        (d for d in map(DetectionRef.of_row, detection_rows) if d is not None),
        events,
        sightings,
        settings,
        now_ms=now_ms,
    )
