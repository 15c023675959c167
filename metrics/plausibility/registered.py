"""The plausibility metrics as registry entries (``metrics.base.MetricSpec``): their parameters,
the empty-rationale rule and one ``METRICS`` tuple, read by ``metrics.REGISTRY``. Papers: Pham
et al. 2022 (Pham et al. 2022, arXiv 2110.11929), ERASER (DeYoung et al. 2020, arXiv 1911.03429) as
Brinner & Zarrieß 2023 (MaRC) uses it, and the thesis. Definitions in ``metrics.plausibility``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.params import param
from core.types import Attribution, Example
from metrics import eraser_documents
from metrics.base import MetricResult, MetricSpec
from metrics.plausibility.masks import binarize, human_mask, spans, top_k
from metrics.plausibility.scores import auprc, overlap, rank_scores, span_f1

ANNOTATOR_HELP = 'human mask: "majority", "any" (union of annotators) or an annotator index ("0", "1", ...)'
_DOUBLE_TROUBLE = "Pham et al. 2022, Double Trouble (arXiv 2110.11929)"
_ERASER = "DeYoung et al. 2020, ERASER; Brinner & Zarrieß 2023 (MaRC)"
_THESIS = "Assessing the Interpretability of LLMs, thesis 2022"


@dataclass(frozen=True)
class ThresholdParams:
    annotator: str = param("majority", ANNOTATOR_HELP)
    threshold: float = param(0.5, "tau: select words whose score / max score is at least this", min=0.0, max=1.0)


@dataclass(frozen=True)
class SelectionParams:
    annotator: str = param("majority", ANNOTATOR_HELP)
    selection: str = param("top_k", "which words the map selects", choices=("top_k", "threshold"))
    k: int = param(0, "top-k size; 0 = as many words as the human rationale", min=0)
    threshold: float = param(0.5, "tau when selection is threshold", min=0.0, max=1.0)


@dataclass(frozen=True)
class RankingParams:
    annotator: str = param("majority", ANNOTATOR_HELP)


@dataclass(frozen=True)
class EraserSelectionParams(SelectionParams):
    """Token F1 and IOU-F1: a selection and the document convention
    (metrics/eraser_documents.py)."""

    convention: str = param("ours", eraser_documents.CONVENTION_HELP, choices=eraser_documents.CONVENTIONS)


@dataclass(frozen=True)
class EraserRankingParams(RankingParams):
    """AUPRC: the document convention (metrics/eraser_documents.py)."""

    convention: str = param("ours", eraser_documents.CONVENTION_HELP, choices=eraser_documents.CONVENTIONS)


def select(scores: np.ndarray, human: np.ndarray, params: SelectionParams) -> np.ndarray:
    """The words a map selects under ``params`` (top-k, k defaulting to the human count, or tau)."""
    if params.selection == "threshold":
        return binarize(scores, params.threshold)
    return top_k(scores, params.k or int(human.sum()))


MapScore = Callable[[np.ndarray, np.ndarray, Example, Any], MetricResult]


def _against_human(score: MapScore) -> Callable[..., MetricResult]:
    """Wrap ``score(scores, human, example, params)`` as a registry ``compute`` that picks the
    human mask, checks the scores and applies the empty-rationale rule."""

    def compute(clf: Any, example: Example, attribution: Attribution, params: Any, *, mlm: Any = None) -> MetricResult:
        human, empty = human_mask(example, params.annotator)
        scores = np.asarray(attribution.scores, dtype=np.float64)
        if scores.shape != human.shape:
            raise ValueError(f"{len(scores)} scores for {len(human)} words of {example.id!r}")
        if not np.all(np.isfinite(scores)):
            raise ValueError(f"{attribution.method}: non-finite scores for {example.id!r}")
        if empty is not None:
            return MetricResult(float("nan"), extras={"skipped": empty})
        return score(scores, human, example, params)

    return compute


def _threshold_metric(key: str) -> Callable[..., MetricResult]:
    def score(scores: np.ndarray, human: np.ndarray, example: Example, params: ThresholdParams) -> MetricResult:
        values = overlap(binarize(scores, params.threshold), human)
        return MetricResult(values[key], extras={**values, "threshold": params.threshold})

    return _against_human(score)


def _coverage(scores: np.ndarray, human: np.ndarray, example: Example, params: ThresholdParams) -> MetricResult:
    selected = binarize(scores, params.threshold)
    return MetricResult(
        float(selected.mean()),
        extras={"human_coverage": float(human.mean()), "selected": int(selected.sum()), "threshold": params.threshold},
    )


def _token_f1(scores: np.ndarray, human: np.ndarray, example: Example, params: EraserSelectionParams) -> MetricResult:
    selected = select(scores, human, params)
    values = overlap(selected, human)
    extras = {
        "precision": values["precision"],
        "recall": values["recall"],
        "k": int(selected.sum()),
        "selected": np.flatnonzero(selected).tolist(),
        **_counts(int(np.sum(selected & human)), int(selected.sum()), int(human.sum())),
    }
    if params.convention == "eraser":
        documents = eraser_documents.token_documents(selected, human, example.segment_ids)
        return eraser_documents.result("token_f1", documents, extras)
    return MetricResult(values["f1"], extras={**extras, "convention": "ours"})


def _iou_f1(scores: np.ndarray, human: np.ndarray, example: Example, params: EraserSelectionParams) -> MetricResult:
    selected = select(scores, human, params)
    predicted = spans(selected, example.segment_ids)
    reference = spans(human, example.segment_ids)
    values = span_f1(predicted, reference)
    extras = {
        **values,
        "predicted_spans": predicted,
        "human_spans": reference,
        "k": sum(e - s for s, e in predicted),
        "selected": np.flatnonzero(selected).tolist(),
        **_counts(values["matched"], len(predicted), len(reference)),
    }
    if params.convention == "eraser":
        documents = eraser_documents.span_documents(predicted, reference, example.segment_ids, span_f1)
        return eraser_documents.result("iou_f1", documents, extras)
    return MetricResult(values["f1"], extras={**extras, "convention": "ours"})


def _counts(matched: int, n_predicted: int, n_human: int) -> dict[str, int]:
    """The counts behind a token or span F1, so a slice can be scored micro-averaged as ERASER
    does."""
    return {"matched": matched, "n_predicted": n_predicted, "n_human": n_human}


def _contiguity(scores: np.ndarray, human: np.ndarray, example: Example, params: SelectionParams) -> MetricResult:
    """Words per span of the selected words (at the human rationale's size by default): MaRC
    (Brinner & Zarrieß 2023) argues that rationales should be phrases, not scattered words."""
    selected = select(scores, human, params)
    found = spans(selected, example.segment_ids)
    lengths = [end - start for start, end in found]
    k = int(selected.sum())
    in_phrases = sum(n for n in lengths if n >= 2) / k if k else 0.0
    human_spans = spans(human, example.segment_ids)
    return MetricResult(
        k / len(found) if found else 0.0,
        extras={
            "spans": len(found),
            "k": k,
            "share_in_phrases": in_phrases,
            "human_words_per_span": float(human.sum()) / len(human_spans) if human_spans else 0.0,
        },
    )


def _auprc(scores: np.ndarray, human: np.ndarray, example: Example, params: EraserRankingParams) -> MetricResult:
    values = auprc(scores, human)
    if params.convention == "eraser":
        documents = eraser_documents.auprc_documents(scores, human, example.segment_ids, auprc)
        return eraser_documents.result("auprc", documents, values)
    return MetricResult(values["auprc"], extras={**values, "convention": "ours"})


def _rank_metric(key: str) -> MapScore:
    def score(scores: np.ndarray, human: np.ndarray, example: Example, params: RankingParams) -> MetricResult:
        values = rank_scores(scores, human)
        return MetricResult(values[key], extras=values)

    return score


def _spec(**kwargs: Any) -> MetricSpec:
    """A plausibility entry: compared with human rationales, no classifier needed; the metrics
    taking ``ThresholdParams`` binarize the map at tau."""
    return MetricSpec(
        family="plausibility",
        thresholded=kwargs["params_cls"] is ThresholdParams,
        needs_classifier=False,
        needs_rationale=True,
        **kwargs,
    )


METRICS = (
    _spec(
        key="iou",
        function=_threshold_metric("iou"),
        params_cls=ThresholdParams,
        description="IoU of the binarized map and the human mask",
        label="IoU",
        higher_is_better=True,
        paper=_DOUBLE_TROUBLE,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="precision",
        function=_threshold_metric("precision"),
        params_cls=ThresholdParams,
        description="share of the binarized map's words that humans marked",
        label="precision",
        higher_is_better=True,
        paper=_DOUBLE_TROUBLE,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="recall",
        function=_threshold_metric("recall"),
        params_cls=ThresholdParams,
        description="share of the human words the binarized map selects",
        label="recall",
        higher_is_better=True,
        paper=_DOUBLE_TROUBLE,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="f1",
        function=_threshold_metric("f1"),
        params_cls=ThresholdParams,
        description="F1 of the binarized map against the human mask",
        label="F1",
        higher_is_better=True,
        paper=_DOUBLE_TROUBLE,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="token_f1",
        function=_against_human(_token_f1),
        params_cls=EraserSelectionParams,
        description="token F1 of the top-k words (k = human length)",
        label="token F1",
        higher_is_better=True,
        paper=_ERASER,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="iou_f1",
        function=_against_human(_iou_f1),
        params_cls=EraserSelectionParams,
        description="span F1, a predicted span matching a human one at IoU >= 0.5",
        label="IOU-F1",
        higher_is_better=True,
        paper=_ERASER,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="auprc",
        function=_against_human(_auprc),
        params_cls=EraserRankingParams,
        description="area under the precision-recall curve of the scores",
        label="AUPRC",
        higher_is_better=True,
        paper=_ERASER,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="gt_overlap",
        function=_against_human(_rank_metric("gt_overlap")),
        params_cls=RankingParams,
        description="share of the top-|L| words that humans marked",
        label="GT overlap",
        higher_is_better=True,
        paper=_THESIS,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="mean_rank",
        function=_against_human(_rank_metric("mean_rank")),
        params_cls=RankingParams,
        description="share of the ranking needed to cover every human word",
        label="mean rank",
        higher_is_better=False,
        paper=_THESIS,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="contiguity",
        function=_against_human(_contiguity),
        params_cls=SelectionParams,
        description="words per span of the top-k words (k = human length; the humans' own figure in extras)",
        label="contiguity",
        in_table=False,
        higher_is_better=True,
        paper=_ERASER,
        value_range=None,
    ),
    _spec(
        key="coverage",
        function=_against_human(_coverage),
        params_cls=ThresholdParams,
        description="share of words the binarized map selects (human share in extras; no better direction)",
        label="coverage",
        higher_is_better=False,
        paper=_DOUBLE_TROUBLE,
        value_range=(0.0, 1.0),
    ),
)
KEYS = tuple(spec.key for spec in METRICS)
BY_KEY = {spec.key: spec for spec in METRICS}
THRESHOLD_KEYS = tuple(spec.key for spec in METRICS if spec.thresholded)
# A binary mask ranks its words only by position, so the rank metrics have no human ceiling.
CEILING_KEYS = tuple(key for key in KEYS if key not in ("gt_overlap", "mean_rank"))
