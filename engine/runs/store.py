"""The run store: a DuckDB catalogue of dataset runs and one Parquet file per finished unit.

Layout under the results folder (``$ATTRIBUTION_RESULTS_DIR``, default ``./results``)::

    catalogue.duckdb           tables ``runs`` (one row per run) and ``units`` (one per unit)
    runs/<run_id>/unit-00003.parquet
    pretrained/aml/<key>/      AML's pre-trained attribution models (``engine.pretrained_store``)

A unit is a chunk of consecutive examples of the run's selection, explained by every method and
scored by every metric (``engine.runs.rows`` gives the columns). Writing a unit is atomic: its
Parquet file is written under a temporary name and renamed, then the ``units`` row and the run's
progress counters are committed in one DuckDB transaction. Readers only read the files the
catalogue lists, so a run killed at any moment (even between the rename and the commit) leaves no
half-written unit readable, and resuming recomputes exactly the units that are not listed
(``engine.runs.unit_files`` writes and reads the files; ``engine.runs.records`` holds the
catalogue's records).
A run computed in one go (a reproduction, kind ``reproduce``: ``engine.reproduce.stored``) is
kept by ``save_whole`` once it has finished: its one unit's file as above, then its catalogue row
and unit row in one transaction, so a computation that fails first leaves no row at all.

Concurrency. DuckDB lets one process hold a database file for writing and refuses every other
process meanwhile, readers included. So no process keeps the catalogue open: the writer opens it
for one short transaction per unit, readers open it read-only for one query and copy the result
out, and both retry with a short back-off while another process holds it. Parquet files are never
changed after their rename (a resumed run may replace a listed unit's file with one holding the
same rows, atomically), so a reader never needs the catalogue while it reads them. A run has one
writer: ``claim`` checks that no other live process writes it and takes it in one transaction.

A run's identity is its key: the model's fingerprint (a hash of its weight, adapter, config and
tokenizer files, so a changed model is a new key), dataset, split, selection, methods, metrics,
resolved parameters, seed and target. The run id is derived from the key, so starting the same
run twice finds the stored one instead of computing it again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.files import interrupts_held, remove_leftovers
from engine.runs.records import (
    SCHEMA,
    NewRun,
    RunInfo,
    UnitStats,
    catalogue_error,
    code_version,
    commit_unit_rows,
    insert_run,
    run_id_of,
    run_info,
    run_key,
    select_run,
)
from engine.runs.unit_files import read_unit_files, read_unit_row, write_unit_file
from engine.runs.writers import (
    claim_refusal,
    lost_writer,
    start_heartbeat,
    stop_heartbeat,
    utc_now,
    writer_values,
)

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import pyarrow as pa

    from core.types import Attribution, Example

RESULTS_ENV = "ATTRIBUTION_RESULTS_DIR"
CATALOGUE = "catalogue.duckdb"
STATUSES = ("running", "done", "failed", "stopped")

# One catalogue connection at a time within a process: DuckDB refuses a second connection to the
# same file with another configuration (read-only next to read-write) in one process.
_PROCESS_LOCK = threading.Lock()


def results_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The results folder: ``explicit``, else ``$ATTRIBUTION_RESULTS_DIR``, else ``./results``."""
    return Path(explicit or os.environ.get(RESULTS_ENV) or "results").expanduser()


def reading_store(explicit: str | os.PathLike | None, option: str = "--results-dir") -> RunStore:
    """The store a reader opens (read-only: nothing created); a folder named explicitly must
    exist, so a mistyped one is not read as an empty store (``option``: how the caller names it)."""
    if explicit is not None and not Path(explicit).expanduser().is_dir():
        what = "a file, not a folder" if Path(explicit).expanduser().exists() else "no such folder"
        raise ValueError(f"{option} {explicit}: {what} (no run store there)")
    return RunStore(explicit, read_only=True)


