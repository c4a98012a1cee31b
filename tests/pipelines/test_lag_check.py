"""The `lag` alert rule's metric on DuckDB (what `radar run`'s checks run on a local data dir, no JVM): per group,
the partitions whose newest poll judged them WARN, STALL, STOP or REWIND; a rebalance's pause and older polls do
not count."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from rebalance_radar.expectations.rules import RULES, RuleName
from rebalance_radar.pipelines.checks.check import LAGGING_PARTITIONS_PER_GROUP, ViewSources
from rebalance_radar.transforms.schemas import GROUP_LAG, LagStatus

pytestmark = pytest.mark.lag


def at(second: int) -> datetime:
    return datetime(2026, 1, 1, 0, 0, second, tzinfo=UTC)


def test_the_lag_rule_counts_each_groups_partitions_lagging_at_their_newest_poll() -> None:
    polls = pa.table(
        {
            "group_id": ["billing", "billing", "billing", "billing", "orders"],
            "topic": ["invoices"] * 5,
            "partition": [0, 0, 1, 2, 0],
            "measured_at": [at(0), at(10), at(10), at(10), at(10)],
            "lag_status": [
                LagStatus.STALL,  # older: the newest poll of partition 0 says OK
                LagStatus.OK,
                LagStatus.STOP,
                LagStatus.REBALANCING,
                LagStatus.WARN,
            ],
        }
    )
    rows = ViewSources(None, {GROUP_LAG.name: polls}, {}).rows(LAGGING_PARTITIONS_PER_GROUP)
    assert sorted((r["group_id"], r["n"]) for r in rows) == [("billing", 1), ("orders", 1)]
    rule = next(r for r in RULES if r.name == RuleName.LAG)
    assert (rule.column, rule.bound, rule.threshold, rule.per_group) == ("lagging_partitions", "max", 0, True)
    assert rule.tables == (GROUP_LAG,)
