"""Faithfulness metrics of one example's attributions, and of a dataset slice."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from core.types import Attribution, Example, ProgressFn
from metrics.base import MetricResult
from services import models, store
from services.explain import HeatmapResult, explain, predict_example
from services.imports import ImportedMethod, with_imports

# =========================================================================== faithfulness
# Section owned by the faithfulness metrics (app_pages/faithfulness.py): metric results cached per
# model, example, method (with its parameters and target) and metric parameters.


@dataclass(frozen=True)
class MetricsRun:
    """One attribution's metric results (``results[metric]``) and what computing them cost."""

    results: dict[str, MetricResult]
    runtime_s: float
    forward_passes: int


def _uses_mlm(metric_params: dict[str, dict[str, Any]]) -> bool:
    return any(values.get("removal") == "mlm" for values in metric_params.values())


@st.cache_data(show_spinner=False, max_entries=4096)
def _metrics_run(
    model: str,
    example_key: str,
    attribution_key: str,
    params_key: str,
    mlm_name: str | None,
    _example: Example,
    _attribution: Attribution,
    _metric_params: dict[str, dict[str, Any]],
) -> MetricsRun:
    from engine.evaluate import metric_params, score_attribution

    clf = models.classifier(model)
    mlm = models.masked_lm(mlm_name) if mlm_name else None
    start = time.perf_counter()
    resolved = metric_params(list(_metric_params), _metric_params)
    results = score_attribution(clf, _example, _attribution, resolved, mlm=mlm)
    return MetricsRun(results, time.perf_counter() - start, clf.forward_passes)


def score_attribution(
    model: str,
    example: Example,
    attribution: Attribution,
    metric_params: dict[str, dict[str, Any]],
    mlm_name: str = models.DEFAULT_MLM,
) -> MetricsRun:
    """The metrics ``{metric: {param: value}}`` of one attribution of ``example`` (the example as
    the model sees it), faithfulness metrics in one batch; cached."""
    return _metrics_run(
        model,
        store.example_key(example),
        store.attribution_key(attribution),
        store.params_key(metric_params),
        mlm_name if _uses_mlm(metric_params) else None,
        example,
        attribution,
        metric_params,
    )


@dataclass(frozen=True)
class FaithfulnessResult:
    heatmap: HeatmapResult
    runs: dict[str, MetricsRun]  # method -> its metric results
    errors: dict[str, str]  # method -> message (explaining or scoring failed, or no imported attribution)


def faithfulness(
    model: str,
    example: Example,
    method_keys: list[str],
    metric_params: dict[str, dict[str, Any]],
    *,
    target: int | None = None,
    method_params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = models.DEFAULT_MLM,
    imported: Sequence[ImportedMethod] = (),
    progress: ProgressFn | None = None,
) -> FaithfulnessResult:
    """Every method's attribution of ``example`` and its metrics; both steps cached, so changing
    a metric parameter recomputes the metrics only. The ``imported`` methods' stored
    attributions of the example for the same class are scored beside them. Progress is
    reported between the cached calls, never from inside them (a cached function must not touch
    page elements)."""
    heatmaps = []
    for index, key in enumerate(method_keys):
        if progress is not None:
            progress(0.8 * index / max(1, len(method_keys)), f"{key}: attribution")
        heatmaps.append(explain(model, example, [key], target=target, params=method_params, mlm_name=mlm_name))
    prediction = heatmaps[0].prediction if heatmaps else predict_example(model, example)
    attributions = {k: a for h in heatmaps for k, a in h.attributions.items()}
    errors = {k: e for h in heatmaps for k, e in h.errors.items()}
    target = heatmaps[0].target if heatmaps else (prediction.predicted if target is None else target)
    heatmap = with_imports(HeatmapResult(prediction, target, attributions, errors), imported)
    attributions, errors = heatmap.attributions, dict(heatmap.errors)
    runs: dict[str, MetricsRun] = {}
    for index, (method, attribution) in enumerate(attributions.items()):
        if progress is not None:
            progress(0.8 + 0.2 * index / max(1, len(attributions)), f"{method}: metrics")
        try:
            runs[method] = score_attribution(model, prediction.example, attribution, metric_params, mlm_name)
        except ValueError as error:
            errors[method] = str(error)
    if progress is not None:
        progress(1.0, "done")
    return FaithfulnessResult(heatmap, runs, errors)
