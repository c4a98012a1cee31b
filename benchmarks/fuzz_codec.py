"""Fuzz the wire codec: random bytes and mutations of valid encodings must only ever raise `DecodeError`.

The engine (seeds, mutations, report) is the one the bounded run in tests/transforms/wire/test_fuzz.py uses.
Run: `python -m benchmarks.fuzz_codec [--count N] [--seed S]`; prints a JSON report and writes it to
`benchmarks/results/fuzz_codec-<UTC start>.json` (`benchmarks.result_file`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from benchmarks.result_file import add_out_arguments, started_now, write_run_result
from tests.transforms.wire.codec_fuzz import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000, help="number of inputs (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=0)
    add_out_arguments(parser)
    args = parser.parse_args(argv)
    started = started_now()
    start = time.perf_counter()

    def progress(i: int) -> None:
        rate = i / (time.perf_counter() - start)
        print(f"\r{i:,}/{args.count:,} inputs ({rate:,.0f}/s)", end="", file=sys.stderr, flush=True)

    report = run(args.count, args.seed, progress)
    print(file=sys.stderr)
    figures = report.as_json(time.perf_counter() - start)
    print(json.dumps(figures, indent=2, ensure_ascii=False))
    write_run_result("fuzz_codec", figures, args, started)
    return 1 if report.other_exception_count else 0


if __name__ == "__main__":
    sys.exit(main())
