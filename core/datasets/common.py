"""What the dataset loaders share: the data folder (``$ATTRIBUTION_DATA_DIR``), the word splitter
for free text and the majority of several annotators' masks."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import regex

DATA_DIR_ENV = "ATTRIBUTION_DATA_DIR"

# The CJK ideograph blocks BERT's basic tokenizer splits into one token per character
# (``BasicTokenizer._is_chinese_char``): text written without spaces would otherwise be one word.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002ceaf\U0002f800-\U0002fa1f"
# A word's letters keep their combining marks (Devanagari's vowel signs and viramas, a combining
# accent): with \w alone "फ़िल्म" fell apart into six words.
_LETTERS = rf"(?:(?![{_CJK}])[\w\p{{M}}\p{{N}}])+"
# Any other mark is one grapheme cluster (``\X``): an emoji with its skin tone, a flag, a family
# joined by zero-width joiners stays one word instead of pieces and empty-looking joiners. An
# invisible format character on its own (a zero-width space, a byte-order mark: Unicode's Cf,
# which BERT's tokenizer drops) is no word: it would be a word that no token stands for.
_WORD_RE = regex.compile(rf"[{_CJK}]|{_LETTERS}(?:['’]{_LETTERS})*|(?![\w\s\p{{Cf}}])\X")


def split_words(text: str) -> tuple[str, ...]:
    """Split free text into words and punctuation marks (the app's tokenizer for typed text); each
    CJK ideograph is a word of its own, as BERT's tokenizer makes it a token of its own, and a
    word keeps its combining marks."""
    return tuple(_WORD_RE.findall(text))


def word_spans(text: str) -> list[tuple[int, int]]:
    """The character span ``[start, end)`` of each word ``split_words`` finds in ``text``."""
    return [match.span() for match in _WORD_RE.finditer(text)]


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