class RunStore:
    """The run store under one results folder. Create it freely: it holds no open connection,
    and its folder and catalogue are made by its first write, so a store that only reads, or a
    command refused before writing, leaves nothing on disk.

    ``read_only=True`` refuses every write and opens the catalogue read-only (app sessions);
    readers and the writer may live in different processes (see the module docstring).
    """

    def __init__(self, root: str | os.PathLike | None = None, *, read_only: bool = False, timeout_s: float = 60.0):
        self.root = results_dir(root)
        if self.root.exists() and not self.root.is_dir():  # "Not a directory: X/runs" at the first write
            raise ValueError(f"results folder {self.root}: a file, not a folder (--results-dir or ${RESULTS_ENV})")
        self.read_only = read_only
        self.timeout_s = timeout_s
        self._schema_ready = False

    @property
    def catalogue_path(self) -> Path:
        return self.root / CATALOGUE

    def catalogue_version(self) -> tuple[int, ...]:
        """The modification times of the catalogue and its write-ahead log (0 for a missing one):
        a read cached under them is fresh while they are unchanged."""
        path = self.catalogue_path
        return tuple(p.stat().st_mtime_ns if p.exists() else 0 for p in (path, path.with_name(path.name + ".wal")))

    def cache_key(self) -> tuple[str, tuple[int, ...]]:
        """The store's resolved folder and ``catalogue_version()``: the key of a cached read of
        the catalogue (the app's pages ask on every rerun)."""
        return str(self.root.resolve()), self.catalogue_version()

    # ------------------------------------------------------------------ connections

    @contextlib.contextmanager
    def _connect(self, read_only: bool | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A catalogue connection held for one block, retried while another process holds the file
        (Ctrl-C waits for the block's end); a catalogue DuckDB cannot open or use raises OSError."""
        import duckdb

        read_only = self.read_only if read_only is None else read_only
        deadline = time.monotonic() + self.timeout_s
        delay = 0.01
        with _PROCESS_LOCK, interrupts_held():
            while True:
                try:
                    con = duckdb.connect(str(self.catalogue_path), read_only=read_only)
                    break
                except duckdb.Error as error:
                    if "lock" not in str(error).lower() or time.monotonic() > deadline:
                        raise catalogue_error(self.catalogue_path, error) from error
                    time.sleep(delay)
                    delay = min(delay * 2, 0.2)
            try:
                yield con
            except duckdb.Error as error:
                raise catalogue_error(self.catalogue_path, error) from error
            finally:
                con.close()

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> pd.DataFrame:
        if not self.catalogue_path.exists():
            import pandas as pd

            return pd.DataFrame()
        with self._connect() as con:
            return con.execute(sql, list(parameters)).df()

    # ------------------------------------------------------------------ reading

    def list_runs(self) -> pd.DataFrame:
        """The catalogue, newest first: one row per run with every ``RunInfo`` field (JSON fields
        as text), an empty frame when the store has no catalogue yet."""
        return self._query("SELECT * FROM runs ORDER BY created DESC")

    def infos(self) -> list[RunInfo]:
        """The catalogue as ``RunInfo`` records, newest first."""
        return [run_info(row) for row in self.list_runs().to_dict("records")]

    def find(self, run_id: str) -> RunInfo | None:
        frame = self._query("SELECT * FROM runs WHERE run_id = ?", [run_id])
        return None if frame.empty else run_info(frame.iloc[0].to_dict())

    def get(self, run_id: str) -> RunInfo:
        info = self.find(run_id)
        if info is None:
            raise ValueError(f"no run {run_id!r} in {self.root}")
        return info

    def units(self, run_id: str) -> pd.DataFrame:
        """The run's finished units in row order."""
        return self._query("SELECT * FROM units WHERE run_id = ? ORDER BY first_row", [run_id])

    def row_order(self, run_id: str) -> list[int] | None:
        """The order run ``run_id``'s rows are cut into units in (``NewRun.row_order``); None where
        it is the rows' own (runs stored whole, and every run of a catalogue made before units
        were grouped by length, which may lack the table)."""
        if not self.catalogue_path.exists():
            return None
        with self._connect() as con:
            if not con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'row_orders'").fetchone():
                return None
            found = con.execute("SELECT row_order FROM row_orders WHERE run_id = ?", [run_id]).fetchone()
        return None if found is None else [int(row) for row in found[0]]

    def done_units(self, run_id: str) -> set[int]:
        frame = self.units(run_id)
        return set() if frame.empty else {int(u) for u in frame["unit"]}

    def read_table(self, run_id: str, columns: Sequence[str] | None = None) -> pa.Table:
        """Every finished row of the run, by position (the files the catalogue lists, and only
        those: a unit written but not committed is invisible)."""
        self.get(run_id)
        units = self.units(run_id)
        return read_unit_files(self.root, units.get("path", []), columns)

    def rows(self, run_id: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The finished rows as a pandas DataFrame, one per example, by position (the columns
        are listed in ``engine.runs.rows``)."""
        from engine.runs.rows import to_frame

        return to_frame(self.read_table(run_id, columns))

    def example(self, run_id: str, position: int) -> tuple[Example, dict[str, Attribution]]:
        """One stored example (as the model saw it) and its methods' ``Attribution`` records,
        read from its unit's file alone (methods that failed on it are absent)."""
        from engine.runs.rows import attribution_of, example_of

        info = self.get(run_id)
        units, order = self.units(run_id), self.row_order(run_id)
        if order is None:
            hit = units[(units["first_row"] <= position) & (units["first_row"] + units["n_rows"] > position)]
        else:
            unit = order.index(position) // info.chunk_size if position in order else -1
            hit = units[units["unit"] == unit] if not units.empty else units
        if hit.empty:
            raise ValueError(f"row {position} of {run_id} is not stored (rows done: {info.rows_done})")
        row = read_unit_row(self.root, hit.iloc[0]["path"], position)
        example = example_of(row, info.dataset, info.split, info.label_names)
        found = {m: attribution_of(row, m, example) for m in info.methods}
        return example, {m: a for m, a in found.items() if a is not None}

    # ------------------------------------------------------------------ writing

    def _require_writer(self) -> None:
        """Refuse a write to a read-only store; else make the folder and the catalogue's tables
        (once per store object; both steps are idempotent, so stores in several processes may)."""
        if self.read_only:
            raise ValueError(f"the run store at {self.root} was opened read-only")
        if not self._schema_ready:
            (self.root / "runs").mkdir(parents=True, exist_ok=True)
            with self._connect() as con:
                con.execute(SCHEMA)
            self._schema_ready = True

    def create_or_resume(self, new: NewRun) -> tuple[RunInfo, bool]:
        """The run with ``new``'s key: created when absent (``True``), else the stored one
        (``False``), untouched. The caller resumes it if it is not done."""
        self._require_writer()
        key = run_key(new.key_fields)
        run_id = run_id_of(key)
        version = code_version()
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            found = con.execute("SELECT run_key FROM runs WHERE run_id = ?", [run_id]).fetchone()
            if found is None:
                insert_run(con, run_id, key, new, version)
            con.execute("COMMIT")
        if found is not None and found[0] != key:
            raise ValueError(f"run id {run_id} is taken by another key; the catalogue is inconsistent")
        return self.get(run_id), found is None

    def claim(self, run_id: str, executor: str, *, reopen: bool = False) -> RunInfo:
        """Claim a run for this process (to compute it) and return its row, checked and set in one
        transaction, so of two processes resuming one run only one gets it. A run that is not done
        and that no other live process writes (``stopped``, ``failed``, or ``running`` here or with
        its writer gone) is set ``running`` with this host and pid, and the temporary files a killed
        writer left in its folder are removed; a ``done`` run is returned untouched, unless
        ``reopen`` (a done run with a unit file gone, computed again); one that another live process
        writes is refused (ValueError)."""
        self._require_writer()
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            info = select_run(con, run_id)
            refusal = claim_refusal(run_id, self.root, info)
            if refusal is None and info is not None and (reopen or info.status != "done"):
                self._set(con, run_id, **writer_values(executor))
                info = select_run(con, run_id)
            con.execute("ROLLBACK" if refusal else "COMMIT")
        if refusal is not None or info is None:
            raise ValueError(refusal)
        if info.status == "running":
            remove_leftovers(self.root / "runs" / run_id)
            start_heartbeat(self, run_id)
        return info

    def beat(self, run_id: str) -> bool:
        """Stamp the heartbeat of a run this process writes; False when it no longer does (or the
        results folder is gone)."""
        if not self.catalogue_path.exists():
            return False
        with self._connect() as con:
            where = "run_id = ? AND status = 'running' AND host = ? AND pid = ?"
            values = [utc_now(), run_id, socket.gethostname(), os.getpid()]
            changed = con.execute(f"UPDATE runs SET heartbeat = ? WHERE {where}", values).fetchone()
            return bool(changed and changed[0])

    def finish(self, run_id: str, status: str, wall_s: float, error: str | None = None) -> None:
        """Close this process's session of a run: its status and its total wall time so far. A run
        another process has claimed meanwhile keeps that writer's row (``writers.lost_writer``)."""
        if status not in STATUSES:
            raise ValueError(f"unknown run status {status!r}; known: {', '.join(STATUSES)}")
        stop_heartbeat(self, run_id)
        self._require_writer()
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            if lost_writer(run_id, select_run(con, run_id)) is None:
                self._set(con, run_id, status=status, error=error, wall_s=wall_s)
            con.execute("COMMIT")

    @staticmethod
    def _set(con: duckdb.DuckDBPyConnection, run_id: str, **values: Any) -> None:
        """Set columns of a run's row (and its ``updated`` time) on ``con``."""
        assignments = ", ".join(f"{name} = ?" for name in values)
        con.execute(
            f"UPDATE runs SET {assignments}, updated = ? WHERE run_id = ?", [*values.values(), utc_now(), run_id]
        )

    def commit_unit(self, run_id: str, stats: UnitStats, table: pa.Table, wall_s: float) -> None:
        """Write one finished unit atomically: Parquet under a temporary name, renamed, then the
        unit row and the run's counters (recounted from the unit rows, so committing the same unit
        twice counts it once) in one transaction. ``wall_s`` is the run's wall time so far. Only
        the run's writer commits: a process whose run another one has claimed meanwhile (its
        writer judged gone, ``writers``) is refused (ValueError) and stops its heartbeat."""
        self._require_writer()
        with self._connect() as con:  # checked before the file is written too, so a refused
            lost = lost_writer(run_id, select_run(con, run_id))  # writer leaves no file behind
        if lost is None:
            relative = write_unit_file(self.root, run_id, stats.unit, table)
            with self._connect() as con:
                con.execute("BEGIN TRANSACTION")
                lost = lost_writer(run_id, select_run(con, run_id))
                if lost is None:
                    commit_unit_rows(con, run_id, stats, relative, wall_s)
                con.execute("ROLLBACK" if lost else "COMMIT")
        if lost is not None:
            stop_heartbeat(self, run_id)
            raise ValueError(lost)

    def save_whole(self, new: NewRun, stats: UnitStats, table: pa.Table, wall_s: float) -> RunInfo:
        """Keep a run computed in one go (a reproduction, ``engine.reproduce.stored``): its one
        unit's Parquet file written atomically, then its catalogue row (status ``done``) and unit
        row in one transaction. Nothing is in the catalogue before that commit, so a computation
        that fails or is killed leaves no row. A stored run with the same key is replaced (the
        file by an atomic rename, the rows in the same transaction)."""
        self._require_writer()
        key = run_key(new.key_fields)
        run_id = run_id_of(key)
        version = code_version()
        relative = write_unit_file(self.root, run_id, stats.unit, table)
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            _delete_rows(con, run_id)
            insert_run(con, run_id, key, new, version, status="done")
            commit_unit_rows(con, run_id, stats, relative, wall_s)
            con.execute("COMMIT")
        return self.get(run_id)

    def delete(self, run_id: str) -> RunInfo:
        """Remove a stored run and return its last row: its catalogue rows in one transaction (no
        reader sees it after that), then its unit files and its log (``logs/<run_id>.log``, where
        the app's background processes write). Refused (ValueError) while a live process writes
        it; a process still computing it when its writer was judged gone stops at its next commit
        (``writers.lost_writer``)."""
        self._require_writer()
        with self._connect() as con:
            con.execute("BEGIN TRANSACTION")
            info = select_run(con, run_id)
            if info is None:
                refusal: str | None = f"no run {run_id!r} in {self.root}"
            elif info.being_written:
                refusal = f"run {run_id} is being written by process {info.pid} on {info.host}: stop it first"
            else:
                refusal = None
                _delete_rows(con, run_id)
            con.execute("ROLLBACK" if refusal else "COMMIT")
        if refusal is not None or info is None:
            raise ValueError(refusal)
        shutil.rmtree(self.root / "runs" / run_id, ignore_errors=True)
        (self.root / "logs" / f"{run_id}.log").unlink(missing_ok=True)
        return info


def _delete_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Delete a run's rows from every catalogue table on ``con``, in the caller's transaction."""
    for name in ("units", "row_orders", "runs"):
        con.execute(f"DELETE FROM {name} WHERE run_id = ?", [run_id])
