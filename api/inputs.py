"""What the API's functions read as examples: one text, a (premise, hypothesis) pair or an
``Example`` (``one_example``), and for ``evaluate`` and ``explain_many`` a ``datasets.Dataset`` (or
a pandas DataFrame or a mapping of columns, read as one), a bundled dataset's split or a list of
texts, pairs and ``Example``s (``read_examples``)."""

from __future__ import annotations

import itertools
import numbers
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from core.datasets import FILE_PREFIX, FILE_SPLIT, load_examples, split_words
from core.datasets.files import examples_from_dataset
from core.datasets.labels import alignment_note
from core.params import MAX_SEED
from core.types import Example

if TYPE_CHECKING:
    from datasets import Dataset

DEFAULT_LABEL_COLUMN = "label"


def read_examples(
    dataset: Dataset | str | Iterable[Example | str],
    split: str | None,
    limit: int | None,
    columns: tuple[str, str | None, str | None] = ("text", None, DEFAULT_LABEL_COLUMN),
) -> list[Example]:
    """The first ``limit`` examples (all when None) of a named dataset's ``split`` (a data file's,
    ``file:PATH``, every row when None), of a ``datasets.Dataset``, a DataFrame or a mapping of
    columns (``columns``: its text, text pair and label columns, as ``examples_from_dataset`` reads
    them; one without a column of the default label name is unlabelled; a dataset name reads its
    own columns, so naming others is refused) or of a list of texts, pairs and ``Example``s; a bad
    argument or no example at all is refused (``ValueError``)."""
    if limit is not None and not is_count(limit):
        raise ValueError(f"limit must be a whole number of 1 or more (or None for every example), got {limit!r}")
    if isinstance(dataset, str):
        if columns != ("text", None, DEFAULT_LABEL_COLUMN):
            raise ValueError(
                f"text_column, text_pair_column and label_column are for a Dataset or DataFrame; the dataset "
                f"{dataset!r} names its own columns (a data file's: see core.datasets.files)"
            )
        split = FILE_SPLIT if split is None and dataset.startswith(FILE_PREFIX) else split  # a data file's every row
        if split is None:
            raise ValueError(f"give split= with the dataset name {dataset!r}")
        examples = load_examples(dataset, split, limit=limit, exact=True)
    elif split is not None:
        raise ValueError("split= is for a dataset name; select the split of a Dataset yourself")
    elif (table := _as_hf_dataset(dataset)) is not None:
        if columns[2] == DEFAULT_LABEL_COLUMN and DEFAULT_LABEL_COLUMN not in table.column_names:
            columns = (columns[0], columns[1], None)  # unlabelled: only a label column named on purpose must be there
        examples = examples_from_dataset(table, *columns, limit=limit)
    else:
        examples = _text_examples(dataset, limit)
    if not examples:
        raise ValueError("the dataset has no examples")
    return examples


def warn_alignment(examples: Sequence[Example], class_names: Sequence[str]) -> None:
    """Say, as a ``UserWarning``, how ``align_labels`` takes the examples' gold labels under a
    model's ``class_names`` where it is not by the same names (``alignment_note``): the command
    line prints that line and the app shows it."""
    if examples and (note := alignment_note(examples[0].label_names, class_names)):
        warnings.warn(note, UserWarning, stacklevel=3)


def _as_hf_dataset(value: Any) -> Dataset | None:
    """A ``datasets.Dataset`` as it is; a pandas DataFrame or a mapping of column names to columns
    as one (read by its columns, not iterated: iterating either gives its column names); None for
    anything else."""
    from collections.abc import Mapping

    from datasets import Dataset, DatasetDict, IterableDatasetDict

    if isinstance(value, Dataset):
        return value
    if isinstance(value, (DatasetDict, IterableDatasetDict)):  # a mapping of splits, not of columns
        splits = list(value)
        first = splits[0] if splits else "validation"
        raise ValueError(  # noqa: TRY004 - the API refuses bad arguments with ValueError
            f"a DatasetDict holds splits ({', '.join(splits)}): pick one, e.g. dataset[{first!r}]"
        )
    if type(value).__name__ == "DataFrame" and hasattr(value, "columns"):
        return Dataset.from_pandas(value, preserve_index=False)
    if isinstance(value, Mapping):
        try:
            return Dataset.from_dict(dict(value))
        except (TypeError, ValueError) as error:
            raise ValueError(f"a mapping as the dataset must map column names to columns: {error}") from error
    return None


def _text_examples(items: Iterable[Example | str], limit: int | None) -> list[Example]:
    """The first ``limit`` items: Examples as they are, texts and (premise, hypothesis) pairs as
    ``explain`` reads them; anything else is refused with a ``ValueError``, as every bad argument
    of the API is."""
    accepted = "give Examples, texts, (premise, hypothesis) pairs, a datasets.Dataset, a DataFrame or a dataset name"
    if not isinstance(items, Iterable):
        raise ValueError(f"the dataset is {items!r:.80} ({type(items).__name__}); {accepted}")  # noqa: TRY004
    examples = []
    for index, item in enumerate(itertools.islice(items, limit)):
        if not isinstance(item, (Example, str, tuple, list)):
            given = f"{item!r:.80} ({type(item).__name__})"
            raise ValueError(f"item {index} of the dataset is {given}; {accepted}")  # noqa: TRY004
        try:
            examples.append(one_example(item, f"text/{index}"))
        except ValueError as error:
            raise ValueError(f"item {index} of the dataset: {error}") from None
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


def check_seed(seed: Any) -> None:
    """Refuse a seed that is not None or a whole number in [0, 2**31 - 1], the seeds the command
    line and ``api.run`` take (a negative one failed each seeded method on every example)."""
    if seed is not None and not (_is_whole(seed) and 0 <= int(seed) <= MAX_SEED):
        raise ValueError(f"seed must be None or a whole number from 0 to {MAX_SEED:,}, got {seed!r:.80}")


def is_count(value: Any) -> bool:
    """A whole number (numpy's too) of 1 or more; True is none."""
    return _is_whole(value) and int(value) >= 1


def _is_whole(value: Any) -> bool:
    """A whole number, numpy's too; a bool is none."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
