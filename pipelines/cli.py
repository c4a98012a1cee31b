"""`radar`: the command line. Thin by design: parse arguments, call a pipeline, turn errors into sentences."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pipelines.dump import DumpFormatError


def _decode(args: argparse.Namespace) -> int:
    from pipelines.decode_dump import run_decode

    counts = run_decode(args.input, embedded=args.embedded)
    failures = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.failures_by_kind.items())) or "none"
    print(
        f"radar decode: {counts.records} records: {counts.decoded} decoded, {counts.failed} failed ({failures}), "
        f"{counts.telemetry} telemetry",
        file=sys.stderr,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="radar",
        description="rebalance-radar: decode __consumer_offsets and heartbeat telemetry, detect rebalance trouble.",
    )
    parser.add_argument("--conf", default="conf/local.yml", help="config file (default: conf/local.yml)")
    parser.add_argument("--data-dir", default=None, help="where local Delta tables and checkpoints live")
    sub = parser.add_subparsers(dest="command", required=True)

    decode = sub.add_parser("decode", help="decode dump files to JSON Lines on stdout")
    decode.add_argument(
        "--input", action="append", required=True, metavar="DUMP", help="dump file (repeatable; - for stdin)"
    )
    decode.add_argument(
        "--embedded",
        action="store_true",
        help="also decode consumer-protocol subscriptions/assignments of classic members",
    )
    decode.set_defaults(func=_decode)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DumpFormatError as exc:
        print(f"radar {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
