"""Cached datasets, single examples, seeded slices and free text."""

from __future__ import annotations

import random

import streamlit as st

from core import datasets
from core.types import Example

FREE_TEXT = "free text"

# --------------------------------------------------------------------------- datasets


@st.cache_data(show_spinner=False, ttl=60)
def dataset_options() -> dict[str, list[str]]:
    """``{dataset: [splits]}``: the bundled examples first, then what the data folder holds."""
    found = datasets.available_datasets()
    return {"examples": found.pop("examples"), **found}


# The loaded examples are frozen records shared read-only; st.cache_resource avoids pickling a
# 67k-sentence split on every rerun, which st.cache_data would do.
@st.cache_resource(show_spinner="Loading the dataset…", max_entries=8)
def _examples(name: str, split: str) -> tuple[Example, ...]:
    return tuple(datasets.load_examples(name, split))


def _dataset(name: str, split: str) -> tuple[Example, ...]:
    try:
        examples = _examples(name, split)
    except (ValueError, OSError) as error:
        raise ValueError(f"cannot load {name}/{split}: {error}") from error
    if not examples:
        raise ValueError(f"{name}/{split} has no examples")
    return examples


def dataset_size(name: str, split: str) -> int:
    return len(_dataset(name, split))


def dataset_example(name: str, split: str, index: int) -> Example:
    examples = _dataset(name, split)
    if not 0 <= index < len(examples):
        raise ValueError(f"example {index} is outside {name}/{split} (0..{len(examples) - 1})")
    return examples[index]


def random_index(name: str, split: str) -> int:
    return random.randrange(dataset_size(name, split))


def free_text_example(text: str, text_b: str = "") -> Example:
    """An example from typed text (words split by ``core.datasets.split_words``); a non-empty
    ``text_b`` makes it a premise/hypothesis pair."""
    segments = [datasets.split_words(text)]
    if text_b.strip():
        segments.append(datasets.split_words(text_b))
    return Example(segments=tuple(segments), dataset=FREE_TEXT, id=FREE_TEXT)


def slice_examples(dataset: str, split: str, n: int, *, random_order: bool = False, seed: int = 0) -> list[Example]:
    """The first ``n`` examples of a split, or ``n`` drawn at random with ``seed`` (in dataset order)."""
    from engine.evaluate import select_examples

    examples = _dataset(dataset, split)
    if random_order:
        return select_examples(examples, min(n, len(examples)), seed)
    return list(examples[:n])


def slice_indices(dataset: str, split: str, n: int, *, random_order: bool = False, seed: int = 0) -> list[int]:
    """Positions of the first ``n`` examples of a split, or of ``n`` drawn with ``seed`` (sorted)."""
    from engine.evaluate import select_examples

    size = dataset_size(dataset, split)
    n = min(n, size)
    return select_examples(range(size), n, seed) if random_order else list(range(n))


@st.cache_data(show_spinner=False)
def annotator_count(dataset: str, split: str) -> int:
    """The most annotator masks any example of the split has."""
    return max((len(e.rationales) for e in _dataset(dataset, split)), default=0)
