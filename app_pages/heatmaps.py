"""Heatmaps (home page): every selected attribution method, one row each, under the same words."""

from __future__ import annotations

import contextlib

import streamlit as st

import services
from ui import compare, state
from ui.agreement import MEASURE_LABELS, agreement_figure
from ui.bundles import bundle_data, bundle_opener, opened_for, show_opened
from ui.charts import probability_chart
from ui.costs import show_costs
from ui.downloads import download_row
from ui.export import Heatmap
from ui.heatmap import heatmap_html
from ui.imports import imported_picker
from ui.mask_panels import has_mask_extras, render_mask_extras
from ui.params import methods_params_form
from ui.prediction import result_markdown
from ui.runs import AUTO_RUN_S, coverage_note, explain_selected, gate, long_text_toggle
from ui.share import methods_from_link, methods_to_link, setting_from_link, setting_to_link
from ui.text import plain

selection = state.current()
st.title("Token attribution heatmaps")
st.caption(
    "One row per method under the same words. Red supports the target class, blue speaks against it; "
    "hover a word for its raw score."
)
if selection.error:
    st.error(selection.error)
    st.stop()

infos = {m.key: m for m in services.methods()}
methods_from_link("heatmaps.methods", list(infos), [k for k in services.DEFAULT_PANEL if k in infos])
chosen = st.multiselect(
    "Methods",
    list(infos),
    key="heatmaps.methods",
    persist_state="session",
    placeholder="Choose attribution methods",
    help="\n".join(f"- **{k}**: {m.description}" for k, m in infos.items()),
)
methods_to_link(chosen)
imported = imported_picker(selection, "heatmaps.imported")

# the two settings at their own widths, the parameters below: in three columns at 1,024 px the
# toggle's label and the Tokens control ("words | su") were cut
settings = st.container(horizontal=True, vertical_alignment="bottom", gap="large")
setting_from_link("heatmaps.shared_scale", "scale", [False, True], False)
shared_scale = settings.toggle("One colour scale for all rows", key="heatmaps.shared_scale", persist_state="session")
setting_to_link("scale", shared_scale, False)
setting_from_link("heatmaps.view", "tokens", ["words", "subwords"], "words")
view = settings.segmented_control("Tokens", ["words", "subwords"], key="heatmaps.view", persist_state="session")
setting_to_link("tokens", view, "words")
with st.expander("Method parameters"):
    params = methods_params_form(infos, chosen, "heatmaps")
other = compare.second_model(selection.model, selection.label_names)

bundle_opener()
opened = opened_for(selection)


def cost_captions(model: str, windows: bool, which: str = "") -> float:
    """The estimated time of each sampling method and mask optimiser chosen, and of another method
    where the text makes its work long (``services.worth_estimating``), on ``model`` (``which``:
    " (model B)" for the second model); returns their sum. In sliding windows each method that
    takes them runs once a window (the others are refused)."""
    keys = [k for k in chosen if infos[k].windowable] if windows else chosen
    n_windows = len(services.predict_example(model, selection.example, True).windows) if windows else 1
    each = f" in each of {n_windows} windows" if n_windows > 1 else ""
    total = 0.0
    for key in (
        k for k in keys if services.worth_estimating(model, selection.example, k, params.get(k, {}), n_windows)
    ):
        cost = services.estimate_perturbation_cost(model, selection.example, key, params.get(key, {}))
        passes = services.passes_text(cost.classifier_passes, cost.backward_passes, cost.mlm_passes)
        seconds = (cost.seconds or 0.0) * n_windows
        st.caption(f"Estimated time for **{key}**{which}: about {seconds:.1f} s (at most {passes}{each}).")
        total += seconds
    for key in (k for k in keys if infos[k].mask_optimiser):
        estimate = services.estimate_mask_cost(model, selection.example, key, params.get(key, {}))
        pretrain = (
            f" (+ about {estimate.pretrain_s:.0f} s the first time: {estimate.note})" if estimate.pretrain_s else ""
        )
        detail = f" ({estimate.note})" if estimate.note and not estimate.pretrain_s else ""
        st.caption(f"Estimated time for **{key}**{which}: about {estimate.seconds:.1f} s{detail}{pretrain}.")
        total += estimate.seconds + (estimate.pretrain_s or 0.0)
    return total


def estimated_seconds(windows: bool) -> float:
    """``cost_captions`` of the model, and of the second model when one is compared (a second model
    that cannot take this input adds nothing here: ``compare.render`` says why)."""
    try:
        total = cost_captions(selection.model, windows)
    except ValueError:  # the model cannot take this input (empty text, a pair for a single-text model): said below
        return 0.0
    if other is not None:
        with contextlib.suppress(ValueError):
            total += cost_captions(other, windows, " (model B)")
    return total


