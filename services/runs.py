"""Stored dataset runs for the app: the run store's catalogue and rows (opened read-only, shared by
every session), runs started in the background, and one stored example as a heatmap.

A run started from the app is a separate ``python -m cli run`` process (the serial executor):
it keeps going when the tab is closed or the page is left, writes each finished unit atomically
to the store, and any session sees its progress by reading the catalogue; in shared mode the
server starts one such process (or ROAR job) at a time. Reading a stored row never recomputes
anything, and a page reads a run's rows once (``snapshot``) for all it shows.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from core.datasets.labels import alignment_note, shares_classes
from engine.evaluate import check_target, head_defaults
from engine.runs import executor
from engine.runs.live import LiveProgress, read_live
from engine.runs.records import RunInfo, run_id_of, run_info, run_key
from engine.runs.store import RunStore
from services import agreement as _agreement
from services.access import shared_mode
from services.background import start_background
from services.explain import HeatmapResult, PredictionResult
from services.uploads import dataset_label, hidden_uploads


def _store() -> RunStore:
    return RunStore(read_only=True)


def results_folder_problem() -> str | None:
    """Why the results folder cannot hold a run store (``$ATTRIBUTION_RESULTS_DIR`` names a
    file), else None."""
    try:
        _store()
    except ValueError as error:
        return str(error)
    return None


def catalogue(uploads: Collection[str] = ()) -> pd.DataFrame:
    """Every stored run, newest first (an empty frame before the first run), its ``status``
    ``killed`` when it is marked running and its writer is gone; on a shared server, a run on an
    uploaded data file only for a session that counts it as its own (``uploads``,
    ``uploads.hidden_uploads``)."""
    if not _store().catalogue_path.exists():
        return pd.DataFrame()
    runs = _store().list_runs()  # one read of the catalogue
    # ROAR jobs and reproductions have their own pages
    if len(runs):
        runs = runs[~runs["kind"].isin(("roar", "reproduce"))]
        runs = runs.loc[[not hidden for hidden in hidden_uploads(list(runs["dataset"]), uploads)]]
    if not len(runs):
        return runs
    shown = [run_info(row).shown_status for row in runs.to_dict("records")]  # "killed": its writer is gone
    return runs.assign(status=shown).sort_values("created", ascending=False).reset_index(drop=True)


def info(run_id: str) -> RunInfo:
    return _store().get(run_id)


def within_unit(run: RunInfo) -> LiveProgress | None:
    """How far the process writing ``run`` is inside the unit it computes (``engine.runs.live``);
    None when no live process writes it, or it reports nothing."""
    return read_live(_store().root, run)


def find(run_id: str) -> RunInfo | None:
    """The run's catalogue entry; None when it is not stored (yet)."""
    return _store().find(run_id) if _store().catalogue_path.exists() else None


@st.cache_data(show_spinner="Reading the run…", max_entries=16)
def _rows(run_id: str, rows_done: int) -> pd.DataFrame:  # rows_done: a growing run is read again
    return _store().rows(run_id)


def stored_rows(run_id: str) -> pd.DataFrame:
    return _rows(run_id, info(run_id).rows_done)


@dataclass(frozen=True)
class Snapshot:
    """One read of a stored run for one run of a page: its catalogue entry, the rows finished at
    that moment and its head. Every table and figure of the page is derived from the same rows,
    so they agree even while units are being committed."""

    info: RunInfo
    rows: pd.DataFrame
    head: str  # what the outputs are (``read_head``)
    head_unknown: str | None  # why the model cannot be loaded now (then ``head`` is single_label)


def snapshot(run_id: str) -> Snapshot:
    """The run's rows as they are now, read once."""
    run = info(run_id)
    head, unknown = read_head(run.model, run.selection.get("head_type"))
    return Snapshot(run, _rows(run_id, run.rows_done), head, unknown)


