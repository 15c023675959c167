"""The two records everything else passes around: ``Example`` and ``Attribution``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

# Long work reports progress as (fraction done in [0, 1], message); the one callback shape for
# the engine, the command line's progress bar and the app's st.progress.
ProgressFn = Callable[[float, str], None]


@dataclass(frozen=True)
class Example:
    """One input to explain: one or two segments of words, with optional gold label and rationales.

    ``rationales`` holds one 0/1 mask per annotator over the flat word list (``words``);
    ``rationale`` is the majority mask (or the only one). Both are empty when the data has none.
    """

    segments: tuple[tuple[str, ...], ...]
    label: int | None = None
    label_names: tuple[str, ...] = ()
    rationales: tuple[tuple[int, ...], ...] = ()
    rationale: tuple[int, ...] | None = None
    dataset: str = "text"
    split: str = ""
    id: str = ""

    def __post_init__(self) -> None:
        if not 1 <= len(self.segments) <= 2:
            raise ValueError(f"an example has one or two segments, got {len(self.segments)}")
        n = len(self.words)
        for mask in (*self.rationales, *((self.rationale,) if self.rationale is not None else ())):
            if len(mask) != n:
                raise ValueError(f"rationale mask of length {len(mask)} for {n} words in {self.id!r}")

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(w for segment in self.segments for w in segment)

    @property
    def segment_ids(self) -> tuple[int, ...]:
        return tuple(i for i, segment in enumerate(self.segments) for _ in segment)

    @property
    def is_pair(self) -> bool:
        return len(self.segments) == 2

    @property
    def text(self) -> str:
        return " ".join(self.segments[0])

    @property
    def text_b(self) -> str | None:
        return " ".join(self.segments[1]) if self.is_pair else None

    @property
    def gold_name(self) -> str | None:
        if self.label is None or not self.label_names:
            return None
        return self.label_names[self.label]


@dataclass(frozen=True)
class Attribution:
    """A frozen attribution record: signed, unnormalised word scores for one target class.

    ``subword_scores`` is set where the method is native to subwords (gradients, attention);
    ``extras`` carries method-specific details (convergence delta, fill-in tables, traces).
    """

    method: str
    example_id: str
    target: int
    words: tuple[str, ...]
    scores: np.ndarray  # (n_words,) float32
    params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    subwords: tuple[str, ...] = ()
    subword_scores: np.ndarray | None = None  # (n_subwords,) float32, specials excluded
    subword_word_ids: tuple[int, ...] = ()
    runtime_s: float = 0.0
    forward_passes: int = 0
    backward_passes: int = 0
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        scores = np.asarray(self.scores, dtype=np.float32)
        if scores.shape != (len(self.words),):
            raise ValueError(
                f"{self.method}: {scores.shape[0] if scores.ndim else 0} scores for {len(self.words)} words"
            )
        scores.setflags(write=False)
        object.__setattr__(self, "scores", scores)
        if self.subword_scores is not None:
            sub = np.asarray(self.subword_scores, dtype=np.float32)
            sub.setflags(write=False)
            object.__setattr__(self, "subword_scores", sub)

    def with_cost(self, runtime_s: float, forward_passes: int, backward_passes: int) -> Attribution:
        return replace(self, runtime_s=runtime_s, forward_passes=forward_passes, backward_passes=backward_passes)

    def normalized(self) -> Attribution:
        """A copy scaled so the largest absolute score is 1 (zeros stay zeros)."""
        peak = float(np.max(np.abs(self.scores))) if len(self.scores) else 0.0
        return replace(self, scores=self.scores / peak if peak > 0 else self.scores.copy())

    def to_json(self) -> dict[str, Any]:
        return {
            "scores": [float(s) for s in self.scores],
            "runtime_s": self.runtime_s,
            "forward_passes": self.forward_passes,
            "backward_passes": self.backward_passes,
            "params": self.params,
            "extras": _jsonable(self.extras),
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value
