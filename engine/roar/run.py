"""A ROAR job kept in the run store: one catalogue run, one unit per retrain, resumable.

The job (``experiments.roar.job.RoarJob``) is a run of kind ``roar`` in ``engine.runs.store``:
its key is the job's resolved settings and training recipe (``engine.roar.recipe``) plus the
fingerprints of the packaged encoder, of the bundled task model that measures the cost, of the
masked LM when the removal uses it and of a data file's content (``file:PATH``: an edited file
is another job); its ``selection`` holds the job's JSON; a "row" of the catalogue's counters is a
unit, so ``progress`` reads units done / total. Each finished unit is one Parquet file
(``engine.roar.unit.unit_table``, its performance and costs in the schema metadata) committed
atomically, after its model was saved under ``runs/<run_id>/models/``. A job killed at any moment
resumes with the units not committed; units already committed are never recomputed.

Executors: ``serial`` runs the units in the job's order (every unit after the unit it depends
on); ``ray`` (Moritz et al. 2018, arXiv:1712.05889) runs every unit whose dependency is
committed as a Ray task (one CPU and one torch thread each, or one GPU each where the cluster
has GPUs) and submits the units that depend on it as each one finishes (a plain ROAR level past
the first also waits for its method's step-0 scores, which the first level computes and keeps:
``ready``); the driver is the only writer.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.datasets.files import content_key
from core.types import Example, ProgressFn
from engine.roar.job_data import JobData
from engine.roar.recipe import recipe_of
from engine.roar.unit import UnitOutcome, run_unit, step0_cached
from engine.runs.live import LiveWriter, RunTracker
from engine.runs.records import NewRun, RunInfo, UnitStats
from engine.runs.secrets import redact
from engine.runs.store import RunStore
from experiments.roar.job import RoarJob, Unit
from experiments.roar.scores import METRICS, RANDOM, SHARED

KIND = "roar"
EXECUTORS = ("serial", "ray")


def task_model(job: RoarJob) -> str:
    """The model a job is named by: the bundled model of its task (``minilm-sst2``), which gives
    the label names and measures the cost, or the model it retrains from."""
    return f"minilm-{job.task}" if job.task is not None else str(job.model)


def load_data(job: RoarJob, folder: Path, data_dir: str | None = None) -> JobData:
    """The job's training and evaluation examples (the first ``train_size`` / ``eval_size`` of the
    recipe's splits, ``engine.roar.recipe``, labelled ones only; a size past a split's end is
    refused, as ``run --limit`` refuses it) and the task.json of its
    retrained models (a task job's bundled model's; else the dataset's labels over the job's model
    as ``base_model``)."""
    from core.datasets import load_examples
    from core.models import bundled_folder, read_task

    recipe = recipe_of(job, data_dir)
    train = [
        e
        for e in load_examples(recipe.dataset, recipe.train_split, data_dir, limit=job.train_size, exact=True)
        if e.label is not None and e.words
    ]
    test = [
        e
        for e in load_examples(recipe.dataset, recipe.eval_split, data_dir, limit=job.eval_size, exact=True)
        if e.label is not None and e.words
    ]
    if not train or not test:
        raise ValueError(f"{recipe.dataset} has no labelled examples in {recipe.train_split} or {recipe.eval_split}")
    if recipe.base_model is None:
        bundled = bundled_folder(task_model(job))
        if bundled is None:
            raise ValueError(f"the bundled model {task_model(job)} is missing")
        info = read_task(bundled)
    else:
        info = {
            "architecture": "sequence-classification",
            "task": f"roar-{recipe.dataset}",
            "label_names": head_names(job, [*train, *test]),
            "pair": train[0].is_pair,
            "dataset": recipe.dataset,
            "max_length": recipe.max_length,
            "base_model": recipe.base_model,
        }
    return JobData(job, train, test, info, folder, recipe)


def head_names(job: RoarJob, examples: list[Example]) -> list[str]:
    """The class names of the head a job on a model retrains: the dataset's, else (a data file's
    class numbers) the job's model's where it has as many classes, else the numbers."""
    from core.models import config_label_names

    if examples[0].label_names:
        return list(examples[0].label_names)
    n_classes = 1 + max(int(e.label or 0) for e in examples)
    if n_classes < 2:
        raise ValueError(f"{job.dataset}'s labelled examples are all of class 0: a classifier needs two classes")
    names = config_label_names(str(job.model))
    return list(names) if names is not None and len(names) == n_classes else [str(i) for i in range(n_classes)]


def new_run(job: RoarJob, data: JobData) -> NewRun:
    import explainers
    from core.models import base_source
    from engine.runs.model_identity import model_fingerprint

    encoder = model_fingerprint(base_source(data.info))
    key_fields: dict[str, Any] = {"kind": KIND, "job": job.to_json(), "encoder": encoder}
    # a changed task recipe trains other models; its starting model is the job's own or the packaged
    # encoder ("encoder": by content), whose path moves with the virtual environment
    key_fields["recipe"] = {k: v for k, v in asdict(data.recipe).items() if k != "base_model"}
    key_fields |= content_key(data.recipe.dataset)  # a file of one's own: keyed by its content, not its name
    if job.removal == "mlm" or any(explainers.get(m).needs_mlm for m in job.methods):  # fill-ins or IM, LIME-MLM
        key_fields["mlm_fingerprint"] = model_fingerprint(job.mlm)
    return NewRun(
        key_fields=key_fields,
        kind=KIND,
        model=task_model(job),
        model_fingerprint=encoder,
        dataset=data.recipe.dataset,
        split=data.recipe.eval_split,
        selection=job.to_json() | {"n_train": len(data.train), "n_eval": len(data.eval)},
        methods=job.methods,
        metrics=METRICS,
        params={},
        overrides={},
        seed=None,
        target=job.target,
        label_names=tuple(data.info["label_names"]),
        chunk_size=1,
        rows_total=len(job.units),
    )


@dataclass
class PreparedJob:
    """A job's data and its catalogue entry to be, before anything is stored."""

    job: RoarJob
    data: JobData
    new: NewRun
    run_id: str


