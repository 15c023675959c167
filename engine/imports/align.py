"""Line imported scores up with the model's words, by the rules our own methods follow.

The example of a record is the dataset example with its id (``idx`` for Thermostat) when a
dataset is given, else one built from the record: its whole example (our ``explanation/1``, bundle
or ``explain --json``: gold label and rationales too), its words (our JSON), its text split with
``core.datasets.split_words`` (ferret, inseq), or its tokens joined into words (word pieces
``##x`` continue a word; ``Ġ``/``▁`` start one; a separator token in the middle starts the
second segment); a text under an id another text of the file already has gets "<id> (2)", and
records without an id are one example per text (several explainers of one text: one example).
The example is then cut to the model's length as every method sees it.

Word scores must be one per word. Token scores must be over exactly the model's own tokens of
that example (special tokens left out on both sides; ids compared where the file has them, else
the token strings); a word's score is the sum of its tokens' scores, as for ``grad_x_input`` and
attention, and the token scores are kept as the attribution's subword scores (as are the subword
scores of our JSON's word scores, where their word ids fit the words). Any mismatch is a
``ValueError`` naming the record, the example and the first position that differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from core.types import FLOAT32_MAX, Attribution, Example
from engine.imports.records import BadFile, Imported

if TYPE_CHECKING:
    from core.classifier import Classifier

EXPLAINED = -1  # an imported attribution's target when the file names none: the class explained


@dataclass
class Aligned:
    """One example of an import with its imported attributions (target ``EXPLAINED`` where the
    file names no class) and its index in the dataset split (None for an example from the file)."""

    example: Example
    index: int | None
    attributions: dict[str, Attribution] = field(default_factory=dict)


def align(
    clf: Classifier,
    records: Sequence[Imported],
    dataset: Sequence[Example] | None = None,
    *,
    source: str = "import",
) -> list[Aligned]:
    """The examples of ``records`` in the order they first appear, each with its attributions."""
    rows = list(enumerate(dataset or ()))
    by_id = {example.id: (i, example) for i, example in rows}
    found: dict[object, Aligned] = {}
    for record in records:
        index, example = _example_of(clf, record, (rows, by_id) if dataset is not None else None, source, len(found))
        key = index if index is not None else (record.example_id, example.words)  # no id: the words alone
        if key in found:
            example = replace(example, id=found[key].example.id)
        elif index is None:  # a text of the file's own: its id names it alone
            example = replace(example, id=_unused_id(example.id, {e.example.id for e in found.values()}))
        if key not in found:
            try:
                found[key] = Aligned(clf.fit_example(example)[0], index)
            except ValueError as error:  # words the tokenizer cannot take
                raise BadFile(f"{record.where}: example {example.id!r}: {error}") from None
        entry = found[key]
        if record.method in entry.attributions:
            raise BadFile(f"{record.where}: a second {record.method} attribution for example {example.id!r}")
        entry.attributions[record.method] = _attribution(clf, record, example, entry.example)
        named = {a.target for a in entry.attributions.values() if a.target != EXPLAINED}
        if len(named) > 1:
            raise BadFile(f"{record.where}: example {example.id!r} is explained for two classes {sorted(named)}")
    return list(found.values())


def _unused_id(example_id: str, used: set[str]) -> str:
    """``example_id``, or where another text of the file already has it (two downloads of the
    heatmap page are both "text") the first of "<id> (2)", "<id> (3)", ... that none has."""
    found, copy = example_id, 1
    while found in used:
        copy += 1
        found = f"{example_id} ({copy})"
    return found


def _example_of(
    clf: Classifier,
    record: Imported,
    dataset: tuple[list[tuple[int, Example]], dict[str, tuple[int, Example]]] | None,
    source: str,
    n_found: int,
) -> tuple[int | None, Example]:
    """(dataset index, example) of ``record``: from ``dataset`` (its rows, and the same by id)
    where one is given, else (None, the record's own example, words or tokens)."""
    if dataset is not None:
        rows, by_id = dataset
        if record.example_id is None:
            raise BadFile(f"{record.where}: no example id to find in the dataset")
        if record.example_id in by_id:
            return by_id[record.example_id]
        position = record.example_id
        if position.isascii() and position.isdigit() and int(position) < len(by_id):  # a row number (Thermostat's idx)
            return rows[int(position)]
        hint = f" (ids look like {next(iter(by_id))!r}, or a row number below {len(by_id)})" if by_id else ""
        raise BadFile(f"{record.where}: example {record.example_id!r} is not in the dataset split{hint}")
    example_id = record.example_id or f"{source}/{n_found}"
    if record.example is not None:  # the file's whole example: its gold label and rationales too
        return None, replace(record.example, id=example_id, dataset=source, split="")
    if record.words is not None:
        return None, Example(segments=record.segments or (record.words,), id=example_id, dataset=source)
    if record.text is not None and record.text.strip():
        from core.datasets import split_words

        return None, Example(segments=(split_words(record.text),), id=example_id, dataset=source)
    if record.level == "token":
        return None, Example(segments=_words_of_tokens(clf, record), id=example_id, dataset=source)
    raise BadFile(f"{record.where}: word scores without words, text or a dataset to take them from")


def _words_of_tokens(clf: Classifier, record: Imported) -> tuple[tuple[str, ...], ...]:
    tokenizer = clf.tokenizer
    if not record.tokens:
        size = len(tokenizer)
        for token_id in record.token_ids:
            if not 0 <= token_id < size:
                raise BadFile(f"{record.where}: input id {token_id} is outside the model's vocabulary (0-{size - 1})")
    tokens = list(record.tokens) if record.tokens else tokenizer.convert_ids_to_tokens(list(record.token_ids))
    specials = set(tokenizer.all_special_tokens)
    segments: list[list[str]] = [[]]
    pieces: list[str] = []

    def flush() -> None:
        if pieces:
            segments[-1].append(tokenizer.convert_tokens_to_string(pieces).strip() or pieces[0])
            pieces.clear()

    # WordPiece marks a continuation with ##; byte-level BPE and SentencePiece mark a word's
    # start with Ġ / ▁ instead, and their unmarked tokens continue the word.
    marks_starts = any(t.startswith(("Ġ", "▁")) for t in tokens)
    for token in tokens:
        if token in specials:
            flush()
            if token == tokenizer.sep_token and segments[-1] and len(segments) < 2:
                segments.append([])
            continue
        starts = token.startswith(("Ġ", "▁")) if marks_starts else not token.startswith("##")
        if starts:
            flush()
        pieces.append(token)
    flush()
    words = tuple(tuple(segment) for segment in segments if segment)
    if not words:
        raise BadFile(f"{record.where}: no token besides the special ones")
    return words


def _kept_words(full: Example, fitted: Example) -> list[int]:
    """Indices in ``full.words`` of the words ``fitted`` kept (each segment keeps a prefix)."""
    kept: list[int] = []
    offset = 0
    for segment, cut in zip(full.segments, fitted.segments, strict=True):
        kept += range(offset, offset + len(cut))
        offset += len(segment)
    return kept


def _kept_subwords(record: Imported, kept: list[int]) -> dict[str, Any]:
    """The record's subword scores of the ``kept`` words, as ``Attribution`` fields (none where
    the record has none)."""
    if not record.subwords:
        return {}
    new = {word: i for i, word in enumerate(kept)}
    rows = [(subword, score, new[word]) for subword, score, word in record.subwords if word in new]
    return {
        "subwords": tuple(row[0] for row in rows),
        "subword_scores": np.asarray([row[1] for row in rows], dtype=np.float32),
        "subword_word_ids": tuple(row[2] for row in rows),
    }


def _class_index(clf: Classifier, target: int | str, where: str) -> int:
    """The class a record names by index or by label name (``core.datasets.labels.class_index``)."""
    from core.datasets.labels import class_index

    try:
        index = class_index(target, clf.label_names)
    except ValueError as error:
        raise BadFile(f"{where}: {error}") from None
    assert index is not None  # a target was given
    return index


def _attribution(clf: Classifier, record: Imported, full: Example, fitted: Example) -> Attribution:
    target = EXPLAINED if record.target is None else _class_index(clf, record.target, record.where)
    params = {"imported": record.where, **{k: v for k, v in record.extras.items() if v is not None}}
    if record.level == "word":
        n = len(record.scores)
        if n not in (len(full.words), len(fitted.words)):
            raise BadFile(f"{record.where}: {n} scores for the {len(full.words)} words of example {full.id!r}")
        against = full.words if n == len(full.words) else fitted.words
        if record.words is not None and tuple(record.words) != against:
            position = next(
                (i for i, (a, b) in enumerate(zip(record.words, against, strict=False)) if a != b), len(against)
            )
            theirs = record.words[position] if position < len(record.words) else "(nothing)"
            ours = against[position] if position < len(against) else "(nothing)"
            raise BadFile(
                f"{record.where}: word {position} is {theirs!r} in the file but {ours!r} in example {full.id!r}"
            )
        kept = _kept_words(full, fitted) if n == len(full.words) else list(range(n))
        scores = np.asarray(record.scores, dtype=np.float32)[kept]
        return Attribution(
            record.method, fitted.id, target, fitted.words, scores, params=params, **_kept_subwords(record, kept)
        )
    tokens, token_scores, word_ids = _token_scores(clf, record, full, fitted)
    words = np.zeros(len(fitted.words), dtype=np.float64)
    np.add.at(words, np.asarray(word_ids, dtype=np.int64), np.asarray(token_scores, dtype=np.float64))
    too_large = np.flatnonzero(np.abs(words) > FLOAT32_MAX)
    if too_large.size:
        word = int(too_large[0])
        raise BadFile(
            f"{record.where}: the token scores of word {word} of example {full.id!r} add up to {words[word]:g},"
            " too large for a 32-bit float"
        )
    return Attribution(
        record.method,
        fitted.id,
        target,
        fitted.words,
        words.astype(np.float32),
        params=params,
        subwords=tuple(tokens),
        subword_scores=np.asarray(token_scores, dtype=np.float32),
        subword_word_ids=tuple(word_ids),
    )


def _token_scores(
    clf: Classifier, record: Imported, full: Example, fitted: Example
) -> tuple[list[str], list[float], list[int]]:
    """The record's scores on the model's tokens of ``fitted`` (specials left out), with each
    token's string and word index; the file may cover the whole example or the cut one."""
    tokenizer = clf.tokenizer
    special_ids = set(tokenizer.all_special_ids)
    special_tokens = set(tokenizer.all_special_tokens)
    if record.token_ids:
        keep = [i for i, t in enumerate(record.token_ids) if t not in special_ids]
        theirs: list[object] = [record.token_ids[i] for i in keep]
    else:
        keep = [i for i, t in enumerate(record.tokens) if t not in special_tokens]
        theirs = [record.tokens[i] for i in keep]
    scores = [record.scores[i] for i in keep]
    mismatch = ""
    for candidate in (fitted, full):
        encoded = clf.encode(candidate)
        positions = encoded.scored_positions
        ids = [encoded.input_ids[p] for p in positions]
        strings = tokenizer.convert_ids_to_tokens(ids)
        ours: list[object] = list(ids) if record.token_ids else list(strings)
        if ours == theirs:
            word_ids = [int(encoded.word_ids[p]) for p in positions]  # type: ignore[arg-type]
            if candidate is full:
                kept = {w: i for i, w in enumerate(_kept_words(full, fitted))}
                rows = [k for k, w in enumerate(word_ids) if w in kept]
                return [strings[k] for k in rows], [scores[k] for k in rows], [kept[word_ids[k]] for k in rows]
            return list(strings), scores, word_ids
        if not mismatch:
            mismatch = _first_difference(ours, theirs, strings, record, full)
    raise BadFile(mismatch)


def _first_difference(
    ours: list[object], theirs: list[object], strings: list[str], record: Imported, example: Example
) -> str:
    for i, (a, b) in enumerate(zip(theirs, ours, strict=False)):
        if a != b:
            mine = f"{strings[i]!r} (id {ours[i]})" if record.token_ids else repr(ours[i])
            return (
                f"{record.where}: token {i} of example {example.id!r} is {a!r} in the file but {mine} for the "
                "model (the file was made with another tokenizer or text)"
            )
    return (
        f"{record.where}: example {example.id!r} has {len(theirs)} tokens in the file but {len(ours)} for the model"
        " (special tokens left out)"
    )
