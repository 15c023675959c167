"""Several examples' perturbations in the scorer's batches.

A one-call perturbation method (leave-one-out, occlusion, Sobol, LIME) builds every variant of
an example before it scores any, scores them in one call and turns the outputs into the
attribution. Written as ``plan(clf, example, target, params) -> Scoring`` (the variants, and
``finish`` from their outputs to the attribution), ``pooled(plan)`` is its batch function: the
variants of every example of the batch go to the shared scorer together
(``Classifier.predict_proba_groups``: each example's duplicates scored and counted once, the
pool sorted by length and chunked by ``batch_size``) and each example's outputs to its own
``finish``. Its single-example ``explain`` is that with one example (``one_example``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.classifier import Classifier, ProgressFn
from core.encoding import Variant
from core.types import Attribution, Example
from explainers.base import BatchFn


@dataclass(frozen=True)
class Scoring:
    """One example's perturbations and how their outputs (n, n_labels) become its attribution."""

    variants: Sequence[Variant]
    finish: Callable[[np.ndarray], Attribution]


PlanFn = Callable[..., Scoring]


def pooled(plan: PlanFn) -> BatchFn:
    """The batch function of a one-call perturbation method written as ``plan`` (see module)."""

    def explain_batch(
        clf: Classifier,
        examples: Sequence[Example],
        targets: Sequence[int],
        params: Any,
        *,
        mlm=None,
        progress: ProgressFn | None = None,
    ) -> list[Attribution]:
        scorings = [plan(clf, example, target, params) for example, target in zip(examples, targets, strict=True)]
        outputs = clf.predict_proba_groups([s.variants for s in scorings], progress=progress)
        return [s.finish(o) for s, o in zip(scorings, outputs, strict=True)]

    return explain_batch
