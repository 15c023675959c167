"""Plausibility: how well an attribution agrees with the words humans highlighted.

Definitions, by source:

- Paper 000 (Pham et al., "Double Trouble", agreement with human highlights): negative scores are
  set to zero, the map is divided by its maximum and binarized at a threshold ``tau`` (a word is
  selected when its scaled score is at least ``tau``); IoU, precision, recall and F1 then compare
  the selected words with the human mask. ``best_threshold`` searches tau over 0.05, 0.10, ...,
  0.95 for a slice of a dataset; ``coverage`` is the share of words selected, next to the share
  the humans selected. Empty-set rules follow the authors' code: with nothing selected,
  precision, recall, IoU and F1 are 0.
- ERASER (DeYoung et al. 2020, arXiv:1911.03429), as used by paper 003 (MaRC): token F1 of the top-k words (k = the
  human rationale's length unless given), computed per instance as ERASER's
  ``score_hard_rationale_predictions``; IOU-F1 as ERASER's ``partial_match_score`` at IoU 0.5: a
  predicted span (a contiguous run of selected words, never crossing from premise to hypothesis)
  is a true positive when its best IoU with a human span is at least 0.5; precision = true
  positives / predicted spans, recall = true positives / human spans, F1 of the two (0 when
  either is 0). AUPRC is ERASER's ``_auprc``: the trapezoid area under scikit-learn's
  precision-recall curve of the signed scores; the average precision (MaRC's "mAP") is in extras.
- Thesis 002 (§2.2.3.1, Bastings et al.'s mean rank): ground-truth overlap is the share of the
  top-|L| words (|L| = number of human words) that the humans marked -- the printed formula asks
  for an exact set match, which is in extras as ``exact_match``; the fraction is what the thesis's
  e-SNLI numbers (random baseline 20%) measure. Mean rank is the smallest r / n such that the top
  r words hold every human word (lower is better; 1/n at best).

Token F1, IOU-F1 and AUPRC take a ``convention``: ``"ours"`` (default) scores a sentence pair as
one document; ``"eraser"`` scores the premise and the hypothesis as two documents and averages
over documents as ERASER's scoring code does (metrics/eraser_documents.py; a slice's figure then
pools the documents of all examples, ``eraser_documents.document_summary``). Every result of
these three says which in ``extras["convention"]``.

Rankings sort by signed score, highest first; ties keep word order. Human spans are the
contiguous runs of the human mask within one segment.

Which human mask (param ``annotator``): ``"majority"`` (``Example.rationale``), ``"any"`` (the
union of the annotators' masks) or an index into ``Example.rationales`` (the annotators who gave a
mask, in the dataset's order).

Empty human rationales (HateXplain posts judged normal, an annotator index with no mask, an
all-zero mask) follow one rule in every metric here: the value is NaN and ``extras["skipped"]``
says why; nothing is raised. ``summarize`` counts them apart from the mean. Malformed input (an
unknown ``annotator``, scores of the wrong length, non-finite scores) raises ``ValueError``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.params import param
from core.types import Attribution, Example
from metrics import eraser_documents
from metrics.base import MetricResult, MetricSpec, Summary

THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))
ANNOTATOR_HELP = 'human mask: "majority", "any" (union of annotators) or an annotator index ("0", "1", ...)'
SPAN_IOU = 0.5
_PAPER_000 = "Pham et al. 2022, Double Trouble (paper 000)"
_ERASER = "DeYoung et al. 2020, ERASER; paper 003 (MaRC)"
_THESIS = "Assessing the Interpretability of LLMs, thesis 2022 (paper 002)"


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
    """Token F1 and IOU-F1: a selection and the document convention (metrics/eraser_documents.py)."""

    convention: str = param("ours", eraser_documents.CONVENTION_HELP, choices=eraser_documents.CONVENTIONS)


@dataclass(frozen=True)
class EraserRankingParams(RankingParams):
    """AUPRC: the document convention (metrics/eraser_documents.py)."""

    convention: str = param("ours", eraser_documents.CONVENTION_HELP, choices=eraser_documents.CONVENTIONS)


# --------------------------------------------------------------------------- human masks


def human_mask(example: Example, annotator: str = "majority") -> tuple[np.ndarray, str | None]:
    """The chosen human mask as a bool array over ``example.words``, and why it is empty (or None)."""
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
    """Contiguous runs of selected words as ``(start, end)`` (end exclusive), split at segment borders."""
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


# --------------------------------------------------------------------------- selections


def binarize(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Paper 000: zero the negatives, divide by the maximum, keep words at or above ``threshold``."""
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


def select(scores: np.ndarray, human: np.ndarray, params: SelectionParams) -> np.ndarray:
    """The words a map selects under ``params`` (top-k, k defaulting to the human count, or tau)."""
    if params.selection == "threshold":
        return binarize(scores, params.threshold)
    return top_k(scores, params.k or int(human.sum()))


