"""Hugging Face hub versions of the datasets, as the same ``Example``s the local loaders give.

For online users: ``load_hub_examples(name, split)`` calls ``datasets.load_dataset`` (it fails
offline) and turns each row into an ``Example`` with a pure converter, one per source format:

* ``sst2``: GLUE SST-2 (``nyu-mll/glue``, config ``sst2``): columns ``sentence``, ``label``
  (-1 on the unlabelled test split), ``idx``.
* ``movies``: ERASER ``movie_rationales`` (whole reviews): ``review``, ``label``, ``evidences``
  (the rationale texts, each a stretch of the review).
* ``hatexplain``: ``id``, ``annotators`` (``label``, ``annotator_id``, ``target`` per annotator),
  ``rationales`` (one 0/1 list over ``post_tokens`` per annotator who gave one), ``post_tokens``.
* ``esnli``: the e-SNLI CSV files from the authors' repository (``esnli_dev.csv`` ...):
  ``pairID``, ``gold_label``, ``Sentence1``, ``Sentence2`` and, per annotator k = 1..3,
  ``Explanation_k``, ``Sentence{1,2}_marked_k`` (highlighted words wrapped in asterisks) and
  ``Sentence{1,2}_Highlighted_k`` (comma-separated 0-based word indices, ``{}`` for none).

``data_files`` points any of them at local files in the original format instead of the hub.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.datasets.common import majority_mask
from core.datasets.esnli import ESNLI_LABELS, align_mask
from core.datasets.hatexplain import HATEXPLAIN_LABELS, hatexplain_example
from core.datasets.movies import MOVIES_LABELS, span_mask
from core.datasets.sst2 import SST2_LABELS
from core.types import Example

ESNLI_CSV_URL = "https://raw.githubusercontent.com/OanaMariaCamburu/e-SNLI/master/dataset/"
ESNLI_CSV_FILES = {
    "train": ("esnli_train_1.csv", "esnli_train_2.csv"),
    "validation": ("esnli_dev.csv",),
    "test": ("esnli_test.csv",),
}
ESNLI_ANNOTATORS = (1, 2, 3)

# Local split names (``dev``, ``val``) and the hub's (``validation``) both work.
SPLIT_ALIASES = {"dev": "validation", "val": "validation", "valid": "validation"}


# --------------------------------------------------------------------------- converters


def sst2_row_to_example(row: Mapping[str, Any], split: str, index: int = 0) -> Example:
    """A GLUE SST-2 row (``sentence``, ``label``, ``idx``); label -1 (test split) becomes None."""
    label = row.get("label")
    label = None if label is None or int(label) < 0 else int(label)
    return Example(
        segments=(tuple(str(row["sentence"]).split()),),
        label=label,
        label_names=SST2_LABELS,
        dataset="sst2",
        split=split,
        id=f"sst2/{split}/{row.get('idx', index)}",
    )


def text_span_mask(words: Sequence[str], span_text: str) -> tuple[int, ...] | None:
    """Mask of the words overlapping the first occurrence of ``span_text`` in the words joined
    by single spaces (for spans that do not start or end on a word boundary); None if absent."""
    target = " ".join(span_text.split())
    if not target:
        return None
    joined = " ".join(words)
    start = joined.find(target)
    if start < 0:
        return None
    end = start + len(target)
    mask, position = [], 0
    for word in words:
        mask.append(int(position < end and position + len(word) > start))
        position += len(word) + 1
    return tuple(mask)


def evidence_mask(words: Sequence[str], evidences: Iterable[str]) -> tuple[tuple[int, ...] | None, int]:
    """Union of the masks of the evidence texts over ``words``, and how many were not found.

    Each evidence is looked for as a run of whole words first, then as text (case kept, spaces
    normalized), then case-insensitively. The mask is None when no evidence was found.
    """
    words = tuple(words)
    union = [0] * len(words)
    found = missing = 0
    for evidence in evidences:
        if not evidence or not str(evidence).strip():
            continue
        evidence = str(evidence)
        mask = span_mask(words, tuple(evidence.split())) or text_span_mask(words, evidence)
        if mask is None:
            mask = text_span_mask([w.lower() for w in words], evidence.lower())
        if mask is None:
            missing += 1
            continue
        found += 1
        union = [a | b for a, b in zip(union, mask)]
    return (tuple(union) if found else None), missing


def movie_rationales_row_to_example(row: Mapping[str, Any], split: str, index: int = 0) -> Example:
    """An ERASER ``movie_rationales`` row (``review``, ``label``, ``evidences``): the whole review,
    with the union of the evidence spans as its (single annotator's) rationale."""
    words = tuple(str(row["review"]).split())
    mask, _ = evidence_mask(words, row.get("evidences") or ())
    return Example(
        segments=(words,),
        label=int(row["label"]),
        label_names=MOVIES_LABELS,
        rationales=(mask,) if mask is not None else (),
        rationale=mask,
        dataset="movies",
        split=split,
        id=f"movies/{split}/{row.get('id', index)}",
    )


def _annotator_labels(annotators: Any) -> list[int]:
    """Labels from ``annotators`` as the hub gives it: a dict of lists (``{"label": [...]}``) or a
    list of dicts; labels as class indices or names."""
    if isinstance(annotators, Mapping):
        labels = list(annotators.get("label") or [])
    else:
        labels = [a["label"] for a in annotators or []]
    out = []
    for label in labels:
        digits = label.strip().removeprefix("-") if isinstance(label, str) else ""
        if isinstance(label, str) and not (digits.isascii() and digits.isdigit()):
            name = label.strip().lower().replace(" ", "")
            out.append(HATEXPLAIN_LABELS.index(name))
        else:
            out.append(int(label))
    return out


def hatexplain_row_to_example(row: Mapping[str, Any], split: str, index: int = 0) -> Example:
    """A HateXplain row (``id``, ``annotators``, ``rationales``, ``post_tokens``): majority label,
    one mask per annotator who gave one; posts judged normal have none."""
    return hatexplain_example(
        str(row.get("id", index)),
        _annotator_labels(row["annotators"]),
        [list(m) for m in row.get("rationales") or []],
        [str(w) for w in row["post_tokens"]],
        split,
    )


def _cell(row: Mapping[str, Any], key: str) -> str:
    """A CSV cell as text: missing, None and NaN become ''; numbers (a single index read as an
    int) become their digits."""
    value = row.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def parse_highlight_indices(text: str) -> set[int] | None:
    """``"3,4"`` -> {3, 4}; ``"{}"`` -> empty set; an empty cell or anything that is not a list
    of indices -> None (then the asterisks of the marked sentence decide)."""
    text = text.strip()
    if not text:
        return None
    text = text.strip("{}").strip()
    if not text:
        return set()
    try:
        return {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        return None


def asterisk_mask(tokens: Sequence[str]) -> tuple[int, ...]:
    """Which whitespace tokens lie (at least partly) inside ``*...*``; a mark may span tokens."""
    inside = False
    mask = []
    for token in tokens:
        marked = False
        for char in token:
            if char == "*":
                inside = not inside
            elif inside:
                marked = True
        mask.append(int(marked))
    return tuple(mask)


def esnli_side_mask(sentence: str, marked: str, highlighted: str) -> tuple[int, ...] | None:
    """One annotator's mask over ``sentence.split()`` from the marked sentence and the indices.

    The indices count the whitespace tokens of the marked sentence; where they are missing or
    out of range the asterisks decide. The marked words (asterisks removed) are then aligned
    to the sentence's words, so a marked sentence tokenized a little differently still fits.
    None when the annotator left no marked sentence.
    """
    words = tuple(sentence.split())
    if not marked.strip():
        return None
    tokens = marked.split()
    indices = parse_highlight_indices(highlighted)
    if indices is not None and all(0 <= i < len(tokens) for i in indices):
        mask = [int(i in indices) for i in range(len(tokens))]
    else:
        mask = list(asterisk_mask(tokens))
    kept = [(t.replace("*", ""), m) for t, m in zip(tokens, mask) if t.replace("*", "")]
    return align_mask([t for t, _ in kept], [m for _, m in kept], words)


def esnli_csv_row_to_example(row: Mapping[str, Any], split: str, index: int = 0) -> Example:
    """An e-SNLI CSV row: premise/hypothesis words, gold label, one mask per annotator (premise
    mask + hypothesis mask) and the majority (words marked by at least 2 of 3 annotators; with a
    single annotator, as in the train files, that annotator's mask)."""
    premise = tuple(_cell(row, "Sentence1").split())
    hypothesis = tuple(_cell(row, "Sentence2").split())
    masks = []
    for k in ESNLI_ANNOTATORS:
        if f"Sentence1_marked_{k}" not in row and f"Sentence2_marked_{k}" not in row:
            continue
        sides = [
            esnli_side_mask(
                _cell(row, f"Sentence{s}"),
                _cell(row, f"Sentence{s}_marked_{k}"),
                _cell(row, f"Sentence{s}_Highlighted_{k}"),
            )
            for s in (1, 2)
        ]
        if all(side is None for side in sides):
            continue
        premise_mask = sides[0] if sides[0] is not None else (0,) * len(premise)
        hypothesis_mask = sides[1] if sides[1] is not None else (0,) * len(hypothesis)
        masks.append(premise_mask + hypothesis_mask)
    gold = _cell(row, "gold_label").lower()
    return Example(
        segments=(premise, hypothesis),
        label=ESNLI_LABELS.index(gold) if gold in ESNLI_LABELS else None,
        label_names=ESNLI_LABELS,
        rationales=tuple(masks),
        rationale=majority_mask(masks) if masks else None,
        dataset="esnli",
        split=split,
        id=f"esnli/{split}/{_cell(row, 'pairID') or index}",
    )


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class HubSource:
    """Where a dataset lives on the hub: ``load_dataset`` argument sets tried in order."""

    converter: Callable[[Mapping[str, Any], str, int], Example]
    attempts: tuple[tuple[str, str | None, dict[str, Any]], ...]
    splits: tuple[str, ...]
    csv_kwargs: dict[str, Any] = field(default_factory=dict)


def _esnli_csv_attempt(split: str) -> tuple[str, None, dict[str, Any]]:
    files = [ESNLI_CSV_URL + name for name in ESNLI_CSV_FILES[split]]
    return ("csv", None, {"data_files": {split: files}, **_ESNLI_CSV_KWARGS})


_ESNLI_TEXT_COLUMNS = (
    "pairID",
    "gold_label",
    "Sentence1",
    "Sentence2",
    *(f"{col}_{k}" for k in ESNLI_ANNOTATORS for col in ("Explanation", "Sentence1_marked", "Sentence2_marked")),
    *(f"Sentence{s}_Highlighted_{k}" for k in ESNLI_ANNOTATORS for s in (1, 2)),
)
# Read every text column as text: a single highlighted index would otherwise come back as an int.
_ESNLI_CSV_KWARGS: dict[str, Any] = {"converters": {c: str for c in _ESNLI_TEXT_COLUMNS}, "keep_default_na": False}

# The movie_rationales and hatexplain repositories hold loading scripts, which recent
# ``datasets`` no longer runs: their Parquet conversion is tried first.
HUB_SOURCES: dict[str, HubSource] = {
    "sst2": HubSource(
        sst2_row_to_example, (("nyu-mll/glue", "sst2", {}), ("glue", "sst2", {})), ("train", "validation", "test")
    ),
    "movies": HubSource(
        movie_rationales_row_to_example,
        (
            ("eraser-benchmark/movie_rationales", None, {"revision": "refs/convert/parquet"}),
            ("eraser-benchmark/movie_rationales", None, {}),
            ("movie_rationales", None, {}),
        ),
        ("train", "validation", "test"),
    ),
    "hatexplain": HubSource(
        hatexplain_row_to_example,
        (
            ("Hate-speech-CNERG/hatexplain", "plain_text", {"revision": "refs/convert/parquet"}),
            ("Hate-speech-CNERG/hatexplain", None, {}),
            ("hatexplain", None, {}),
        ),
        ("train", "validation", "test"),
    ),
    "esnli": HubSource(esnli_csv_row_to_example, (), ("train", "validation", "test"), _ESNLI_CSV_KWARGS),
}


def hub_split(name: str, split: str) -> str:
    """The hub's name for a split (``dev``/``val`` -> ``validation``), checked against the
    source."""
    if name not in HUB_SOURCES:
        raise ValueError(f"unknown hub dataset {name!r}; known: {', '.join(HUB_SOURCES)}")
    chosen = SPLIT_ALIASES.get(split, split)
    if chosen not in HUB_SOURCES[name].splits:
        raise ValueError(f"unknown split {split!r} of {name}; known: {', '.join(HUB_SOURCES[name].splits)}")
    return chosen


def _builder_for(data_files: str | Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The ``datasets`` builder and its options for local copies of a hub dataset: those of a
    data file of one's own (``core.datasets.files.BUILDERS``), by the first file's suffix."""
    from core.datasets.files import BUILDERS

    first = data_files if isinstance(data_files, str) else data_files[0]
    suffix = re.search(r"\.[A-Za-z]+$", str(first))
    found = BUILDERS.get(suffix.group(0).lower() if suffix else "")
    if found is None:
        raise ValueError(f"cannot tell the format of {first}: use one of {', '.join(BUILDERS)}")
    return found


def load_hub_rows(
    name: str,
    split: str,
    limit: int | None = None,
    data_files: str | Sequence[str] | None = None,
    cache_dir: str | None = None,
):
    """The raw ``datasets.Dataset`` of a split: from ``data_files`` when given, else the hub."""
    import datasets

    source = HUB_SOURCES[name]
    chosen = hub_split(name, split)
    wanted = f"{chosen}[:{limit}]" if limit is not None else chosen
    if data_files is not None:
        files = (
            [str(data_files)]
            if isinstance(data_files, (str, bytes)) or not isinstance(data_files, Sequence)
            else [str(f) for f in data_files]
        )
        builder, options = _builder_for(files)
        kwargs = {**options, **source.csv_kwargs} if builder == "csv" else options
        return datasets.load_dataset(builder, data_files={chosen: files}, split=wanted, cache_dir=cache_dir, **kwargs)
    attempts = source.attempts or (_esnli_csv_attempt(chosen),)
    errors = []
    for path, config, kwargs in attempts:
        try:
            return datasets.load_dataset(path, config, split=wanted, cache_dir=cache_dir, **kwargs)
        except Exception as error:  # noqa: BLE001 - try the next place, report them all
            errors.append(f"{path}{'/' + config if config else ''} {kwargs or ''}: {type(error).__name__}: {error}")
    raise ValueError(f"could not load {name}/{split} from the hub (offline?): " + "; ".join(errors))


def rows_to_examples(name: str, rows: Iterable[Mapping[str, Any]], split: str) -> list[Example]:
    """Convert rows of a hub dataset (or any iterable of dicts in its format) to ``Example``s."""
    converter = HUB_SOURCES[name].converter
    return [converter(row, split, i) for i, row in enumerate(rows)]


def load_hub_examples(
    name: str,
    split: str,
    limit: int | None = None,
    data_files: str | Sequence[str] | None = None,
    cache_dir: str | None = None,
) -> list[Example]:
    """Load a split from the hub (or ``data_files`` in the hub's format) as ``Example``s.

    ``name`` is one of ``sst2``, ``movies``, ``hatexplain``, ``esnli``; ``split`` a hub split or a
    local alias (``dev``, ``val``). Needs network access unless ``data_files`` is given or the
    hub cache already holds the data.
    """
    chosen = hub_split(name, split)
    rows = load_hub_rows(name, split, limit=limit, data_files=data_files, cache_dir=cache_dir)
    return rows_to_examples(name, rows, chosen)
