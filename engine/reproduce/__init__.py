"""Reproductions of the papers' headline findings: a registry of tables, each computed through the
engine and set beside the published values (``python -m cli reproduce``; no streamlit here).

``run(name, limit)`` returns the JSON payload of one reproduction at a slice: the paper, table,
claim, settings, one row per published cell (published, ours: mean, 95% interval, n), the finding
(holds / does not hold, with the reason) and the reasons ours may differ. ``cached_run`` keeps one
JSON file per (reproduction, slice, code version) under ``$ATTRIBUTION_RESULTS_DIR`` (default
``./results``), written atomically.
"""

from __future__ import annotations

import os
import time
from typing import Any

from core.types import ProgressFn
from engine.reproduce import double_trouble, mask_papers, recursive_roar
from engine.reproduce.base import (
    Finding,
    Reproduction,
    Resources,
    Row,
    cache_path,
    cached_files,
    check_limit,
    code_version,
    load_cached,
    row_json,
    save_atomic,
)

REGISTRY: dict[str, Reproduction] = {
    r.name: r for r in (*double_trouble.REPRODUCTIONS, *mask_papers.REPRODUCTIONS, *recursive_roar.REPRODUCTIONS)
}

__all__ = ["REGISTRY", "Finding", "Reproduction", "Row", "cached_run", "get", "latest", "run"]


def get(name: str) -> Reproduction:
    if name not in REGISTRY:
        raise ValueError(f"unknown reproduction {name!r}; choose one of {', '.join(REGISTRY)}")
    return REGISTRY[name]


def run(name: str, limit: int | None = None, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Compute one reproduction at ``limit`` examples per split (its default slice when None)."""
    reproduction = get(name)
    limit = reproduction.default_limit if limit is None else limit
    check_limit(limit)
    start = time.perf_counter()
    rows = reproduction.compute(Resources(), limit, progress)
    finding = reproduction.check(rows)
    return {
        "name": reproduction.name,
        "paper": reproduction.paper.cite(),
        "title": reproduction.paper.title,
        "table": reproduction.table,
        "claim": reproduction.claim,
        "published_note": reproduction.published_note,
        "settings": reproduction.settings,
        "limit": limit,
        "default_limit": reproduction.default_limit,
        "rows": [row_json(row) for row in rows],
        "finding": {"holds": finding.holds, "reason": finding.reason},
        "differences": list(reproduction.differences),
        "runtime_s": round(time.perf_counter() - start, 1),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "code_version": code_version(),
    }


def cached_run(
    name: str, limit: int | None = None, *, refresh: bool = False, progress: ProgressFn | None = None
) -> tuple[dict[str, Any], bool]:
    """``run``'s payload from the cache when present (and ``refresh`` is off), else computed and
    saved; the flag says whether it came from the cache."""
    reproduction = get(name)
    limit = reproduction.default_limit if limit is None else limit
    check_limit(limit)
    path = cache_path(name, limit)
    if not refresh:
        cached = load_cached(path)
        if cached is not None:
            return cached, True
    payload = run(name, limit, progress)
    save_atomic(path, payload)
    return payload, False


def latest(name: str) -> tuple[dict[str, Any] | None, bool]:
    """The newest readable cached result of ``name`` at any slice, the current code version's
    first, else an older version's (the flag says whether it is current); (None, False) when
    ``name`` never ran. Reads files only: nothing is computed."""
    get(name)
    version = code_version()
    files = cached_files(name)
    for path in sorted(files, key=lambda path: not path.stem.endswith(f"-{version}")):
        payload = load_cached(path)
        if payload is not None:
            return payload, payload.get("code_version") == version
    return None, False
