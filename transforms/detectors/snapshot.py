"""A tracker's snapshot: its state, the events not yet decided on and the rows not yet converted, versioned.

The detection query stores one per group between micro-batches (RocksDB state), so a snapshot written by the
previous release must restore in this one: each version bump comes with a migration from the version before,
and a test restores snapshots the previous version wrote (`tests/transforms/detectors/data/`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from rebalance_radar.transforms.detectors.group_events import GroupEvent
from rebalance_radar.transforms.detectors.state import GroupState

SNAPSHOT_VERSION = 3
STATE = TypeAdapter(GroupState)


@dataclass(frozen=True, slots=True)
class Snapshot:
    state: GroupState
    buffer: list[GroupEvent]
    """Events converted, waiting for the watermark."""
    arrivals: list[tuple[int, str]]
    """Packed rows not yet converted (`GroupTracker.accept_packed`)."""


class SnapshotError(ValueError):
    """A snapshot this release cannot read: its message says which and what to do."""


def encoded(snapshot: Snapshot) -> bytes:
    data = {
        "v": SNAPSHOT_VERSION,
        "state": STATE.dump_python(snapshot.state, mode="json"),
        "buffer": [e.as_json() for e in snapshot.buffer],
        "arrivals": snapshot.arrivals,
    }
    return zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 6)


def decoded(blob: bytes) -> Snapshot:
    data = json.loads(zlib.decompress(blob))
    version = data.get("v")
    while version != SNAPSHOT_VERSION:
        migrate = MIGRATIONS.get(version)
        if migrate is None:
            raise SnapshotError(
                f"a tracker snapshot has version {version}, which this release cannot read (it reads versions "
                f"{sorted(MIGRATIONS)} and {SNAPSHOT_VERSION}): a newer release wrote it; run that release (or a "
                "later one) on this data dir"
            )
        data = migrate(data)
        version = data["v"]
    try:
        state = STATE.validate_python(data["state"])
    except ValidationError as error:
        raise SnapshotError(
            f"a tracker snapshot of version {version} does not hold a group's state: {error}"
        ) from error
    return Snapshot(
        state=state,
        buffer=[GroupEvent.from_json(e) for e in data.get("buffer", [])],
        arrivals=[(int(time_ms), str(text)) for time_ms, text in data.get("arrivals", [])],
    )


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 kept its small records as positional lists (its attempts and open detections were dicts with
    the keys the classes now declare)."""
    state = dict(data["state"])
    state["skips"] = [{"at_ms": at, "never_completed": n} for at, n in state.get("skips", [])]
    state["sync_expiries"] = [
        {"at_ms": at, "generation": generation, "member_ids": list(members), "ref": ref}
        for at, generation, members, ref in state.get("sync_expiries", [])
    ]
    state["departures"] = [{"at_ms": at, "identity": identity} for at, identity in state.get("departures", [])]
    state["offsets"] = {k: {"offset": offset, "at_ms": at} for k, (offset, at) in state.get("offsets", {}).items()}
    state["owner_changed"] = {
        k: {"at_ms": at, "previous_owner": owner} for k, (at, owner) in state.get("owner_changed", {}).items()
    }
    state["signals"] = [
        {"at_ms": at, "kind": kind, "subject": subject} for at, kind, subject in state.get("signals", [])
    ]
    state["provisional"] = {
        k: {"horizon_ms": shown["horizon"], "row": _with_remedy(shown["row"])}
        for k, shown in state.get("provisional", {}).items()
    }
    state["detections"] = {k: _with_remedy(row) for k, row in state.get("detections", {}).items()}
    return {**data, "v": 2, "state": state}


def _with_remedy(row: dict[str, Any]) -> dict[str, Any]:
    """An open detection of version 1 gets its rule's remedy (not the advice its facts would have added)."""
    from rebalance_radar.transforms.detectors.rules import rule_of

    remedy = rule_of(row["kind"]).remedy
    return {**row, "remedy": remedy[:1].upper() + remedy[1:]}


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 makes every member detection an incident of its member's identity (version 2: zombie_commit
    only), so that the member's next occurrence updates the detection a version 2 tracker opened."""
    from rebalance_radar.transforms.detectors.rules import rule_of
    from rebalance_radar.transforms.detectors.state import member_identity

    state = dict(data["state"])
    known = {**state.get("departed", {}), **state.get("members", {})}

    def incident(row: dict[str, Any]) -> dict[str, Any]:
        member_id = row.get("member_id")
        if row.get("incident_of") or not member_id or not rule_of(row["kind"]).member_subject:
            return row
        member = known.get(member_id, {})
        identity = member_identity(member_id, member.get("instance_id"), member.get("client_id"), member.get("host"))
        return {**row, "incident_of": identity}

    state["detections"] = {k: incident(row) for k, row in state.get("detections", {}).items()}
    state["provisional"] = {
        k: {**shown, "row": incident(shown["row"])} for k, shown in state.get("provisional", {}).items()
    }
    return {**data, "v": 3, "state": state}


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2, 2: _v2_to_v3}
"""version -> the migration to the next version."""