# --------------------------------------------------------------------------- scores of one map


def overlap(predicted: np.ndarray, human: np.ndarray) -> dict[str, float]:
    """IoU, precision, recall and F1 of two word sets (paper 000 / ERASER token-level, 0 when empty)."""
    both = float(np.sum(predicted & human))
    n_pred, n_human, n_union = float(predicted.sum()), float(human.sum()), float(np.sum(predicted | human))
    precision = both / n_pred if n_pred else 0.0
    recall = both / n_human if n_human else 0.0
    return {
        "iou": both / n_union if n_union else 1.0,
        "precision": precision,
        "recall": recall,
        "f1": _f1(precision, recall),
    }


def span_f1(
    predicted: Sequence[tuple[int, int]], human: Sequence[tuple[int, int]], min_iou: float = SPAN_IOU
) -> dict[str, float]:
    """ERASER's partial-match F1 for one instance: a predicted span counts when its best IoU with
    a human span reaches ``min_iou``."""
    hits = sum(int(max((_span_iou(p, h) for h in human), default=0.0) >= min_iou) for p in predicted)
    precision = hits / len(predicted) if predicted else 0.0
    recall = hits / len(human) if human else 0.0
    return {"f1": _f1(precision, recall), "precision": precision, "recall": recall, "matched": hits}


def auprc(scores: np.ndarray, human: np.ndarray) -> dict[str, float]:
    """ERASER's AUPRC (trapezoid area under the precision-recall curve) and the average precision."""
    from sklearn.metrics import auc, average_precision_score, precision_recall_curve

    truth = human.astype(int)
    precision, recall, _ = precision_recall_curve(truth, scores)
    return {"auprc": float(auc(recall, precision)), "average_precision": float(average_precision_score(truth, scores))}


def rank_scores(scores: np.ndarray, human: np.ndarray) -> dict[str, float]:
    """Thesis 002: ground-truth overlap (share of the top-|L| words that are human words) and the
    mean rank (smallest r, and r / n, with every human word in the top r)."""
    order = ranking(scores)
    k = int(human.sum())
    found = float(human[order[:k]].sum())
    last = int(np.max(np.nonzero(human[order])[0])) + 1
    return {"gt_overlap": found / k, "exact_match": float(found == k), "rank": last, "mean_rank": last / len(scores)}


def _f1(precision: float, recall: float) -> float:
    return 0.0 if precision == 0 or recall == 0 else 2 * precision * recall / (precision + recall)


def _span_iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - inter
    return inter / union if union else 0.0


# --------------------------------------------------------------------------- registered metrics

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
    """The counts behind a token or span F1, so a slice can be scored micro-averaged as ERASER does."""
    return {"matched": matched, "n_predicted": n_predicted, "n_human": n_human}


def _contiguity(scores: np.ndarray, human: np.ndarray, example: Example, params: SelectionParams) -> MetricResult:
    """Words per span of the selected words (at the human rationale's size by default): MaRC
    (paper 003) argues that rationales should be phrases, not scattered words."""
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
        paper=_PAPER_000,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="precision",
        function=_threshold_metric("precision"),
        params_cls=ThresholdParams,
        description="share of the binarized map's words that humans marked",
        label="precision",
        higher_is_better=True,
        paper=_PAPER_000,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="recall",
        function=_threshold_metric("recall"),
        params_cls=ThresholdParams,
        description="share of the human words the binarized map selects",
        label="recall",
        higher_is_better=True,
        paper=_PAPER_000,
        value_range=(0.0, 1.0),
    ),
    _spec(
        key="f1",
        function=_threshold_metric("f1"),
        params_cls=ThresholdParams,
        description="F1 of the binarized map against the human mask",
        label="F1",
        higher_is_better=True,
        paper=_PAPER_000,
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
        paper=_PAPER_000,
        value_range=(0.0, 1.0),
    ),
)
KEYS = tuple(spec.key for spec in METRICS)
_BY_KEY = {spec.key: spec for spec in METRICS}
THRESHOLD_KEYS = tuple(spec.key for spec in METRICS if spec.thresholded)
# A binary mask ranks its words only by position, so the rank metrics have no human ceiling.
CEILING_KEYS = tuple(key for key in KEYS if key not in ("gt_overlap", "mean_rank"))


# --------------------------------------------------------------------------- dataset level


def summarize(results: Iterable[MetricResult]) -> Summary:
    results = list(results)
    skipped = sum(1 for r in results if "skipped" in r.extras)
    return Summary.of([r.value for r in results if "skipped" not in r.extras], skipped)


# Metrics whose per-example extras carry matched / n_predicted / n_human counts.
MICRO_KEYS = ("token_f1", "iou_f1")


