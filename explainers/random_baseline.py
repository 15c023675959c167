"""The random baseline (Hooker et al. 2019, arXiv:1806.10758; the random explanation of the thesis
"Assessing the Interpretability of Large Language Models", Oxford MSc, 2022): a random ranking of
the words, drawn anew for every text."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from core.classifier import Classifier
from core.params import seed_param
from core.types import Attribution, Example
from explainers.base import make_attribution


@dataclass(frozen=True)
class RandomParams:
    seed: int = seed_param("random seed (with the text, it picks the ranking: the same text and seed, the same one)")


def explain(
    clf: Classifier, example: Example, target: int, params: RandomParams, *, mlm=None, progress=None
) -> Attribution:
    """Uniform scores in [0, 1) from a generator seeded with ``seed`` and the text, so their order
    is an independent random permutation per text: one seed for every text would rank the words
    of all texts of one length in the same positional order, a baseline that measures position."""
    return make_attribution(
        example, target, np.random.default_rng([params.seed, text_key(example)]).random(len(example.words))
    )


def text_key(example: Example) -> int:
    """A stable 64-bit number of the example's words and segments (the same in every process)."""
    text = "\x1e".join("\x1f".join(segment) for segment in example.segments)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
