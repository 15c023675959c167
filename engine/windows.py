"""Sliding windows: explain a document longer than the model accepts, all of it.

A BERT-style classifier reads at most 512 tokens; an ERASER movie review runs to 700-1,000
words. By default the engine explains the words that fit and counts the rest as dropped. With
windows, the document is cut into overlapping runs of whole words that each fit the model, every
window is explained on its own, and the windows' word scores are stitched back onto the
document's words. Choices, also in docs/ARCHITECTURE.md:

- **Which methods.** Only methods whose score of a word is read off that word's neighbourhood
  (the registry's ``windowable`` flag: leave-one-out and masked-LM replacement, gradients, the
  random baseline). A method that fits one surrogate or one mask over the whole
  input (LIME, SHAP, MaRC, AML) or reads attention across the whole input would explain a
  different question per window, so it is refused with a message.
- **Target.** The document's prediction is the mean of the windows' probabilities; the class
  explained in every window is the one asked for, else the class with the highest mean.
- **Stitching.** ``central`` (default) takes each word's score from the window in which it has
  the most words of context on its less-covered side, as BERT's doc-stride reading of long
  passages does (Devlin et al., 2018, arXiv 1810.04805); ``mean`` averages the windows that
  hold the word. Scores of different windows are on the same scale (the same output of the same
  model), but each window's prediction differs, so ``central`` avoids mixing contexts.
- **Overlap.** Consecutive windows share ``overlap`` of a window's words (default 0.5).
- Single texts only: a sentence pair that does not fit is cut as before (``fit_example``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from core.classifier import Classifier
from core.types import Example

STITCH_RULES = ("central", "mean")


@dataclass(frozen=True)
class Windows:
    """How a document that does not fit is explained in windows."""

    overlap: float = 0.5
    stitch: str = "central"

    def __post_init__(self) -> None:
        if not 0.0 <= self.overlap < 1.0:
            raise ValueError(f"window overlap {self.overlap} must be in [0, 1)")
        if self.stitch not in STITCH_RULES:
            raise ValueError(f"unknown stitch rule {self.stitch!r} (allowed: {', '.join(STITCH_RULES)})")


def plan(clf: Classifier, example: Example, overlap: float) -> list[tuple[int, int]]:
    """Word ranges ``[start, end)`` of consecutive windows that each fit the model and together
    cover the example; each window is as long as the model allows from its start."""
    words = example.words
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        fitted, _ = clf.fit_example(Example(segments=(words[start:],)))
        end = start + len(fitted.words)
        if end == start:
            raise ValueError(f"word {start} ({words[start]!r}) alone does not fit {clf.name}")
        spans.append((start, end))
        if end >= len(words):
            return spans
        start += max(1, int((end - start) * (1.0 - overlap)))


def window_example(example: Example, span: tuple[int, int], index: int) -> Example:
    """The words of one window as an example of their own (rationales cut alike)."""
    start, end = span
    return replace(
        example,
        segments=(example.words[start:end],),
        rationales=tuple(tuple(m[start:end]) for m in example.rationales),
        rationale=tuple(example.rationale[start:end]) if example.rationale is not None else None,
        id=f"{example.id}#window{index}",
    )


def stitch(scores: list[np.ndarray], spans: list[tuple[int, int]], n_words: int, rule: str) -> np.ndarray:
    """One score per document word from the windows' scores (``rule``: see the module docstring)."""
    if rule == "mean":
        total = np.zeros(n_words, dtype=np.float64)
        count = np.zeros(n_words, dtype=np.int64)
        for window_scores, (start, end) in zip(scores, spans, strict=True):
            total[start:end] += window_scores
            count[start:end] += 1
        return (total / np.maximum(count, 1)).astype(np.float32)
    best = np.full(n_words, -1, dtype=np.int64)
    out = np.zeros(n_words, dtype=np.float32)
    for window_scores, (start, end) in zip(scores, spans, strict=True):
        positions = np.arange(start, end)
        context = np.minimum(positions - start, end - 1 - positions)
        better = context > best[start:end]
        out[start:end][better] = np.asarray(window_scores)[better]
        best[start:end][better] = context[better]
    return out
