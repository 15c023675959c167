"""Cached datasets, single examples, seeded slices, free text and data files."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from core import datasets
from core.datasets import FILE_PREFIX
from core.datasets.labels import shares_classes
from core.example_dataset import example_at, to_examples
from core.types import Example
from services.uploads import SHARED_DATA_FILE_TYPES, is_upload

if TYPE_CHECKING:
    from datasets import Dataset

FREE_TEXT = "free text"
DATA_FILE = "data file"  # the sidebar's choice of a file on this machine (``core.datasets.files``)

# --------------------------------------------------------------------------- datasets


@st.cache_data(show_spinner=False, ttl=60)
def dataset_options() -> dict[str, list[str]]:
    """``{dataset: [splits]}``: the bundled examples first, then what the data folder holds."""
    found = datasets.available_datasets()
    return {"examples": found.pop("examples"), **found}


# A loaded split is one Arrow-backed ``datasets.Dataset`` shared read-only by every session
# (st.cache_resource: st.cache_data would pickle a 67k-sentence split on every rerun); an
# ``Example`` is built from a row when a page asks for it.
@st.cache_resource(show_spinner="Loading the dataset…", max_entries=8)
def _loaded(name: str, split: str, version: tuple[int, int] | None) -> Dataset:
    """A split, loaded once per server; ``version`` is a data file's modification time and size,
    so an edited file is read again."""
    return datasets.load_dataset(name, split)


def _version(name: str) -> tuple[int, int] | None:
    """A data file's modification time and size (None for a bundled dataset): part of the key of
    everything cached from its rows."""
    return datasets.file_version(name) if name.startswith(FILE_PREFIX) else None


def _dataset(name: str, split: str) -> Dataset:
    try:
        check_data_file(name)
        loaded = _loaded(name, split, _version(name))
    except (ValueError, OSError) as error:
        raise ValueError(f"cannot load {name}/{split}: {error}") from error
    if not loaded.num_rows:
        raise ValueError(f"{name}/{split} has no examples")
    return loaded


def check_data_file(name: str) -> None:
    """Refuse a data file on a shared server, but for one uploaded to it: its visitors must not
    read the server's own files."""
    from services.access import shared_mode

    if not name.startswith(FILE_PREFIX) or not shared_mode():
        return
    if not is_upload(name):
        raise ValueError("a shared server reads no file of its own: upload a data file, or pick one of its datasets")
    if Path(name).suffix.lstrip(".").lower() not in SHARED_DATA_FILE_TYPES:
        raise ValueError(f"a shared server reads data files of kinds {', '.join(SHARED_DATA_FILE_TYPES)} only")


def is_model_class(name: str, class_names: Sequence[str]) -> bool:
    """Whether a dataset's gold label ``name`` is one of a model's classes (``class_names``), case
    and surrounding spaces aside, as a dataset run counts it (``core.datasets.align_labels``)."""
    return shares_classes([name], class_names)


@st.cache_data(show_spinner=False, max_entries=32)
def _file_splits(name: str, version: tuple[int, int]) -> list[str]:
    return datasets.available_splits(name)


def data_file_splits(name: str) -> list[str]:
    """The splits of the data file ``name`` (``file:PATH``): ``all``, then those its ``split``
    column names; read again when the file changes."""
    try:
        check_data_file(name)
        return _file_splits(name, datasets.file_version(name))
    except (ValueError, OSError) as error:
        raise ValueError(f"cannot load {name}: {error}") from error


def dataset_size(name: str, split: str) -> int:
    return _dataset(name, split).num_rows


def dataset_example(name: str, split: str, index: int) -> Example:
    loaded = _dataset(name, split)
    if not 0 <= index < loaded.num_rows:
        raise ValueError(f"example {index} is outside {name}/{split} (0..{loaded.num_rows - 1})")
    return example_at(loaded, index)


def random_index(name: str, split: str) -> int:
    return random.randrange(dataset_size(name, split))


def free_text_example(text: str, text_b: str = "") -> Example:
    """An example from typed text (words split by ``core.datasets.split_words``); a non-empty
    ``text_b`` makes it a premise/hypothesis pair."""
    segments = [datasets.split_words(text)]
    if text_b.strip():
        segments.append(datasets.split_words(text_b))
    return Example(segments=tuple(segments), dataset=FREE_TEXT, id=FREE_TEXT)


def as_typed(typed: object, words: tuple[str, ...]) -> str:
    """The sidebar's text as typed (``A<b>bold</b>``) where it splits into the explained ``words``,
    else the words joined by spaces (``A < b > bold``): a bundle reopens on the text as typed."""
    if isinstance(typed, str) and datasets.split_words(typed) == words:
        return typed
    return " ".join(words)


def slice_examples(dataset: str, split: str, n: int, *, random_order: bool = False, seed: int = 0) -> list[Example]:
    """The first ``n`` examples of a split, or ``n`` drawn at random with ``seed`` (in dataset
    order)."""
    indices = slice_indices(dataset, split, n, random_order=random_order, seed=seed)
    return to_examples(_dataset(dataset, split).select(indices))


def slice_indices(dataset: str, split: str, n: int, *, random_order: bool = False, seed: int = 0) -> list[int]:
    """Positions of the first ``n`` examples of a split, or of ``n`` drawn with ``seed``
    (sorted)."""
    from engine.evaluate import select_examples

    size = dataset_size(dataset, split)
    n = min(n, size)
    return select_examples(range(size), n, seed) if random_order else list(range(n))


def annotator_count(dataset: str, split: str) -> int:
    """The most annotator masks any example of the split has (read again once a data file is
    edited)."""
    try:
        version = _version(dataset)
    except OSError:
        version = None  # loading the split names what is wrong
    return _annotator_count(dataset, split, version)


@st.cache_data(show_spinner=False)
def _annotator_count(dataset: str, split: str, version: tuple[int, int] | None) -> int:
    return max((len(masks) for masks in _dataset(dataset, split)["rationales"]), default=0)
