"""Plausibility over a dataset slice: the mean with its interval (empty rationales counted apart),
ERASER's micro-averaged F1 (DeYoung et al. 2020, arXiv 1911.03429), Pham et al.'s optimal
threshold (Pham et al. 2022, arXiv 2110.11929), the human ceiling (annotators against each
other) and a reader's agreement with the annotators. Definitions in ``metrics.plausibility``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.types import Attribution, Example
from metrics.base import MetricResult, Summary
from metrics.plausibility.registered import BY_KEY, CEILING_KEYS, THRESHOLD_KEYS, SelectionParams, ThresholdParams
from metrics.plausibility.scores import f1

THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))


def summarize(results: Iterable[MetricResult], bounds: tuple[float, float] | None = (0.0, 1.0)) -> Summary:
    """The mean of ``results`` with its 95% interval (cut to ``bounds``: the plausibility scores
    are shares), the skipped ones (empty rationales) counted apart."""
    results = list(results)
    skipped = sum(1 for r in results if "skipped" in r.extras)
    return Summary.of([r.value for r in results if "skipped" not in r.extras], skipped, bounds)


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
    return {"precision": precision, "recall": recall, "f1": f1(precision, recall)}


@dataclass(frozen=True)
class ThresholdSearch:
    """The best tau for a slice: its ``objective`` mean at every tau tried, and the examples
    scored."""

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
    """Pham et al.'s optimal tau: the threshold whose mean ``objective`` (iou, precision, recall or
    f1) over the slice is highest; on ties the smallest such tau."""
    if objective not in ("iou", "precision", "recall", "f1"):
        raise ValueError(f"objective must be iou, precision, recall or f1, got {objective!r}")
    if not thresholds:
        raise ValueError("no thresholds to search")
    compute = BY_KEY[objective].compute
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
    keys = THRESHOLD_KEYS if keys is None else keys
    summaries = {}
    for key in keys:
        values = threshold_values(pairs, threshold, key, annotator)
        summaries[key] = Summary.of(values, values.count(None), BY_KEY[key].value_range)
    return summaries


def threshold_values(
    pairs: Sequence[tuple[Example, Attribution]], threshold: float, key: str, annotator: str = "majority"
) -> list[float | None]:
    """The threshold metric ``key`` at one tau on each (example, attribution) of ``pairs``, in
    order; None where the example has no human rationale to compare with."""
    params = ThresholdParams(annotator=annotator, threshold=threshold)
    results = [BY_KEY[key].compute(None, e, a, params) for e, a in pairs]
    return [None if "skipped" in r.extras else r.value for r in results]


def slice_ceiling(examples: Sequence[Example], params_by_key: dict[str, Any]) -> dict[str, Summary]:
    """``human_ceiling`` summarised over a slice, for each requested key that has a ceiling."""
    return {
        key: summarize((human_ceiling(example, key, params) for example in examples), BY_KEY[key].value_range)
        for key, params in params_by_key.items()
        if key in CEILING_KEYS
    }


def human_ceiling(example: Example, key: str, params: Any = None) -> MetricResult:
    """Agreement of the annotators with each other: the mean of ``key`` over ordered pairs (a, b)
    of annotators, a's mask standing in for the attribution and b's as the human mask (pairs with
    b empty are left out). Top-k selection becomes the mask itself (``selection="threshold"``).
    NaN with ``extras["skipped"]`` when fewer than two annotators gave a non-empty mask."""
    spec, params = _mask_params(key, params)
    masks = example.rationales
    per_annotator: dict[str, float] = {}
    values: list[float] = []
    for a, mask_a in enumerate(masks):
        mine = [
            _mask_score(example, spec, params, mask_a, mask_b)
            for b, mask_b in enumerate(masks)
            if a != b and any(mask_b)
        ]
        if mine:
            per_annotator[str(a)] = float(np.mean(mine))
            values.extend(mine)
    if not values:
        return MetricResult(float("nan"), extras={"skipped": f"{len(masks)} annotator masks, need two with words"})
    return MetricResult(float(np.mean(values)), extras={"per_annotator": per_annotator, "pairs": len(values)})


def reader_agreement(example: Example, mask: Sequence[int], key: str, params: Any = None) -> MetricResult:
    """Agreement of a reader's own mask over ``example``'s words with its annotators: the mean of
    ``key`` over the annotators b with a non-empty mask, the reader's mask standing in for the
    attribution and b's as the human mask, so the reader is scored as ``human_ceiling`` scores
    one annotator against the others and the two numbers compare. ``extras["per_annotator"]``:
    the value against each. NaN with ``extras["skipped"]`` when no annotator marked a word."""
    spec, params = _mask_params(key, params)
    per_annotator = {
        str(b): _mask_score(example, spec, params, mask, mask_b)
        for b, mask_b in enumerate(example.rationales)
        if any(mask_b)
    }
    if not per_annotator:
        return MetricResult(float("nan"), extras={"skipped": "no annotator marked a word"})
    return MetricResult(float(np.mean(list(per_annotator.values()))), extras={"per_annotator": per_annotator})


def _mask_params(key: str, params: Any) -> tuple[Any, Any]:
    """The metric ``key`` and its ``params`` for a 0/1 mask standing in for an attribution: top-k
    selection becomes the mask itself (``selection="threshold"``)."""
    if key not in CEILING_KEYS:
        raise ValueError(f"no agreement between masks for {key!r}; defined for {', '.join(CEILING_KEYS)}")
    spec = BY_KEY[key]
    params = dataclasses.replace(params if params is not None else spec.params_cls(), annotator="majority")
    if isinstance(params, SelectionParams):
        params = dataclasses.replace(params, selection="threshold", threshold=1.0)
    return spec, params


def _mask_score(example: Example, spec: Any, params: Any, mask: Sequence[int], reference: Sequence[int]) -> float:
    """``spec``'s value of the 0/1 ``mask`` standing in for an attribution against the human mask
    ``reference``."""
    against = dataclasses.replace(example, rationales=(tuple(reference),), rationale=tuple(reference))
    stand_in = Attribution("annotator", example.id, 0, example.words, np.asarray(mask, dtype=np.float32))
    return spec.compute(None, against, stand_in, params).value
