"""A group's per-partition lag windows in its tracker state: commits and end offsets in, Burrow's window kept,
each poll judged by `transforms.lag.evaluation` with the group's rebalances and owner changes as pauses.

Why in the tracker: the rebalances that explain a pause are the tracker's own, so the lag status and the
detections link them by id, live and in a replay alike.
"""

from __future__ import annotations

from rebalance_radar.transforms.detectors.state import GroupState, LagCommit, LagEnd, PartitionLag
from rebalance_radar.transforms.detectors.thresholds import DetectorThresholds
from rebalance_radar.transforms.lag.evaluation import (
    CommitSample,
    EndSample,
    LagRules,
    LagVerdict,
    Pause,
    evaluate_partition,
)

LAG_KEPT_MS = 60 * 60_000
"""A partition with no commit and no poll for this long leaves the state (its group stopped consuming it)."""


def lag_rules(thresholds: DetectorThresholds) -> LagRules:
    return LagRules(thresholds.lag_allowed, thresholds.lag_min_commits, thresholds.lag_rebalance_grace_ms)


def _newest_end(window: PartitionLag, at_ms: int) -> int | None:
    """The newest end offset polled at or before `at_ms`."""
    for end in reversed(window.ends):
        if end.at_ms <= at_ms and end.offset is not None:
            return end.offset
    return None


def record_commit(state: GroupState, key: str, offset: int, at_ms: int, thresholds: DetectorThresholds) -> PartitionLag:
    """A committed offset joins the partition's window (Burrow: a commit within `lag_min_distance_ms` of the
    previous one's time replaces it; the lag is against the newest end offset known, never below zero)."""
    window = state.lag.setdefault(key, PartitionLag())
    end = _newest_end(window, at_ms)
    lag = None if end is None else max(0, end - offset)
    commits = window.commits
    if commits and at_ms - commits[-1].at_ms < thresholds.lag_min_distance_ms:
        # Burrow keeps the replaced commit's time, or a consumer committing more often than that would never add one
        commits[-1] = LagCommit(offset=offset, at_ms=commits[-1].at_ms, lag=lag)
    else:
        commits.append(LagCommit(offset=offset, at_ms=at_ms, lag=lag))
    del commits[: max(0, len(commits) - thresholds.lag_window_commits)]
    return window


def forget_partition(state: GroupState, key: str) -> None:
    """The group's offsets for the partition were deleted (a tombstone)."""
    state.lag.pop(key, None)


def pauses(state: GroupState, key: str) -> list[Pause]:
    """What may keep the partition's consumer from committing: the open rebalance, the kept ones, and the
    partition's last owner change (attributed to the rebalance it fell in, else the newest before it)."""
    found: list[Pause] = []
    open_rebalance = state.rebalance
    if open_rebalance is not None:
        found.append(
            Pause(
                open_rebalance.rebalance_id,
                open_rebalance.started_ms,
                None,
                f"the group began rebalancing from generation {open_rebalance.from_generation}",
            )
        )
    for done in state.history:
        found.append(
            Pause(
                done.rebalance_id,
                done.started_ms,
                done.stabilized_ms,
                f"the group rebalanced to generation {done.generation}",
            )
        )
    change = state.owner_changed.get(key)
    if change is not None:
        within = [p for p in found if p.started_ms <= change.at_ms]
        rebalance_id = max(within, key=lambda p: p.started_ms).rebalance_id if within else None
        if rebalance_id is not None:
            found.append(
                Pause(rebalance_id, change.at_ms, change.at_ms, f"the partition moved from {change.previous_owner}")
            )
    return found


def record_end(
    state: GroupState,
    key: str,
    end_offset: int | None,
    error: str | None,
    at_ms: int,
    thresholds: DetectorThresholds,
) -> tuple[PartitionLag, LagVerdict]:
    """A polled end offset joins the window (Burrow keeps as many as commits); the partition is judged at once."""
    window = state.lag.get(key)
    if window is None:  # the first poll: the window starts from the commit the tracker already holds
        window = state.lag[key] = PartitionLag()
        known = state.offsets.get(key)
        if known is not None:
            window.commits.append(LagCommit(offset=known.offset, at_ms=known.at_ms, lag=None))
    window.ends.append(LagEnd(offset=end_offset, at_ms=at_ms, error=error))
    del window.ends[: max(0, len(window.ends) - thresholds.lag_window_commits)]
    verdict = evaluate_partition(
        [CommitSample(c.offset, c.at_ms, c.lag) for c in window.commits],
        [EndSample(e.offset, e.at_ms, e.error) for e in window.ends],
        at_ms,
        lag_rules(thresholds),
        pauses(state, key),
    )
    window.status = verdict.status.value
    return window, verdict


def prune_lag(state: GroupState, now_ms: int) -> None:
    """Partitions silent for `LAG_KEPT_MS` leave the state."""

    def newest(window: PartitionLag) -> int:
        times = [c.at_ms for c in window.commits[-1:]] + [e.at_ms for e in window.ends[-1:]]
        return max(times, default=now_ms)

    state.lag = {k: w for k, w in state.lag.items() if now_ms - newest(w) <= LAG_KEPT_MS}