@dataclass
class OpenedJob:
    job: RoarJob
    info: RunInfo
    data: JobData
    created: bool


def prepare_job(
    job: RoarJob, store: RunStore, *, data_dir: str | None = None, resume: str | None = None
) -> PreparedJob:
    """``job``'s data and run id, nothing stored (its cost can be estimated from this). With
    ``resume``, ``ValueError`` when the job keys to another run now: its encoder's, masked LM's or
    data file's contents or its training recipe changed since, and resuming would start another job
    from nothing."""
    from engine.runs.records import run_id_of, run_key

    data = load_data(job, store.root, data_dir)
    new = new_run(job, data)
    run_id = run_id_of(run_key(new.key_fields))
    if resume is not None and run_id != resume:
        raise ValueError(
            f"job {resume} no longer matches its encoder, masked-LM or data files or its training recipe "
            f"(they now give {run_id}): "
            "start the job again to run it on the current files"
        )
    data.folder = store.root / "runs" / run_id
    return PreparedJob(job, data, new, run_id)


def open_job(
    job: RoarJob | PreparedJob, store: RunStore, *, data_dir: str | None = None, resume: str | None = None
) -> OpenedJob:
    """The stored run of ``job`` (created when new; the same settings are the same run)."""
    prepared = job if isinstance(job, PreparedJob) else prepare_job(job, store, data_dir=data_dir, resume=resume)
    info, created = store.create_or_resume(prepared.new)
    return OpenedJob(prepared.job, info, prepared.data, created)


def job_of(info: RunInfo) -> RoarJob:
    """The job of a stored ROAR run."""
    if info.kind != KIND:
        raise ValueError(f"{info.run_id} is a run of kind {info.kind}, not a ROAR job")
    settings = {k: v for k, v in info.selection.items() if k in RoarJob.__dataclass_fields__}
    return RoarJob.from_json(settings)


