"""The papers' reproductions for the app: the registry's entries, their cached results (read from
``$ATTRIBUTION_RESULTS_DIR/reproduce``, never computed when the page opens) and a run that computes
one and fills that cache (``engine.reproduce.cached_run``, the same code as
``python -m cli reproduce``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.types import ProgressFn
from engine import reproduce


@dataclass(frozen=True)
class ReproductionInfo:
    name: str
    paper: str  # authors, year, arXiv id
    title: str  # the paper's title
    table: str
    claim: str
    published_note: str
    default_limit: int


def reproductions() -> list[ReproductionInfo]:
    """Every registered reproduction, in registry order."""
    return [
        ReproductionInfo(r.name, r.paper.cite(), r.paper.title, r.table, r.claim, r.published_note, r.default_limit)
        for r in reproduce.REGISTRY.values()
    ]


def latest(name: str) -> tuple[dict[str, Any] | None, bool]:
    """The newest cached result of ``name`` and whether the current code computed it."""
    return reproduce.latest(name)


def run(name: str, limit: int, progress: ProgressFn | None = None) -> dict[str, Any]:
    """The result at ``limit`` examples per split: from the cache when this code version already
    computed it, else computed now and cached (atomically)."""
    payload, _ = reproduce.cached_run(name, limit, progress=progress)
    return payload


def command(name: str, limit: int) -> str:
    """The command line that computes (or prints from the cache) the same result."""
    return f"python -m cli reproduce {name} --limit {limit}"
