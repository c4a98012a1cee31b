"""One partition's lag status from a window of its group's commits and of the partition's log-end offsets.

The rules are Burrow's (linkedin/Burrow `core/internal/evaluator/caching.go`, `calculatePartitionStatus`), in its
order: with the current lag above the allowed lag, STOP (no commit for longer than the window spans, unless a
recent end offset shows the consumer had caught up), REWIND (the offset went back and has not recovered), then,
only when no commit of the window had zero lag, STALL (every commit the same offset) and WARN (the lag never
decreased). What radar adds:

- a STALL or STOP whose quiet period holds a rebalance of the group (or an owner change of the partition) that is
  still going on, or ended less than `rebalance_grace_ms` ago, is `rebalancing`, pointing at that rebalance: a
  group that rebalances cannot commit, and Burrow and KMinion call that a stalled consumer;
- bad input is a status, never a number: a partition the broker no longer has (`partition_gone`), a committed
  offset beyond an end offset polled after it (`beyond_end`: truncation, a recreated topic), no end offset to
  compare with (`unknown`); the lag is then null;
- fewer than `min_commits` commits decide nothing but OK (Burrow calls one commit with lag a STALL).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from rebalance_radar.transforms.schemas import LagStatus

GONE_ERRORS = frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_ID"})
"""Kafka error names (Java's and librdkafka's spellings) of a partition the broker does not have."""
PAUSE_STATUSES = frozenset({LagStatus.STALL, LagStatus.STOP})
LAGGING_STATUSES: tuple[LagStatus, ...] = (LagStatus.WARN, LagStatus.STALL, LagStatus.STOP, LagStatus.REWIND)
"""Burrow's partition statuses that are not OK: what the `lag` alert rule counts."""


@dataclass(frozen=True, slots=True)
class CommitSample:
    """One commit of the window: offset, event time, and its lag against the newest end offset known then (Burrow
    stores the same; null when no end offset was known)."""

    offset: int
    at_ms: int
    lag: int | None


@dataclass(frozen=True, slots=True)
class EndSample:
    """One polled log-end offset of the partition (or the error that replaced it)."""

    offset: int | None
    at_ms: int
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Pause:
    """Something that keeps a healthy consumer from committing: a rebalance of its group (`ended_ms` null while
    it goes on) or the partition's owner change."""

    rebalance_id: str
    started_ms: int
    ended_ms: int | None
    what: str


@dataclass(frozen=True, slots=True)
class LagVerdict:
    """A partition's status at one poll, its lag (null when no honest number exists) and why."""

    status: LagStatus
    lag: int | None
    reason: str
    rebalance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LagRules:
    """The evaluation's settings (`DetectorThresholds` carries them, each with its reason)."""

    allowed_lag: int = 0
    min_commits: int = 3
    rebalance_grace_ms: int = 30_000


def current_lag(commits: Sequence[CommitSample], ends: Sequence[EndSample]) -> tuple[int | None, LagVerdict | None]:
    """The lag of the newest commit against the newest end offset, or the verdict that says why there is none."""
    newest_end = ends[-1] if ends else None
    if newest_end is None:
        return None, LagVerdict(LagStatus.UNKNOWN, None, "no end offset polled for it yet")
    if newest_end.error in GONE_ERRORS:
        return None, LagVerdict(
            LagStatus.PARTITION_GONE,
            None,
            f"the broker no longer has this partition ({newest_end.error}) while the group holds offsets for it: "
            "the topic or partition was deleted",
        )
    if newest_end.offset is None:
        return None, LagVerdict(
            LagStatus.UNKNOWN, None, f"its end offset could not be read ({newest_end.error or 'no answer'})"
        )
    if not commits:
        return None, LagVerdict(LagStatus.UNKNOWN, None, "the group has no committed offset for it")
    last = commits[-1]
    if last.offset > newest_end.offset:
        if newest_end.at_ms >= last.at_ms:
            return None, LagVerdict(
                LagStatus.BEYOND_END,
                None,
                f"committed offset {last.offset} is beyond end offset {newest_end.offset} polled after the commit: "
                "the log was truncated (unclean leader election, retention) or the topic was recreated",
            )
        return 0, None  # an end offset polled before the commit: it has moved on since (Burrow counts zero too)
    return newest_end.offset - last.offset, None