def example_table(run: Snapshot) -> pd.DataFrame:
    """One row per stored example: position, text, gold and predicted label, correct, confidence,
    length, every method's metric values and the methods' disagreement (1 - mean pairwise
    Spearman rho of the word scores).

    The prediction follows the run's head (``read_head``): a single-label head's class (correct
    and confidence against the gold label); a multi-label head's labels at or above
    ``core.heads.DEFAULT_THRESHOLD`` and a regression head's score, with no correct or confidence
    columns (the dataset's gold class is not one of their outputs). The gold label is named as the
    dataset names it (``gold_names``), else shown as its number."""
    from core.heads import Head

    frame = run.rows
    names = list(run.info.label_names)
    head = Head(run.head, tuple(names))
    table = pd.DataFrame({"position": frame["position"], "id": frame["id"]})
    table["text"] = [" ".join(words)[:160] for words in frame["words"]]
    gold = [None if x is None or pd.isna(x) else int(x) for x in frame["label"]]
    classes = gold_names(run.info, head.kind)
    table["gold"] = [classes[g] if g is not None and g < len(classes) else g for g in gold]
    outputs = [np.asarray(p, dtype=float) for p in frame["probabilities"]]
    if head.kind == "single_label":
        predicted = [int(np.argmax(p)) for p in outputs]
        table["predicted"] = [names[p] if p < len(names) else p for p in predicted]
        table["correct"] = [None if g is None else g == p for g, p in zip(gold, predicted, strict=True)]
        table["confidence"] = [float(np.max(p)) for p in outputs]
    else:
        table["predicted"] = [
            float(p[0]) if head.kind == "regression" else ", ".join(names[i] for i in head.label_set(p)) or "none"
            for p in outputs
        ]
    table["words"] = [len(words) for words in frame["words"]]
    for method in run.info.methods:
        for metric in run.info.metrics:
            column = f"value/{method}/{metric}"
            if column in frame:
                table[f"{method} · {metric}"] = frame[column].astype(float)
    table["disagreement"] = [1.0 - d for d in run_agreement(run)[2]]
    return table


def metric_values(run: Snapshot) -> pd.DataFrame:
    """Long table (method, metric, value) of every stored metric value, for distribution plots."""
    frame = run.rows
    parts = [
        pd.DataFrame({"method": method, "metric": metric, "value": frame[f"value/{method}/{metric}"].astype(float)})
        for method in run.info.methods
        for metric in run.info.metrics
        if f"value/{method}/{metric}" in frame
    ]
    return (
        pd.concat(parts, ignore_index=True).dropna() if parts else pd.DataFrame(columns=["method", "metric", "value"])
    )


@st.cache_data(show_spinner=False, max_entries=16)
def _mean_curves(
    run_id: str, rows_done: int, _positions: frozenset[int]
) -> dict[str, dict[str, dict[str, list[float]]]]:
    # rows_done names the rows (_positions) of the snapshot: units committed since are left out
    from engine.slice_report import mean_curves

    evaluation = executor.read_evaluation(_store(), run_id)[1]
    evaluation.results = [r for r in evaluation.results if r.position in _positions]
    return mean_curves(evaluation)


def mean_curves(run: Snapshot) -> dict[str, dict[str, dict[str, list[float]]]]:
    """The pointwise mean curve with its 95% band of every curve metric, per method, over the
    snapshot's rows (the same rows as its tables, while units are being committed)."""
    return _mean_curves(run.info.run_id, run.info.rows_done, frozenset(int(p) for p in run.rows["position"]))


def _scores(methods: tuple[str, ...], frame: pd.DataFrame) -> list[dict[str, np.ndarray]]:
    """Each row's word scores by method (the methods that failed on it left out)."""
    return [
        {m: np.asarray(row[f"score/{m}"], dtype=np.float64) for m in methods if row[f"score/{m}"] is not None}
        for _, row in frame.iterrows()
    ]


def run_agreement(
    run: Snapshot, measure: str = "spearman", clustered: bool = False
) -> tuple[list[str], np.ndarray, list[float]]:
    """The run's mean methods x methods agreement and each example's mean pairwise agreement, in
    the order of the snapshot's rows."""
    return _run_agreement(run.info.run_id, len(run.rows), measure, clustered, run.info.methods, run.rows)


