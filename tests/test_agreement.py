"""Agreement measures against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics import agreement


def test_spearman_matches_the_rank_difference_formula() -> None:
    # ranks [2, 1, 3] and [3, 1, 2]: sum d^2 = 2, rho = 1 - 6 * 2 / (3 * 8) = 0.5
    assert agreement.spearman([0.5, 0.3, 0.9], [0.4, 0.1, 0.2]) == pytest.approx(0.5)
    # ranks [1, 2, 3] and [3, 1, 2]: sum d^2 = 6, rho = 1 - 36 / 24 = -0.5
    assert agreement.spearman([-3, 1, 2], [3, -1, 2]) == pytest.approx(-0.5)


def test_spearman_averages_tied_ranks() -> None:
    # ranks [1.5, 1.5, 3] and [1, 2, 3]: Pearson = 1.5 / sqrt(1.5 * 2)
    assert agreement.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(3.0))


def test_spearman_is_exactly_one_for_identical_and_minus_one_for_reversed_ranks() -> None:
    scores = [0.31, -1.7, 2.2, 0.004, -0.2, 9.5, 1e-6]
    assert agreement.spearman(scores, scores) == 1.0
    assert agreement.spearman(scores, [-s for s in scores]) == -1.0


def test_spearman_abs_ignores_the_sign() -> None:
    assert agreement.spearman_abs([-3, 1, 2], [3, -1, 2]) == 1.0
    # |a| ranks [3, 1, 2], |b| ranks [1, 3, 2]: reversed around the middle word
    assert agreement.spearman_abs([-3, 1, 2], [1, -3, 2]) == -1.0


def test_undefined_correlations_are_nan() -> None:
    assert math.isnan(agreement.spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(agreement.spearman([1.0], [2.0]))
    assert math.isnan(agreement.kendall([2.0, 2.0], [1.0, 2.0]))


def test_kendall_counts_concordant_pairs() -> None:
    # 6 pairs, only (2, 3) discordant: tau = (5 - 1) / 6
    assert agreement.kendall([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)


@pytest.mark.parametrize(
    ("n", "fraction", "k"), [(10, 0.2, 2), (3, 0.2, 1), (7, 0.2, 1), (8, 0.2, 2), (5, 1.0, 5), (0, 0.2, 0)]
)
def test_top_k_size_rounds_half_up_with_at_least_one(n: int, fraction: float, k: int) -> None:
    assert agreement.top_k_size(n, fraction) == k


def test_top_k_overlap_signed_and_absolute() -> None:
    assert agreement.top_k_overlap([5, 4, 3, 2, 1], [1, 5, 4, 3, 2], 2) == 0.5
    a, b = [-5, 4, 0, 1], [5, -4, 1, 0]
    assert agreement.top_k_overlap(a, b, 2) == 0.0  # signed top-2: {1, 3} vs {0, 2}
    assert agreement.top_k_overlap(a, b, 2, absolute=True) == 1.0  # |.| top-2: {0, 1} both
    # A map of equal scores has no top words: word order chose them, and all zeros "agreed" fully
    # with a map that favours the first words.
    assert math.isnan(agreement.top_k_overlap(np.zeros(10), [1, 1] + [0] * 8, 2, absolute=True))
    assert math.isnan(agreement.top_k_overlap([1, -1, 1], [3, 2, 1], 1, absolute=True))
    assert agreement.top_k_overlap([1, -1, 1], [3, 2, 1], 1) == 1.0  # signed, the -1 sets the first apart
    assert agreement.top_k(a, 2, absolute=True).tolist() == [0, 1]


def test_sign_change_and_mean_absolute_change() -> None:
    assert agreement.sign_change([1, -1, 2, 0], [-1, -1, 3, 0]) == 0.25
    assert agreement.sign_change([0.0], [0.5]) == 1.0
    assert agreement.mean_abs_change([1, -1, 2], [0, 1, 2]) == pytest.approx(1.0)


def test_mismatched_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="same words"):
        agreement.spearman([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="fraction"):
        agreement.top_k_size(10, 0.0)
    with pytest.raises(ValueError, match="k must be"):
        agreement.top_k_overlap([1, 2], [1, 2], 0)