def burrow_status(
    commits: Sequence[CommitSample], ends: Sequence[EndSample], lag: int, now_ms: int, allowed_lag: int
) -> LagStatus:
    """Burrow's `calculatePartitionStatus`, rule for rule (`commits` oldest first, at least one)."""
    if lag <= allowed_lag:
        return LagStatus.OK
    first, last = commits[0], commits[-1]
    stopped = now_ms - last.at_ms > last.at_ms - first.at_ms
    recent_zero = any(e.offset is not None and e.offset <= last.offset for e in ends)
    if stopped and not recent_zero:
        return LagStatus.STOP
    rewind = next((i for i in range(1, len(commits)) if commits[i].offset < commits[i - 1].offset), -1)
    if rewind > 0 and not any(c.offset >= commits[rewind - 1].offset for c in commits[rewind:]):
        return LagStatus.REWIND
    if all(c.lag is None or c.lag > allowed_lag for c in commits):
        if all(commits[i].offset == commits[i - 1].offset for i in range(1, len(commits))):
            return LagStatus.STALL
        lags = [c.lag for c in commits if c.lag is not None]
        if all(later >= earlier for earlier, later in pairwise(lags)):
            return LagStatus.WARN
    return LagStatus.OK


def quiet_since(commits: Sequence[CommitSample], status: LagStatus) -> int:
    """When the partition last made progress: its last commit (STOP), or the first commit of the offset it still
    commits (STALL)."""
    if status == LagStatus.STOP:
        return commits[-1].at_ms
    since = commits[-1].at_ms
    for commit in reversed(commits):
        if commit.offset != commits[-1].offset:
            break
        since = commit.at_ms
    return since


def explaining_pause(pauses: Sequence[Pause], since_ms: int, now_ms: int, grace_ms: int) -> Pause | None:
    """The newest pause inside the quiet period that goes on or ended less than `grace_ms` ago."""
    for pause in sorted(pauses, key=lambda p: p.started_ms, reverse=True):
        ended = pause.ended_ms
        if pause.started_ms > now_ms or (ended is not None and ended < since_ms):
            continue
        if ended is None or now_ms - ended < grace_ms:
            return pause
    return None


def evaluate_partition(
    commits: Sequence[CommitSample],
    ends: Sequence[EndSample],
    now_ms: int,
    rules: LagRules = LagRules(),
    pauses: Sequence[Pause] = (),
) -> LagVerdict:
    """The partition's verdict at `now_ms` (commits and ends oldest first, each window at most Burrow's size)."""
    lag, verdict = current_lag(commits, ends)
    if verdict is not None:
        return verdict
    assert lag is not None
    if len(commits) < rules.min_commits:
        return LagVerdict(LagStatus.OK, lag, f"{len(commits)} commit(s) in the window: too few to judge a trend")
    status = burrow_status(commits, ends, lag, now_ms, rules.allowed_lag)
    if status in PAUSE_STATUSES:
        pause = explaining_pause(pauses, quiet_since(commits, status), now_ms, rules.rebalance_grace_ms)
        if pause is not None:
            ended = pause.ended_ms
            going = "still going on" if ended is None else f"ended {(now_ms - ended) / 1000:.0f} s ago"
            return LagVerdict(
                LagStatus.REBALANCING,
                lag,
                f"no progress since {pause.what} ({going}): would be {status} otherwise",
                pause.rebalance_id,
            )
    return LagVerdict(status, lag, _REASONS[status].format(lag=lag, offset=commits[-1].offset, n=len(commits)))


_REASONS: dict[LagStatus, str] = {
    LagStatus.OK: "lag {lag}",
    LagStatus.STOP: "lag {lag} and no commit for longer than the window of {n} commits spans",
    LagStatus.REWIND: "the committed offset went back in the window and has not recovered; lag {lag}",
    LagStatus.STALL: "every commit of the window is offset {offset} while lag is {lag}",
    LagStatus.WARN: "commits advance but the lag never decreased over the window ({n} commits); lag {lag}",
}


def group_status(statuses: Sequence[LagStatus]) -> LagStatus:
    """Burrow's group status: ERR when a partition is STALL, STOP or REWIND, else WARN when one is, else OK."""
    if any(s in (LagStatus.STALL, LagStatus.STOP, LagStatus.REWIND) for s in statuses):
        return LagStatus.ERR
    if LagStatus.WARN in statuses:
        return LagStatus.WARN
    return LagStatus.OK
