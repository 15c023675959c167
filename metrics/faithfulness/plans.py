"""The faithfulness metrics' parameters and, for each metric, its plan: the variants of one example
it needs scored and how their probabilities of the explained class become its result (deletion and
insertion curves, Arras et al. 2017 and Pham et al. 2022; ERASER's comprehensiveness and sufficiency
bins, DeYoung et al. 2020, and MaRC's, Brinner & Zarrieß 2023; log-odds, Shrikumar et al. 2017 as
AML uses it, Barkan et al. 2024). Definitions in ``metrics.faithfulness``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.encoding import Variant
from core.heads import Head
from core.params import param
from metrics.base import MetricResult
from metrics.faithfulness.removal import FILL_CANDIDATES, REMOVALS, Context, pham2022_steps, word_count

BIN_SETS: dict[str, tuple[float, ...]] = {
    "eraser": (0.01, 0.05, 0.10, 0.20, 0.50),
    "marc": tuple(round(0.05 * i, 2) for i in range(1, 20)),
}
CONVENTIONS = ("ours", "pham2022")
PHAM2022_FILL_CANDIDATES = 2
PROBABILITY_ONLY = ("log_odds",)  # metrics defined on probabilities only
_REMOVAL_HELP = "how a word is removed: deleted, one [MASK] / [UNK] / [PAD] token, or a masked-LM fill-in (mlm)"


@dataclass(frozen=True)
class CurveParams:
    removal: str = param("delete", _REMOVAL_HELP, choices=REMOVALS)
    fraction: float = param(0.2, "share of the words removed or inserted; 1.0 draws the full curve", min=0.01, max=1.0)
    convention: str = param(
        "ours",
        "ours: ceil(fraction n) steps from the unperturbed input, x = 0..1; pham2022: max(2, ceil((n - 1) fraction))"
        " steps, unperturbed input off the curve, x = 1/L..1, masked-LM fill-in from the top 2 (Pham et al.'s code)",
        choices=CONVENTIONS,
    )
    correct_only: bool = param(False, "skip examples the model predicts wrongly (Pham et al.'s optional filter)")


@dataclass(frozen=True)
class BinParams:
    removal: str = param("delete", _REMOVAL_HELP, choices=REMOVALS)
    bins: str = param(
        "eraser", "eraser: AOPC over {1, 5, 10, 20, 50}%; marc: mean over 5%, 10%, ..., 95%", choices=tuple(BIN_SETS)
    )
    normalization: str = param(
        "bins",
        "divide the summed drops by |B| (the papers' formula) or by |B| + 1 (the ERASER and AML code)",
        choices=("bins", "bins_plus_one"),
    )


@dataclass(frozen=True)
class LogOddsParams:
    removal: str = param("mask", _REMOVAL_HELP, choices=REMOVALS)
    fraction: float = param(0.2, "share of the top words replaced", min=0.01, max=1.0)


@dataclass(frozen=True)
class Plan:
    """The variants one metric needs and how to turn their target probabilities into a result."""

    variants: list[Variant]
    finish: Callable[[np.ndarray], MetricResult]


def _curve_plan(ctx: Context, params: CurveParams, insertion: bool) -> Plan:
    paper = params.convention == "pham2022"
    if paper and params.correct_only and ctx.example.label is not None and ctx.predicted() != ctx.example.label:
        return Plan([], lambda probs: MetricResult(float("nan"), extras={"skipped": "predicted wrongly"}))
    steps = pham2022_steps(params.fraction, ctx.n_words) if paper else word_count(params.fraction, ctx.n_words)
    if paper and steps < 2:  # one point, with the unperturbed input off the curve: an area of 0
        return Plan([], lambda probs: MetricResult(float("nan"), extras={"skipped": "one word: no curve of two steps"}))
    first = 1 if paper else 0  # Pham et al. 2022 leave the unperturbed input off the curve
    order = ctx.descending
    remover = ctx.remover(params.removal, PHAM2022_FILL_CANDIDATES if paper else FILL_CANDIDATES)
    removed_sets = [order[j:] if insertion else order[:j] for j in range(first, steps + 1)]
    built = [remover.apply(order, removed) for removed in removed_sets]

    def finish(probs: np.ndarray) -> MetricResult:
        # probs[0] is the original input, probs[1:] the curve.
        curve = probs[1:]
        x = np.arange(first, steps + 1) / steps
        extras = {
            "removal": params.removal,
            "convention": params.convention,
            "n_steps": steps,
            "order": list(order[:steps]),
            "inputs": [text for _, text in built],
            "fraction_removed": [len(r) / ctx.n_words for r in removed_sets],
            "original_probability": float(probs[0]),
        }
        return MetricResult(float(np.trapezoid(curve, x)), tuple(zip(x.tolist(), curve.tolist())), extras)

    return Plan([ctx.encoded.variant] + [variant for variant, _ in built], finish)


def _deletion_plan(ctx: Context, params: CurveParams) -> Plan:
    return _curve_plan(ctx, params, insertion=False)


def _insertion_plan(ctx: Context, params: CurveParams) -> Plan:
    return _curve_plan(ctx, params, insertion=True)


# --------------------------------------------------------------------------- bins


def _bins_plan(ctx: Context, params: BinParams, keep: bool) -> Plan:
    fractions = BIN_SETS[params.bins]
    counts = [word_count(b, ctx.n_words) for b in fractions]
    remover = ctx.remover(params.removal)
    if keep:
        removed_sets = [ctx.ascending[: ctx.n_words - k] for k in counts]
        built = [remover.apply(ctx.ascending, removed) for removed in removed_sets]
    else:
        removed_sets = [ctx.descending[:k] for k in counts]
        built = [remover.apply(ctx.descending, removed) for removed in removed_sets]
    variants = [ctx.encoded.variant] + [variant for variant, _ in built]

    def finish(probs: np.ndarray) -> MetricResult:
        drops = probs[0] - probs[1:]
        extras = {
            "removal": params.removal,
            "bins": params.bins,
            "counts": counts,
            "inputs": [text for _, text in built],
            "probabilities": probs[1:].tolist(),
            "original_probability": float(probs[0]),
        }
        divisor = len(drops) + (1 if params.normalization == "bins_plus_one" else 0)
        return MetricResult(float(drops.sum() / divisor), tuple(zip(fractions, drops.tolist())), extras)

    return Plan(variants, finish)


def _comprehensiveness_plan(ctx: Context, params: BinParams) -> Plan:
    return _bins_plan(ctx, params, keep=False)


def _sufficiency_plan(ctx: Context, params: BinParams) -> Plan:
    return _bins_plan(ctx, params, keep=True)


def _log_odds_plan(ctx: Context, params: LogOddsParams) -> Plan:
    check_head(ctx.clf.head, ["log_odds"])
    count = word_count(params.fraction, ctx.n_words)
    variant, text = ctx.remover(params.removal).apply(ctx.descending, ctx.descending[:count])

    def finish(probs: np.ndarray) -> MetricResult:
        logs = np.log(np.clip(probs, 1e-12, 1.0))
        extras = {"removal": params.removal, "count": count, "inputs": [text], "probabilities": probs.tolist()}
        return MetricResult(float(logs[1] - logs[0]), (), extras)

    return Plan([ctx.encoded.variant, variant], finish)


PLANNERS: dict[str, Callable[[Context, Any], Plan]] = {
    "deletion": _deletion_plan,
    "insertion": _insertion_plan,
    "comprehensiveness": _comprehensiveness_plan,
    "sufficiency": _sufficiency_plan,
    "log_odds": _log_odds_plan,
}


@dataclass(frozen=True)
class PlanCost:
    """What one metric's plan costs on one attribution, for estimates before a run: the inputs the
    classifier scores (the unperturbed one included; at most, since shared inputs are scored once)
    and, with ``removal="mlm"``, the masked-LM passes of its fill-in chain (one per word filled)."""

    inputs: int
    fills: int = 0


def plan_cost(key: str, n_words: int, params: Any) -> PlanCost:
    """``PlanCost`` of ``PLANNERS[key]`` on a text of ``n_words`` words, counted as the plan builds
    its variants (a curve skipped for a wrong prediction counts as drawn)."""
    if key in ("deletion", "insertion"):
        paper = params.convention == "pham2022"
        steps = pham2022_steps(params.fraction, n_words) if paper else word_count(params.fraction, n_words)
        inputs = 1 + steps + 1 - (1 if paper else 0)
        filled = n_words if key == "insertion" else steps  # insertion's first input has every word filled
    elif key in ("comprehensiveness", "sufficiency"):
        counts = [word_count(b, n_words) for b in BIN_SETS[params.bins]]
        inputs = 1 + len(counts)
        filled = max(counts) if key == "comprehensiveness" else n_words - min(counts)
    elif key == "log_odds":
        inputs, filled = 2, word_count(params.fraction, n_words)
    else:
        raise ValueError(f"no cost model for metric {key!r}")
    return PlanCost(inputs, filled if params.removal == "mlm" else 0)


def check_head(head: Head, keys: Sequence[str]) -> None:
    """Refuse, before any work, a metric the head's explained output does not allow."""
    for key in keys:
        if key in PROBABILITY_ONLY:
            head.require_probability(f"the {key} metric")
