"""What every metric shares: the result record, the registry entry type and confidence intervals."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class MetricResult:
    """A metric's value for one explanation, with its curve where it has one.

    ``curve`` is a tuple of (x, y) points (e.g. fraction removed, probability); ``extras``
    carries details such as the input at each step or the threshold used.
    """

    value: float
    curve: tuple[tuple[float, float], ...] = ()
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    """A registry entry.

    ``compute(clf, example, attribution, params, *, mlm=None) -> MetricResult``; plausibility
    metrics ignore ``clf``. ``higher_is_better`` gives the direction shown in tables.
    """

    key: str
    compute: Callable[..., MetricResult]
    params_cls: type
    description: str
    higher_is_better: bool
    family: str
    paper: str
    value_range: tuple[float, float] | None = None
    needs_classifier: bool = True
    needs_rationale: bool = False


@dataclass(frozen=True)
class Summary:
    """Mean and 95% interval of a metric over the examples it scored; ``skipped`` counts the
    examples it left out (no rationale, a failed method). The one interval record of the project."""

    mean: float
    low: float
    high: float
    n: int
    skipped: int = 0

    @classmethod
    def of(cls, values: Sequence[float | None], skipped: int = 0) -> Summary:
        """``values`` summarised with ``mean_interval`` (None and non-finite values left out)."""
        return cls(*mean_interval(values), skipped)


def mean_interval(values: Sequence[float | None], confidence: float = 0.95) -> tuple[float, float, float, int]:
    """Mean and the normal-approximation 95% interval (t quantile for small n) of finite values."""
    from scipy import stats

    data = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=np.float64)
    n = len(data)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    mean = float(data.mean())
    if n == 1:
        return mean, mean, mean, 1
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * data.std(ddof=1) / np.sqrt(n))
    return mean, mean - half, mean + half, n
