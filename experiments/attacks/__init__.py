"""Adversarial perturbations of explanations, as in the thesis "Assessing the Interpretability of
Large Language Models" (Oxford MSc, 2022, sections 2.3 and 3.5), after Ghorbani et al. 2019,
"Interpretation of neural networks is fragile" (arXiv:1710.10547).

An attack looks for an input close to the original whose prediction stays put but whose
explanation no longer ranks the originally top-ranked words on top. ``k`` is 15% of the words,
rounded down, at least 1; the attack distance is ``D = -sum_{i in topk(a_x)} a_{x+delta, i}``.

* ``embedding_attack`` is the thesis's attack: a perturbation ``delta`` of the input word
  embeddings (special tokens untouched) with ``|delta|_inf <= epsilon``, found by gradient ascent
  on one of two objectives: **unconstrained** (maximise ``D``; a step that changes the predicted
  class is rejected and retried at half the size) or **constrained** (the thesis's own,
  ``alpha * D - beta * (p(x) - p(x + delta))^2`` with ``p`` the originally predicted class's
  probability). The explanation is differentiated with respect to ``delta`` (double
  back-propagation), so only the gradient methods can be attacked. The perturbed embeddings are
  also shown as their nearest vocabulary words (cosine similarity, special tokens excluded).
* ``substitution_attack`` is a readable variant: it replaces up to ``budget`` words (never the
  original top-k words) with masked-LM fill-ins, keeping the predicted class and its probability
  within ``tolerance``, and searches greedily or by beam for the substitutions that push the
  original top-k words furthest down the new explanation's ranking. Any registered method can
  be attacked this way, perturbation methods at their cost.

Measures (thesis section 2.3): **Rank Change**, the share of the k top positions whose word
differs (order-sensitive, as in the thesis's worked example: [12, 3, 7] against [3, 15, 7] gives
2/3); **Top-k Sum Change**, ``sum_{i in topk(a_x)} a_{x,i} - a_{x+delta,i}`` (raw, so not
comparable across methods); **Probability Change**, ``p(x) - p(x + delta)``. We add Spearman's
rho between the two explanations and ``success``: the predicted class is kept and at least one
top-k position changed.

The shared model is never modified: its parameters are frozen, the perturbation lives on a copy
of the input embeddings and gradients are taken with ``torch.autograd.grad``. Both attacks are
deterministic given their parameters (the embedding attack starts from ``delta = 0``; the
substitution attack passes its ``seed`` to stochastic explainers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import explainers
from core.classifier import Classifier, ProgressFn
from core.masked_lm import MaskedLM
from core.params import params_from
from core.types import Example
from experiments.attacks.embedding import OBJECTIVES, PRESETS, EmbeddingAttackParams, embedding_attack, nearest_tokens
from experiments.attacks.result import MEASURES, AttackResult, k_for, rank_change, summarize, topk_sum_change
from experiments.attacks.substitution import PRESETS as SUBSTITUTION_PRESETS
from experiments.attacks.substitution import SubstitutionAttackParams, substitution_attack
from explainers.base import Paper
from explainers.gradients import IntegratedGradientsParams

ATTACKS = ("embedding", "substitution")
PAPER = Paper(authors="Ghorbani et al.", year=2019, arxiv="1710.10547")


def make_params(attack: str, preset: str = "paper", overrides: dict[str, Any] | None = None) -> Any:
    """The parameters of an attack: a preset with overrides on top."""
    if attack not in ATTACKS:
        raise ValueError(f"unknown attack {attack!r}; known: {', '.join(ATTACKS)}")
    presets, cls = (
        (PRESETS, EmbeddingAttackParams) if attack == "embedding" else (SUBSTITUTION_PRESETS, SubstitutionAttackParams)
    )
    if preset not in presets:
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(presets)}")
    return params_from(cls, {**presets[preset], **(overrides or {})})


def attack_example(
    clf: Classifier,
    example: Example,
    methods: Sequence[str],
    attack: str,
    params: EmbeddingAttackParams | SubstitutionAttackParams,
    *,
    mlm: MaskedLM | None = None,
    explainer_params: dict[str, dict[str, Any]] | None = None,
    progress: ProgressFn | None = None,
    resources: Any = None,
) -> dict[str, AttackResult]:
    """Attack each method's explanation of one example; progress is spread over the methods in
    proportion to their expected cost (``cost_weights``), so an ETA read off it holds."""
    if attack == "substitution" and mlm is None:
        raise ValueError("the substitution attack needs a masked language model")
    weights = cost_weights(attack, methods, params, explainer_params, len(clf.fit_example(example)[0].words))
    starts = np.concatenate([[0.0], np.cumsum(weights)]) / sum(weights)
    results: dict[str, AttackResult] = {}
    for index, method in enumerate(methods):

        def step(fraction: float, message: str, index: int = index, method: str = method) -> None:
            if progress is not None:
                share = starts[index] + fraction * (starts[index + 1] - starts[index])
                progress(float(min(1.0, share)), f"{method}: {message}")

        own = (explainer_params or {}).get(method)
        if attack == "embedding":
            results[method] = embedding_attack(clf, example, method, params, explainer_params=own, progress=step)
        elif attack == "substitution":
            results[method] = substitution_attack(
                clf, example, method, mlm, params, explainer_params=own, progress=step, resources=resources
            )
        else:
            raise ValueError(f"unknown attack {attack!r}; known: {', '.join(ATTACKS)}")
    if progress is not None:
        progress(1.0, "done")
    return results


# The quick embedding attack on 20-word sentences took 3.1 s with saliency and 11.5 s with integrated
# gradients at 8 path points (2 CPU cores, BENCHMARKS.md): each point past the first costs about 0.39
# of a one-row pass. Weighing IG at 8 put its share at 8 times saliency's, and the progress bar's
# time left at four times the real one.
PATH_POINT_COST = 0.4


def cost_weights(
    attack: str,
    methods: Sequence[str],
    params: EmbeddingAttackParams | SubstitutionAttackParams,
    explainer_params: dict[str, dict[str, Any]] | None,
    n_words: int,
) -> list[float]:
    """Each method's expected share of an attack's work, in passes: per ascent step for the
    embedding attack (integrated gradients differentiates ``ig_n_steps`` path points in one
    batched pass, each point past the first costing ``PATH_POINT_COST`` of a one-row pass; the
    other gradient methods one row), per explained candidate for the substitution attack (the
    method's own cost model: its ``passes``, or a mask optimiser's ``steps``)."""
    weights = []
    for method in methods:
        spec = explainers.get(method)
        own = spec.make_params((explainer_params or {}).get(method))
        if attack == "embedding":
            integrated = isinstance(own, IntegratedGradientsParams)
            weight = 1.0 + (params.ig_n_steps - 1) * PATH_POINT_COST if integrated else 1.0
        elif spec.passes is not None:
            passes = spec.passes(n_words, own)
            weight = float(passes.classifier + passes.mlm + passes.backward)
        else:  # a mask optimiser
            weight = spec.steps(own).run if spec.steps is not None else 1.0
        weights.append(max(weight, 1.0))
    return weights


__all__ = [
    "ATTACKS",
    "MEASURES",
    "OBJECTIVES",
    "PAPER",
    "PRESETS",
    "AttackResult",
    "EmbeddingAttackParams",
    "SubstitutionAttackParams",
    "attack_example",
    "cost_weights",
    "embedding_attack",
    "k_for",
    "make_params",
    "nearest_tokens",
    "rank_change",
    "substitution_attack",
    "summarize",
    "topk_sum_change",
]
