"""The project's own hand-written examples (``assets/examples/examples.jsonl``): one split per
task, highlighted phrases as the rationale."""

from __future__ import annotations

import json
from pathlib import Path

from core.datasets.common import split_words
from core.types import Example

EXAMPLES_FILE = Path(__file__).resolve().parents[2] / "assets" / "examples" / "examples.jsonl"


def load_bundled_examples(path: Path = EXAMPLES_FILE, split: str = "all") -> list[Example]:
    """The team's hand-written examples (JSON Lines: task, text, text_b, label, highlight)."""
    examples = []
    with open(path, encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if not line.strip():
                continue
            record = json.loads(line)
            if split != "all" and record["task"] != split:
                continue
            segments = [split_words(record["text"])]
            if record.get("text_b"):
                segments.append(split_words(record["text_b"]))
            words = [w for s in segments for w in s]
            highlighted = {w.lower() for phrase in record.get("highlight", []) for w in split_words(phrase)}
            mask = tuple(int(w.lower() in highlighted) for w in words) if highlighted else None
            label_names = tuple(record["label_names"])
            examples.append(
                Example(
                    segments=tuple(segments),
                    label=label_names.index(record["label"]) if record.get("label") else None,
                    label_names=label_names,
                    rationales=(mask,) if mask else (),
                    rationale=mask,
                    dataset="examples",
                    split=record["task"],
                    id=f"examples/{record['task']}/{i}",
                )
            )
    return examples
