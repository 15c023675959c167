"""Run a dataset evaluation as units of work, stored as they finish (``engine.runs.store``).

A unit is a chunk of ``chunk_size`` consecutive examples of the selection, explained by every
method and scored by every metric with ``engine.evaluate.evaluate_slice`` (the one
implementation of dataset evaluation). Units are independent, so they run anywhere:

- ``serial``: one after the other in this process (debugging, and the reference).
- ``ray``: on Ray (Moritz et al., 2018, "Ray: A Distributed Framework for Emerging AI
  Applications", arXiv:1712.05889) through one model actor per GPU (``num_gpus=1``) when the
  cluster has GPUs, else ``actors`` CPU actors that share the CPUs. By default the command starts
  an embedded local Ray (dashboard off, bound to 127.0.0.1, shut down at the end); ``address``
  (or ``$RAY_ADDRESS``) joins an existing cluster instead, shipping this project's code with the
  job (``runtime_env`` ``working_dir``; the cluster's Python needs requirements.txt installed).

What scales is the number of examples: units spread over actors. Inside a unit the examples are
explained together (``evaluate_slice``'s ``group``: one padded forward/backward for the one-pass
gradient and attention methods, pooled scorer batches for the one-call perturbation methods);
the methods run in order, so one example is never faster than on one worker.

Each actor loads the model once. Batches are sized to the device (``batch_size`` None: 64 on a
CPU, 256 on a GPU); an out-of-memory error halves the batch and runs the unit again (results do
not depend on the batch size beyond float rounding). The driver is the only writer of the store: a unit's rows are
committed as soon as it comes back, so a run stopped at any point resumes with the units not
yet committed (``resume``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.types import Example, ProgressFn
from engine.evaluate import (
    DEFAULT_METHODS,
    DEFAULT_METRICS,
    SliceEvaluation,
    evaluate_slice,
    metric_params,
    needs_mlm,
    resolve_metrics,
)
from engine.runs.secrets import redact
from engine.runs.store import NewRun, RunInfo, RunStore, UnitStats

if TYPE_CHECKING:
    import pyarrow as pa

    from core.classifier import Classifier
    from core.masked_lm import MaskedLM

EXECUTORS = ("ray", "serial")
DEFAULT_CHUNK_SIZE = 8
PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Files that make a model what it is: weights, adapters, configs, tokenizer and vocabulary.
MODEL_FILE_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth", ".json", ".txt", ".model", ".msgpack"}


@dataclass(frozen=True)
class RunSpec:
    """What to run. ``limit`` None is the whole split; ``overrides`` are ``--param`` values by
    method or metric key (``{"deletion": {"fraction": "0.5"}}``)."""

    model: str
    dataset: str
    split: str
    limit: int | None = None
    methods: tuple[str, ...] = tuple(DEFAULT_METHODS.split(","))
    metrics: tuple[str, ...] = tuple(DEFAULT_METRICS.split(","))
    overrides: dict[str, dict[str, str]] = field(default_factory=dict)
    seed: int | None = None
    target: str = "predicted"
    mlm: str = "minilm-mlm"
    data_dir: str | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE
    batch_size: int | None = None

    def __post_init__(self) -> None:
        import explainers

        if self.target not in ("predicted", "gold"):
            raise ValueError(f"target must be predicted or gold, got {self.target!r}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit must be at least 1, got {self.limit}")
        if self.chunk_size < 1:
            raise ValueError(f"--chunk-size must be at least 1, got {self.chunk_size}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"--batch-size must be at least 1, got {self.batch_size}")
        methods = explainers.resolve(list(self.methods))
        metrics = resolve_metrics(",".join(self.metrics))
        unknown = set(self.overrides) - set(methods) - set(metrics)
        if unknown:
            raise ValueError(f"--param for methods or metrics not requested: {', '.join(sorted(unknown))}")
        metric_params(metrics, self.overrides)  # a bad metric parameter fails here, before any work
        object.__setattr__(self, "methods", tuple(methods))
        object.__setattr__(self, "metrics", tuple(metrics))

    @property
    def method_overrides(self) -> dict[str, dict[str, str]]:
        return {k: v for k, v in self.overrides.items() if k in self.methods}

    def params_by_metric(self) -> dict[str, Any]:
        return metric_params(self.metrics, self.overrides)

    def needs_mlm(self) -> bool:
        return needs_mlm(self.methods, self.params_by_metric())

    def resolved_params(self) -> dict[str, dict[str, Any]]:
        """Every method's and metric's parameters with defaults filled in (the run's key uses
        these, so ``--param deletion.fraction=0.2`` and the default are the same run). A method's
        seed is the run's seed, as ``explain_example`` sets it."""
        import explainers

        out: dict[str, dict[str, Any]] = {}
        for key in self.methods:
            spec = explainers.get(key)
            overrides: dict[str, Any] = dict(self.method_overrides.get(key, {}))
            if self.seed is not None and spec.stochastic:
                overrides.setdefault("seed", self.seed)
            out[key] = dataclasses.asdict(spec.make_params(overrides))
        for key, params in self.params_by_metric().items():
            out[key] = dataclasses.asdict(params)
        return out


