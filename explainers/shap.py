"""KernelSHAP over words (Lundberg & Lee 2017), through Captum's ``KernelShap``.

The players are the words. Captum sees a (1, n_words) input of ones with a baseline of zeros,
one feature per word; its forward function maps a batch of 0/1 "word present" vectors to the
target-class probability of the input with the absent words removed (deleted by default, or
replaced by [MASK]/[UNK]/[PAD], or zeroed), scored through the shared batched scorer. Captum
draws the coalitions (the full and the empty input first, then sizes from the Shapley kernel)
and fits the linear model; every coalition is drawn before any is scored, and the draws use a
forked torch generator seeded with ``seed``, so the global random state is left untouched.
The scores sum (approximately) to f(x) - f(all words removed). One word: the exact difference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from captum.attr import KernelShap

from core.classifier import Classifier, ProgressFn
from core.params import param
from core.perturb import REMOVALS, removal_variant
from core.types import Attribution, Example
from explainers.base import Passes, make_attribution


@dataclass(frozen=True)
class KernelShapParams:
    n_samples: int = param(1000, "coalitions sampled, the full and the empty input included", min=3, max=100_000)
    removal: str = param("delete", "how an absent word is removed", choices=REMOVALS)
    seed: int = param(0, "random seed")


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

    if n == 1:
        values = forward(torch.tensor([[1.0], [0.0]])).numpy()
        scores = values[:1] - values[1:]
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(params.seed)
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
    extras = {"full_value": float(values[0]), "empty_value": float(values[1]), "sum_of_scores": float(scores.sum())}
    return make_attribution(example, target, scores, extras=extras)


def passes(n_words: int, params: KernelShapParams) -> Passes:
    """Cost model: one classifier pass per sampled coalition."""
    return Passes(classifier=params.n_samples)
