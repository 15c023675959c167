"""Dataset slices for the app: ``engine.evaluate.evaluate_slice`` (the same code as ``python -m
cli evaluate``) over the cached model, with each finished slice kept in a bounded store shared by
every session under its full request (model, examples, methods and their parameters, metrics,
target, masked LM)."""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from core.types import Example, ProgressFn
from engine import evaluate as engine
from engine import slice_report as reports
from metrics.base import Summary
from metrics.plausibility import ThresholdSearch
from services import models, store
from services.data import dataset_example
from services.imports import ImportedMethod, given_for
from services.resources import resources


@st.cache_resource
def _slice_store() -> store.ResultStore:
    """Finished slices shared by every session (not ``st.cache_data``: see
    ``store.ResultStore``)."""
    return store.ResultStore(max_entries=32)


@st.cache_resource
def _partial_store() -> store.ResultStore:
    """Slices stopped before their end (a closed tab, a page left, a rerun), with the examples
    they finished, under the same key as the finished slices: running the same request again
    goes on from there."""
    return store.ResultStore(max_entries=32)


@st.cache_resource
def _explained_store() -> store.ResultStore:
    """Each finished slice's attributions (one mapping per example), refusals and methods under
    what explains them (model, examples, methods and their parameters, target, masked LM,
    imports): the same slice scored with other metric parameters (the faithfulness page's two
    removal modes) reuses them instead of explaining every example again."""
    return store.ResultStore(max_entries=8)


def stopped_at(key: tuple) -> tuple[int, int] | None:
    """(examples done, examples asked) of a slice that was stopped before its end, else None."""
    partial = _partial_store().get(key)
    return None if partial is None else (len(partial[0].results), partial[1])


def _evaluate(
    key: tuple,
    model: str,
    examples: list[Example],
    method_keys: list[str],
    metric_params: dict[str, dict[str, Any]],
    method_params: dict[str, dict[str, Any]] | None,
    target: str,
    mlm_name: str,
    progress: ProgressFn | None,
    imported: Sequence[ImportedMethod] = (),
) -> tuple[engine.SliceEvaluation, dict[str, Any], float, dict[str, tuple[str, ...]]]:
    """The evaluation, the metrics' parameters, the time it took and, per imported method, the
    ids of the examples its import lacks (scored without it)."""
    params_by_metric = engine.metric_params(list(metric_params), metric_params)
    given, missing = given_for(imported, examples)
    explained_key = (model, store.examples_key(examples), tuple(method_keys), store.params_key(method_params or {}),
                     target, mlm_name, _imported_key(imported))  # fmt: skip
    explained = _explained_store().get(explained_key)
    if explained is not None:  # scored again with other metric parameters: nothing to explain
        method_keys, given = [], explained[0]
    mlm = models.masked_lm(mlm_name) if engine.needs_mlm(method_keys, params_by_metric) else None
    # Taken out of the store while it runs, so two sessions never append to one evaluation; put
    # back, with whatever it finished, if the run stops before its end.
    partial = _partial_store().pop(key)
    evaluation = (
        partial[0]
        if partial is not None and partial[0].methods == engine.slice_methods(method_keys, given)
        else engine.SliceEvaluation(engine.slice_methods(method_keys, given), list(params_by_metric))
    )
    start = time.perf_counter()
    finished = False
    try:
        engine.evaluate_slice(
            models.classifier(model),
            examples,
            method_keys,
            params_by_metric,
            method_params={k: v for k, v in (method_params or {}).items() if k in method_keys},
            mlm=mlm,
            progress=progress,
            target=target,
            resources=resources(),
            given=given,
            resume=evaluation,
        )
        finished = True
    finally:
        # A slice scored again from stored attributions keeps no partial: its refusals come
        # back with the stored attributions at its end, and nothing is explained to save.
        if not finished and evaluation.results and explained is None:
            _partial_store().put(key, (evaluation, len(examples)))
    if explained is None:
        attributions = [result.attributions for result in evaluation.results]
        _explained_store().put(
            explained_key, (attributions, copy.deepcopy(evaluation.errors), list(evaluation.methods))
        )
    else:  # the methods' refusals, and a method refused on every example, are not in the attributions
        evaluation.methods[:] = explained[2]
        for method, failures in explained[1].items():
            evaluation.errors.setdefault(method, copy.deepcopy(failures))
    return evaluation, params_by_metric, time.perf_counter() - start, missing


def _first_errors(evaluation: engine.SliceEvaluation) -> dict[str, str]:
    return {method: failures[0]["error"] for method, failures in evaluation.errors.items()}


def _cached(key: tuple, compute: Any) -> Any:
    found = _slice_store().get(key)
    if found is None:
        found = compute()
        _slice_store().put(key, found)
    return found


@dataclass(frozen=True)
class SliceResult:
    """Metrics of several methods over a dataset slice.

    ``values[method][metric]`` holds one value per example (None where the metric skipped the
    example or the method failed), ``summary`` their mean and 95% interval, ``mean_curves`` the
    pointwise mean curve with its 95% band (``x``, ``mean``, ``low``, ``high``); ``missing`` the
    ids of the examples each imported method's import lacks (left out of its values)."""

    values: dict[str, dict[str, list[float | None]]]
    summary: dict[str, dict[str, Summary]]
    mean_curves: dict[str, dict[str, dict[str, list[float]]]]
    errors: dict[str, str]
    runtime_s: float
    forward_passes: int
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)