def shows_choices(result: services.HeatmapResult) -> bool:
    """Whether a stored run's or an opened bundle's scores are what the controls ask for: the same
    methods of this app, and the sidebar's target class where it names one (else they are
    computed)."""
    return {m for m in result.attributions if m in infos} == set(chosen) and selection.target in (None, result.target)


stored = services.runs.stored_for(
    st.session_state.get("heatmaps.stored"), selection.model, selection.dataset, selection.split, selection.index
)
if stored is not None and not shows_choices(stored):
    stored = None  # kept in the session: the run's scores come back with its methods and class
if opened is not None and not shows_choices(opened[1]):
    opened = None
if stored is None and opened is None and not chosen and not imported:
    st.info("Choose at least one method.")
    st.stop()
if stored is not None:
    st.info(f"The scores stored by run `{st.session_state['heatmaps.stored'][0]}` (nothing recomputed).")
    if st.button("Recompute with the settings above", key="heatmaps.recompute"):
        st.session_state.pop("heatmaps.stored")
        st.rerun()
if opened is not None and stored is None:
    stored = show_opened(*opened)
if stored is None:
    windows = long_text_toggle(selection)
    estimated_s = estimated_seconds(windows)
    if estimated_s > AUTO_RUN_S:  # a long text or a long method waits for a click
        request = [
            selection.model, list(selection.example.segments), selection.target, chosen, params, windows,
            selection.mlm, other,
        ]  # fmt: skip
        if not gate("heatmaps.run", request, f"Run the chosen methods (≈ {services.duration_text(estimated_s)})"):
            st.stop()
    stored = services.with_imports(explain_selected(selection, chosen, params, windows=windows), imported)
else:
    windows = False
result = stored

prediction = result.prediction
example = prediction.example
coverage_note(selection.model, prediction)
for key, message in result.errors.items():
    st.error(plain(f"{key}: {message}"))

summary, chart = st.columns([2, 3])
predicted = prediction.predicted
summary.markdown(result_markdown(prediction, result.target, selection.threshold, gold=example.gold_name))
chart.plotly_chart(
    probability_chart(
        prediction.label_names,
        prediction.probabilities,
        predicted,
        result.target,
        prediction.head,
        selection.threshold,
    ),
    key="heatmaps.probabilities",
    config={"displayModeBar": False},
)

attributions = result.attributions
if attributions:
    subwords = view == "subwords"
    if subwords and not any(a.subword_scores is not None for a in attributions.values()):
        st.caption("None of these methods scores subwords: showing words.")
    st.html(
        heatmap_html(
            example.words,
            example.segment_ids,
            attributions,
            rationale=example.rationale,
            subwords=subwords,
            shared_scale=shared_scale,
        )
    )
    name = f"heatmap-{example.id or 'text'}"
    drawn = Heatmap(example.words, example.segment_ids, attributions, example.rationale, subwords, shared_scale)
    # each record says which words are the premise and which the hypothesis: a pair's download imports
    json_export = {
        method: {**a.to_json(), "segment_ids": list(example.segment_ids)} for method, a in attributions.items()
    }
    bundle = bundle_data(selection, result, drawn, view)
    download_row("heatmaps.download", name=name, heatmap=drawn, json=json_export, bundle=bundle)
    for attribution in attributions.values():
        if has_mask_extras(attribution):
            render_mask_extras(attribution, example.segment_ids)
    if len(attributions) > 1:
        st.subheader("Do the methods agree on this example?")
        left, right = st.columns([3, 2])  # in halves the presentation font cut "Spearman ρ (signed scores)"
        measure = left.selectbox(
            "Measure",
            list(MEASURE_LABELS),
            format_func=MEASURE_LABELS.get,
            key="heatmaps.measure",
            persist_state="session",
        )
        clustered = right.toggle("Order by clustering", key="heatmaps.clustered", persist_state="session", wrap=True)
        scores = {method: attribution.scores for method, attribution in attributions.items()}
        names, matrix = services.method_agreement(scores, measure, clustered=clustered)
        figure = agreement_figure(names, matrix, measure)
        st.plotly_chart(figure, key="heatmaps.agreement")
        download_row("heatmaps.agreement.download", name="method-agreement", figure=figure)
    st.subheader("Cost per method")
    show_costs(attributions, key="heatmaps.costs", name="cost-per-method")
    if other is not None:  # last: a second model that cannot be used stops only this part
        compare.render(selection, result, other, chosen, params, shared_scale, windows)
