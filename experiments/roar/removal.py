"""Removing the words an importance measure ranks highest: ROAR, ROAR_BERT and Recursive ROAR.

Sources:

* ROAR, RemOve And Retrain: Hooker, Erhan, Kindermans and Kim (2019), "A Benchmark for
  Interpretability Methods in Deep Neural Networks", arXiv:1806.10758.
* Pham, Bui, Mai and Nguyen (2022), "Double Trouble: How to not explain a text
  classifier's decisions using counterfactuals synthesized by masked language models?",
  arXiv:2110.11929. ROAR on SST-2: the top N% words of every train and dev example are
  **deleted** (N = 10, 20, 30); ROAR_BERT replaces them by BERT's **top-1 fill-in**, all
  selected positions masked and filled in one pass.
* Madsen, Meade, Adlakha and Reddy (2022), "Evaluating the Faithfulness of
  Importance Measures in NLP by Recursively Masking Allegedly Important Tokens and Retraining",
  arXiv:2110.08412. Removed tokens become **[MASK]**, which keeps the length (an information
  source unrelated to importance); levels 0, 10, ..., 100%; Appendix F: one token per step up to
  10 tokens; **Recursive ROAR** recomputes the importance with the previous step's model on the
  previous step's data, already-masked tokens staying masked. Only the main sequence of a paired
  task is explained and masked.

Rounding rule, the number of words removed at N% of an example with ``n`` candidate words
(``n_to_remove``):

* ``pham2022`` (Pham et al.'s code): ``ceil((n - 1) * N / 100)``, at least 1, at most ``n``;
* ``madsen2022`` (Madsen et al.'s code, its "quantile" strategy): ``floor(n * N / 100)``.

The default follows the paper whose removal is chosen: ``pham2022`` for ``delete`` and ``mlm``,
``madsen2022`` for ``mask``. Whatever the rule, 0% removes nothing and 100% removes every
candidate word (so the 0% and 100% data are the same for every method); a level of ``k``
tokens removes ``min(k, n)`` words.

Removal is cumulative: the count at a level includes the words already removed, which stay removed
(Madsen et al.'s code forces their importance to +inf); only the remaining words are ranked, most
important first, ties by position. Pham et al. 2022 rank the signed scores (``signed``); Madsen et
al.'s measures are magnitudes (``absolute``); the default follows the removal as above. Plain ROAR
ranks the step-0 scores at every level; Recursive ROAR ranks the scores of the previous step's model
on the previous step's view (``View.original_scores`` maps them back).

The ``mlm`` view masks every removed word of the original example and fills all of them in one
pass (``MaskedLM.fill_masks``, the helper Pham et al.'s LIME_BERT uses here too), so the text at a
level depends only on which words are removed; in a recursive job earlier fill-ins are redrawn
with the new masks in context. A word-piece fill-in (``##ing``) becomes the word ``ing``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from core.params import current_name
from core.types import Example
from explainers.lime import replaced_segments

REMOVALS = ("delete", "mask", "mlm")
ROUNDINGS = ("pham2022", "madsen2022")
ORDERS = ("signed", "absolute")
SCOPES = ("main", "all")
UNITS = ("percent", "tokens")


def default_rounding(removal: str) -> str:
    """Madsen et al.'s rule for its [MASK] removal, Pham et al.'s for deletion and masked-LM
    fill-ins."""
    return "madsen2022" if check_choice(removal, REMOVALS, "removal") == "mask" else "pham2022"


def default_order(removal: str) -> str:
    """Madsen et al. 2022 rank magnitudes, Pham et al. 2022 signed scores."""
    return "absolute" if check_choice(removal, REMOVALS, "removal") == "mask" else "signed"


def check_choice(value: str, allowed: Sequence[str], what: str) -> str:
    """``value`` if it is one of ``allowed`` (under its current name when it was renamed,
    ``core.params.RENAMED_CHOICES``), else a one-line error naming it and the choices."""
    if current_name(value) in allowed:
        return current_name(value)
    raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(allowed)}")


@dataclass(frozen=True)
class Level:
    """How much of an example is removed: a percentage of its candidate words or a number of
    tokens."""

    amount: int
    unit: str = "percent"

    def __post_init__(self) -> None:
        check_choice(self.unit, UNITS, "level unit")
        if isinstance(self.amount, bool) or not isinstance(self.amount, (int, np.integer)):
            raise TypeError(f"a level is a whole number, got {self.amount!r}")
        high = 100 if self.unit == "percent" else 10_000
        if not 0 <= self.amount <= high:
            raise ValueError(f"a level in {self.unit} lies in 0..{high}, got {self.amount}")
        if self.amount == 0:  # 0 tokens is 0%: one shared model with nothing removed
            object.__setattr__(self, "unit", "percent")

    @classmethod
    def parse(cls, text: str) -> Level:
        """``"10%"`` or ``"10"`` (percent), ``"3t"`` or ``"3 tokens"`` (tokens); ``label`` reads
        back."""
        match = re.fullmatch(r"\s*(\d+)\s*(%|t|tok|tokens?)?\s*", text)
        if match is None:
            raise ValueError(f"cannot read {text!r} as a level; write 10% or 3t")
        return cls(int(match.group(1)), "percent" if match.group(2) in (None, "%") else "tokens")

    @property
    def label(self) -> str:
        if self.unit == "percent":
            return f"{self.amount}%"
        return f"{self.amount} token" + ("" if self.amount == 1 else "s")

    @property
    def x(self) -> float:
        """The curve's x value: the fraction removed, or the number of tokens."""
        return self.amount / 100 if self.unit == "percent" else float(self.amount)

    @property
    def is_zero(self) -> bool:
        return self.amount == 0

    @property
    def is_full(self) -> bool:
        return self.unit == "percent" and self.amount == 100


