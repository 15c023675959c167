"""Opening a session bundle on the heatmap page: an upload, or the bundle the server was
started on (``python -m cli open BUNDLE --app``). Opening points the sidebar at the bundle's
model (and head override), example (a dataset example, or its text typed in), target class and
masked LM, and the page's methods, every method parameter widget, sliding windows and view at
the bundle's, all before the widgets are drawn; then the page shows the bundle's results for as
long as that view is selected: nothing is recomputed until "Recompute" is pressed, which then
computes the bundled view again with the bundle's own parameters."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import streamlit as st

import services
from services.bundles import UPLOAD_MB, bundle_bytes, bundle_result, open_bundle, startup_bundle
from ui import sidebar
from ui.export import Heatmap, heatmap_files
from ui.params import preset_params
from ui.state import Selection
from ui.text import plain

OPENED = "heatmaps.bundle"  # (file name, Bundle)
UPLOAD = "heatmaps.bundle_upload"
_STARTUP = "heatmaps.bundle_startup_read"


def open_startup_bundle() -> None:
    """On a session's first run, open the bundle the server was started on (``app.py`` calls
    this before the sidebar renders, so the sidebar's widgets take the bundle's values)."""
    if st.session_state.get(_STARTUP):
        return
    st.session_state[_STARTUP] = True
    try:
        found = startup_bundle()
    except (OSError, ValueError) as error:
        st.session_state["heatmaps.bundle_error"] = f"The bundle the app was started on cannot be opened: {error}"
        return
    if found is not None:
        _open(*found)


def bundle_opener() -> None:
    """The upload box (opening runs in its callback, before the next run's sidebar)."""
    error = st.session_state.pop("heatmaps.bundle_error", None)
    with st.expander("Open a session bundle", expanded=error is not None):
        st.file_uploader(
            "A bundle downloaded from this page (zip)", type=["zip"], key=UPLOAD, on_change=_uploaded,
            max_upload_size=UPLOAD_MB,
            help="Shows the bundle's view with its stored results; nothing is recomputed.",
        )  # fmt: skip
        if error:
            st.error(plain(error))


def _uploaded() -> None:
    upload = st.session_state.get(UPLOAD)
    if upload is not None:
        _open(upload.name, upload.getvalue())


def _open(name: str, data: bytes) -> bool:
    try:
        bundle = open_bundle(data, name)
    except ValueError as error:
        st.session_state["heatmaps.bundle_error"] = str(error)
        return False
    chosen = bundle.selection
    model, head = services.split_ref(bundle.model)
    if chosen.get("dataset"):
        sidebar.select_example(model, chosen["dataset"], chosen["split"], int(chosen["index"] or 0))
    else:
        sidebar.select_text(model, chosen.get("text") or bundle.example.text, chosen.get("text_b") or "")
    st.session_state["sidebar.head_type"] = head
    autocast = services.ref_autocast(bundle.model)
    if autocast in (None, *services.autocast_choices()):
        st.session_state["sidebar.autocast"] = autocast
    st.session_state["sidebar.target"] = chosen.get("target")
    if chosen.get("mlm") in services.mlm_choices():
        st.session_state["sidebar.mlm"] = chosen["mlm"]
    infos = {m.key: m for m in services.methods()}
    st.session_state["heatmaps.methods"] = [m for m in bundle.attributions if m in infos]
    st.session_state["heatmaps.imported"] = [m for m in bundle.attributions if m not in infos]
    refused = preset_params(infos, bundle.params, "heatmaps")
    if refused:
        st.session_state["heatmaps.bundle_error"] = (
            f"{name}: this app's form cannot take {', '.join(refused)}; those parameters keep their defaults, so "
            "recomputing gives other scores than the bundle's."
        )
    st.session_state["runs.windows"] = any("windows" in a.extras for a in bundle.attributions.values())
    if chosen.get("view") in ("words", "subwords"):
        st.session_state["heatmaps.view"] = chosen["view"]
    st.session_state["heatmaps.shared_scale"] = bool(chosen.get("shared_scale"))
    st.session_state.pop("heatmaps.stored", None)
    st.session_state[OPENED] = (name, bundle)
    return True


def opened_for(selection: Selection) -> tuple[str, services.HeatmapResult] | None:
    """(file name, result) of the opened bundle when the sidebar selects its view."""
    found = st.session_state.get(OPENED)
    if found is None or selection.example is None:
        return None
    name, bundle = found
    chosen = bundle.selection
    same_place = (selection.dataset, selection.split, selection.index) == (
        chosen.get("dataset"), chosen.get("split"), chosen.get("index")
    )  # fmt: skip
    segments = selection.example.segments
    same_words = len(segments) == len(bundle.example.segments) and all(
        tuple(mine[: len(theirs)]) == theirs for mine, theirs in zip(segments, bundle.example.segments, strict=True)
    )
    if selection.model != bundle.model or not same_place or not same_words:
        return None
    return name, bundle_result(bundle)


def show_opened(name: str, result: services.HeatmapResult) -> services.HeatmapResult | None:
    """The opened bundle's note and "Recompute" button; its result, or None once recomputing."""
    st.info(f"The view and results of the session bundle {plain(name)} (nothing recomputed).")
    if st.button("Recompute with the settings above", key="heatmaps.recompute_bundle"):
        st.session_state.pop(OPENED)
        st.rerun()
    return result


def bundle_data(
    selection: Selection, result: services.HeatmapResult, drawn: Heatmap, view: str | None
) -> Callable[[], bytes]:
    """What the "Session bundle" button saves (made when it is clicked): the sidebar's and the
    page's choices, every attribution with its exact parameters, the heatmap's files."""
    example = result.prediction.example
    typed = selection.dataset is None
    text = text_b = None
    if typed:  # the text as typed, for a dataset's example nothing
        text = services.as_typed(st.session_state.get("sidebar.text"), example.segments[0])
        if example.is_pair:
            text_b = services.as_typed(st.session_state.get("sidebar.text_b"), example.segments[1])
    shown = {
        "dataset": selection.dataset, "split": selection.split, "index": selection.index,
        "text": text, "text_b": text_b,
        "target": selection.target, "mlm": selection.mlm, "methods": list(result.attributions),
        "view": view, "shared_scale": bool(drawn.shared_scale),
    }  # fmt: skip
    params = {method: a.params for method, a in result.attributions.items()}
    return partial(bundle_bytes, selection.model, shown, params, result, partial(heatmap_files, drawn))
