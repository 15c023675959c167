"""Input Marginalization: each word's IM score next to leave-one-out, the masked LM's fill-ins
behind it, and the counterfactual inputs behind LOO, IM and LIME (Pham et al. 2022, "Double
Trouble").

IM replaces a word with the masked LM's fill-ins and averages the classifier's prediction over
them, so a word the masked LM restores with high likelihood gets a score near zero whatever the
classifier does. This page shows that happen, word by word.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import services
from ui import state
from ui.costs import show_costs
from ui.downloads import show_table
from ui.heatmap import heatmap_html
from ui.live_labels import live_selectbox
from ui.marginalization import cost_line, duration, estimate_line, word_label, word_panel, words_shown
from ui.params import params_form
from ui.prediction import result_markdown
from ui.runs import AUTO_RUN_S, explain_selected, gate
from ui.share import first_read, setting_from_link, setting_to_link
from ui.text import plain

FOUR_PLACES = ("IM", "LOO_empty", "top-1 likelihood", "likelihood of the word", "candidate mass", "expectation")


def approved(name: str, request: list, estimate: services.CostEstimate) -> bool:
    """The Run gate of one method: short runs start at once, a run estimated longer than
    AUTO_RUN_S starts on a click (remembered for this input and these parameters)."""
    short = estimate.seconds is not None and estimate.seconds <= AUTO_RUN_S
    return gate(f"im.run.{name}", request, f"Run {name} (≈ {duration(estimate.seconds)})", auto=short)


def numbers(columns) -> dict:
    return {name: st.column_config.NumberColumn(format="%.4f") for name in columns}


selection = state.current()
st.title("Input Marginalization")
st.caption(
    "Input Marginalization (Kim et al. 2020) replaces each word with a masked language model's fill-ins and "
    "averages the classifier's prediction over them, weighted by their likelihood: "
    "IM = log-odds(f(x)) − log-odds(E[f]), or f(x) − E[f] in probability space (the score space parameter) "
    "and for a regression head's score. Pham et al. 2022 (“Double Trouble”) show that a word the masked LM "
    "can predict gets an IM score near zero, however much the classifier relies on it."
)
if selection.error:
    st.error(selection.error)
    st.stop()
infos = {m.key: m for m in services.methods()}
left, right = st.columns([1, 2])
other_mlm = left.text_input(
    "Masked LM", key="im.mlm", persist_state="session", placeholder=selection.mlm,
    help="Empty: the sidebar's masked LM. Or any fill-mask model: a hub id or a local folder.",
)  # fmt: skip
mlm_name = other_mlm.strip() or selection.mlm
with right.expander("IM parameters"):
    im_params = params_form(infos["im"], "im", link="im_params")
# under the row: in its first column at 1,024 px the label was cut
shared_scale = st.toggle("One colour scale for both rows", value=True, key="im.shared_scale", persist_state="session")

# Leave-one-out first (in IM's score space): cheap (n + 1 passes) and the reference IM is compared
# with. The longer runs' estimates use the classifier's rate timed on this text.
base = explain_selected(selection, ["loo_empty"], {"loo_empty": {"output": im_params["output"]}}, mlm_name)
if "loo_empty" not in base.attributions:
    st.error(plain(base.errors.get("loo_empty", "leave-one-out failed")))
    st.stop()
prediction, target, loo = base.prediction, base.target, base.attributions["loo_empty"]
example, labels = prediction.example, prediction.label_names
rate = services.measured_rate(selection.model, example)
run_base = [selection.model, list(example.segments), target, mlm_name]
st.markdown(result_markdown(prediction, target, selection.threshold))
if prediction.dropped_words:
    st.warning(
        f"The text is too long for {plain(selection.model)}: the last {prediction.dropped_words} words are not explained."
    )
im_estimate = services.estimate_cost("im", len(example.words), im_params, rate)
st.caption(estimate_line("IM", im_estimate, rate))
if not approved("IM", [*run_base, "im", im_params], im_estimate):
    st.stop()
result = explain_selected(selection, ["im"], {"im": im_params}, mlm_name)
if "im" not in result.attributions:
    st.error(plain(f"IM: {result.errors.get('im', 'failed')}"))
    st.stop()
im = result.attributions["im"]
st.caption(f"{cost_line('IM', im)} {cost_line('LOO_empty', loo)}")

st.subheader("IM next to leave-one-out")
rows = {"im": im, "loo_empty": loo}
st.html(heatmap_html(example.words, example.segment_ids, rows, rationale=example.rationale, shared_scale=shared_scale))
word_rows = services.im_word_rows(example, im, loo)
words = pd.DataFrame(word_rows)
shown, unlikely = words_shown(words)
four = numbers(c for c in FOUR_PLACES if shown[c].dtype.kind == "f")  # a column with a dash is text
show_table(words, shown=shown, key="im.words", name="im-words", hide_index=True, column_config=four)
restored = [row for row in word_rows if row["top-1 = word"]]
notes = [unlikely] if unlikely else []
if restored:
    mean_likelihood = sum(row["top-1 likelihood"] for row in restored) / len(restored)
    notes.insert(
        0,
        f"The masked LM restores {len(restored)} of {len(word_rows)} words as its top-1 fill-in "
        f"(mean likelihood {mean_likelihood:.3f}); Pham et al. 2022 report 48.9% of words at 0.823 for BERT on SST-2.",
    )
if notes:
    st.caption(" ".join(notes))

st.subheader("Fill-ins of one word")
n_words = len(example.words)
most_important = max(range(n_words), key=lambda i: abs(float(loo.scores[i])))
shown_for = st.session_state.get("im.word.for")  # what the word was picked on (a tour's step sets none)
if shown_for is not None and shown_for != run_base[:3]:  # another text, model or target: its own top word
    for key in ("im.word", "im.word.kept"):
        st.session_state.pop(key, None)
st.session_state["im.word.for"] = run_base[:3]
setting_from_link("im.word", "word", range(n_words), most_important)


word = live_selectbox(
    "Word", range(n_words), lambda i: word_label(example, im, loo, i), "im.word", most_important,
    help="Preselected: the word leave-one-out finds most important.",
)  # fmt: skip
setting_to_link("word", word, most_important)
table = services.im_candidate_rows(im, word, labels, selection.head)
candidates = pd.DataFrame(table)
config = numbers(("likelihood", "weight", services.output_column(labels[target], selection.head), "contribution"))
show_table(candidates, key="im.candidates", name=f"im-fill-ins-{word}", hide_index=True, column_config=config)
word_panel(example, im, word_rows[word], word, table, services.output_column(labels[target], selection.head))

costs = {"loo_empty": loo, "im": im}
st.subheader("Counterfactual gallery")
st.caption("The perturbed inputs behind each method, with the classifier's prediction on each.")
# LIME runs only while its tab is open (switching tabs reruns the page): it ran for a closed tab.
# Its form is drawn in any case, so its values and the link's LIME parameters stay; a link with
# LIME parameters opens that tab.
if first_read("im.gallery.tab", "lime_params") is not None:
    st.session_state.setdefault("im.gallery.tab", "LIME")
loo_tab, im_tab, lime_tab = st.tabs(
    ["Leave-one-out", "Input Marginalization", "LIME"], key="im.gallery.tab", on_change="rerun"
)
with loo_tab:
    st.caption(f"Each word deleted in turn: {n_words} inputs.")
    gallery = pd.DataFrame(services.loo_counterfactual_rows(selection.model, example, target, labels, selection.head))
    show_table(gallery, key="im.gallery.loo", name="im-gallery-loo", hide_index=True)
with im_tab:
    only_word = st.toggle(
        f"Only the fill-ins of “{plain(example.words[word])}”", key="im.gallery.only_word", persist_state="session"
    )
    gallery_rows = services.im_counterfactual_rows(example, im, labels, selection.head)
    gallery_rows = [r for r in gallery_rows if r["#"] == word] if only_word else gallery_rows
    show_table(pd.DataFrame(gallery_rows), key="im.gallery.im", name="im-gallery-im", hide_index=True)
with lime_tab:
    with st.expander("LIME parameters"):
        lime_params = params_form(infos["lime"], "im", link="lime_params")
    if lime_tab.open:
        lime_estimate = services.estimate_cost("lime", n_words, lime_params, rate)
        st.caption(estimate_line("LIME", lime_estimate, rate))
        if approved("LIME", [*run_base, "lime", lime_params], lime_estimate):
            lime_result = explain_selected(selection, ["lime"], {"lime": lime_params}, mlm_name)
            if "lime" in lime_result.attributions:
                lime = costs["lime"] = lime_result.attributions["lime"]
                st.caption(f"{cost_line('LIME', lime)} Surrogate R² {lime.extras['r2']:.3f}.")
                st.html(
                    heatmap_html(
                        example.words, example.segment_ids, {**rows, "lime": lime}, rationale=example.rationale
                    )
                )
                gallery = pd.DataFrame(services.lime_counterfactual_rows(lime, labels, selection.head))
                show_table(gallery, key="im.gallery.lime", name="im-gallery-lime", hide_index=True)
            else:
                st.error(plain(f"LIME: {lime_result.errors.get('lime', 'failed')}"))

st.subheader("Cost")
show_costs(costs, key="im.costs", name="im-costs")
