"""The Methods page's cards: one per registered method, built from the registry (paper, family,
parameters, cost model, capability flags) and the hand-written notes of ``ui.method_notes``
(formula, what it computes, pitfalls); a method without a note gets a generic card whose
pitfalls follow from its flags. Each card ends with a live mini-heatmap on a short sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

import services
from ui.heatmap import heatmap_html
from ui.method_notes import NOTATION, NOTES
from ui.runs import run_or_stop
from ui.text import plain

SENTENCE = "A gorgeous, witty and seductive movie."
GENERIC_FORMULA = r"s_i = \text{the score of word } i \text{ for class } c"
_FLAG_PITFALLS = {
    "gradient": "A gradient method sees the model only around the input: scores describe infinitesimal changes "
    "of the embeddings, not removing words.",
    "sampling": "It samples perturbed inputs: another seed or fewer samples can reorder close words.",
    "needs_mlm": "It depends on the masked language model: a word the masked LM restores is not really removed.",
    "mask_optimiser": "It optimises a mask: another seed or budget can end in another optimum.",
}


@dataclass(frozen=True)
class Card:
    key: str
    family: str
    description: str
    paper: str
    formula: str
    computes: str
    pitfalls: tuple[str, ...]
    fields: tuple[services.ParamField, ...]
    cost: str
    mask_optimiser: bool
    written: bool  # False: the generic card (no hand-written note for this method yet)


def card(info: services.MethodInfo, n_words: int) -> Card:
    """The card of ``info``; ``n_words`` is the length its cost model is evaluated at."""
    note = NOTES.get(info.key)
    flags = {"gradient": info.gradient, "sampling": info.sampling, "needs_mlm": info.needs_mlm}
    flags["mask_optimiser"] = info.mask_optimiser
    generic = tuple(text for flag, text in _FLAG_PITFALLS.items() if flags[flag])
    model = services.cost_model(info.key, n_words)
    return Card(
        key=info.key,
        family=info.family,
        description=info.description,
        paper=info.paper,
        formula=note.formula if note else GENERIC_FORMULA,
        computes=note.computes if note else info.description[:1].upper() + info.description[1:] + ".",
        pitfalls=note.pitfalls if note else generic or ("No known pitfalls written down for this method yet.",),
        fields=info.fields,
        cost=f"{model[:1].upper()}{model[1:]}.",
        mask_optimiser=info.mask_optimiser,
        written=note is not None,
    )


def parameter_rows(fields: tuple[services.ParamField, ...]) -> list[dict[str, str]]:
    rows = []
    for f in fields:
        allowed = ", ".join(map(str, f.choices)) if f.choices else ""
        if not allowed and (f.min is not None or f.max is not None):
            low, high = ("" if v is None else f"{v:g}" for v in (f.min, f.max))
            allowed = f"{low} … {high}".strip()
        rows.append({"parameter": f.name, "default": str(f.default), "allowed": allowed, "what it does": f.help})
    return rows


def render(found: Card, model: str) -> None:
    """The card, with the live mini-heatmap of ``model`` on ``SENTENCE`` (a mask optimiser waits for
    a click: it takes seconds to minutes; its result then stays for the session)."""
    with st.container(border=True, key=f"methods.card.{found.key}"):
        st.subheader(found.key)
        st.caption(f"{found.family} · {found.paper}")
        st.latex(found.formula)
        if found.written:
            st.caption(NOTATION)
        st.markdown(found.computes)
        if not found.written:
            st.caption("A generic card: this method has no hand-written formula and pitfalls yet.")
        st.markdown(f"**Cost.** {found.cost}")
        if found.fields:
            st.dataframe(pd.DataFrame(parameter_rows(found.fields)), hide_index=True, key=f"methods.params.{found.key}")
        else:
            st.markdown("**Parameters.** None.")
        st.markdown("**Pitfalls**\n" + "\n".join(f"- {p}" for p in found.pitfalls))
        example = services.free_text_example(SENTENCE, "")
        shown = f"methods.live_shown.{found.key}.{model}"  # once run, the result stays on later reruns (cached)
        if found.mask_optimiser and not (
            st.button("Run it live", key=f"methods.live.{found.key}") or st.session_state.get(shown)
        ):
            return
        st.session_state[shown] = True
        result = run_or_stop(services.explain, model, example, [found.key])
        if found.key in result.errors:
            st.error(plain(f"{found.key}: {result.errors[found.key]}"))
            return
        attribution = result.attributions[found.key]
        explained = result.prediction.label_names[result.target]
        st.markdown(f"**Live on “{SENTENCE}”** ({plain(model)}, explaining {plain(explained)})")
        words = result.prediction.example
        st.html(heatmap_html(words.words, words.segment_ids, result.attributions))
        passes = services.passes_text(
            attribution.forward_passes, attribution.backward_passes, attribution.extras.get("mlm_forward_passes", 0)
        )
        st.caption(f"Measured: {attribution.runtime_s:.2f} s, {passes}.")
