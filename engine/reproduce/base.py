"""What every reproduction shares: the registry entry, its rows and findings, the models it loads
and the code version that keys a stored result (results are kept in the run store:
``engine.reproduce.stored``).

A ``Reproduction`` names one table of one paper, copies the published values with the table's
caption conventions, states the settings, computes ours through the engine (``compute``) and says
whether the paper's finding holds here (``check``). ``compute`` returns ``Row`` records: the row
label, the published value and ours as the mean, 95% t interval and n over the examples
(``metrics.base.Summary``, the project's one interval record), and the per-example values behind
it, so that a check compares two methods example by example (``compare``: the 95% t interval of
the paired differences) and says "undecided" where that interval contains 0 (``decide``).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the metrics are imported where rows are computed: `reproduce --list` needs none
    from core.classifier import Classifier
    from core.masked_lm import MaskedLM
    from core.types import ProgressFn
    from engine.resources import Resources as MethodResources
    from metrics.base import Summary

MLM = "minilm-mlm"
# The packages whose code decides a result: a change to any of their files is a new code version.
_CODE_PACKAGES = ("core", "explainers", "metrics", "experiments", "engine")


# The ranges of the values a row averages, which its interval is cut to (``Summary.of``'s bounds).
SHARE = (0.0, 1.0)
PERCENT = (0.0, 100.0)


@dataclass(frozen=True)
class Row:
    """One cell of a reproduced table: ``key`` (dataset, metric, method, ...) is what the finding
    check reads; ``mean``/``low``/``high`` are None where no example could be scored; ``values``
    holds one value per example of the slice, in its order (None where not scored; empty in
    results stored before values were kept)."""

    label: str
    key: tuple[str, ...]
    published: float | None
    mean: float | None
    low: float | None
    high: float | None
    n: int
    values: tuple[float | None, ...] = ()

    @classmethod
    def of(
        cls,
        label: str,
        key: Sequence[str],
        published: float | None,
        summary: Summary,
        scale: float = 1.0,
        values: Sequence[float | None] = (),
    ) -> Row:
        def finite(value: float | None) -> float | None:
            return float(value) * scale if value is not None and math.isfinite(value) else None

        mean, low, high = finite(summary.mean), finite(summary.low), finite(summary.high)
        return cls(label, tuple(key), published, mean, low, high, summary.n, tuple(map(finite, values)))

    @classmethod
    def scored(
        cls,
        label: str,
        key: Sequence[str],
        published: float | None,
        values: Sequence[float | None],
        bounds: tuple[float, float] | None = None,
        scale: float = 1.0,
    ) -> Row:
        """The row of per-example ``values`` (None where not scored), summarised by
        ``Summary.of``."""
        from metrics.base import Summary

        return cls.of(label, key, published, Summary.of(values, bounds=bounds), scale, values)


@dataclass(frozen=True)
class Finding:
    """Whether the paper's finding holds on our rows (None: undecided, the paired intervals
    contain 0), and why (one sentence)."""

    holds: bool | None
    reason: str


@dataclass(frozen=True)
class Comparison:
    """Row ``a`` minus row ``b`` example by example: the mean and 95% t interval of the paired
    differences (``metrics.base.mean_interval``) over the ``n`` examples both scored; ``better``
    is "a", "b" or None (undecided: the interval contains 0, or fewer than two pairs)."""

    where: str  # what is compared, as the reason names it ("SST-2 Deletion")
    a: str
    b: str
    mean: float | None
    low: float | None
    high: float | None
    n: int
    better: str | None

    def text(self) -> str:
        if self.mean is None or self.low is None or self.high is None:
            return f"{self.where}: {self.a} vs {self.b}, fewer than 2 examples scored by both"
        winner = {"a": f"{self.a} better", "b": f"{self.b} better"}.get(self.better or "", "undecided")
        return (
            f"{self.where}: {self.a} minus {self.b} {self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}],"
            f" n={self.n} ({winner})"
        )


def paired(a: Sequence[float | None], b: Sequence[float | None]) -> tuple[float, float, float, int] | None:
    """Mean, 95% t interval and n of ``a[i] - b[i]`` over the examples where both are finite; None
    with fewer than two such examples or values of different slices."""
    from metrics.base import mean_interval

    if len(a) != len(b):
        return None
    diffs = [x - y for x, y in zip(a, b, strict=True) if _finite(x) and _finite(y)]  # type: ignore[operator]
    return mean_interval(diffs) if len(diffs) >= 2 else None


def compare(rows: Sequence[Row], a: Sequence[str], b: Sequence[str], lower: bool, where: str = "") -> Comparison:
    """Row ``a`` against row ``b`` (by key, of the same length; each named by the first key part
    where they differ) on the same examples, ``lower`` when a lower value is better; undecided when
    a row is missing or has no per-example values."""
    found = {row.key: row for row in rows}
    row_a, row_b = found.get(tuple(a)), found.get(tuple(b))
    apart = next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), len(a) - 1)  # the names
    where = where or " ".join(part for i, part in enumerate(a) if i != apart)
    result = paired(row_a.values, row_b.values) if row_a is not None and row_b is not None else None
    if result is None:
        return Comparison(where, a[apart], b[apart], None, None, None, 0, None)
    mean, low, high, n = result
    better = None
    if low > 0 or high < 0:
        better = "a" if (high < 0) == lower else "b"
    return Comparison(where, a[apart], b[apart], mean, low, high, n, better)


def decide(comparisons: Sequence[Comparison], holds: str, fails: str) -> Finding:
    """The finding of comparisons whose ``a`` the paper says is better: it holds when every one
    says so (its interval excludes 0), does not hold when one says the opposite, and is undecided
    otherwise; the reason names the comparisons that decided it, with their intervals."""
    against = [c for c in comparisons if c.better == "b"]
    open_ = [c for c in comparisons if c.better is None]
    if against:
        return Finding(False, f"{fails} ({'; '.join(c.text() for c in against)})")
    if not comparisons:
        return Finding(None, "undecided: no rows to compare")
    if open_:
        return Finding(
            None,
            f"undecided: {len(open_)} of {len(comparisons)} paired differences have a 95% interval that contains 0"
            f" or too few examples ({'; '.join(c.text() for c in open_)})",
        )
    return Finding(True, f"{holds} ({'; '.join(c.text() for c in comparisons)})")


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


@dataclass(frozen=True)
class Paper:
    authors: str
    year: int
    title: str
    arxiv: str | None  # None where our notes carry no arXiv id

    def cite(self) -> str:
        where = f", arXiv {self.arxiv}" if self.arxiv else ""
        return f"{self.authors} {self.year}{where}"


@dataclass(frozen=True)
class Reproduction:
    """A registry entry. ``compute(resources, limit, progress)`` returns the rows;
    ``check(rows)`` the finding. ``default_limit`` is the slice (first N examples of each split
    in ``settings``) that runs in under 15 minutes on 2 CPU cores."""

    name: str
    paper: Paper
    table: str
    claim: str
    published: dict[Any, Any]  # the table's printed values, as copied from the research notes
    published_note: str  # the table's caption conventions (units, direction, model)
    settings: dict[str, Any]
    default_limit: int
    compute: Callable[[Resources, int, ProgressFn | None], list[Row]]
    check: Callable[[Sequence[Row]], Finding]
    differences: tuple[str, ...]  # why our numbers may differ from the paper's
    min_limit: int = 2  # the smallest slice it computes (two examples for an interval, or more)


@dataclass
class Resources:
    """The classifiers and the masked LM a run loads, once each (read-only, shared by its rows),
    and the methods' own resources (AML's pre-trained models, ``engine.resources``)."""

    batch_size: int = 64
    results: str | os.PathLike | None = None  # the results folder AML's pre-trained models are kept in
    _classifiers: dict[str, Classifier] = field(default_factory=dict)
    _mlm: MaskedLM | None = None
    _methods: MethodResources | None = None

    def methods(self) -> MethodResources:
        """The pre-trained models of the methods that train (AML's, kept in the results folder)."""
        if self._methods is None:
            from engine.resources import Resources as MethodResources

            self._methods = MethodResources.saved(None if self.results is None else Path(self.results))
        return self._methods

    def classifier(self, name: str) -> Classifier:
        from core.classifier import Classifier
        from core.loaded import load_classifier

        if name not in self._classifiers:
            self._classifiers[name] = Classifier(load_classifier(name), batch_size=self.batch_size)
        return self._classifiers[name]

    def mlm(self) -> MaskedLM:
        from core.masked_lm import MaskedLM

        if self._mlm is None:
            self._mlm = MaskedLM.load(MLM)
        return self._mlm

    def loaded(self) -> list[str]:
        """The names of the classifiers and the masked LM loaded so far."""
        return [*self._classifiers, *([MLM] if self._mlm is not None else [])]


def examples(dataset: str, split: str, limit: int):
    """The first ``limit`` examples of a split; at least two, so that an interval exists."""
    from core.datasets import load_examples

    check_limit(limit)
    return load_examples(dataset, split, limit=limit, exact=True)  # past the split's end: refused, not cut


def check_limit(limit: int, reproduction: Reproduction | None = None) -> None:
    """A slice needs two examples or more for a 95% interval, and some reproductions more."""
    if limit < 2:
        raise ValueError(f"--limit {limit} is too small for a 95% interval: give 2 or more")
    if reproduction is not None and limit < reproduction.min_limit:
        raise ValueError(f"--limit {limit} is too small for {reproduction.name}: give {reproduction.min_limit} or more")


def scaled_progress(progress: ProgressFn | None, start: float, width: float) -> ProgressFn | None:
    """``progress`` for one part of a run: its fractions 0..1 reported as ``start`` ..
    ``start + width``."""
    if progress is None:
        return None
    return lambda fraction, message: progress(start + width * fraction, message)


def value(rows: Sequence[Row], *key: str) -> float | None:
    """The mean of the row whose key is ``key`` (None when absent or not scored)."""
    for row in rows:
        if row.key == tuple(key):
            return row.mean
    return None


# --------------------------------------------------------------------------- code version and rows


def code_version() -> str:
    """A hash of every source file of the packages that compute a result (12 hex digits)."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for package in _CODE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def row_json(row: Row) -> dict[str, Any]:
    out = asdict(row)
    out["key"] = list(row.key)
    out["values"] = list(row.values)
    return out
