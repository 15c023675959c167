"""Stored dataset runs for the app: the run store's catalogue and rows (opened read-only, shared by
every session), runs started in the background, and one stored example as a heatmap.

A run started from the app is a separate ``python -m cli run`` process (the serial executor):
it keeps going when the tab is closed or the page is left, writes each finished unit atomically
to the store, and any session sees its progress by reading the catalogue. Reading a stored row
never recomputes anything.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from engine.runs import executor
from engine.runs.records import RunInfo, run_id_of, run_key
from engine.runs.store import RunStore, results_dir
from services import agreement as _agreement
from services.explain import HeatmapResult, PredictionResult

ROOT = Path(__file__).resolve().parents[1]


def _store() -> RunStore:
    return RunStore(read_only=True)


def catalogue() -> pd.DataFrame:
    """Every stored run, newest first (an empty frame before the first run)."""
    if not _store().catalogue_path.exists():
        return pd.DataFrame()
    runs = _store().list_runs()
    # ROAR jobs and reproductions have their own pages
    runs = runs[~runs["kind"].isin(("roar", "reproduce"))] if len(runs) else runs
    return runs.sort_values("created", ascending=False).reset_index(drop=True) if len(runs) else runs


def info(run_id: str) -> RunInfo:
    return _store().get(run_id)


@st.cache_data(show_spinner="Reading the run…", max_entries=16)
def _rows(run_id: str, rows_done: int) -> pd.DataFrame:  # rows_done: a growing run is read again
    return _store().rows(run_id)


def stored_rows(run_id: str) -> pd.DataFrame:
    return _rows(run_id, info(run_id).rows_done)


def example_table(run_id: str) -> pd.DataFrame:
    """One row per stored example: position, text, gold and predicted label, correct, confidence,
    length, every method's metric values and the methods' disagreement (1 - mean pairwise
    Spearman rho of the word scores).

    The prediction follows the run's head (``head_kind``): a single-label head's class (correct
    and confidence against the gold label); a multi-label head's labels at or above
    ``core.heads.DEFAULT_THRESHOLD`` and a regression head's score, with no correct or confidence
    columns (the dataset's gold class is not one of their outputs). The gold label is named as the
    dataset names it (``gold_names``), else shown as its number."""
    from core.heads import Head

    run = info(run_id)
    frame = stored_rows(run_id)
    names = list(run.label_names)
    head = Head(head_kind(run.model), tuple(names))
    table = pd.DataFrame({"position": frame["position"], "id": frame["id"]})
    table["text"] = [" ".join(words)[:160] for words in frame["words"]]
    gold = [None if x is None or pd.isna(x) else int(x) for x in frame["label"]]
    classes = gold_names(run, head.kind)
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
    for method in run.methods:
        for metric in run.metrics:
            column = f"value/{method}/{metric}"
            if column in frame:
                table[f"{method} · {metric}"] = frame[column].astype(float)
    table["disagreement"] = [1.0 - d for d in run_agreement(run_id)[2]]
    return table


def metric_values(run_id: str) -> pd.DataFrame:
    """Long table (method, metric, value) of every stored metric value, for distribution plots."""
    run = info(run_id)
    frame = stored_rows(run_id)
    parts = [
        pd.DataFrame({"method": method, "metric": metric, "value": frame[f"value/{method}/{metric}"].astype(float)})
        for method in run.methods
        for metric in run.metrics
        if f"value/{method}/{metric}" in frame
    ]
    return (
        pd.concat(parts, ignore_index=True).dropna() if parts else pd.DataFrame(columns=["method", "metric", "value"])
    )


@st.cache_data(show_spinner=False, max_entries=16)
def _mean_curves(run_id: str, rows_done: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    from engine.slice_report import mean_curves

    return mean_curves(executor.read_evaluation(_store(), run_id)[1])


def mean_curves(run_id: str) -> dict[str, dict[str, dict[str, list[float]]]]:
    """The pointwise mean curve with its 95% band of every curve metric, per method."""
    return _mean_curves(run_id, info(run_id).rows_done)


def _scores(run_id: str) -> list[dict[str, np.ndarray]]:
    run = info(run_id)
    frame = stored_rows(run_id)
    out = []
    for _, row in frame.iterrows():
        found = {
            m: np.asarray(row[f"score/{m}"], dtype=np.float64) for m in run.methods if row[f"score/{m}"] is not None
        }
        out.append(found)
    return out


def run_agreement(
    run_id: str, measure: str = "spearman", clustered: bool = False
) -> tuple[list[str], np.ndarray, list[float]]:
    """The run's mean methods x methods agreement and each example's mean pairwise agreement."""
    return _run_agreement(run_id, info(run_id).rows_done, measure, clustered)


@st.cache_data(show_spinner=False, max_entries=32)
def _run_agreement(
    run_id: str, rows_done: int, measure: str, clustered: bool
) -> tuple[list[str], np.ndarray, list[float]]:
    return _agreement.run_agreement(_scores(run_id), measure, clustered=clustered)


def gold_names(run: RunInfo, head: str) -> tuple[str, ...]:
    """The names of a run's gold classes: the dataset's own where it loads here; else the model's
    for a single-label head (a run's model shares its dataset's classes); else none (a regression
    or multi-label head's labels are not the dataset's classes)."""
    from services.data import dataset_example

    try:
        return dataset_example(run.dataset, run.split, 0).label_names
    except ValueError:
        return tuple(run.label_names) if head == "single_label" else ()


@st.cache_data(show_spinner=False, max_entries=64)
def head_kind(model: str) -> str:
    """What a stored run's outputs are (``core.heads``: a dataset run explains the head its model's
    config gives): ``regression`` for a raw score, else a probability. A model that cannot be
    loaded here any more reads as ``single_label``: its stored results still show."""
    from services.models import classifier

    try:
        return classifier(model).head.kind
    except ValueError:
        return "single_label"


def stored_heatmap(run_id: str, position: int) -> HeatmapResult:
    """One stored example with its run's attributions, as the heatmap page shows a fresh result."""
    run = info(run_id)
    example, attributions = _store().example(run_id, position)
    head = head_kind(run.model)
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
    selects (same model, dataset, split and example); None otherwise."""
    if not stored:
        return None
    run_id, position = stored
    found = _store().find(run_id) if _store().catalogue_path.exists() else None
    if found is None or (found.model, found.dataset, found.split) != (model, dataset, split):
        return None
    if dataset_index(found, position) != index:
        return None
    return stored_heatmap(run_id, position)


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
    use the head the model's config gives (a regression head's runs leave log-odds out)."""
    from services.models import classifier, ref_autocast, split_ref

    name, head_type = split_ref(model)
    if head_type is not None:
        raise ValueError("dataset runs use the head the model's config gives: clear the sidebar's head-type override")
    head = classifier(model).head
    if target == "gold" and head.kind != "single_label":
        raise ValueError(
            f"a {head.kind.replace('_', '-')} head explains its own outputs, not the dataset's gold class: "
            "explain the predicted output"
        )
    if not head.is_probability:
        metrics = [m for m in metrics if m != "log_odds"]
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
    )
    new, _ = executor.prepare(spec)
    run_id = run_id_of(run_key(new.key_fields))
    found = _store().find(run_id) if _store().catalogue_path.exists() else None
    if found is not None and (found.status == "done" or (found.status == "running" and not found.writer_gone)):
        return run_id
    command = [sys.executable, "-m", "cli", "run", "--model", name, "--dataset", dataset, "--split", split]
    command += ["--autocast", autocast] if autocast is not None else []
    command += ["--limit", str(limit)] if limit is not None else ["--all"]
    command += ["--methods", ",".join(methods), "--metrics", ",".join(metrics), "--target", target]
    command += ["--executor", "serial", "--quiet", "--json"] + (["--seed", str(seed)] if seed is not None else [])
    logs = results_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{run_id}.log", "a") as log:
        subprocess.Popen(
            command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ}
        )
    return run_id


def run_label(row: dict[str, Any]) -> str:
    imported = " · imported" if row.get("kind") == "import" else ""
    return f"{row['run_id']}{imported} · {row['model']} · {row['dataset']}/{row['split']} · {row['rows_done']}/{row['rows_total']} · {row['status']}"
