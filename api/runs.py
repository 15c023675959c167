"""Dataset runs kept in the run store, from a notebook: the runs ``python -m cli run`` and the
Dataset explorer page compute, under the same ids.

``run`` computes a run (or reads back the stored one with the same settings, or continues an
interrupted one); ``runs`` lists the store's catalogue; ``open_run`` reads a stored run back as
the ``EvaluationResult`` that ``api.evaluate`` returns, its finished units only while a process
still writes it. The store is ``results_dir``, else ``$ATTRIBUTION_RESULTS_DIR``, else
``./results``, as for the command line.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from api.results import EvaluationResult
from core.models import config_head_kind
from core.types import ProgressFn
from engine.evaluate import DEFAULT_METHODS, DEFAULT_METRICS

if TYPE_CHECKING:
    import pandas as pd

EVALUATION_KINDS = ("evaluate", "import")  # the kinds whose rows are a dataset evaluation


def run(
    model: str | os.PathLike,
    dataset: str,
    split: str,
    methods: str | Sequence[str] = DEFAULT_METHODS,
    metrics: str | Sequence[str] = DEFAULT_METRICS,
    *,
    limit: int | None = None,
    target: str = "predicted",
    params: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int | None = None,
    mlm: str = "minilm-mlm",
    chunk_size: int | None = None,
    batch_size: int | None = None,
    autocast: str | None = None,
    head_type: str | None = None,
    executor: str = "serial",
    results_dir: str | os.PathLike | None = None,
    progress: ProgressFn | None = None,
) -> EvaluationResult:
    """``api.evaluate`` over a bundled dataset's split, kept in the run store as ``python -m cli
    run`` keeps it: the same settings are the same run id, a stored run is read back without
    computing anything, and a stopped or killed one computes only its missing units.

    ``model`` is a bundled name, hub id or folder (a ``str`` or a path; a run fingerprints its
    files); ``limit`` None is the whole split. ``methods``, ``metrics``, ``target``, ``params``,
    ``autocast`` and ``head_type`` as for ``evaluate`` (a head-type override is a run of its own).
    ``executor`` is ``"serial"`` (this process, the default here) or ``"ray"`` (an embedded local
    Ray, or the cluster ``$RAY_ADDRESS`` names). ``progress`` gets (fraction of the run's examples
    done, message)."""
    from api import _default_metrics, _method_keys, _overrides
    from engine.runs.executor import check_startable, execute
    from engine.runs.executor import open_run as open_stored_run
    from engine.runs.spec import RunSpec
    from engine.runs.store import RunStore

    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if not isinstance(model, str):
        raise ValueError(  # noqa: TRY004 - the API's refusals are ValueErrors, as evaluate's
            "a stored run names its model: give a bundled name, hub id or folder, not a model object"
        )
    if not isinstance(dataset, str) or not isinstance(split, str):
        raise ValueError(  # noqa: TRY004
            "a stored run names its data: give a bundled dataset name (or file:PATH) and a split; "
            "api.evaluate takes a datasets.Dataset or a list of texts"
        )
    spec = RunSpec(
        model=model,
        dataset=dataset,
        split=split,
        limit=limit,
        methods=tuple(_method_keys(methods, DEFAULT_METHODS)),
        metrics=tuple(_default_metrics(metrics, head_type or config_head_kind(model))),
        overrides=_overrides(params),
        seed=seed,
        target=target,
        mlm=mlm,
        chunk_size=chunk_size,
        batch_size=batch_size,
        autocast=autocast,
        head_type=head_type,
    )
    check_startable(spec, executor)  # before the run is stored
    store = RunStore(results_dir)
    opened = open_stored_run(spec, store)
    if not opened.created and chunk_size not in (None, opened.info.chunk_size):  # as `run --chunk-size` says
        message = f"chunk_size={chunk_size} ignored: the stored run {opened.info.run_id} keeps its units of"
        warnings.warn(f"{message} {opened.info.chunk_size}", UserWarning, stacklevel=2)
    outcome = execute(opened, store, executor=executor, progress=progress)
    return open_run(outcome.info.run_id, results_dir)


RUNS_COLUMNS = (
    "run_id", "kind", "status", "rows_done", "rows_total", "model", "dataset", "split", "methods", "metrics",
    "target", "seed", "wall_s", "created", "now",
)  # fmt: skip


def runs(results_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """The store's runs, newest first: one row per run (``RUNS_COLUMNS``: id, kind, status, rows
    done and total, model, dataset, split, methods, metrics, wall time, ...), the catalogue
    ``python -m cli runs`` prints; the same columns and no row when nothing is stored. ``now`` says
    where a run's live writer is inside its unit ("examples 113-128 of 200 · explaining lime"; None
    when no process writes it)."""
    import pandas as pd

    from engine.runs.live import read_live
    from engine.runs.store import reading_store

    store = reading_store(results_dir, "results_dir")
    rows = [
        {
            "run_id": info.run_id,
            "kind": info.kind,
            "status": info.shown_status,
            "rows_done": info.rows_done,
            "rows_total": info.rows_total,
            "model": info.model,
            "dataset": info.dataset,
            "split": info.split,
            "methods": list(info.methods),
            "metrics": list(info.metrics),
            "target": info.target,
            "seed": info.seed,
            "wall_s": info.wall_s,
            "created": info.created,
            "now": live.message if (live := read_live(store.root, info)) is not None else None,
        }
        for info in store.infos()
    ]
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(RUNS_COLUMNS))
    frame["seed"] = frame["seed"].astype("Int64")  # whole numbers, with <NA> for no seed (not 1.0)
    return frame


def open_run(run_id: str, results_dir: str | os.PathLike | None = None) -> EvaluationResult:
    """A stored dataset evaluation (a run, or attributions imported as one) read back as
    ``evaluate`` returns one: its summary, mean curves, per-example values and each example's
    heatmap (``explanation(position)``, by the example's position in the run). A run still being
    written, or stopped part-way, gives its finished examples (its ``partial`` says so: status
    and count, as its repr shows). The head (probability or raw score) is the one the run
    explained: its head-type override, else the one the model's config gives."""
    from engine.runs.executor import head_of, read_evaluation
    from engine.runs.store import reading_store

    store = reading_store(results_dir, "results_dir")
    found = store.get(run_id)
    if found.kind not in EVALUATION_KINDS:
        raise ValueError(
            f"{run_id} is a {found.kind} run, not a dataset evaluation: `python -m cli show {run_id}` names the"
            " command and the page that read it"
        )
    info, evaluation = read_evaluation(store, run_id)
    stored = store.rows(run_id, columns=["position", "dropped_words"])  # no columns before a unit is stored
    dropped = dict(zip(stored["position"], stored["dropped_words"], strict=True)) if len(stored) else {}
    return EvaluationResult(
        info.model,
        evaluation,
        info.label_names,
        head_of(info) or "single_label",
        tuple(int(dropped[result.position]) for result in evaluation.results),
        None
        if info.rows_done == info.rows_total
        else f"{info.shown_status}, {info.rows_done} of {info.rows_total} examples",
    )