def _removed_reader(store: RunStore, run_id: str, data: JobData) -> Callable[[Unit], dict[str, list[np.ndarray]]]:
    def removed_of(unit: Unit) -> dict[str, list[np.ndarray]]:
        import pyarrow.parquet as pq

        index = data.job.units.index(unit)
        units = store.units(run_id)
        hit = units[units["unit"] == index]
        if hit.empty:
            raise ValueError(f"unit {unit.key} of {run_id} is not stored yet")
        table = pq.read_table(store.root / hit.iloc[0]["path"], columns=["split", "index", "removed"]).to_pylist()
        out: dict[str, list[np.ndarray]] = {
            split: [np.zeros(len(e.words), dtype=bool) for e in data.examples(split)] for split in ("train", "eval")
        }
        for row in table:
            out[row["split"]][row["index"]][row["removed"]] = True
        return out

    return removed_of


def _task(
    data_args: tuple, index: int, store_root: str, run_id: str, n_classes: int, progress: ProgressFn
) -> tuple[int, UnitOutcome]:
    """One unit in a Ray worker (one torch thread on a CPU), reporting to ``progress`` (the job's
    queue, ``engine.runs.ray_executor.QueueProgress``)."""
    import torch

    job, data_dir = data_args
    if not torch.cuda.is_available():
        torch.set_num_threads(1)
    store = RunStore(store_root, read_only=True)
    data = load_data(job, store.root / "runs" / run_id, data_dir)
    return index, run_unit(data, index, _removed_reader(store, run_id, data), n_classes, progress)


