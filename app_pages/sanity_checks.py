"""Sanity checks: re-initialise the model layer by layer and watch whether the explanations change.

Cascading and independent randomisation after Adebayo et al. (2018) as the thesis (seed 002,
section 2.7) runs it; the classifier-head reset of paper 000 (Table A5) is the ``head`` step.
"""

from __future__ import annotations

import html
import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import services
from ui import state
from ui.heatmap import colour, heatmap_html, peak
from ui.params import methods_params_form
from ui.runs import SLICE, example_scope, run_or_stop

THESIS_METHODS = ("saliency", "grad_x_input", "integrated_gradients", "attention_mean", "attention_rollout")
MEASURES = {
    "spearman": "Spearman ρ (signed scores)",
    "spearman_abs": "Spearman ρ (absolute scores)",
    "topk_overlap": "top-k overlap",
    "sign_change": "share of words changing sign",
    "mean_abs_change": "mean |change| (method's unit)",
}
# Okabe-Ito: distinguishable with every common colour-vision deficiency.
LINE_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

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
    st.markdown(
        "- Each point compares the explanation of the randomised model with the original one (the first point, "
        "*original*, is 1 by definition). A **faithful method's correlation should fall** as more of the model is "
        "randomised; a curve that stays near 1 means the method does not depend on those weights.\n"
        "- **Cascading** randomises cumulatively, from the top (*head*, *block L*, …) down to the *embeddings*; "
        "**independent** randomises one component at a time and keeps every other weight.\n"
        "- Weights are re-drawn with the model's own initializer; the same seed gives the same random weights in "
        "both modes. The shared model is never modified: every step works on a copy.\n"
        "- Attention scores do not use the classifier head, so they cannot change at the *head* step.\n"
        "- The thesis reports gradient methods near 0 after one or two blocks and attention methods falling "
        "gradually; paper 000 reports, after re-initialising the head, the share of words whose score changes sign "
        "and the mean absolute change (higher is better, table below the curves)."
    )

infos = {m.key: m for m in services.methods()}
if "sanity.methods" not in st.session_state:
    st.session_state["sanity.methods"] = [k for k in THESIS_METHODS if k in infos]
chosen = st.multiselect(
    "Methods",
    list(infos),
    key="sanity.methods",
    help="The thesis uses the gradient and attention methods; perturbation methods work too but cost more per step.",
)
first, second, third, fourth = st.columns(4)
mode = first.segmented_control("Randomisation", ["cascading", "independent"], default="cascading", key="sanity.mode")
mode = mode or "cascading"
seed = int(second.number_input("Seed", min_value=0, value=0, step=1, key="sanity.seed"))
top_k = third.slider("Top-k share of words", 0.05, 1.0, 0.2, 0.05, key="sanity.top_k")
scope, n_examples = example_scope(
    fourth,
    selection,
    "sanity",
    most=50,
    default=10,
    help="The thesis uses 50. Each example's target is its predicted class.",
)
with st.expander("Method parameters"):
    params = methods_params_form(infos, chosen, "sanity")

if not chosen:
    st.info("Choose at least one method.")
    st.stop()
try:
    step_names = services.randomization_steps(selection.model, mode)
    with st.spinner("Timing one step of the run…"):
        timing = services.explain(
            selection.model, selection.example, chosen, target=selection.target, params=params, mlm_name=selection.mlm
        )
except ValueError as error:
    st.error(str(error))
    st.stop()
for key, message in timing.errors.items():
    st.error(f"{key}: {message}")
if timing.errors:
    st.stop()

one_step = sum(a.runtime_s for a in timing.attributions.values())
estimate = one_step * len(step_names) * n_examples
st.markdown(
    f"**Estimated run time: about {estimate:.0f} s** ({len(chosen)} method(s) take {one_step:.2f} s on this example; "
    f"× {len(step_names)} steps: {', '.join(step_names)}; × {n_examples} example(s))."
)

run_key = (selection.model, tuple(chosen), mode, seed, top_k, scope, n_examples, repr(params), repr(selection.example))
if st.button("Run the sanity check", type="primary", key="sanity.run"):
    st.session_state["sanity.requested"] = run_key
if st.session_state.get("sanity.requested") != run_key:
    st.info("Press **Run the sanity check** to start.")
    st.stop()

if scope == SLICE:
    examples = [services.dataset_example(selection.dataset, selection.split, i) for i in range(n_examples)]
    targets = None
else:
    examples = [selection.example]
    targets = None if selection.target is None else [selection.target]
result = run_or_stop(
    services.randomize,
    selection.model,
    examples,
    chosen,
    mode=mode,
    seed=seed,
    targets=targets,
    params=params,
    top_k_fraction=top_k,
    mlm_name=selection.mlm,
)
summary = result.summary()
names = [step.name for step in result.steps]
st.caption(
    f"{len(result.examples)} example(s), {len(names)} steps; {result.runtime_s:.1f} s, "
    f"{result.forward_passes} forward and {result.backward_passes} backward passes."
)

# ------------------------------------------------------------------------------------ curves

