"""HateXplain (Mathew et al. 2021, arXiv 2012.10289): posts with three annotators' labels, token
rationales and target communities, from ``hatexplain/{split}.csv``; the annotations the
regression and multi-label demos learn."""

from __future__ import annotations

import ast
import csv
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from core.datasets.common import DATA_DIR_ENV, data_dir, majority_mask
from core.types import Example

HATEXPLAIN_LABELS = ("hatespeech", "normal", "offensive")


def hatexplain_example(
    post_id: str, labels: list[int], masks: list[list[int]], words: list[str], split: str, dataset: str = "hatexplain"
) -> Example:
    """Majority label of the annotators (a three-way tie, which the released splits do not have,
    goes to the first annotator's label); one mask per annotator who gave one (none for posts
    judged normal: then ``rationales`` is empty and ``rationale`` None)."""
    label = Counter(labels).most_common(1)[0][0]
    masks = tuple(tuple(int(v) for v in m) for m in masks if len(m) == len(words))
    return Example(
        segments=(tuple(words),),
        label=int(label),
        label_names=HATEXPLAIN_LABELS,
        rationales=masks,
        rationale=majority_mask(masks) if masks else None,
        dataset=dataset,
        split=split,
        id=f"{dataset}/{split}/{post_id}",
    )


def load_hatexplain(root: Path, split: str) -> list[Example]:
    return [example for example, _ in _posts(root, split)]


def _posts(root: Path, split: str) -> Iterator[tuple[Example, dict]]:
    """Each post of ``hatexplain/{split}.csv`` as an example, with its annotators' record (their
    labels and the communities each named as targets), parsed as literals, never evaluated."""
    with open(root / "hatexplain" / f"{split}.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            annotators = ast.literal_eval(row["annotators"])
            rationales, tokens = ast.literal_eval(row["rationales"]), ast.literal_eval(row["post_tokens"])
            yield hatexplain_example(row["id"], list(annotators["label"]), rationales, tokens, split), annotators


HATEXPLAIN_COMMUNITIES = ("African", "Islam", "Jewish", "Homosexual", "Women", "Refugee", "Arab")
# The seven target communities named by at least two of three annotators most often in the
# validation split (None, Other and the rarer ones left out); the multi-label demo's labels.


def hatexplain_annotations(
    split: str, root: str | os.PathLike | None = None
) -> list[tuple[Example, float, tuple[int, ...]]]:
    """HateXplain posts with the two annotations the regression and multi-label demos learn:
    the share of annotators who marked the post hate speech or offensive (0, 1/3, 2/3 or 1), and
    one 0/1 flag per ``HATEXPLAIN_COMMUNITIES`` entry named as a target by at least two of them."""
    folder = data_dir(root)
    if folder is None or not (folder / "hatexplain" / f"{split}.csv").exists():
        raise FileNotFoundError(f"hatexplain/{split}.csv not found: set {DATA_DIR_ENV} to the data folder")
    out = []
    for example, annotators in _posts(folder, split):
        labels = list(annotators["label"])
        share = sum(1 for label in labels if HATEXPLAIN_LABELS[label] != "normal") / len(labels)
        named = Counter(t for targets in annotators["target"] for t in set(targets))
        flags = tuple(int(named[c] >= 2) for c in HATEXPLAIN_COMMUNITIES)
        out.append((example, share, flags))
    return out
