"""Agreement between two attributions of the same words: rank correlations and top-k overlap.

Used by the sanity checks (Spearman's rho between the original and a randomised model's explanation,
after Adebayo et al. 2018, as in the thesis "Assessing the Interpretability of Large Language
Models", Oxford MSc, 2022, sections 2.2.3.3 and 3.3), by the classifier-head reset of Pham et al.
2022 (Table A5: the share of words whose score changes sign and the mean absolute change), and by
the adversarial attacks (rank and top-k changes).

Every function takes two score vectors over the same words and returns a float. A correlation
that is undefined (fewer than two words, or one vector constant) is NaN, which
``metrics.base.mean_interval`` skips when averaging.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"two score vectors over the same words are needed, got shapes {a.shape} and {b.shape}")
    return a, b


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation written out so that identical inputs give exactly 1.0."""
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if len(x) < 2 or sxx == 0.0 or syy == 0.0:
        return float("nan")
    return float(np.clip(float(dx @ dy) / np.sqrt(sxx * syy), -1.0, 1.0))


def spearman(a, b) -> float:
    """Spearman's rho of the signed scores: Pearson correlation of their ranks (ties averaged)."""
    a, b = _pair(a, b)
    return _pearson(stats.rankdata(a), stats.rankdata(b))


def spearman_abs(a, b) -> float:
    """Spearman's rho of the absolute scores (agreement on importance regardless of direction)."""
    a, b = _pair(a, b)
    return spearman(np.abs(a), np.abs(b))


def kendall(a, b) -> float:
    """Kendall's tau-b of the signed scores."""
    a, b = _pair(a, b)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(stats.kendalltau(a, b).statistic)


def top_k_size(n_words: int, fraction: float) -> int:
    """k for a fraction of the words, rounded half up, at least 1 (0 for no words)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"the top-k fraction must be in (0, 1], got {fraction}")
    return min(n_words, max(1, int(np.floor(fraction * n_words + 0.5))))


def top_k(scores, k: int, absolute: bool = False) -> np.ndarray:
    """Indices of the k highest scores (ties broken by word order)."""
    values = np.abs(np.asarray(scores, dtype=np.float64)) if absolute else np.asarray(scores, dtype=np.float64)
    if not 0 <= k <= len(values):
        raise ValueError(f"k={k} is outside [0, {len(values)}]")
    return np.argsort(-values, kind="stable")[:k]


def top_k_overlap(a, b, k: int, absolute: bool = False) -> float:
    """Share of the k highest-scoring words of ``a`` that are also among the k highest of ``b``;
    NaN where either map's scores (their absolute values with ``absolute``) are all equal, so it
    has no top words: word order would choose them, and a method that found nothing would agree
    with any that favours the first words (as the rank correlations are undefined there). With k
    the number of words every word is a top word: 1, whatever the scores."""
    a, b = _pair(a, b)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    compared = (np.abs(a), np.abs(b)) if absolute else (a, b)
    if k < len(a) and any(np.ptp(values) == 0 for values in compared):
        return float("nan")
    return len(set(top_k(a, k, absolute).tolist()) & set(top_k(b, k, absolute).tolist())) / k


def sign_change(a, b) -> float:
    """Share of words whose score has another sign in ``b`` than in ``a`` (Pham et al. 2022, Table
    A5 (a)); a score of exactly zero counts as its own sign."""
    a, b = _pair(a, b)
    if len(a) == 0:
        return float("nan")
    return float(np.mean(np.sign(a) != np.sign(b)))


def mean_abs_change(a, b) -> float:
    """Mean absolute difference of the scores (Pham et al. 2022, Table A5 (b)), in the method's own
    unit."""
    a, b = _pair(a, b)
    if len(a) == 0:
        return float("nan")
    return float(np.mean(np.abs(a - b)))


# --------------------------------------------------------------------------- several methods at once

# The measures a methods x methods agreement matrix can show, all symmetric in their arguments.
MATRIX_MEASURES = ("spearman", "spearman_abs", "kendall", "top_k_overlap")


def _measure(name: str, top_k_fraction: float):
    if name == "spearman":
        return spearman
    if name == "spearman_abs":
        return spearman_abs
    if name == "kendall":
        return kendall
    if name == "top_k_overlap":
        return lambda a, b: top_k_overlap(a, b, top_k_size(len(a), top_k_fraction), absolute=True)
    raise ValueError(f"unknown agreement measure {name!r}; known: {', '.join(MATRIX_MEASURES)}")


def agreement_matrix(
    scores: dict[str, np.ndarray], measure: str = "spearman", top_k_fraction: float = 0.2
) -> np.ndarray:
    """``measure`` between every pair of methods' scores over the same words, as a symmetric
    (methods x methods) array in the order of ``scores``; the diagonal is 1 (NaN where a method's
    scores are constant and the correlation is undefined). ``top_k_overlap`` compares the top
    ``top_k_fraction`` of the words by absolute score."""
    compute = _measure(measure, top_k_fraction)
    names = list(scores)
    matrix = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        for j in range(i, len(names)):
            value = compute(scores[a], scores[names[j]])
            matrix[i, j] = matrix[j, i] = value
    return matrix


def mean_agreement_matrix(
    per_example: list[dict[str, np.ndarray]], measure: str = "spearman", top_k_fraction: float = 0.2
) -> tuple[list[str], np.ndarray]:
    """The mean over examples of ``agreement_matrix`` (undefined values left out of each mean),
    over the methods every example has."""
    if not per_example:
        raise ValueError("no examples to compare the methods on")
    names = [m for m in per_example[0] if all(m in scores for scores in per_example)]
    stacked = np.stack([agreement_matrix({m: s[m] for m in names}, measure, top_k_fraction) for s in per_example])
    with np.errstate(invalid="ignore"):
        counts = np.sum(np.isfinite(stacked), axis=0)
        means = np.where(counts > 0, np.nansum(stacked, axis=0) / np.maximum(counts, 1), np.nan)
    return names, means


def mean_pairwise(matrix: np.ndarray) -> float:
    """Mean of the off-diagonal entries (undefined ones left out): how much the methods agree."""
    off = matrix[~np.eye(len(matrix), dtype=bool)]
    off = off[np.isfinite(off)]
    return float(off.mean()) if len(off) else float("nan")


def cluster_order(names: list[str], matrix: np.ndarray) -> list[str]:
    """The methods reordered so that those that agree sit together: average-linkage clustering on
    the distance 1 - agreement (undefined agreement counts as none), leaves in dendrogram order."""
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    if len(names) < 3:
        return list(names)
    distance = 1.0 - np.nan_to_num(matrix, nan=0.0)
    distance = np.clip((distance + distance.T) / 2, 0.0, None)
    np.fill_diagonal(distance, 0.0)
    order = leaves_list(linkage(squareform(distance, checks=False), method="average"))
    return [names[i] for i in order]
