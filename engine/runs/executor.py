"""Run a dataset evaluation as units of work, stored as they finish (``engine.runs.store``).

A unit is ``chunk_size`` examples of the selection of similar length (``worker.unit_order``; the
units of a run made before that are consecutive rows; the size by the examples' length where the
spec names none: ``worker.unit_size``), explained by every
method and scored by every metric with ``engine.evaluate.evaluate_slice`` (the one
implementation of dataset evaluation). Units are independent, so they run anywhere:

- ``serial``: one after the other in this process (debugging, and the reference).
- ``ray``: on Ray actors (``engine.runs.ray_executor``): one per GPU when the cluster has GPUs,
  else CPU actors that share the CPUs; an embedded local Ray by default, or an existing cluster.

What scales is the number of examples: units spread over actors. Inside a unit the examples are
explained together (``evaluate_slice``'s ``group``: one padded forward/backward for the one-pass
gradient and attention methods, pooled scorer batches for the one-call perturbation methods);
the methods run in order, so one example is never faster than on one worker.

Each worker (``engine.runs.worker``) loads the model once and halves its batch on an
out-of-memory error. The driver is the only writer of the store: a unit's rows are committed as
soon as it comes back, so a run stopped at any point resumes with the units not yet committed
(``resume``). What a run computes is its ``RunSpec`` (``engine.runs.spec``); its key fingerprints
the model's files (``engine.runs.model_identity``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.datasets.files import FILE_PREFIX, content_key
from core.progress import count_text
from core.types import Example, ProgressFn
from engine.evaluate import SliceEvaluation, check_target
from engine.runs.live import LiveWriter, RunTracker
from engine.runs.model_identity import label_names, model_fingerprint
from engine.runs.ray_executor import run_ray
from engine.runs.records import NewRun, RunInfo, UnitStats, run_key
from engine.runs.secrets import redact
from engine.runs.spec import RunSpec, spec_of
from engine.runs.store import RunStore
from engine.runs.worker import Commit, Unit, UnitWorker, Within, token_lengths, unit_order, unit_rows, unit_size

if TYPE_CHECKING:
    import pyarrow as pa

EXECUTORS = ("ray", "serial")


def check_executor(executor: str) -> None:
    """Refuse an executor that is not one of ``EXECUTORS`` (call it before the run is stored)."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")


def check_startable(spec: RunSpec, executor: str, address: str | None = None) -> None:
    """The refusals that come before a run is stored, so none leaves a failed run behind: an
    unknown executor, a Ray cluster (``address``, else ``$RAY_ADDRESS``) that takes no
    connection, and an autocast type that this machine, where the serial executor and the
    embedded Ray compute, cannot run."""
    import torch

    from core.devices import best_device, check_autocast
    from engine.runs.ray_executor import check_reachable

    check_executor(executor)
    address = (address or os.environ.get("RAY_ADDRESS")) if executor == "ray" else None
    if address:
        check_reachable(address)
    elif spec.autocast is not None:
        check_autocast(best_device(), getattr(torch, spec.autocast))


def run_serial(
    spec: RunSpec, units: Sequence[Unit], commit: Commit, within: Within | None = None, *, results: Path | None = None
) -> None:
    """Every unit in this process, one after the other; ``within(n_rows, unit)`` gives the
    progress callback of a unit's examples; AML's pre-trained models are kept under the results
    folder ``results``."""
    if not units:
        return
    worker = UnitWorker(spec, results=results)
    for unit, rows, examples in units:
        commit(*worker.run(unit, rows, examples, within(len(examples), unit) if within else None))


@dataclass
class RunOutcome:
    """The stored run after ``execute`` and what this call did."""

    info: RunInfo
    created: bool  # a new run (else: found by its key, or resumed)
    computed_units: int  # units computed by this call (0: the run was already done)
    executor: dict[str, Any] = field(default_factory=dict)


