"""What an evaluated slice (``engine.evaluate.SliceEvaluation``) reports: each method's metric
values, their means with 95% intervals, the mean curves, the plausibility report (human ceiling,
best threshold, ERASER's micro average) and the JSON the command line prints."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import metrics
from engine.evaluate import ExampleResult, SliceEvaluation
from metrics.base import MetricResult, Summary

if TYPE_CHECKING:
    from metrics.plausibility import ThresholdSearch


def metric_values(evaluation: SliceEvaluation) -> dict[str, dict[str, list[float | None]]]:
    """``values[method][metric]``: one value per example, None where the metric skipped the
    example or the method failed on it."""
    return {
        method: {
            metric: [
                r.metrics[method][metric].value if metric in r.metrics.get(method, {}) else None
                for r in evaluation.results
            ]
            for metric in evaluation.metric_keys
        }
        for method in evaluation.methods
    }


def metric_bounds(evaluation: SliceEvaluation, metric: str) -> tuple[float, float] | None:
    """The range of ``metric``'s values on ``evaluation``'s model: its declared one, except for a
    metric of the model's outputs on a regression head, whose raw scores have no bounds."""
    spec = metrics.get(metric)
    return spec.value_range if evaluation.probabilities or not spec.needs_classifier else None


def metric_summaries(evaluation: SliceEvaluation) -> dict[str, dict[str, Summary]]:
    """Mean and 95% t interval of every method's every metric over the slice; a plausibility
    metric computed under ERASER's document convention is ERASER's macro figure over the slice's
    documents instead (``metrics.eraser_documents.document_summary``)."""
    from metrics.eraser_documents import document_summary

    summaries: dict[str, dict[str, Summary]] = {}
    for method, per in metric_values(evaluation).items():
        summaries[method] = {}
        for metric, vals in per.items():
            results = [r.metrics[method][metric] for r in evaluation.results if metric in r.metrics.get(method, {})]
            bounds = metric_bounds(evaluation, metric)
            pooled = document_summary(metric, results, vals.count(None), bounds)
            summaries[method][metric] = pooled if pooled is not None else Summary.of(vals, vals.count(None), bounds)
    return summaries


def mean_curves(evaluation: SliceEvaluation) -> dict[str, dict[str, dict[str, list[float]]]]:
    """Pointwise mean curve with its 95% band (``x``, ``mean``, ``low``, ``high``) of every metric
    that has a curve (deletion, insertion, the bin metrics), per method; the band is cut to the
    metric's range, which is its curve's too (a probability, or a drop of one)."""
    from metrics.faithfulness import mean_curve

    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    for method in evaluation.methods:
        out[method] = {}
        for metric in evaluation.metric_keys:
            curves = [
                r.metrics[method][metric].curve
                for r in evaluation.results
                if metric in r.metrics.get(method, {}) and r.metrics[method][metric].curve
            ]
            if curves:
                out[method][metric] = mean_curve(curves, bounds=metric_bounds(evaluation, metric))
    return out


def correct_only(evaluation: SliceEvaluation) -> SliceEvaluation:
    """The same evaluation restricted to the examples the model predicted correctly (Pham et al.
    2022 scores plausibility on those only); examples without a gold label are left out too."""
    return dataclasses.replace(evaluation, results=[r for r in evaluation.results if r.example.label == r.predicted])


def summarize(evaluation: SliceEvaluation) -> dict[str, dict[str, dict[str, Any]]]:
    """``{method: {metric: {mean, interval, n, skipped}}}`` over the slice (95% t interval, cut to
    the metric's range), with ``skipped_because`` (``{"no human rationale": count}``) for a metric
    that compares with human rationales on examples without one; token F1 and IOU-F1 also carry
    ERASER's ``micro`` average (precision, recall, F1 over summed counts) when they scored an
    example, and token F1, IOU-F1 and AUPRC the document ``convention`` their figure uses (under
    ERASER's, ``n`` counts documents)."""
    from metrics import eraser_documents, plausibility

    without_rationale = sum(1 for r in evaluation.results if not r.example.has_rationale)
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for method, per in metric_summaries(evaluation).items():
        summary[method] = {metric: summary_json(s) for metric, s in per.items()}
        for metric in evaluation.metric_keys:
            found = [r.metrics[method][metric] for r in evaluation.results if metric in r.metrics.get(method, {})]
            if metrics.get(metric).needs_rationale and without_rationale:
                summary[method][metric]["skipped_because"] = {"no human rationale": without_rationale}
            if metric in plausibility.MICRO_KEYS and found:
                summary[method][metric]["micro"] = plausibility.micro_f1(found)
            conventions = {r.extras["convention"] for r in found if "convention" in r.extras}
            if metric in eraser_documents.KEYS and conventions:
                summary[method][metric]["convention"] = ", ".join(sorted(conventions))
    return summary


def summary_json(summary: Summary) -> dict[str, Any]:
    return {
        "mean": finite(summary.mean),
        "interval": [finite(summary.low), finite(summary.high)],
        "n": summary.n,
        "skipped": summary.skipped,
    }


@dataclass(frozen=True)
class PlausibilityReport:
    """What a slice says about agreement with the humans beyond each metric's mean: the human
    ceiling (annotators scored against each other, Pham et al.'s reference row), Pham et al.'s best
    threshold per method (``objective`` maximised over tau) with the threshold metrics at it, the
    share of words the humans marked, and ERASER's micro average of token F1 and IOU-F1."""

    annotator: str
    ceiling: dict[str, Summary]
    thresholds: dict[str, ThresholdSearch]
    at_best: dict[str, dict[str, Summary]]
    human_coverage: Summary
    micro: dict[str, dict[str, dict[str, float]]]
    errors: dict[str, str]


