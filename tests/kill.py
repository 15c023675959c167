"""Kill a run-writing subprocess at a known point of its run, for the tests of resuming after SIGKILL
or SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

DEAD_PID = int(Path("/proc/sys/kernel/pid_max").read_text())  # process ids stay below it: no process has it


def kill_once_done(
    process: subprocess.Popen,
    catalogue: Path,
    counter: str,
    at_least: int,
    timeout_s: float,
    signum: int = signal.SIGKILL,
) -> str:
    """Send ``signum`` (SIGKILL by default) to ``process`` as soon as its run's ``counter``
    (``rows_done``, ``units_done``) reaches ``at_least``, wait for it to end, and return the run id.

    The catalogue is read, and the signal sent, under one read-only DuckDB connection: the writer
    cannot open the catalogue to commit another unit meanwhile, so a SIGKILL stops the run with
    exactly what this reading saw, however fast the writer is. A signal the writer handles (SIGTERM
    marks the run stopped) needs the catalogue, so the connection is closed before the wait."""
    import duckdb

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            con = duckdb.connect(str(catalogue), read_only=True)
        except duckdb.Error:  # not created yet, or held by the writer
            time.sleep(0.01)
            continue
        signalled = None
        try:
            try:
                row = con.execute(f"SELECT run_id, {counter}, status FROM runs").fetchone()
            except duckdb.Error:  # the schema is not committed yet
                row = None
            if row is not None and row[1] >= at_least:
                assert row[2] == "running", f"the run was {row[2]} before it could be killed"
                os.kill(process.pid, signum)
                if signum == signal.SIGKILL:
                    process.wait()
                signalled = row[0]
        finally:
            con.close()
        if signalled is not None:
            process.wait(timeout=timeout_s)
            return signalled
        time.sleep(0.01)
    raise AssertionError(process.stderr.read().decode() if process.poll() is not None else "timed out")
