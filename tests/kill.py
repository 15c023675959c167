"""Kill a run-writing subprocess at a known point of its run, for the tests of resuming after SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def kill_once_done(process: subprocess.Popen, catalogue: Path, counter: str, at_least: int, timeout_s: float) -> str:
    """SIGKILL ``process`` as soon as its run's ``counter`` (``rows_done``, ``units_done``) reaches
    ``at_least``, and return the run id.

    The catalogue is read, and the process killed, under one read-only DuckDB connection: the
    writer cannot open the catalogue to commit another unit meanwhile, so the run is killed with
    exactly what this reading saw, however fast the writer is."""
    import duckdb

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            con = duckdb.connect(str(catalogue), read_only=True)
        except duckdb.Error:  # not created yet, or held by the writer
            time.sleep(0.01)
            continue
        try:
            try:
                row = con.execute(f"SELECT run_id, {counter}, status FROM runs").fetchone()
            except duckdb.Error:  # the schema is not committed yet
                row = None
            if row is not None and row[1] >= at_least:
                assert row[2] == "running", f"the run was {row[2]} before it could be killed"
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
                return row[0]
        finally:
            con.close()
        time.sleep(0.01)
    raise AssertionError(process.stderr.read().decode() if process.poll() is not None else "timed out")
