"""Where a run's store comes from: the store itself, or a factory called once the run or import
has passed its checks, so that one refused for its content creates no store."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from engine.runs.store import RunStore

StoreSource: TypeAlias = "RunStore | Callable[[], RunStore]"


def made(store: StoreSource) -> RunStore:
    """``store``, or the store its factory makes now (the command line passes a factory)."""
    return store if isinstance(store, RunStore) else store()