def spec_of(info: RunInfo) -> RunSpec:
    """The spec of a stored run (to resume it)."""
    return RunSpec(
        model=info.model,
        dataset=info.dataset,
        split=info.split,
        limit=info.selection.get("limit"),
        methods=info.methods,
        metrics=info.metrics,
        overrides=info.overrides,
        seed=info.seed,
        target=info.target,
        mlm=info.selection.get("mlm", "minilm-mlm"),
        chunk_size=info.chunk_size,
    )


# ---------------------------------------------------------------------------------- model identity


def model_files(name_or_path: str) -> list[tuple[str, Path]]:
    """(name, path) of every file that defines the model: a bundled delta with the packaged
    encoder it is merged into, a local folder's files, or a hub model's cached snapshot."""
    from core.models import delta_folder, encoder_path

    def folder_files(label: str, folder: Path) -> list[tuple[str, Path]]:
        return [
            (f"{label}/{p.relative_to(folder).as_posix()}", p)
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.suffix in MODEL_FILE_SUFFIXES and not p.name.startswith(".")
        ]

    delta = delta_folder(name_or_path)
    if delta is not None:
        return folder_files("delta", delta) + folder_files("encoder", Path(encoder_path()))
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return folder_files("model", path)
    from huggingface_hub import snapshot_download

    try:
        snapshot = snapshot_download(name_or_path, allow_patterns=[f"*{s}" for s in MODEL_FILE_SUFFIXES])
    except Exception as error:  # the hub client raises many types; every one means "not found"
        raise ValueError(f"cannot find the files of model {name_or_path!r}: {error}") from error
    return folder_files("hub", Path(snapshot))


