"""Method agreement for the pages: the methods x methods matrix of one example or of a run."""

from __future__ import annotations

import numpy as np

from metrics import agreement


def _ordered(names: list[str], matrix: np.ndarray, clustered: bool) -> tuple[list[str], np.ndarray]:
    if not clustered:
        return names, matrix
    order = agreement.cluster_order(names, matrix)
    index = [names.index(m) for m in order]
    return order, matrix[np.ix_(index, index)]


def method_agreement(
    scores: dict[str, np.ndarray], measure: str = "spearman", top_k_fraction: float = 0.2, clustered: bool = False
) -> tuple[list[str], np.ndarray]:
    """The agreement of one example's word scores (``{method: scores}``), optionally with the
    methods reordered so that those that agree sit together."""
    return _ordered(list(scores), agreement.agreement_matrix(scores, measure, top_k_fraction), clustered)


def run_agreement(
    per_example: list[dict[str, np.ndarray]],
    measure: str = "spearman",
    top_k_fraction: float = 0.2,
    clustered: bool = False,
) -> tuple[list[str], np.ndarray, list[float]]:
    """The mean agreement matrix over a run's examples and each example's mean pairwise
    agreement (lowest = most disputed)."""
    names, matrix = agreement.mean_agreement_matrix(per_example, measure, top_k_fraction)
    disputes = [
        agreement.mean_pairwise(agreement.agreement_matrix({m: s[m] for m in names}, measure, top_k_fraction))
        for s in per_example
    ]
    names, matrix = _ordered(names, matrix, clustered)
    return names, matrix, disputes
