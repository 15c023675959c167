"""Adversarial attacks on explanations: change the ranking, keep the prediction.

The embedding-space attack and constrained objective of the thesis "Assessing the Interpretability
of Large Language Models" (Oxford MSc, 2022, sections 2.3 and 3.5, after Ghorbani et al. 2019), and
a readable masked-LM word-substitution attack; measures: Rank Change, Top-k Sum Change, Probability
Change, Spearman's rho and success.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import services
from ui import adversarial as A
from ui import state
from ui.downloads import show_figure, show_table
from ui.live_labels import live_selectbox
from ui.params import methods_params_form, params_form
from ui.runs import SLICE, example_scope, gate, run_or_stop
from ui.share import methods_from_link, methods_to_link, setting_from_link, setting_to_link
from ui.text import clipped

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
    A.how_to_read()

infos = {m.key: m for m in services.methods()}
first, second, third = st.columns([4, 4, 2])  # at [5, 3, 2] "unconstrained" broke inside the word
setting_from_link("adversarial.attack", "attack", list(A.ATTACKS), "embedding")
attack = first.radio(  # a segmented control needed 438 px of 271 at 1,024 px (573 in the presentation font)
    "Attack", list(A.ATTACKS), format_func=A.ATTACKS.get, key="adversarial.attack", persist_state="session"
)
setting_to_link("attack", attack, "embedding")
objective = "unconstrained"
preset = "quick"
if attack == "embedding":
    objective = second.radio(
        "Objective",
        list(A.OBJECTIVES),
        format_func=A.OBJECTIVES.get,
        key="adversarial.objective",
        persist_state="session",
        horizontal=False,
    )
    preset = third.radio(
        "Steps",
        ["quick", "paper"],
        key="adversarial.preset",
        persist_state="session",
        horizontal=True,
        help="quick: 60 steps (interactive); paper: the thesis's 500 steps, learning rate halved every 200.",
    )
allowed = [k for k, m in infos.items() if attack == "substitution" or m.gradient]
methods_from_link("adversarial.methods", list(infos), [k for k, m in infos.items() if m.gradient])
# The chosen methods the embedding attack cannot take are set aside, not dropped: back on the
# substitution attack they are chosen again.
whole = list(
    dict.fromkeys([*st.session_state["adversarial.methods"], *st.session_state.get("adversarial.methods.aside", [])])
)
st.session_state["adversarial.methods.aside"] = [k for k in whole if k not in allowed]
st.session_state["adversarial.methods"] = [k for k in whole if k in allowed]
chosen = st.multiselect(
    "Methods",
    allowed,
    key="adversarial.methods",
    persist_state="session",
    help="The embedding attack differentiates the explanation, so it takes the gradient methods only.",
)
methods_to_link(chosen)
scope, n_examples = example_scope(
    st,
    selection,
    "adversarial",
    most=64,
    default=4,
    help="The thesis uses 16 per model and dataset. Each example's attacked class is its predicted class.",
)
with st.expander("Attack parameters"):
    attack_params = params_form(services.attack_info(attack, preset), f"adversarial.{preset}", link="attack_params")
    if attack == "embedding":
        attack_params["objective"] = objective
with st.expander("Method parameters"):
    params = methods_params_form(infos, chosen, "adversarial")

if not chosen:
    st.info("Choose at least one method.")
    st.stop()
examples = (
    services.slice_examples(selection.dataset, selection.split, n_examples) if scope == SLICE else [selection.example]
)

try:
    seconds = services.estimate_attack(selection.model, examples, chosen, attack, attack_params, preset, params)
    estimate = f" Estimated time: about {services.duration_text(seconds)} on this machine, less if it stops early."
except ValueError:  # the model cannot take the example: the run says why
    estimate = ""
st.caption(
    f"{len(chosen)} method(s) × {len(examples)} example(s); cost: {A.cost_text(attack, attack_params)}.{estimate}"
)
request = [selection.model, chosen, attack, attack_params, preset, scope, n_examples, params, repr(selection.example),
           selection.mlm]  # fmt: skip
if not gate("adversarial.run", request, "Run the attack", memory="adversarial.requested"):
    st.stop()
results = run_or_stop(
    services.attack, selection.model, examples, chosen, attack=attack, attack_params=attack_params, preset=preset,
    params=params, mlm_name=selection.mlm,
)  # fmt: skip
runs = [r for per_example in results for r in per_example.values()]
st.caption(
    f"{len(results)} example(s) × {len(chosen)} method(s): {sum(r.runtime_s for r in runs):.1f} s, "
    f"{sum(r.forward_passes for r in runs):,} forward and {sum(r.backward_passes for r in runs):,} backward passes"
    + (f", {sum(r.mlm_forward_passes for r in runs):,} masked-LM passes" if attack == "substitution" else "")
    + "."
)


def label(index: int) -> str:
    return selection.label_names[index] if selection.label_names else str(index)


index = 0
if len(results) > 1:
    summary = services.attack_summary(results)
    st.subheader("Mean over the examples")
    rows = A.summary_rows(summary, selection.head)
    summary_frame = pd.DataFrame(rows)
    show_table(
        summary_frame, key="adversarial.summary", name="adversarial-summary", hide_index=True,
        shown=A.shown_measures(summary_frame, selection.head),
        column_config=A.measure_columns(selection.head),
    )  # fmt: skip
    st.caption("Fragility rank 1: the method whose top-k ranking the attack changed most (highest mean Rank Change).")
    show_figure(
        A.rank_change_figure(rows, summary), key="adversarial.bars", name="adversarial-rank-change",
        config={"displayModeBar": False},
    )  # fmt: skip
    st.caption("Error bars: 95% interval (t distribution).")
    index = live_selectbox(
        "Example shown below",
        range(len(results)),
        lambda i: f"{i}: {clipped(' '.join(examples[i].words), 50)}",
        "adversarial.example",
    )
    per_example = [
        {"example": i, **row} for i, per in enumerate(results) for row in A.measure_rows(per, label, selection.head)
    ]
    per_example_frame = pd.DataFrame(per_example)
    show_table(
        per_example_frame, key="adversarial.per_example", name="adversarial-per-example", hide_index=True,
        shown=A.shown_measures(per_example_frame, selection.head),
        column_config=A.measure_columns(selection.head),
    )  # fmt: skip

st.subheader("Measures")
measures = pd.DataFrame(A.measure_rows(results[index], label, selection.head))
show_table(
    measures, key="adversarial.measures", name="adversarial-measures", hide_index=True,
    shown=A.shown_measures(measures, selection.head),
    column_config=A.measure_columns(selection.head),
)  # fmt: skip
if attack == "embedding":
    with st.expander("Optimisation trace"):
        show_figure(
            A.trace_figure(results[index], selection.head), key="adversarial.trace", name="adversarial-trace",
            config={"displayModeBar": False},
        )  # fmt: skip
st.subheader("Original and attacked explanations")
A.show_example(results[index], label, selection.head)
