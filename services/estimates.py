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
    """Passes of a sampling method (its spec's ``passes`` cost model) on ``n_words`` words; the
    time assumes a masked-LM pass and a backward pass each cost about one classifier forward pass
    (true of the bundled MiniLMs: BENCHMARKS.md measures 405 forward and 193 forward+backward
    passes per second)."""
    spec = explainers.get(method)
    if spec.passes is None:
        raise ValueError(f"no cost estimate for {method!r}: it is not a sampling method")
    passes = spec.passes(n_words, spec.make_params(params))
    seconds = (passes.mlm + passes.classifier + passes.backward) / rate if rate else None
    return CostEstimate(passes.mlm, passes.classifier, seconds)


@dataclass(frozen=True)
class MaskCostEstimate:
    """Seconds a mask optimiser's run should take; ``pretrain_s`` is a one-off pre-training (AML's)."""

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
    """Time estimate for a mask optimiser on this example: its spec's ``steps`` cost model times
    one timed optimisation step."""
    spec = explainers.get(method)
    if spec.steps is None:
        raise ValueError(f"no mask-optimisation estimate for {method!r}: it is not a mask optimiser")
    steps = spec.steps(spec.make_params(params))
    step = _step_seconds(model, store.example_key(example), example)
    return MaskCostEstimate(steps.run * step, steps.pretrain * step, steps.note)


def cost_model(method: str, n_words: int) -> str | None:
    """The registry's cost model of ``method`` at its default parameters on ``n_words`` words, in
    words (None for a method without one: its cost is measured when it runs)."""
    spec = explainers.get(method)
    params = spec.make_params()
    if spec.passes is not None:
        passes = spec.passes(n_words, params)
        mlm = f" and {passes.mlm:,} masked-LM passes" if passes.mlm else ""
        return f"at most {passes.classifier:,} classifier forward passes{mlm} on {n_words} words"
    if spec.steps is not None:
        steps = spec.steps(params)
        pretrain = f" and {steps.pretrain:,.0f} units once to pre-train" if steps.pretrain else ""
        unit = "one unit: a forward and backward pass of a batch of two"
        return f"about {steps.run:,.0f} units per run{pretrain} ({unit}; {steps.note})"
    return None
