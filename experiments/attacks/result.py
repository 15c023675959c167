"""The record of one attack and the measures of the thesis "Assessing the Interpretability of Large
Language Models" (Oxford MSc, 2022, section 2.3), after Ghorbani et al. 2019, "Interpretation of
neural networks is fragile" (arXiv:1710.10547).

**Rank Change**, the share of the k top positions whose word differs (order-sensitive, as in
the thesis's worked example: [12, 3, 7] against [3, 15, 7] gives 2/3); **Top-k Sum Change**,
``sum_{i in topk(a_x)} a_{x,i} - a_{x+delta,i}`` (raw, so not comparable across methods);
**Probability Change**, ``p(x) - p(x + delta)``. We add Spearman's rho between the two
explanations and ``success``: the predicted class is kept and at least one top-k position changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.heads import Head
from core.types import Attribution, Example
from metrics.agreement import spearman, top_k
from metrics.base import mean_interval

MEASURES = ("rank_change", "topk_sum_change", "probability_change", "spearman", "success")
# Each averaged measure's own range, which its interval is cut to (None: unbounded; the
# probability change is an output change under a regression head).
_MEASURE_BOUNDS: dict[str, tuple[float, float] | None] = {
    "rank_change": (0.0, 1.0),
    "topk_sum_change": None,
    "probability_change": None,
    "spearman": (-1.0, 1.0),
}


def k_for(n_words: int, fraction: float) -> int:
    """The thesis's k: ``fraction`` of the words rounded down, at least 1 (at most n_words)."""
    if n_words < 1:
        raise ValueError(f"an attack needs at least one word, got {n_words}")
    return min(n_words, max(1, int(np.floor(fraction * n_words + 1e-9))))


def rank_change(original, attacked, k: int) -> float:
    """Share of the k top positions (by signed score) holding another word after the attack."""
    before, after = top_k(original, k), top_k(attacked, k)
    return float(np.mean(before != after))


def topk_sum_change(original, attacked, k: int) -> float:
    """Drop of the summed scores at the original top-k words (raw, method-dependent scale)."""
    top = top_k(original, k)
    return float(np.sum(np.asarray(original, dtype=np.float64)[top] - np.asarray(attacked, dtype=np.float64)[top]))


@dataclass(frozen=True)
class AttackResult:
    """One attack on one method's explanation of one example.

    ``attacked.words`` are the attacked text's words: the substituted words, or for the embedding
    attack each perturbed word's nearest vocabulary word(s); ``changed`` marks the words that
    differ from the original. ``delta`` is the embedding perturbation, (seq, dim), over the
    tokens of ``clf.encode(example)`` (None for the substitution attack).
    """

    attack: str
    method: str
    example: Example  # as attacked (cut to the model's maximum length)
    k: int
    original: Attribution
    attacked: Attribution
    changed: tuple[bool, ...]
    original_probabilities: tuple[float, ...]
    attacked_probabilities: tuple[float, ...]
    params: dict[str, Any]
    runtime_s: float = 0.0
    forward_passes: int = 0
    backward_passes: int = 0
    mlm_forward_passes: int = 0
    steps: int = 0
    trace: dict[str, tuple[float, ...]] = field(default_factory=dict)
    head: str = "single_label"  # core.heads: what the probabilities are and what keeping the prediction means
    substitutions: tuple[tuple[int, str, str], ...] = ()
    delta: np.ndarray | None = None

    @property
    def target(self) -> int:
        return self.original.target

    @property
    def top_k(self) -> tuple[int, ...]:
        return tuple(int(i) for i in top_k(self.original.scores, self.k))

    @property
    def attacked_predicted(self) -> int:
        return int(np.argmax(self.attacked_probabilities))

    @property
    def rank_change(self) -> float:
        return rank_change(self.original.scores, self.attacked.scores, self.k)

    @property
    def topk_sum_change(self) -> float:
        return topk_sum_change(self.original.scores, self.attacked.scores, self.k)

    @property
    def probability_change(self) -> float:
        return self.original_probabilities[self.target] - self.attacked_probabilities[self.target]

    @property
    def spearman(self) -> float:
        return spearman(self.original.scores, self.attacked.scores)

    @property
    def success(self) -> bool:
        return self.prediction_kept and self.rank_change > 0

    @property
    def prediction_kept(self) -> bool:
        """The same class, the same label set (multi-label) or a score within
        ``SCORE_TOLERANCE``."""
        head = Head(self.head, ())
        return head.kept(np.asarray(self.original_probabilities), np.asarray(self.attacked_probabilities), self.target)

    def measures(self) -> dict[str, Any]:
        rho = self.spearman
        return {
            "rank_change": self.rank_change,
            "topk_sum_change": self.topk_sum_change,
            "probability_change": self.probability_change,
            "spearman": None if np.isnan(rho) else rho,
            "success": self.success,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "method": self.method,
            **self.measures(),
            "k": self.k,
            "top_k": list(self.top_k),
            "target": self.target,
            "original_probability": self.original_probabilities[self.target],
            "attacked_probability": self.attacked_probabilities[self.target],
            "attacked_predicted": self.attacked_predicted,
            "original_words": list(self.original.words),
            "original_scores": [float(s) for s in self.original.scores],
            "attacked_words": list(self.attacked.words),
            "attacked_scores": [float(s) for s in self.attacked.scores],
            "changed": list(self.changed),
            "substitutions": [list(s) for s in self.substitutions],
            "steps": self.steps,
            "runtime_s": self.runtime_s,
            "forward_passes": self.forward_passes,
            "backward_passes": self.backward_passes,
            "mlm_forward_passes": self.mlm_forward_passes,
            "params": self.params,
            # The embedding perturbation, one row per token of the model's encoding of
            # ``original_words`` (special tokens included, their rows zero), so the attacked
            # explanation can be recomputed outside this tool.
            "delta": None if self.delta is None else self.delta.astype(float).tolist(),
        }


def summarize(results: Sequence[dict[str, AttackResult]]) -> dict[str, dict[str, Any]]:
    """Per method over examples: each measure's mean and 95% interval, the success rate, the cost,
    and ``fragility_rank`` (1 = the method whose ranking the attack changed most)."""
    methods = list(dict.fromkeys(m for per_example in results for m in per_example))
    summary: dict[str, dict[str, Any]] = {}
    for method in methods:
        runs = [per_example[method] for per_example in results if method in per_example]
        row: dict[str, Any] = {"n": len(runs)}
        for measure, bounds in _MEASURE_BOUNDS.items():
            mean, low, high, _ = mean_interval([getattr(r, measure) for r in runs], bounds=bounds)
            row[measure] = {"mean": _finite(mean), "low": _finite(low), "high": _finite(high)}
        row["abs_probability_change"] = float(np.mean([abs(r.probability_change) for r in runs]))
        row["success_rate"] = float(np.mean([r.success for r in runs]))
        row["runtime_s"] = float(sum(r.runtime_s for r in runs))
        row["forward_passes"] = int(sum(r.forward_passes for r in runs))
        summary[method] = row
    ranked = sorted(methods, key=lambda m: -(summary[m]["rank_change"]["mean"] or 0.0))
    for position, method in enumerate(ranked, start=1):
        summary[method]["fragility_rank"] = position
    return summary


def _finite(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)
