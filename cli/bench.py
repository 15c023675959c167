"""``python -m cli bench``: time each method against the forward-pass floor (see engine.bench)."""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys

from cli.common import (
    add_autocast,
    add_dataset,
    add_methods,
    add_model,
    method_keys,
    positive_int,
    print_json,
    split_of,
)

COMMAND = "bench"
HELP = "time methods per example against the forward-pass floor"


def run(args: argparse.Namespace) -> int:
    import torch

    import explainers
    from core.attention_view import attention_implementation
    from core.classifier import Classifier, autocast_options
    from core.datasets import load_examples
    from core.loaded import load_classifier
    from engine.bench import run_bench
    from engine.resources import Resources

    methods = method_keys(args)
    dataset, split = args.dataset or "sst2", split_of(args) or ("dev" if not args.dataset else None)
    if split is None:
        raise ValueError("--split is needed with --dataset")
    pool = load_examples(dataset, split, args.data_dir)
    if args.min_words > args.max_words:
        raise ValueError(f"--min-words {args.min_words} is more than --max-words {args.max_words}")
    examples = [e for e in pool if args.min_words <= len(e.words) <= args.max_words][: args.limit or 20]
    if not examples:
        raise ValueError(f"no {dataset}/{split} example has {args.min_words}..{args.max_words} words")
    loaded = load_classifier(args.model)
    if args.attention == "eager":  # the kernel the models loaded with before the fused default
        loaded = dataclasses.replace(loaded, model=loaded.eager_model)
    clf = Classifier(loaded, batch_size=args.batch_size, head_type=args.head_type, **autocast_options(args.autocast))
    mlm = None
    if any(explainers.get(m).needs_mlm for m in methods):
        from core.masked_lm import MaskedLM

        mlm = MaskedLM.load(args.mlm)
    result = run_bench(
        clf,
        examples,
        methods,
        mlm,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
        resources=Resources.saved() if args.saved_resources else Resources(),
        group=args.group,
    )
    result.update(
        {
            "model": args.model,
            "dataset": f"{dataset}/{split}",
            "device": str(clf.device),
            "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, {platform.processor() or 'cpu'}"
            + (f", {torch.cuda.get_device_name(clf.device)}" if clf.device.type == "cuda" else ""),
            "autocast": args.autocast,
            "batch_size": args.batch_size,
            "attention": attention_implementation(clf.model),
        }
    )
    print_json(result)
    return 0


def register(sub) -> None:
    from engine.evaluate import DEFAULT_GROUP
    from engine.runs.spec import DEFAULT_CHUNK_SIZE

    parser = sub.add_parser(COMMAND, help=HELP)
    add_model(parser)
    add_dataset(parser)
    add_methods(parser, "all")
    parser.add_argument("--min-words", type=int, default=18, help="only examples with at least this many words")
    parser.add_argument("--max-words", type=int, default=22, help="only examples with at most this many words")
    parser.add_argument("--mlm", default="minilm-mlm")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument(
        "--group",
        type=positive_int,
        default=1,
        help=f"examples explained together, as a dataset run does (`evaluate --group`, default {DEFAULT_GROUP}; "
        f"`run`: each unit of --chunk-size, at most {DEFAULT_CHUNK_SIZE} by default); 1 (the default here): one at a time",
    )
    parser.add_argument(
        "--attention",
        choices=("default", "eager"),
        default="default",
        help="attention kernel of every forward pass: the model's default (fused sdpa where it has it) or eager",
    )
    add_autocast(parser)
    parser.add_argument(
        "--saved-resources",
        action="store_true",
        help="read AML's pre-trained models from the results folder (training and saving them there once), "
        "as the app and the other commands do, instead of training them in this process",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    parser.set_defaults(run=run)
