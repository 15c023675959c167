"""Background processes started by the app: a dataset run (``python -m cli run``) or a ROAR job
(``python -m cli roar``) in its own session, so it outlives the page and the tab, its output
appended to a log in the run store's folder; stopped as Ctrl-C stops it, and continued with
``--resume``. In shared mode the server starts one at a time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from engine.runs.store import RunStore, results_dir
from services.access import check_model, shared_mode

ROOT = Path(__file__).resolve().parents[1]
STOPPED_CODE = 130  # the exit status of a command stopped by Ctrl-C (``cli.main``)
# The command that continues a stored run of each kind, with the run's own settings
RESUME_COMMANDS = {"evaluate": ["run", "--executor", "serial"], "roar": ["roar", "--no-estimate"]}


@dataclass
class Background:
    """The background processes (``python -m cli run`` / ``roar``) this server process started,
    by run id. The handles, not the store's catalogue, say whether one still runs: a process is
    in the catalogue only once it has loaded its model and data, and the catalogue does not say
    who started it."""

    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def is_running(self, run_id: str) -> bool:
        """Whether this server's process for ``run_id`` is still running."""
        process = self.processes.get(run_id)
        return process is not None and process.poll() is None

    def running(self) -> list[str]:
        """The run ids of the processes still running."""
        return [run_id for run_id in self.processes if self.is_running(run_id)]


@st.cache_resource
def background() -> Background:
    """The server's background processes (one record per server process)."""
    return Background()


def log_path(run_id: str) -> Path:
    """The file a background process of ``run_id`` writes its output to."""
    return results_dir() / "logs" / f"{run_id}.log"


def log_name(run_id: str) -> str:
    """The log of ``run_id`` as the pages name it: inside the run store's folder (no host path)."""
    return f"logs/{run_id}.log"


_here = threading.local()  # per script thread (one session's run): the run id its last call started


def started_here(run_id: str) -> bool:
    """Whether this thread's (this session's script run's) last ``start_background`` call
    started a process for ``run_id``: not when it found that process still starting, nor when
    the caller started nothing (the run stored already, or written by another process)."""
    return getattr(_here, "started", None) == run_id


def start_background(run_id: str, command: list[str]) -> bool:
    """Start ``command`` in its own session (it outlives the page), its output appended to
    ``log_path(run_id)``, unless this server's process for ``run_id`` still runs (False: nothing
    started; ``started_here`` says which call started the last process). In shared mode
    ``ValueError`` while another process this server started still runs: visitors share one
    background process at a time; ``ValueError`` naming the folder where the log cannot be written
    (a results folder that is not writable, a full disk)."""
    _here.started = None
    started = background()
    with started.lock:
        if started.is_running(run_id):  # still starting (not in the catalogue yet): not started twice
            return False
        running = started.running() if shared_mode() else []
        if running:
            raise ValueError(
                f"this server runs one background job at a time and {running[0]} is still running: try later"
            )
        try:
            log_path(run_id).parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path(run_id), "a")  # noqa: SIM115 (closed below, once the process has it)
        except OSError as error:
            raise ValueError(f"the job cannot be started: its log cannot be written in {error.filename} "
                             f"({error.strerror})") from None  # fmt: skip
        with log:
            started.processes[run_id] = subprocess.Popen(
                command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ}
            )
    _here.started = run_id
    return True


def is_running(run_id: str) -> bool:
    """Whether a process this server started for ``run_id`` still runs."""
    return background().is_running(run_id)


def stop_background(run_id: str) -> bool:
    """Stop this server's process for ``run_id`` as Ctrl-C does (SIGINT): the run keeps every unit
    it stored and is marked stopped, to be continued with ``resume_background``. False when this
    server runs no process for it."""
    started = background()
    with started.lock:
        if not started.is_running(run_id):
            return False
        started.processes[run_id].send_signal(signal.SIGINT)
    return True


def resume_background(run_id: str, kind: str) -> bool:
    """Continue a stored run (``kind`` "evaluate") or ROAR job ("roar") that is stopped, failed or
    whose process is gone, in a background process with its own settings (``--resume``): it
    computes only the units not stored yet. In shared mode ``ValueError`` for a run whose model
    or data file a visitor may not use (the allow-list). Whether a process was started."""
    if kind not in RESUME_COMMANDS:
        raise ValueError(f"a {kind} run is not continued from the app")
    if shared_mode():
        from services.data import check_data_file

        store = RunStore(read_only=True)
        found = store.find(run_id) if store.catalogue_path.exists() else None
        if found is not None:
            check_model(found.model)
            check_data_file(found.dataset)
    command, *options = RESUME_COMMANDS[kind]
    return start_background(
        run_id, [sys.executable, "-m", "cli", command, "--resume", run_id, *options, "--quiet", "--json"]
    )


def early_failure(run_id: str, wait_s: float = 0.5, lines: int = 8) -> str | None:
    """The last ``lines`` of the log when the process this server started for ``run_id`` exited
    with an error within ``wait_s`` seconds (bad arguments); None while it runs, after a success
    or a stop (``stop_background``), or when this server started none."""
    process = background().processes.get(run_id)
    if process is None:
        return None
    try:
        code = process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        return None
    if code in (0, STOPPED_CODE):
        return None
    tail = log_path(run_id).read_text(errors="replace").splitlines()[-lines:]
    return "\n".join(tail) or f"exit status {code}, nothing logged"