def plausibility_report(
    evaluation: SliceEvaluation, params_by_metric: dict[str, Any], objective: str = "iou"
) -> PlausibilityReport | None:
    """The plausibility report of a slice, None when no plausibility metric was asked for."""
    from metrics import plausibility

    keys = [k for k in params_by_metric if k in plausibility.KEYS]
    if not keys:
        return None
    examples = [r.example for r in evaluation.results]
    annotator = params_by_metric[keys[0]].annotator
    thresholds: dict[str, ThresholdSearch] = {}
    at_best: dict[str, dict[str, Summary]] = {}
    errors: dict[str, str] = {}
    for method in evaluation.methods:
        pairs = [(r.example, r.attributions[method]) for r in evaluation.results if method in r.attributions]
        try:
            search = plausibility.best_threshold(pairs, objective, annotator)
        except ValueError as error:
            errors[method] = str(error)
            continue
        thresholds[method] = search
        at_best[method] = plausibility.at_threshold(pairs, search.best, annotator)
    shares = []
    for example in examples:
        mask, empty = plausibility.human_mask(example, annotator)
        shares.append(MetricResult(float(mask.mean()), extras={"skipped": empty} if empty else {}))
    micro = {
        method: {
            key: plausibility.micro_f1(
                r.metrics[method][key] for r in evaluation.results if key in r.metrics.get(method, {})
            )
            for key in keys
            if key in plausibility.MICRO_KEYS
        }
        for method in evaluation.methods
    }
    return PlausibilityReport(
        annotator,
        plausibility.slice_ceiling(examples, {k: params_by_metric[k] for k in keys}),
        thresholds,
        at_best,
        plausibility.summarize(shares),
        micro,
        errors,
    )


def rationale_references(evaluation: SliceEvaluation, params_by_metric: dict[str, Any]) -> dict[str, Any]:
    """The command line's JSON of ``plausibility_report`` (IoU objective): the human ceiling and
    per method the best threshold with IoU, precision, recall and F1 at it. Empty when no
    plausibility metric was asked for."""
    report = plausibility_report(evaluation, params_by_metric)
    if report is None:
        return {}
    thresholds: dict[str, Any] = {method: {"error": message} for method, message in report.errors.items()}
    for method, search in report.thresholds.items():
        thresholds[method] = {
            "threshold": search.best,
            "objective": search.objective,
            "n": search.n,
            "skipped": search.skipped,
            **{
                key: summary_json(summary)
                for key, summary in report.at_best[method].items()
                if key in ("iou", "precision", "recall", "f1")
            },
        }
    return {
        "human_ceiling": {key: summary_json(s) for key, s in report.ceiling.items()},
        "best_threshold": {m: thresholds[m] for m in evaluation.methods if m in thresholds},
        "annotator": report.annotator,
    }


def slice_report(
    evaluation: SliceEvaluation,
    params_by_metric: dict[str, Any],
    header: dict[str, Any],
    runtime_s: float,
    *,
    per_example: bool = False,
) -> dict[str, Any]:
    """The command line's JSON of an evaluated slice (``evaluate``, ``run`` and ``show`` print
    it): ``header`` (model, dataset, split, selection, target), the metrics with their
    parameters, ``summarize``, costs, errors, ``rationale_references`` and, with
    ``per_example``, every example's ``example_json``."""
    import metrics

    payload: dict[str, Any] = {
        **header,
        "n_examples": len(evaluation.results),
        "methods": list(evaluation.methods),
        "metrics": {
            key: {
                "params": dataclasses.asdict(params),
                "higher_is_better": metrics.get(key).higher_is_better,
                "family": metrics.get(key).family,
            }
            for key, params in params_by_metric.items()
        },
        "results": summarize(evaluation),
        "runtime_s": runtime_s,
        "explain_s": evaluation.explain_s,
        "metrics_s": evaluation.metrics_s,
        "forward_passes": evaluation.forward_passes,
        "errors": evaluation.errors,
        "mean_curves": {
            method: {
                metric: {key: [finite(v) for v in values] for key, values in curve.items()}
                for metric, curve in per.items()
            }
            for method, per in mean_curves(evaluation).items()
        },
    }
    payload.update(rationale_references(evaluation, params_by_metric))
    if per_example:
        payload["examples"] = [example_json(r) for r in evaluation.results]
    return payload


def finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def example_json(result: ExampleResult) -> dict[str, Any]:
    example = result.example
    return {
        "id": example.id,
        "words": list(example.words),
        "segment_ids": list(example.segment_ids),
        "label": example.label,
        "target": result.target,
        "probabilities": list(result.probabilities),
        "rationale": list(example.rationale) if example.rationale is not None else None,
        "rationales": [list(mask) for mask in example.rationales],
        "scores": {m: [float(s) for s in a.scores] for m, a in result.attributions.items()},
        "metrics": {m: {k: finite(r.value) for k, r in per.items()} for m, per in result.metrics.items()},
        # The words a selecting metric (token F1, IOU-F1) picked, so an external scorer sees the
        # same selection whatever its tie-breaking.
        "selected": {
            m: {k: r.extras["selected"] for k, r in per.items() if "selected" in r.extras}
            for m, per in result.metrics.items()
        },
    }
