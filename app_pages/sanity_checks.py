"""Sanity checks: re-initialise the model layer by layer and watch whether the explanations change.

Cascading and independent randomisation after Adebayo et al. (2018) as the thesis "Assessing the
Interpretability of Large Language Models" (Oxford MSc, 2022, sections 2.2.3.3 and 3.3) runs it; the
classifier-head reset of Pham et al. 2022 (Table A5) is the ``head`` step.
"""

from __future__ import annotations

import streamlit as st

import services
from ui import sanity as S
from ui import state
from ui.downloads import show_figure, show_table
from ui.heatmap import heatmap_html
from ui.live_labels import live_selectbox
from ui.params import methods_params_form
from ui.runs import SLICE, example_scope, gate, run_or_stop
from ui.share import methods_from_link, methods_to_link, setting_from_link, setting_to_link
from ui.text import plain

THESIS_METHODS = ("saliency", "grad_x_input", "integrated_gradients", "attention_mean", "attention_rollout")
SEEDS = range(2**31)  # the seed box's values, which a link may set
# How the new weights are drawn (experiments.randomization.SCHEMES) and what the page calls them.
SCHEMES = {"init": "the model's initializer", "shuffle": "each weight tensor shuffled"}
TOP_K_SHARES = tuple(round(0.05 * i, 2) for i in range(1, 21))  # the top-k slider's values

selection = state.current()
st.title("Sanity checks: layer randomisation")
st.caption(
    "Re-initialise the model's weights (the classifier head, then each transformer block from the top, then the "
    "embeddings) and explain again. An explanation that does not change when the weights are destroyed cannot be "
    "explaining the model."
)
if selection.error:
    st.error(selection.error)
    st.stop()
with st.expander("How to read this page", expanded=False):
    S.how_to_read()

infos = {m.key: m for m in services.methods()}
methods_from_link("sanity.methods", list(infos), [k for k in THESIS_METHODS if k in infos])
chosen = st.multiselect(
    "Methods", list(infos), key="sanity.methods", persist_state="session",
    help="The thesis uses the gradient and attention methods; perturbation methods work too but cost more per step.",
)  # fmt: skip
methods_to_link(chosen)
setting_from_link("sanity.mode", "mode", ["cascading", "independent"], "cascading")
# a row of its own: in a quarter of the page at 1,024 px it showed "cascading | indep"
mode = st.segmented_control("Randomisation", ["cascading", "independent"], key="sanity.mode", persist_state="session")
mode = mode or "cascading"
setting_to_link("mode", mode, "cascading")
setting_from_link("sanity.scheme", "scheme", list(SCHEMES), "init")
scheme = st.segmented_control(
    "New weights", list(SCHEMES), format_func=SCHEMES.get, key="sanity.scheme", persist_state="session",
    help="The thesis does not say how it re-drew the weights. The initializer draws fresh random values; shuffling "
    "keeps each tensor's values and destroys where they sit.",
)  # fmt: skip
scheme = scheme or "init"
setting_to_link("scheme", scheme, "init")
try:
    every_component = services.randomization_steps(selection.model, mode)[1:]
except ValueError as error:
    st.error(plain(str(error)))
    st.stop()
components = st.multiselect(
    "Components randomised (top down)", every_component, default=every_component,
    key=f"sanity.components.{selection.model}", persist_state="session",
    help="The thesis's curves cover the transformer blocks; leave out head and embeddings to draw those alone.",
)  # fmt: skip
components = [name for name in every_component if name in components]  # top down, whatever the click order
if not components:
    st.info("Choose at least one component to randomise.")
    st.stop()
first, second, third = st.columns(3)
setting_from_link("sanity.seed", "seed", SEEDS, 0)
seed = int(
    first.number_input(
        "Seed", min_value=0, max_value=SEEDS.stop - 1, step=1, key="sanity.seed", persist_state="session"
    )
)
setting_to_link("seed", seed, 0)
setting_from_link("sanity.top_k", "top_k", TOP_K_SHARES, 0.2)
top_k = second.slider("Top-k share of words", 0.05, 1.0, step=0.05, key="sanity.top_k", persist_state="session")
setting_to_link("top_k", round(top_k, 2), 0.2)
scope, n_examples = example_scope(
    third, selection, "sanity", most=50, default=10,
    help="The thesis uses 50. Each example's target is its predicted class.",
)  # fmt: skip
with st.expander("Method parameters"):
    params = methods_params_form(infos, chosen, "sanity")
if not chosen:
    st.info("Choose at least one method.")
    st.stop()
