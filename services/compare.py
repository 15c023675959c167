"""Two models side by side on one example (the heatmap page's second model): cached explanations
of both and each method's rank correlation between them (``engine.compare``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.types import Example, ProgressFn
from engine.compare import MethodAgreement, compare_attributions, label_map
from services import models
from services.explain import HeatmapResult, explain


@dataclass(frozen=True)
class ComparisonResult:
    """The first model's and the second model's explanations, and per method how they agree."""

    first: HeatmapResult
    second: HeatmapResult
    agreements: dict[str, MethodAgreement]


def label_refusal(first_labels: tuple[str, ...], other: str) -> str | None:
    """Why model ``other`` cannot be compared with a model of ``first_labels`` (another set of
    classes, or a model that cannot be loaded), read from its config where it can be; None when
    it can be compared."""
    try:
        label_map(first_labels, models.label_names(other))
    except ValueError as error:
        return str(error)
    return None


def compare(
    first: HeatmapResult,
    other: str,
    example: Example,
    method_keys: list[str],
    *,
    params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = models.DEFAULT_MLM,
    progress: ProgressFn | None = None,
    windows: bool = False,
) -> ComparisonResult:
    """Explain ``example`` with model ``other`` (a name ``services.models.loaded`` accepts, e.g.
    a randomized copy) for the class ``first`` explains, and compare the two rows of every
    method; ``windows`` as ``first`` was explained (a long text whole, in sliding windows).
    ``ValueError`` when the label sets cannot be matched or the model cannot be used."""
    names = models.label_names(other)  # from the config: another label set is refused before loading
    target = label_map(first.prediction.label_names, names)[first.target]
    second = explain(
        other, example, method_keys, target=target, params=params, mlm_name=mlm_name, progress=progress, windows=windows
    )
    return ComparisonResult(first, second, compare_attributions(first.attributions, second.attributions))
