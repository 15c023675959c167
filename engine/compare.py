"""Two models side by side: the same example explained by both, and how their explanations agree.

LIT (Tenney et al. 2020, arXiv:2008.05122) puts two models next to each other; here both explain
the same words with the same methods, and each method's two rows are compared with Spearman's rho
(``metrics.agreement.spearman``, ties averaged). With a randomized copy of the model as the second
one this is the model randomization test of Adebayo et al. (2018, arXiv:1810.03292): a method
whose rows stay correlated does not depend on what the model learned.

The second model explains the first one's target class, matched by label name (case and spaces
ignored), else by index when both have as many classes; models with different numbers of
classes cannot be compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.datasets.labels import label_key
from core.types import Attribution, shared_words
from metrics import agreement


def label_map(names_a: Sequence[str], names_b: Sequence[str]) -> tuple[int, ...]:
    """For every class of model A, the index of the same class in model B: by name when both
    label sets hold the same names, by position when they share none (``LABEL_0`` ...);
    ``ValueError`` when the counts differ, or when some names are shared and others not (which
    class of B an unshared one of A is cannot be told)."""
    if len(names_a) != len(names_b):
        raise ValueError(
            f"the two models have different label sets ({', '.join(names_a)} vs {', '.join(names_b)}): "
            "pick a second model with the same classes"
        )
    keys_b = [label_key(name) for name in names_b]
    keys_a = [label_key(name) for name in names_a]
    if sorted(keys_a) == sorted(keys_b) and len(set(keys_b)) == len(keys_b):
        return tuple(keys_b.index(key) for key in keys_a)
    if set(keys_a) & set(keys_b):
        raise ValueError(
            f"the two models share some class names but not all ({', '.join(names_a)} vs {', '.join(names_b)}): "
            "pick a second model with the same classes"
        )
    return tuple(range(len(names_a)))


@dataclass(frozen=True)
class MethodAgreement:
    """How one method's two rows relate: Spearman's rho of the signed and of the absolute scores
    over the words both models saw (NaN where a row is constant), and how many words that is."""

    method: str
    spearman: float
    spearman_abs: float
    n_words: int


def compare_attributions(first: dict[str, Attribution], second: dict[str, Attribution]) -> dict[str, MethodAgreement]:
    """Per method present in both: the rank correlations of the two models' word scores. A model
    that cut a long text shorter is compared on the first words both kept (``shared_words``)."""
    result = {}
    for method in (m for m in first if m in second):
        n_words = shared_words([first[method], second[method]])
        a, b = first[method].scores[:n_words], second[method].scores[:n_words]
        result[method] = MethodAgreement(method, agreement.spearman(a, b), agreement.spearman_abs(a, b), n_words)
    return result
