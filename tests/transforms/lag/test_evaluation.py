"""Burrow's evaluation rules, rule by rule (its evaluator's own cases), what radar adds for rebalances, and bad
input: each a status, never a crash or a made-up number."""

from __future__ import annotations

import pytest

from rebalance_radar.transforms.lag.evaluation import (
    CommitSample,
    EndSample,
    LagRules,
    Pause,
    evaluate_partition,
    group_status,
)
from rebalance_radar.transforms.schemas import LagStatus

pytestmark = pytest.mark.lag

S = 1000


def commits(*offsets_and_lags: tuple[int, int | None], start_ms: int = 0, every_ms: int = 10 * S) -> list[CommitSample]:
    return [CommitSample(offset, start_ms + i * every_ms, lag) for i, (offset, lag) in enumerate(offsets_and_lags)]


def ends(*offsets: int, at_ms: int) -> list[EndSample]:
    return [EndSample(offset, at_ms) for offset in offsets]


def test_lag_zero_somewhere_in_the_window_is_ok_even_if_offsets_do_not_move() -> None:
    window = commits((100, 0), (100, 5), (100, 10))  # Burrow rule 1: a zero lag in the window
    verdict = evaluate_partition(window, ends(110, at_ms=21 * S), now_ms=21 * S)
    assert (verdict.status, verdict.lag) == (LagStatus.OK, 10)


def test_commits_of_one_offset_with_lag_throughout_are_a_stall() -> None:
    window = commits((100, 5), (100, 10), (100, 20))  # Burrow rule 4
    verdict = evaluate_partition(window, ends(120, at_ms=21 * S), now_ms=21 * S)
    assert (verdict.status, verdict.lag) == (LagStatus.STALL, 20)
    assert "offset 100" in verdict.reason


def test_advancing_commits_whose_lag_never_decreases_are_a_warning() -> None:
    window = commits((100, 5), (110, 5), (120, 8), (130, 9))  # Burrow rule 5
    verdict = evaluate_partition(window, ends(140, at_ms=31 * S), now_ms=31 * S)
    assert verdict.status == LagStatus.WARN


def test_a_lag_that_decreases_once_is_ok() -> None:
    window = commits((100, 5), (110, 9), (120, 4), (130, 9))
    assert evaluate_partition(window, ends(140, at_ms=31 * S), now_ms=31 * S).status == LagStatus.OK


def test_no_commit_for_longer_than_the_window_spans_is_a_stop() -> None:
    window = commits((100, 5), (110, 5), (120, 5))  # spans 20 s; silent for 21 s -> Burrow rule 3
    verdict = evaluate_partition(window, ends(150, at_ms=41 * S), now_ms=41 * S)
    assert (verdict.status, verdict.lag) == (LagStatus.STOP, 30)


def test_a_stop_is_not_called_while_a_recent_end_offset_shows_the_consumer_caught_up() -> None:
    window = commits((100, 5), (110, 5), (120, 5))
    polled = [EndSample(120, 25 * S), EndSample(150, 41 * S)]  # it was at the end 16 s ago
    assert evaluate_partition(window, polled, now_ms=41 * S).status != LagStatus.STOP


def test_an_offset_that_went_back_and_has_not_recovered_is_a_rewind() -> None:
    window = commits((100, 5), (120, 5), (90, 40), (95, 40))
    assert evaluate_partition(window, ends(135, at_ms=31 * S), now_ms=31 * S).status == LagStatus.REWIND


def test_lag_within_the_allowed_lag_is_ok() -> None:
    window = commits((100, 5), (100, 5), (100, 5))
    verdict = evaluate_partition(window, ends(105, at_ms=21 * S), now_ms=21 * S, rules=LagRules(allowed_lag=5))
    assert verdict.status == LagStatus.OK


def test_too_few_commits_decide_nothing_but_ok() -> None:
    verdict = evaluate_partition(commits((100, 20)), ends(120, at_ms=1 * S), now_ms=1 * S)
    assert (verdict.status, verdict.lag) == (LagStatus.OK, 20)


def test_a_stall_inside_a_rebalance_still_going_on_is_rebalancing_and_points_at_it() -> None:
    window = commits((100, 5), (100, 10), (100, 20))
    pause = Pause("reb-1", started_ms=5 * S, ended_ms=None, what="the group began rebalancing from generation 4")
    verdict = evaluate_partition(window, ends(120, at_ms=21 * S), now_ms=21 * S, pauses=[pause])
    assert (verdict.status, verdict.rebalance_id, verdict.lag) == (LagStatus.REBALANCING, "reb-1", 20)
    assert "STALL otherwise" in verdict.reason


