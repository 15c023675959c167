"""Datasets of one's own: the rows of any ``datasets.Dataset`` as examples
(``examples_from_dataset``), and ``file:PATH``, a CSV, TSV, JSON lines or Parquet file on this
machine read with ``datasets`` (``load_file_examples``).

A file's text is its first column named in ``TEXT_COLUMNS``, a pair task's second text the first
named in ``PAIR_COLUMNS``, the gold label its ``label`` column when it has one (class numbers,
or class names: the words the column holds, numbered in sorted order (case aside), which
``align_labels`` renumbers to a model's classes of the same names; -1 or empty for none; a
column mixing class numbers and names is refused), and a human rationale
its ``rationale`` column when it has one: character spans of the (first) text, ``[[start, end],
...]`` or records with ``start`` and ``end`` as Label Studio's JSON-min export writes them (a JSON
list; in a CSV cell, its JSON text, parsed, never evaluated); a word is highlighted when a span
overlaps it. Its splits are
``all`` (every row) and, when it has a ``split`` column, each name that column holds (``train``,
``dev`` ...: the rows so marked), so one file can hold what a remove-and-retrain job trains and
scores on. An example's id is the file's stem and its row number in the file, the same in every
split. Runs key a file by its content (``content_key``): an edited file is another run, never
mixed into the stored one.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.datasets.common import split_words, word_spans
from core.example_dataset import COLUMNS as EXAMPLE_COLUMNS
from core.example_dataset import to_examples
from core.types import Example

if TYPE_CHECKING:
    from datasets import Dataset

FILE_PREFIX = "file:"
FILE_SPLIT = "all"
# Only an empty CSV cell is missing: pandas would also read "None", "NA", "null" and "nan" as missing
# (a label "None" lost, a text "NA" refused).
_CSV_CELLS: dict[str, Any] = {"keep_default_na": False, "na_values": [""]}
# suffix -> the ``datasets`` builder that reads it, and its options
BUILDERS: dict[str, tuple[str, dict[str, Any]]] = {
    ".csv": ("csv", _CSV_CELLS),
    ".tsv": ("csv", {**_CSV_CELLS, "delimiter": "\t", "quoting": csv.QUOTE_NONE}),  # a quote is text, as in SST-2
    ".json": ("json", {}),
    ".jsonl": ("json", {}),
    ".parquet": ("parquet", {}),
}
TEXT_COLUMNS = ("text", "sentence", "premise", "review", "content")
PAIR_COLUMNS = ("text_b", "hypothesis", "sentence2")
LABEL_COLUMN = "label"
RATIONALE_COLUMN = "rationale"
SPLIT_COLUMN = "split"
# Texts other tools write for a missing value; a label column of numbers holding them is refused
# with a hint to leave those cells empty.
_MISSING_MARKERS = frozenset({"na", "n/a", "nan", "null", "none"})


def examples_from_dataset(
    dataset: Dataset,
    text_column: str = "text",
    text_pair_column: str | None = None,
    label_column: str | None = "label",
    *,
    limit: int | None = None,
    rows: Sequence[int] | None = None,
    class_names: Sequence[str] | None = None,
) -> list[Example]:
    """The rows of a ``datasets.Dataset`` as ``Example``s: text split into words as the app splits
    typed text (a column holding a list of words is taken as it is), ids ``<split or 'dataset'>/
    <row>`` (``rows``: the row numbers ids and errors give, when the dataset is a selection of
    another's rows). A label is a class number, or a class name where the label column holds names
    (``positive``): the names are ``class_names`` when given, else a ``ClassLabel`` feature's, else
    the column's words sorted (``label_words``). A split loaded by ``core.datasets.load_dataset``
    (its rows are examples already) keeps its words, labels, rationales and ids. A row without text,
    or with a label that is neither, is refused, naming the row."""
    if set(EXAMPLE_COLUMNS) <= set(dataset.column_names):
        return to_examples(dataset if limit is None else dataset.select(range(min(limit, len(dataset)))))
    columns = [c for c in (text_column, text_pair_column, label_column) if c is not None]
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise ValueError(f"no column {missing[0]!r} in the dataset; its columns: {', '.join(dataset.column_names)}")
    words = tuple(class_names or ())  # the names a label cell may hold
    if class_names is None and label_column is not None:
        feature = dataset.features.get(label_column)
        class_names = tuple(getattr(feature, "names", None) or ())  # a ClassLabel: its cells are numbers
        numbers = str(getattr(feature, "dtype", "")).startswith(("int", "float"))
        if not class_names and not numbers:  # text, or a JSON column of text and numbers
            class_names = words = label_words(dataset[label_column])
    names = tuple(class_names or ())
    prefix = str(dataset.split) if dataset.split is not None else "dataset"
    selected = dataset if limit is None else dataset.select(range(min(limit, len(dataset))))
    examples = []
    for position, row in enumerate(selected):
        index = position if rows is None else rows[position]
        segments = [_words(row[text_column], index, text_column)]
        if text_pair_column is not None:
            segments.append(_words(row[text_pair_column], index, text_pair_column))
        label = _class_index(row[label_column], index, label_column, words) if label_column is not None else None
        examples.append(
            Example(
                segments=tuple(segments),
                label=label,
                label_names=names,
                dataset="dataset",
                split=prefix,
                id=f"{prefix}/{index}",
            )
        )
    return examples


def _class_index(value: Any, row: int, column: str, names: Sequence[str] = ()) -> int | None:
    """A label cell as a class number: a whole number (a float one too, as a CSV column with
    empty cells reads, or its text), or, in a column of class names (``names``: the words its
    cells hold), one of them (spaces around it aside); None where it is empty or negative.
    Anything else is refused, and so is a class number among names (which class it means is not
    known)."""
    if isinstance(value, float) and (math.isnan(value) or value.is_integer()):
        value = None if math.isnan(value) else int(value)
    if isinstance(value, bool):  # a CSV's true/false, a JSON or Parquet boolean: the names false, true
        value = str(value).lower()
    if isinstance(value, str) and names and value.strip() in names:
        return list(names).index(value.strip())
    if isinstance(value, str) and (not value.strip() or _is_whole_number(value)):
        value = int(value) if value.strip() else None
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        named = f" nor one of its class names ({', '.join(names)})" if names else ""
        raise ValueError(f"label {value!r} of row {row} in {column!r} is not a class index{named}")
    if names and value is not None and value >= 0:
        if all(name.casefold() in _MISSING_MARKERS for name in names):  # R's NA, pandas' nan, null
            raise ValueError(
                f"label {value!r} of row {row} in {column!r} is a class number, where other rows hold "
                f"{', '.join(names)}: leave the cell empty (or write -1) for an example without a label"
            )
        raise ValueError(
            f"label {value!r} of row {row} in {column!r} is a class number, where the column names its classes "
            f"({', '.join(names)}): write every label as a name, or every one as a number"
        )
    return None if value is None or value < 0 else value


def _is_whole_number(text: str) -> bool:
    digits = text.strip().removeprefix("-")
    return digits.isascii() and digits.isdigit()  # "²" is a digit to Python, not to int()


def label_words(values: Sequence[Any]) -> tuple[str, ...]:
    """The class names a label column gives by name: its distinct non-empty texts that are not
    whole numbers (-1 is no label), and ``false``/``true`` for booleans, sorted as a reader would,
    case aside; none for a column of class numbers."""
    texts = (str(v).lower() if isinstance(v, bool) else v for v in values)
    words = {v.strip() for v in texts if isinstance(v, str) and v.strip() and not _is_whole_number(v)}
    return tuple(sorted(words, key=lambda word: (word.casefold(), word)))


def _words(value: Any, row: int, column: str) -> tuple[str, ...]:
    """A cell's words: a list of words as it is, else its text split; none is refused."""
    words = tuple(str(w) for w in value) if isinstance(value, (list, tuple)) else None
    if words is None and value is not None:
        words = split_words(str(value))
    if not words:
        raise ValueError(f"row {row} has no text in {column!r}")
    return words


def file_path(name: str) -> Path:
    """The file ``file:PATH`` names (``~`` expanded), refused when it is missing or of a kind not
    read."""
    path = Path(name.removeprefix(FILE_PREFIX)).expanduser()
    if path.suffix.lower() not in BUILDERS:
        kinds = ", ".join(BUILDERS)
        raise ValueError(f"{name!r}: a data file is one of {kinds} (JSON: one record a line), not {path.name!r}")
    if not path.is_file():
        raise FileNotFoundError(f"{name!r}: no file {path}")
    return path.resolve()


def file_version(name: str) -> tuple[int, int]:
    """The modification time (ns) and size of the file ``file:PATH`` names: a cache's key."""
    stat = file_path(name).stat()
    return stat.st_mtime_ns, stat.st_size


def file_fingerprint(name: str) -> str:
    """SHA-256 of the bytes of the file ``file:PATH`` names."""
    with file_path(name).open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def content_key(name: str) -> dict[str, str]:
    """The key fields that tie a stored run or job to a data file's content (``file:PATH``: its
    SHA-256, so an edited file is another run); none for a named dataset."""
    return {"data_fingerprint": file_fingerprint(name)} if name.startswith(FILE_PREFIX) else {}


def read_file_table(name: str) -> Dataset:
    """The rows of the file ``file:PATH`` names as a ``datasets.Dataset``; a file that cannot be
    parsed, or has no text column, is refused with one line naming it."""
    import datasets
    from datasets.exceptions import DatasetGenerationError

    path = file_path(name)
    builder, options = BUILDERS[path.suffix.lower()]
    bars, verbosity = datasets.is_progress_bar_enabled(), datasets.logging.get_verbosity()
    datasets.disable_progress_bars()  # a local file reads in a moment: no "Generating train split" bar
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # its parse error is ours to say, once
    try:
        table = datasets.load_dataset(builder, data_files=str(path), split="train", **options)
    except Exception as error:
        cause: BaseException = error
        while isinstance(cause, DatasetGenerationError) and cause.__cause__ is not None:
            cause = cause.__cause__  # the parser's own words: what is wrong, and in which row
        reason = " ".join(str(cause).split())[:300]
        if "corresponds to no data" in reason:  # a header and no rows
            reason = "it has no rows"
        raise ValueError(f"cannot read {path} as a {path.suffix.lstrip('.')} file: {reason}") from error
    finally:
        datasets.logging.set_verbosity(verbosity)
        if bars:
            datasets.enable_progress_bars()
    if any(c.startswith("__index_level_") for c in table.column_names):  # pandas' name for surplus fields
        raise ValueError(f"some rows of {path} have more fields than its header (a separator inside unquoted text?)")
    if not any(c in table.column_names for c in TEXT_COLUMNS):
        raise ValueError(
            f"{path} has no text column: name one of {', '.join(TEXT_COLUMNS)} (its columns: "
            f"{', '.join(table.column_names)})"
        )
    return table


def file_splits(table: Dataset) -> list[str]:
    """A data file's splits: ``all``, then the names its ``split`` column holds, in the order they
    first appear."""
    if SPLIT_COLUMN not in table.column_names:
        return [FILE_SPLIT]
    named = (str(s) for s in table[SPLIT_COLUMN] if s is not None and str(s) not in ("", FILE_SPLIT))
    return [FILE_SPLIT, *dict.fromkeys(named)]


def load_file_examples(name: str, split: str = FILE_SPLIT, limit: int | None = None) -> list[Example]:
    """The examples of ``split`` of the file ``file:PATH`` names (module docstring), the first
    ``limit`` when given, with ids ``<file stem>/<row in the file>``."""
    table = read_file_table(name)
    splits = file_splits(table)
    if split not in splits:
        hint = "" if len(splits) > 1 else f" (a {SPLIT_COLUMN!r} column names a file's other splits)"
        raise ValueError(f"{name!r} has no split {split!r}; its splits: {', '.join(splits)}{hint}")
    rows = list(range(len(table)))
    if split != FILE_SPLIT:
        rows = [i for i, s in enumerate(table[SPLIT_COLUMN]) if s is not None and str(s) == split]
    rows = rows[:limit] if limit is not None else rows
    selected = table.select(rows)
    text = next(c for c in TEXT_COLUMNS if c in table.column_names)
    pair = next((c for c in PAIR_COLUMNS if c in table.column_names), None)
    label = LABEL_COLUMN if LABEL_COLUMN in table.column_names else None
    names = label_words(table[label]) if label is not None else ()  # of the whole file: one numbering
    # no words: a ClassLabel's names (Parquet keeps them), else class numbers
    examples = examples_from_dataset(selected, text, pair, label, rows=rows, class_names=names or None)
    texts = selected[text]
    spans = selected[RATIONALE_COLUMN] if RATIONALE_COLUMN in table.column_names else None
    stem = file_path(name).stem
    out = []
    for i, (row, example) in enumerate(zip(rows, examples, strict=True)):
        mask = None if spans is None else span_mask(texts[i], spans[i], len(example.words), row)
        given: dict[str, Any] = {"rationales": (mask,), "rationale": mask} if mask is not None else {}
        out.append(dataclasses.replace(example, dataset=name, split=split, id=f"{stem}/{row}", **given))
    return out


def span_mask(text: str, spans: Any, n_words: int, row: int) -> tuple[int, ...] | None:
    """The 0/1 mask over an example's ``n_words`` words of the words of ``text`` (its first
    segment) that character ``spans`` (``[[start, end], ...]`` or ``[{"start": s, "end": e}, ...]``,
    or their JSON text) overlap; None for an empty cell. Spans that are not pairs of whole numbers
    inside the text are refused."""
    if spans is None or spans == "":
        return None
    if not isinstance(text, str):
        raise ValueError(f"row {row} gives its words as a list: a rationale's character spans need the text")  # noqa: TRY004
    if isinstance(spans, str):
        try:
            spans = json.loads(spans)
        except ValueError:
            spans = None
    if isinstance(spans, list):  # Label Studio's {"start", "end", "text", "labels"} records as pairs
        spans = [[s.get("start"), s.get("end")] if isinstance(s, dict) else s for s in spans]
    ok = isinstance(spans, list) and all(
        isinstance(s, (list, tuple)) and len(s) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in s)
        and 0 <= s[0] < s[1] <= len(text)
        for s in spans
    )  # fmt: skip
    if not ok:
        raise ValueError(f"the rationale of row {row} is not a list of [start, end] character spans inside its text")
    words = word_spans(text)
    marked = [int(any(start < end_w and start_w < end for start, end in spans)) for start_w, end_w in words]
    return tuple(marked + [0] * (n_words - len(marked)))
