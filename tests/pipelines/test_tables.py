"""Delta tables by name: created once, re-pointed per data dir, appended exactly once per (app id, version)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import RadarConfig
from pipelines.tables import TableCatalog, append_idempotent, ensure_tables, register_existing_tables
from transforms.schemas import QUARANTINE, TABLES


def _quarantine_rows(spark, config: RadarConfig, n: int):  # type: ignore[no-untyped-def]
    rows = [
        (config.cluster, "t", 0, i, None, "read_dump", "malformed", f"bad {i}", None, None, None, None, b"x")
        for i in range(n)
    ]
    return spark.createDataFrame(rows, QUARANTINE.ddl)


@pytest.mark.spark
def test_names_follow_the_data_dir_and_appends_are_idempotent(spark, radar_config: RadarConfig, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = radar_config.with_data_dir(tmp_path / "first")
    second = radar_config.with_data_dir(tmp_path / "second")
    ensure_tables(spark, first, [QUARANTINE])
    append_idempotent(_quarantine_rows(spark, first, 3), first, QUARANTINE, "test:q", 0)
    append_idempotent(_quarantine_rows(spark, first, 3), first, QUARANTINE, "test:q", 0)  # a replayed batch
    name = TableCatalog(first).name(QUARANTINE)
    assert spark.table(name).count() == 3

    ensure_tables(spark, second, [QUARANTINE])
    assert spark.table(name).count() == 0  # the name now points at the second data dir
    assert register_existing_tables(spark, first) == [name]
    assert spark.sql(f"SELECT count(*) FROM {QUARANTINE.name}").first()[0] == 3  # `USE radar` + the first dir
    assert set(TABLES) >= {"offset_commits", "quarantine", "heartbeat_events"}
