"""``python -m core evaluate``: metrics of several methods over a dataset slice, as JSON.

For each example of the slice (the first N, or N drawn at random with ``--seed``) every method
explains the predicted class (``core.engine.explain_example``), then every metric scores each
attribution. The faithfulness metrics of one attribution share one batch
(``metrics.faithfulness.score_many``). Metrics that compare with human rationales skip examples
without one and report how many they skipped. The functions here are also what the app's
dataset mode calls.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.types import Attribution, Example

if TYPE_CHECKING:
    from core.classifier import Classifier
    from core.masked_lm import MaskedLM
    from metrics.base import MetricResult

DEFAULT_METHODS = "loo_empty,saliency,integrated_gradients,attention_rollout,random"
DEFAULT_METRICS = "deletion,insertion,comprehensiveness,sufficiency,log_odds"

ProgressFn = Callable[[float, str], None]


@dataclass
class ExampleResult:
    """One example's prediction, attributions and metric results (``metrics[method][metric]``;
    a metric skipped for lack of a rationale is absent)."""

    example: Example  # cut to the model's length
    probabilities: tuple[float, ...]
    target: int
    attributions: dict[str, Attribution]
    metrics: dict[str, dict[str, MetricResult]]
    skipped: tuple[str, ...] = ()


@dataclass
class SliceEvaluation:
    methods: list[str]
    metric_keys: list[str]
    results: list[ExampleResult] = field(default_factory=list)
    explain_s: float = 0.0
    metrics_s: float = 0.0
    forward_passes: int = 0
    errors: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # method -> [{id, index, error}]

    def skipped(self, metric: str) -> int:
        return sum(metric in r.skipped for r in self.results)


def resolve_metrics(metrics_arg: str) -> list[str]:
    """``"all"`` or comma-separated keys -> validated metric keys."""
    import metrics

    if metrics_arg == "all":
        return list(metrics.REGISTRY)
    keys = [k.strip() for k in metrics_arg.split(",") if k.strip()]
    for key in keys:
        metrics.get(key)
    return keys


def metric_params(keys: Sequence[str], overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Each metric's params dataclass with the overrides for its key applied."""
    import metrics
    from explainers.base import params_from

    return {key: params_from(metrics.get(key).params_cls, (overrides or {}).get(key, {})) for key in keys}


def needs_mlm(methods: Sequence[str], params_by_metric: dict[str, Any]) -> bool:
    import explainers

    return any(explainers.get(m).needs_mlm for m in methods) or any(
        getattr(p, "removal", None) == "mlm" for p in params_by_metric.values()
    )


def score_attribution(
    clf: Classifier,
    example: Example,
    attribution: Attribution,
    params_by_metric: dict[str, Any],
    *,
    mlm: MaskedLM | None = None,
) -> dict[str, MetricResult]:
    """Every metric of one attribution: faithfulness in one batch, the others one by one.
    Metrics that need a rationale are left out when the example has none, or when the metric
    skips it (each metric's own rule, which follows its ``annotator`` setting)."""
    import metrics
    from metrics import faithfulness

    batched = {k: p for k, p in params_by_metric.items() if k in faithfulness.METRIC_KEYS}
    results = faithfulness.score_many(clf, example, attribution, batched, mlm=mlm) if batched else {}
    has_rationale = example.rationale is not None or bool(example.rationales)
    for key, params in params_by_metric.items():
        if key in batched:
            continue
        spec = metrics.get(key)
        if spec.needs_rationale and not has_rationale:
            continue
        result = spec.compute(clf, example, attribution, params, mlm=mlm)
        if "skipped" not in result.extras:
            results[key] = result
    return {key: results[key] for key in params_by_metric if key in results}


def evaluate_slice(
    clf: Classifier,
    examples: Sequence[Example],
    methods: Sequence[str],
    params_by_metric: dict[str, Any],
    *,
    method_params: dict[str, dict[str, Any]] | None = None,
    seed: int | None = None,
    mlm: MaskedLM | None = None,
    progress: ProgressFn | None = None,
    target: str = "predicted",
) -> SliceEvaluation:
    """Explain every example with every method and score every attribution with every metric.
    A method that fails on an example (``ValueError``) is recorded in ``errors`` and left out of
    that example's metrics; the run goes on.

    ``target`` is the class explained: ``predicted`` (the AML / ERASER protocol) or ``gold``
    (the example's label, MaRC's protocol; the predicted class where an example has none)."""
    from core.engine import explain_example

    evaluation = SliceEvaluation(list(methods), list(params_by_metric))
    passes0 = clf.forward_passes
    for index, example in enumerate(examples):
        if progress is not None:
            progress(index / len(examples), f"example {index + 1} of {len(examples)}")
        start = time.perf_counter()
        explained = example.label if target == "gold" else None
        explanation = explain_example(
            clf, example, list(methods), target=explained, params=method_params, seed=seed, mlm=mlm
        )
        for method, message in explanation.errors.items():
            evaluation.errors.setdefault(method, []).append({"index": index, "id": example.id, "error": message})
        middle = time.perf_counter()
        scored = {
            method: score_attribution(clf, explanation.example, attribution, params_by_metric, mlm=mlm)
            for method, attribution in explanation.attributions.items()
        }
        evaluation.explain_s += middle - start
        evaluation.metrics_s += time.perf_counter() - middle
        skipped = tuple(k for k in params_by_metric if not any(k in per_metric for per_metric in scored.values()))
        evaluation.results.append(
            ExampleResult(
                explanation.example,
                explanation.prediction.probabilities,
                explanation.target,
                explanation.attributions,
                scored,
                skipped,
            )
        )
    evaluation.forward_passes = clf.forward_passes - passes0
    if progress is not None:
        progress(1.0, f"{len(examples)} examples done")
    return evaluation