def evaluate_slice(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    metric_params: dict[str, dict[str, Any]],
    *,
    method_params: dict[str, dict[str, Any]] | None = None,
    target: str = "predicted",
    mlm_name: str = models.DEFAULT_MLM,
    imported: Sequence[ImportedMethod] = (),
    progress: ProgressFn | None = None,
) -> SliceResult:
    """Every method and metric on every example, explaining the ``predicted`` or ``gold`` class;
    the ``imported`` methods' stored attributions scored beside them (``engine.imports.stored``;
    an example with one explains the class it was imported for)."""

    def compute() -> SliceResult:
        evaluation, _, runtime, missing = _evaluate(
            key, model, examples, method_keys, metric_params, method_params, target, mlm_name, progress, imported
        )
        return SliceResult(
            reports.metric_values(evaluation),
            reports.metric_summaries(evaluation),
            reports.mean_curves(evaluation),
            _first_errors(evaluation),
            runtime,
            evaluation.forward_passes,
            missing,
        )

    key = _faithfulness_key(model, examples, method_keys, metric_params, method_params, target, mlm_name, imported)
    return _cached(key, compute)


def _faithfulness_key(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    metric_params: dict[str, dict[str, Any]],
    method_params: dict[str, dict[str, Any]] | None = None,
    target: str = "predicted",
    mlm_name: str = models.DEFAULT_MLM,
    imported: Sequence[ImportedMethod] = (),
) -> tuple:
    return (
        "faithfulness",
        model,
        store.examples_key(examples),
        tuple(method_keys),
        store.params_key(metric_params),
        store.params_key(method_params or {}),
        target,
        mlm_name,
        _imported_key(imported),
    )


def _imported_key(imported: Sequence[ImportedMethod]) -> tuple:
    return tuple((m.run_id, m.method, m.name) for m in imported)


def slice_stopped_at(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    metric_params: dict[str, dict[str, Any]],
    *,
    method_params: dict[str, dict[str, Any]] | None = None,
    target: str = "predicted",
    mlm_name: str = models.DEFAULT_MLM,
    imported: Sequence[ImportedMethod] = (),
) -> tuple[int, int] | None:
    """(done, asked) when ``evaluate_slice`` with these arguments was stopped before its end."""
    return stopped_at(
        _faithfulness_key(model, examples, method_keys, metric_params, method_params, target, mlm_name, imported)
    )


@dataclass(frozen=True)
class SliceItem:
    index: int  # position in the split
    example: Example  # as the model sees it
    predicted: int
    correct: bool | None


@dataclass(frozen=True)
class RationaleSlice:
    """Plausibility of several methods over a slice.

    ``values[method][metric]`` has one value per item (None where the rationale was empty or the
    method failed); ``summary`` and ``ceiling`` (the annotators among themselves) are means with
    95% intervals; ``thresholds[method]`` is Pham et al.'s optimal tau search and ``at_best`` the
    threshold metrics at that tau; ``human_coverage`` the share of words the humans marked;
    ``micro[method][metric]`` ERASER's micro average of token F1 and IOU-F1 (precision, recall, F1);
    ``missing`` the ids of the slice's examples each imported method's import lacks."""

    items: tuple[SliceItem, ...]
    values: dict[str, dict[str, list[float | None]]]
    summary: dict[str, dict[str, Summary]]
    micro: dict[str, dict[str, dict[str, float]]]
    ceiling: dict[str, Summary]
    thresholds: dict[str, ThresholdSearch]
    at_best: dict[str, dict[str, Summary]]
    human_coverage: Summary
    errors: dict[str, str]
    runtime_s: float
    forward_passes: int
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)


def rationale_slice(
    model: str,
    dataset: str,
    split: str,
    indices: list[int],
    method_keys: list[str],
    metric_params: dict[str, dict[str, Any]],
    *,
    correct_only: bool = False,
    objective: str = "iou",
    target: str = "predicted",
    method_params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = models.DEFAULT_MLM,
    imported: Sequence[ImportedMethod] = (),
    progress: ProgressFn | None = None,
) -> RationaleSlice:
    """Explain every example with every method and score the agreement with the humans;
    ``correct_only`` keeps the correctly predicted examples (Pham et al. 2022); the ``imported``
    methods' stored attributions are scored beside them."""

    examples = [dataset_example(dataset, split, index) for index in indices]  # a data file's as it is now

    def compute() -> RationaleSlice:
        evaluation, params_by_metric, runtime, missing = _evaluate(
            key, model, examples, method_keys, metric_params, method_params, target, mlm_name, progress, imported
        )
        if correct_only:
            evaluation = reports.correct_only(evaluation)
        report = reports.plausibility_report(evaluation, params_by_metric, objective)
        if report is None:
            raise ValueError("no plausibility metric was asked for")
        items = tuple(
            SliceItem(
                indices[r.position],
                r.example,
                r.predicted,
                None if r.example.label is None else r.example.label == r.predicted,
            )
            for r in evaluation.results
        )
        return RationaleSlice(
            items,
            reports.metric_values(evaluation),
            reports.metric_summaries(evaluation),
            report.micro,
            report.ceiling,
            report.thresholds,
            report.at_best,
            report.human_coverage,
            {**report.errors, **_first_errors(evaluation)},
            runtime,
            evaluation.forward_passes,
            missing,
        )

    key = (
        "plausibility",
        model,
        dataset,
        split,
        tuple(indices),
        store.examples_key(examples),  # an edited data file's rationales are other examples
        tuple(method_keys),
        store.params_key(metric_params),
        correct_only,
        objective,
        target,
        store.params_key(method_params or {}),
        mlm_name,
        _imported_key(imported),
    )
    return _cached(key, compute)
