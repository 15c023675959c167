"""Sobol total-order indices over word masks (Fel et al. 2021, "Look at the Variance! Efficient
Black-box Explanations with Sobol-based Sensitivity Analysis", arXiv:2111.04138).

The players are the words. Two quasi-Monte Carlo designs A and B of ``n_designs`` points in
[0, 1]^n come from one scrambled Sobol sequence (``scipy.stats.qmc.Sobol`` seeded with ``seed``,
2 n columns split in two), and for every word i the design C_i is A with column i taken from B.
A point becomes a binary mask (a word is kept where its coordinate is at least 0.5, so each word
is kept with probability 1/2, independently) and the model's target probability (or log2-odds)
of the input with the other words removed is its value. Jansen's estimator gives each word's
total-order index, the share of the output's variance that involves that word:
``S_T,i = mean((f(A) - f(C_i))^2) / (2 Var f)``, with Var f the variance over A and B together.
Indices are non-negative and carry no direction; a word the model ignores gets exactly 0.

The paper's masks are real-valued (an image blended toward a blurred copy); words cannot be
half removed through token ids, so the masks are binary, the kept/removed choice of the paper's
text experiments. Removed words are deleted (or replaced by [MASK]/[UNK]/[PAD], or zeroed). All
``n_designs x (n + 2)`` masked inputs are drawn first and scored in one call to the shared
scorer (``Classifier.predict_proba``), repeated masks once; a dataset run pools several
examples' masks in that call (explainers/pooling.py).

Issue 18 asked for interpreto's Sobol attributions if a maintained library gives them without
incompatible pins: interpreto 0.5.2 would install, but it brings about 30 packages (nnsight,
bitsandbytes, ipython, python-socketio, nltk, ...) and runs the model itself, outside the shared
scorer, so this module implements the estimator on scipy's Sobol sampler instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.classifier import Classifier
from core.params import param, seed_param
from core.perturb import REMOVALS, removal_variant
from core.types import Attribution, Example
from explainers.base import Passes, make_attribution, one_example
from explainers.loo import OUTPUTS
from explainers.pooling import Scoring, pooled


@dataclass(frozen=True)
class SobolParams:
    n_designs: int = param(
        32, "quasi-Monte Carlo points per design (a power of two keeps the Sobol sequence balanced)", min=2, max=4096
    )
    removal: str = param("delete", "how a removed word is removed", choices=REMOVALS)
    output: str = param("probability", "score space: probability or log2-odds", choices=OUTPUTS)
    seed: int = seed_param("random seed (scrambling of the Sobol sequence)")


def designs(n_words: int, n_designs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The binary designs A and B, each (n_designs, n_words) of 0/1 "word kept"."""
    import warnings

    from scipy.stats import qmc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns when n_designs is not a power of two
        points = qmc.Sobol(d=2 * n_words, scramble=True, rng=np.random.default_rng(seed)).random(n_designs)
    kept = points >= 0.5
    return kept[:, :n_words], kept[:, n_words:]


def total_order(f_a: np.ndarray, f_b: np.ndarray, f_c: np.ndarray) -> np.ndarray:
    """Jansen's total-order estimator; f_a, f_b (N,), f_c (n_words, N) with f_c[i] = f(C_i)."""
    variance = np.var(np.concatenate([f_a, f_b]))
    if variance == 0:
        return np.zeros(len(f_c))
    return np.mean((f_a[None, :] - f_c) ** 2, axis=1) / (2 * variance)


def plan(clf: Classifier, example: Example, target: int, params: SobolParams) -> Scoring:
    encoded = clf.encode(example)
    n = encoded.n_words
    a, b = designs(n, params.n_designs, params.seed)
    c = np.repeat(a[None, :, :], n, axis=0)  # (n_words, N, n_words)
    for i in range(n):
        c[i, :, i] = b[:, i]
    masks = np.concatenate([a, b, c.reshape(-1, n)])
    variants = [removal_variant(clf, encoded, np.flatnonzero(~row).tolist(), params.removal) for row in masks]

    def finish(outputs: np.ndarray) -> Attribution:
        values = clf.head.transform(outputs[:, target], params.output)
        f_a, f_b, f_c = values[: len(a)], values[len(a) : 2 * len(a)], values[2 * len(a) :].reshape(n, len(a))
        scores = total_order(f_a, f_b, f_c)
        extras = {"variance": float(np.var(values[: 2 * len(a)])), "designs": params.n_designs}
        return make_attribution(example, target, scores, extras=extras)

    return Scoring(variants, finish)


explain_batch = pooled(plan)
explain = one_example(explain_batch)


def passes(n_words: int, params: SobolParams) -> Passes:
    """Cost model: ``n_designs x (n_words + 2)`` masked inputs, or the 2^n distinct masks if
    fewer."""
    return Passes(classifier=min(params.n_designs * (n_words + 2), 2 ** min(n_words, 60)))
