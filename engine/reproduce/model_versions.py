"""Which model weights a reproduction's result was computed with: the fingerprint of every
classifier and masked LM its run loaded (``engine.runs.model_identity``), kept with the result, and
the ones that differ on this machine now, which make a stored or bundled result stale although the
code is the same (a retrained bundled model, say)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from engine.runs.model_identity import files_digest, model_files


def fingerprints(names: Iterable[str]) -> dict[str, str]:
    """Each bundled model's fingerprint (the reproductions load bundled models only; any other
    name, say one read from a result file, is left out rather than looked up)."""
    from core.models import bundled_names

    bundled = set(bundled_names())
    out = {}
    for name in sorted(set(names) & bundled):
        files = model_files(name)
        out[name] = _digest(name, tuple((label, str(path), path.stat().st_mtime_ns) for label, path in files))
    return out


@functools.lru_cache(maxsize=32)
def _digest(name: str, stamp: tuple[tuple[str, str, int], ...]) -> str:
    """The files' digest, once per process while their paths and modification times stay."""
    return files_digest(model_files(name))


def changed(payload: dict[str, Any]) -> list[str]:
    """The models of ``payload`` (a result's JSON) whose files differ here from those it was
    computed with, or are missing; none for a result that recorded no fingerprints."""
    recorded = payload.get("model_fingerprints")
    if not isinstance(recorded, dict):
        return []
    now = fingerprints(name for name in recorded if isinstance(name, str))
    return sorted(name for name, fingerprint in recorded.items() if now.get(name) != fingerprint)
