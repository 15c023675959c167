"""Texts given on the command line: ``--text`` (and ``--text-b``) and JSON Lines files of texts,
parsed, never evaluated."""

from __future__ import annotations

import json
from typing import Any

from core.types import Example

TEXT_B_ALONE = "--text-b is the second text of --text: give both, or --dataset alone"


def check_text_alone(args, option: str = "text", instead: str = "is explained alone") -> None:
    """Refuse dataset options (``--split``, ``--limit``) given with ``--text`` or another
    ``option`` that names its own examples (they were ignored without a word)."""
    given = [f"--{name}" for name in ("split", "limit") if getattr(args, name, None) is not None]
    if getattr(args, option) is not None and given:
        verb = "pick" if len(given) > 1 else "picks"
        raise ValueError(f"{' and '.join(given)} {verb} examples of --dataset; --{option} {instead}")


def text_example(text: str, text_b: str | None) -> Example:
    """The example of ``--text`` and, for a (premise, hypothesis) pair, ``--text-b``: a text with
    no word is refused (a blank ``--text-b`` was dropped, and the pair explained as one text)."""
    from core.datasets import split_words

    words = split_words(text)
    if not words:
        raise ValueError("the text is empty: give at least one word")
    if text_b is None:
        return Example(segments=(words,), id="cli")
    words_b = split_words(text_b)
    if not words_b:
        raise ValueError("--text-b has no words: give the hypothesis, or leave --text-b out for a single text")
    return Example(segments=(words, words_b), id="cli")


def read_jsonl(path: str) -> list[dict[str, Any]]:
    """The records of a JSON Lines file, each a dict with a string ``text`` (blank lines skipped);
    parsed, never evaluated. ``ValueError`` names the file and line of any bad record."""
    from pathlib import Path

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text (byte {error.start}: {error.reason})") from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: not JSON ({error.msg})") from error
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise ValueError(f"{path}:{number}: each line needs a string field 'text'")  # noqa: TRY004
        records.append({**record, "line": number})
    if not records:
        raise ValueError(f"{path} holds no records: one JSON object with a 'text' field per line")
    return records


def read_texts(path: str) -> list[Example]:
    """The examples of a JSON Lines file (``read_jsonl``) with ``text`` and, for pairs,
    ``text_b`` (a string with a word, when present and not null), each named ``PATH:LINE``."""
    from core.datasets import split_words

    examples = []
    for record in read_jsonl(path):
        text_b = record.get("text_b")
        segments = (split_words(record["text"]),)
        if text_b is not None:
            words_b = split_words(text_b) if isinstance(text_b, str) else ()
            if not words_b:
                raise ValueError(f"{path}:{record['line']}: 'text_b' must be a text with a word (or left out)")
            segments += (words_b,)
        examples.append(Example(segments=segments, id=f"{path}:{record['line']}"))
    return examples
