"""Texts and panels of the Input Marginalization page (Kim et al. 2020, arXiv 2010.13984;
Pham et al. 2022, arXiv 2110.11929): the estimate and cost lines of a run, and the panel of
one word's fill-ins (its expectation, IM and leave-one-out scores, the exact-match warning).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import services
from core.numbers import fixed
from ui.text import plain

HIGH_LIKELIHOOD = 0.8  # Pham et al. 2022: exact-match top-1 fill-ins average 0.82 likelihood on SST


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown time"
    return f"{seconds:.1f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def estimate_line(name: str, estimate: services.CostEstimate, rate: float | None) -> str:
    """The time a run will take, worded as the heatmap page's estimates: "Estimated time for
    **IM**: about 55.5 s (at most 101 classifier forward passes and 10 masked-LM passes, at 2
    passes/s measured on this text)."."""
    passes = services.passes_text(estimate.classifier_passes, estimate.backward_passes, estimate.mlm_passes)
    speed = f", at {rate:,.0f} passes/s measured on this text" if rate else ""
    time = "unknown" if estimate.seconds is None else f"about {duration(estimate.seconds)}"  # no rate measured
    return f"Estimated time for **{name}**: {time} (at most {passes}{speed})."


def cost_line(name: str, attribution) -> str:
    """What a run cost, worded as the method cards' measured line: "Measured for **IM**: 0.52 s,
    76 classifier forward passes and 8 masked-LM passes."."""
    passes = services.passes_text(
        attribution.forward_passes, attribution.backward_passes, attribution.extras.get("mlm_forward_passes", 0)
    )
    return f"Measured for **{name}**: {attribution.runtime_s:.2f} s, {passes}."


NO_LIKELIHOOD = "–"  # the word is not one token of the masked LM's vocabulary


def words_shown(words: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The word table as shown, and its note: the likelihood of the original word at four decimals,
    an en dash where the masked LM has none (the word is several tokens of its vocabulary: it
    showed ``None``)."""
    column = "likelihood of the word"
    missing = words[column].isna()
    if not missing.any():
        return words, ""
    text = [NO_LIKELIHOOD if gone else f"{value:.4f}" for value, gone in zip(words[column], missing, strict=True)]
    note = (
        f"{NO_LIKELIHOOD} (likelihood of the word): the word is not one token of the masked LM's vocabulary, so "
        "it has no likelihood of its own and can never be a fill-in."
    )
    return words.assign(**{column: text}), note


def word_label(example, im, loo, i: int) -> str:
    """Word ``i`` with its IM and leave-one-out scores, which change with the parameters."""
    return f"{i}: {example.words[i]}  (IM {fixed(im.scores[i], 3, True)}, LOO_empty {fixed(loo.scores[i], 3, True)})"


def word_panel(example, im, row: dict, word: int, table: list, output: str) -> None:
    """The numbers behind one word's IM score and whether the masked LM restores it; ``output``
    names the explained output (``services.output_column``)."""
    # Each metric as wide as its label, wrapping onto a second line where the column is narrow: five
    # equal columns cut the labels at 1,024 px with the sidebar open ("Expe…")
    metrics = st.container(horizontal=True, gap="large", key="im.metrics")
    metrics.metric(plain(f"{output} of the input"), f"{im.extras['original_probability']:.4f}", width="content")
    metrics.metric(
        "Expectation E[f]", f"{row['expectation']:.4f}", help="Σ weight × output over the candidates",
        width="content",
    )  # fmt: skip
    metrics.metric("IM score", fixed(row["IM"], 4, signed=True), width="content")
    metrics.metric("LOO_empty score", fixed(row["LOO_empty"], 4, signed=True), width="content")
    metrics.metric(
        f"Top-{len(table)} mass",
        f"{row['candidate mass']:.1%}",
        help=f"The masked LM's likelihood mass on its {len(table)} candidates. Pham et al. 2022: BERT's top-10 hold "
        "81% (SST-2), 90% (e-SNLI), 92% (MultiRC) on average.",
        width="content",
    )
    if row["top-1 = word"]:
        st.markdown(
            f":green-badge[exact match] The masked LM's top-1 fill-in is the original word "
            f"“**{plain(example.words[word])}**”, with likelihood {row['top-1 likelihood']:.4f}."
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
        st.markdown(f"The masked LM's top-1 fill-in is “**{plain(row['MLM top-1'])}**”; {known}.")
    if "cap_reached" in im.extras and im.extras["cap_reached"][word]:
        st.info("More fill-ins than max candidates pass the threshold: the sum is cut at the cap.")
