"""Agreement between two attributions of the same words: rank correlations and top-k overlap.

Used by the sanity checks (thesis, seed 002, section 2.7: Spearman's rho between the original
and a randomised model's explanation, after Adebayo et al. 2018), by the classifier-head reset of
paper 000 (Table A5: the share of words whose score changes sign and the mean absolute change),
and by the adversarial attacks (rank and top-k changes).

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
    """Share of the k highest-scoring words of ``a`` that are also among the k highest of ``b``."""
    a, b = _pair(a, b)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return len(set(top_k(a, k, absolute).tolist()) & set(top_k(b, k, absolute).tolist())) / k


def sign_change(a, b) -> float:
    """Share of words whose score has another sign in ``b`` than in ``a`` (paper 000, Table A5 (a));
    a score of exactly zero counts as its own sign."""
    a, b = _pair(a, b)
    if len(a) == 0:
        return float("nan")
    return float(np.mean(np.sign(a) != np.sign(b)))


def mean_abs_change(a, b) -> float:
    """Mean absolute difference of the scores (paper 000, Table A5 (b)), in the method's own unit."""
    a, b = _pair(a, b)
    if len(a) == 0:
        return float("nan")
    return float(np.mean(np.abs(a - b)))
