"""Gold labels numbered as a model numbers its classes. A dataset numbers its classes its own
way (a data file's label words in sorted order, a hub dataset's ``ClassLabel``), and a model as
its config names them: e-SNLI's entailment, neutral, contradiction is one common order of three,
another model's contradiction, entailment, neutral another. Where a model and a dataset name the
same classes, a gold label's number must be the model's, or accuracy and a gold-label target
compare the wrong classes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from core.types import Example


def _key(name: str) -> str:
    return name.strip().casefold()


def names_the_classes_of(names: Sequence[str], class_names: Sequence[str]) -> bool:
    """Whether every class a dataset names (``names``) is one of a model's (``class_names``), case
    and surrounding spaces aside."""
    known = {_key(name) for name in class_names}
    return bool(names) and all(_key(name) in known for name in names)


def align_labels(examples: Sequence[Example], class_names: Sequence[str]) -> list[Example]:
    """``examples`` with their gold labels renumbered to ``class_names`` (a model's) by name, where
    the dataset names the model's classes (``names_the_classes_of``); they then carry the model's
    names. Any other example keeps its number, taken as the model's class, as a dataset of bare
    class numbers does."""
    lookup = {_key(name): index for index, name in enumerate(class_names)}
    aligned = []
    for example in examples:
        names, label = example.label_names, example.label
        named = label is not None and 0 <= label < len(names) and tuple(names) != tuple(class_names)
        if named and names_the_classes_of(names, class_names):
            example = dataclasses.replace(example, label=lookup[_key(names[label])], label_names=tuple(class_names))
        aligned.append(example)
    return aligned
