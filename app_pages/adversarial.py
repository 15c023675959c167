"""Adversarial attacks on explanations: change the ranking, keep the prediction.

The thesis's embedding-space attack and its constrained objective (seed 002, sections 2.3 and
3.5, after Ghorbani et al. 2019), and a readable masked-LM word-substitution attack; measures:
Rank Change, Top-k Sum Change, Probability Change, Spearman's rho and success.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import services
from ui import state
from ui.heatmap import heatmap_html
from ui.params import methods_params_form, params_form
from ui.runs import SLICE, example_scope, run_or_stop

ATTACKS = {
    "embedding": "embedding perturbation (thesis)",
    "substitution": "word substitution (masked LM)",
}
OBJECTIVES = {
    "unconstrained": "unconstrained: keep the class",
    "constrained": "constrained: also keep the probability",
}
# Okabe-Ito: distinguishable with every common colour-vision deficiency.
LINE_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_MARK = "background:#fff3b0;border-bottom:2px solid #d55e00;font-weight:600;padding:0 2px;border-radius:2px;"
_TOP = "border:2px solid #1b1b1b;padding:0 2px;border-radius:3px;"

selection = state.current()
st.title("Adversarial attacks on explanations")
st.caption(
    "Perturb the input a little so that the prediction stays but the words the explanation ranked highest fall "
    "down the ranking. A method whose ranking moves easily is fragile."
)
if selection.error:
    st.error(selection.error)
    st.stop()

with st.expander("How to read this page", expanded=False):
    st.markdown(
        "- **Embedding perturbation** (the thesis's attack): a perturbation of each word's input embedding, at most "
        "ε per coordinate, found by gradient ascent on *minus the attacked explanation's scores of the original "
        "top-k words* (k = 15% of the words, rounded down, at least 1). **Unconstrained** rejects any step that "
        "changes the predicted class; **constrained** (the thesis's objective) subtracts the squared change of the "
        "predicted class's probability. Only the gradient methods are differentiable and can be attacked this way. "
        "The attacked text shows each perturbed word as its nearest vocabulary word (cosine similarity): the text "
        "the perturbation is closest to, not the model's real input.\n"
        "- **Word substitution**: replaces up to a budget of words, never the original top-k words, by the masked "
        "LM's fill-ins, keeping the class and the probability within a tolerance, and keeps the substitutions that "
        "push the top-k words furthest down. Every method can be attacked; perturbation methods cost more.\n"
        "- **Rank Change**: share of the k top positions holding another word afterwards (higher: more fragile). "
        "**Top-k Sum Change**: drop of the scores at the original top-k words, in the method's own unit (not "
        "comparable across methods). **Probability Change**: original minus attacked probability of the predicted "
        "class (near 0: a fair attack). **Success**: the class is kept and at least one top-k position changed.\n"
        "- The thesis reports Rank Change above 40% (often 80–100%) for all three gradient methods, and the "
        "constrained objective keeping the probability change near 0. The *paper* preset uses its 500 steps; "
        "*quick* runs 60 steps for interactive use."
    )

infos = {m.key: m for m in services.methods()}
first, second, third = st.columns(3)
attack = (
    first.segmented_control(
        "Attack", list(ATTACKS), format_func=ATTACKS.get, default="embedding", key="adversarial.attack"
    )
    or "embedding"
)
objective = "unconstrained"
preset = "quick"
if attack == "embedding":
    objective = second.radio(
        "Objective", list(OBJECTIVES), format_func=OBJECTIVES.get, key="adversarial.objective", horizontal=False
    )
    preset = third.radio(
        "Steps",
        ["quick", "paper"],
        key="adversarial.preset",
        horizontal=True,
        help="quick: 60 steps (interactive); paper: the thesis's 500 steps, learning rate halved every 200.",
    )
allowed = [k for k, m in infos.items() if attack == "substitution" or m.gradient]
if "adversarial.methods" not in st.session_state:
    st.session_state["adversarial.methods"] = [k for k, m in infos.items() if m.gradient]
st.session_state["adversarial.methods"] = [k for k in st.session_state["adversarial.methods"] if k in allowed]
chosen = st.multiselect(
    "Methods",
    allowed,
    key="adversarial.methods",
    help="The embedding attack differentiates the explanation, so it takes the gradient methods only.",
)
scope, n_examples = example_scope(
    st,
    selection,
    "adversarial",
    most=64,
    default=4,
    help="The thesis uses 16 per model and dataset. Each example's attacked class is its predicted class.",
)
with st.expander("Attack parameters"):
    attack_params = params_form(services.attack_info(attack, preset), f"adversarial.{preset}")
    if attack == "embedding":
        attack_params["objective"] = objective
with st.expander("Method parameters"):
    params = methods_params_form(infos, chosen, "adversarial")

if not chosen:
    st.info("Choose at least one method.")
    st.stop()
if scope == SLICE:
    examples = [services.dataset_example(selection.dataset, selection.split, i) for i in range(n_examples)]
else:
    examples = [selection.example]

steps = attack_params.get("steps")
cost = (
    f"about {steps} forward and backward passes per method and example (integrated gradients: × its attack-time "
    f"steps {attack_params.get('ig_n_steps')})"
    if attack == "embedding"
    else f"one explanation per candidate text: up to {attack_params.get('budget')} rounds × the words × "
    f"{attack_params.get('n_candidates')} fill-ins"
)
st.caption(f"{len(chosen)} method(s) × {len(examples)} example(s); cost: {cost}.")
run_key = (
    selection.model,
    tuple(chosen),
    attack,
    repr(attack_params),
    preset,
    scope,
    n_examples,
    repr(params),
    repr(selection.example),
    selection.mlm,
)
if st.button("Run the attack", type="primary", key="adversarial.run"):
    st.session_state["adversarial.requested"] = run_key
if st.session_state.get("adversarial.requested") != run_key:
    st.info("Press **Run the attack** to start.")
    st.stop()

results = run_or_stop(
    services.attack,
    selection.model,
    examples,
    chosen,
    attack=attack,
    attack_params=attack_params,
    preset=preset,
    params=params,
    mlm_name=selection.mlm,
)
runs = [r for per_example in results for r in per_example.values()]
st.caption(
    f"{len(results)} example(s) × {len(chosen)} method(s): {sum(r.runtime_s for r in runs):.1f} s, "
    f"{sum(r.forward_passes for r in runs)} forward and {sum(r.backward_passes for r in runs)} backward passes"
    + (f", {sum(r.mlm_forward_passes for r in runs)} masked-LM passes" if attack == "substitution" else "")
    + "."
)


def label(index: int) -> str:
    return selection.label_names[index] if selection.label_names else str(index)


def measure_rows(per_method: dict) -> list[dict]:
    rows = []
    for method, result in per_method.items():
        measures = result.measures()
        rows.append(
            {
                "method": method,
                "Rank Change": measures["rank_change"],
                "Top-k Sum Change": measures["topk_sum_change"],
                "Probability Change": measures["probability_change"],
                "Spearman ρ": measures["spearman"],
                "success": measures["success"],
                "k": result.k,
                "class": label(result.target),
                "p before": result.original_probabilities[result.target],
                "p after": result.attacked_probabilities[result.target],
                "class after": label(result.attacked_predicted),
                "steps": result.steps,
                "runtime (s)": round(result.runtime_s, 2),
                "forward passes": result.forward_passes,
                "backward passes": result.backward_passes,
            }
        )
    return rows


def text_html(words: Sequence[str], marked: Sequence[bool], style: str, title: str) -> str:
    """The words as plain escaped text, the marked ones highlighted."""
    spans = " ".join(
        f'<span style="{style}" title="{html.escape(title)}">{html.escape(w)}</span>' if m else html.escape(w)
        for w, m in zip(words, marked)
    )
    return f'<div class="adv-text" style="font-size:1.05rem;line-height:1.9;margin:0.2rem 0">{spans}</div>'


def show_example(per_method: dict) -> None:
    """Per method: original text and heatmap, then attacked text (changes marked) and heatmap."""
    for method, result in per_method.items():
        example_words = result.original.words
        segment_ids = result.example.segment_ids
        st.markdown(f"#### {method}")
        measures = result.measures()
        rho = "n/a" if measures["spearman"] is None else f"{measures['spearman']:+.2f}"
        st.caption(
            f"Rank Change {measures['rank_change']:.0%} · Top-k Sum Change {measures['topk_sum_change']:+.3g} · "
            f"Probability Change {measures['probability_change']:+.4f} · Spearman ρ {rho} · "
            f"{'success' if measures['success'] else 'no success'} · k = {result.k} · "
            f"{result.runtime_s:.1f} s, {result.forward_passes} forward / {result.backward_passes} backward passes"
        )
        top = set(result.top_k)
        st.markdown(
            f"**Original** — {label(result.target)} p = {result.original_probabilities[result.target]:.3f}; "
            "outlined: the top-k words under attack"
        )
        st.html(text_html(example_words, [i in top for i in range(len(example_words))], _TOP, "original top-k word"))
        st.html(heatmap_html(example_words, segment_ids, {"original": result.original}))
        note = (
            "nearest vocabulary words of the perturbed embeddings"
            if result.attack == "embedding"
            else "substituted words"
        )
        st.markdown(
            f"**Attacked** — {label(result.attacked_predicted)} p = {result.attacked_probabilities[result.target]:.3f}; "
            f"marked: {note}"
        )
        st.html(text_html(result.attacked.words, result.changed, _MARK, "changed by the attack"))
        st.html(heatmap_html(result.attacked.words, segment_ids, {"attacked": result.attacked}))


def trace_figure(per_method: dict) -> go.Figure:
    figure = go.Figure()
    for i, (method, result) in enumerate(per_method.items()):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        for series, dash in (("distance", "solid"), ("probability", "dot")):
            values = result.trace.get(series, ())
            figure.add_trace(
                go.Scatter(
                    y=list(values),
                    name=f"{method}: {series}",
                    mode="lines",
                    line={"color": colour, "dash": dash},
                    yaxis="y2" if series == "probability" else "y",
                )
            )
    figure.update_layout(
        height=320,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": "evaluated step"},
        yaxis={"title": "attack distance D (solid)"},
        yaxis2={"title": "predicted-class probability (dotted)", "overlaying": "y", "side": "right", "range": [0, 1]},
        legend={"orientation": "h", "y": 1.15},
    )
    return figure


if len(results) > 1:
    summary = services.attack_summary(results)
    st.subheader("Mean over the examples")
    rows = []
    for method in sorted(summary, key=lambda m: summary[m]["fragility_rank"]):
        row = summary[method]
        rows.append(
            {
                "fragility rank": row["fragility_rank"],
                "method": method,
                "Rank Change": row["rank_change"]["mean"],
                "Top-k Sum Change": row["topk_sum_change"]["mean"],
                "Probability Change": row["probability_change"]["mean"],
                "|Probability Change|": row["abs_probability_change"],
                "Spearman ρ": row["spearman"]["mean"],
                "success rate": row["success_rate"],
                "n": row["n"],
                "runtime (s)": round(row["runtime_s"], 1),
                "forward passes": row["forward_passes"],
            }
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="adversarial.summary")
    st.caption("Fragility rank 1: the method whose top-k ranking the attack changed most (highest mean Rank Change).")
    bars = go.Figure(
        go.Bar(
            x=[r["method"] for r in rows],
            y=[r["Rank Change"] for r in rows],
            error_y={
                "type": "data",
                "array": [(summary[r["method"]]["rank_change"]["high"] or 0) - (r["Rank Change"] or 0) for r in rows],
                "arrayminus": [
                    (r["Rank Change"] or 0) - (summary[r["method"]]["rank_change"]["low"] or 0) for r in rows
                ],
            },
            marker_color=LINE_COLOURS[0],
        )
    )
    bars.add_hline(y=0.4, line_dash="dot", line_color="#888", annotation_text="thesis: lowest value above 40%")
    bars.update_layout(
        height=300, margin={"l": 10, "r": 10, "t": 30, "b": 10}, yaxis={"title": "mean Rank Change", "range": [0, 1.05]}
    )
    st.plotly_chart(bars, key="adversarial.bars", config={"displayModeBar": False})
    st.caption("Error bars: 95% interval (t distribution).")
    index = st.selectbox(
        "Example shown below",
        range(len(results)),
        format_func=lambda i: f"{i}: {' '.join(examples[i].words)[:80]}",
        key="adversarial.example",
    )
    st.dataframe(
        pd.DataFrame([{"example": i, **row} for i, per in enumerate(results) for row in measure_rows(per)]),
        hide_index=True,
        key="adversarial.per_example",
    )
else:
    index = 0

st.subheader("Measures")
st.dataframe(pd.DataFrame(measure_rows(results[index])), hide_index=True, key="adversarial.measures")
if attack == "embedding":
    with st.expander("Optimisation trace"):
        st.plotly_chart(trace_figure(results[index]), key="adversarial.trace", config={"displayModeBar": False})
st.subheader("Original and attacked explanations")
show_example(results[index])
