"""Imports in the app: the explorer page's import box (an attribution file made elsewhere:
ferret, inseq, Thermostat, CSV, this project's JSON, uploaded and stored as a run on the
sidebar's model), and the picker and coverage note that put stored imports of the sidebar's
dataset split beside the built-in methods on the heatmap, faithfulness and rationale pages."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

import services
from services.imports import FORMATS, UPLOAD_MB, ImportedMethod, import_upload, imported_methods
from ui.runs import run_or_stop
from ui.state import Selection
from ui.text import plain

AUTO = "detect"


def import_box(selection: Selection) -> str | None:
    """The expander with the upload form; the new run's id once a file was imported."""
    with st.expander("Import attributions made elsewhere"):
        st.caption(
            "ferret explanations saved as JSON, inseq's `save` output, a Thermostat dataset (JSON Lines, Parquet "
            "or Arrow), a CSV of `example_id, word_index, score[, method, target]`, or this app's JSON. "
            "The scores are lined up with the sidebar's model's words and scored by the metrics like its own methods."
        )
        with st.form("explorer.import"):
            upload = st.file_uploader("File", key="explorer.import_file", max_upload_size=UPLOAD_MB)
            fmt = st.selectbox("Format", [AUTO, *FORMATS], key="explorer.import_format", persist_state="session")
            by_id = st.checkbox(
                plain(f"Match records to {selection.dataset}/{selection.split} by example id")
                if selection.dataset
                else "Match records to a dataset split (pick one in the sidebar)",
                key="explorer.import_by_id", persist_state="session", disabled=not selection.dataset,
            )  # fmt: skip
            beside = st.multiselect("Built-in methods to compute beside", [m.key for m in services.methods()],
                                    key="explorer.import_methods", persist_state="session")  # fmt: skip
            submitted = st.form_submit_button("Import", type="primary")
    if not submitted:
        return None
    if upload is None:
        st.error("Choose a file to import.")
        return None
    if selection.error:
        st.error(selection.error)
        return None
    run_id, notes = run_or_stop(
        import_upload, upload.getvalue(), upload.name, model=selection.model,
        dataset=selection.dataset if by_id else None, split=selection.split if by_id else None,
        methods=beside, fmt=None if fmt == AUTO else fmt,
    )  # fmt: skip
    st.success(f"Imported as run `{run_id}`.")
    for note in notes:
        st.warning(plain(note))
    return run_id


def imported_picker(selection: Selection, key: str) -> list[ImportedMethod]:
    """The imports of the sidebar's model on its dataset split to score beside the built-in
    methods (nothing is drawn when there are none)."""
    if not selection.dataset or selection.error:
        return []
    offered = {m.name: m for m in imported_methods(selection.model, selection.dataset, selection.split)}
    if not offered:
        return []
    chosen = st.session_state.get(key, [])
    if any(name not in offered for name in chosen):  # imports of another model or split
        st.session_state[key] = [name for name in chosen if name in offered]
    names = st.multiselect(
        "Imported attributions", list(offered), key=key, persist_state="session", placeholder="Choose imported attributions",
        format_func=lambda name: f"{name} — {offered[name].file} ({offered[name].format}), "
        f"{offered[name].examples} examples",
        help="Attributions made elsewhere and imported into the run store for this model and split (the Dataset "
        "explorer's import box, or `python -m cli import --dataset --split`): scored with the same metrics as "
        "the methods above, on the examples the import has.",
    )  # fmt: skip
    return [offered[name] for name in names]


def imported_note(chosen: list[ImportedMethod], missing: Mapping[str, tuple[str, ...]], total: int) -> None:
    """Each imported method's provenance and the slice's examples its import lacks."""
    lines = []
    for method in chosen:
        lacks = missing.get(method.name, ())
        line = f"**{plain(method.name)}**: {plain(method.provenance)}; {total - len(lacks)} of {total} examples"
        if lacks:
            shown = ", ".join(plain(i) for i in lacks[:10]) + (
                f" and {len(lacks) - 10} more" if len(lacks) > 10 else ""
            )
            line += f". Not in the import, so left out of its figures: {shown}"
        lines.append(line)
    if lines:
        st.caption("  \n".join(lines))