def prepare(spec: RunSpec) -> tuple[NewRun, list[Example]]:
    """The catalogue entry of ``spec`` (its key fields fingerprint the model, and the masked LM
    when one is used) and the examples of its selection. The entry's unit size and row order are
    those of a new run (``worker.unit_size``, ``worker.unit_order``); a stored run keeps its own."""
    from core.datasets import load_examples
    from core.heads import Head
    from core.models import config_head_kind
    from metrics.faithfulness import check_head

    examples = load_examples(spec.dataset, spec.split, spec.data_dir, limit=spec.limit, exact=True)
    if not examples:
        raise ValueError(f"{spec.dataset}/{spec.split} has no examples")
    configured = config_head_kind(spec.model)
    override = spec.head_type if spec.head_type != configured else None  # the config's own head: no override
    head = override or configured
    check_target(examples, spec.target, head)  # these refusals come before the run is written
    if head is not None:
        check_head(Head(head, ()), spec.metrics)
    _check_segments(spec, examples)
    fingerprint = model_fingerprint(spec.model)
    lengths, read = token_lengths(spec.model, examples)
    chunk_size = spec.chunk_size or unit_size(read)
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
    content = content_key(spec.dataset)  # a file of one's own: keyed by its content, not its name
    key_fields |= content
    selection |= content
    if spec.data_dir is not None:  # where to find the data again on resume (not in the key)
        selection["data_dir"] = str(Path(spec.data_dir).resolve())
    if spec.autocast is not None:  # float32 runs keep the key they had before autocast was an option
        key_fields["autocast"] = selection["autocast"] = spec.autocast
    if override is not None:  # likewise: a run on the config's head keeps its key
        key_fields["head_type"] = selection["head_type"] = override
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
        chunk_size=chunk_size,
        rows_total=len(examples),
        row_order=unit_order(lengths, chunk_size),
    )
    return new, examples


def _check_segments(spec: RunSpec, examples: Sequence[Example]) -> None:
    """Refuse, before the run is written, a split of sentence pairs for a model known to read
    single texts, or of single texts for a pair model (``core.loaded.segments_refusal``)."""
    from core.loaded import segments_refusal
    from core.models import model_info

    pair = model_info(spec.model).get("pair")
    if any(segments_refusal(spec.model, pair, example.is_pair) for example in examples):
        reads, holds = ("sentence pairs", "single texts") if pair else ("single texts", "sentence pairs")
        raise ValueError(f"{spec.model} classifies {reads}, and {spec.dataset}/{spec.split} holds {holds}")


@dataclass
class OpenedRun:
    """A run found or created in the catalogue, with the examples of its selection."""

    spec: RunSpec
    info: RunInfo
    examples: list[Example]
    created: bool


def resume_spec(store: RunStore, run_id: str, *, data_dir: str | None = None, batch_size: int | None = None) -> RunSpec:
    """The spec of stored run ``run_id`` (its model, data, methods, metrics, parameters, seed),
    its data read from ``data_dir`` when given, else from the folder it was started with."""
    stored = spec_of(store.get(run_id))
    return dataclasses.replace(stored, data_dir=data_dir or stored.data_dir, batch_size=batch_size)


def open_run(spec: RunSpec, store: RunStore, *, resume: str | None = None) -> OpenedRun:
    """The run of ``spec`` in ``store``: created when its key is new, else the stored one (a run
    with the same key is the same run). With ``resume``, the stored run ``resume``, which ``spec``
    must still describe (it does not when the model's files or a method's defaults changed since);
    that is checked before anything is written: a spec refused (no such examples, no model)
    leaves no store on disk."""
    new, examples = prepare(spec)
    if resume is not None:
        return OpenedRun(spec, _still_matching(store.get(resume), new), examples, False)
    info, created = store.create_or_resume(new)
    return OpenedRun(spec, info, examples, created)


def _still_matching(stored: RunInfo, new: NewRun) -> RunInfo:
    """``stored``, when ``new`` (the run its spec describes now) has its key; else a one-line error
    saying what changed."""
    if stored.run_key != run_key(new.key_fields):
        raise ValueError(f"run {stored.run_id} cannot be resumed: {_what_changed(stored, new)}")
    return stored