measure = st.selectbox("Measure", list(MEASURES), format_func=MEASURES.get, key="sanity.measure")


def curve_figure() -> go.Figure:
    figure = go.Figure()
    for i, method in enumerate(result.methods):
        means = [step[method][measure][0] for step in summary]
        trace = {
            "x": names,
            "y": means,
            "name": method,
            "mode": "lines+markers",
            "line": {"color": LINE_COLOURS[i % len(LINE_COLOURS)]},
            "hovertemplate": f"{method}<br>%{{x}}: %{{y:.3f}}<extra></extra>",
        }
        if len(result.examples) > 1:
            trace["error_y"] = {
                "type": "data",
                "array": [step[method][measure][2] - m for step, m in zip(summary, means)],
                "arrayminus": [m - step[method][measure][1] for step, m in zip(summary, means)],
                "thickness": 1,
            }
        figure.add_trace(go.Scatter(**trace))
    figure.add_hline(y=0, line_dash="dot", line_color="#888")
    correlation = measure in ("spearman", "spearman_abs")
    figure.update_layout(
        height=380,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": "randomised from the top down" if result.mode == "cascading" else "component randomised alone"},
        yaxis={"title": MEASURES[measure], "range": [-1.05, 1.05] if correlation else None},
        legend={"orientation": "h", "y": 1.1},
    )
    if measure in ("topk_overlap", "sign_change"):
        figure.update_yaxes(range=[-0.02, 1.02])
    return figure


st.plotly_chart(curve_figure(), key="sanity.curves", config={"displayModeBar": False})
if len(result.examples) > 1:
    st.caption("Mean over the examples; error bars: 95% interval (t distribution).")

# ------------------------------------------------------------------------------------ thumbnails

row_index = 0
if len(result.examples) > 1:
    row_index = st.selectbox(
        "Example shown in the heatmaps",
        range(len(result.examples)),
        format_func=lambda i: f"{i}: {' '.join(result.examples[i].example.words)[:80]}",
        key="sanity.example",
    )
row = result.examples[row_index]


def thumbnail(title: str, value: float, words, scores) -> str:
    scale = peak(scores)
    spans = "".join(
        f'<span title="{html.escape(f"{word}: {score:+.4g}")}" style="background:{colour(score / scale if scale else 0.0)};'
        f'padding:0 2px;margin:1px;border-radius:2px;display:inline-block">{html.escape(word)}</span>'
        for word, score in zip(words, scores)
    )
    shown = "n/a" if math.isnan(value) else f"{value:+.2f}"
    return (
        '<div class="sanity-thumb" style="flex:0 0 13rem;border:1px solid #ddd;border-radius:4px;padding:4px;'
        'font-size:0.68rem;line-height:1.35">'
        f'<div style="font-weight:600;margin-bottom:2px">{html.escape(title)} '
        f'<span style="font-weight:400;color:#555">{html.escape(MEASURES[measure].split(" (")[0])} {shown}</span></div>'
        f"{spans}</div>"
    )


st.subheader("Heatmap after each step")
st.caption(
    "One thumbnail per step, each scaled to its own largest |score| (red: for the target class, blue: against). "
    f"Target: {selection.label_names[row.target] if selection.label_names else row.target}."
)
words = row.example.words
for method in result.methods:
    cards = "".join(
        thumbnail(name, getattr(similar[method], measure), words, attributions[method].scores)
        for name, attributions, similar in zip(names, row.attributions, row.similarities)
    )
    st.html(
        f'<div style="font-weight:600;margin:0.4rem 0 0.2rem 0">{html.escape(method)}</div>'
        f'<div class="sanity-row" data-method="{html.escape(method)}" style="display:flex;gap:6px;overflow-x:auto">'
        f"{cards}</div>"
    )
with st.expander("Full-size heatmaps of one method, one row per step"):
    full = st.selectbox("Method", list(result.methods), key="sanity.full_method")
    st.html(
        heatmap_html(
            words,
            row.example.segment_ids,
            {name: attributions[full] for name, attributions in zip(names, row.attributions)},
            rationale=row.example.rationale,
        )
    )

# ------------------------------------------------------------------------------------ tables

if "head" in names:
    head = names.index("head")
    st.subheader("Classifier-head reset (paper 000, Table A5)")
    st.caption("Higher is better: a method that explains the classifier should change when its head is re-drawn.")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "method": method,
                    "words changing sign (%)": 100 * summary[head][method]["sign_change"][0],
                    "mean |change|": summary[head][method]["mean_abs_change"][0],
                    "Spearman ρ": summary[head][method]["spearman"][0],
                }
                for method in result.methods
            ]
        ),
        hide_index=True,
        key="sanity.head_table",
    )
with st.expander("Every measure at every step"):
    st.dataframe(
        pd.DataFrame(
            [
                {"step": name, "method": method, **{m: values[m][0] for m in MEASURES}, "n": values["spearman"][3]}
                for name, step in zip(names, summary)
                for method, values in step.items()
            ]
        ),
        hide_index=True,
        key="sanity.all_measures",
    )
