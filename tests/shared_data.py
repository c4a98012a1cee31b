"""Where the shared reference material lives: `../shared` beside the checkout (CI puts it there)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RADAR_SHARED_DIR", REPO_ROOT.parent / "shared"))


def shared_path(*parts: str) -> Path:
    """A path under the shared folder; a missing folder is an error, never a silent skip."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: the golden tests need the shared reference folder beside the checkout "
            "(or set RADAR_SHARED_DIR)."
        )
    return path


def load_jsonl(*parts: str) -> list[dict[str, Any]]:
    with shared_path(*parts).open() as fh:
        return [json.loads(line) for line in fh if line.strip()]
