"""The per-group tracker: follows one group through its generations (classic) or epochs (KIP-848/1071/932),
turns its events into rebalances, detections and a health row.

Time is event time only. `advance_to(watermark)` converts the rows the watermark has reached (`accept_packed`),
processes the buffered events up to the watermark in `event_order` and evaluates each time-based rule at its own
deadline, before any later event, so the output depends on the events and the final watermark, never on how the
watermark got there: a replay reproduces the live stream's rows (same ids, same detected_at). The live watermark
keeps moving while a group is silent because clock ticks are data (`radar.clock/1`).

A live run may also look ahead (`preview`): the rules on a copy of the state, over the buffered events the
watermark has not reached, show the detections those events open at once as `provisional`. The committed state is
untouched; when the watermark passes what the preview saw, the ordered events have confirmed each such id (its
row is output as usual) or it is withdrawn (`advance_to` outputs the withdrawal). Only output is added, so the
confirmed rows are still exactly a replay's.

Membership sources, by trust: the coordinator's records (classic GroupMetadata snapshots, KIP-848 member and
epoch records) are authoritative when present; broker log lines and client telemetry add the why (reasons,
expirations, poll timeouts, heartbeats) and, for a group seen through telemetry alone, the membership too.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from rebalance_radar.transforms.detectors.detections import DetectionBook, detection_row
from rebalance_radar.transforms.detectors.evidence import as_datetime
from rebalance_radar.transforms.detectors.facts import EndOffsetPolled, Fact
from rebalance_radar.transforms.detectors.group_events import GroupEvent, event_order, group_event_from_packed
from rebalance_radar.transforms.detectors.groups import GROUP_CLASSES, ClassicGroup, EpochGroup, Group
from rebalance_radar.transforms.detectors.lag_windows import forget_partition, prune_lag, record_commit, record_end
from rebalance_radar.transforms.detectors.rules import RULES, RuleContext, rules_told
from rebalance_radar.transforms.detectors.settings import settings_from_conf
from rebalance_radar.transforms.detectors.snapshot import Snapshot, decoded, encoded
from rebalance_radar.transforms.detectors.state import GroupState, ShownProvisional
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.lag.evaluation import LagVerdict
from rebalance_radar.transforms.schemas import (
    GROUP_HEALTH,
    GROUP_LAG,
    GROUP_METADATA,
    GROUP_RECORDS,
    HEARTBEAT_EVENTS,
    OFFSET_COMMITS,
    PARTITION_END_OFFSETS,
    DetectionStatus,
    LagStatus,
)

HOUR_MS = 3_600_000
PRUNE_EVERY_MS = 10_000
"""State is pruned at most this often (by event time: the same events prune at the same points on replay)."""
OFFSETS_DELETED = (
    "the group's committed offset for it was deleted (its topic deleted, the offsets expired, or deleted with "
    "kafka-consumer-groups --delete-offsets): there is no lag to measure"
)
RULES_TOLD = rules_told()
"""fact class -> the rules that react to it."""


def _event_time(event: GroupEvent) -> int:
    return event.event_time_ms


@dataclass(frozen=True, slots=True)
class TrackerOutput:
    """What one `advance_to` produced: changed rebalance and detection rows, and the health row if it changed."""

    rebalances: tuple[dict[str, Any], ...]
    detections: tuple[dict[str, Any], ...]
    health: dict[str, Any] | None
    lag: tuple[dict[str, Any], ...] = ()
    """`group_lag` rows of the polls processed, each with its poll's group total and maximum."""


