"""Who writes a run, and whether that writer still lives.

A run's writer is recorded as its host, pid and process start time (so a pid that a later
process reuses is not mistaken for the writer) and stamps the run's ``heartbeat`` every
``HEARTBEAT_S`` seconds from a daemon thread while it holds the run. On its own host a writer is
gone when its process is; from another host, which cannot look up the pid (a results folder
shared between machines), when its heartbeat is older than ``STALE_S`` by the observer's clock.

That judgement needs the hosts' clocks to agree within ``STALE_S``; correctness does not. Only the
process the run's row names may commit a unit or close the run (``lost_writer``, checked in the
same transaction as the write), so when a clock far ahead lets a second process claim a live run,
the first one is refused at its next commit and stops, and its closing status does not overwrite
the new writer's row: the two never write the run together.
"""

from __future__ import annotations

import atexit
import datetime as dt
import os
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.runs.records import RunInfo
    from engine.runs.store import RunStore

HEARTBEAT_S = 60.0
STALE_S = 600.0  # ten missed heartbeats: the writer on another host is taken to be gone

_beating: dict[tuple[str, str], threading.Event] = {}  # (results folder, run id) -> stops its thread
_threads: set[threading.Thread] = set()  # the heartbeat threads still running, stopped ones included
_beating_lock = threading.Lock()


def writer_values(executor: str) -> dict[str, Any]:
    """The columns that make this process a run's writer."""
    here = os.getpid()
    return {
        "status": "running",
        "error": None,
        "executor": executor,
        "host": socket.gethostname(),
        "pid": here,
        "pid_started": process_started(here),
        "heartbeat": utc_now(),
    }


def claim_refusal(run_id: str, root: Path, info: RunInfo | None) -> str | None:
    """Why this process may not claim the run ``info`` (None: it may)."""
    if info is None:
        return f"no run {run_id!r} in {root}"
    here = (socket.gethostname(), os.getpid())
    if info.being_written and (info.host, info.pid) != here:
        return f"run {run_id} is being written by process {info.pid} on {info.host}"
    return None


def lost_writer(run_id: str, info: RunInfo | None) -> str | None:
    """Why this process may no longer write the run ``info`` (None: it may): the row names
    another writer, whose claim took the run over, or there is no row any more."""
    if info is None:
        return f"no run {run_id!r}: it was deleted while this process wrote it"
    if (info.host, info.pid) != (socket.gethostname(), os.getpid()):
        return f"run {run_id} was taken over by process {info.pid} on {info.host}; this process stopped writing it"
    return None


def writer_gone(info: RunInfo) -> bool:
    """Whether the run ``info`` is marked ``running`` by a writer that no longer exists (see the
    module docstring); a catalogue made before the start time or the heartbeat was recorded
    falls back to the pid alone, and to "alive" for another host."""
    if info.status != "running":
        return False
    if info.host != socket.gethostname():
        return info.heartbeat is not None and (utc_now() - info.heartbeat).total_seconds() > STALE_S
    started = process_started(info.pid)
    if started is None:
        return True
    return info.pid_started is not None and abs(started - info.pid_started) > 1.0


def process_started(pid: int) -> float | None:
    """When process ``pid`` of this host started (seconds since the epoch), or None when there is
    no such process (an exited one not yet reaped counts as gone)."""
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:  # ZombieProcess too
        return None
    except psutil.AccessDenied:  # alive, but another user's: its start time is read as unknown
        return float("nan")


def start_heartbeat(store: RunStore, run_id: str) -> None:
    """Stamp ``run_id``'s heartbeat every ``HEARTBEAT_S`` seconds until ``stop_heartbeat``, or
    until the run is no longer this process's (``RunStore.beat`` finds no row to stamp)."""
    key = (str(store.root), run_id)
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(HEARTBEAT_S):
                try:
                    if not store.beat(run_id):
                        break
                except OSError:  # the catalogue busy for longer than the store waits: try next time
                    continue
        finally:
            with _beating_lock:
                if _beating.get(key) is stop:
                    del _beating[key]
                _threads.discard(threading.current_thread())

    thread = threading.Thread(target=beat, name=f"heartbeat {run_id}", daemon=True)
    with _beating_lock:
        if key in _beating:
            return
        _beating[key] = stop
        _threads.add(thread)
    thread.start()


def stop_heartbeat(store: RunStore, run_id: str) -> None:
    with _beating_lock:
        stop = _beating.pop((str(store.root), run_id), None)
    if stop is not None:
        stop.set()


@atexit.register
def stop_all_heartbeats() -> None:
    """Stop every heartbeat thread and wait for a stamp under way, before the interpreter shuts
    down. A daemon thread that opens the DuckDB catalogue during shutdown raises from inside
    DuckDB, and with Ray loaded that aborts the process. A claim left running by an exiting
    process is then judged by its pid (``writer_gone``), as after a kill."""
    with _beating_lock:
        stops, threads = list(_beating.values()), list(_threads)
        _beating.clear()
    for stop in stops:
        stop.set()
    for thread in threads:
        thread.join(timeout=30)


def utc_now() -> dt.datetime:
    """Now in UTC, without a time zone (as the catalogue's timestamps are stored)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)
