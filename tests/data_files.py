"""The test data kept in the repository (tests/data): golden byte vectors and Kafka's message definitions.

Facts, not fixtures: bytes with their decoded values, and Apache Kafka's own JSON definitions (provenance in
tests/data/README.md), so a fresh clone runs every golden and conformance test without anything beside it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
# The shared reference folder beside the checkout (or RADAR_SHARED_DIR), optional: only the check that the seed
# catalogue quotes the incident field guides verbatim reads it, and it skips without it.
SHARED = Path(os.environ.get("RADAR_SHARED_DIR", DATA.parents[1].parent / "shared"))


def data_path(*parts: str) -> Path:
    """A path under tests/data; a missing file is an error, never a silent skip."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the repository's test data (tests/data)")
    return path


def load_jsonl(*parts: str) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file under tests/data."""
    with data_path(*parts).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