class GroupTracker:
    """The time model of one (cluster, group_id): events in event order, rules at their deadlines; the group's
    protocol class (`groups/`) keeps its state and the rules (`rules/`) decide on detections."""

    def __init__(
        self, cluster: str, group_id: str, thresholds: DetectorThresholds, state: GroupState | None = None
    ) -> None:
        self.thresholds = thresholds
        self.state = state or GroupState(cluster=cluster, group_id=group_id)
        settings_from_conf(self.state, thresholds)
        self.book = DetectionBook(self.state, thresholds.incident_reopen_ms)
        self._context = RuleContext(self.state, self.book, thresholds)
        self._buffer: list[GroupEvent] = []
        # Rows not yet converted to events: (event time ms, packed text), see `accept_packed`.
        self._arrivals: list[tuple[int, str]] = []
        self._rebalance_rows: dict[str, dict[str, Any]] = {}
        self._lag_rows: list[dict[str, Any]] = []
        self._groups: dict[str | None, Group] = {}
        self._touched = False
        self._sorted = True

    @classmethod
    def restore(cls, snapshot: bytes, thresholds: DetectorThresholds) -> GroupTracker:
        restored = decoded(snapshot)
        state = restored.state
        tracker = cls(state.cluster, state.group_id, thresholds, state)
        tracker._buffer = restored.buffer
        tracker._arrivals = restored.arrivals
        tracker._sorted = False
        return tracker

    def snapshot(self) -> bytes:
        """The state, the events not yet processed (bounded by pruning on event time) and the packed rows not
        yet converted (`accept_packed`), as they came (`snapshot.py`, versioned)."""
        return encoded(Snapshot(self.state, self._buffer, self._arrivals))

    def accept(self, events: Iterable[GroupEvent]) -> None:
        before = len(self._buffer)
        self._buffer.extend(events)
        self._sorted = self._sorted and len(self._buffer) == before

    def accept_packed(self, rows: Iterable[tuple[int, str]]) -> None:
        """This group's rows as the detection query packs them: (event time ms, `group_event_from_packed`'s text).
        Each is converted to its event only when the watermark reaches it (or a preview needs it): until then the
        snapshot keeps the text. In a replay's first micro-batch the watermark is 0 and every event waits, and
        writing and reading back events was 37 % of a large replay's detection CPU."""
        self._arrivals.extend(rows)

    def _convert_arrivals(self, until_ms: int | None) -> None:
        """The arrivals at or before `until_ms` (None: all) into the event buffer; rows that say nothing drop."""
        if not self._arrivals:
            return
        cluster, group_id = self.state.cluster, self.state.group_id
        events, waiting = [], []
        for time_ms, text in self._arrivals:
            if until_ms is not None and time_ms > until_ms:
                waiting.append((time_ms, text))
                continue
            event = group_event_from_packed(cluster, group_id, text)
            if event is not None:
                events.append(event)
        self._arrivals = waiting
        self.accept(events)

    def next_wakeup(self) -> int | None:
        times = [e.event_time_ms for e in self._buffer]
        if self._arrivals:
            times.append(min(time_ms for time_ms, _ in self._arrivals))
        deadline = self._next_deadline()
        if deadline is not None:
            times.append(deadline)
        return min(times) if times else None

    def is_expired(self, watermark_ms: int) -> bool:
        last = self.state.last_event_ms
        return (
            not self._buffer
            and not self._arrivals
            and not self.state.detections
            and not self.state.provisional
            and last is not None
            and watermark_ms - last > self.thresholds.group_idle_ttl_ms
        )

    def advance_to(self, watermark_ms: int) -> TrackerOutput:
        self._convert_arrivals(watermark_ms)
        self._run_to(watermark_ms)
        rebalances = tuple(self._rebalance_rows[k] for k in sorted(self._rebalance_rows))
        self._rebalance_rows.clear()  # shared with the group's models
        detections = self.book.rows()
        if self.state.provisional:
            detections += self._settle_provisional(watermark_ms, {row["detection_id"] for row in detections})
        health = self._health_row() if self._touched else None
        self._touched = False
        return TrackerOutput(rebalances=rebalances, detections=detections, health=health, lag=self._lag_output())

    def _lag_output(self) -> tuple[dict[str, Any], ...]:
        """The `group_lag` rows of the polls processed, with each poll's group total and maximum (the partitions
        with an honest lag; null when none has one)."""
        rows, self._lag_rows = self._lag_rows, []
        lags: dict[Any, list[int]] = {}
        for row in rows:
            if row["lag"] is not None:
                lags.setdefault(row["measured_at"], []).append(row["lag"])
        for row in rows:
            of_poll = lags.get(row["measured_at"])
            row["group_total_lag"] = sum(of_poll) if of_poll else None
            row["group_max_lag"] = max(of_poll) if of_poll else None
        return tuple({name: row.get(name) for name in GROUP_LAG.column_names} for row in rows)

    def _run_to(self, watermark_ms: int) -> None:
        """Process the buffered events up to the watermark and every deadline due on the way, in time order."""
        if not self._sorted:
            self._buffer.sort(key=event_order)
            self._sorted = True
        split = bisect_right(self._buffer, watermark_ms, key=_event_time)
        ready, self._buffer = self._buffer[:split], self._buffer[split:]
        index = 0
        while True:
            next_time = ready[index].event_time_ms if index < len(ready) else None
            deadline = self._next_deadline()
            if deadline is not None and deadline <= watermark_ms and (next_time is None or deadline < next_time):
                self._evaluate_deadlines(deadline)
                continue
            if next_time is None:
                break
            self._process(ready[index])
            index += 1

    def preview(self) -> tuple[dict[str, Any], ...]:
        """The detections the buffered events (ahead of the watermark) open, as `provisional` rows: the rules run
        on a copy of the state up to the newest buffered event, as if no earlier-timed event were still to come.
        Each id is shown once; `advance_to` confirms or withdraws it when the watermark passes that horizon."""
        if not self._buffer and not self._arrivals:
            return ()
        ahead = GroupTracker.restore(self.snapshot(), self.thresholds)
        ahead._convert_arrivals(None)
        if not ahead._buffer:
            return ()
        horizon = max(e.event_time_ms for e in ahead._buffer)
        ahead._run_to(horizon)
        shown = []
        for detection_id, changed in sorted(ahead.book.changed.items()):
            if detection_id in self.state.detections or detection_id in self.state.provisional:
                continue
            if detection_id in self.state.ended_incidents:
                continue  # a resolved incident re-opening: its row is not withdrawn if late events say otherwise
            row = replace(changed, status=DetectionStatus.PROVISIONAL.value, resolved_at=None)
            self.state.provisional[detection_id] = ShownProvisional(horizon_ms=horizon, row=row)
            shown.append(detection_row(self.state, row))
        return tuple(shown)

    def _settle_provisional(self, watermark_ms: int, output_ids: set[str]) -> tuple[dict[str, Any], ...]:
        """Provisional ids the ordered events opened (in this output or still open) are confirmed; those whose
        horizon the watermark has passed without being opened are withdrawn (the row shown, marked so)."""
        withdrawn = []
        for detection_id in sorted(self.state.provisional):
            if detection_id in output_ids or detection_id in self.state.detections:
                del self.state.provisional[detection_id]
            elif self.state.provisional[detection_id].horizon_ms <= watermark_ms:
                shown = self.state.provisional.pop(detection_id).row
                row = replace(
                    shown,
                    status=DetectionStatus.WITHDRAWN.value,
                    summary=f"withdrawn (events that arrived late did not bear it out): {shown.summary}",
                )
                withdrawn.append(detection_row(self.state, row))
        return tuple(withdrawn)

    def _health_row(self) -> dict[str, Any]:
        st = self.state
        last = st.last_event_ms or 0
        recent = [h for h in st.history if last - HOUR_MS < h.stabilized_ms <= last]
        state_name = st.state
        if st.rebalance is not None:
            state_name = self._group(st.protocol).rebalancing_state
        row = {
            "cluster": st.cluster,
            "group_id": st.group_id,
            "group_protocol": st.protocol,
            "state": state_name,
            "generation": st.generation,
            "members": len(st.members),
            "last_rebalance_at": as_datetime(st.history[-1].stabilized_ms) if st.history else None,
            "rebalances_1h": len(recent),
            "open_detections": len(st.detections),
            "last_event_at": as_datetime(st.last_event_ms),
        }
        return {name: row.get(name) for name in GROUP_HEALTH.column_names}

    def _next_deadline(self) -> int | None:
        done = self.state.deadlines_done_ms
        soonest = None
        for rule in RULES:
            for deadline in rule.deadlines(self._context):
                if deadline is None or (done is not None and deadline <= done):
                    continue
                if soonest is None or deadline < soonest:
                    soonest = deadline
        for deadline in self.book.deadlines():
            if (done is None or deadline > done) and (soonest is None or deadline < soonest):
                soonest = deadline
        due = self._group(self.state.protocol).unlogged_reconciliation_due()
        if due is not None and (done is None or due > done) and (soonest is None or due < soonest):
            soonest = due
        return soonest

    def _evaluate_deadlines(self, now_ms: int) -> None:
        self._touched = True
        self.state.deadlines_done_ms = now_ms
        self._group(self.state.protocol).end_unlogged_reconciliation(now_ms)  # first: the rules see it completed
        self.book.at_deadline(now_ms)  # first: a recurring incident ends with its own closing sentence
        for rule in RULES:
            rule.at_deadline(self._context, now_ms)

    def _tell(self, fact: Fact) -> None:
        """Every rule that reacts to this fact, in registration order."""
        for rule in RULES_TOLD.get(type(fact), ()):
            rule.react(fact, self._context)

    def _process(self, event: GroupEvent) -> None:
        st = self.state
        self._touched = True
        now = event.event_time_ms
        st.last_event_ms = max(st.last_event_ms or now, now)
        if event.src_table == GROUP_METADATA.name:
            self._group("classic", ClassicGroup).on_group_metadata(event)
        elif event.src_table == GROUP_RECORDS.name:
            self._group(event.group_type or "consumer", EpochGroup).on_group_record(event)
        elif event.src_table == HEARTBEAT_EVENTS.name:
            self._group(st.protocol).on_telemetry(event)
        elif event.src_table == OFFSET_COMMITS.name:
            self._group(st.protocol).on_offset_commit(event)
            self._lag_commit(event)
        elif event.src_table == PARTITION_END_OFFSETS.name:
            self._lag_poll(event)
        if st.pruned_ms is None or now - st.pruned_ms >= PRUNE_EVERY_MS:
            st.pruned_ms = now
            self._group(st.protocol).prune(now)
            prune_lag(st, now)
            self.book.prune(now)

    def _lag_commit(self, event: GroupEvent) -> None:
        """A commit joins the partition's lag window once its end offsets are polled (a replay without polls, or a
        run with `lag` off, keeps no windows). A tombstone (the coordinator deletes a deleted topic's offsets; they
        expired; an admin deleted them) ends the window with a last `partition_gone` row and resolves its incidents."""
        key = f"{event.topic}-{event.partition}"
        if event.is_tombstone or event.committed_offset is None:
            if key in self.state.lag:
                verdict = LagVerdict(LagStatus.PARTITION_GONE, None, OFFSETS_DELETED)
                self._queue_lag_row(event, None, None, verdict)
                self._tell(EndOffsetPolled(event, key, verdict))
            forget_partition(self.state, key)
        elif key in self.state.lag and event.committed_offset >= 0:
            record_commit(self.state, key, event.committed_offset, event.event_time_ms, self.thresholds)

    def _lag_poll(self, event: GroupEvent) -> None:
        """One partition's polled end offset: its window judged, its `group_lag` row queued, the rules told."""
        key = f"{event.topic}-{event.partition}"
        window, verdict = record_end(
            self.state, key, event.end_offset, event.error, event.event_time_ms, self.thresholds
        )
        committed = window.commits[-1].offset if window.commits else None
        self._queue_lag_row(event, committed, event.end_offset, verdict)
        self._tell(EndOffsetPolled(event, key, verdict))

    def _queue_lag_row(
        self, event: GroupEvent, committed: int | None, end_offset: int | None, verdict: LagVerdict
    ) -> None:
        self._lag_rows.append(
            {
                "cluster": self.state.cluster,
                "group_id": self.state.group_id,
                "topic": event.topic,
                "partition": event.partition,
                "measured_at": as_datetime(event.event_time_ms),
                "committed_offset": committed,
                "end_offset": end_offset,
                "lag": verdict.lag,
                "lag_status": verdict.status.value,
                "status_reason": verdict.reason,
                "rebalance_id": verdict.rebalance_id,
            }
        )

    def _group(self, protocol: str | None, expected: type[Group] = Group) -> Any:
        """The group's model for `protocol` (each class over the same state, made once)."""
        group = self._groups.get(protocol)
        if group is None:
            cls = GROUP_CLASSES.get(protocol, expected)
            group = cls(self.state, self.book, self.thresholds, self._rebalance_rows, self._tell)
            self._groups[protocol] = group
        if not isinstance(group, expected):
            raise ValueError(f"group protocol {protocol!r} is modelled by {type(group).__name__}, not {expected}")
        return group