step_names = ["original", *components]
try:  # one step of the run, estimated (timing it ran every chosen method before the Run button)
    one_step = services.estimate_slice(selection.model, [selection.example], chosen, params, []).seconds
    # AML pre-trains a model of its own for every randomised copy of the classifier
    pretraining = services.pretraining_seconds(selection.model, selection.example, chosen, params, fresh=True)
except ValueError as error:
    st.error(plain(str(error)))
    st.stop()
aml = f" and AML's pre-training {pretraining:.0f} s for each step's model" if pretraining else ""
st.caption(
    f"Estimated time: about {services.duration_text((one_step * n_examples + pretraining) * len(step_names))} on "
    f"this machine ({len(chosen)} method(s) take about {one_step:.2f} s on this example{aml}; × {len(step_names)} steps: "
    f"{', '.join(step_names)}; × {n_examples} example(s))."
)
request = [selection.model, chosen, mode, scheme, components, seed, top_k, scope, n_examples, params,
           repr(selection.example), selection.target, selection.mlm]  # fmt: skip
if not gate("sanity.run", request, "Run the sanity check", memory="sanity.requested"):
    st.stop()
single = scope != SLICE
examples = [selection.example] if single else services.slice_examples(selection.dataset, selection.split, n_examples)
result = run_or_stop(
    services.randomize, selection.model, examples, chosen, mode=mode, seed=seed, scheme=scheme,
    components=components if len(components) < len(every_component) else None, targets=[selection.target] if single and selection.target is not None else None, params=params,
    top_k_fraction=top_k, mlm_name=selection.mlm,
)  # fmt: skip
summary = result.summary()
names = [step.name for step in result.steps]
st.caption(
    f"{len(result.examples)} example(s), {len(names)} steps; {result.runtime_s:.1f} s, "
    f"{result.forward_passes:,} forward and {result.backward_passes:,} backward passes."
)
measure = st.selectbox(
    "Measure", list(S.MEASURES), format_func=S.MEASURES.get, key="sanity.measure", persist_state="session"
)
if all(len(row.example.words) < 2 for row in result.examples):
    st.info(
        "Rank correlations need at least two words and this text has one: Spearman ρ is n/a (no curve), and the "
        "top-k overlap of one word is 1 at every step. The sign changes and mean |change| still say how its score moved."
    )
pooled = False
if len(result.examples) > 1 and measure in S.POOLED:
    pooled = st.toggle(
        "One correlation over every word of every example", key="sanity.pooled", persist_state="session",
        help="The thesis's formula pools the words; its text says it averaged per-example correlations (the default).",
    )  # fmt: skip
figure = S.curve_figure(result, result.summary(pooled=True) if pooled else summary, names, measure)
show_figure(figure, key="sanity.curves", name=f"sanity-{mode}-{measure}", config={"displayModeBar": False})
if pooled:
    words = sum(len(row.example.words) for row in result.examples)
    st.caption(f"Spearman's ρ over all {words:,} words pooled; error bars: 95% interval (Fisher's z).")
elif len(result.examples) > 1:
    st.caption("Mean over the examples; error bars: 95% interval (t distribution).")

row_index = 0
if len(result.examples) > 1:
    row_index = live_selectbox(
        "Example shown in the heatmaps", range(len(result.examples)),
        lambda i: f"{i}: {' '.join(result.examples[i].example.words)[:80]}", "sanity.example",
    )  # fmt: skip
row = result.examples[row_index]
st.subheader("Heatmap after each step")
st.caption(
    "One thumbnail per step, each scaled to its own largest |score| (red: for the target class, blue: against). "
    f"Target: {plain(str(selection.label_names[row.target])) if selection.label_names else row.target}."
)
S.step_rows(result, names, row, measure)
with st.expander("Full-size heatmaps of one method, one row per step"):
    full = st.selectbox("Method", list(result.methods), key="sanity.full_method", persist_state="session")
    rows = {name: attributions[full] for name, attributions in zip(names, row.attributions, strict=True)}
    st.caption("Every step on one colour scale (the largest |score| of any step), so a collapse shows.")
    st.html(
        heatmap_html(
            row.example.words, row.example.segment_ids, rows, rationale=row.example.rationale, shared_scale=True
        )
    )

if "head" in names:
    st.subheader("Classifier-head reset (Pham et al. 2022, Table A5)")
    st.caption("Higher is better: a method that explains the classifier should change when its head is re-drawn.")
    table = S.head_table(result, summary, names.index("head"))
    show_table(
        table, key="sanity.head_table", name="sanity-head-reset", hide_index=True, column_config=S.number_columns(table)
    )
with st.expander("Every measure at every step"):
    measures = S.all_measures(summary, names)
    show_table(
        measures, key="sanity.all_measures", name="sanity-all-measures", hide_index=True,
        column_config=S.number_columns(measures),
    )  # fmt: skip
