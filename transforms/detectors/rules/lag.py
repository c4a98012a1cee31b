"""lag_stalled and lag_growing: Burrow's partition statuses (`transforms.lag.evaluation`) as incidents, one per
partition, opened by a poll of its end offset and resolved by the first poll that judges it healthy again.

A pause that a rebalance of the group explains is `rebalancing`, never a stall; a stall that outlasts the grace is
opened with the rebalance (or failing generation) it followed named in its summary.
"""

from __future__ import annotations

from rebalance_radar.transforms.detectors.evidence import source_ref
from rebalance_radar.transforms.detectors.facts import EndOffsetPolled
from rebalance_radar.transforms.detectors.rules.rule import Rule, RuleContext, registered
from rebalance_radar.transforms.detectors.state import HeldDetection
from rebalance_radar.transforms.schemas import DetectionKind, LagStatus, Severity

_LAG_THRESHOLDS = (
    "lag_window_commits",
    "lag_min_distance_ms",
    "lag_min_commits",
    "lag_allowed",
    "lag_rebalance_grace_ms",
)


def concurrent_cause(ctx: RuleContext, since_ms: int) -> str:
    """The rebalance going on, or the newest one since `since_ms`, and any open failing_generation, as words."""
    st = ctx.state
    words = []
    if st.rebalance is not None:
        words.append(
            f"rebalance {st.rebalance.rebalance_id} from generation {st.rebalance.from_generation} is going on"
        )
    else:
        recent = [h for h in st.history if h.stabilized_ms >= since_ms]
        if recent:
            last = recent[-1]
            words.append(f"it follows rebalance {last.rebalance_id} to generation {last.generation} ({last.cause})")
    failing = ctx.book.open_of_kind(DetectionKind.FAILING_GENERATION) if st.detections else []
    if failing:
        words.append(f"failing_generation {failing[0].detection_id} is open")
    return f" ({'; '.join(words)})" if words else ""


class PartitionLagRule(Rule):
    """One incident per partition while the polls judge it one of `statuses`."""

    statuses: frozenset[LagStatus] = frozenset()
    reacts_to = (EndOffsetPolled,)
    thresholds = _LAG_THRESHOLDS

    def _open_for(self, ctx: RuleContext, topic: str | None, partition: int | None) -> HeldDetection | None:
        return next((d for d in self.held(ctx) if d.topic == topic and d.partition == partition), None)

    def react(self, fact: EndOffsetPolled, ctx: RuleContext) -> None:
        event, verdict = fact.event, fact.verdict
        now = event.event_time_ms
        held = self._open_for(ctx, event.topic, event.partition)
        if verdict.status == LagStatus.REBALANCING:
            if held is not None:  # the incident stays open, and says what it waits for
                ctx.book.update(held.detection_id, at_ms=now, refs=[source_ref(event)])
            return
        if verdict.status not in self.statuses:
            if held is not None:
                ctx.book.resolve(
                    held.detection_id, at_ms=now, summary=f"{held.summary}; now {verdict.status}: {verdict.reason}"
                )
            return
        window = ctx.state.lag.get(fact.partition_key)
        since = window.commits[-1].at_ms if window is not None and window.commits else now
        summary = (
            f"partition {fact.partition_key} of group {ctx.state.group_id} is {verdict.status}: {verdict.reason}"
            f"{concurrent_cause(ctx, since)}"
        )
        if held is not None:
            ctx.book.update(held.detection_id, at_ms=now, summary=summary, refs=[source_ref(event)])
            return
        self.open(
            ctx,
            (event.topic, event.partition, now),
            at_ms=now,
            first_seen_ms=since,
            summary=summary,
            refs=[source_ref(event)],
            generation=ctx.state.generation,
            topic=event.topic,
            partition=event.partition,
        )


@registered
class LagStalled(PartitionLagRule):
    """Burrow's STALL (commits that do not move while there is lag) or STOP (no commit for longer than the window
    spans while there is lag), once no rebalance explains it."""

    kind = DetectionKind.LAG_STALLED
    severity = Severity.CRITICAL
    statuses = frozenset({LagStatus.STALL, LagStatus.STOP})
    resolves = "at the first end-offset poll that judges the partition OK, WARN or REWIND again (or finds it gone)"
    remedy = (
        "the partition's consumer is not making progress while records arrive: check that its member is alive and "
        "polling (max.poll.interval.ms exceeded, a blocked processing loop, a poison record), that it still owns the "
        "partition, and that its commits succeed (commit_failed events, ACLs on the group)."
    )


@registered
class LagGrowing(PartitionLagRule):
    """Burrow's WARN: commits advance, but the lag never decreased over the window (the consumer is too slow)."""

    kind = DetectionKind.LAG_GROWING
    severity = Severity.WARNING
    statuses = frozenset({LagStatus.WARN})
    resolves = "at the first end-offset poll at which the lag decreased within the window or reached zero"
    remedy = (
        "the consumer is slower than its producers: add members (up to the partition count), speed up the "
        "processing per record, or raise max.poll.records/fetch sizes; a lag that grows only during rebalances is "
        "a rebalancing problem instead (see the group's rebalances)."
    )
