"""The papers' reproductions for the app: the registry's entries, their results kept in the run
store (``engine.reproduce``: runs of kind ``reproduce``; listed and read, never computed, when the
page opens) and a run that computes one and stores it (``engine.reproduce.cached_run``, the same
code as ``python -m cli reproduce``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from core.types import ProgressFn
from engine import reproduce
from engine.reproduce import StoredResult
from engine.runs.store import results_dir


@dataclass(frozen=True)
class ReproductionInfo:
    name: str
    paper: str  # authors, year, arXiv id
    title: str  # the paper's title
    table: str
    claim: str
    published_note: str
    default_limit: int
    min_limit: int  # the smallest slice it computes


@dataclass(frozen=True)
class Shown:
    """One reproduction's stored results (newest first, every slice), the payload shown (None when
    it never ran), whether the current code computed it with this machine's models, the models
    whose weights differ from those it was computed with, and a one-line warning when the stored
    result could not be read (the bundled one is shown instead)."""

    stored: list[StoredResult]
    payload: dict[str, Any] | None
    current: bool
    warning: str | None = None
    changed: tuple[str, ...] = ()


def reproductions() -> list[ReproductionInfo]:
    """Every registered reproduction, in registry order."""
    return [
        ReproductionInfo(
            r.name, r.paper.cite(), r.paper.title, r.table, r.claim, r.published_note, r.default_limit, r.min_limit
        )
        for r in reproduce.REGISTRY.values()
    ]


def stored() -> dict[str, Shown]:
    """Every reproduction's stored results, read from the run store's catalogue in one pass (each
    rerun, so a result another process stores appears), and the payload of the one to show at its
    default slice (``engine.reproduce.pick``); a reproduction the store has no readable result of
    at that slice shows the one bundled with the app, when there is one
    (``engine.reproduce.bundled``)."""
    results = reproduce.stored_results()
    version = code_version()  # it hashes the source files: once per rerun
    shown = {}
    for name, entry in reproduce.REGISTRY.items():
        own = [result for result in results if result.name == name]
        shown[name] = at_slice(name, own, entry.default_limit, version)
    return shown


def at_slice(name: str, own: list[StoredResult], limit: int, version: str | None = None) -> Shown:
    """What the page shows of ``name`` at slice ``limit``: the stored result ``pick`` chooses,
    else the bundled one when it is of that slice (with a warning when a stored one could not be
    read); ``version``: the current code's, when the caller has it."""
    version = version or code_version()
    chosen, current = reproduce.pick(own, version, limit)
    warning = None
    if chosen is not None:
        try:
            payload = _payload(str(results_dir()), chosen.run_id, chosen.computed.isoformat())
            changed = tuple(reproduce.changed_models(payload))
            return Shown(own, payload, current and not changed, changed=changed)
        except reproduce.UnreadableResult as error:
            warning = str(error)
    payload = reproduce.bundled(name)  # a few kilobytes of JSON: read on each rerun
    if payload is None or payload["limit"] != limit:
        return Shown(own, None, False, warning)
    warning = warning and f"{warning}; showing the result bundled with the app"
    changed = tuple(reproduce.changed_models(payload))
    return Shown(own, payload, payload["code_version"] == version and not changed, warning, changed)


@st.cache_data(show_spinner=False, max_entries=64)
def _payload(root: str, run_id: str, computed: str) -> dict[str, Any]:
    """One stored result, read once per (store, run, computation): a ``--refresh`` keeps the run id
    but changes when it was computed, so it is read again."""
    return reproduce.load(run_id, root)


def code_version() -> str:
    """The current code's version (the key a stored result is current under)."""
    return reproduce.code_version()


def run(name: str, limit: int, progress: ProgressFn | None = None) -> dict[str, Any]:
    """The result at ``limit`` examples per split: the stored one when this code version already
    computed it, else computed now and kept in the run store (atomically)."""
    payload, _ = reproduce.cached_run(name, limit, progress=progress)
    return payload


def command(name: str, limit: int) -> str:
    """The command line that computes (or prints from the run store) the same result."""
    return f"python -m cli reproduce {name} --limit {limit}"
