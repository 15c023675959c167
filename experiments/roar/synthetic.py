"""Madsen et al.'s synthetic redundancy task: plain ROAR cannot see redundancy, Recursive ROAR can.

Madsen, Meade, Adlakha and Reddy (2022), "Evaluating the Faithfulness of Importance Measures in
NLP by Recursively Masking Allegedly Important Tokens and Retraining", arXiv:2110.08412, Eq. 1
and Fig. 3, after the problem of Hooker et al. (2019), arXiv:1806.10758:

    x = a z / 10 + d eta + eps / 10,    y = 1 if z > 0 else 0                        (Eq. 1)

``a`` and ``d`` are 16-dimensional standard normal vectors drawn once per seed, ``a`` zero
after its first 4 entries: exactly 4 informative features, mutually redundant. ``z``, ``eta``
and ``eps`` are standard normal scalars drawn per example (``eps`` is one scalar per example, as
in the authors' ``experiments/synthetic.py``; the paper's text leaves its shape open). Because
the noise lies in a 2-dimensional subspace, any one informative feature plus two others decide
``y``: accuracy stays near 100% until all four informative features are masked, then falls to
chance.

The model is an unpenalised logistic regression (scikit-learn, lbfgs, as the authors' code);
the importance measure is the absolute value of its weights (``weights``); a masked feature is
set to 0 and the model is retrained from scratch after every feature. Levels are numbers of
masked features, 0..16: 0 and 16 (everything masked) are the shared 0% and 100% units.

* ``weights``, plain ROAR: every example is masked in the order of the step-0 model's weights;
  Recursive ROAR: the next feature is the largest weight of the model retrained at the previous
  step, masked features staying masked.
* ``truth``: the ground-truth order, the 4 informative features first, then the others;
  ``worst``: the reverse (the uninformative features first, Madsen et al.'s "worst case").
* ``random``: the random baseline, a fresh uniform ranking per example.

Only ``weights`` depends on the model; the other orders are fixed, so plain and recursive are
the same procedure for them and they are run once (their rows appear in both results).

The results are the rows a real job produces (``scores.UnitResult``), so ``scores.curves``,
``faithfulness_scores`` and ``leakage`` read them unchanged.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from experiments.roar.removal import FULL, ZERO, Level
from experiments.roar.scores import RANDOM, SHARED, UnitResult, performance

N_FEATURES = 16
N_INFORMATIVE = 4
METHODS = ("weights", "truth", "worst", RANDOM)


@dataclass(frozen=True)
class SyntheticData:
    train_x: np.ndarray  # (n_train, 16)
    train_y: np.ndarray  # (n_train,) 0/1
    test_x: np.ndarray  # (n_test, 16)
    test_y: np.ndarray


@dataclass(frozen=True)
class SyntheticResult:
    """Plain and Recursive ROAR on the synthetic task; ``levels`` and ``x`` (masked features) in
    curve order, with the shared 0% and 100% rows in both row sets."""

    plain: tuple[UnitResult, ...]
    recursive: tuple[UnitResult, ...]
    levels: tuple[Level, ...]
    x: tuple[float, ...]


def make_data(seed: int, n_train: int, n_test: int) -> SyntheticData:
    """Eq. 1 with ``a`` and ``d`` drawn once from ``seed``, then the train and test examples."""
    rng = np.random.default_rng(seed)
    a = np.concatenate([rng.standard_normal(N_INFORMATIVE), np.zeros(N_FEATURES - N_INFORMATIVE)])
    d = rng.standard_normal(N_FEATURES)

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        z, eta, eps = (rng.standard_normal((n, 1)) for _ in range(3))
        return a * z / 10 + d * eta + eps / 10, (z[:, 0] > 0).astype(np.int64)

    return SyntheticData(*draw(n_train), *draw(n_test))


def _fit(x: np.ndarray, y: np.ndarray, seed: int):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    # one BLAS thread: on a 16-feature problem more threads only contend (10x slower on 2 cores)
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression(C=np.inf, random_state=seed).fit(x, y)


def _score(model, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    return performance(y, model.predict(x), 2)


def _masked(x: np.ndarray, masked: np.ndarray) -> np.ndarray:
    return np.where(masked, 0.0, x)


def _mask_next(importance: np.ndarray, masked: np.ndarray) -> np.ndarray:
    """``masked`` plus, in every row, the most important feature not yet masked (ties: first)."""
    key = np.where(masked, -np.inf, importance)
    out = masked.copy()
    out[np.arange(len(out)), np.argmax(key, axis=1)] = True
    return out


def _plain(
    data: SyntheticData, importance: Callable[[object, np.ndarray], np.ndarray], model0, seed: int
) -> list[tuple[float, float]]:
    """Performance after masking 1..15 features in the step-0 order of ``importance``."""
    train_rank = np.argsort(-importance(model0, data.train_x), axis=1, kind="stable")
    test_rank = np.argsort(-importance(model0, data.test_x), axis=1, kind="stable")
    out = []
    for k in range(1, N_FEATURES):
        train_mask = np.zeros_like(data.train_x, dtype=bool)
        test_mask = np.zeros_like(data.test_x, dtype=bool)
        np.put_along_axis(train_mask, train_rank[:, :k], True, axis=1)
        np.put_along_axis(test_mask, test_rank[:, :k], True, axis=1)
        model = _fit(_masked(data.train_x, train_mask), data.train_y, seed)
        out.append(_score(model, _masked(data.test_x, test_mask), data.test_y))
    return out


def _recursive(
    data: SyntheticData, importance: Callable[[object, np.ndarray], np.ndarray], model0, seed: int
) -> list[tuple[float, float]]:
    """Performance after masking 1..15 features, the importance recomputed with each new model."""
    model = model0
    train_mask = np.zeros_like(data.train_x, dtype=bool)
    test_mask = np.zeros_like(data.test_x, dtype=bool)
    out = []
    for _ in range(1, N_FEATURES):
        train_x, test_x = _masked(data.train_x, train_mask), _masked(data.test_x, test_mask)
        train_mask = _mask_next(importance(model, train_x), train_mask)
        test_mask = _mask_next(importance(model, test_x), test_mask)
        model = _fit(_masked(data.train_x, train_mask), data.train_y, seed)
        out.append(_score(model, _masked(data.test_x, test_mask), data.test_y))
    return out


def weight_importance(model, x: np.ndarray) -> np.ndarray:
    """The linear model's absolute weights, the same for every example (Madsen et al. 2022)."""
    return np.tile(np.abs(model.coef_.ravel()), (len(x), 1))


