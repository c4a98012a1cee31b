"""`python -m rebalance_radar.pipelines.cli`: the `radar` command."""

import sys

from rebalance_radar.pipelines.cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
