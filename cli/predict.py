"""``python -m cli predict``: the head's outputs (class probabilities, each label's probability and
the labels at or above a threshold, or regression scores) for a dataset split or a JSON Lines
file."""

from __future__ import annotations

import argparse

from cli.common import (
    add_dataset,
    add_model,
    check_data_dir,
    load_dataset_examples,
    positive_int,
    print_json,
    print_label_notes,
)
from cli.texts import check_text_alone, read_texts
from core.types import DEFAULT_THRESHOLD

COMMAND = "predict"
HELP = "class probabilities for a dataset split or a texts file"


def threshold(text: str) -> float:
    """An argparse type: a probability in (0, 1] that a label can reach."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a probability in (0, 1], got {text}")
    return value


def encode_examples(clf, examples: list) -> list:
    """Each example cut to the model's length and encoded; ``ValueError`` names the example it
    refuses (a texts file's ``FILE:LINE``, a dataset example's id)."""
    variants = []
    for example in examples:
        try:
            variants.append(clf.encode(clf.fit_example(example)[0]).variant)
        except ValueError as error:
            raise ValueError(f"{example.id}: {error}") from error
    return variants


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from core.classifier import Classifier
    from core.datasets.labels import align_labels
    from core.loaded import load_classifier

    if bool(args.dataset) == bool(args.texts):
        raise ValueError("give either --dataset (with --split) or --texts")
    check_text_alone(args, "texts", "predicts every line of the file")
    if args.dataset:
        check_data_dir(args.data_dir)
    examples = load_dataset_examples(args) if args.dataset else read_texts(args.texts)
    clf = Classifier(load_classifier(args.model), batch_size=args.batch_size, head_type=args.head_type)
    if args.threshold is not None and clf.head.kind != "multi_label":
        raise ValueError(f"--threshold picks a multi-label head's labels; {args.model}'s head is {clf.head.kind}")
    label_threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold
    if clf.head.kind == "single_label" and args.dataset:  # a score's or a label set's are not the dataset's classes
        print_label_notes(examples, clf.label_names, "predicted")
    examples = align_labels(examples, clf.label_names)  # gold labels numbered as the model's classes
    probabilities = clf.predict_proba(encode_examples(clf, examples))
    head = clf.head
    rows = []
    for example, probs in zip(examples, probabilities):
        row: dict = {"id": example.id}  # a texts file's FILE:LINE, a dataset example's own id
        if head.kind == "regression":
            row["scores"] = [float(p) for p in probs]
        else:
            row |= {"probabilities": [float(p) for p in probs], "predicted": int(np.argmax(probs))}
        if head.kind == "multi_label":
            row["labels"] = list(head.label_set(probs, label_threshold))
        if args.dataset:
            row["gold"] = example.label
        rows.append(row)
    payload: dict = {"model": args.model, "head": head.kind, "label_names": list(clf.label_names)}
    if head.kind == "multi_label":
        payload["threshold"] = label_threshold
    if args.dataset and head.kind != "single_label" and examples:  # "gold" numbers the dataset's classes
        payload["gold_label_names"] = list(examples[0].label_names)
    if args.dataset and head.kind == "single_label":
        labelled = [r for r in rows if r["gold"] is not None]
        payload["accuracy"] = sum(r["predicted"] == r["gold"] for r in labelled) / len(labelled) if labelled else None
    payload["examples"] = rows
    print_json(payload)
    return 0


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    add_model(parser)
    add_dataset(parser)
    parser.add_argument("--texts", help="JSON Lines file with 'text' (and 'text_b' for pairs)")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument(
        "--threshold",
        type=threshold,
        help=f"multi-label head only: labels at or above this probability, in (0, 1] (default {DEFAULT_THRESHOLD})",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    parser.set_defaults(run=run)
