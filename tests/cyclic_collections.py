"""Counting Python's cyclic garbage collections: what `transforms.cyclic_gc` holds off while a batch is decoded."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def cyclic_collections() -> Iterator[list[int]]:
    """The generations of the collections that start inside the block, in order."""
    started: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        yield started
    finally:
        gc.callbacks.remove(count)