@st.cache_data(show_spinner=False, max_entries=32)
def _run_agreement(
    run_id: str, rows: int, measure: str, clustered: bool, methods: tuple[str, ...], _frame: pd.DataFrame
) -> tuple[list[str], np.ndarray, list[float]]:  # rows: committed rows only grow, so their count names them
    return _agreement.run_agreement(_scores(methods, _frame), measure, clustered=clustered)


def gold_names(run: RunInfo, head: str) -> tuple[str, ...]:
    """The names of a run's gold classes: the model's where the dataset names one of the model's
    classes (the run numbered its gold labels as the model's, ``core.datasets.align_labels``); else
    the dataset's own where it loads here and names them; else the model's for a single-label head
    (a run's model shares its dataset's classes where a data file gives class numbers); else none
    (a regression or multi-label head's labels are not the dataset's classes)."""
    names = _dataset_class_names(run)
    if shares_classes(names, run.label_names):
        return tuple(run.label_names)
    return names or (tuple(run.label_names) if head == "single_label" else ())


def label_note(run: RunInfo, head: str) -> str | None:
    """A line for a single-label run whose dataset names classes the model does not name (a data
    file's ``pos``, ``neg`` under a model's ``negative``, ``positive``): how its gold labels were
    taken (``core.datasets.labels.alignment_note``); None otherwise."""
    return alignment_note(_dataset_class_names(run), run.label_names) if head == "single_label" else None


def _dataset_class_names(run: RunInfo) -> tuple[str, ...]:
    from services.data import dataset_example

    try:
        return tuple(dataset_example(run.dataset, run.split, 0).label_names)
    except ValueError:
        return ()


@st.cache_data(show_spinner=False, max_entries=64)
def _detected_head(model: str) -> str:
    """The head kind ``model``'s config gives, read without its weights (no hub download, no
    model evicted from the cache); ``ValueError`` when it cannot be read now or the model is not
    offered (shared mode); an error is not cached, so the next call tries again."""
    from core.models import read_head_kind
    from services.access import check_model
    from services.models import load_error_message

    check_model(model)
    try:
        return read_head_kind(model)
    except (OSError, ValueError, KeyError, TypeError) as error:  # why the config cannot be read
        raise ValueError(load_error_message(model, error)) from None


def read_head(model: str, override: str | None = None) -> tuple[str, str | None]:
    """(what a stored run's outputs are, why that is unknown now): the run's head-type
    ``override`` (its ``selection``'s ``head_type``), else ``core.heads``' kind of the model's head
    as its config gives it, or ``single_label`` with the one-line reason when the model cannot be
    loaded now (folder gone, hub offline, not offered in shared mode): its stored results still
    show."""
    if override is not None:
        return override, None
    try:
        return _detected_head(model), None
    except ValueError as error:
        return "single_label", str(error)


def stored_heatmap(run_id: str, position: int) -> HeatmapResult:
    """One stored example with its run's attributions, as the heatmap page shows a fresh result."""
    run = info(run_id)
    example, attributions = _store().example(run_id, position)
    head = read_head(run.model, run.selection.get("head_type"))[0]
    classes = gold_names(run, head)  # the stored example is named with the model's labels
    if example.label is not None and not example.label < len(classes):
        classes = ()
    example = dataclasses.replace(example, label_names=classes)
    frame = stored_rows(run_id)
    row = frame[frame["position"] == position].iloc[0]
    probabilities = tuple(float(p) for p in row["probabilities"])
    prediction = PredictionResult(
        example,
        probabilities,
        int(np.argmax(probabilities)),
        tuple(run.label_names),
        int(row.get("dropped_words", 0) or 0),
        head,
    )
    errors = {m: str(row[f"error/{m}"]) for m in run.methods if f"error/{m}" in row and not pd.isna(row[f"error/{m}"])}
    return HeatmapResult(prediction, int(row["target"]), attributions, errors)


def dataset_index(run: RunInfo, position: int) -> int | None:
    """The dataset index of a stored row: its position for a computed run (the first N examples),
    the recorded index for an import (None for an example that came from the file's text)."""
    indices = run.selection.get("indices")
    return position if indices is None else indices[position]


