"""What an imported file holds once parsed: one ``Imported`` record per (example, method), with
scores per word or per token, and the limits every import is read under.

Files are parsed, never evaluated: JSON with ``json``, CSV with ``csv``, Arrow / Parquet with
pyarrow. Nothing is unpickled and no code named in a file is run. Every error is a
``ValueError`` with one line that names the file's record (``record 3``, ``line 7``) and the
problem.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.types import FLOAT32_MAX, Example

MAX_BYTES = 64 * 1024 * 1024  # the largest file read (uploads are capped lower by the app)
MAX_RECORDS = 100_000
MAX_SCORES = 8192  # per record (a few times any model's maximum length)
LEVELS = ("word", "token")
Segments = tuple[tuple[str, ...], ...]


class BadFile(ValueError):
    """A file that cannot be imported; the message is one line naming the record and the problem."""


@dataclass(frozen=True)
class Imported:
    """One attribution read from a file, before it is lined up with the model's words.

    ``level`` says what ``scores`` are over: ``word`` (one per word of ``words`` or of the
    matched example) or ``token`` (one per entry of ``tokens`` / ``token_ids``, special tokens
    included where the file has them). ``where`` names the record for error messages; ``segments``
    the example's texts where the file keeps them apart (a pair's premise and hypothesis);
    ``example`` the whole example where the file has it (gold label and rationales too);
    ``subwords`` (string, score, word index) of word scores that keep their subword scores."""

    method: str
    scores: tuple[float, ...]
    level: str
    where: str
    example_id: str | None = None
    words: tuple[str, ...] | None = None
    segments: Segments | None = None  # ``words`` split into the example's texts (their words in order)
    text: str | None = None
    tokens: tuple[str, ...] = ()
    token_ids: tuple[int, ...] = ()
    target: int | str | None = None  # a class index, or a label name (a CSV's target column)
    example: Example | None = None
    subwords: tuple[tuple[str, float, int], ...] = ()
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise BadFile(f"{self.where}: level must be word or token, got {self.level!r}")
        if len(self.scores) > MAX_SCORES:
            raise BadFile(f"{self.where}: {len(self.scores)} scores, more than the {MAX_SCORES} allowed")
        if self.level == "token" and not (self.tokens or self.token_ids):
            raise BadFile(f"{self.where}: token scores without tokens")


def read_limited(path: str | Path, max_bytes: int = MAX_BYTES) -> bytes:
    """The file's bytes, refused when larger than ``max_bytes``."""
    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise BadFile(f"{path.name} is {size:,} bytes, more than the {max_bytes:,} allowed")
    return path.read_bytes()


def parse_json(data: bytes, name: str) -> Any:
    """Strict JSON (no NaN literals); a truncated, non-UTF-8 or too deeply nested file is
    refused."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise BadFile(f"{name} is not UTF-8 text (byte {error.start})") from None
    try:
        return json.loads(text, parse_constant=functools.partial(_no_constant, name))
    except json.JSONDecodeError as error:
        raise BadFile(f"{name} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
    except RecursionError:
        raise BadFile(f"{name} is nested too deeply to be an attribution file") from None
    except BadFile:
        raise
    except ValueError:  # what json raises besides: an integer longer than Python converts
        raise BadFile(f"{name} holds a number of more than {sys.get_int_max_str_digits():,} digits") from None


def _no_constant(name: str, constant: str) -> float:
    raise BadFile(f"{name} holds {constant}, which is not a JSON number")


def number(value: Any, where: str) -> float:
    """A finite JSON number that a float32 holds (scores of every method are finite, imported ones
    too, and stored as float32, where 1e308 would be infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadFile(f"{where}: expected a number, got {type(value).__name__}")
    try:
        result = float(value)
    except OverflowError:  # an integer of hundreds of digits
        raise BadFile(f"{where}: the score is too large to be a number") from None
    if not math.isfinite(result):
        raise BadFile(f"{where}: the score {value!r} is not finite")
    if abs(result) > FLOAT32_MAX:
        raise BadFile(f"{where}: the score {result:g} is too large (scores are stored as 32-bit floats, up to 3.4e38)")
    return result


def numbers(values: Any, where: str) -> tuple[float, ...]:
    if not isinstance(values, list):
        raise BadFile(f"{where}: expected a list of numbers, got {type(values).__name__}")
    if len(values) > MAX_SCORES:
        raise BadFile(f"{where}: {len(values)} scores, more than the {MAX_SCORES} allowed")
    return tuple(number(v, f"{where}, score {i}") for i, v in enumerate(values))


def strings(values: Any, where: str) -> tuple[str, ...]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise BadFile(f"{where}: expected a list of strings")
    if len(values) > MAX_SCORES:
        raise BadFile(f"{where}: {len(values)} tokens, more than the {MAX_SCORES} allowed")
    return tuple(values)


def integers(values: Any, where: str) -> tuple[int, ...]:
    if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise BadFile(f"{where}: expected a list of whole numbers")
    if len(values) > MAX_SCORES:
        raise BadFile(f"{where}: {len(values)} ids, more than the {MAX_SCORES} allowed")
    return tuple(values)


def whole_number(value: Any, where: str) -> int:
    """A JSON whole number (not a bool, not a float)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadFile(f"{where}: expected a whole number, got {value!r:.40}")
    return value


def optional_int(value: Any, where: str) -> int | None:
    """A JSON whole number or null."""
    return None if value is None else whole_number(value, where)


def method_name(source: str, name: Any, where: str) -> str:
    """The method key an imported attribution is stored under: ``<source>.<name>`` in letters,
    digits, ``_`` and ``-`` (``ferret.partition_shap``), so it never collides with a registry key
    and splits cleanly in the run store's ``value/M/K`` columns."""
    if not isinstance(name, str):
        raise BadFile(f"{where}: the method name must be text, got {type(name).__name__}")
    cleaned = re.sub(r"[^a-z0-9_-]+", "_", name.strip().lower()).strip("_")[:60] or "scores"
    return f"{source}.{cleaned}"


def check_count(records: list[Imported], name: str) -> list[Imported]:
    if not records:
        raise BadFile(f"{name} holds no attribution")
    if len(records) > MAX_RECORDS:
        raise BadFile(f"{name} holds {len(records):,} attributions, more than the {MAX_RECORDS:,} allowed")
    return records
