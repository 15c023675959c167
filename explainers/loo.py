"""Leave-one-out: remove one word and watch the prediction (Pham et al. 2022, Eq. 1; Li et al.
2016).

``a_i = g(f(x)) - g(f(x with word i removed))`` with ``f`` the explained output (``core.heads``)
and ``g`` the log2-odds (Pham et al.'s default, for comparison with Input Marginalization) or the
identity (probability difference); for a regression head ``g`` is the identity either way. The word
is deleted (``loo_empty``), replaced by one [UNK] / [PAD] / [MASK] token, or its input
embeddings are zeroed (``loo_zero``). Cost: n + 1 forward passes in one batch, pooled with the
other examples' in a dataset run (explainers/pooling.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.classifier import Classifier
from core.params import param
from core.perturb import REMOVALS, removal_variant
from core.types import Attribution, Example
from explainers.base import Passes, make_attribution, one_example
from explainers.pooling import Scoring, pooled

OUTPUTS = ("log_odds", "probability")


@dataclass(frozen=True)
class LooParams:
    removal: str = param("delete", "how the word is removed", choices=REMOVALS)
    output: str = param("log_odds", "score space: log2-odds difference or probability difference", choices=OUTPUTS)


def passes(n_words: int, params: LooParams) -> Passes:
    """Cost model: the input and one variant per word (a variant met twice is scored once)."""
    return Passes(classifier=n_words + 1)


def plan(clf: Classifier, example: Example, target: int, params: LooParams) -> Scoring:
    encoded = clf.encode(example)
    variants = [encoded.variant] + [removal_variant(clf, encoded, [i], params.removal) for i in range(encoded.n_words)]

    def finish(outputs: np.ndarray) -> Attribution:
        probs = outputs[:, target]
        values = clf.head.transform(probs, params.output)
        return make_attribution(
            example,
            target,
            values[0] - values[1:],
            extras={"original_probability": float(probs[0]), "removed_probabilities": probs[1:].tolist()},
        )

    return Scoring(variants, finish)


explain_batch = pooled(plan)
explain = one_example(explain_batch)
