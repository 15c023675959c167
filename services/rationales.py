"""Agreement of attributions with human rationales, for one example and over a slice."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

import metrics
from core.types import Attribution, Example
from metrics import plausibility
from metrics.base import MetricResult

# =========================================================================== rationales
# Section owned by the plausibility metrics (app_pages/rationales.py): agreement of attributions with
# human rationales, for one example and over a dataset slice. The metrics are plain numpy; a
# slice's explanations come from the per-method cache and its metrics are cached per request.


def _plausibility_params(metric_params: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from engine.evaluate import metric_params as resolve

    return resolve(list(metric_params), metric_params)


def selected(attribution: Attribution, human: tuple[int, ...] | None, params: dict[str, Any]) -> Attribution:
    """The words a map selects as token F1 and IOU-F1 select them under ``params`` (``selection``,
    ``k``, ``threshold``: its top k, k = 0 taking as many words as the ``human`` mask marks, or
    Pham et al. 2022's threshold: negatives zeroed, divided by the maximum, kept at or above tau),
    as a 0/1 word-level attribution for the heatmap."""
    chosen = plausibility.SelectionParams(**{k: params[k] for k in ("selection", "k", "threshold") if k in params})
    mask = np.asarray(human if human is not None else (), dtype=np.int8)
    words = plausibility.select(attribution.scores, mask, chosen).astype(np.float32)
    return dataclasses.replace(attribution, scores=words, subwords=(), subword_scores=None, subword_word_ids=())


def selection_name(params: dict[str, Any], human: tuple[int, ...] | None) -> str:
    """How ``selected`` picks the words, for a row label: "top 5" or "τ 0.50"."""
    if params.get("selection") == "threshold":
        return f"τ {params['threshold']:.2f}"
    return f"top {params.get('k') or sum(human or ())}"


def with_highlight(example: Example, words: Sequence[int]) -> tuple[Example, int]:
    """``example`` with the words a user marked (indices into its words) as its only rationale, and
    how many marked words lie past its last word (cut off: the model does not read them)."""
    marked = set(words)
    mask = tuple(int(i in marked) for i in range(len(example.words)))
    past = sum(1 for i in marked if i >= len(example.words))
    return dataclasses.replace(example, rationales=(mask,), rationale=mask), past


def human_rows(example: Example, name: str = "human · majority") -> dict[str, Attribution]:
    """The human masks of an example as 0/1 attributions: the majority (as ``name``), then each
    annotator."""
    masks = {name: example.rationale} if example.rationale is not None else {}
    if len(example.rationales) > 1:
        masks.update({f"human · annotator {i}": mask for i, mask in enumerate(example.rationales)})
    return {
        name: Attribution("human", example.id, 0, example.words, np.asarray(mask, dtype=np.float32))
        for name, mask in masks.items()
    }


def human_outline(example: Example, annotator: str) -> tuple[int, ...] | None:
    """The human mask ``annotator`` picks (see ``metrics.plausibility.human_mask``), None when
    empty."""
    mask, empty = plausibility.human_mask(example, annotator)
    return None if empty else tuple(int(m) for m in mask)


def rationale_scores(
    example: Example, attributions: dict[str, Attribution], metric_params: dict[str, dict[str, Any]]
) -> dict[str, dict[str, MetricResult]]:
    """Every requested plausibility metric of every attribution (``[method][metric]``); a skipped
    metric has NaN and its reason in ``extras["skipped"]``."""
    resolved = _plausibility_params(metric_params)
    return {
        method: {key: metrics.get(key).compute(None, example, attribution, p) for key, p in resolved.items()}
        for method, attribution in attributions.items()
    }


def rationale_ceiling(
    example: Example, metric_params: dict[str, dict[str, Any]], reader: Sequence[int] | None = None
) -> dict[str, MetricResult]:
    """The annotators' agreement with each other under the same metrics (those defined for
    masks); with ``reader`` (a reader's own 0/1 mask over the words), that reader's agreement with
    the annotators instead."""
    resolved = _plausibility_params(metric_params)
    return {
        key: plausibility.human_ceiling(example, key, p)
        if reader is None
        else plausibility.reader_agreement(example, reader, key, p)
        for key, p in resolved.items()
        if key in plausibility.CEILING_KEYS
    }
