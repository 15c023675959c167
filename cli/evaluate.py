"""``python -m cli evaluate``: metrics of several methods over a dataset slice, as JSON (the
work is ``engine.evaluate``)."""

from __future__ import annotations

import argparse
import time

COMMAND = "evaluate"
HELP = "faithfulness and plausibility metrics over a dataset slice"


def run(args: argparse.Namespace) -> int:
    from cli.common import (
        check_per_example,
        nothing_explained,
        parse_params,
        print_json,
        print_label_notes,
        print_stopped,
        print_summary_table,
        progress_bar,
        slice_keys,
        split_of,
    )
    from core.classifier import Classifier, autocast_options
    from core.datasets import load_examples
    from core.loaded import load_classifier
    from engine.evaluate import (
        SliceEvaluation,
        evaluate_slice,
        head_defaults,
        metric_params,
        needs_mlm,
        select_examples,
    )
    from engine.resources import Resources
    from engine.slice_report import slice_report

    check_per_example(args)
    methods, metric_keys = map(list, slice_keys(args))
    overrides = parse_params(args.param)
    unknown = set(overrides) - set(methods) - set(metric_keys)
    if unknown:
        raise ValueError(f"--param for methods or metrics not requested: {', '.join(sorted(unknown))}")
    params_by_metric = metric_params(metric_keys, overrides)
    method_params = {k: v for k, v in overrides.items() if k in methods}
    split = split_of(args)
    if not split:
        raise ValueError("--split is needed")
    if args.limit is not None and args.random is not None:
        raise ValueError("give --limit or --random, not both")
    examples = select_examples(
        load_examples(args.dataset, split, args.data_dir, limit=args.limit, exact=True), args.random, args.seed
    )
    clf = Classifier(
        load_classifier(args.model),
        batch_size=args.batch_size,
        head_type=args.head_type,
        **autocast_options(args.autocast),
    )
    if clf.head.kind == "single_label":  # a score's or a label set's outputs are not the dataset's classes
        print_label_notes(examples, clf.label_names, args.target)
    if args.metrics is None:  # the defaults the head can compute (no log-odds of a regression score)
        params_by_metric = {key: params_by_metric[key] for key in head_defaults(list(params_by_metric), clf.head.kind)}
    mlm = None
    if needs_mlm(methods, params_by_metric):
        from core.masked_lm import MaskedLM

        mlm = MaskedLM.load(args.mlm)
    start = time.perf_counter()
    evaluation = SliceEvaluation(methods, list(params_by_metric))  # filled one group at a time
    try:
        evaluate_slice(
            clf,
            examples,
            methods,
            params_by_metric,
            method_params=method_params,
            seed=args.seed,
            mlm=mlm,
            progress=progress_bar(len(examples), enabled=not args.quiet),
            target=args.target,
            resources=Resources.saved(),
            group=args.group,
            resume=evaluation,
        )
    except KeyboardInterrupt:
        return print_stopped(
            f"evaluate stopped after {len(evaluation.results)} of {len(examples)} examples; nothing is kept"
            " (`python -m cli run` keeps a slice's examples as they finish and resumes it)"
        )
    header = {
        "model": args.model,
        "dataset": args.dataset,
        "split": split,
        "selection": {"random": args.random, "limit": args.limit, "seed": drawn_with(args)},
        "target": args.target,
        "autocast": args.autocast,
    }
    payload = slice_report(
        evaluation, params_by_metric, header, time.perf_counter() - start, per_example=args.per_example
    )
    if args.json:
        print_json(payload)
    else:
        print_summary_table(payload)
    return 1 if nothing_explained(payload) else 0


def drawn_with(args: argparse.Namespace) -> int | None:
    """The seed of the run: ``--seed``, or for ``--random`` the one ``select_examples`` drew
    with when none was given (0; the JSON said null)."""
    return 0 if args.seed is None and args.random is not None else args.seed


def register(sub) -> None:
    from cli.common import add_autocast, add_dataset, add_model, add_slice_options, positive_int
    from engine.evaluate import DEFAULT_GROUP

    parser = sub.add_parser(COMMAND, help=HELP)
    add_model(parser)
    add_autocast(parser)
    add_dataset(parser, required=True)
    parser.add_argument("--random", type=int, metavar="N", help="N examples drawn at random (seeded by --seed)")
    add_slice_options(parser, "seed for stochastic methods and for --random")
    parser.add_argument("--per-example", action="store_true", help="add every example's words, scores and values")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument(
        "--group",
        type=positive_int,
        default=DEFAULT_GROUP,
        help=f"examples of similar length explained together (default {DEFAULT_GROUP}; a GPU may want more)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
