"""Examples as a ``datasets.Dataset``: the one in-memory form of a loaded split.

Every loader (local files, the bundled examples, the hub versions) ends in ``to_dataset``: one
row per example in the columns of ``FEATURES`` (Arrow-backed, so a 67k-sentence split is one
table, sliced and indexed without building every ``Example``). ``to_examples`` and
``example_at`` build ``Example`` records from its rows, identical to the ones the loaders made
(tuples, None where there is no label or majority mask).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from core.types import Example

if TYPE_CHECKING:
    from datasets import Dataset, Features

COLUMNS = ("id", "dataset", "split", "segments", "label", "label_names", "rationales", "rationale")


def features() -> Features:
    """The columns of a split: ids and provenance, one or two segments of words, the gold label
    (null when unlabelled) and its names, one 0/1 mask per annotator and the majority mask (null
    when there is none)."""
    from datasets import Features, Sequence, Value

    return Features(
        {
            "id": Value("string"),
            "dataset": Value("string"),
            "split": Value("string"),
            "segments": Sequence(Sequence(Value("string"))),
            "label": Value("int64"),
            "label_names": Sequence(Value("string")),
            "rationales": Sequence(Sequence(Value("int8"))),
            "rationale": Sequence(Value("int8")),
        }
    )


def to_dataset(examples: Iterable[Example]) -> Dataset:
    """One row per example, in order (built as one Arrow table: no per-row encoding)."""
    import pyarrow as pa
    from datasets import Dataset, DatasetInfo
    from datasets.table import InMemoryTable

    examples = list(examples)
    columns = {name: [getattr(e, name) for e in examples] for name in COLUMNS}
    schema = features()
    table = pa.Table.from_pydict(columns, schema=schema.arrow_schema)
    return Dataset(InMemoryTable(table), info=DatasetInfo(features=schema))


def row_to_example(row: Mapping[str, Any]) -> Example:
    """The ``Example`` of one row of a ``to_dataset`` table."""
    rationale = row["rationale"]
    return Example(
        segments=tuple(tuple(segment) for segment in row["segments"]),
        label=row["label"],
        label_names=tuple(row["label_names"]),
        rationales=tuple(tuple(mask) for mask in row["rationales"]),
        rationale=None if rationale is None else tuple(rationale),
        dataset=row["dataset"],
        split=row["split"],
        id=row["id"],
    )


def to_examples(dataset: Dataset) -> list[Example]:
    """Every row as an ``Example``, in order (read column by column, then zipped)."""
    columns = dataset.to_dict()
    return [
        row_to_example(dict(zip(COLUMNS, values, strict=True)))
        for values in zip(*(columns[c] for c in COLUMNS), strict=True)
    ]


def example_at(dataset: Dataset, index: int) -> Example:
    """The ``Example`` of row ``index`` (only that row is read)."""
    return row_to_example(dataset[index])
