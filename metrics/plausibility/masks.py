"""The human mask an example offers and the words an attribution selects: spans of a mask, Pham
et al.'s binarization at tau (arXiv 2110.11929), the ranking and its top k
(ERASER, DeYoung et al. 2020, arXiv 1911.03429). Definitions in ``metrics.plausibility``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.types import Example


def human_mask(example: Example, annotator: str = "majority") -> tuple[np.ndarray, str | None]:
    """The chosen human mask as a bool array over ``example.words``, and why it is empty (or
    None)."""
    n = len(example.words)
    if annotator == "majority":
        if example.rationale is None:
            return np.zeros(n, dtype=bool), "no human rationale"
        mask = np.asarray(example.rationale, dtype=bool)
    elif annotator == "any":
        masks = example.rationales or ((example.rationale,) if example.rationale is not None else ())
        if not masks:
            return np.zeros(n, dtype=bool), "no human rationale"
        mask = np.any(np.asarray(masks, dtype=bool), axis=0)
    elif annotator.isdigit():
        index = int(annotator)
        if index >= len(example.rationales):
            return np.zeros(n, dtype=bool), f"annotator {index} gave no rationale ({len(example.rationales)} masks)"
        mask = np.asarray(example.rationales[index], dtype=bool)
    else:
        raise ValueError(f'annotator must be "majority", "any" or an index, got {annotator!r}')
    return mask, None if mask.any() else "empty rationale"


def spans(mask: np.ndarray, segment_ids: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """Contiguous runs of selected words as ``(start, end)`` (end exclusive), split at segment
    borders."""
    mask = np.asarray(mask, dtype=bool)
    segment_ids = segment_ids if segment_ids is not None else (0,) * len(mask)
    runs: list[tuple[int, int]] = []
    start = None
    for i, selected in enumerate(mask):
        if start is not None and (not selected or segment_ids[i] != segment_ids[start]):
            runs.append((start, i))
            start = None
        if selected and start is None:
            start = i
    if start is not None:
        runs.append((start, len(mask)))
    return runs


def binarize(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Pham et al. 2022: zero the negatives, divide by the maximum, keep words at or above
    ``threshold``."""
    positive = np.clip(np.asarray(scores, dtype=np.float64), 0.0, None)
    peak = positive.max() if len(positive) else 0.0
    scaled = positive / peak if peak > 0 else positive
    return scaled >= threshold


def ranking(scores: np.ndarray) -> np.ndarray:
    """Word indices from the highest signed score to the lowest (ties in word order)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Bool mask of the ``k`` highest-scoring words."""
    mask = np.zeros(len(scores), dtype=bool)
    mask[ranking(scores)[: max(0, k)]] = True
    return mask