def stored_for(stored: tuple[str, int] | None, model: str, dataset: str | None, split: str | None, index: int | None):
    """The stored heatmap ``stored`` = (run id, position) names, when it is the example the sidebar
    selects (same model, dataset, split and example, explained as the run was: the run's head,
    the config's or its override, and its autocast, since scores move with the precision); None
    otherwise."""
    from core.model_refs import model_ref

    if not stored:
        return None
    run_id, position = stored
    found = _store().find(run_id) if _store().catalogue_path.exists() else None
    ref = (
        None
        if found is None
        else model_ref(found.model, found.selection.get("head_type"), found.selection.get("autocast"))
    )
    if found is None or (ref, found.dataset, found.split) != (model, dataset, split):
        return None
    if dataset_index(found, position) != index:
        return None
    return stored_heatmap(run_id, position)


def _run_metrics(head, target: str, methods: list[str], metrics: list[str]) -> list[str]:
    """The metrics a run of ``head`` computes (log-odds left out for a raw score); ``ValueError``
    in one line for a run that explains nothing or measures nothing, or the gold class of a head
    that does not output it (``engine.evaluate.check_target``)."""
    check_target([], target, head.kind)
    if not methods:
        raise ValueError("pick at least one method to run")
    kept = head_defaults(metrics, head.kind)  # the app's default metrics hold log-odds
    if not kept:
        dropped = " other than log_odds (a regression head's score has no log-odds)" if metrics else ""
        raise ValueError(f"pick at least one metric{dropped} to run")
    return kept


def start_run(
    model: str,
    dataset: str,
    split: str,
    limit: int | None,
    methods: list[str],
    metrics: list[str],
    target: str = "predicted",
    seed: int | None = None,
) -> str:
    """Start (or resume) a run in a background process and return its id at once. A run with the
    same key that is already done is returned as it is; one being written is left alone. Runs
    use the sidebar's head (the config's, or its head-type override: a run of its own; a
    regression head's runs leave log-odds out); in shared mode one background process at a time
    (``start_background``)."""
    from core.model_refs import ref_autocast, split_ref
    from services.models import classifier

    name, head_type = split_ref(model)
    metrics = _run_metrics(classifier(model).head, target, methods, metrics)
    autocast = ref_autocast(model)  # the sidebar's scoring precision, part of the run's key
    spec = executor.RunSpec(
        model=name,
        dataset=dataset,
        split=split,
        limit=limit,
        methods=tuple(methods),
        metrics=tuple(metrics),
        seed=seed,
        target=target,
        autocast=autocast,
        head_type=head_type,
    )
    new, _ = executor.prepare(spec)
    run_id = run_id_of(run_key(new.key_fields))
    found = _store().find(run_id) if _store().catalogue_path.exists() else None
    if found is not None and found.nothing_to_start:
        return run_id
    command = [sys.executable, "-m", "cli", "run", "--model", name, "--dataset", dataset, "--split", split]
    command += ["--autocast", autocast] if autocast is not None else []
    command += ["--head-type", head_type] if head_type is not None else []
    command += ["--limit", str(limit)] if limit is not None else ["--all"]
    command += ["--methods", ",".join(methods), "--metrics", ",".join(metrics), "--target", target]
    command += ["--executor", "serial", "--quiet", "--json"] + (["--seed", str(seed)] if seed is not None else [])
    start_background(run_id, command)
    return run_id


def delete_run(run_id: str) -> None:
    """Remove a stored run (``RunStore.delete``: refused while a live process writes it), and the
    cached reads of its rows, which a run with the same id computed again must not meet. Refused
    in shared mode: the store is every visitor's."""
    if shared_mode():
        raise ValueError("runs are not deleted on a shared server (`python -m cli delete` on the server does it)")
    RunStore().delete(run_id)
    for cached in (_rows, _mean_curves, _run_agreement):
        cached.clear()


def run_label(row: dict[str, Any]) -> str:
    imported = " · imported" if row.get("kind") == "import" else ""
    dataset = dataset_label(row["dataset"])
    return f"{row['run_id']}{imported} · {row['model']} · {dataset}/{row['split']} · {row['rows_done']}/{row['rows_total']} · {row['status']}"