def execute_job(
    opened: OpenedJob,
    store: RunStore,
    *,
    executor: str = "serial",
    data_dir: str | None = None,
    progress: ProgressFn | None = None,
    stop_after: int | None = None,
) -> RunInfo:
    """Compute the job's units that are not stored, committing each as it finishes (``progress``
    gets the fraction of units done). ``stop_after`` stops after that many units (tests, and a
    job run in pieces). Ctrl-C or SIGTERM marks the run ``stopped``, an error ``failed``; both
    resume."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    job, info, data = opened.job, opened.info, opened.data
    info = store.claim(info.run_id, executor)  # one writer: refused while another live process writes it
    if info.status == "done":
        return info
    done = store.done_units(info.run_id)
    todo = sorted((i for i in range(len(job.units)) if i not in done), key=lambda i: run_order(job, i))
    if stop_after is not None:
        todo = todo[:stop_after] if executor == "serial" else todo
    n_classes = len(data.info["label_names"])
    base_wall, start = info.wall_s, time.perf_counter()
    live = LiveWriter(store.root, info.run_id, lambda: base_wall + time.perf_counter() - start)
    tracker = RunTracker(progress, live, len(done), len(job.units), noun="unit")

    def commit(outcome: UnitOutcome) -> None:
        import pyarrow as pa

        table = outcome.table.replace_schema_metadata({b"roar_unit": pa.py_buffer(_json(outcome.meta())).to_pybytes()})
        stats = UnitStats(outcome.index, outcome.index, 1, outcome.forward_passes, outcome.explain_s, outcome.train_s)
        store.commit_unit(info.run_id, stats, table, base_wall + time.perf_counter() - start)
        tracker.finished(1, outcome.index, outcome.unit.key)

    tracker.report(f"{len(todo)} of {len(job.units)} units to run")
    try:
        if executor == "serial":
            removed_of = _removed_reader(store, info.run_id, data)
            for index in todo:
                commit(run_unit(data, index, removed_of, n_classes, tracker.within(1, index, job.units[index].key)))
        else:
            within = {i: tracker.within(1, i, job.units[i].key) for i in todo}
            _run_ray(job, todo, done, store, info.run_id, data_dir, n_classes, commit, stop_after, within)
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM (``cli.common.sigterm_stops``)
        store.finish(info.run_id, "stopped", base_wall + time.perf_counter() - start)
        raise
    except BaseException as error:
        message = redact(f"{type(error).__name__}: {error}", os.environ.get("RAY_ADDRESS"))
        store.finish(info.run_id, "failed", base_wall + time.perf_counter() - start, message)
        raise
    finally:
        live.close()
    complete = len(store.done_units(info.run_id)) == len(job.units)
    store.finish(info.run_id, "done" if complete else "stopped", base_wall + time.perf_counter() - start)
    return store.get(info.run_id)


def run_order(job: RoarJob, index: int) -> tuple[int, int, int]:
    """Units run level by level, every seed and method at a level before the next level (the
    shared 0% and 100% units first): a job stopped half-way has every seed of its first levels,
    so their intervals and t-tests, and every unit follows the unit it depends on. The random
    baseline goes first at each level: every score compares with it."""
    unit = job.units[index]
    if unit.method == SHARED:
        return -1, unit.seed, 0
    method = -1 if unit.method == RANDOM else job.methods.index(unit.method)
    return job.middle_levels.index(unit.level), unit.seed, method


def ready(job: RoarJob, index: int, committed: set[int], folder: Path) -> bool:
    """Whether the Ray executor may start unit ``index`` now: the unit it depends on is committed
    and, for a plain ROAR unit past the first level, its method's step-0 scores for its seed are
    kept under ``folder`` (``runs/<run_id>``) or the first level's unit, which computes and keeps
    them, is committed; so each (method, seed) is explained once, as in the serial order."""
    unit = job.units[index]
    dependency = job.depends_on(unit)
    if dependency is not None and job.units.index(dependency) not in committed:
        return False
    if unit.method == SHARED or job.recursive or unit.level == job.middle_levels[0]:
        return True
    first = job.units.index(Unit(unit.method, job.middle_levels[0], unit.seed))
    return first in committed or step0_cached(folder, unit.method, unit.seed)


def _run_ray(job, todo, done, store, run_id, data_dir, n_classes, commit, stop_after, within) -> None:
    """The units ``todo`` as Ray tasks, each once its dependency is committed; ``within[unit]``
    gets the unit's progress, which its task sends through a Ray queue read while waiting."""
    import ray
    from ray.util.queue import Queue

    from engine.runs.ray_executor import POLL_S, REPORT_EVERY_S, QueueProgress, _ray_init, forward_reports

    started_here = not ray.is_initialized()
    if started_here:
        _ray_init(os.environ.get("RAY_ADDRESS"))
    queue = None
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        remote = ray.remote(num_gpus=1 if gpus else 0, num_cpus=1, max_retries=0)(_task)
        queue = Queue(actor_options={"num_cpus": 0})  # scheduled beside tasks that take every CPU

        committed = set(done)
        waiting = list(todo)
        running: dict[Any, int] = {}
        count = 0

        folder = store.root / "runs" / run_id
        while waiting or running:
            for index in [i for i in waiting if ready(job, index=i, committed=committed, folder=folder)]:
                waiting.remove(index)
                progress = QueueProgress(queue, index, REPORT_EVERY_S)
                running[remote.remote((job, data_dir), index, str(store.root), run_id, n_classes, progress)] = index
            if not running:
                raise ValueError(f"units {waiting} wait for units that never ran")
            finished, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
            forward_reports(queue, within.get)  # a finished unit's last reports before its commit
            for ref in finished:
                index, outcome = ray.get(ref)
                running.pop(ref)
                commit(outcome)
                committed.add(index)
                count += 1
            if stop_after is not None and count >= stop_after:
                for ref in running:
                    ray.cancel(ref, force=True)
                return
    finally:
        if queue is not None:
            queue.shutdown()
        if started_here:
            ray.shutdown()


def _json(value: Any) -> bytes:
    import json

    return json.dumps(value).encode()


# ---------------------------------------------------------------------------------- reading


def unit_meta(store: RunStore, run_id: str) -> list[tuple[dict[str, Any], str]]:
    """Every stored unit's metadata (method, level, seed, accuracy, macro-F1, seconds, counts)
    with its file, from one read of the catalogue (a job being written commits units meanwhile)."""
    import json

    import pyarrow.parquet as pq

    return [
        (json.loads(pq.read_schema(store.root / p).metadata[b"roar_unit"]), p)
        for p in store.units(run_id).get("path", [])
    ]
