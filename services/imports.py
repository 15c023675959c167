"""Imports from the app: an uploaded attribution file stored as a run (``engine.imports``),
computed in this process on the shared model, under the caller's progress bar and queue slot."""

from __future__ import annotations

from collections.abc import Sequence

from core.types import ProgressFn
from engine.imports import FORMATS, import_bytes
from engine.runs.store import RunStore
from services.models import classifier

UPLOAD_MB = 32  # the largest upload (the uploader refuses more; checked here again)

__all__ = ["FORMATS", "UPLOAD_MB", "import_upload"]


def import_upload(
    data: bytes,
    name: str,
    *,
    model: str,
    dataset: str | None,
    split: str | None,
    methods: Sequence[str] = (),
    fmt: str | None = None,
    progress: ProgressFn | None = None,
) -> str:
    """Store the uploaded file's attributions as a run; returns its id."""
    if len(data) > UPLOAD_MB * 1024 * 1024:
        raise ValueError(f"{name} is larger than the {UPLOAD_MB} MB an upload may be")
    outcome = import_bytes(
        data, name, RunStore(), fmt=fmt, model=model, dataset=dataset, split=split, methods=list(methods),
        progress=progress, clf=classifier(model),
    )  # fmt: skip
    return outcome.info.run_id
