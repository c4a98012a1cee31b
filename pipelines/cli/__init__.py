"""The `radar` command line (`commands`) and what only commands use: the compositions of `run`/`replay`
(`monitor`), `demo`, and the readers' views (`report`, `detections_view`, `oncall_queries`)."""

from rebalance_radar.pipelines.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