def _what_changed(stored: RunInfo, new: NewRun) -> str:
    """Why stored run ``stored`` no longer has the key of ``new``, the run its spec describes
    now."""
    if stored.kind != new.kind:
        return f"it is a run of kind {stored.kind}, not a dataset evaluation"
    if stored.model_fingerprint != new.model_fingerprint:
        return f"the files of its model {stored.model} changed since"
    if stored.selection.get("data_fingerprint") != new.selection.get("data_fingerprint"):
        return f"its data file {stored.dataset.removeprefix(FILE_PREFIX)} changed since"
    params = json.loads(json.dumps(new.params))  # as stored: tuples become lists
    changed = sorted(k for k in {*stored.params, *params} if stored.params.get(k) != params.get(k))
    if changed:
        return f"the default parameters of {', '.join(changed)} changed since"
    mlm = stored.selection.get("mlm") or new.selection.get("mlm")
    if mlm:
        return f"the files of its masked LM {mlm} changed since"
    return "its settings give another key now"


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
    recomputed) or whose files are gone or damaged, committing each to ``store`` as it finishes.
    ``progress`` gets (fraction of the run's rows done, message). A run another live process
    writes is refused (``RunStore.claim``). Ctrl-C marks the run ``stopped``, an error ``failed``
    (an executor that returns with a unit not computed too); both resume."""
    check_executor(executor)
    spec, examples, created = opened.spec, opened.examples, opened.created
    order = store.row_order(opened.info.run_id) or range(len(examples))  # a run made before length order: its own
    if len(order) != len(examples):
        raise ValueError(f"run {opened.info.run_id} has {len(order)} rows; its selection has {len(examples)} examples")
    info = store.claim(opened.info.run_id, executor)  # refused while another process writes it
    if info.status == "done":  # untouched by the claim: whole, or reopened to compute what is gone
        if len(_readable_units(store, info.run_id)) == info.units_total:
            return RunOutcome(info, created, 0)
        info = store.claim(info.run_id, executor, reopen=True)
    total = len(examples)
    base_wall = info.wall_s
    start = time.perf_counter()
    live: LiveWriter | None = None
    try:  # the run is this process's from here: whatever ends the session is recorded
        done = _readable_units(store, info.run_id)  # a unit whose file is gone or damaged is computed again
        units = [
            (unit, rows, [examples[row] for row in rows])
            for unit, rows in enumerate(unit_rows(order, info.chunk_size))
            if unit not in done
        ]
        live = LiveWriter(store.root, info.run_id, lambda: base_wall + time.perf_counter() - start)
        tracker = RunTracker(progress, live, total - sum(len(rows) for _, rows, _ in units), total)

        def commit(stats: UnitStats, table: pa.Table) -> None:
            store.commit_unit(info.run_id, stats, table, base_wall + time.perf_counter() - start)
            tracker.finished(stats.n_rows, stats.unit)

        tracker.report(f"{len(units)} of {info.units_total} units to run")
        used: dict[str, Any] = {}
        if executor == "serial":
            run_serial(spec, units, commit, tracker.within, results=store.root)
        elif units:  # nothing left (a run stopped after its last commit) starts no cluster
            used = run_ray(spec, units, commit, tracker.report, within=tracker.within, address=address,
                           actors=actors, results=store.root)  # fmt: skip
        _check_complete(store, info, executor)
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM (Ray's driver handler exits on it)
        store.finish(info.run_id, "stopped", base_wall + time.perf_counter() - start)
        raise
    except BaseException as error:
        message = redact(f"{type(error).__name__}: {error}", address)
        store.finish(info.run_id, "failed", base_wall + time.perf_counter() - start, message)
        raise
    finally:
        if live is not None:
            live.close()
    store.finish(info.run_id, "done", base_wall + time.perf_counter() - start)
    tracker.report(f"{count_text(total, 'example')} done")
    return RunOutcome(store.get(info.run_id), created, len(units), used)


def _readable_units(store: RunStore, run_id: str) -> set[int]:
    """The run's committed units whose Parquet files can still be read."""
    from engine.runs.unit_files import unit_file_problem

    units = store.units(run_id)
    if units.empty:
        return set()
    return {
        int(unit)
        for unit, path in zip(units["unit"], units["path"], strict=True)
        if unit_file_problem(store.root, path) is None
    }


def _check_complete(store: RunStore, info: RunInfo, executor: str) -> None:
    """Refuse to call a run done while a unit is not committed (an executor that returned early)."""
    missing = set(range(info.units_total)) - store.done_units(info.run_id)
    if missing:
        raise ValueError(
            f"run {info.run_id}: {len(missing)} of its {info.units_total} units were not computed"
            f" (the {executor} executor returned without them)"
        )


def head_of(info: RunInfo) -> str | None:
    """The head a stored run explained (``core.heads`` kind): its head-type override, else the one
    its model's config gives (None where that cannot be read now)."""
    from core.models import config_head_kind

    return info.selection.get("head_type") or config_head_kind(info.model)


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
    evaluation.probabilities = head_of(info) != "regression"  # the head the run explained
    evaluation.explain_s = info.explain_s
    evaluation.metrics_s = info.metrics_s
    evaluation.forward_passes = info.forward_passes
    return info, evaluation
