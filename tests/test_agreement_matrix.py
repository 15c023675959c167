"""The methods x methods agreement matrix against scipy on a hand-made case."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metrics.agreement import agreement_matrix, cluster_order, mean_agreement_matrix, mean_pairwise

SCORES = {
    "a": np.array([0.9, 0.1, -0.4, 0.3, 0.0, 0.7]),
    "b": np.array([0.8, 0.2, -0.5, 0.1, 0.05, 0.6]),
    "c": np.array([-0.9, 0.5, 0.4, -0.3, 0.2, -0.1]),
}


@pytest.mark.parametrize(
    ("measure", "reference"),
    [
        ("spearman", lambda x, y: stats.spearmanr(x, y).statistic),
        ("spearman_abs", lambda x, y: stats.spearmanr(np.abs(x), np.abs(y)).statistic),
        ("kendall", lambda x, y: stats.kendalltau(x, y).statistic),
    ],
)
def test_each_entry_equals_scipy(measure, reference) -> None:
    matrix = agreement_matrix(SCORES, measure)
    names = list(SCORES)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            assert matrix[i, j] == pytest.approx(reference(SCORES[a], SCORES[b]), abs=1e-12)
    assert np.allclose(np.diag(matrix), 1.0)


def test_top_k_overlap_by_hand() -> None:
    # k = round(0.34 * 6) = 2 words by |score|: a {0, 5}, b {0, 5}, c {0, 1}
    matrix = agreement_matrix(SCORES, "top_k_overlap", top_k_fraction=0.34)
    assert matrix[0, 1] == 1.0 and matrix[0, 2] == 0.5 and matrix[1, 2] == 0.5


def test_mean_matrix_skips_undefined_values_and_disputed_order() -> None:
    flat = {"a": np.zeros(6), "b": SCORES["b"], "c": SCORES["c"]}  # a constant: its rho is undefined
    names, means = mean_agreement_matrix([SCORES, flat], "spearman")
    assert names == ["a", "b", "c"]
    first = agreement_matrix(SCORES, "spearman")
    assert means[0, 1] == pytest.approx(first[0, 1])  # only the first example defines it
    assert means[1, 2] == pytest.approx(first[1, 2])  # both examples agree on b and c
    assert mean_pairwise(first) == pytest.approx(np.mean([first[0, 1], first[0, 2], first[1, 2]]))
    with pytest.raises(ValueError, match="unknown agreement measure"):
        agreement_matrix(SCORES, "pearson")


def test_cluster_order_puts_agreeing_methods_together() -> None:
    scores = {"x": SCORES["a"], "opposite": SCORES["c"], "y": SCORES["b"]}
    order = cluster_order(list(scores), agreement_matrix(scores, "spearman"))
    assert abs(order.index("x") - order.index("y")) == 1


def test_the_figure_shows_a_near_zero_agreement_without_a_minus_sign() -> None:
    """The explorer's matrix read "-0.0" for a Spearman rho of -0.03; it reads 0.0 (and 0.00 on
    hover) while -0.06 still reads -0.1."""
    from ui.agreement import agreement_figure

    matrix = np.array([[1.0, -0.03, -0.06], [-0.03, 1.0, 0.4], [-0.06, 0.4, 1.0]])
    heatmap = agreement_figure(["a", "b", "c"], matrix, "spearman").data[0]
    assert list(heatmap.text[0]) == ["1.0", "0.0", "-0.1"]
    assert list(heatmap.customdata[0]) == ["1.00", "-0.03", "-0.06"]
