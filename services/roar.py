"""ROAR jobs for the app: the bundled precomputed jobs, the stored ones (run store, read-only),
the synthetic teaching task, cost estimates and jobs started in the background.

A job started here is a separate ``python -m cli roar`` process (serial executor): it goes on
when the tab is closed, commits each retrain to the run store, and any session sees its
progress by reading the catalogue. Nothing here recomputes a stored unit.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import streamlit as st

from engine.roar import report as _report
from engine.runs.records import RunInfo, run_id_of, run_key
from engine.runs.store import RunStore, results_dir
from services.background import start_background

ROOT = Path(__file__).resolve().parents[1]
BUNDLED_DIR = ROOT / "assets" / "roar"
KIND = "roar"


def _store() -> RunStore:
    return RunStore(read_only=True)


def bundled() -> dict[str, Path]:
    """The bundled precomputed jobs by title (file name without ``.json``)."""
    if not BUNDLED_DIR.is_dir():
        return {}
    return {path.stem: path for path in sorted(BUNDLED_DIR.glob("*.json"))}


@st.cache_data(show_spinner=False, max_entries=8)
def bundled_report(name: str) -> dict[str, Any]:
    path = bundled().get(name)
    if path is None:
        raise ValueError(f"no bundled ROAR job {name!r}")
    return _report.load_report(path)


def stored_jobs(uploads: Collection[str] = ()) -> list[RunInfo]:
    """The ROAR jobs of the run store, newest first; on a shared server, a job on an uploaded data
    file only for a session that counts it as its own (``uploads``,
    ``services.uploads.hidden_uploads``)."""
    from services.uploads import hidden_uploads

    if not _store().catalogue_path.exists():
        return []
    jobs = [info for info in _store().infos() if info.kind == KIND]
    hidden = hidden_uploads([job.dataset for job in jobs], uploads)
    return [job for job, kept_from_session in zip(jobs, hidden, strict=True) if not kept_from_session]


def info(run_id: str) -> RunInfo:
    return _store().get(run_id)


def delete_job(run_id: str) -> None:
    """Remove a stored job (``services.runs.delete_run``: not in shared mode, nor while a live
    process writes it) and the cached reads of its report."""
    from services.runs import delete_run

    delete_run(run_id)
    _stored_report.clear()


@st.cache_data(show_spinner="Reading the job…", max_entries=16)
def _stored_report(run_id: str, units_done: int) -> dict[str, Any]:  # units_done: a growing job is read again
    return _report.job_report(_store(), run_id)


def stored_report(run_id: str) -> dict[str, Any]:
    return _stored_report(run_id, info(run_id).units_done)


def summary(report: dict[str, Any], metric: str = "accuracy") -> dict[str, Any]:
    """Curves with 95% intervals, Eq. 3, t-tests, leakage and the 100% floor."""
    return _report.summary(report, metric)


@st.cache_data(show_spinner="Running the synthetic task…", max_entries=4)
def synthetic(n: int = 2000, seeds: tuple[int, ...] = (0, 2, 3), metric: str = "accuracy") -> dict[str, Any]:
    """Madsen et al.'s synthetic redundancy task, plain and recursive (a few seconds)."""
    return _report.synthetic_summary(seeds, n, metric)


def _job(settings: dict[str, Any]):
    from experiments.roar.job import RoarJob

    return RoarJob.from_json(settings)


def estimate(settings: dict[str, Any], progress=None) -> dict[str, Any]:
    """The job's counts and estimated minutes from rates measured now (a few training steps)."""
    from engine.roar.cost import cost_json, estimate
    from engine.roar.run import load_data

    job = _job(settings)
    if progress is not None:
        progress(0.1, "measuring a training step and each method's explanation time")
    cost, rates = estimate(load_data(job, results_dir()))
    if progress is not None:
        progress(1.0, "measured")
    return cost_json(cost, rates)


def start_job(settings: dict[str, Any]) -> str:
    """Start (or resume) a job in a background process and return its id at once; a job with the
    same settings that is done, or being written, is returned as it is. In shared mode one
    background process at a time, runs included (``services.background.start_background``)."""
    from engine.roar.report import command_of
    from engine.roar.run import load_data, new_run

    job = _job(settings)
    run_id = run_id_of(run_key(new_run(job, load_data(job, results_dir())).key_fields))
    found = _store().find(run_id) if _store().catalogue_path.exists() else None
    if found is not None and found.nothing_to_start:
        return run_id
    _python, *module_and_options = shlex.split(command_of(job))  # "python", "-m", "cli", "roar", ...
    start_background(run_id, [sys.executable, *module_and_options, "--no-estimate", "--quiet", "--json"])
    return run_id
