"""What the dataset loaders share: the data folder (``$ATTRIBUTION_DATA_DIR``), the word splitter
for free text and the majority of several annotators' masks."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

DATA_DIR_ENV = "ATTRIBUTION_DATA_DIR"

_WORD_RE = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def split_words(text: str) -> tuple[str, ...]:
    """Split free text into words and punctuation marks (the app's tokenizer for typed text)."""
    return tuple(_WORD_RE.findall(text))


def data_dir(explicit: str | os.PathLike | None = None) -> Path | None:
    """The data folder: the explicit argument, else ``$ATTRIBUTION_DATA_DIR``, else None."""
    chosen = explicit if explicit is not None else os.environ.get(DATA_DIR_ENV)
    if not chosen:
        return None
    path = Path(chosen).expanduser()
    return path if path.is_dir() else None


def majority_mask(masks: Iterable[Iterable[int]]) -> tuple[int, ...]:
    """Words marked by at least half of the annotators who gave a mask."""
    masks = [tuple(m) for m in masks]
    if not masks:
        return ()
    return tuple(int(2 * sum(col) >= len(masks)) for col in zip(*masks))
