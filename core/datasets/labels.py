"""Gold labels numbered as a model numbers its classes. A dataset numbers its classes its own
way (a data file's label words in sorted order, a hub dataset's ``ClassLabel``), and a model as
its config names them: e-SNLI's entailment, neutral, contradiction is one common order of three,
another model's contradiction, entailment, neutral another. Where a model and a dataset name the
same classes, a gold label's number must be the model's, or accuracy and a gold-label target
compare the wrong classes."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence

from core.types import Example


def label_key(name: str) -> str:
    """A class name as names are matched: case and spaces aside (``Non Toxic`` is ``nontoxic``)."""
    return "".join(str(name).casefold().split())


def shares_classes(names: Sequence[str], class_names: Sequence[str]) -> bool:
    """Whether a dataset (naming its classes ``names``) names one of a model's classes
    (``class_names``) at least, case and spaces aside (``label_key``): its gold labels are then
    numbered as the model's (``align_labels``)."""
    known = {label_key(name) for name in class_names}
    return any(label_key(name) in known for name in names)


def align_labels(examples: Sequence[Example], class_names: Sequence[str]) -> list[Example]:
    """``examples`` with their gold labels renumbered to ``class_names`` (a model's) by name, where
    the dataset names one of the model's classes at least (``shares_classes``); they then carry
    the model's names, and an example whose class the model does not name (a ``neutral`` under a
    model of ``negative`` and ``positive``) has no gold label. Where the dataset names none of the
    model's classes, each example keeps its number, taken as the model's class, as a dataset of
    bare class numbers does (``alignment_note`` says which way a dataset went)."""
    lookup = {label_key(name): index for index, name in enumerate(class_names)}
    aligned = []
    for example in examples:
        names, label = example.label_names, example.label
        named = label is not None and 0 <= label < len(names) and tuple(names) != tuple(class_names)
        if named and shares_classes(names, class_names):
            example = dataclasses.replace(
                example, label=lookup.get(label_key(names[label])), label_names=tuple(class_names)
            )
        aligned.append(example)
    return aligned


def alignment_note(names: Sequence[str], class_names: Sequence[str]) -> str | None:
    """One line on how ``align_labels`` took a dataset's gold labels (its classes ``names``) under
    a model's ``class_names``, where it is not by the same names: by number, pairing the names, or
    without the dataset's classes the model does not name; None where there is nothing to say."""
    if not names or not class_names or tuple(names) == tuple(class_names):
        return None
    known = {label_key(name) for name in class_names}
    unknown = [name for name in names if label_key(name) not in known]
    if not unknown:
        return None
    if len(unknown) < len(names):
        return (
            f"The model names no class {', '.join(unknown)} of the dataset's, so its examples of "
            f"{'that class' if len(unknown) == 1 else 'those classes'} have no gold label here."
        )
    pairs = ", ".join(f"{ours} → {theirs}" for ours, theirs in zip(names, class_names, strict=False))
    counts = f" (the dataset names {len(names)} classes, the model {len(class_names)})"
    return (
        "The dataset does not name its classes as the model does, so each gold label was taken as the model's "
        f"class of the same number: {pairs}{counts if len(names) != len(class_names) else ''}."
    )


def class_index(target: int | str | None, class_names: Sequence[str]) -> int | None:
    """The model's class a user names to explain: its number, or its name (case and spaces aside,
    ``label_key``; a number written as text, as a command line gives it, is a number); None for
    the predicted class. Anything else is refused, listing the classes."""
    if target is None:
        return None
    if isinstance(target, str) and target.strip().removeprefix("-").isdigit():
        target = int(target)
    if isinstance(target, numbers.Integral) and not isinstance(target, bool):  # numpy's too (an argmax)
        if not 0 <= target < len(class_names):
            raise ValueError(f"target {target} is not a class of the model (0..{len(class_names) - 1})")
        return int(target)
    lookup = {label_key(name): index for index, name in enumerate(class_names)}
    if not isinstance(target, str) or label_key(target) not in lookup:  # True is no class
        raise ValueError(f"unknown class {target!r}; the model's classes: {', '.join(class_names)}")
    return lookup[label_key(target)]
