"""The maths of ROAR results: curves over seeds, Pham et al.'s t-test, Madsen et al.'s Eq. 3 and
class leakage.

A job's results are ``UnitResult`` rows, one per (method, level, seed) unit: the retrained
model's accuracy and macro-F1 on the equally-masked evaluation set. The 0% and 100% models do
not depend on the method (nothing or everything is removed); their rows carry the method
``SHARED`` and count for every method's curve.

* **Curves** (``curves``): per method and level, the mean over seeds, the standard deviation
  (ddof 1, as Pham et al.'s "mean +- std" of 5 models) and the 95% interval
  (``metrics.base.mean_interval``, the project's one interval helper: t quantile, n - 1 degrees
  of freedom, cut to [0, 1]; one seed has none).
* **t-test** (``t_test``), Pham et al. 2022 (arXiv:2110.11929), Table 2: a
  two-sample t-test between two methods' per-seed accuracies at one level. The paper does not
  name the variant; Welch's unequal-variance test (``scipy.stats.ttest_ind(equal_var=False)``,
  two-sided) reproduces the printed p-values from the printed means and standard deviations
  (0.0369 for 0.0370 at ROAR 10%, 0.6313 for 0.6312 at ROAR_BERT 20%; Student's test gives
  0.0328 and 0.6262), so it is the one used.
* **Faithfulness** (``faithfulness``), Madsen et al. 2022 (arXiv:2110.08412), Eq. 3, in %: with
  ``x_i`` the levels, ``p_i`` the method's performance, ``b_i`` the random baseline's and ``b_I``
  the performance at 100% removed,
  ``100 * sum_i 1/2 dx_i (dp_i + dp_{i+1}) / sum_i 1/2 dx_i (db_i + db_{i+1})`` with
  ``dx_i = x_{i+1} - x_i``, ``dp_i = b_i - p_i`` and ``db_i = b_i - b_I``: the trapezoidal area
  between the random curve and the method's, over the area between the random curve and the floor
  reached at once. 0 = no better than random, negative = above random ("not faithful"), 100 = the
  floor at once. It is computed per seed (the method, random and 100% models of seed ``s``) and
  summarised over seeds. Over Madsen et al.'s levels 0..100% it is the paper's Eq. 3; over fewer
  levels (Pham et al.'s 0, 10, 20, 30%) it is the same ratio over the measured range. It is NaN
  where the random curve lies on the floor (no area to normalise by).
* **Class leakage** (``leakage``), Madsen et al. 2022, Appendix A: explanations of the gold label
  can leak it, and the curve then *rises* as more words are removed. Rule: a method's curve is
  flagged between two consecutive levels where its mean over seeds rises (any rise, as the paper
  asks to flag "any increase"); the flag is ``significant`` when the rise clears both 95% intervals
  (the lower end at the later level is above the upper end at the earlier one). The random baseline
  is checked like any method (a rise there is noise or a dataset bias).
* **Sparsity** (``sparsity``), Madsen et al. 2022, Appendix E (Figs. 5 and 6): the share of an
  example's total importance held by its top-k words (k up to 10) or top-x% of words, averaged
  over examples. Importance is the absolute score (Madsen et al.'s measures are magnitudes); the
  words in the top x% are counted with the job's rounding rule; an example whose scores are all
  zero has no share and is skipped.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from experiments.roar.removal import Level, n_to_remove
from metrics.base import Summary, mean_interval

SHARED = "*"  # method of the 0% and 100% units, shared by every method
RANDOM = "random"  # the random baseline's method key (explainers' seeded random ranking)
METRICS = ("accuracy", "macro_f1")


@dataclass(frozen=True)
class UnitResult:
    """One retrained model's performance on the equally-masked evaluation set."""

    method: str
    level: Level
    seed: int
    accuracy: float
    macro_f1: float


@dataclass(frozen=True)
class Cell:
    """One point of a curve: a method's performance at a level over seeds (``values`` by seed)."""

    method: str
    level: Level
    mean: float
    std: float
    low: float
    high: float
    n: int
    values: tuple[float, ...]


@dataclass(frozen=True)
class TTest:
    level: Level
    statistic: float
    p_value: float
    n_a: int
    n_b: int


@dataclass(frozen=True)
class Leak:
    method: str
    start: Level
    end: Level
    rise: float
    significant: bool


def performance(gold: Sequence[int], predicted: Sequence[int], n_classes: int) -> tuple[float, float]:
    """Accuracy and macro-F1 (every one of ``n_classes`` counts; a class never predicted scores
    0)."""
    from sklearn.metrics import f1_score

    gold, predicted = np.asarray(gold), np.asarray(predicted)
    if gold.shape != predicted.shape or gold.size == 0:
        raise ValueError(f"{predicted.size} predictions for {gold.size} gold labels")
    accuracy = float(np.mean(gold == predicted))
    f1 = f1_score(gold, predicted, labels=list(range(n_classes)), average="macro", zero_division=0)
    return accuracy, float(f1)


def _metric(row: UnitResult, metric: str) -> float:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    return float(getattr(row, metric))


def _table(rows: Iterable[UnitResult], metric: str) -> dict[tuple[str, Level], dict[int, float]]:
    """(method, level) -> {seed: value}; duplicate units are an error."""
    table: dict[tuple[str, Level], dict[int, float]] = {}
    for row in rows:
        cell = table.setdefault((row.method, row.level), {})
        if row.seed in cell:
            raise ValueError(f"two results for method {row.method!r}, level {row.level.label}, seed {row.seed}")
        cell[row.seed] = _metric(row, metric)
    return table


def _values(table, method: str, level: Level) -> dict[int, float]:
    """A method's values at a level by seed; the shared 0% and 100% models count for every
    method."""
    if level.is_zero or level.is_full:
        return table.get((SHARED, level), {}) | table.get((method, level), {})
    return table.get((method, level), {})