def test_a_stop_right_after_a_rebalance_is_rebalancing_within_the_grace_then_a_stop() -> None:
    window = commits((100, 5), (110, 5), (120, 5))
    pause = Pause("reb-2", started_ms=22 * S, ended_ms=40 * S, what="the group rebalanced to generation 5")
    polled = ends(150, at_ms=45 * S)
    assert evaluate_partition(window, polled, now_ms=45 * S, pauses=[pause]).status == LagStatus.REBALANCING
    late = ends(150, at_ms=71 * S)  # the grace (30 s) after the rebalance has passed without a commit
    assert evaluate_partition(window, late, now_ms=71 * S, pauses=[pause]).status == LagStatus.STOP


def test_a_rebalance_that_ended_before_the_pause_explains_nothing() -> None:
    window = commits((100, 5), (100, 10), (100, 20), start_ms=10 * S)
    pause = Pause("reb-old", started_ms=1 * S, ended_ms=5 * S, what="an earlier rebalance")
    assert evaluate_partition(window, ends(120, at_ms=31 * S), now_ms=31 * S, pauses=[pause]).status == LagStatus.STALL


def test_a_rebalance_never_turns_a_warning_into_rebalancing() -> None:
    window = commits((100, 5), (110, 5), (120, 8), (130, 9))
    pause = Pause("reb-3", started_ms=0, ended_ms=None, what="a rebalance")
    verdict = evaluate_partition(window, ends(140, at_ms=31 * S), now_ms=31 * S, pauses=[pause])
    assert verdict.status == LagStatus.WARN


@pytest.mark.parametrize("error", ["UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"])
def test_a_partition_deleted_under_the_group_is_gone_without_a_lag(error: str) -> None:
    polled = [EndSample(120, 10 * S), EndSample(None, 20 * S, error)]
    verdict = evaluate_partition(commits((100, 5), (100, 5), (100, 5)), polled, now_ms=20 * S)
    assert (verdict.status, verdict.lag) == (LagStatus.PARTITION_GONE, None)
    assert error in verdict.reason


def test_a_committed_offset_beyond_an_end_offset_polled_after_it_is_beyond_end() -> None:
    window = commits((500, 0), (510, 0), (520, 0))  # last commit at 20 s
    verdict = evaluate_partition(window, ends(30, at_ms=25 * S), now_ms=25 * S)  # topic recreated: end is 30
    assert (verdict.status, verdict.lag) == (LagStatus.BEYOND_END, None)
    assert "520" in verdict.reason and "30" in verdict.reason


def test_an_end_offset_polled_before_a_newer_commit_counts_zero_lag_as_burrow_does() -> None:
    window = commits((500, 0), (510, 0), (520, 0))  # the commit at 20 s is past the end polled at 15 s
    verdict = evaluate_partition(window, ends(515, at_ms=15 * S), now_ms=20 * S)
    assert (verdict.status, verdict.lag) == (LagStatus.OK, 0)


def test_no_end_offset_or_no_commit_or_a_refused_describe_is_unknown() -> None:
    window = commits((100, 5), (100, 5), (100, 5))
    assert evaluate_partition(window, [], now_ms=1).status == LagStatus.UNKNOWN
    assert evaluate_partition([], ends(10, at_ms=1), now_ms=1).status == LagStatus.UNKNOWN
    refused = evaluate_partition(window, [EndSample(None, 5 * S, "TOPIC_AUTHORIZATION_FAILED")], now_ms=5 * S)
    assert (refused.status, refused.lag) == (LagStatus.UNKNOWN, None)
    assert "TOPIC_AUTHORIZATION_FAILED" in refused.reason


def test_the_group_status_is_burrows() -> None:
    assert group_status([LagStatus.OK, LagStatus.STALL]) == LagStatus.ERR
    assert group_status([LagStatus.OK, LagStatus.WARN, LagStatus.REBALANCING]) == LagStatus.WARN
    assert group_status([LagStatus.OK, LagStatus.REBALANCING, LagStatus.UNKNOWN]) == LagStatus.OK
