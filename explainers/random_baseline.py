"""The random baseline (thesis, seed 002, section 1.8): a seeded random ranking of the words."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.classifier import Classifier
from core.params import param
from core.types import Attribution, Example
from explainers.base import make_attribution


@dataclass(frozen=True)
class RandomParams:
    seed: int = param(0, "random seed")


def explain(
    clf: Classifier, example: Example, target: int, params: RandomParams, *, mlm=None, progress=None
) -> Attribution:
    """Uniform scores in [0, 1) from a local generator: their order is a random permutation."""
    return make_attribution(example, target, np.random.default_rng(params.seed).random(len(example.words)))
