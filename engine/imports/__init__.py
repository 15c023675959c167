"""Attributions made elsewhere, brought into the run store (issue 19 item 4).

``import_file(path, store, model=..., dataset=..., split=...)`` reads a file of one of
``formats.FORMATS`` (this project's JSON, CSV, ferret, inseq, Thermostat; parsed, never
evaluated, size-limited: ``records``), lines every attribution up with the model's words
(``align``) and stores the examples as a run of kind ``import``: the model's prediction, the
imported scores under ``<source>.<name>`` method keys, any built-in ``methods`` computed on the
same examples beside them, and every metric of every attribution, all through
``engine.evaluate.evaluate_slice`` (``given=``), the one implementation of dataset evaluation.
The run then shows in ``python -m cli runs`` / ``show`` and on the explorer page like a computed
one; its ``selection`` holds the provenance (``import``: format, file name, SHA-256, bytes,
records, time) and the dataset index of each stored row (``indices``; None for an example that
came from the file's own text).

Importing the same file with the same settings again finds the stored run (the key includes the
file's SHA-256).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.progress import count_text
from core.types import ProgressFn
from engine.imports.formats import FORMATS, read_bytes, read_file
from engine.imports.records import read_limited
from engine.runs.records import NewRun, RunInfo, UnitStats

if TYPE_CHECKING:
    from core.classifier import Classifier
    from engine.runs.store import RunStore

__all__ = ["FORMATS", "ImportOutcome", "import_bytes", "import_file"]

UNIT_ROWS = 32  # examples per stored unit of an import


@dataclass
class ImportOutcome:
    info: RunInfo
    created: bool  # False: the same import was already stored
    notes: tuple[str, ...] = ()  # one line each, to show as warnings: the file names another model


def import_file(path: str | Path, store: RunStore, *, fmt: str | None = None, **options: Any) -> ImportOutcome:
    """Import the file (or Thermostat ``save_to_disk`` folder) at ``path``; ``store`` and
    ``options`` as ``import_bytes``."""
    path = Path(path)
    if not path.is_dir():  # read once: the digest is of the bytes parsed
        return import_bytes(read_limited(path), path.name, store, fmt=fmt, **options)
    found, records = read_file(path, fmt)
    return _store_import(records, store, found, path.name, _digest(path), **options)


def import_bytes(data: bytes, name: str, store: RunStore, *, fmt: str | None = None, **options: Any) -> ImportOutcome:
    """Import an uploaded file's bytes into ``store``, which is first written once the file, the
    model and the examples passed every check (a refused import leaves no store). ``options``:
    ``model`` (required), ``dataset`` and ``split`` (match records to that split by id; else the
    examples come from the file; ``data_dir`` the folder of a local dataset), ``methods``
    (built-in methods to compute beside), ``metrics``, ``overrides``, ``target``, ``mlm``,
    ``progress``, ``clf`` (the model already loaded, else it is loaded here)."""
    found, records = read_bytes(data, name, fmt)
    return _store_import(records, store, found, name, hashlib.sha256(data).hexdigest(), **options)


def _digest(folder: Path) -> str:
    """The SHA-256 of a folder's files, in the order of their paths."""
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        with open(file, "rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()


def _store_import(
    records: list,
    store: RunStore,
    fmt: str,
    name: str,
    sha256: str,
    *,
    model: str,
    dataset: str | None = None,
    split: str | None = None,
    data_dir: str | None = None,
    methods: Sequence[str] = (),
    metrics: Sequence[str] = ("deletion", "insertion", "comprehensiveness", "sufficiency", "log_odds"),
    overrides: dict[str, dict[str, str]] | None = None,
    target: str = "predicted",
    mlm: str = "minilm-mlm",
    progress: ProgressFn | None = None,
    clf: Classifier | None = None,
) -> ImportOutcome:
    import explainers
    from core.classifier import Classifier as _Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier
    from engine.evaluate import evaluate_slice, metric_params, needs_mlm, resolve_metrics
    from engine.imports.align import align
    from engine.imports.explanations import model_notes
    from engine.runs.model_identity import label_names, model_fingerprint
    from engine.runs.records import run_id_of, run_key
    from engine.runs.rows import to_table
    from engine.runs.worker import set_positions

    if (dataset is None) != (split is None):
        raise ValueError("give both a dataset and a split, or neither (the examples then come from the file)")
    method_keys = explainers.resolve(list(methods)) if methods else []
    metric_keys = resolve_metrics(",".join(metrics))
    params_by_metric = metric_params(metric_keys, overrides)
    clf = clf if clf is not None else _Classifier(load_classifier(model))
    examples = load_examples(dataset, split, data_dir) if dataset is not None and split is not None else None
    notes = model_notes(records, model, name)
    aligned = align(clf, records, examples, source=f"import:{Path(name).stem}")
    for entry in aligned:  # before anything is stored: an import the model cannot score leaves no run
        if entry.index is None and clf.loaded.pair is True and not entry.example.is_pair:
            raise ValueError(
                f"{name}: example {entry.example.id!r}: {clf.name} classifies sentence pairs, but the file does not"
                " say which words are the premise and which the hypothesis: import it with a dataset and split"
                " (--dataset, --split), or import the page's session bundle"
            )
        try:
            clf.check_example(entry.example)
        except ValueError as error:
            raise ValueError(f"{name}: example {entry.example.id!r}: {error}") from None
    imported = list(dict.fromkeys(m for entry in aligned for m in entry.attributions))
    fingerprint = model_fingerprint(model)
    resolved = {
        key: dataclasses.asdict(explainers.get(key).make_params((overrides or {}).get(key, {}))) for key in method_keys
    }
    resolved |= {key: dataclasses.asdict(params) for key, params in params_by_metric.items()}
    key_fields = {
        "kind": "import",
        "model_fingerprint": fingerprint,
        "dataset": dataset,
        "split": split,
        "file_sha256": sha256,
        "format": fmt,
        "methods": method_keys,
        "metrics": metric_keys,
        "params": resolved,
        "overrides": overrides or {},
        "target": target,
    }
    if needs_mlm(method_keys, params_by_metric):  # its fill-ins make the numbers
        key_fields["mlm_fingerprint"] = model_fingerprint(mlm)
    found = store.find(run_id_of(run_key(key_fields)))
    if found is not None and found.status == "done":
        return ImportOutcome(found, False, notes)
    provenance = {
        "format": fmt,
        "file": Path(name).name,
        "sha256": sha256,
        "records": len(records),
        "imported": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    new = NewRun(
        key_fields=key_fields,
        kind="import",
        model=model,
        model_fingerprint=fingerprint,
        dataset=dataset or f"import:{Path(name).stem}",
        split=split or fmt,
        selection={"import": provenance, "indices": [entry.index for entry in aligned], "limit": None},
        methods=[*method_keys, *imported],
        metrics=metric_keys,
        params=resolved,
        overrides=overrides or {},
        seed=None,
        target=target,
        label_names=label_names(model),
        chunk_size=UNIT_ROWS,
        rows_total=len(aligned),
    )
    info, _ = store.create_or_resume(new)
    info = store.claim(info.run_id, "import")  # one writer: refused while another live process imports it
    if info.status == "done":
        return ImportOutcome(info, False, notes)
    done = store.done_units(info.run_id)  # an import stopped half-way goes on where it stopped
    start = time.perf_counter()
    try:  # from here on, a failure marks the run failed (and lets it go) instead of leaving it held
        masked = None
        if needs_mlm(method_keys, params_by_metric):
            from core.masked_lm import MaskedLM

            masked = MaskedLM.load(mlm)
        for unit, first in enumerate(range(0, len(aligned), UNIT_ROWS)):
            if unit in done:
                continue
            chunk = aligned[first : first + UNIT_ROWS]
            if progress is not None:
                progress(first / len(aligned), f"example {first + 1} of {len(aligned)}")
            passes = clf.forward_passes
            evaluation = evaluate_slice(
                clf,
                [entry.example for entry in chunk],
                method_keys,
                params_by_metric,
                method_params=overrides,
                mlm=masked,
                target=target,
                given=[entry.attributions for entry in chunk],
            )
            evaluation.methods = list(new.methods)  # every unit has every column
            set_positions(evaluation, range(first, first + len(chunk)))
            stats = UnitStats(
                unit, first, len(chunk), clf.forward_passes - passes, evaluation.explain_s, evaluation.metrics_s
            )
            store.commit_unit(info.run_id, stats, to_table(evaluation), time.perf_counter() - start)
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM under the command line's handler
        store.finish(info.run_id, "stopped", time.perf_counter() - start)
        raise
    except BaseException as error:
        store.finish(info.run_id, "failed", time.perf_counter() - start, f"{type(error).__name__}: {error}")
        raise
    store.finish(info.run_id, "done", time.perf_counter() - start)
    if progress is not None:
        progress(1.0, f"{count_text(len(aligned), 'example')} imported")
    return ImportOutcome(store.get(info.run_id), True, notes)