def summarize(evaluation: SliceEvaluation) -> dict[str, dict[str, dict[str, Any]]]:
    """``{method: {metric: {mean, interval, n, skipped}}}`` over the slice (95% t interval); token
    F1 and IOU-F1 also carry ERASER's ``micro`` average (precision, recall, F1 over summed counts)."""
    from metrics import mean_interval, plausibility

    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for method in evaluation.methods:
        summary[method] = {}
        for metric in evaluation.metric_keys:
            values = [
                r.metrics[method][metric].value for r in evaluation.results if metric in r.metrics.get(method, {})
            ]
            mean, low, high, n = mean_interval(values)
            summary[method][metric] = {
                "mean": _finite(mean),
                "interval": [_finite(low), _finite(high)],
                "n": n,
                "skipped": evaluation.skipped(metric),
            }
            if metric in plausibility.MICRO_KEYS:
                found = [r.metrics[method][metric] for r in evaluation.results if metric in r.metrics.get(method, {})]
                summary[method][metric]["micro"] = plausibility.micro_f1(found)
    return summary


def rationale_references(evaluation: SliceEvaluation, params_by_metric: dict[str, Any]) -> dict[str, Any]:
    """For the plausibility metrics requested: the human ceiling (annotators scored against each
    other, paper 000's reference row) as ``{metric: {mean, interval, n, skipped}}``, and per method
    paper 000's best threshold over the slice (IoU objective) with IoU, precision, recall and F1
    at it. Empty when no plausibility metric was asked for."""
    from metrics import plausibility

    keys = [k for k in params_by_metric if k in plausibility.KEYS]
    if not keys:
        return {}

    def as_json(summary: plausibility.Summary) -> dict[str, Any]:
        return {
            "mean": _finite(summary.mean),
            "interval": [_finite(summary.low), _finite(summary.high)],
            "n": summary.n,
            "skipped": summary.skipped,
        }

    examples = [r.example for r in evaluation.results]
    ceiling = {
        key: as_json(summary)
        for key, summary in plausibility.slice_ceiling(examples, {k: params_by_metric[k] for k in keys}).items()
    }
    annotator = params_by_metric[keys[0]].annotator
    thresholds: dict[str, Any] = {}
    for method in evaluation.methods:
        pairs = [(r.example, r.attributions[method]) for r in evaluation.results if method in r.attributions]
        try:
            search = plausibility.best_threshold(pairs, "iou", annotator)
        except ValueError as error:
            thresholds[method] = {"error": str(error)}
            continue
        at_best = plausibility.at_threshold(pairs, search.best, annotator, ("iou", "precision", "recall", "f1"))
        thresholds[method] = {
            "threshold": search.best,
            "objective": search.objective,
            "n": search.n,
            "skipped": search.skipped,
            **{key: as_json(summary) for key, summary in at_best.items()},
        }
    return {"human_ceiling": ceiling, "best_threshold": thresholds, "annotator": annotator}


def select_examples(examples: Sequence[Example], random_n: int | None, seed: int | None) -> list[Example]:
    """All ``examples``, or ``random_n`` of them drawn without replacement with ``seed`` (0 when
    None), kept in dataset order."""
    import numpy as np

    if random_n is None:
        return list(examples)
    if not 0 < random_n <= len(examples):
        raise ValueError(f"--random {random_n} is outside 1..{len(examples)}")
    chosen = np.random.default_rng(0 if seed is None else seed).choice(len(examples), size=random_n, replace=False)
    return [examples[int(i)] for i in sorted(chosen)]


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def _example_json(result: ExampleResult) -> dict[str, Any]:
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
        "metrics": {m: {k: _finite(r.value) for k, r in per.items()} for m, per in result.metrics.items()},
        # The words a selecting metric (token F1, IOU-F1) picked, so an external scorer sees the
        # same selection whatever its tie-breaking.
        "selected": {
            m: {k: r.extras["selected"] for k, r in per.items() if "selected" in r.extras}
            for m, per in result.metrics.items()
        },
    }


