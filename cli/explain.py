"""``python -m cli explain``: every requested method's word scores for one text, as JSON."""

from __future__ import annotations

import argparse

from cli.common import (
    add_autocast,
    add_methods,
    add_model,
    methods_and_params,
    positive_int,
    print_json,
    printable,
    seed_int,
)
from cli.texts import text_example

COMMAND = "explain"
HELP = "attribute one text with one or more methods"


def run(args: argparse.Namespace) -> int:
    import explainers
    from core.classifier import Classifier, autocast_options
    from core.datasets.labels import class_index
    from core.loaded import load_classifier
    from engine.explain import explain_example
    from engine.resources import Resources
    from engine.windows import Windows

    methods, params = methods_and_params(args)
    window_options = {"overlap": args.window_overlap, "stitch": args.stitch}
    if not args.windows and any(value is not None for value in window_options.values()):
        raise ValueError("--window-overlap and --stitch set how --windows explains a long text: add --windows")
    if args.windows and args.text_b is not None:
        raise ValueError(
            "--windows explains a single long text; a (premise, hypothesis) pair is cut to the model's length"
        )
    example = text_example(args.text, args.text_b)
    loaded = load_classifier(args.model)
    loaded.check_texts(len(example.segments))
    clf = Classifier(
        loaded,
        batch_size=args.batch_size,
        head_type=args.head_type,
        **autocast_options(args.autocast),
    )
    mlm = None
    if any(explainers.get(m).needs_mlm for m in methods):
        from core.masked_lm import MaskedLM

        mlm = MaskedLM.load(args.mlm)
    windows = Windows(**{k: v for k, v in window_options.items() if v is not None}) if args.windows else None
    result = explain_example(
        clf,
        example,
        methods,
        target=class_index(args.target, clf.label_names),
        params=params,
        seed=args.seed,
        mlm=mlm,
        resources=Resources.saved(),
        windows=windows,
    )
    payload = {
        "model": args.model,
        "words": list(result.example.words),
        "segment_ids": list(result.example.segment_ids),
        "label_names": list(clf.label_names),
        "head": clf.head.kind,  # what "probabilities" are: softmax, per-label sigmoid, or regression scores
        "probabilities": list(result.prediction.probabilities),
        "predicted": result.prediction.predicted,
        "target": result.target,
        "dropped_words": result.dropped_words,
        "windows": [list(span) for span in result.windows],
        "attributions": {key: a.to_json() for key, a in result.attributions.items()},
        "errors": result.errors,
    }
    if args.json:
        print_json(payload)
    else:
        print(printable(result.prediction.text(result.target, clf.label_names)))
        print(_coverage(len(result.example.words), result.dropped_words, len(result.windows), result.example.is_pair))
        for key, attribution in result.attributions.items():
            # three significant digits: gradient scores are often 1e-4 and would print as +0.000
            pairs = " ".join(f"{w}:{s:+.3g}" for w, s in zip(attribution.words, attribution.scores))
            print(printable(f"{key}: {pairs}"))
        for key, message in result.errors.items():
            print(printable(f"{key}: failed: {message}"))
    return 1 if result.errors and not result.attributions else 0


def _coverage(explained: int, dropped: int, n_windows: int, pair: bool = False) -> str:
    """The line that says how much of the text the scores cover."""
    if n_windows:
        return f"explained all {explained} words in {n_windows} sliding windows"
    if dropped:
        cut = f"explained the first {explained} of {explained + dropped} words (the model's length limit)"
        return cut if pair else f"{cut}; --windows explains all of them"
    return f"explained all {explained} words"


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    add_model(parser)
    add_autocast(parser)
    parser.add_argument("--text", required=True, help="the text (the premise for pair tasks)")
    parser.add_argument("--text-b", help="the second text (hypothesis) for pair tasks")
    parser.add_argument(
        "--target", help="class to explain, by number or by name, such as positive (default: the predicted class)"
    )
    add_methods(parser, "panel")
    parser.add_argument("--param", action="append", metavar="KEY.NAME=VALUE", help="method parameter, repeatable")
    parser.add_argument("--seed", type=seed_int, help="seed for every stochastic method")
    parser.add_argument("--mlm", default="minilm-mlm", help="masked LM for methods that need one")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument(
        "--windows",
        action="store_true",
        help="explain a single text longer than the model accepts in overlapping windows (windowable methods only)",
    )
    parser.add_argument(
        "--window-overlap", type=float, help="with --windows: share of a window's words the next repeats (default 0.5)"
    )
    parser.add_argument("--stitch", help="with --windows: central (the window with most context, the default) or mean")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
