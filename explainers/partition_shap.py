"""Partition SHAP over words: the ``shap`` package's ``PartitionExplainer`` (Owen values over a
hierarchy of words; Lundberg & Lee 2017, arXiv:1705.07874; the recursion is shap's, and ferret's
default SHAP explainer for text).

The hierarchy is the one shap's ``Text`` masker builds (``shap.maskers._text.partition_tree``,
its heuristic merge of neighbouring tokens at punctuation and spaces), run on the example's
words instead of a tokenizer's pieces; a sentence pair is split at the segment border first.
The masker is ours: the players are the words, a coalition is a 0/1 "word present" vector, and
the model maps every batch of coalitions to the target's probability (or log2-odds) of the
input with the absent words removed (replaced by one [MASK] token each by default, as shap's
text masker replaces them by the tokenizer's mask token, though without collapsing runs of
masks into one; or deleted, or [UNK]/[PAD], or zeroed), built on token ids and scored by the
shared scorer (``Classifier.predict_proba``). shap's explainer evaluates the tree level by level
with a batch size of ``n_evals``, so each level is one scorer call.

Owen values are Shapley values when the model is additive over words, and always sum to
``f(x) - f(no words)`` (efficiency). ``n_evals`` caps the evaluations (shap's ``max_evals``); a
balanced tree of n words needs about 2 n^2 / 3 to be explored fully (then the result does not depend
on the budget; ``extras["evaluations"]`` says how many were used). shap breaks ties in its priority
queue with numpy's global generator, seeded with 0 (``core.global_rng``), so the method is
deterministic. Cost: at most ``n_evals`` forward passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.classifier import Classifier, ProgressFn
from core.global_rng import seeded_globals
from core.params import param
from core.perturb import REMOVALS, removal_variant
from core.types import Attribution, Example
from explainers._masking import rng_devices
from explainers._shap_kernels import partition_explainer
from explainers.base import Passes, make_attribution
from explainers.loo import OUTPUTS


@dataclass(frozen=True)
class PartitionShapParams:
    n_evals: int = param(500, "most coalitions evaluated (shap's max_evals)", min=3, max=100_000)
    removal: str = param("mask", "how an absent word is removed", choices=REMOVALS)
    output: str = param("probability", "score space: probability or log2-odds", choices=OUTPUTS)


class _WordMasker:
    """A shap masker whose masked input is the 0/1 word-presence vector itself."""

    immutable_outputs = True

    def __init__(self, clustering: np.ndarray, n_words: int) -> None:
        self.clustering = clustering
        self.shape = (1, n_words)

    def __call__(self, mask: np.ndarray, x: np.ndarray) -> tuple[np.ndarray]:
        return (np.asarray(mask, dtype=np.float64).reshape(1, -1),)


def word_tree(segments: tuple[tuple[str, ...], ...]) -> np.ndarray:
    """A shap linkage matrix (n - 1, 4) over the flat words: shap's text partition tree of each
    segment, the two segments joined last."""
    from shap.maskers._text import partition_tree

    trees, roots, offset, next_index = [], [], 0, sum(len(s) for s in segments)
    n = next_index
    for segment in segments:
        m = len(segment)
        tree = partition_tree(list(segment), []) if m > 1 else np.zeros((0, 4))
        # Relabel: leaves by their flat position, merges by their row in the joint matrix.
        relabel = np.array([offset + i for i in range(m)] + [next_index + r for r in range(m - 1)], dtype=np.float64)
        if m > 1:
            tree = tree.copy()
            tree[:, :2] = relabel[tree[:, :2].astype(int)]
        trees.append(tree)
        roots.append(int(relabel[-1]) if m > 1 else offset)
        offset += m
        next_index += m - 1
    joint = np.concatenate(trees) if trees else np.zeros((0, 4))
    if len(segments) == 2 and all(segments):
        top = max(joint[:, 2].max() if len(joint) else 0.0, 0.0) + 1.0
        joint = np.vstack([joint, [roots[0], roots[1], top, n]])
    return joint


def explain(
    clf: Classifier,
    example: Example,
    target: int,
    params: PartitionShapParams,
    *,
    mlm=None,
    progress: ProgressFn | None = None,
) -> Attribution:
    encoded = clf.encode(example)
    n = encoded.n_words
    segments = tuple(s for s in example.segments if s)

    def model(present: np.ndarray) -> np.ndarray:  # (batch, n_words) 0/1 -> (batch,)
        variants = [
            removal_variant(clf, encoded, np.flatnonzero(row < 0.5).tolist(), params.removal) for row in present
        ]
        return clf.head.transform(clf.predict_proba(variants, progress=progress)[:, target], params.output)

    explainer = partition_explainer(model, _WordMasker(word_tree(segments), n))
    with seeded_globals(
        0, rng_devices(clf)
    ):  # shap breaks rare priority ties at random: fixed, so the method is deterministic
        explanation = explainer(np.ones((1, n)), max_evals=params.n_evals, batch_size=params.n_evals, silent=True)
    scores = np.asarray(explanation.values[0], dtype=np.float64)
    base = float(np.asarray(explanation.base_values).reshape(-1)[0])
    extras = {"empty_value": base, "sum_of_scores": float(scores.sum()), "evaluations": int(explainer.last_eval_count)}
    return make_attribution(example, target, scores, extras=extras)


def passes(n_words: int, params: PartitionShapParams) -> Passes:
    """Cost model: shap's evaluation budget, or the 2^n distinct coalitions if fewer (the scorer
    scores a repeated coalition once)."""
    return Passes(classifier=min(params.n_evals, 2 ** min(n_words, 60)))
