"""Input Marginalization: each word's IM score next to leave-one-out, the masked LM's fill-ins
behind it, and the counterfactual inputs behind LOO, IM and LIME (paper 000, "Double Trouble").

IM replaces a word with the masked LM's fill-ins and averages the classifier's prediction over
them, so a word the masked LM restores with high likelihood gets a score near zero whatever the
classifier does. This page shows that happen, word by word.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import streamlit as st

import services
from ui import state
from ui.heatmap import cost_rows, heatmap_html
from ui.params import params_form
from ui.runs import explain_selected

AUTO_RUN_S = 20.0  # runs estimated longer than this wait for a click
HIGH_LIKELIHOOD = 0.8  # paper 000: exact-match top-1 fill-ins average 0.82 likelihood on SST
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")


def plain(text: str) -> str:
    """Text shown literally inside markdown (markdown and HTML characters escaped)."""
    return _MARKDOWN.sub(r"\\\1", text)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown time"
    return f"{seconds:.1f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def approved(name: str, run_key: str, estimate: services.CostEstimate) -> bool:
    """Short runs start at once; a run estimated longer than AUTO_RUN_S starts on a click
    (remembered for this input and these parameters)."""
    accepted = st.session_state.setdefault("im.approved", set())
    if run_key in accepted or (estimate.seconds is not None and estimate.seconds <= AUTO_RUN_S):
        return True
    if st.button(f"Run {name} (≈ {duration(estimate.seconds)})", key=f"im.run.{name}", type="primary"):
        accepted.add(run_key)
        return True
    return False


def estimate_line(name: str, estimate: services.CostEstimate, rate: float | None) -> str:
    mlm = f"{estimate.mlm_passes:,} masked-LM + " if estimate.mlm_passes else ""
    speed = f" at {rate:,.0f} passes/s (measured on leave-one-out)" if rate else ""
    return (
        f"{name} needs {mlm}at most {estimate.classifier_passes:,} classifier forward passes: "
        f"about {duration(estimate.seconds)}{speed}."
    )


def cost_line(name: str, attribution) -> str:
    mlm = attribution.extras.get("mlm_forward_passes", 0)
    return (
        f"{name}: {attribution.runtime_s:.2f} s, {attribution.forward_passes:,} classifier"
        + (f" + {mlm:,} masked-LM" if mlm else "")
        + " forward passes."
    )


selection = state.current()
st.title("Input Marginalization")
st.caption(
    "Input Marginalization (Kim et al. 2020) replaces each word with a masked language model's fill-ins and "
    "averages the classifier's prediction over them, weighted by their likelihood: "
    "IM = log-odds(f(x)) − log-odds(E[f]). Paper 000 (“Double Trouble”) shows that a word the masked LM "
    "can predict gets an IM score near zero, however much the classifier relies on it."
)
if selection.error:
    st.error(selection.error)
    st.stop()

infos = {m.key: m for m in services.methods()}
left, right = st.columns([1, 2])
other_mlm = left.text_input(
    "Masked LM",
    key="im.mlm",
    placeholder=selection.mlm,
    help="Empty: the sidebar's masked LM. Or any fill-mask model: a hub id or a local folder.",
)
mlm_name = other_mlm.strip() or selection.mlm
shared_scale = left.toggle("One colour scale for both rows", value=True, key="im.shared_scale")
with right.expander("IM parameters"):
    im_params = params_form(infos["im"], "im")

# Leave-one-out first (in IM's score space): cheap (n + 1 passes), the reference IM is compared
# with, and its speed calibrates the estimates of the longer runs.
base = explain_selected(selection, ["loo_empty"], {"loo_empty": {"output": im_params["output"]}}, mlm_name)
if "loo_empty" not in base.attributions:
    st.error(base.errors.get("loo_empty", "leave-one-out failed"))
    st.stop()
prediction = base.prediction
example = prediction.example
labels = prediction.label_names
target = base.target
loo = base.attributions["loo_empty"]
rate = services.passes_per_second(loo)
run_base = [selection.model, list(example.segments), target, mlm_name]

predicted = prediction.predicted
st.markdown(
    f"**Predicted:** {plain(labels[predicted])} ({prediction.probabilities[predicted]:.1%}) · "
    f"**Explaining:** {plain(labels[target])} ({prediction.probabilities[target]:.1%})"
)
if prediction.dropped_words:
    st.warning(
        f"The text is too long for {plain(selection.model)}: the last {prediction.dropped_words} words are not explained."
    )

im_estimate = services.estimate_cost("im", len(example.words), im_params, rate)
st.caption(estimate_line("IM", im_estimate, rate))
if not approved("IM", json.dumps(run_base + ["im", im_params], default=str), im_estimate):
    st.stop()
result = explain_selected(selection, ["im"], {"im": im_params}, mlm_name)
if "im" not in result.attributions:
    st.error(f"IM: {result.errors.get('im', 'failed')}")
    st.stop()
im = result.attributions["im"]
st.caption(f"{cost_line('IM', im)} {cost_line('Leave-one-out', loo)}")

# --------------------------------------------------------------------------- words side by side

st.subheader("IM next to leave-one-out")
st.html(
    heatmap_html(
        example.words,
        example.segment_ids,
        {"im": im, "loo_empty": loo},
        rationale=example.rationale,
        shared_scale=shared_scale,
    )
)
word_rows = services.im_word_rows(example, im, loo)
st.dataframe(
    pd.DataFrame(word_rows),
    hide_index=True,
    key="im.words",
    column_config={
        name: st.column_config.NumberColumn(format="%.4f")
        for name in ("IM", "LOO_empty", "top-1 likelihood", "likelihood of the word", "candidate mass", "expectation")
    },
)
restored = [row for row in word_rows if row["top-1 = word"]]
if restored:
    mean_likelihood = sum(row["top-1 likelihood"] for row in restored) / len(restored)
    st.caption(
        f"The masked LM restores {len(restored)} of {len(word_rows)} words as its top-1 fill-in "
        f"(mean likelihood {mean_likelihood:.3f}); paper 000 reports 48.9% of words at 0.823 for BERT on SST-2."
    )

# --------------------------------------------------------------------------- one word's candidates

st.subheader("Fill-ins of one word")
n_words = len(example.words)
if st.session_state.get("im.word") not in range(n_words):
    st.session_state["im.word"] = max(range(n_words), key=lambda i: abs(float(loo.scores[i])))
word = st.selectbox(
    "Word",
    list(range(n_words)),
    key="im.word",
    format_func=lambda i: f"{i}: {example.words[i]}  (IM {im.scores[i]:+.3f}, LOO {loo.scores[i]:+.3f})",
    help="Preselected: the word leave-one-out finds most important.",
)
row = word_rows[word]
table = services.im_candidate_rows(im, word, labels)
st.dataframe(
    pd.DataFrame(table),
    hide_index=True,
    key="im.candidates",
    column_config={
        name: st.column_config.NumberColumn(format="%.4f")
        for name in ("likelihood", "weight", f"P({labels[target]})", "contribution")
    },
)
columns = st.columns(5)
columns[0].metric(f"P({labels[target]}) of the input", f"{im.extras['original_probability']:.4f}")
columns[1].metric("Expectation E[f]", f"{row['expectation']:.4f}", help="Σ weight × probability over the candidates")
columns[2].metric("IM score", f"{row['IM']:+.4f}")
columns[3].metric("LOO_empty score", f"{row['LOO_empty']:+.4f}")
columns[4].metric(
    f"Likelihood mass of the {len(table)} candidates",
    f"{row['candidate mass']:.1%}",
    help="Paper 000: BERT's top-10 hold 81% (SST-2), 90% (e-SNLI), 92% (MultiRC) on average.",
)
if row["top-1 = word"]:
    st.markdown(
        f":green-badge[exact match] The masked LM's top-1 fill-in is the original word "
        f"**{plain(example.words[word])}**, with likelihood {row['top-1 likelihood']:.4f}."
    )
    if row["top-1 likelihood"] >= HIGH_LIKELIHOOD:
        p = row["top-1 likelihood"]
        st.warning(
            f"The masked LM restores this word with likelihood {p:.2f} ≥ {HIGH_LIKELIHOOD}: IM is bounded near "
            f"zero for it whatever the classifier does (in probability space |f(x) − E[f]| ≤ 1 − p = {1 - p:.2f})."
        )
else:
    original = row["likelihood of the word"]
    known = (
        f"the original word has likelihood {original:.4f}"
        if original is not None
        else "the original word is not one token of its vocabulary"
    )
    st.markdown(f"The masked LM's top-1 fill-in is **{plain(row['MLM top-1'])}**; {known}.")
if "cap_reached" in im.extras and im.extras["cap_reached"][word]:
    st.info("More fill-ins than max candidates pass the threshold: the sum is cut at the cap.")

# --------------------------------------------------------------------------- counterfactual gallery

costs = {"loo_empty": loo, "im": im}
st.subheader("Counterfactual gallery")
st.caption("The perturbed inputs behind each method, with the classifier's prediction on each.")
loo_tab, im_tab, lime_tab = st.tabs(["Leave-one-out", "Input Marginalization", "LIME"])
with loo_tab:
    st.caption(f"Each word deleted in turn: {n_words} inputs.")
    st.dataframe(
        pd.DataFrame(services.loo_counterfactual_rows(selection.model, example, target, labels)),
        hide_index=True,
        key="im.gallery.loo",
    )
with im_tab:
    only_word = st.toggle(f"Only the fill-ins of “{example.words[word]}”", key="im.gallery.only_word")
    rows = services.im_counterfactual_rows(example, im, labels)
    if only_word:
        rows = [r for r in rows if r["#"] == word]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="im.gallery.im")
with lime_tab:
    with st.expander("LIME parameters"):
        lime_params = params_form(infos["lime"], "im")
    lime_estimate = services.estimate_cost("lime", n_words, lime_params, rate)
    st.caption(estimate_line("LIME", lime_estimate, rate))
    if approved("LIME", json.dumps(run_base + ["lime", lime_params], default=str), lime_estimate):
        lime_result = explain_selected(selection, ["lime"], {"lime": lime_params}, mlm_name)
        if "lime" in lime_result.attributions:
            lime = costs["lime"] = lime_result.attributions["lime"]
            st.caption(f"{cost_line('LIME', lime)} Surrogate R² {lime.extras['r2']:.3f}.")
            st.html(
                heatmap_html(
                    example.words,
                    example.segment_ids,
                    {"im": im, "loo_empty": loo, "lime": lime},
                    rationale=example.rationale,
                )
            )
            st.dataframe(
                pd.DataFrame(services.lime_counterfactual_rows(lime, labels)), hide_index=True, key="im.gallery.lime"
            )
        else:
            st.error(f"LIME: {lime_result.errors.get('lime', 'failed')}")

st.subheader("Cost")
st.dataframe(pd.DataFrame(cost_rows(costs)), hide_index=True, key="im.costs")
