"""Cost estimates shown before a long method starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

import explainers
from core.types import Example
from services import models, store
from services.resources import resources

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
    backward_passes: int = 0  # of the classifier passes, those that also go backward


# A backward pass in forward passes of the same text. On ~20-word sentences it is about one (the
# bundled MiniLMs: 405 forward against 193 forward+backward passes per second, BENCHMARKS.md); on
# a 219-word text IG's 52 forward and 50 backward passes took 1.8 times the time one would give,
# so two, which over-estimates short sentences a little rather than long texts by half.
BACKWARD_COST = 2.0


def estimate_cost(method: str, n_words: int, params: dict[str, Any], rate: float | None) -> CostEstimate:
    """Passes of a method (its spec's ``passes`` cost model) on ``n_words`` words; the time assumes
    a masked-LM pass costs about one classifier forward pass and a backward pass
    ``BACKWARD_COST`` of them."""
    spec = explainers.get(method)
    if spec.passes is None:
        raise ValueError(f"no cost estimate in passes for {method!r}: a mask optimiser is estimated in steps")
    passes = spec.passes(n_words, spec.make_params(params))
    seconds = _pass_units(passes.classifier, passes.mlm, passes.backward) / rate if rate else None
    return CostEstimate(passes.mlm, passes.classifier, seconds, passes.backward)


def _pass_units(classifier: int, mlm: int, backward: int) -> float:
    """Passes in classifier forward passes: a masked-LM pass as one, a backward pass as
    ``BACKWARD_COST`` more."""
    return classifier + mlm + BACKWARD_COST * backward


# How long the answer of "is AML's pre-trained model ready" is kept: a model trained since is seen
# at the latest this long after (its estimate then counts the pre-training once too often).
PRETRAINED_CHECK_TTL_S = 30


@dataclass(frozen=True)
class MaskCostEstimate:
    """Seconds a mask optimiser's run should take; ``pretrain_s`` is a one-off pre-training
    (AML's)."""

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


# Token-passes (passes times the text's tokens) from which a method that samples nothing (leave-one-out,
# integrated gradients) gets a time estimate before it runs: about 2 s at the bundled MiniLM's
# ~10,000 tokens per second on 2 CPU cores (BENCHMARKS.md: 405 passes/s of ~25 tokens). Below it
# the rate's calibration would cost more than the estimate is worth.
ESTIMATED_FROM_TOKEN_PASSES = 20_000


def worth_estimating(model: str, example: Example, method: str, params: dict[str, Any], windows: int = 1) -> bool:
    """Whether ``estimate_perturbation_cost`` is shown for ``method`` on this example: always for a
    sampling method, for another when its passes over this text (in each of ``windows`` sliding
    windows) pass ``ESTIMATED_FROM_TOKEN_PASSES`` (a mask optimiser has ``estimate_mask_cost``)."""
    spec = explainers.get(method)
    if spec.passes is None:
        return False
    if spec.sampling:
        return True
    clf = models.classifier(model)
    fitted = clf.fit_example(example)[0]
    passes = spec.passes(len(fitted.words), spec.make_params(params))
    token_passes = (passes.classifier + passes.backward + passes.mlm) * clf.token_count(fitted) * windows
    return token_passes >= ESTIMATED_FROM_TOKEN_PASSES


def measured_rate(model: str, example: Example) -> float:
    """The classifier's forward passes per second on batches of this example, timed after a warm-up
    (cached per example). Not a method's own measured rate: the first run after the model loads is
    slowed by its warm-up (the IM page's leave-one-out gave a third of this rate, and estimates
    three times too long), and a small run's batches are smaller than a long run's."""
    return _forward_rate(model, store.example_key(example), example)


def estimate_perturbation_cost(model: str, example: Example, method: str, params: dict[str, Any]) -> CostEstimate:
    """``estimate_cost`` for this example at the classifier's measured rate on it."""
    rate = measured_rate(model, example)
    return estimate_cost(method, len(models.classifier(model).fit_example(example)[0].words), params, rate)


def estimate_mask_cost(model: str, example: Example, method: str, params: dict[str, Any]) -> MaskCostEstimate:
    """Time estimate for a mask optimiser on this example: its spec's ``steps`` cost model times
    one timed optimisation step."""
    spec = explainers.get(method)
    if spec.steps is None:
        raise ValueError(f"no mask-optimisation estimate for {method!r}: it is not a mask optimiser")
    made = spec.make_params(params)
    steps = spec.steps(made)
    example_key = store.example_key(example)
    step = _step_seconds(model, example_key, example)
    if steps.pretrain and _pretrained(model, example_key, store.params_key(params), example, made):
        return MaskCostEstimate(steps.run * step, 0.0, "its pre-trained model is loaded or on disk")
    return MaskCostEstimate(steps.run * step, steps.pretrain * step, steps.note)


def pretraining_seconds(
    model: str,
    example: Example,
    method_keys: list[str],
    method_params: dict[str, dict[str, Any]],
    *,
    fresh: bool = False,
) -> float:
    """The one-off pre-training of the chosen methods that pre-train (AML's), which
    ``estimate_slice`` leaves out: none for a pre-trained model already loaded or on disk, unless
    ``fresh`` (a randomised copy of the model, as a sanity check makes, has none)."""
    total = 0.0
    for key in method_keys:
        spec, params = explainers.get(key), method_params.get(key, {})
        if spec.steps is None or not (steps := spec.steps(spec.make_params(params))).pretrain:
            continue
        if fresh:
            total += steps.pretrain * _step_seconds(model, store.example_key(example), example)
        else:
            total += estimate_mask_cost(model, example, key, params).pretrain_s or 0.0
    return total


@st.cache_data(show_spinner=False, max_entries=64, ttl=PRETRAINED_CHECK_TTL_S)
def _pretrained(model: str, example_key: str, params_key: str, _example: Example, _params: Any) -> bool:
    """Whether the pre-trained model a run with these parameters needs is already in this server's
    resources or on disk: then it costs no pre-training. Kept a while (the check fingerprints the
    model's files; a hub model's asks the hub for its commit), not on every rerun."""
    clf = models.classifier(model)
    return resources().ready(clf, clf.fit_example(_example)[0], _params)


def estimate_slice(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    method_params: dict[str, dict[str, Any]],
    metric_sets: list[dict[str, dict[str, Any]]],
    scored: int = 0,
) -> CostEstimate:
    """Passes and seconds of explaining ``examples`` with each method and scoring each attribution
    (and ``scored`` imported ones) with every metric of each of ``metric_sets`` (the methods run
    once for all sets): each example's passes (the methods' and the metric plans' cost models, at
    most) weighed by its tokens, at the classifier's rate on the slice's example of median length;
    a mask optimiser's steps timed there too. Masked-LM passes are counted as classifier passes of
    the same text."""
    from engine.evaluate import metric_params
    from metrics.faithfulness import plan_cost

    if not examples:
        return CostEstimate(0, 0, 0.0)
    fitted, tokens, median = _timed_at_median(model, examples)
    token_rate = measured_rate(model, fitted[median]) * tokens[median]
    specs = {
        key: (explainers.get(key), explainers.get(key).make_params(method_params.get(key, {}))) for key in method_keys
    }
    plans = [metric_params(list(metrics), metrics) for metrics in metric_sets]
    classifier = mlm = backward = 0
    seconds = 0.0
    for example, n_tokens in zip(fitted, tokens):
        n_words = len(example.words)
        passes = [spec.passes(n_words, params) for spec, params in specs.values() if spec.passes is not None]
        costs = [plan_cost(key, n_words, params) for params_by_key in plans for key, params in params_by_key.items()]
        inputs = sum(p.classifier for p in passes) + (len(specs) + scored) * sum(c.inputs for c in costs)
        fills = sum(p.mlm for p in passes) + (len(specs) + scored) * sum(c.fills for c in costs)
        went_back = sum(p.backward for p in passes)
        classifier, mlm, backward = classifier + inputs, mlm + fills, backward + went_back
        seconds += _pass_units(inputs, fills, went_back) * n_tokens / token_rate
        steps = sum(spec.steps(params).run for spec, params in specs.values() if spec.steps is not None)
        if steps:
            step = _step_seconds(model, store.example_key(fitted[median]), fitted[median])
            seconds += steps * step * n_tokens / tokens[median]
    return CostEstimate(mlm, classifier, seconds, backward)


# One step of the embedding attack on one row (a forward pass, the explanation's gradient with its
# graph kept, and the gradient of the attack's objective through it) in units of
# ``engine.bench.step_seconds`` (a forward and backward pass over two rows): 1.71-1.78 on three
# SST-2 dev sentences of 19-28 words, saliency, 2 quiet CPU cores (BENCHMARKS.md).
ATTACK_STEP_COST = 1.75


def estimate_attack(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    attack: str,
    attack_params: dict[str, Any],
    preset: str,
    params: dict[str, dict[str, Any]],
) -> float:
    """Seconds an attack on each method's explanation of each example should take (less where it
    stops early; within 0.9-1.25 of the measured time otherwise, BENCHMARKS.md). The
    embedding attack: its steps (no early stop) at a step's measured cost, integrated gradients
    weighed by its path points (``experiments.attacks.cost_weights``). The substitution attack: its
    passes at the classifier's measured rate: the original explanation, the
    masked-LM fill-ins, every candidate scored each round and the candidates explained (each at the
    method's own cost). Rates are timed on the example of median length, each example's time
    scaled by its tokens."""
    from experiments.attacks import cost_weights, make_params
    from experiments.attacks.result import k_for

    chosen = make_params(attack, preset, attack_params)
    if not examples:
        return 0.0
    fitted, tokens, median = _timed_at_median(model, examples)
    key, timed = store.example_key(fitted[median]), fitted[median]
    seconds = 0.0
    for example, n_tokens in zip(fitted, tokens):
        n_words, scale = len(example.words), n_tokens / tokens[median]
        weights = cost_weights(attack, method_keys, chosen, params, n_words)
        if attack == "embedding":
            seconds += sum(weights) * chosen.steps * ATTACK_STEP_COST * _step_seconds(model, key, timed) * scale
            continue
        open_words = n_words - k_for(n_words, chosen.top_fraction)
        width = 1 if chosen.search == "greedy" else chosen.beam_width
        scored = explained = 0
        for round_ in range(min(chosen.budget, open_words)):
            proposals = width * (open_words - round_) * chosen.n_candidates
            scored += proposals
            explained += min(proposals, chosen.explained_per_round or proposals)
        passes = sum(w * (1 + explained) for w in weights) + len(weights) * (1 + scored + open_words)
        seconds += passes * scale / _forward_rate(model, key, timed)
    return seconds


def _timed_at_median(model: str, examples: list[Example]) -> tuple[list[Example], list[int], int]:
    """The examples as the model reads them (cut to its length), their tokens, and the index of the
    one of median length: a slice's rates are timed there once, and each example's time scaled by
    its tokens (timing every example took seconds per example before a page could show a button);
    ``ValueError`` when that example is empty (the run itself refuses it)."""
    clf = models.classifier(model)
    fitted = [clf.fit_example(example)[0] for example in examples]
    tokens = [clf.token_count(example) for example in fitted]
    median = sorted(range(len(fitted)), key=tokens.__getitem__)[len(fitted) // 2]
    if not tokens[median]:
        raise ValueError("no text to time: most of the examples are empty")
    return fitted, tokens, median


def cost_model(method: str, n_words: int) -> str:
    """The registry's cost model of ``method`` at its default parameters on ``n_words`` words, in
    words: its passes, or a mask optimiser's steps."""
    spec = explainers.get(method)
    params = spec.make_params()
    if spec.passes is not None:
        passes = spec.passes(n_words, params)
        if not passes.classifier and not passes.mlm:
            return "no model pass"
        return f"at most {passes_text(passes.classifier, passes.backward, passes.mlm)} on {n_words} words"
    if spec.steps is None:
        raise ValueError(f"{method!r} has no cost model")  # the registry gives every method one
    steps = spec.steps(params)
    pretrain = f" and {steps.pretrain:,.0f} units once to pre-train" if steps.pretrain else ""
    unit = "one unit: a forward and backward pass of a batch of two"
    return f"about {steps.run:,.0f} units per run{pretrain} ({unit}; {steps.note})"


def passes_text(classifier: int, backward: int = 0, mlm: int = 0) -> str:
    """Passes in words, as the cost models and measured costs are shown: "1 classifier forward and
    backward pass", "52 classifier forward passes (50 of them also backward) and 8 masked-LM
    passes", "no model pass"."""
    parts = []
    if classifier and backward == classifier:
        parts.append(_count(classifier, "classifier forward and backward pass"))
    elif classifier:
        also = f" ({backward:,} of them also backward)" if backward else ""
        parts.append(_count(classifier, "classifier forward pass") + also)
    if mlm:
        parts.append(_count(mlm, "masked-LM pass"))
    return " and ".join(parts) or "no model pass"


def _count(n: int, thing: str) -> str:
    return f"{n:,} {thing}" + ("" if n == 1 else "es")