def micro_f1(results: Iterable[MetricResult]) -> dict[str, float]:
    """ERASER's micro average over a slice (``score_hard_rationale_predictions`` for tokens,
    ``partial_match_score`` for spans): matches, predictions and human units summed over the
    examples before precision, recall and F1 are taken. Skipped examples are left out."""
    matched = n_predicted = n_human = 0
    for result in results:
        if "skipped" in result.extras:
            continue
        matched += result.extras["matched"]
        n_predicted += result.extras["n_predicted"]
        n_human += result.extras["n_human"]
    precision = matched / n_predicted if n_predicted else 0.0
    recall = matched / n_human if n_human else 0.0
    return {"precision": precision, "recall": recall, "f1": _f1(precision, recall)}


@dataclass(frozen=True)
class ThresholdSearch:
    """The best tau for a slice: its ``objective`` mean at every tau tried, and the examples scored."""

    best: float
    objective: str
    means: dict[float, float]
    n: int
    skipped: int


def best_threshold(
    pairs: Sequence[tuple[Example, Attribution]],
    objective: str = "iou",
    annotator: str = "majority",
    thresholds: Sequence[float] = THRESHOLDS,
) -> ThresholdSearch:
    """Paper 000's optimal tau: the threshold whose mean ``objective`` (iou, precision, recall or
    f1) over the slice is highest; on ties the smallest such tau."""
    if objective not in ("iou", "precision", "recall", "f1"):
        raise ValueError(f"objective must be iou, precision, recall or f1, got {objective!r}")
    if not thresholds:
        raise ValueError("no thresholds to search")
    compute = _BY_KEY[objective].compute
    means: dict[float, float] = {}
    summary = Summary(float("nan"), float("nan"), float("nan"), 0, 0)
    for tau in thresholds:
        params = ThresholdParams(annotator=annotator, threshold=tau)
        summary = summarize(compute(None, example, attribution, params) for example, attribution in pairs)
        means[tau] = summary.mean
    if summary.n == 0:
        raise ValueError(f"no example of the slice has a non-empty human rationale ({summary.skipped} skipped)")
    best = max(thresholds, key=lambda tau: (means[tau], -tau))
    return ThresholdSearch(best, objective, means, summary.n, summary.skipped)


def at_threshold(
    pairs: Sequence[tuple[Example, Attribution]],
    threshold: float,
    annotator: str = "majority",
    keys: Sequence[str] | None = None,
) -> dict[str, Summary]:
    """The threshold metrics ``keys`` (all of them by default) over a slice at one tau (typically
    ``best_threshold``'s)."""
    params = ThresholdParams(annotator=annotator, threshold=threshold)
    keys = THRESHOLD_KEYS if keys is None else keys
    return {key: summarize(_BY_KEY[key].compute(None, e, a, params) for e, a in pairs) for key in keys}


def slice_ceiling(examples: Sequence[Example], params_by_key: dict[str, Any]) -> dict[str, Summary]:
    """``human_ceiling`` summarised over a slice, for each requested key that has a ceiling."""
    return {
        key: summarize(human_ceiling(example, key, params) for example in examples)
        for key, params in params_by_key.items()
        if key in CEILING_KEYS
    }


def human_ceiling(example: Example, key: str, params: Any = None) -> MetricResult:
    """Agreement of the annotators with each other: the mean of ``key`` over ordered pairs (a, b)
    of annotators, a's mask standing in for the attribution and b's as the human mask (pairs with
    b empty are left out). Top-k selection becomes the mask itself (``selection="threshold"``).
    NaN with ``extras["skipped"]`` when fewer than two annotators gave a non-empty mask."""
    if key not in CEILING_KEYS:
        raise ValueError(f"no human ceiling for {key!r}; defined for {', '.join(CEILING_KEYS)}")
    spec = _BY_KEY[key]
    params = params if params is not None else spec.params_cls()
    params = dataclasses.replace(params, annotator="majority")
    if isinstance(params, SelectionParams):
        params = dataclasses.replace(params, selection="threshold", threshold=1.0)
    masks = example.rationales
    per_annotator: dict[str, float] = {}
    values: list[float] = []
    for a, mask_a in enumerate(masks):
        mine = []
        for b, mask_b in enumerate(masks):
            if a == b or not any(mask_b):
                continue
            reference = dataclasses.replace(example, rationales=(mask_b,), rationale=mask_b)
            stand_in = Attribution("annotator", example.id, 0, example.words, np.asarray(mask_a, dtype=np.float32))
            mine.append(spec.compute(None, reference, stand_in, params).value)
        if mine:
            per_annotator[str(a)] = float(np.mean(mine))
            values.extend(mine)
    if not values:
        return MetricResult(float("nan"), extras={"skipped": f"{len(masks)} annotator masks, need two with words"})
    return MetricResult(float(np.mean(values)), extras={"per_annotator": per_annotator, "pairs": len(values)})