def _stderr_progress(start: float) -> ProgressFn:
    def report(fraction: float, message: str) -> None:
        print(
            f"\r[{fraction:6.1%}] {message} ({time.perf_counter() - start:.0f} s)", end="", file=sys.stderr, flush=True
        )
        if fraction >= 1.0:
            print(file=sys.stderr)

    return report


def run(args: argparse.Namespace) -> int:
    import explainers
    import metrics
    from core.classifier import Classifier, load_classifier
    from core.commands.common import parse_params, print_json
    from core.datasets import load_examples

    methods = explainers.resolve(args.methods)
    metric_keys = resolve_metrics(args.metrics)
    overrides = parse_params(args.param)
    unknown = set(overrides) - set(methods) - set(metric_keys)
    if unknown:
        raise ValueError(f"--param for methods or metrics not requested: {', '.join(sorted(unknown))}")
    params_by_metric = metric_params(metric_keys, overrides)
    method_params = {k: v for k, v in overrides.items() if k in methods}
    if not args.split:
        raise ValueError("--split is needed")
    if args.limit is not None and args.random is not None:
        raise ValueError("give --limit or --random, not both")
    examples = select_examples(
        load_examples(args.dataset, args.split, args.data_dir, limit=args.limit), args.random, args.seed
    )
    clf = Classifier(load_classifier(args.model), batch_size=args.batch_size)
    mlm = None
    if needs_mlm(methods, params_by_metric):
        from core.masked_lm import MaskedLM

        mlm = MaskedLM.load(args.mlm)
    start = time.perf_counter()
    evaluation = evaluate_slice(
        clf,
        examples,
        methods,
        params_by_metric,
        method_params=method_params,
        seed=args.seed,
        mlm=mlm,
        progress=None if args.quiet else _stderr_progress(start),
        target=args.target,
    )
    summary = summarize(evaluation)
    payload: dict[str, Any] = {
        "model": args.model,
        "dataset": args.dataset,
        "split": args.split,
        "selection": {"random": args.random, "limit": args.limit, "seed": args.seed},
        "target": args.target,
        "n_examples": len(examples),
        "methods": methods,
        "metrics": {
            key: {
                "params": dataclasses.asdict(params),
                "higher_is_better": metrics.get(key).higher_is_better,
                "family": metrics.get(key).family,
            }
            for key, params in params_by_metric.items()
        },
        "results": summary,
        "runtime_s": time.perf_counter() - start,
        "explain_s": evaluation.explain_s,
        "metrics_s": evaluation.metrics_s,
        "forward_passes": evaluation.forward_passes,
        "errors": evaluation.errors,
    }
    payload.update(rationale_references(evaluation, params_by_metric))
    if args.per_example:
        payload["examples"] = [_example_json(r) for r in evaluation.results]
    if args.json:
        print_json(payload)
    else:
        _print_table(summary, payload)
    return 0


def _print_table(summary: dict[str, dict[str, dict[str, Any]]], payload: dict[str, Any]) -> None:
    metric_keys = list(payload["metrics"])
    arrows = ["↑" if payload["metrics"][k]["higher_is_better"] else "↓" for k in metric_keys]
    width = max(map(len, summary), default=6)
    print(f"{'method':<{width}}  " + "  ".join(f"{k + a:>24}" for k, a in zip(metric_keys, arrows)))
    for method, per in summary.items():
        cells = []
        for key in metric_keys:
            s = per[key]
            low, high = s["interval"]
            cells.append("—" if s["mean"] is None else f"{s['mean']:.3f} [{low:.3f}, {high:.3f}] n={s['n']}")
        print(f"{method:<{width}}  " + "  ".join(f"{c:>24}" for c in cells))
    print(f"{payload['n_examples']} examples, {payload['runtime_s']:.1f} s, {payload['forward_passes']} forward passes")
    for method, failures in payload["errors"].items():
        print(f"{method} failed on {len(failures)} examples, first: {failures[0]['error']}")


def register(sub) -> None:
    from core.commands.common import add_dataset, add_model

    parser = sub.add_parser("evaluate", help="faithfulness and plausibility metrics over a dataset slice")
    add_model(parser)
    add_dataset(parser, required=True)
    parser.add_argument("--random", type=int, metavar="N", help="N examples drawn at random (seeded by --seed)")
    parser.add_argument("--methods", default=DEFAULT_METHODS, help="'all' or comma-separated method keys")
    parser.add_argument("--metrics", default=DEFAULT_METRICS, help="'all' or comma-separated metric keys")
    parser.add_argument(
        "--param", action="append", metavar="KEY.NAME=VALUE", help="method or metric parameter, repeatable"
    )
    parser.add_argument("--per-example", action="store_true", help="add every example's words, scores and values")
    parser.add_argument("--seed", type=int, help="seed for stochastic methods and for --random")
    parser.add_argument(
        "--target",
        choices=("predicted", "gold"),
        default="predicted",
        help="class to explain: the predicted one (default) or the gold label (MaRC's protocol)",
    )
    parser.add_argument("--mlm", default="minilm-mlm", help="masked LM for methods and removals that need one")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