ZERO = Level(0)
FULL = Level(100)
PHAM_2022_LEVELS = tuple(Level(n) for n in (10, 20, 30))
MADSEN_2022_LEVELS = tuple(Level(n) for n in range(0, 101, 10))
ONE_TOKEN_LEVELS = tuple(Level(n, "tokens") for n in range(11))  # Madsen et al. 2022, Appendix F


def n_to_remove(n_words: int, level: Level, rounding: str) -> int:
    """How many of ``n_words`` candidate words are removed at ``level`` (module docstring)."""
    rounding = check_choice(rounding, ROUNDINGS, "rounding")
    if n_words < 0:
        raise ValueError(f"n_words must be at least 0, got {n_words}")
    if level.unit == "tokens":
        return min(level.amount, n_words)
    if level.is_zero or n_words == 0:
        return 0
    if level.is_full:
        return n_words
    if rounding == "pham2022":
        return min(n_words, max(1, -(-(n_words - 1) * level.amount // 100)))
    return n_words * level.amount // 100


def candidates(example: Example, scope: str = "main") -> np.ndarray:
    """Flat word positions that may be removed: the main (first) segment, as Madsen et al. 2022, or
    all words."""
    if check_choice(scope, SCOPES, "scope") == "main":
        return np.arange(len(example.segments[0]))
    return np.arange(len(example.words))


def remove_top(
    example: Example,
    scores: np.ndarray,
    level: Level,
    *,
    removed: np.ndarray | None = None,
    rounding: str = "pham2022",
    order: str = "signed",
    scope: str = "main",
) -> np.ndarray:
    """The words removed at ``level``: ``removed`` (none by default) plus the best-ranked other
    candidates by ``scores`` until ``n_to_remove`` words are removed. Booleans over
    ``example.words``. ``scores`` are over ``example.words``; values at removed words are ignored
    (they may be NaN), any other non-finite candidate score is an error."""
    check_choice(order, ORDERS, "order")
    n = len(example.words)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (n,):
        raise ValueError(f"{scores.shape[0] if scores.ndim else 0} scores for {n} words in {example.id!r}")
    removed = np.zeros(n, dtype=bool) if removed is None else np.asarray(removed, dtype=bool)
    if removed.shape != (n,):
        raise ValueError(f"removed mask of length {len(removed)} for {n} words in {example.id!r}")
    pool = candidates(example, scope)
    count = n_to_remove(len(pool), level, rounding)
    out = removed.copy()
    need = count - int(removed[pool].sum())
    if need <= 0:
        return out
    open_ = pool[~removed[pool]]
    values = scores[open_]
    if not np.all(np.isfinite(values)):
        bad = int(open_[~np.isfinite(values)][0])
        raise ValueError(f"score {scores[bad]} for word {bad} ({example.words[bad]!r}) of {example.id!r}")
    key = np.abs(values) if order == "absolute" else values
    out[open_[np.argsort(-key, kind="stable")[:need]]] = True
    return out


@dataclass(frozen=True)
class View:
    """An example as the classifier sees it once some words are removed.

    ``example`` holds the words the classifier reads; ``positions[j]`` is the original position
    of its word ``j``; ``shown[i]`` is, for original word ``i``, None when it is kept, ``""``
    when it is deleted, else the text that replaces it ([MASK] or the masked LM's fill-in).
    """

    original: Example
    removed: tuple[bool, ...]
    example: Example
    positions: tuple[int, ...]
    shown: tuple[str | None, ...]

    def original_scores(self, scores: np.ndarray) -> np.ndarray:
        """Scores over this view's words mapped to the original words (NaN where deleted)."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != (len(self.positions),):
            raise ValueError(f"{len(scores)} scores for the {len(self.positions)} words of {self.example.id!r}")
        out = np.full(len(self.original.words), np.nan)
        out[list(self.positions)] = scores
        return out


def _piece_text(text: str) -> str:
    """A masked LM's word-piece fill-in as a word of its own."""
    return text[2:] if text.startswith("##") and len(text) > 2 else text


def removed_views(
    examples: Sequence[Example],
    removed: Sequence[np.ndarray],
    removal: str,
    *,
    mask_token: str = "[MASK]",
    mlm=None,
) -> list[View]:
    """Each example with its ``removed`` words deleted, replaced by ``mask_token`` (the
    classifier's mask token) or filled in by ``mlm``'s top-1 (one ``fill_masks`` call for all
    examples, each example's masks filled in one pass)."""
    check_choice(removal, REMOVALS, "removal")
    if len(examples) != len(removed):
        raise ValueError(f"{len(removed)} removed masks for {len(examples)} examples")
    if removal == "mlm" and mlm is None:
        raise ValueError("removal 'mlm' needs a masked language model")
    masks = [np.asarray(m, dtype=bool) for m in removed]
    for example, mask in zip(examples, masks):
        if mask.shape != (len(example.words),):
            raise ValueError(f"removed mask of length {len(mask)} for {len(example.words)} words in {example.id!r}")
    texts: list[dict[int, str | None]] = []
    if removal == "mlm":
        todo = [i for i, mask in enumerate(masks) if mask.any()]
        rows = [
            replaced_segments(examples[i], dict.fromkeys(np.flatnonzero(masks[i]).tolist(), mlm.tokenizer.mask_token))
            for i in todo
        ]
        fills = dict(zip(todo, mlm.fill_masks(rows))) if rows else {}
        for i, mask in enumerate(masks):
            where = np.flatnonzero(mask).tolist()
            texts.append({p: _piece_text(mlm.token_text(f.token)) for p, f in zip(where, fills.get(i, []))})
    else:
        marker = None if removal == "delete" else mask_token
        texts = [dict.fromkeys(np.flatnonzero(mask).tolist(), marker) for mask in masks]
    return [_view(example, mask, replacement) for example, mask, replacement in zip(examples, masks, texts)]


def _view(example: Example, mask: np.ndarray, replacement: dict[int, str | None]) -> View:
    segments = replaced_segments(example, replacement)
    positions = tuple(i for i in range(len(example.words)) if not (mask[i] and replacement[i] is None))

    def subset(rationale: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(rationale[i] for i in positions)

    seen = replace(
        example,
        segments=segments,
        rationales=tuple(subset(r) for r in example.rationales),
        rationale=None if example.rationale is None else subset(example.rationale),
    )
    shown = tuple(
        (("" if replacement[i] is None else replacement[i]) if mask[i] else None) for i in range(len(example.words))
    )
    return View(example, tuple(bool(b) for b in mask), seen, positions, shown)
