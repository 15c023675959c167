"""Inputs at the token level: an example encoded for one model (``Encoded``, each token with its
word), the inputs the scorer runs (``Variant``: token ids, never re-tokenized text) and the
length-sorted chunks every batched pass is cut into (``length_chunks``)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.devices import chunk_rows
from core.types import Example


@dataclass(frozen=True)
class Variant:
    """One input to score: token ids, segment ids and positions whose input embedding is zeroed."""

    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...]
    zero_positions: tuple[int, ...] = ()


@dataclass(frozen=True)
class Encoded:
    """An example encoded for one model: tokens, and for each token its word (None for specials)."""

    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...]
    word_ids: tuple[int | None, ...]  # flat word index per token
    n_words: int

    @property
    def variant(self) -> Variant:
        return Variant(self.input_ids, self.token_type_ids)

    def word_positions(self, word: int) -> list[int]:
        return [t for t, w in enumerate(self.word_ids) if w == word]

    @property
    def scored_positions(self) -> list[int]:
        """Token positions that belong to a word (special tokens are never scored)."""
        return [t for t, w in enumerate(self.word_ids) if w is not None]

    @functools.cached_property
    def _word_runs(self) -> dict[int, list[tuple[int, int]]]:
        """Each word's runs of consecutive token positions, ``(start, end)``."""
        runs: dict[int, list[tuple[int, int]]] = {}
        for t, word in enumerate(self.word_ids):
            if word is None:
                continue
            spans = runs.setdefault(word, [])
            if spans and spans[-1][1] == t:
                spans[-1] = (spans[-1][0], t + 1)
            else:
                spans.append((t, t + 1))
        return runs

    def perturb(
        self,
        replace_words: dict[int, Sequence[int]] | None = None,
        zero_words: Sequence[int] = (),
    ) -> Variant:
        """A variant with each word in ``replace_words`` replaced by the given token ids
        (``()`` deletes it) and the embeddings of ``zero_words``' tokens zeroed. Built from
        slices between the changed words' tokens (a variant per removal, so this is hot)."""
        replace_words = replace_words or {}
        runs = self._word_runs
        changed = sorted(
            (start, end, word)
            for word in {*replace_words, *zero_words}
            for start, end in runs.get(word, ())
        )  # fmt: skip
        ids: list[int] = []
        types: list[int] = []
        zeroed: list[int] = []
        copied = 0
        for start, end, word in changed:
            ids += self.input_ids[copied:start]
            types += self.token_type_ids[copied:start]
            copied = end
            if word in replace_words:
                new = [int(token) for token in replace_words[word]]
                ids += new
                types += [self.token_type_ids[start]] * len(new)
            else:
                zeroed += range(len(ids), len(ids) + end - start)
                ids += self.input_ids[start:end]
                types += self.token_type_ids[start:end]
        ids += self.input_ids[copied:]
        types += self.token_type_ids[copied:]
        return Variant(tuple(ids), tuple(types), tuple(zeroed))


def length_chunks(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indices ordered by length and cut into chunks of at most ``size``, so each chunk, padded
    to its longest, pads little; a chunk of long items holds fewer, at most ``size *
    TOKENS_PER_ROW`` tokens counted at its longest (``core.devices.chunk_rows``), so one pass's
    memory stays bounded whatever the length."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    chunks: list[list[int]] = []
    start = 0
    while start < len(order):
        end = start + 1  # sorted: the item at ``end`` would be the chunk's longest
        while end < len(order) and end + 1 - start <= chunk_rows(size, lengths[order[end]]):
            end += 1
        chunks.append(order[start:end])
        start = end
    return chunks


def cut_to_fit(example: Example, word_lengths: Sequence[int], budget: int) -> tuple[Example, int]:
    """The example cut to whole words whose tokens (``word_lengths``, one count per flat word)
    fit in ``budget`` tokens, and the number of words dropped: from the end of the longer
    segment, as ``longest_first`` truncation does. Rationale masks are cut with their words."""
    first = len(example.segments[0])
    segment_lengths = [list(word_lengths[:first]), list(word_lengths[first:])]
    keep = [len(s) for s in example.segments]
    total = sum(word_lengths)
    while total > budget:
        k = max(range(len(example.segments)), key=lambda s: sum(segment_lengths[s][: keep[s]]))
        keep[k] -= 1
        total -= segment_lengths[k][keep[k]]
    dropped = sum(len(s) for s in example.segments) - sum(keep)
    if dropped == 0:
        return example, 0
    segments = tuple(tuple(s[:n]) for s, n in zip(example.segments, keep))
    kept_flat = [i for s, n, start in zip(example.segments, keep, (0, first)) for i in range(start, start + n)]
    cut = lambda mask: tuple(mask[i] for i in kept_flat)
    return (
        replace(
            example,
            segments=segments,
            rationales=tuple(cut(m) for m in example.rationales),
            rationale=cut(example.rationale) if example.rationale is not None else None,
        ),
        dropped,
    )


def token_texts(tokenizer: Any, ids: Sequence[int]) -> tuple[str, ...]:
    """The tokens of ``ids`` as the text each stands for: a byte-level BPE's "Ġgorge" and a
    SentencePiece "▁gorge" are "gorge"; a WordPiece token stays as it is ("##ous" keeps its marks:
    the same text for every token of BERT's vocabulary)."""
    return tuple(token_text(tokenizer, token) for token in tokenizer.convert_ids_to_tokens(list(ids)))


def token_text(tokenizer: Any, token: str) -> str:
    """One token as the text it stands for (``token_texts``)."""
    return tokenizer.convert_tokens_to_string([token]).strip() or token


def word_token_ids(tokenizer: Any, word: str) -> tuple[int, ...]:
    """Token ids of one word as the tokenizer splits it inside a text: handed over as a word
    (``is_split_into_words``), as every request encodes its words."""
    return tuple(tokenizer([word], is_split_into_words=True, add_special_tokens=False)["input_ids"])


# A short English text for probing how a tokenizer splits words (core.models) and how a model
# reads a padded batch (core.padding).
PROBE_WORDS = ("the", "film", "was", "good", "fun")
