"""Perturbed inputs shared by explainers, metrics and the app's tables: a word removed from the
classifier's input (``removal_variant``) and an example's text with words replaced
(``replaced_segments``, ``sample_text``)."""

from __future__ import annotations

from core.classifier import Classifier
from core.encoding import Encoded, Variant
from core.types import Example

REMOVALS = ("delete", "unk", "pad", "mask", "zero")


def removal_variant(clf: Classifier, encoded: Encoded, words: list[int], removal: str) -> Variant:
    """The input with ``words`` removed in the given way: deleted, replaced by one [UNK] / [PAD] /
    [MASK] token each, or their input embeddings zeroed."""
    if removal == "zero":
        return encoded.perturb(zero_words=words)
    if removal == "delete":
        return encoded.perturb({w: () for w in words})
    token = clf.special_tokens[removal]
    if token is None:
        raise ValueError(f"{clf.name} has no [{removal.upper()}] token")
    return encoded.perturb({w: (token,) for w in words})


def replaced_segments(example: Example, replacements: dict[int, str | None]) -> tuple[tuple[str, ...], ...]:
    """The example's segments with flat word positions replaced (None deletes the word)."""
    out, flat = [], 0
    for segment in example.segments:
        words = []
        for word in segment:
            new = replacements.get(flat, word)
            if new is not None:
                words.append(new)
            flat += 1
        out.append(tuple(words))
    return tuple(out)


def sample_text(segments: tuple[tuple[str, ...], ...]) -> str:
    """Segments joined for display (a pair's two texts separated by ``||``)."""
    return " || ".join(" ".join(segment) for segment in segments)