def _random_importance(rng: np.random.Generator, model, x: np.ndarray) -> np.ndarray:
    """A uniform random ranking per example (the random baseline)."""
    return rng.uniform(size=x.shape)


def truth_importance(model, x: np.ndarray) -> np.ndarray:
    """The ground-truth order: the informative features first, each group by position."""
    order = np.r_[np.full(N_INFORMATIVE, 2.0), np.ones(N_FEATURES - N_INFORMATIVE)] - np.arange(N_FEATURES) / 100
    return np.tile(order, (len(x), 1))


def worst_importance(model, x: np.ndarray) -> np.ndarray:
    """The worst order: the uninformative features first (Madsen et al.'s "worst case")."""
    return -truth_importance(model, x)


def run_synthetic(
    seeds: Sequence[int] = (0, 1, 2, 3, 4), n_train: int = 20_000, n_test: int = 20_000
) -> SyntheticResult:
    """Plain and Recursive ROAR for ``METHODS`` over ``seeds`` (each seed
    draws its own ``a``, ``d``, data and random rankings). The paper's script uses 200,000 train
    and 50,000 test examples and one seed; the curves are the same shape with fewer."""
    if not seeds:
        raise ValueError("run_synthetic needs at least one seed")
    if n_train < 2 or n_test < 1:
        raise ValueError(f"n_train must be at least 2 and n_test at least 1, got {n_train} and {n_test}")
    middle = tuple(Level(k, "tokens") for k in range(1, N_FEATURES))
    levels = (ZERO, *middle, FULL)
    plain: list[UnitResult] = []
    recursive: list[UnitResult] = []
    for seed in seeds:
        data = make_data(seed, n_train, n_test)
        model0 = _fit(data.train_x, data.train_y, seed)
        shared = [
            UnitResult(SHARED, ZERO, seed, *_score(model0, data.test_x, data.test_y)),
            UnitResult(SHARED, FULL, seed, *_floor(data, seed)),
        ]
        random_importance = partial(_random_importance, np.random.default_rng([seed, 1]))
        plain_curves = {
            "weights": _plain(data, weight_importance, model0, seed),
            "truth": _plain(data, truth_importance, model0, seed),
            "worst": _plain(data, worst_importance, model0, seed),
            RANDOM: _plain(data, random_importance, model0, seed),
        }
        recursive_curves = {**plain_curves, "weights": _recursive(data, weight_importance, model0, seed)}
        for rows, by_method in ((plain, plain_curves), (recursive, recursive_curves)):
            rows.extend(shared)
            for method in METHODS:
                rows.extend(UnitResult(method, level, seed, *value) for level, value in zip(middle, by_method[method]))
    return SyntheticResult(tuple(plain), tuple(recursive), levels, tuple(float(k) for k in range(N_FEATURES + 1)))


def _floor(data: SyntheticData, seed: int) -> tuple[float, float]:
    """Every feature masked: the model can only predict the majority class of the training set."""
    zeros = np.zeros_like(data.train_x)
    model = _fit(zeros, data.train_y, seed)
    return _score(model, np.zeros_like(data.test_x), data.test_y)
