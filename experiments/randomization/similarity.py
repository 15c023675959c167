"""How close an explanation of a randomised model is to the original one: Spearman's rho of the
signed and of the absolute scores and the top-k overlap (Adebayo et al. 2018, arXiv 1810.03292,
as the thesis reports them), and Pham et al.'s share of words changing sign and mean
absolute change (Pham et al. 2022, arXiv 2110.11929, Table A5)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from metrics import agreement

MEASURES = ("spearman", "spearman_abs", "topk_overlap", "sign_change", "mean_abs_change")
# Each measure's range, which a mean's interval is cut to (rank correlations, shares, an absolute change).
MEASURE_BOUNDS = {
    "spearman": (-1.0, 1.0),
    "spearman_abs": (-1.0, 1.0),
    "topk_overlap": (0.0, 1.0),
    "sign_change": (0.0, 1.0),
    "mean_abs_change": (0.0, math.inf),
}


@dataclass(frozen=True)
class Similarity:
    """How close a step's scores are to the original ones (see ``MEASURES``)."""

    spearman: float
    spearman_abs: float
    topk_overlap: float
    sign_change: float
    mean_abs_change: float


def similarity(original, scores, top_k_fraction: float = 0.2) -> Similarity:
    """Compare a step's word scores with the original ones; top-k uses the highest signed scores,
    ``k = top_k_fraction`` of the words rounded, at least 1."""
    original = np.asarray(original, dtype=np.float64)
    if len(original) == 0:
        raise ValueError("cannot compare attributions over zero words")
    k = agreement.top_k_size(len(original), top_k_fraction)
    return Similarity(
        spearman=agreement.spearman(original, scores),
        spearman_abs=agreement.spearman_abs(original, scores),
        topk_overlap=agreement.top_k_overlap(original, scores, k),
        sign_change=agreement.sign_change(original, scores),
        mean_abs_change=agreement.mean_abs_change(original, scores),
    )


def pooled_correlation(original, randomized, absolute: bool = False) -> tuple[float, float, float, int]:
    """Spearman's rho over every word of every example at once (each example's original scores
    against its randomised ones, the pairs pooled; of the absolute scores when ``absolute``),
    with the 95% interval of Fisher's z for the Pearson correlation of the ranks (SciPy), and the
    number of words: (rho, low, high, n). NaN where rho is undefined (fewer than 4 words, or
    constant scores)."""
    a = np.concatenate([np.asarray(x, dtype=np.float64) for x in original])
    b = np.concatenate([np.asarray(x, dtype=np.float64) for x in randomized])
    if absolute:
        a, b = np.abs(a), np.abs(b)
    n = len(a)
    if n < 4 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan, math.nan, math.nan, n
    result = stats.pearsonr(stats.rankdata(a), stats.rankdata(b))
    interval = result.confidence_interval(0.95)
    return float(result.statistic), float(interval.low), float(interval.high), n