def methods_of(rows: Iterable[UnitResult]) -> list[str]:
    """The methods of the results in order of first appearance, the shared units left out."""
    return list(dict.fromkeys(row.method for row in rows if row.method != SHARED))


def curves(
    rows: Sequence[UnitResult], levels: Sequence[Level], metric: str = "accuracy"
) -> dict[str, tuple[Cell, ...]]:
    """Each method's curve over ``levels``: mean, std, 95% interval and the per-seed values."""
    table = _table(rows, metric)
    out = {}
    for method in methods_of(rows):
        cells = []
        for level in levels:
            by_seed = _values(table, method, level)
            values = tuple(by_seed[s] for s in sorted(by_seed))
            mean, low, high, n = mean_interval(values, bounds=(0.0, 1.0))  # accuracy and macro F1 are shares
            std = float(np.std(values, ddof=1)) if n > 1 else float("nan")
            cells.append(Cell(method, level, mean, std, low, high, n, values))
        out[method] = tuple(cells)
    return out


def t_test(rows: Sequence[UnitResult], method_a: str, method_b: str, level: Level, metric: str = "accuracy") -> TTest:
    """Pham et al.'s two-sample t-test (Welch's, two-sided) between two methods at ``level``."""
    from scipy import stats

    table = _table(rows, metric)
    a, b = list(_values(table, method_a, level).values()), list(_values(table, method_b, level).values())
    if len(a) < 2 or len(b) < 2:
        raise ValueError(
            f"the t-test needs at least 2 seeds per method at {level.label}: {method_a!r} has {len(a)}, "
            f"{method_b!r} has {len(b)}"
        )
    result = stats.ttest_ind(a, b, equal_var=False)
    return TTest(level, float(result.statistic), float(result.pvalue), len(a), len(b))


def faithfulness(x: Sequence[float], p: Sequence[float], b: Sequence[float], floor: float) -> float:
    """Madsen et al.'s Eq. 3 in %: area between the random curve ``b`` and the method's ``p`` over
    the area between ``b`` and the ``floor`` (performance at 100% removed), trapezoids over
    ``x``."""
    x, p, b = (np.asarray(v, dtype=np.float64) for v in (x, p, b))
    if not (x.shape == p.shape == b.shape) or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"Eq. 3 needs at least two levels with one value each, got {len(x)}, {len(p)}, {len(b)}")
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"levels must increase, got {x.tolist()}")
    dx = np.diff(x)
    dp = b - p
    db = b - floor
    numerator = float(np.sum(0.5 * dx * (dp[:-1] + dp[1:])))
    denominator = float(np.sum(0.5 * dx * (db[:-1] + db[1:])))
    return 100.0 * numerator / denominator if denominator != 0 else float("nan")


def faithfulness_scores(
    rows: Sequence[UnitResult],
    levels: Sequence[Level],
    metric: str = "accuracy",
    baseline: str = RANDOM,
    x: Sequence[float] | None = None,
) -> dict[str, Summary]:
    """Eq. 3 per seed for every method but the baseline, over ``levels`` (which start at 0%), with
    the floor from the shared 100% model of the same seed; summarised over seeds. A seed with a
    missing unit is left out and counted in ``skipped``. ``x`` are the levels' positions on the
    curve (``Level.x`` by default; token levels that end at 100% need the number of tokens
    there)."""
    if not levels or not levels[0].is_zero:
        raise ValueError(f"Eq. 3 starts at 0% removed, got levels {[level.label for level in levels]}")
    if x is None:
        x = [level.x for level in levels]
    if len(x) != len(levels):
        raise ValueError(f"{len(x)} x values for {len(levels)} levels")
    table = _table(rows, metric)
    floor = _values(table, SHARED, Level(100))
    out = {}
    for method in methods_of(rows):
        if method == baseline:
            continue
        p = [_values(table, method, level) for level in levels]
        b = [_values(table, baseline, level) for level in levels]
        seeds = sorted(set().union(*p, *b, floor))
        complete = [s for s in seeds if s in floor and all(s in v for v in (*p, *b))]
        values = [faithfulness(x, [v[s] for v in p], [v[s] for v in b], floor[s]) for s in complete]
        out[method] = Summary.of(values, skipped=len(seeds) - len(complete))
    return out


def leakage(curve: Sequence[Cell], tolerance: float = 0.0) -> list[Leak]:
    """Where a curve's mean rises by more than ``tolerance`` from one level to the next."""
    leaks = []
    for before, after in itertools.pairwise(curve):
        rise = after.mean - before.mean
        if np.isfinite(rise) and rise > tolerance:
            leaks.append(Leak(after.method, before.level, after.level, float(rise), bool(after.low > before.high)))
    return leaks


def sparsity(
    scores: Sequence[np.ndarray], levels: Sequence[Level], rounding: str = "madsen2022"
) -> dict[Level, Summary]:
    """Madsen et al.'s Appendix E: per level (``k`` tokens or ``x``%), the mean share of the total
    absolute importance held by each example's top words, with its 95% interval."""
    shares: dict[Level, list[float]] = {level: [] for level in levels}
    skipped = 0
    for example_scores in scores:
        magnitude = np.sort(np.abs(np.asarray(example_scores, dtype=np.float64)))[::-1]
        total = magnitude.sum()
        if not total > 0:
            skipped += 1
            continue
        cumulative = np.r_[0.0, np.cumsum(magnitude)] / total
        for level in levels:
            shares[level].append(float(cumulative[n_to_remove(len(magnitude), level, rounding)]))
    return {level: Summary.of(values, skipped) for level, values in shares.items()}
