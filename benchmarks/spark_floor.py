"""The floor under a short `radar` command on this host at this hour: a fresh process starts the session a
`radar replay` of the sample starts (quick start), appends 42 rows to a new
Delta table and counts them, then stops.

`benchmarks.startup` runs it in each round beside the commands and reports every command against it: the host's
speed moved by a quarter from one hour to the next (the sample's replay 15.7-16.5 s one night, 19.5-20.9 s the next
morning on the same code), so a ratio to the floor compares runs across hours where seconds do not.

    python -m benchmarks.spark_floor DATA_DIR

It writes no result of its own: `benchmarks.startup` times it (its phases) and writes the result.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rebalance_radar.pipelines.runtime.phases import mark, phase

FLOOR_ROWS = 42  # the bundled sample's record count


def main(argv: Sequence[str] | None = None) -> int:
    mark("main")
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m benchmarks.spark_floor DATA_DIR", file=sys.stderr)
        return 2
    data_dir = Path(args[0])
    with phase("command floor"):
        with phase("import pipelines"):
            from rebalance_radar.pipelines.config import DEFAULT_CONF_PATH, load_config
            from rebalance_radar.pipelines.runtime.session import build_spark_session

        config = load_config(DEFAULT_CONF_PATH, env=os.environ).with_data_dir(data_dir)
        spark = build_spark_session(config, quick_start=True)
        with phase("delta write and count"):
            path = str(data_dir / "floor")
            spark.range(FLOOR_ROWS).write.format("delta").save(path)
            counted = spark.read.format("delta").load(path).count()
    spark.stop()
    if counted != FLOOR_ROWS:
        print(f"the floor's Delta table holds {counted} rows, not {FLOOR_ROWS}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