def model_fingerprint(name_or_path: str) -> str:
    """SHA-256 over the names and contents of ``model_files``: a changed weight, adapter,
    config or tokenizer file gives another fingerprint."""
    files = model_files(name_or_path)
    if not files:
        raise ValueError(f"no model files found for {name_or_path!r}")
    digest = hashlib.sha256()
    for name, path in files:
        with open(path, "rb") as handle:
            digest.update(name.encode() + b"\0" + hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()


def label_names(name_or_path: str) -> tuple[str, ...]:
    """The model's class names without loading its weights."""
    from core.models import model_info

    info = model_info(name_or_path)
    if info:
        return tuple(info["label_names"])
    from transformers import AutoConfig

    from core.models import _offline_kwargs

    config = AutoConfig.from_pretrained(name_or_path, **_offline_kwargs())
    return tuple(config.id2label[i] for i in range(config.num_labels))


# ---------------------------------------------------------------------------------- one unit


def chunks(n_rows: int, chunk_size: int) -> list[tuple[int, int]]:
    """(first row, number of rows) of each unit."""
    return [(start, min(chunk_size, n_rows - start)) for start in range(0, n_rows, chunk_size)]


class UnitWorker:
    """Holds a loaded model and evaluates units; the same class runs in-process (serial) and as
    a Ray actor."""

    def __init__(self, spec: RunSpec, device: str | None = None, threads: int | None = None) -> None:
        import torch

        from core.classifier import Classifier, load_classifier

        if threads is not None:
            torch.set_num_threads(threads)
        self.spec = spec
        loaded = load_classifier(spec.model, device)
        batch_size = spec.batch_size or (256 if loaded.device.type == "cuda" else 64)
        self.clf: Classifier = Classifier(loaded, batch_size=batch_size)
        self.mlm: MaskedLM | None = None
        if spec.needs_mlm():
            from core.masked_lm import MaskedLM

            self.mlm = MaskedLM.load(spec.mlm, device)
        self.params_by_metric = spec.params_by_metric()
        self.halvings = 0

    def batch_size(self) -> int:
        return self.clf.batch_size

    def run(
        self, unit: int, first_row: int, examples: Sequence[Example], progress: ProgressFn | None = None
    ) -> tuple[UnitStats, pa.Table]:
        """Evaluate one unit; positions and error indices are the rows' positions in the run.
        An out-of-memory error halves the batch size and starts the unit again."""
        from core.devices import is_out_of_memory
        from engine.runs.rows import to_table

        while True:
            passes = self.clf.forward_passes
            try:
                evaluation = evaluate_slice(
                    self.clf,
                    examples,
                    self.spec.methods,
                    self.params_by_metric,
                    method_params=self.spec.method_overrides,
                    seed=self.spec.seed,
                    mlm=self.mlm,
                    progress=progress,
                    target=self.spec.target,
                    group=len(examples),  # a unit's examples are explained together
                )
                break
            except Exception as error:
                if not is_out_of_memory(error) or not self.clf.halve_batch():
                    raise
                self.halvings += 1
        shift_positions(evaluation, first_row)
        dropped = [len(e.words) - len(r.example.words) for e, r in zip(examples, evaluation.results, strict=True)]
        stats = UnitStats(
            unit, first_row, len(examples), self.clf.forward_passes - passes, evaluation.explain_s, evaluation.metrics_s
        )
        return stats, to_table(evaluation, dropped)


def shift_positions(evaluation: SliceEvaluation, first_row: int) -> None:
    for result in evaluation.results:
        result.position += first_row
    for failures in evaluation.errors.values():
        for failure in failures:
            failure["index"] += first_row


# ---------------------------------------------------------------------------------- executors

Commit = Callable[[UnitStats, "pa.Table"], None]
Unit = tuple[int, int, list[Example]]  # unit index, first row, examples


def run_serial(
    spec: RunSpec, units: Sequence[Unit], commit: Commit, within: Callable[[int], ProgressFn | None] | None = None
) -> None:
    """Every unit in this process, one after the other; ``within(n_rows)`` gives the progress
    callback of a unit's examples."""
    if not units:
        return
    worker = UnitWorker(spec)
    for unit, first_row, examples in units:
        commit(*worker.run(unit, first_row, examples, within(len(examples)) if within else None))


def run_ray(
    spec: RunSpec,
    units: Sequence[Unit],
    commit: Commit,
    progress: ProgressFn | None = None,
    *,
    address: str | None = None,
    actors: int | None = None,
) -> dict[str, Any]:
    """The units on Ray actors (see the module docstring); returns what was used: ``actors``,
    ``gpus``, ``startup_s`` (connecting or starting Ray and loading the models)."""
    import ray
    from ray.util import ActorPool

    start = time.perf_counter()
    started_here = not ray.is_initialized()
    if started_here:
        _ray_init(address or os.environ.get("RAY_ADDRESS"))
    try:
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        cpus = max(1, int(resources.get("CPU", 1)))
        if gpus:
            n_actors = gpus if actors is None else min(actors, gpus)
            options: dict[str, Any] = {"num_gpus": 1, "num_cpus": max(1, cpus // n_actors)}
            threads, device = options["num_cpus"], "cuda"
        else:
            # One single-threaded actor per CPU by default: on a shared CPU, torch's threads
            # spin-wait at each barrier and two of them in one process ran 5-20x slower than one
            # (BENCHMARKS.md, "Dataset runs").
            n_actors = max(1, min(actors or cpus, cpus))
            options = {"num_cpus": cpus // n_actors}
            threads, device = cpus // n_actors, None
        n_actors = min(n_actors, max(1, len(units)))
        remote = ray.remote(UnitWorker)
        workers = [remote.options(**options).remote(spec, device, threads) for _ in range(n_actors)]
        ray.get([w.batch_size.remote() for w in workers])  # type: ignore[attr-defined]  # wait for the models
        startup_s = time.perf_counter() - start
        if progress is not None:
            progress(0.0, f"{n_actors} actor(s) ready after {startup_s:.1f} s")
        pool = ActorPool(workers)
        for stats, table in pool.map_unordered(lambda w, u: w.run.remote(*u), list(units)):
            commit(stats, table)
        return {"actors": n_actors, "gpus": gpus, "startup_s": startup_s}
    finally:
        if started_here:
            ray.shutdown()


def _ray_init(address: str | None) -> None:
    import logging

    import ray

    if address:
        excludes = [".git", ".venv", "results", "tests", "**/__pycache__"]
        ray.init(
            address=address,
            runtime_env={"working_dir": str(PROJECT_ROOT), "excludes": excludes},
            logging_level=logging.WARNING,
            log_to_driver=True,
        )
        return
    # Ray's workers get the driver's sys.path, so the project imports there as here.
    ray.init(
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        num_cpus=os.cpu_count(),
        logging_level=logging.WARNING,
        log_to_driver=True,
    )


# ---------------------------------------------------------------------------------- a whole run


@dataclass
class RunOutcome:
    """The stored run after ``execute`` and what this call did."""

    info: RunInfo
    created: bool  # a new run (else: found by its key, or resumed)
    computed_units: int  # units computed by this call (0: the run was already done)
    executor: dict[str, Any] = field(default_factory=dict)


class _Tracker:
    """The run's progress: (rows finished + the current unit's share) / rows in the run."""

    def __init__(self, progress: ProgressFn | None, done: int, total: int) -> None:
        self.progress, self.done, self.total = progress, done, total

    def report(self, message: str, extra: float = 0.0) -> None:
        if self.progress is not None:
            self.progress(min(1.0, (self.done + extra) / self.total), message)

    def finished(self, n_rows: int) -> None:
        self.done += n_rows
        self.report(f"{self.done} of {self.total} examples")

    def within(self, n_rows: int) -> ProgressFn:
        """The progress callback of a unit of ``n_rows`` examples run in this process."""

        def report(fraction: float, message: str) -> None:
            self.report(
                f"example {self.done + min(n_rows, int(fraction * n_rows) + 1)} of {self.total}", fraction * n_rows
            )

        return report


def prepare(spec: RunSpec) -> tuple[NewRun, list[Example]]:
    """The catalogue entry of ``spec`` (its key fields fingerprint the model, and the masked LM
    when one is used) and the examples of its selection."""
    from core.datasets import load_examples

    examples = load_examples(spec.dataset, spec.split, spec.data_dir, limit=spec.limit)
    if not examples:
        raise ValueError(f"{spec.dataset}/{spec.split} has no examples")
    fingerprint = model_fingerprint(spec.model)
    params = spec.resolved_params()
    key_fields: dict[str, Any] = {
        "kind": "evaluate",
        "model_fingerprint": fingerprint,
        "dataset": spec.dataset,
        "split": spec.split,
        "selection": {"limit": spec.limit},
        "methods": list(spec.methods),
        "metrics": list(spec.metrics),
        "params": params,
        "seed": spec.seed,
        "target": spec.target,
    }
    selection: dict[str, Any] = {"limit": spec.limit}
    if spec.needs_mlm():
        key_fields["mlm_fingerprint"] = model_fingerprint(spec.mlm)
        selection["mlm"] = spec.mlm
    new = NewRun(
        key_fields=key_fields,
        kind="evaluate",
        model=spec.model,
        model_fingerprint=fingerprint,
        dataset=spec.dataset,
        split=spec.split,
        selection=selection,
        methods=spec.methods,
        metrics=spec.metrics,
        params=params,
        overrides=spec.overrides,
        seed=spec.seed,
        target=spec.target,
        label_names=label_names(spec.model),
        chunk_size=spec.chunk_size,
        rows_total=len(examples),
    )
    return new, examples


@dataclass
class OpenedRun:
    """A run found or created in the catalogue, with the examples of its selection."""

    spec: RunSpec
    info: RunInfo
    examples: list[Example]
    created: bool


def resume_spec(store: RunStore, run_id: str, *, data_dir: str | None = None, batch_size: int | None = None) -> RunSpec:
    """The spec of stored run ``run_id`` (its model, data, methods, metrics, parameters, seed)."""
    return dataclasses.replace(spec_of(store.get(run_id)), data_dir=data_dir, batch_size=batch_size)


def open_run(spec: RunSpec, store: RunStore, *, resume: str | None = None) -> OpenedRun:
    """The run of ``spec`` in ``store``: created when its key is new, else the stored one (a run
    with the same key is the same run). With ``resume``, the found run must be that one (it is
    not when the model's files changed since)."""
    new, examples = prepare(spec)
    info, created = store.create_or_resume(new)
    if resume is not None and info.run_id != resume:
        raise ValueError(f"run {resume} no longer matches its model files (they now give {info.run_id})")
    return OpenedRun(spec, info, examples, created)


def execute(
    opened: OpenedRun,
    store: RunStore,
    *,
    executor: str = "ray",
    address: str | None = None,
    actors: int | None = None,
    progress: ProgressFn | None = None,
) -> RunOutcome:
    """Compute the units of ``opened`` that are not stored yet (none when it is done: nothing is
    recomputed), committing each to ``store`` as it finishes. ``progress`` gets (fraction of the
    run's rows done, message). Ctrl-C marks the run ``stopped``, an error ``failed``; both resume."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    spec, info, examples, created = opened.spec, opened.info, opened.examples, opened.created
    if info.status == "done":
        return RunOutcome(info, created, 0)
    if info.status == "running" and not created and not info.writer_gone and info.pid != os.getpid():
        raise ValueError(f"run {info.run_id} is being written by process {info.pid} on {info.host}")
    store.mark_running(info.run_id, executor)
    done = store.done_units(info.run_id)
    units = [
        (unit, first, examples[first : first + n])
        for unit, (first, n) in enumerate(chunks(len(examples), info.chunk_size))
        if unit not in done
    ]
    total = len(examples)
    tracker = _Tracker(progress, info.rows_done, total)
    base_wall = info.wall_s
    start = time.perf_counter()

    def commit(stats: UnitStats, table: pa.Table) -> None:
        store.commit_unit(info.run_id, stats, table, base_wall + time.perf_counter() - start)
        tracker.finished(stats.n_rows)

    tracker.report(f"{len(units)} of {info.units_total} units to run")
    used: dict[str, Any] = {}
    try:
        if executor == "serial":
            run_serial(spec, units, commit, tracker.within if progress is not None else None)
        else:
            used = run_ray(spec, units, commit, progress, address=address, actors=actors)
    except KeyboardInterrupt:
        store.finish(info.run_id, "stopped", base_wall + time.perf_counter() - start)
        raise
    except BaseException as error:
        message = redact(f"{type(error).__name__}: {error}", address)
        store.finish(info.run_id, "failed", base_wall + time.perf_counter() - start, message)
        raise
    store.finish(info.run_id, "done", base_wall + time.perf_counter() - start)
    tracker.report(f"{total} examples done")
    return RunOutcome(store.get(info.run_id), created, len(units), used)


def read_evaluation(store: RunStore, run_id: str) -> tuple[RunInfo, SliceEvaluation]:
    """A stored run's rows as the ``SliceEvaluation`` that ``evaluate_slice`` returned for them
    (finished units only), with the times and passes summed over its units."""
    from engine.runs.rows import from_table

    info = store.get(run_id)
    evaluation = from_table(
        store.read_table(run_id),
        info.methods,
        info.metrics,
        dataset=info.dataset,
        split=info.split,
        label_names=info.label_names,
    )
    evaluation.explain_s = info.explain_s
    evaluation.metrics_s = info.metrics_s
    evaluation.forward_passes = info.forward_passes
    return info, evaluation
