"""Occlusion over sliding windows of words (Zeiler & Fergus 2014, arXiv:1311.2901), through
Captum's ``Occlusion``.

A window of ``window`` consecutive words (1 to 3) slides over the text with stride 1; each
position removes its words (replaced by one [MASK] token each by default, or deleted, or
[UNK]/[PAD], or zeroed) and the drop ``g(f(x)) - g(f(x without the window))`` is credited to
every word of the window; a word's score is the mean drop over the windows that cover it, as
Captum's ``Occlusion`` averages (``g``: the probability of the target, or its log2-odds as
leave-one-out uses). With ``window=1`` this is leave-one-out with the same removal.

Captum sees a (1, n_words) input of ones with a baseline of zeros and slides its window over it; the
forward function maps each 0/1 "word present" row to a variant built on token ids. All variants (the
input and every window) are built before anything is scored and go to the shared scorer in one call
(pooled with the other examples' in a dataset run, explainers/pooling.py); Captum's calls then read
their values. Windows slide over the whole text: in a sentence pair one window can cover the end of
the premise and the start of the hypothesis. Cost: ``n_words - window + 2`` forward passes
(``n_words + 1`` for a window of 1), duplicates scored once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.classifier import Classifier
from core.params import param
from core.perturb import REMOVALS, removal_variant
from core.types import Attribution, Example
from explainers.base import Passes, make_attribution, one_example
from explainers.loo import OUTPUTS
from explainers.pooling import Scoring, pooled


@dataclass(frozen=True)
class OcclusionParams:
    window: int = param(3, "words per sliding window (stride 1)", min=1, max=3)
    removal: str = param("mask", "how the window's words are removed", choices=REMOVALS)
    output: str = param("probability", "score space: probability or log2-odds difference", choices=OUTPUTS)


def windows(n_words: int, window: int) -> list[list[int]]:
    """Word indices of every window position (one window of all words when the text is shorter)."""
    size = min(window, n_words)
    return [list(range(start, start + size)) for start in range(n_words - size + 1)]


def plan(clf: Classifier, example: Example, target: int, params: OcclusionParams) -> Scoring:
    encoded = clf.encode(example)
    n = encoded.n_words
    spans = windows(n, params.window)
    rows = [tuple([1] * n)] + [tuple(0 if i in span else 1 for i in range(n)) for span in spans]
    variants = [encoded.variant] + [removal_variant(clf, encoded, span, params.removal) for span in spans]

    def finish(outputs: np.ndarray) -> Attribution:
        from captum.attr import Occlusion

        probabilities = outputs[:, target]
        value_of = dict(zip(rows, clf.head.transform(probabilities, params.output), strict=True))

        def forward(present: torch.Tensor) -> torch.Tensor:  # (batch, n_words) 0/1 -> (batch,)
            keys = [tuple(int(v > 0.5) for v in row) for row in present.cpu().numpy()]
            return torch.as_tensor([value_of[key] for key in keys], dtype=torch.float64)

        scores = (
            Occlusion(forward)
            .attribute(
                torch.ones(1, n, dtype=torch.float64),
                sliding_window_shapes=(len(spans[0]),),
                strides=1,
                baselines=0.0,
                perturbations_per_eval=len(spans),
            )[0]
            .numpy()
        )
        extras = {
            "original_probability": float(probabilities[0]),
            "window_probabilities": probabilities[1:].tolist(),
            "windows": spans,
        }
        return make_attribution(example, target, np.asarray(scores, dtype=np.float64), extras=extras)

    return Scoring(variants, finish)


explain_batch = pooled(plan)
explain = one_example(explain_batch)


def passes(n_words: int, params: OcclusionParams) -> Passes:
    """Cost model: the input and one variant per window position."""
    return Passes(classifier=1 + len(windows(n_words, params.window)))
