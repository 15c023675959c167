"""ERASER movie reviews (DeYoung et al. 2020, arXiv 1911.03429; Zaidan et al. 2007): the
sentence-level data saved with ``datasets.save_to_disk`` under ``movies/{split}``, each sentence
with its evidence span, and the reviews rebuilt from those sentences (``movie-reviews``)."""

from __future__ import annotations

from pathlib import Path

from core.types import Example

MOVIES_LABELS = ("negative", "positive")


def span_mask(words: tuple[str, ...], span_words: tuple[str, ...]) -> tuple[int, ...] | None:
    """0/1 mask of the first occurrence of ``span_words`` inside ``words`` (None if absent)."""
    n = len(span_words)
    if n == 0:
        return None
    for start in range(len(words) - n + 1):
        if words[start : start + n] == span_words:
            return tuple(int(start <= i < start + n) for i in range(len(words)))
    return None


def movie_example(row: dict, split: str, index: int, dataset: str = "movies") -> Example:
    words = tuple(row["sentence"].split())
    evidence = row.get("evidence") or {}
    mask = span_mask(words, tuple((evidence.get("text") or "").split()))
    return Example(
        segments=(words,),
        label=int(row["label"]),
        label_names=MOVIES_LABELS,
        rationales=(mask,) if mask else (),
        rationale=mask,
        dataset=dataset,
        split=split,
        id=f"{dataset}/{split}/{row.get('id', index)}",
    )


def load_movies(root: Path, split: str) -> list[Example]:
    return [movie_example(row, split, i) for i, row in enumerate(_movie_rows(root, split))]


def load_movie_reviews(root: Path, split: str) -> list[Example]:
    """ERASER movie reviews as documents: each review's sentences that the sentence-level data
    holds (those with a human evidence span), joined in their order in the review, with the spans
    as one rationale. Reviews run to several hundred words, longer than the model accepts, so this
    is the dataset for sliding windows (engine/windows.py). It is not the whole review: sentences
    without evidence are not in the data.

    A row of the data is the sentences ``start_sentence`` to ``end_sentence`` (exclusive) with one
    span, so a sentence with two spans is two rows, and a row may cover sentences another row
    holds too: each sentence is kept once, its spans joined (``_merged``)."""
    rows = _movie_rows(root, split)
    by_review: dict[str, list[tuple[int, int, Example]]] = {}
    for example, row in zip((movie_example(r, split, i) for i, r in enumerate(rows)), rows, strict=True):
        evidence = row.get("evidence") or {}
        start = int(evidence.get("start_sentence") or 0)
        end = int(evidence.get("end_sentence") or start + 1)
        by_review.setdefault(evidence.get("docid") or example.id, []).append((start, end, example))
    reviews = []
    for docid, parts in by_review.items():
        words, mask = _merged(sorted(parts, key=lambda part: (part[0], -part[1])))
        reviews.append(
            Example(
                segments=(tuple(words),),
                label=parts[0][2].label,
                label_names=MOVIES_LABELS,
                rationales=(tuple(mask),) if any(mask) else (),
                rationale=tuple(mask) if any(mask) else None,
                dataset="movie-reviews",
                split=split,
                id=f"movie-reviews/{split}/{docid}",
            )
        )
    return reviews


def _merged(parts: list[tuple[int, int, Example]]) -> tuple[list[str], list[int]]:
    """The words and span mask of one review from its rows (start sentence, end sentence,
    example) in order of start, longest first. A row inside the sentences already kept adds its
    span where its words are; a row that overlaps their end adds its span there and its new
    sentences after them; any other row is appended."""
    words: list[str] = []
    mask: list[int] = []
    kept_from, kept_to = 0, -1  # the words and the sentences (exclusive end) the last appended row began
    for start, end, example in parts:
        row = list(example.words)
        spans = list(example.rationale or (0,) * len(row))
        at = _find(words, row, kept_from) if start < kept_to else None
        if at is not None:  # every sentence of the row is kept already
            mask[at : at + len(row)] = [a | b for a, b in zip(mask[at : at + len(row)], spans)]
            continue
        shared = _overlap(words, row) if start < kept_to else 0
        mask[len(words) - shared :] = [a | b for a, b in zip(mask[len(words) - shared :], spans)]
        kept_from = len(words) - shared
        words += row[shared:]
        mask += spans[shared:]
        kept_to = max(kept_to, end)
    return words, mask


def _find(words: list[str], row: list[str], start: int) -> int | None:
    """Where ``row`` occurs in ``words`` at or after ``start``, or None."""
    for at in range(start, len(words) - len(row) + 1):
        if words[at : at + len(row)] == row:
            return at
    return None


def _overlap(words: list[str], row: list[str]) -> int:
    """The most words that end ``words`` and begin ``row``."""
    for shared in range(min(len(words), len(row)), 0, -1):
        if words[-shared:] == row[:shared]:
            return shared
    return 0


def _movie_rows(root: Path, split: str):
    from datasets import load_from_disk

    return load_from_disk(str(root / "movies" / split))
