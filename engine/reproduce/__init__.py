"""Reproductions of the papers' headline findings: a registry of tables, each computed through the
engine and set beside the published values (``python -m cli reproduce``; no streamlit here).

``run(name, limit)`` computes one reproduction at a slice and returns its JSON payload: the paper,
table, claim, settings (with each metric's convention), one row per published cell (published,
ours: mean, 95% interval, n, the per-example values), the finding (holds / does not hold /
undecided, None, where the paired intervals contain 0; with the reason), the reasons
ours may differ, the run time, when it finished and the fingerprints of the models it loaded
(``model_versions``: a result computed with other weights than this machine's is stale, and
``cached_run`` computes it again). ``cached_run`` keeps results in the run store
under ``$ATTRIBUTION_RESULTS_DIR`` (default ``./results``), one run of kind ``reproduce`` per
(reproduction, slice, code version), written only once the computation has finished
(``engine.reproduce.stored``); ``stored_results``, ``pick`` and ``load`` read them without
computing anything. ``bundled`` reads the results computed when the app was packaged
(``assets/reproductions/``), which the app shows for a reproduction the run store has no result of.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

from core.types import ProgressFn
from engine.reproduce import double_trouble, mask_papers, model_versions, recursive_roar, stored
from engine.reproduce.base import Finding, Reproduction, Resources, Row, check_limit, code_version, row_json
from engine.reproduce.stored import StoredResult, UnreadableResult
from engine.runs.store import RunStore

REGISTRY: dict[str, Reproduction] = {
    r.name: r for r in (*double_trouble.REPRODUCTIONS, *mask_papers.REPRODUCTIONS, *recursive_roar.REPRODUCTIONS)
}

__all__ = [
    "REGISTRY",
    "Finding",
    "Reproduction",
    "Row",
    "StoredResult",
    "UnreadableResult",
    "bundled",
    "cached_run",
    "changed_models",
    "code_version",
    "get",
    "load",
    "pick",
    "run",
    "stored_results",
]

Root = str | os.PathLike | None
# ``python -m cli reproduce NAME --json`` of every reproduction at its default slice, as packaged
BUNDLED_DIR = Path(__file__).resolve().parents[2] / "assets" / "reproductions"


def get(name: str) -> Reproduction:
    if name not in REGISTRY:
        raise ValueError(f"unknown reproduction {name!r}; choose one of {', '.join(REGISTRY)}")
    return REGISTRY[name]


def run(name: str, limit: int | None = None, progress: ProgressFn | None = None, root: Root = None) -> dict[str, Any]:
    """Compute one reproduction at ``limit`` examples per split (its default slice when None); AML's
    pre-trained models are kept in the results folder ``root`` (None: the default one)."""
    reproduction = get(name)
    limit = reproduction.default_limit if limit is None else limit
    check_limit(limit, reproduction)
    start = time.perf_counter()
    resources = Resources(results=root)
    rows = reproduction.compute(resources, limit, progress)
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
        "model_fingerprints": model_versions.fingerprints(resources.loaded()),
        "computed": dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(timespec="seconds"),
    }


def cached_run(
    name: str,
    limit: int | None = None,
    *,
    refresh: bool = False,
    progress: ProgressFn | None = None,
    root: Root = None,
) -> tuple[dict[str, Any], bool]:
    """The stored result of ``name`` at ``limit`` computed by this code version with this
    machine's models when there is one (and ``refresh`` is off), else ``run``'s payload computed
    now and kept in the run store, replacing a stored one with the same key; the flag says whether
    it was stored before. The name and slice are checked before anything is opened or computed; a
    stored result that cannot be read is computed again."""
    reproduction = get(name)
    limit = reproduction.default_limit if limit is None else limit
    check_limit(limit, reproduction)
    if not refresh:
        version = code_version()
        found = [r for r in stored_results(name, root) if r.limit == limit and r.code == version]
        if found:
            try:
                payload = load(found[0].run_id, root)
            except UnreadableResult:
                payload = None  # its file is gone or damaged: computed again below, replacing it
            if payload is not None and not model_versions.changed(payload):
                return payload, True
    payload = run(name, limit, progress, root)
    saved = stored.save(RunStore(root), payload)
    return load(saved.run_id, root), False


def stored_results(name: str | None = None, root: Root = None) -> list[StoredResult]:
    """Every stored result (of ``name`` when given), newest first, from the run store's catalogue;
    JSON results of earlier versions are imported first, once (``stored.import_legacy``)."""
    if name is not None:
        get(name)
    stored.import_legacy(root, REGISTRY)
    return stored.listing(RunStore(root, read_only=True), name)


def pick(
    results: list[StoredResult], version: str | None = None, limit: int | None = None
) -> tuple[StoredResult | None, bool]:
    """The result to show among one reproduction's stored ones (newest first), at slice ``limit``
    when given (the page passes the default slice, so that a run on another slice does not replace
    it): the newest that code ``version`` (default: the current code) computed, else the newest of
    another version (the flag says whether it is of ``version``)."""
    version = version or code_version()
    results = [result for result in results if limit is None or result.limit == limit]
    current = [result for result in results if result.code == version]
    if current:
        return current[0], True
    return (results[0] if results else None), False


def changed_models(payload: dict[str, Any]) -> list[str]:
    """The models whose files differ here from those ``payload`` was computed with."""
    return model_versions.changed(payload)


def load(run_id: str, root: Root = None) -> dict[str, Any]:
    """One stored result's whole payload (read from the run store; nothing is computed)."""
    return stored.load(RunStore(root, read_only=True), run_id)


def bundled(name: str) -> dict[str, Any] | None:
    """The result of ``name`` computed when the app was packaged (``BUNDLED_DIR/NAME.json``: parsed,
    never evaluated), marked ``"bundled": True``; None when there is none or the file is not a
    result of ``name``. Nothing is computed or stored."""
    get(name)
    path = BUNDLED_DIR / f"{name}.json"
    payload = stored.parsed_payload(path, (name,)) if path.is_file() else None
    if payload is None or payload["name"] != name:
        return None
    return {key: value for key, value in payload.items() if key not in ("run_id", "cached")} | {"bundled": True}
