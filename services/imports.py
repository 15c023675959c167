"""Imports from the app: an uploaded attribution file stored as a run (``engine.imports``),
computed in this process on the shared model, under the caller's progress bar and queue slot;
and the stored imports of a dataset split offered beside the built-in methods
(``engine.imports.stored``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import streamlit as st

from core.model_refs import split_ref
from core.types import Attribution, Example, ProgressFn
from engine.imports import FORMATS, import_bytes
from engine.imports import stored as _stored
from engine.imports.stored import ImportedMethod
from engine.runs.store import RunStore, results_dir
from services.explain import HeatmapResult
from services.models import classifier

UPLOAD_MB = 32  # the largest upload (the uploader refuses more; checked here again)

__all__ = ["FORMATS", "UPLOAD_MB", "ImportedMethod", "given_for", "import_upload", "imported_methods", "with_imports"]


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
) -> tuple[str, tuple[str, ...]]:
    """Store the uploaded file's attributions as a run; returns its id and the lines to show as
    warnings (the file names another model). ``model`` is the sidebar's reference: the import is
    stored for the model itself, scored in float32 with the head its config gives (an import's key
    names neither a head override nor autocast)."""
    if len(data) > UPLOAD_MB * 1024 * 1024:
        raise ValueError(f"{name} is larger than the {UPLOAD_MB} MB an upload may be")
    plain_name, head_type = split_ref(model)
    if head_type is not None:
        raise ValueError(
            "imports are scored with the head the model's config gives: clear the sidebar's head-type override"
        )
    outcome = import_bytes(
        data, name, RunStore(), fmt=fmt, model=plain_name, dataset=dataset, split=split, methods=list(methods),
        progress=progress, clf=classifier(plain_name),
    )  # fmt: skip
    return outcome.info.run_id, outcome.notes


def imported_methods(model: str, dataset: str, split: str) -> list[ImportedMethod]:
    """The methods imported into the run store for ``model`` (a sidebar reference: its head
    override and autocast do not matter) on ``dataset``/``split``, scored on the model as this
    server loaded it (its fingerprint; the catalogue is read again only when it changed: pages
    ask on every rerun)."""
    plain_name = split_ref(model)[0]
    fingerprint = _fingerprint(plain_name)
    return _imported_methods(*RunStore(read_only=True).cache_key(), plain_name, dataset, split, fingerprint)


@st.cache_data(show_spinner=False, max_entries=64)
def _imported_methods(
    root: str, version: tuple[int, ...], model: str, dataset: str, split: str, fingerprint: str
) -> list[ImportedMethod]:
    return _stored.imported_methods(RunStore(root, read_only=True), model, dataset, split, fingerprint)


@st.cache_resource(show_spinner=False, max_entries=32)
def _fingerprint(model: str) -> str:
    """Hashed once per model and process, like the model itself is loaded once (services.models)."""
    from engine.runs.model_identity import model_fingerprint

    return model_fingerprint(model)


@st.cache_resource(show_spinner=False, max_entries=32)
def _attributions(root: str, method: ImportedMethod) -> dict[str, Attribution]:
    """Read once per process and shared read-only: a finished import never changes."""
    return _stored.imported_attributions(RunStore(root, read_only=True), method)


def _stored_of(chosen: Sequence[ImportedMethod]) -> list[dict[str, Attribution]]:
    root = str(results_dir().resolve())
    return [_attributions(root, method) for method in chosen]


def given_for(
    chosen: Sequence[ImportedMethod], examples: Sequence[Example]
) -> tuple[list[dict[str, Attribution]], dict[str, tuple[str, ...]]]:
    """The chosen imports' attributions of ``examples`` (``evaluate_slice``'s ``given``) and,
    per imported name, the ids of the examples the import lacks."""
    return _stored.given_for(chosen, _stored_of(chosen), examples)


def with_imports(result: HeatmapResult, chosen: Sequence[ImportedMethod]) -> HeatmapResult:
    """``result`` with the chosen imports' attributions of its example (as the model saw it) for
    its class beside its methods' own, and, among its errors, why an import has none to show."""
    if not chosen:
        return result
    stored = _stored_of(chosen)
    given, refused = _stored.example_imports(chosen, stored, result.prediction.example, result.target)
    return dataclasses.replace(result, attributions=result.attributions | given, errors=result.errors | refused)
