"""``python -m cli randomize``: cascading or independent layer randomisation (sanity checks).

Prints ``steps``, one object per step in order (``original``, ``head``, ``block L`` ...
``embeddings``), each with the step's ``name``, the components re-initialised in its model and,
per method, the means over the examples of ``spearman``, ``spearman_abs``, ``topk_overlap``,
``sign_change`` and ``mean_abs_change`` (with ``<measure>_ci`` 95% intervals for a dataset).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from cli.common import (
    add_dataset,
    add_methods,
    add_model,
    check_per_example,
    load_dataset_examples,
    methods_and_params,
    positive_int,
    print_json,
    progress_bar,
    seed_int,
)
from cli.texts import TEXT_B_ALONE, check_text_alone, text_example

COMMAND = "randomize"
HELP = "sanity check: re-initialise layers and compare the explanations"
THESIS_METHODS = "saliency,grad_x_input,integrated_gradients,attention_mean,attention_rollout"


def _examples(args: argparse.Namespace) -> list:
    if args.text is not None and args.dataset:
        raise ValueError("give --text or --dataset, not both")
    if args.text is None and args.text_b is not None:
        raise ValueError(TEXT_B_ALONE)
    check_text_alone(args)
    check_per_example(args)
    if args.text is not None:
        return [text_example(args.text, args.text_b)]
    if args.dataset:
        return load_dataset_examples(args)
    raise ValueError("give --text or --dataset with --split")


def _per_example(result) -> list[dict[str, Any]]:
    return [
        {
            "id": row.example.id,
            "words": list(row.example.words),
            "target": row.target,
            "scores": {
                step.name: {m: [float(s) for s in a.scores] for m, a in attributions.items()}
                for step, attributions in zip(result.steps, row.attributions)
            },
        }
        for row in result.examples
    ]


def _print_table(result, pooled: bool = False) -> None:
    from core.numbers import fixed

    width = max(len(step.name) for step in result.steps)
    over = "pooled over every word" if pooled else "mean over examples"
    print(
        f"{result.mode} randomisation ({result.scheme}), seed {result.seed}, {len(result.examples)} example(s); "
        f"Spearman of signed scores, {over}"
    )
    print(" " * width + "".join(f"  {m[:20]:>20}" for m in result.methods))
    for step, per_method in zip(result.steps, result.summary(pooled=pooled)):
        cells = []
        for method in result.methods:
            mean = per_method[method]["spearman"][0]
            cells.append(f"  {'n/a' if math.isnan(mean) else fixed(mean, 3, signed=True):>20}")
        print(f"{step.name:<{width}}" + "".join(cells))
    print(f"{result.runtime_s:.1f} s, {result.forward_passes:,} forward / {result.backward_passes:,} backward passes")


def run(args: argparse.Namespace) -> int:
    import explainers
    from core.classifier import Classifier
    from core.datasets.labels import class_index
    from core.loaded import load_classifier
    from engine.resources import Resources
    from experiments.randomization import run_randomization

    methods, params = methods_and_params(args)
    examples = _examples(args)
    clf = Classifier(load_classifier(args.model), batch_size=args.batch_size, head_type=args.head_type)
    mlm = None
    if any(explainers.get(m).needs_mlm for m in methods):
        from core.masked_lm import MaskedLM

        mlm = MaskedLM.load(args.mlm)
    components = [c.strip() for c in args.components.split(",") if c.strip()] if args.components else None
    target = class_index(args.target, clf.label_names)
    targets = [target] * len(examples) if target is not None else None
    result = run_randomization(
        clf,
        examples,
        methods,
        mode=args.mode,
        seed=args.seed,
        scheme=args.scheme,
        components=components,
        targets=targets,
        params=params,
        top_k_fraction=args.top_k,
        mlm=mlm,
        progress=progress_bar(100, enabled=not args.quiet, unit="%"),
        resources=Resources.saved(),
    )
    if not args.json:
        _print_table(result, args.pooled)
        return 0
    payload = {"model": args.model, **result.to_json()}
    if args.text or args.per_example:
        payload["examples"] = _per_example(result)
    print_json(payload)
    return 0


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    add_model(parser)
    parser.add_argument("--text", help="the text (the premise for pair tasks)")
    parser.add_argument("--text-b", help="the second text (hypothesis) for pair tasks")
    add_dataset(parser)
    add_methods(parser, THESIS_METHODS, " (the thesis's five)")
    parser.add_argument("--mode", choices=("cascading", "independent"), default="cascading")
    parser.add_argument("--components", help="comma-separated subset, e.g. 'head' or 'head,block 6' (default: all)")
    parser.add_argument("--seed", type=seed_int, default=0, help="seed of the random weights and of stochastic methods")
    parser.add_argument(
        "--scheme",
        choices=("init", "shuffle"),
        default="init",
        help="re-draw with the model's own initializer, or permute each weight tensor",
    )
    parser.add_argument(
        "--pooled",
        action="store_true",
        help="the table's Spearman over every word of every example (default: the mean over examples)",
    )
    parser.add_argument(
        "--top-k", type=float, default=0.2, help="top-k overlap over this fraction of the words (at least 1)"
    )
    parser.add_argument(
        "--target", help="class to explain, by number or by name (default: each example's predicted class)"
    )
    parser.add_argument("--param", action="append", metavar="KEY.NAME=VALUE", help="method parameter, repeatable")
    parser.add_argument("--mlm", default="minilm-mlm", help="masked LM for methods that need one")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--per-example", action="store_true", help="with --json and --dataset: every example's scores")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(run=run)
