"""A ROAR job's results as one JSON document, and what a person reads from it.

``job_report(store, run_id)`` reads a stored job (finished units only) into a plain JSON
dictionary: the job's settings and command, progress, one record per unit (method, level, seed,
accuracy, macro-F1, seconds, explanations), the sparsity of the step-0 importance over the words
a removal may take (Madsen et al. 2022, Appendix E; a pair's first segment in scope ``main``)
and, for the first evaluation examples, the words each method removed at each level (Madsen et
al. 2022, Figures 1 and 2). The bundled precomputed job (``assets/roar/``) is such
a document, so the page reads a stored job and the bundled one the same way.

``summary(report, metric)`` computes from the unit records, with ``experiments.roar.scores``:
the curves (mean, std, 95% interval over seeds), Madsen et al.'s Eq. 3 per method (in %, with
its reading from the 95% interval, ``eq3_reading``: faithful, not faithful or undecided; the page
and the command line both show it), Pham et al.'s Welch t-test of every method against the random
baseline and between every two methods at each level, and the class-leakage flags (a curve that
rises).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from shlex import quote
from typing import Any

import numpy as np

from core.types import Example
from engine.roar.run import job_of, unit_meta
from engine.runs.store import RunStore
from experiments.roar.job import DEFAULT_MLM, RoarJob
from experiments.roar.removal import Level, candidates, default_order, default_rounding
from experiments.roar.scores import RANDOM, SHARED, UnitResult, curves, faithfulness_scores, leakage, sparsity, t_test

N_EXAMPLES = 12  # evaluation examples whose text is kept at every level
SPARSITY_LEVELS = (*(Level(k, "tokens") for k in (1, 2, 3, 5, 10)), Level(10), Level(20), Level(30), Level(50))


def _removable_scores(row: dict[str, Any], examples: Sequence[Example], scope: str) -> np.ndarray | None:
    """A unit row's step-0 scores at the words a removal may take (a pair's premise in scope
    ``main``); None without scores, or where the dataset no longer holds the row's example as it
    was (another length: edited since, or read from another folder)."""
    index, scores = row["index"], np.asarray(row["scores"] or [], dtype=np.float64)
    if not len(scores) or index >= len(examples) or len(examples[index].words) != len(scores):
        return None
    return scores[candidates(examples[index], scope)]


def command_of(job: RoarJob) -> str:
    """The ``python -m cli roar`` command that runs ``job`` (a path with a space quoted as a shell
    reads it)."""
    levels = ",".join(level.label.replace(" tokens", "t").replace(" token", "t") for level in job.levels)
    parts = [
        "python -m cli roar",
        f"--task {job.task}" if job.task else f"--model {quote(str(job.model))} --dataset {quote(str(job.dataset))}",
        f"--methods {','.join(m for m in job.methods if m != RANDOM)}",
        f"--removal {job.removal}",
        f"--levels {levels}",
        f"--seeds {job.seeds}",
        *([f"--train-size {job.train_size}"] if job.train_size else []),
        *([f"--eval-size {job.eval_size}"] if job.eval_size else []),
        f"--train-steps {job.train_steps}",
        f"--target {job.target}",
        *(["--recursive"] if job.recursive else []),
        *([f"--rounding {job.rounding}"] if job.rounding != default_rounding(job.removal) else []),
        *([f"--order {job.order}"] if job.order != default_order(job.removal) else []),
        *([f"--scope {job.scope}"] if job.scope != "main" else []),
        *([f"--mlm {quote(job.mlm)}"] if job.mlm != DEFAULT_MLM else []),
    ]
    return " ".join(parts)


def job_report(store: RunStore, run_id: str, data_dir: str | None = None) -> dict[str, Any]:
    """The stored job ``run_id`` as the JSON document described in the module docstring."""
    import pyarrow.parquet as pq

    from core.datasets import load_examples
    from engine.roar.recipe import recipe_of

    info = store.get(run_id)
    job = job_of(info)
    units = unit_meta(store, run_id)
    recipe = recipe_of(job, data_dir)
    labelled = [
        e
        for e in load_examples(recipe.dataset, recipe.eval_split, data_dir, limit=job.eval_size)
        if e.label is not None and e.words
    ]  # the job's evaluation examples, as ``engine.roar.run.load_data`` reads them
    evaluation = labelled[:N_EXAMPLES]
    examples: list[dict[str, Any]] = [
        {"id": e.id, "words": list(e.words), "label": e.label, "levels": {}} for e in evaluation
    ]
    step0: dict[str, list[np.ndarray]] = {}
    for meta, path in units:
        rows = pq.read_table(store.root / path, filters=[("split", "=", "eval")]).to_pylist()
        method = meta["method"]
        for row in rows[: len(examples)]:
            shown = dict(zip(row["removed"], row["shown"], strict=True))
            levels = examples[row["index"]]["levels"].setdefault(method, {})
            if meta["seed"] == 0:
                levels[meta["level"]] = {"shown": {str(k): v for k, v in shown.items()}, "predicted": row["predicted"]}
        first_middle = job.middle_levels[0].label
        if method != SHARED and meta["seed"] == 0 and meta["level"] == first_middle and method not in step0:
            step0[method] = [s for r in rows if (s := _removable_scores(r, labelled, job.scope)) is not None]
    shares = {
        method: {
            level.label: _number(share.mean)
            for level, share in sparsity([np.nan_to_num(s) for s in scores], SPARSITY_LEVELS, str(job.rounding)).items()
        }
        for method, scores in step0.items()
    }
    return {
        "run_id": run_id,
        "job": job.to_json(),
        "command": command_of(job),
        "status": info.status,
        "units_done": len(units),  # the units read below (more may be committed meanwhile)
        "units_total": info.units_total,
        "wall_s": info.wall_s,
        "code_version": info.code_version,
        "n_train": info.selection.get("n_train"),
        "n_eval": info.selection.get("n_eval"),
        "label_names": list(info.label_names),
        "units": [meta for meta, _ in units],
        "sparsity": shares,
        "examples": examples,
    }


def load_report(path: str | Path) -> dict[str, Any]:
    """A saved report (the bundled job); parsed as JSON, never evaluated."""
    report = json.loads(Path(path).read_text())
    RoarJob.from_json(report["job"])  # a malformed job fails here, with its reason
    return report


def save_report(report: dict[str, Any], path: str | Path) -> None:
    from core.files import write_text_atomic

    write_text_atomic(Path(path), json.dumps(report, indent=1, allow_nan=False, default=_finite) + "\n")


def _finite(value: Any) -> Any:
    raise TypeError(f"not JSON: {value!r}")


def unit_rows(report: dict[str, Any]) -> list[UnitResult]:
    return [
        UnitResult(u["method"], Level.parse(u["level"]), int(u["seed"]), float(u["accuracy"]), float(u["macro_f1"]))
        for u in report["units"]
    ]


def _number(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def summary(report: dict[str, Any], metric: str = "accuracy") -> dict[str, Any]:
    """Curves, Eq. 3, t-tests and leakage of a report (module docstring), as JSON."""
    job = RoarJob.from_json(report["job"])
    return summarize(unit_rows(report), job.curve_levels, job.middle_levels, metric)


def summarize(
    rows: list[UnitResult],
    levels: Sequence[Level],
    tested: Sequence[Level],
    metric: str = "accuracy",
    x: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Curves over ``levels`` (from 0%), Eq. 3 over the levels from 0% up to the first that some
    method lacks (a stopped job's; its reading says so: a missing level between two measured ones
    was interpolated over), t-tests at the ``tested`` levels, leakage flags and the 100% floor of
    any unit results, as JSON."""
    xs = dict(zip(levels, x if x is not None else [level.x for level in levels], strict=True))
    curve = curves(rows, levels, metric) if rows else {}
    out_curves = {
        method: [
            {
                "level": c.level.label,
                "x": xs[c.level],
                "mean": _number(c.mean),
                "std": _number(c.std),
                "low": _number(c.low),
                "high": _number(c.high),
                "n": c.n,
            }
            for c in cells
        ]
        for method, cells in curve.items()
    }
    faithful = {}
    measured = {lv for lv in levels if all(c.n for cells in curve.values() for c in cells if c.level == lv)}
    complete = list(itertools.takewhile(measured.__contains__, levels))  # no gap: nothing interpolated
    if RANDOM in curve and len(complete) >= 2 and complete[0].is_zero:
        scores = faithfulness_scores(rows, complete, metric, x=[xs[lv] for lv in complete])
        partial = f" (over {complete[0].label} to {complete[-1].label} only)" if len(complete) < len(levels) else ""
        for method, s in scores.items():
            mean, low, high = _number(s.mean), _number(s.low), _number(s.high)
            reading = eq3_reading(mean, low, high)
            faithful[method] = {
                "mean": mean,
                "low": low,
                "high": high,
                "n": s.n,
                "levels": [level.label for level in complete],
                "reading": reading + partial if mean is not None else reading,  # no mean: the empty cell alone
            }
    tests = []
    for level in tested:
        for a, b in itertools.combinations(list(curve), 2):
            try:
                t = t_test(rows, a, b, level, metric)
            except ValueError:
                continue
            tests.append({"level": level.label, "a": a, "b": b, "t": _number(t.statistic), "p": _number(t.p_value)})
    leaks = [
        {
            "method": leak.method,
            "from": leak.start.label,
            "to": leak.end.label,
            "rise": leak.rise,
            "significant": leak.significant,
        }
        for cells in curve.values()
        for leak in leakage([c for c in cells if c.n])
    ]
    floor = [getattr(r, metric) for r in rows if r.method == SHARED and r.level.is_full]
    return {
        "metric": metric,
        "curves": out_curves,
        "floor": _number(float(np.mean(floor))) if floor else None,
        "faithfulness": faithful,
        "t_tests": tests,
        "leakage": leaks,
    }


def eq3_reading(mean: float | None, low: float | None, high: float | None) -> str:
    """Eq. 3 in words: faithful where the whole 95% interval is above 0 (the method's curve below
    random's), not faithful where it is below 0, undecided where it holds 0 or there is none."""
    if mean is None or not math.isfinite(mean):
        return "\N{EN DASH}"  # the page's empty cell
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "undecided: one seed, no interval"
    if low > 0:
        return "faithful (its curve below random's)"
    if high < 0:
        return "not faithful (its curve above random's)"
    return "undecided: the interval holds 0 (random)"


def synthetic_summary(seeds: Sequence[int] = (0, 1, 2), n: int = 5000, metric: str = "accuracy") -> dict[str, Any]:
    """Madsen et al.'s synthetic redundancy task (``experiments.roar.synthetic``, Eq. 1): plain and
    Recursive ROAR summarised like a job, x = number of masked features (0..16)."""
    from experiments.roar.synthetic import run_synthetic

    result = run_synthetic(tuple(seeds), n_train=n, n_test=n)
    return {
        kind: summarize(list(rows), result.levels, (), metric, x=result.x)
        for kind, rows in (("plain", result.plain), ("recursive", result.recursive))
    }
