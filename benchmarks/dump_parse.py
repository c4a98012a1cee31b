"""Records/s of replay's dump parsing alone (`parse_dump_files`, the `mapInArrow` body) on one core, vectorised
against row by row (`parse_dump_files_by_rows`), on realistic dump lines (`benchmarks.ingest.realistic_mix` written
by `write_dump`: ~90% OffsetCommit, ~10% GroupMetadata with 10 members). Issue #11: dump -> silver >= 100k
records/s, so the parse must cost well under 10 µs a line. Rates are by this process's CPU time; prints JSON and
writes it to `benchmarks/results/dump_parse-<UTC start>.json` (`benchmarks.result_file`).
Run: `python -m benchmarks.dump_parse [--records N] [--repeat R]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pyarrow as pa

from benchmarks.ingest import realistic_mix, write_dump
from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from rebalance_radar.pipelines.stages.sources import parse_dump_files, parse_dump_files_by_rows

Parse = Callable[[Iterator[pa.RecordBatch], Mapping[str, str]], Iterator[pa.RecordBatch]]


def _rate(parse: Parse, files: pa.RecordBatch, lines: int, repeat: int) -> dict[str, float]:
    cpu, wall = [], []
    for _ in range(repeat):
        started_cpu, started_wall = time.process_time(), time.perf_counter()
        rows = sum(batch.num_rows for batch in parse(iter([files]), {}))
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started_wall)
        assert rows == lines, (rows, lines)
    best = min(cpu)
    return {
        "records_per_s_cpu": round(lines / best),
        "cpu_s_best": round(best, 4),
        "cpu_s_median": round(statistics.median(cpu), 4),
        "wall_s_median": round(statistics.median(wall), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    add_out_arguments(parser)
    args = parser.parse_args()
    started = started_now()
    records, mix = realistic_mix(args.records)
    with tempfile.TemporaryDirectory() as folder:
        dump = Path(folder) / "dump.jsonl"
        write_dump(records, dump)
        content = dump.read_bytes()
    files = pa.RecordBatch.from_pydict(
        {
            "path": ["file:///staging/0000-dump.jsonl"],
            "modificationTime": pa.array([0], pa.timestamp("ms")),
            "content": [content],
        }
    )
    vectorised = _rate(parse_dump_files, files, args.records, args.repeat)
    by_rows = _rate(parse_dump_files_by_rows, files, args.records, args.repeat)
    same = pa.Table.from_batches(list(parse_dump_files(iter([files]), {}))).equals(
        pa.Table.from_batches(list(parse_dump_files_by_rows(iter([files]), {})))
    )
    report = {
        "records": args.records,
        "mix": dict(mix),
        "dump_bytes": len(content),
        "same_rows": same,
        "vectorised": vectorised,
        "by_rows": by_rows,
        "speedup": round(by_rows["cpu_s_best"] / vectorised["cpu_s_best"], 2),
    }
    print(json.dumps(report, indent=2))
    write_run_result("dump_parse", report, args, started)


if __name__ == "__main__":
    main()
