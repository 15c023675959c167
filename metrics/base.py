"""What every metric shares: the result record, the registry entry type and confidence intervals."""

from __future__ import annotations

import math
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


@dataclass(frozen=True, kw_only=True)
class MetricSpec:
    """A registry entry, written with keyword arguments.

    ``function(clf, example, attribution, params, *, mlm=None) -> MetricResult`` is the metric;
    call it through ``compute``, which checks the contract: a classifier is given when
    ``needs_classifier``, and the value lies in ``value_range`` (when declared) or is NaN with a
    reason in ``extras["skipped"]``. ``higher_is_better`` gives the direction shown in tables,
    ``label`` the column name; ``in_table`` is False for a diagnostic the family's table leaves out;
    ``thresholded`` marks the metrics computed on the map binarized at tau.
    """

    key: str
    function: Callable[..., MetricResult]
    params_cls: type
    description: str
    label: str
    family: str
    paper: str
    higher_is_better: bool
    value_range: tuple[float, float] | None = None
    needs_classifier: bool = True
    needs_rationale: bool = False
    in_table: bool = True
    thresholded: bool = False  # binarizes the map at its ``threshold`` parameter (tau)

    def __post_init__(self) -> None:
        if self.value_range is not None and not self.value_range[0] < self.value_range[1]:
            raise ValueError(f"{self.key}: value_range {self.value_range} is empty")

    def compute(self, clf: Any, example: Any, attribution: Any, params: Any = None, *, mlm: Any = None) -> MetricResult:
        """The metric's result for one explanation, checked against the spec (see the class)."""
        if self.needs_classifier and clf is None:
            raise ValueError(f"metric {self.key} needs a classifier")
        params = params if params is not None else self.params_cls()
        return self.checked(self.function(clf, example, attribution, params, mlm=mlm))

    def checked(self, result: MetricResult, bounded: bool = True) -> MetricResult:
        """``result`` unchanged, or a ValueError naming the value that breaks the contract
        (``bounded=False``: no range check, for a regression head's unbounded score)."""
        value = result.value
        if np.isnan(value):
            if not result.extras.get("skipped"):
                raise ValueError(f"metric {self.key} returned NaN without a reason in extras['skipped']")
        elif self.value_range is not None and bounded:
            low, high = self.value_range
            if not low - _RANGE_TOLERANCE <= value <= high + _RANGE_TOLERANCE:
                raise ValueError(f"metric {self.key} returned {value!r}, outside its range [{low}, {high}]")
        return result


_RANGE_TOLERANCE = 1e-9  # rounding of sums of probabilities


@dataclass(frozen=True)
class Summary:
    """Mean and 95% interval of a metric over the examples it scored; ``skipped`` counts the
    examples it left out (no rationale, a failed method). The one interval record of the project."""

    mean: float
    low: float
    high: float
    n: int
    skipped: int = 0

    def text(self, digits: int = 3) -> str:
        """``mean [low, high]`` as tables print it, the mean alone with no interval
        (``interval_text``)."""
        return interval_text(self.mean, self.low, self.high, self.n, digits)

    @classmethod
    def of(cls, values: Sequence[float | None], skipped: int = 0, bounds: tuple[float, float] | None = None) -> Summary:
        """``values`` summarised with ``mean_interval`` (None and non-finite values left out)."""
        return cls(*mean_interval(values, bounds=bounds), skipped)


def interval_text(
    mean: float | None, low: float | None, high: float | None, n: int, digits: int = 3, show_n: bool = False
) -> str:
    """A mean and its interval as tables print them: ``0.512 [0.430, 0.594]``, the mean alone
    where there is no interval (one value, or IOU-F1's figure), "—" where nothing was scored;
    ``show_n`` adds `` n=N``."""
    if not n or mean is None or not math.isfinite(mean):
        return "—"
    text = f"{mean:.{digits}f}"
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        text += f" [{low:.{digits}f}, {high:.{digits}f}]"
    return text + (f" n={n}" if show_n else "")


def lie_within(values: np.ndarray, bounds: tuple[float, float]) -> bool:
    """Whether every one of ``values`` (not empty) lies in ``bounds``, rounding aside."""
    return bool(bounds[0] - _RANGE_TOLERANCE <= values.min() and values.max() <= bounds[1] + _RANGE_TOLERANCE)


def mean_interval(
    values: Sequence[float | None], confidence: float = 0.95, bounds: tuple[float, float] | None = None
) -> tuple[float, float, float, int]:
    """Mean and the normal-approximation 95% interval (t quantile for small n) of finite values;
    with ``bounds`` (the values' own range, such as a metric's ``value_range``) the interval is
    cut to it, since the mean of values in a range lies in it too. Values outside ``bounds`` (a
    regression head's unbounded score under a probability metric) leave the interval uncut. One
    value has no interval (NaN): a t interval needs two."""
    from scipy import stats

    data = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=np.float64)
    n = len(data)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    mean = float(data.mean())
    if n == 1:
        return mean, float("nan"), float("nan"), 1
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * data.std(ddof=1) / np.sqrt(n))
    low, high = mean - half, mean + half
    if bounds is not None and lie_within(data, bounds):
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return mean, low, high, n
