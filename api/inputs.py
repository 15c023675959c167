"""What the API's functions read as examples: one text, a (premise, hypothesis) pair or an
``Example`` (``one_example``), and for ``evaluate`` and ``explain_many`` a ``datasets.Dataset``, a
bundled dataset's split or a list of texts and ``Example``s (``read_examples``)."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from core.datasets import load_examples, split_words
from core.example_dataset import COLUMNS as EXAMPLE_COLUMNS
from core.example_dataset import to_examples
from core.types import Example

if TYPE_CHECKING:
    from datasets import Dataset


def read_examples(
    dataset: Dataset | str | Iterable[Example | str],
    split: str | None,
    limit: int | None,
    columns: tuple[str, str | None, str | None] = ("text", None, "label"),
) -> list[Example]:
    """The first ``limit`` examples (all when None) of a bundled dataset's ``split``, of a
    ``datasets.Dataset`` (``columns``: its text, text pair and label columns, as
    ``examples_from_dataset`` reads them) or of a list of texts, pairs and ``Example``s; a bad
    argument or no example at all is refused (``ValueError``)."""
    if limit is not None and not is_count(limit):
        raise ValueError(f"limit must be a whole number of 1 or more (or None for every example), got {limit!r}")
    if isinstance(dataset, str):
        if split is None:
            raise ValueError(f"give split= with the dataset name {dataset!r}")
        examples = load_examples(dataset, split, limit=limit, exact=True)
    elif split is not None:
        raise ValueError("split= is for a dataset name; select the split of a Dataset yourself")
    elif _is_hf_dataset(dataset):
        examples = examples_from_dataset(dataset, *columns, limit=limit)
    else:
        examples = _text_examples(dataset, limit)
    if not examples:
        raise ValueError("the dataset has no examples")
    return examples


def examples_from_dataset(
    dataset: Dataset,
    text_column: str = "text",
    text_pair_column: str | None = None,
    label_column: str | None = "label",
    *,
    limit: int | None = None,
) -> list[Example]:
    """The rows of a ``datasets.Dataset`` as ``Example``s: text split into words as the app splits
    typed text (a column holding a list of words is taken as it is), the label's names from a
    ``ClassLabel`` feature, ids ``<split or 'dataset'>/<row>``. A split loaded by
    ``core.datasets.load_dataset`` (its rows are examples already) keeps its words, labels,
    rationales and ids."""
    if set(EXAMPLE_COLUMNS) <= set(dataset.column_names):
        return to_examples(dataset if limit is None else dataset.select(range(min(limit, len(dataset)))))
    columns = [c for c in (text_column, text_pair_column, label_column) if c is not None]
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise ValueError(f"no column {missing[0]!r} in the dataset; its columns: {', '.join(dataset.column_names)}")
    feature = dataset.features.get(label_column) if label_column is not None else None
    names = tuple(getattr(feature, "names", None) or ())
    prefix = str(dataset.split) if dataset.split is not None else "dataset"
    rows = dataset if limit is None else dataset.select(range(min(limit, len(dataset))))
    examples = []
    for index, row in enumerate(rows):
        segments = [_words(row[text_column])]
        if text_pair_column is not None:
            segments.append(_words(row[text_pair_column]))
        label = row[label_column] if label_column is not None else None
        if label is not None and (isinstance(label, bool) or not isinstance(label, int)):
            raise ValueError(f"label {label!r} of row {index} in {label_column!r} is not a class index")
        examples.append(
            Example(
                segments=tuple(segments),
                label=None if label is None or label < 0 else label,
                label_names=names,
                dataset="dataset",
                split=prefix,
                id=f"{prefix}/{index}",
            )
        )
    return examples


def _words(value: Any) -> tuple[str, ...]:
    return tuple(str(w) for w in value) if isinstance(value, (list, tuple)) else split_words(str(value))


def _is_hf_dataset(value: Any) -> bool:
    from datasets import Dataset

    return isinstance(value, Dataset)


def _text_examples(items: Iterable[Example | str], limit: int | None) -> list[Example]:
    """The first ``limit`` items: Examples as they are, texts as ``explain`` reads them; anything
    else is refused with a ``ValueError``, as every bad argument of the API is."""
    accepted = "give Examples, texts, a datasets.Dataset or a dataset name"
    if not isinstance(items, Iterable):
        raise ValueError(f"the dataset is {items!r:.80} ({type(items).__name__}); {accepted}")  # noqa: TRY004
    examples = []
    for index, item in enumerate(itertools.islice(items, limit)):
        if not isinstance(item, (Example, str)):
            given = f"{item!r:.80} ({type(item).__name__})"
            raise ValueError(f"item {index} of the dataset is {given}; {accepted}")  # noqa: TRY004
        examples.append(one_example(item, f"text/{index}"))
    return examples


def one_example(text_or_pair: str | Sequence[str] | Example, example_id: str = "text") -> Example:
    """An Example as it is; a text or a pair of texts split into words as the app splits them."""
    if isinstance(text_or_pair, Example):
        return text_or_pair
    if isinstance(text_or_pair, str):
        texts = [text_or_pair]
    else:
        texts = list(text_or_pair) if isinstance(text_or_pair, Iterable) else []
    if not 1 <= len(texts) <= 2 or not all(isinstance(t, str) for t in texts):
        raise ValueError(
            "give a text, a (premise, hypothesis) pair of texts or an Example (several texts: explain_many), "
            f"got {text_or_pair!r:.80}"
        )
    return Example(segments=tuple(split_words(t) for t in texts), id=example_id)


def is_count(value: Any) -> bool:
    """A whole number (numpy's too) of 1 or more; True is none."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 1
