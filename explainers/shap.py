"""KernelSHAP over words (Lundberg & Lee 2017), through Captum's ``KernelShap``.

The players are the words. Captum sees a (1, n_words) input of ones with a baseline of zeros,
one feature per word; its forward function maps a batch of 0/1 "word present" vectors to the
target-class probability of the input with the absent words removed (deleted by default, or
replaced by [MASK]/[UNK]/[PAD], or zeroed), scored through the shared batched scorer. Captum
draws the coalitions (the full and the empty input first, then sizes from the Shapley kernel)
and fits the linear model; every coalition is drawn before any is scored, and the draws use a
forked torch generator seeded with ``seed``, so the global random state is left untouched.
The scores sum (approximately) to f(x) - f(all words removed). One word: the exact difference.

When every coalition fits in the sample budget (2^n - 2 <= ``n_samples``, as shap's
KernelExplainer decides), all 2^n inputs are scored and the exact Shapley values are computed
with the Shapley formula instead of sampling; the result says so (``extras["exact"]``). A
9-word sentence then costs 512 passes instead of 1,000 and has no sampling error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from captum.attr import KernelShap

from core.classifier import Classifier, ProgressFn
from core.global_rng import seeded_globals
from core.params import param, seed_param
from core.perturb import REMOVALS, removal_variant
from core.types import Attribution, Example
from explainers.base import Passes, make_attribution


@dataclass(frozen=True)
class KernelShapParams:
    n_samples: int = param(1000, "coalitions sampled, the full and the empty input included", min=3, max=100_000)
    removal: str = param("delete", "how an absent word is removed", choices=REMOVALS)
    seed: int = seed_param()


def explain(
    clf: Classifier,
    example: Example,
    target: int,
    params: KernelShapParams,
    *,
    mlm=None,
    progress: ProgressFn | None = None,
) -> Attribution:
    encoded = clf.encode(example)
    n = encoded.n_words
    scored: list[np.ndarray] = []

    def forward(present: torch.Tensor) -> torch.Tensor:  # (batch, n_words) 0/1 -> (batch,)
        variants = [
            removal_variant(clf, encoded, np.flatnonzero(row < 0.5).tolist(), params.removal)
            for row in present.cpu().numpy()
        ]
        values = clf.predict_proba(variants, progress=progress)[:, target]
        scored.append(values)
        return torch.as_tensor(values, dtype=torch.float64)

    exact = 2**n - 2 <= params.n_samples
    if exact:
        present = coalitions(n)
        values = forward(torch.as_tensor(present)).numpy()
        scores = exact_shapley(present, values)
    else:
        with seeded_globals(params.seed):
            scores = (
                KernelShap(forward)
                .attribute(
                    torch.ones(1, n),
                    baselines=torch.zeros(1, n),
                    feature_mask=torch.arange(n).unsqueeze(0),
                    n_samples=params.n_samples,
                    perturbations_per_eval=params.n_samples,
                )[0]
                .double()
                .numpy()
            )
    values = np.concatenate(scored)
    extras = {
        "full_value": float(values[0]),
        "empty_value": float(values[1]),
        "sum_of_scores": float(scores.sum()),
        "exact": exact,
    }
    return make_attribution(example, target, scores, extras=extras)


def passes(n_words: int, params: KernelShapParams) -> Passes:
    """Cost model: one classifier pass per sampled coalition, or all 2^n coalitions when they fit
    in the budget (exact Shapley values)."""
    return Passes(classifier=2**n_words if 2**n_words - 2 <= params.n_samples else params.n_samples)


def coalitions(n: int) -> np.ndarray:
    """Every 0/1 word-presence vector of ``n`` words, shape (2^n, n): the full input first, the
    empty one second (as Captum orders its samples), then the rest."""
    codes = np.arange(2**n)
    present = ((codes[:, None] >> np.arange(n)[None, :]) & 1).astype(np.float64)
    order = [2**n - 1, 0, *range(1, 2**n - 1)]
    return present[order]


def exact_shapley(present: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Shapley values from the value of every coalition: phi_i = sum over S without i of
    |S|! (n - |S| - 1)! / n! * (v(S + i) - v(S))."""
    from math import factorial

    n = present.shape[1]
    codes = (present.astype(np.int64) << np.arange(n)[None, :]).sum(axis=1)
    value_of = np.empty(2**n)
    value_of[codes] = values
    sizes = np.asarray([code.bit_count() for code in range(2**n)])
    weight = np.asarray([factorial(k) * factorial(n - k - 1) / factorial(n) for k in range(n)])
    scores = np.zeros(n)
    for i in range(n):
        without = np.arange(2**n)[(np.arange(2**n) >> i) & 1 == 0]
        scores[i] = np.sum(weight[sizes[without]] * (value_of[without | (1 << i)] - value_of[without]))
    return scores
