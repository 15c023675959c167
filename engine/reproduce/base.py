"""What every reproduction shares: the registry entry, its rows and findings, the models it loads
and the on-disk cache of results.

A ``Reproduction`` names one table of one paper, copies the published values with the table's
caption conventions, states the settings, computes ours through the engine (``compute``) and says
whether the paper's finding holds here (``check``). ``compute`` returns ``Row`` records: the row
label, the published value and ours as the mean, 95% t interval and n over the examples
(``metrics.base.Summary``, the project's one interval record).
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metrics.base import Summary

if TYPE_CHECKING:
    from core.classifier import Classifier
    from core.masked_lm import MaskedLM
    from core.types import ProgressFn

RESULTS_ENV = "ATTRIBUTION_RESULTS_DIR"
MLM = "minilm-mlm"
# The packages whose code decides a result: a change to any of their files is a new code version.
_CODE_PACKAGES = ("core", "explainers", "metrics", "experiments", "engine")


@dataclass(frozen=True)
class Row:
    """One cell of a reproduced table: ``key`` (dataset, metric, method, ...) is what the finding
    check reads; ``mean``/``low``/``high`` are None where no example could be scored."""

    label: str
    key: tuple[str, ...]
    published: float | None
    mean: float | None
    low: float | None
    high: float | None
    n: int

    @classmethod
    def of(cls, label: str, key: Sequence[str], published: float | None, summary: Summary, scale: float = 1.0) -> Row:
        def finite(value: float) -> float | None:
            return float(value) * scale if value is not None and math.isfinite(value) else None

        return cls(
            label, tuple(key), published, finite(summary.mean), finite(summary.low), finite(summary.high), summary.n
        )


@dataclass(frozen=True)
class Finding:
    """Whether the paper's finding holds on our rows, and why (one sentence)."""

    holds: bool
    reason: str


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


@dataclass
class Resources:
    """The classifiers and the masked LM a run loads, once each (read-only, shared by its rows)."""

    batch_size: int = 64
    _classifiers: dict[str, Classifier] = field(default_factory=dict)
    _mlm: MaskedLM | None = None

    def classifier(self, name: str) -> Classifier:
        from core.classifier import Classifier, load_classifier

        if name not in self._classifiers:
            self._classifiers[name] = Classifier(load_classifier(name), batch_size=self.batch_size)
        return self._classifiers[name]

    def mlm(self) -> MaskedLM:
        from core.masked_lm import MaskedLM

        if self._mlm is None:
            self._mlm = MaskedLM.load(MLM)
        return self._mlm


def examples(dataset: str, split: str, limit: int):
    """The first ``limit`` examples of a split; at least two, so that an interval exists."""
    from core.datasets import load_examples

    check_limit(limit)
    return load_examples(dataset, split, limit=limit)


def check_limit(limit: int) -> None:
    """A slice needs two examples or more for a 95% interval."""
    if limit < 2:
        raise ValueError(f"--limit {limit} is too small for a 95% interval: give 2 or more")


def value(rows: Sequence[Row], *key: str) -> float | None:
    """The mean of the row whose key is ``key`` (None when absent or not scored)."""
    for row in rows:
        if row.key == tuple(key):
            return row.mean
    return None


def best(rows: Sequence[Row], prefix: tuple[str, ...], lower: bool) -> tuple[str, float] | None:
    """The last key element and mean of the best row among those whose key starts with ``prefix``."""
    found = [
        (row.key[len(prefix)], row.mean) for row in rows if row.key[: len(prefix)] == prefix and row.mean is not None
    ]
    if not found:
        return None
    return (min if lower else max)(found, key=lambda item: item[1])


# --------------------------------------------------------------------------- results on disk


def code_version() -> str:
    """A hash of every source file of the packages that compute a result (12 hex digits)."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for package in _CODE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def results_dir() -> Path:
    return Path(os.environ.get(RESULTS_ENV) or "results")


def cache_path(name: str, limit: int, version: str | None = None) -> Path:
    """One file per (reproduction, slice, code version)."""
    return results_dir() / "reproduce" / f"{name}-limit{limit}-{version or code_version()}.json"


def cached_files(name: str) -> list[Path]:
    """Every cached result file of ``name`` (any slice, any code version), newest first."""
    folder = results_dir() / "reproduce"
    found = folder.glob(f"{glob.escape(name)}-limit*-*.json") if folder.is_dir() else []
    return sorted(found, key=lambda path: path.stat().st_mtime, reverse=True)


def load_cached(path: Path) -> dict[str, Any] | None:
    """A cached result, None when absent or unreadable (a damaged file is recomputed)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def save_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` as JSON to a temporary file beside ``path`` and rename it into place, so a
    reader sees the old file or the whole new one, never a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(payload, file, indent=2, allow_nan=False)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def row_json(row: Row) -> dict[str, Any]:
    out = asdict(row)
    out["key"] = list(row.key)
    return out
