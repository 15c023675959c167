"""SST-2 (Socher et al. 2013, GLUE's version): one sentence per line of ``sst2/{split}.tsv``, words
split on spaces; the test split has no labels."""

from __future__ import annotations

import csv
from pathlib import Path

from core.types import Example

SST2_LABELS = ("negative", "positive")


def load_sst2(root: Path, split: str) -> list[Example]:
    path = root / "sst2" / f"{split}.tsv"
    examples = []
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        labelled = header[-1] == "label"
        for i, row in enumerate(reader):
            sentence = row[0] if labelled else row[1]
            label = int(row[1]) if labelled else None
            examples.append(
                Example(
                    segments=(tuple(sentence.split()),),
                    label=label,
                    label_names=SST2_LABELS,
                    dataset="sst2",
                    split=split,
                    id=f"sst2/{split}/{i}",
                )
            )
    return examples
