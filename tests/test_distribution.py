"""The wheel ships every package of the checkout: `pyproject.toml` lists them by hand (the root is a namespace
mapped onto the checkout), so a new subpackage left out of the list would be missing from a user's install."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("emitters", "expectations", "pipelines", "transforms")


def test_pyproject_lists_every_package_of_the_checkout() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        "rebalance_radar." + ".".join(init.parent.relative_to(ROOT).parts)
        for top in TOP_LEVEL
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert listed == found
