"""The heatmap page's second model: pick it (bundled, hub id, folder, or the model's randomized
copy in one click), see both models' rows per method under the same words with their
predictions, and each method's rank correlation between the two models.

The choice is kept in the URL as ``?compare=<model>`` (``compare=randomized`` for the copy).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import services
from ui.heatmap import heatmap_html, side_by_side
from ui.live_labels import live_selectbox
from ui.prediction import result_markdown
from ui.runs import run_or_stop
from ui.text import plain

ON, MODEL, PATH = "heatmaps.compare.on", "heatmaps.compare.model", "heatmaps.compare.path"
RANDOMIZED = "randomized"  # the picker's entry (and URL value) for the model's randomized copy
PARAM = "compare"
_URL_READ = "heatmaps.compare.url_read"


def _read_url_once() -> None:
    if st.session_state.get(_URL_READ):
        return
    st.session_state[_URL_READ] = True
    wanted = st.query_params.get(PARAM, "").strip()
    if wanted:
        st.session_state[ON] = True
        known = {RANDOMIZED, *(c.name for c in services.model_choices())}
        st.session_state[MODEL if wanted in known else PATH] = wanted


def _randomized_copy() -> None:
    st.session_state[ON] = True
    st.session_state[MODEL] = RANDOMIZED
    st.session_state[PATH] = ""


def second_model(model: str, label_names: tuple[str, ...]) -> str | None:
    """The widgets; the second model's name for ``services`` (None when the comparison is off, or
    when the model picked has other classes than the first's ``label_names``: said under the
    picker, from its config, before any weights load)."""
    _read_url_once()
    # the toggle and the button at their labels' widths, the picker below at the page's: in three
    # columns at 1,024 px the toggle's label and the picker's hub names were cut
    row = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    on = row.toggle(
        "Second model",
        key=ON,
        persist_state="session",
        help="Explain the same words with a second model, row under row.",
    )
    row.button(
        "Randomized copy",
        key="heatmaps.compare.randomized",
        on_click=_randomized_copy,
        help="Compare this model with its randomized copy: every weight re-initialised, as the last step of the "
        "sanity checks' cascading randomization (Adebayo et al. 2018). An explanation that survives it does not "
        "depend on what the model learned.",
    )
    if not on:
        st.query_params.pop(PARAM, None)
        return None
    choices = {RANDOMIZED: f"{model} randomized (every layer)"}
    choices |= {c.name: c.label for c in services.model_choices() if c.name != model}
    picked = live_selectbox("Second model", list(choices), choices.get, MODEL, RANDOMIZED)  # a label names the model
    typed = (
        ""
        if services.shared_mode()
        else st.text_input("…or a hub id or local folder", key=PATH, persist_state="session")
    )
    chosen = typed.strip() or picked
    st.query_params[PARAM] = chosen
    other = services.randomized_name(model) if chosen == RANDOMIZED else chosen
    refusal = services.label_refusal(label_names, other) if label_names else None
    if refusal is not None:
        st.error(plain(refusal[:1].upper() + refusal[1:]))
        return None
    return other


def render(
    selection,
    first: services.HeatmapResult,
    other: str,
    methods: list[str],
    params: dict,
    shared_scale: bool = False,
    windows: bool = False,
) -> None:
    """Both models' predictions, their rows under the same words and the rank correlations;
    ``shared_scale`` (the page's "One colour scale for all rows") colours both models' rows on one
    scale, as the page's own heatmap; ``windows``: model B explains a long text whole, as model A
    did (it read only its first tokens)."""
    comparison = run_or_stop(
        services.compare,
        first,
        other,
        selection.example,
        methods,
        params=params,
        mlm_name=selection.mlm,
        windows=windows,
    )
    second = comparison.second
    randomized = other == services.randomized_name(selection.model)
    names = (selection.model, f"{selection.model} randomized (every layer, seed 0)" if randomized else other)
    st.subheader("Two models side by side")
    columns = st.columns(2)
    for column, label, name, result in zip(columns, "AB", names, (first, second)):
        column.markdown(
            f"**{label}** = {plain(name)}  \n" + result_markdown(result.prediction, result.target, selection.threshold)
        )
    for key, message in second.errors.items():
        st.error(plain(f"{key} (model B): {message}"))
    n_words, rows = side_by_side(first.attributions, second.attributions)
    if n_words < len(first.prediction.example.words):
        st.warning(f"The two models cut the text differently: both rows show the first {n_words} words they share.")
    example = first.prediction.example
    rationale = example.rationale[:n_words] if example.rationale is not None else None
    st.html(
        heatmap_html(
            example.words[:n_words], example.segment_ids[:n_words], rows, rationale=rationale, shared_scale=shared_scale
        )
    )
    table = pd.DataFrame(
        [
            {"method": a.method, "Spearman ρ": a.spearman, "Spearman ρ of |scores|": a.spearman_abs, "words": a.n_words}
            for a in comparison.agreements.values()
        ]
    )
    st.caption(
        "Rank correlation of each method's two rows (1: the same ranking of the words, 0: unrelated; "
        "blank where a row is constant)."
    )
    st.dataframe(table, hide_index=True, key="heatmaps.compare.table")
