"""The explorer page's import box: an attribution file made elsewhere (ferret, inseq,
Thermostat, CSV, this project's JSON) uploaded and stored as a run on the sidebar's model."""

from __future__ import annotations

import streamlit as st

import services
from services.imports import FORMATS, UPLOAD_MB, import_upload
from ui.runs import run_or_stop
from ui.state import Selection

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
            fmt = st.selectbox("Format", [AUTO, *FORMATS], key="explorer.import_format")
            by_id = st.checkbox(
                f"Match records to {selection.dataset}/{selection.split} by example id"
                if selection.dataset
                else "Match records to a dataset split (pick one in the sidebar)",
                key="explorer.import_by_id", disabled=not selection.dataset,
            )  # fmt: skip
            beside = st.multiselect("Built-in methods to compute beside", [m.key for m in services.methods()],
                                    key="explorer.import_methods")  # fmt: skip
            submitted = st.form_submit_button("Import", type="primary")
    if not submitted:
        return None
    if upload is None:
        st.error("Choose a file to import.")
        return None
    if selection.error:
        st.error(selection.error)
        return None
    run_id = run_or_stop(
        import_upload, upload.getvalue(), upload.name, model=selection.model,
        dataset=selection.dataset if by_id else None, split=selection.split if by_id else None,
        methods=beside, fmt=None if fmt == AUTO else fmt,
    )  # fmt: skip
    st.success(f"Imported as run `{run_id}`.")
    return run_id
