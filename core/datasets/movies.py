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
    without evidence are not in the data."""
    by_review: dict[str, list[tuple[int, Example]]] = {}
    for example, row in zip(load_movies(root, split), _movie_rows(root, split), strict=True):
        evidence = row.get("evidence") or {}
        by_review.setdefault(evidence.get("docid") or example.id, []).append(
            (int(evidence.get("start_sentence") or 0), example)
        )
    reviews = []
    for docid, parts in by_review.items():
        sentences = [example for _, example in sorted(parts, key=lambda part: part[0])]
        words = tuple(w for e in sentences for w in e.words)
        mask = tuple(m for e in sentences for m in (e.rationale or (0,) * len(e.words)))
        reviews.append(
            Example(
                segments=(words,),
                label=sentences[0].label,
                label_names=MOVIES_LABELS,
                rationales=(mask,) if any(mask) else (),
                rationale=mask if any(mask) else None,
                dataset="movie-reviews",
                split=split,
                id=f"movie-reviews/{split}/{docid}",
            )
        )
    return reviews


def _movie_rows(root: Path, split: str):
    from datasets import load_from_disk

    return load_from_disk(str(root / "movies" / split))
