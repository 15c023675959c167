"""Cached predictions and attributions of one example."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import streamlit as st

import explainers
from core.heads import Head
from core.types import Attribution, Example, ProgressFn
from engine.explain import explain_example, predict, predict_in_windows
from engine.windows import Windows
from services import models, store
from services.resources import resources

# --------------------------------------------------------------------------- explanations


@dataclass(frozen=True)
class PredictionResult:
    """The example as the model sees it (cut to its maximum length) and its prediction."""

    example: Example
    probabilities: tuple[float, ...]
    predicted: int
    label_names: tuple[str, ...]
    dropped_words: int
    head: str = "single_label"  # core.heads: what ``probabilities`` are (scores for regression)
    windows: tuple[tuple[int, int], ...] = ()  # word ranges when read in sliding windows


@dataclass(frozen=True)
class HeatmapResult:
    prediction: PredictionResult
    target: int
    attributions: dict[str, Attribution]
    errors: dict[str, str] = field(default_factory=dict)


@st.cache_data(show_spinner=False, max_entries=256)
def _prediction(model: str, example_key: str, _example: Example) -> PredictionResult:
    clf = models.classifier(model)
    fitted, dropped = clf.fit_example(_example)
    prediction = predict(clf, fitted)
    return PredictionResult(
        fitted, prediction.probabilities, prediction.predicted, clf.label_names, dropped, prediction.head
    )


@st.cache_data(show_spinner=False, max_entries=64)
def _windowed_prediction(model: str, example_key: str, _example: Example) -> PredictionResult:
    clf = models.classifier(model)
    prediction, spans = predict_in_windows(clf, _example, Windows())
    return PredictionResult(
        _example, prediction.probabilities, prediction.predicted, clf.label_names, 0, prediction.head, tuple(spans)
    )


@st.cache_resource
def _result_cache() -> store.ResultStore:
    return store.ResultStore()


def _attribution(
    model: str,
    example: Example,
    method: str,
    target: int,
    params: dict[str, Any],
    mlm_name: str | None,
    progress: ProgressFn | None,
    windows: bool = False,
) -> Attribution:
    """One method's attribution, computed once per (model, example, method, target, params, masked
    LM, windows)."""
    key = (model, store.example_key(example), method, target, store.params_key(params), mlm_name, windows)
    cache = _result_cache()
    cached = cache.get(key)
    if cached is not None:
        return cached
    clf = models.classifier(model)
    mlm = models.masked_lm(mlm_name) if mlm_name else None
    explanation = explain_example(
        clf,
        example,
        [method],
        target=target,
        params={method: params},
        mlm=mlm,
        progress=progress,
        resources=resources(),
        windows=Windows() if windows else None,
    )
    if method in explanation.errors:
        raise ValueError(explanation.errors[method])
    attribution = explanation.attributions[method]
    cache.put(key, attribution)
    return attribution


def label_set(head: str, outputs: Sequence[float], threshold: float) -> tuple[int, ...]:
    """The labels a head of type ``head`` predicts from its ``outputs`` (``core.heads.Head``),
    a multi-label head's at ``threshold``."""
    return Head(head, ()).label_set(np.asarray(outputs), threshold)


def unknown_words(model: str, example: Example) -> tuple[str, ...]:
    """The words of ``example`` (as the model keeps them) whose every token is the model's unknown
    token: it reads them all alike, so their scores cannot tell them apart (a script the
    vocabulary lacks, such as Chinese for an English wordpiece vocabulary)."""
    clf = models.classifier(model)
    unk = clf.special_tokens["unk"]
    if unk is None:
        return ()
    encoded = clf.encode(clf.fit_example(example)[0])
    tokens: dict[int, list[int]] = {}
    for token, word in zip(encoded.input_ids, encoded.word_ids, strict=True):
        if word is not None:
            tokens.setdefault(word, []).append(token)
    words = example.words
    return tuple(words[w] for w, ids in sorted(tokens.items()) if all(t == unk for t in ids))


def predict_example(model: str, example: Example, windows: bool = False) -> PredictionResult:
    """Prediction for ``example``; ``ValueError`` for empty text or a pair/single mismatch. With
    ``windows``, a single text longer than the model accepts is read whole in sliding windows
    (engine/windows.py)."""
    clf = models.classifier(model)
    clf.check_example(example)
    prediction = _prediction(model, store.example_key(example), example)
    if windows and prediction.dropped_words and not example.is_pair:
        return _windowed_prediction(model, store.example_key(example), example)
    return prediction


def explain(
    model: str,
    example: Example,
    method_keys: list[str],
    *,
    target: int | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = models.DEFAULT_MLM,
    progress: ProgressFn | None = None,
    windows: bool = False,
) -> HeatmapResult:
    """Every method's attribution for the target class (the predicted one when None); with
    ``windows`` a text too long for the model is explained whole in sliding windows.

    The prediction's problems (empty text, pair mismatch, unloadable model) raise ``ValueError``;
    a method that fails records its message in ``errors`` and the others still run.
    """
    prediction = predict_example(model, example, windows)
    target = prediction.predicted if target is None else target
    if not 0 <= target < len(prediction.label_names):
        raise ValueError(f"target {target} is not a class of {model} (0..{len(prediction.label_names) - 1})")
    attributions: dict[str, Attribution] = {}
    errors: dict[str, str] = {}
    for index, key in enumerate(method_keys):
        method_params = dict((params or {}).get(key, {}))

        def step(fraction: float, message: str, index: int = index) -> None:
            if progress is not None:
                progress(min(1.0, (index + fraction) / len(method_keys)), message)

        step(0.0, f"{key}: starting")
        try:
            needs_mlm = explainers.get(key).needs_mlm
            attributions[key] = _attribution(
                model,
                prediction.example,
                key,
                target,
                method_params,
                mlm_name if needs_mlm else None,
                step,
                bool(prediction.windows),
            )
        except ValueError as error:
            errors[key] = str(error)
        step(1.0, f"{key}: done")
    return HeatmapResult(prediction, target, attributions, errors)
