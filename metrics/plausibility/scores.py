"""One attribution's selection or ranking against one human mask: token overlap (Pham et al. 2022;
ERASER's token F1), ERASER's span partial-match F1 and AUPRC (DeYoung et al. 2020, arXiv
1911.03429) and the ground-truth overlap and mean rank (after Bastings et al.) of the thesis
"Assessing the Interpretability of Large Language Models" (Oxford MSc, 2022). Definitions in
``metrics.plausibility``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from metrics.plausibility.masks import ranking

SPAN_IOU = 0.5


def overlap(predicted: np.ndarray, human: np.ndarray) -> dict[str, float]:
    """IoU, precision, recall and F1 of two word sets (Pham et al. 2022 / ERASER token-level, 0 when
    empty)."""
    both = float(np.sum(predicted & human))
    n_pred, n_human, n_union = float(predicted.sum()), float(human.sum()), float(np.sum(predicted | human))
    precision = both / n_pred if n_pred else 0.0
    recall = both / n_human if n_human else 0.0
    return {
        "iou": both / n_union if n_union else 1.0,
        "precision": precision,
        "recall": recall,
        "f1": f1(precision, recall),
    }


def span_f1(
    predicted: Sequence[tuple[int, int]], human: Sequence[tuple[int, int]], min_iou: float = SPAN_IOU
) -> dict[str, float]:
    """ERASER's partial-match F1 for one instance: a predicted span counts when its best IoU with
    a human span reaches ``min_iou``."""
    hits = sum(int(max((_span_iou(p, h) for h in human), default=0.0) >= min_iou) for p in predicted)
    precision = hits / len(predicted) if predicted else 0.0
    recall = hits / len(human) if human else 0.0
    return {"f1": f1(precision, recall), "precision": precision, "recall": recall, "matched": hits}


def auprc(scores: np.ndarray, human: np.ndarray) -> dict[str, float]:
    """ERASER's AUPRC (trapezoid area under the precision-recall curve) and the average
    precision."""
    from sklearn.metrics import auc, average_precision_score, precision_recall_curve

    truth = human.astype(int)
    precision, recall, _ = precision_recall_curve(truth, scores)
    return {"auprc": float(auc(recall, precision)), "average_precision": float(average_precision_score(truth, scores))}


def rank_scores(scores: np.ndarray, human: np.ndarray) -> dict[str, float]:
    """The thesis's ground-truth overlap (share of the top-|L| words that are human words) and the
    mean rank (smallest r, and r / n, with every human word in the top r)."""
    order = ranking(scores)
    k = int(human.sum())
    found = float(human[order[:k]].sum())
    last = int(np.max(np.nonzero(human[order])[0])) + 1
    return {"gt_overlap": found / k, "exact_match": float(found == k), "rank": last, "mean_rank": last / len(scores)}


def f1(precision: float, recall: float) -> float:
    """The harmonic mean of ``precision`` and ``recall`` (0 when either is 0)."""
    return 0.0 if precision == 0 or recall == 0 else 2 * precision * recall / (precision + recall)


def _span_iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - inter
    return inter / union if union else 0.0
