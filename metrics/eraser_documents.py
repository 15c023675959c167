"""ERASER's document convention for token F1, IOU-F1 and AUPRC (DeYoung et al. 2020, "ERASER: A
Benchmark to Evaluate Rationalized NLP Models", arXiv:1911.03429).

ERASER stores an e-SNLI pair as two documents, the premise and the hypothesis, and its scoring
code (``rationale_benchmark/metrics.py``) keys every score by (annotation, document). Its macro
averages therefore run over documents, not over examples:

- token F1 (``score_hard_rationale_predictions``, "instance_macro"): precision, recall and F1 per
  document that has human words or selected words (a document with only one of the two scores
  0); the figure is the mean F1 over those documents;
- IOU-F1 (``partial_match_score`` at IoU 0.5, "macro"): per document the matched predicted spans;
  precision averaged over the documents with a predicted span, recall over the documents with a
  human span, and the figure is the F1 of those two means (not a mean of F1s);
- AUPRC (``score_soft_tokens``): the trapezoid area under scikit-learn's precision-recall curve
  per document the model scores, i.e. every document here, averaged; a document with no human
  word scores what that curve gives it (0.5), as in ERASER's code.

Here a document is a segment of the example (one for a single text, two for a pair). On a single
text (SST-2, movies, HateXplain) one example's value is the same under both conventions, but a
slice's IOU-F1 is not: ERASER's is the F1 of the mean precision and the mean recall, ours the
mean of the examples' F1s. Which words a map selects is decided over the whole example, as in
our convention (top-k with k the human count, or tau). One example's value is the convention
applied to its documents; a slice's figure pools the documents of all its examples
(``document_summary``), as ERASER's code pools them over a split.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from metrics.base import MetricResult, Summary

CONVENTIONS = ("ours", "eraser")
CONVENTION_HELP = (
    'documents: "ours" (a pair is one document) or "eraser" (premise and hypothesis are two documents, '
    "macro average over documents as ERASER's scoring code)"
)
KEYS = ("token_f1", "iou_f1", "auprc")


def segments(segment_ids: Sequence[int]) -> list[np.ndarray]:
    """Word indices of each document (segment), in order."""
    ids = np.asarray(segment_ids)
    return [np.flatnonzero(ids == s) for s in sorted(set(ids.tolist()))]


def _f1(precision: float, recall: float) -> float:
    return 0.0 if precision == 0 or recall == 0 else 2 * precision * recall / (precision + recall)


def token_documents(selected: np.ndarray, human: np.ndarray, segment_ids: Sequence[int]) -> list[dict[str, Any]]:
    """Per document with human or selected words: precision, recall and F1 (ERASER's instance)."""
    out = []
    for s, words in enumerate(segments(segment_ids)):
        predicted, truth = selected[words], human[words]
        if not predicted.any() and not truth.any():
            continue
        both = float(np.sum(predicted & truth))
        precision = both / predicted.sum() if predicted.any() else 0.0
        recall = both / truth.sum() if truth.any() else 0.0
        out.append({"segment": s, "precision": precision, "recall": recall, "value": _f1(precision, recall)})
    return out


def span_documents(
    predicted: Sequence[tuple[int, int]],
    human: Sequence[tuple[int, int]],
    segment_ids: Sequence[int],
    span_f1,
) -> list[dict[str, Any]]:
    """Per document with a predicted or human span: its precision (None without a predicted span)
    and recall (None without a human span); ``span_f1`` is plausibility's partial-match score."""
    ids = list(segment_ids)
    out = []
    for s in sorted(set(ids)):
        mine = [p for p in predicted if ids[p[0]] == s]
        theirs = [h for h in human if ids[h[0]] == s]
        if not mine and not theirs:
            continue
        hits = span_f1(mine, theirs)["matched"]
        out.append(
            {
                "segment": s,
                "precision": hits / len(mine) if mine else None,
                "recall": hits / len(theirs) if theirs else None,
                "matched": hits,
            }
        )
    return out


def auprc_documents(scores: np.ndarray, human: np.ndarray, segment_ids: Sequence[int], auprc) -> list[dict[str, Any]]:
    """Per document: plausibility's ``auprc`` of its words (every document is scored)."""
    out = []
    for s, words in enumerate(segments(segment_ids)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn warns on a document without human words
            values = auprc(scores[words], human[words])
        out.append({"segment": s, "value": values["auprc"], "average_precision": values["average_precision"]})
    return out


def macro(key: str, documents: Sequence[dict[str, Any]]) -> float:
    """ERASER's macro figure over ``documents``: the mean value, or for IOU-F1 the F1 of the mean
    precision (documents with a predicted span) and the mean recall (documents with a human
    span)."""
    if not documents:
        return 0.0
    if key == "iou_f1":
        precisions = [d["precision"] for d in documents if d["precision"] is not None]
        recalls = [d["recall"] for d in documents if d["recall"] is not None]
        return _f1(float(np.mean(precisions)) if precisions else 0.0, float(np.mean(recalls)) if recalls else 0.0)
    return float(np.mean([d["value"] for d in documents]))


def result(key: str, documents: list[dict[str, Any]], extras: dict[str, Any]) -> MetricResult:
    """One example's result under ERASER's convention, its documents and the convention in
    extras."""
    return MetricResult(macro(key, documents), extras={**extras, "convention": "eraser", "documents": documents})


def document_summary(
    key: str, results: Sequence[MetricResult], skipped: int = 0, bounds: tuple[float, float] | None = None
) -> Summary | None:
    """A slice's ERASER macro figure, pooled over the documents of all its examples; None when the
    results were not computed under ERASER's convention. The interval is over documents (token F1,
    AUPRC); IOU-F1's figure is an F1 of two means and has none (NaN)."""
    scored = [r for r in results if "skipped" not in r.extras]
    if not scored or any(r.extras.get("convention") != "eraser" for r in scored):
        return None
    documents = [d for r in scored for d in r.extras["documents"]]
    if key == "iou_f1":
        value = macro(key, documents)
        return Summary(value, float("nan"), float("nan"), len(documents), skipped)
    return Summary.of([d["value"] for d in documents], skipped, bounds)
