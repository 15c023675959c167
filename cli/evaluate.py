"""``python -m cli evaluate``: metrics of several methods over a dataset slice, as JSON (the
work is ``engine.evaluate``)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any

from engine.evaluate import (
    DEFAULT_METHODS,
    DEFAULT_METRICS,
    ProgressFn,
    evaluate_slice,
    example_json,
    finite,
    mean_curves,
    metric_params,
    needs_mlm,
    rationale_references,
    resolve_metrics,
    select_examples,
    summarize,
)
from engine.resources import Resources


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
    from cli.common import parse_params, print_json
    from core.classifier import Classifier, load_classifier
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
        resources=Resources(),
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
        "mean_curves": {
            method: {
                metric: {key: [finite(v) for v in values] for key, values in curve.items()}
                for metric, curve in per.items()
            }
            for method, per in mean_curves(evaluation).items()
        },
    }
    payload.update(rationale_references(evaluation, params_by_metric))
    if args.per_example:
        payload["examples"] = [example_json(r) for r in evaluation.results]
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
    from cli.common import add_dataset, add_model

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
