"""The rows of the Input Marginalization page's word, candidate and counterfactual tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from core.perturb import removal_variant, replaced_segments, sample_text
from core.types import Attribution, Example
from services import models, store


def output_column(label: str, head: str) -> str:
    """The column of the explained output: a probability ``P(label)``, or a regression head's
    score ``f(label)``."""
    return f"f({label})" if head == "regression" else f"P({label})"


def im_word_rows(example: Example, im: Attribution, loo: Attribution) -> list[dict[str, Any]]:
    """One row per word: IM and leave-one-out scores and what the masked LM made of the word."""
    extras = im.extras
    return [
        {
            "#": i,
            "word": word,
            "IM": float(im.scores[i]),
            "LOO_empty": float(loo.scores[i]),
            "MLM top-1": extras["top1"][i],
            "top-1 likelihood": extras["top1_likelihood"][i],
            "top-1 = word": extras["top1_is_original"][i],
            "likelihood of the word": extras["original_likelihood"][i],
            "candidate mass": extras["mass"][i],
            "expectation": extras["expectations"][i],
        }
        for i, word in enumerate(example.words)
    ]


def im_candidate_rows(
    im: Attribution, word: int, label_names: tuple[str, ...], head: str = "single_label"
) -> list[dict[str, Any]]:
    """The candidate table of one word: fill-in, likelihood, the explained output with it in
    place, its weight and weighted contribution to the expectation, and the class the model
    predicts (none for a regression head)."""
    rows = []
    for rank, row in enumerate(im.extras["candidates"][word], start=1):
        shown = {
            "rank": rank,
            "fill-in": row["text"],
            "original word": row["is_original"],
            "likelihood": row["likelihood"],
            "weight": row["weight"],
            output_column(label_names[im.target], head): row["probability"],
            "contribution": row["contribution"],
        }
        rows.append(shown if head == "regression" else {**shown, "predicted": label_names[row["predicted"]]})
    return rows


def _counterfactual(
    where: dict[str, Any],
    text: str,
    probabilities: Sequence[float],
    target: int,
    label_names: tuple[str, ...],
    head: str,
) -> dict[str, Any]:
    """One perturbed input, the class the model predicts on it (not for a regression head's score)
    and the explained output."""
    row = {**where, "counterfactual": text}
    if head != "regression":
        predicted = max(range(len(probabilities)), key=probabilities.__getitem__)
        row |= {"predicted": label_names[predicted], "P(predicted)": float(probabilities[predicted])}
    return row | {output_column(label_names[target], head): float(probabilities[target])}


def im_counterfactual_rows(
    example: Example, im: Attribution, label_names: tuple[str, ...], head: str = "single_label"
) -> list[dict[str, Any]]:
    """Every input IM scored: one word replaced by one of its fill-ins."""
    return [
        _counterfactual(
            {"#": i, "word": example.words[i], "fill-in": row["text"], "likelihood": row["likelihood"]},
            sample_text(replaced_segments(example, {i: row["text"]})),
            row["probabilities"],
            im.target,
            label_names,
            head,
        )
        for i, table in enumerate(im.extras["candidates"])
        for row in table
    ]


def lime_counterfactual_rows(
    lime: Attribution, label_names: tuple[str, ...], head: str = "single_label"
) -> list[dict[str, Any]]:
    """The first samples LIME scored (the original first), with their kernel weights."""
    return [
        _counterfactual(
            {"words kept": s["kept"], "weight": s["weight"]},
            s["text"],
            s["probabilities"],
            lime.target,
            label_names,
            head,
        )
        for s in lime.extras["samples"]
    ]


@st.cache_data(show_spinner=False, max_entries=256)
def _loo_probabilities(model: str, example_key: str, _example: Example) -> list[tuple[float, ...]]:
    clf = models.classifier(model)
    encoded = clf.encode(_example)
    variants = [removal_variant(clf, encoded, [i], "delete") for i in range(encoded.n_words)]
    return [tuple(float(p) for p in row) for row in clf.predict_proba(variants)]


def loo_counterfactual_rows(
    model: str, example: Example, target: int, label_names: tuple[str, ...], head: str = "single_label"
) -> list[dict[str, Any]]:
    """Every input leave-one-out (delete) scored: one word deleted (all class probabilities,
    n forward passes, cached)."""
    rows = _loo_probabilities(model, store.example_key(example), example)
    return [
        _counterfactual(
            {"#": i, "word": word},
            sample_text(replaced_segments(example, {i: None})),
            probabilities,
            target,
            label_names,
            head,
        )
        for i, (word, probabilities) in enumerate(zip(example.words, rows))
    ]
