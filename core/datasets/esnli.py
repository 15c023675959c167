"""e-SNLI (Camburu et al. 2018): premise / hypothesis pairs with the annotators' highlights, read
from the ``esnli`` line files and highlight files; the highlights are carried over to the pair's
own words (``align_mask``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from core.types import Example

ESNLI_LABELS = ("entailment", "neutral", "contradiction")

_HIGHLIGHT_RE = re.compile(r"\x1b\[0;30;43m(.*?)\x1b\[0m")


def parse_esnli_highlights(text: str) -> dict[int, tuple[tuple[str, ...], tuple[int, ...]]]:
    """Parse a highlights file: ``{dev index: (words, 0/1 mask)}``.

    Each block is ``----- Example N -----`` followed (on the same line or the next) by premise and
    hypothesis words on one line, a highlighted word wrapped in the escape codes ``ESC[0;30;43m``
    ... ``ESC[0m``. Parsing is per character, so a highlight glued to other text or one spanning
    several words still marks the right words; a highlighted stretch of bare spaces (the files
    have a few, where the original text had double spaces) marks nothing.
    """
    parsed: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = {}
    parts = re.split(r"-{5} Example (\d+) -{5}", text)
    for index_text, body in zip(parts[1::2], parts[2::2]):
        parsed[int(index_text)] = _highlighted_words(body.strip())
    return parsed


def _highlighted_words(line: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Words of a line with ``ESC[0;30;43m``...``ESC[0m`` highlights, and which are highlighted."""
    chars: list[str] = []
    flags: list[bool] = []
    position = 0
    for match in _HIGHLIGHT_RE.finditer(line):
        plain = line[position : match.start()]
        chars.extend(plain)
        flags.extend([False] * len(plain))
        chars.extend(match.group(1))
        flags.extend([True] * len(match.group(1)))
        position = match.end()
    chars.extend(line[position:])
    flags.extend([False] * (len(line) - position))
    words: list[str] = []
    mask: list[int] = []
    for match in re.finditer(r"\S+", "".join(chars)):
        words.append(match.group(0))
        mask.append(int(any(flags[match.start() : match.end()])))
    return tuple(words), tuple(mask)


_QUOTES_RE = re.compile(r"``|''|[\"‘’“”]")


def _normalized_chars(words: Iterable[str]) -> tuple[str, list[int]]:
    """The words run together without spaces (quotes unified, lower-cased) and, per character,
    the index of the word it comes from."""
    chars: list[str] = []
    owner: list[int] = []
    for i, word in enumerate(words):
        norm = _QUOTES_RE.sub("'", word).lower()
        chars.extend(norm)
        owner.extend([i] * len(norm))
    return "".join(chars), owner


def align_mask(source_words: Iterable[str], source_mask: Iterable[int], target_words: Iterable[str]) -> tuple[int, ...]:
    """Carry a word mask over to another tokenization of the same text.

    The two word lists are matched character by character, ignoring spaces, case and quote
    styles (the e-SNLI highlight files split "garage-like" into "garage - like" and write both
    two-character quotes as one apostrophe); a target word is marked when any of its characters
    comes from a marked source word. Where the characters differ beyond that, the longest
    matching blocks are used.
    """
    source_words, source_mask, target_words = tuple(source_words), tuple(source_mask), tuple(target_words)
    if source_words == target_words:
        return tuple(int(bool(m)) for m in source_mask)
    source_text, source_owner = _normalized_chars(source_words)
    target_text, target_owner = _normalized_chars(target_words)
    marked = [0] * len(target_words)
    if source_text == target_text:
        pairs: Iterable[tuple[int, int]] = zip(range(len(source_text)), range(len(target_text)))
    else:
        import difflib

        matcher = difflib.SequenceMatcher(None, source_text, target_text, autojunk=False)
        pairs = ((a + k, b + k) for a, b, size in matcher.get_matching_blocks() for k in range(size))
    for s, t in pairs:
        if source_mask[source_owner[s]]:
            marked[target_owner[t]] = 1
    return tuple(marked)


def _read_lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def load_esnli(root: Path, split: str) -> list[Example]:
    """e-SNLI premise/hypothesis pairs; ``dev_highlighted`` keeps the dev pairs with highlights.

    Words are those of ``s1``/``s2`` (space-tokenized). The highlight files tokenize a little
    differently (hyphens split off, other quote marks), so their masks are carried over with
    ``align_mask``; every highlighted pair gets a mask (words marked by at least 2 of 3 annotators).
    """
    base_split = "dev" if split == "dev_highlighted" else split
    folder = root / "esnli"
    premises = _read_lines(folder / f"s1.{base_split}")
    hypotheses = _read_lines(folder / f"s2.{base_split}")
    labels = _read_lines(folder / f"labels.{base_split}")
    if not len(premises) == len(hypotheses) == len(labels):
        raise ValueError(
            f"e-SNLI {base_split}: {len(premises)} premises, {len(hypotheses)} hypotheses, {len(labels)} labels"
        )
    highlights: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = {}
    if base_split == "dev" and (folder / "highlights").is_dir():
        for file in sorted((folder / "highlights").glob("*.txt")):
            highlights.update(parse_esnli_highlights(file.read_text(encoding="utf-8")))
    examples = []
    for i, (premise, hypothesis, label) in enumerate(zip(premises, hypotheses, labels)):
        if split == "dev_highlighted" and i not in highlights:
            continue
        label = label.strip().lower()
        if label not in ESNLI_LABELS:
            continue
        segments = (tuple(premise.split()), tuple(hypothesis.split()))
        rationale = None
        if i in highlights:
            words, mask = highlights[i]
            rationale = align_mask(words, mask, segments[0] + segments[1])
        examples.append(
            Example(
                segments=segments,
                label=ESNLI_LABELS.index(label),
                label_names=ESNLI_LABELS,
                rationales=(rationale,) if rationale is not None else (),
                rationale=rationale,
                dataset="esnli",
                split=split,
                id=f"esnli/{base_split}/{i}",
            )
        )
    return examples
