"""Cost estimates shown before a long method starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

import explainers
from core.types import Attribution, Example
from services import models, store

# =========================================================================== input marginalization
# Section owned by the Input Marginalization page (app_pages/input_marginalization.py): cost
# estimates, the rows of its word and candidate tables, and its counterfactual gallery.


@dataclass(frozen=True)
class CostEstimate:
    """Forward passes a run will need (classifier passes at most: duplicates are scored once)
    and the seconds they take at a measured rate (None without a measurement)."""

    mlm_passes: int
    classifier_passes: int
    seconds: float | None


def passes_per_second(attribution: Attribution) -> float | None:
    """The classifier's measured throughput on one attribution (forward passes per second)."""
    if attribution.runtime_s <= 0 or attribution.forward_passes <= 0:
        return None
    return attribution.forward_passes / attribution.runtime_s


def estimate_cost(method: str, n_words: int, params: dict[str, Any], rate: float | None) -> CostEstimate:
    """Passes of ``im``, ``lime``, ``lime_mlm`` or ``kernel_shap`` on ``n_words`` words; the time
    assumes a masked-LM pass costs about one classifier pass (true of the bundled MiniLMs)."""
    p = explainers.get(method).make_params(params)
    mlm_passes = 0
    if method == "im":
        per_word = p.k if p.selection == "topk" else p.max_candidates
        mlm_passes, classifier_passes = n_words, 1 + n_words * per_word
    elif method in ("lime", "lime_mlm", "kernel_shap"):
        classifier_passes = p.n_samples
        if method == "lime_mlm":
            # lime removes 1..n words (mean (n + 1) / 2); one_at_a_time needs a pass per removed word.
            per_sample = 1.0 if p.fill == "all_at_once" else (n_words + 1) / 2
            mlm_passes = round((p.n_samples - 1) * per_sample)
    else:
        raise ValueError(f"no cost estimate for {method!r}")
    seconds = (mlm_passes + classifier_passes) / rate if rate else None
    return CostEstimate(mlm_passes, classifier_passes, seconds)


# Per-step cost of the mask optimisers relative to one batch-2 forward+backward pass of the
# classifier, calibrated with `python -m cli bench` on the bundled models (BENCHMARKS.md): a MaRC
# step is one such pass; an fAML step also runs the attribution encoder (same size) and its
# selection; pAML pre-training costs about 1.6 such passes per training example and epoch.
MARC_STEP_COST = 1.0
AML_STEP_COST = 4.0
AML_PRETRAIN_COST = 1.6


@dataclass(frozen=True)
class MaskCostEstimate:
    """Seconds a MaRC or AML run should take; ``pretrain_s`` is AML's one-off pre-training."""

    seconds: float
    pretrain_s: float = 0.0
    note: str = ""


@st.cache_data(show_spinner=False, max_entries=64)
def _step_seconds(model: str, example_key: str, _example: Example) -> float:
    from engine.bench import step_seconds

    clf = models.classifier(model)
    return step_seconds(clf, clf.fit_example(_example)[0])


@st.cache_data(show_spinner=False, max_entries=64)
def _forward_rate(model: str, example_key: str, _example: Example) -> float:
    from engine.bench import forward_rate

    clf = models.classifier(model)
    return forward_rate(clf, clf.fit_example(_example)[0])


def estimate_perturbation_cost(model: str, example: Example, method: str, params: dict[str, Any]) -> CostEstimate:
    """``estimate_cost`` for this example at the classifier's measured rate on it."""
    rate = _forward_rate(model, store.example_key(example), example)
    return estimate_cost(method, len(models.classifier(model).fit_example(example)[0].words), params, rate)


def estimate_mask_cost(model: str, example: Example, method: str, params: dict[str, Any]) -> MaskCostEstimate:
    """Time estimate for ``marc`` or ``aml`` on this example, from one timed optimisation step."""
    step = _step_seconds(model, store.example_key(example), example)
    p = explainers.get(method).make_params(params)
    if method == "marc":
        note = f"at most {p.n_steps} optimisation steps" + (
            "; the early stop often ends sooner" if p.early_stop else ""
        )
        return MaskCostEstimate(p.n_steps * MARC_STEP_COST * step, note=note)
    if method == "aml":
        finetune = (p.n_steps if p.mode == "fine_tune" else 0) * AML_STEP_COST * step + step
        pretrain = p.n_train * p.n_epochs * AML_PRETRAIN_COST * step
        return MaskCostEstimate(finetune, pretrain, f"pre-training on {p.n_train} examples once per model")
    raise ValueError(f"no mask-optimisation estimate for {method!r}")
