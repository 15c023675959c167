"""The records of the run store's catalogue: its tables (``SCHEMA``), a run's identity
(``run_key``, ``run_id_of``), the code version it records, what creating a run needs (``NewRun``),
a catalogue row (``RunInfo``, decoded by ``run_info``), what the executor reports with a
finished unit (``UnitStats``), and the statements that write a run's row (with its row order) and
a unit's, run inside the store's transactions (``insert_run``, ``commit_unit_rows``)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.runs.writers import process_started, utc_now

if TYPE_CHECKING:
    import duckdb

# The catalogue's tables: ``runs`` (one row per run, a ``RunInfo``) and ``units`` (one per finished unit).
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    run_key VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    model_fingerprint VARCHAR NOT NULL,
    dataset VARCHAR NOT NULL,
    split VARCHAR NOT NULL,
    selection VARCHAR NOT NULL,       -- JSON
    methods VARCHAR[] NOT NULL,
    metrics VARCHAR[] NOT NULL,
    params VARCHAR NOT NULL,          -- JSON: resolved parameters of every method and metric
    overrides VARCHAR NOT NULL,       -- JSON: the --param values as given
    seed INTEGER,
    target VARCHAR NOT NULL,
    label_names VARCHAR[] NOT NULL,
    code_version VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    error VARCHAR,
    created TIMESTAMP NOT NULL,
    updated TIMESTAMP NOT NULL,
    chunk_size INTEGER NOT NULL,
    rows_total INTEGER NOT NULL,
    rows_done INTEGER NOT NULL,
    units_total INTEGER NOT NULL,
    units_done INTEGER NOT NULL,
    wall_s DOUBLE NOT NULL,
    explain_s DOUBLE NOT NULL,
    metrics_s DOUBLE NOT NULL,
    forward_passes BIGINT NOT NULL,
    executor VARCHAR NOT NULL,
    host VARCHAR NOT NULL,
    pid INTEGER NOT NULL,
    pid_started DOUBLE,               -- the writer's start time (a reused pid is another process)
    heartbeat TIMESTAMP               -- the writer's last sign of life (engine.runs.writers)
);
ALTER TABLE runs ADD COLUMN IF NOT EXISTS pid_started DOUBLE;  -- catalogues made before them
ALTER TABLE runs ADD COLUMN IF NOT EXISTS heartbeat TIMESTAMP;
CREATE TABLE IF NOT EXISTS units (
    run_id VARCHAR NOT NULL,
    unit INTEGER NOT NULL,
    first_row INTEGER NOT NULL,
    n_rows INTEGER NOT NULL,
    path VARCHAR NOT NULL,            -- relative to the results folder
    forward_passes BIGINT NOT NULL,
    explain_s DOUBLE NOT NULL,
    metrics_s DOUBLE NOT NULL,
    finished TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, unit)
);
-- The order a run's rows are cut into units in, where it is not the rows' own (a dataset
-- evaluation's units group examples of similar length: ``engine.runs.worker.unit_order``).
CREATE TABLE IF NOT EXISTS row_orders (
    run_id VARCHAR PRIMARY KEY,
    row_order INTEGER[] NOT NULL
);
"""


def catalogue_error(path: Path, error: Exception) -> OSError:
    """One line naming the catalogue file ``path`` and why DuckDB could not open or use it."""
    reason = " ".join(str(error).split()).removeprefix("IO Error: ")
    return OSError(f"cannot use the run store's catalogue {path} (a DuckDB file this tool made): {reason}")


def run_key(fields: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a run's identifying fields, renamed choice values under
    their first names (``core.params.RENAMED_CHOICES``: a run keeps its id across a rename)."""
    canonical = json.dumps(_first_names(fields), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _first_names(value: Any) -> Any:
    """``value`` with every renamed setting (``core.params.RENAMED_FIELDS``) under its old name."""
    from core.params import RENAMED_CHOICES, RENAMED_FIELDS

    if isinstance(value, dict):
        first = {new: old for old, new in RENAMED_CHOICES.items()}
        return {
            k: first.get(v, v) if k in RENAMED_FIELDS and isinstance(v, str) else _first_names(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_first_names(v) for v in value]
    return value


def run_id_of(key: str) -> str:
    return f"run-{key[:12]}"


def code_version() -> str:
    """``git describe --always --dirty`` of the project when it is a git checkout, else
    "unknown"."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        described = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return described.stdout.strip() or "unknown"


@dataclass(frozen=True)
class RunInfo:
    """One catalogue row (``selection``, ``params`` and ``overrides`` decoded from JSON)."""

    run_id: str
    run_key: str
    kind: str
    model: str
    model_fingerprint: str
    dataset: str
    split: str
    selection: dict[str, Any]
    methods: tuple[str, ...]
    metrics: tuple[str, ...]
    params: dict[str, dict[str, Any]]
    overrides: dict[str, dict[str, str]]
    seed: int | None
    target: str
    label_names: tuple[str, ...]
    code_version: str
    status: str
    error: str | None
    created: dt.datetime
    updated: dt.datetime
    chunk_size: int
    rows_total: int
    rows_done: int
    units_total: int
    units_done: int
    wall_s: float
    explain_s: float
    metrics_s: float
    forward_passes: int
    executor: str
    host: str
    pid: int
    pid_started: float | None  # the writing process's start time (None in catalogues made before it)
    heartbeat: dt.datetime | None  # the writer's last sign of life (UTC; None in catalogues made before it)

    @property
    def fraction(self) -> float:
        return self.rows_done / self.rows_total if self.rows_total else 1.0

    @property
    def writer_gone(self) -> bool:
        """A run marked ``running`` whose writer no longer exists (it was killed; the rules are
        ``engine.runs.writers``'): resume it with ``--resume``."""
        from engine.runs.writers import writer_gone

        return writer_gone(self)

    @property
    def shown_status(self) -> str:
        """The status as the commands and the API report it: ``killed`` for a run marked
        ``running`` whose writer is gone."""
        return "killed" if self.writer_gone else self.status

    @property
    def being_written(self) -> bool:
        """Marked ``running`` by a writer that still exists: no other process may write, resume or
        delete it."""
        return self.status == "running" and not self.writer_gone

    @property
    def nothing_to_start(self) -> bool:
        """Done, or being written by a live process: starting it again would compute nothing."""
        return self.status == "done" or self.being_written


@dataclass(frozen=True)
class UnitStats:
    """What the executor reports with a finished unit."""

    unit: int
    first_row: int  # its first row in the run's own order (its rows need not follow on)
    n_rows: int
    forward_passes: int
    explain_s: float
    metrics_s: float


@dataclass
class NewRun:
    """Everything the catalogue needs to create a run (the key fields and the descriptive ones)."""

    key_fields: dict[str, Any]
    kind: str
    model: str
    model_fingerprint: str
    dataset: str
    split: str
    selection: dict[str, Any]
    methods: Sequence[str]
    metrics: Sequence[str]
    params: dict[str, dict[str, Any]]
    overrides: dict[str, dict[str, str]]
    seed: int | None
    target: str
    label_names: Sequence[str]
    chunk_size: int
    rows_total: int
    # The rows in the order they are cut into units of ``chunk_size``; None: in their own order.
    row_order: Sequence[int] | None = None


def select_run(con: duckdb.DuckDBPyConnection, run_id: str) -> RunInfo | None:
    """A run's row read on ``con`` (None when absent)."""
    frame = con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id]).df()
    return None if frame.empty else run_info(frame.iloc[0].to_dict())


def run_info(row: dict[str, Any]) -> RunInfo:
    import pandas as pd

    def plain(value: Any) -> Any:
        return None if value is None or pd.isna(value) else value

    seed = plain(row["seed"])
    return RunInfo(
        run_id=row["run_id"],
        run_key=row["run_key"],
        kind=row["kind"],
        model=row["model"],
        model_fingerprint=row["model_fingerprint"],
        dataset=row["dataset"],
        split=row["split"],
        selection=json.loads(row["selection"]),
        methods=tuple(row["methods"]),
        metrics=tuple(row["metrics"]),
        params=json.loads(row["params"]),
        overrides=json.loads(row["overrides"]),
        seed=None if seed is None else int(seed),
        target=row["target"],
        label_names=tuple(row["label_names"]),
        code_version=row["code_version"],
        status=row["status"],
        error=plain(row["error"]),
        created=pd.Timestamp(row["created"]).to_pydatetime(),
        updated=pd.Timestamp(row["updated"]).to_pydatetime(),
        chunk_size=int(row["chunk_size"]),
        rows_total=int(row["rows_total"]),
        rows_done=int(row["rows_done"]),
        units_total=int(row["units_total"]),
        units_done=int(row["units_done"]),
        wall_s=float(row["wall_s"]),
        explain_s=float(row["explain_s"]),
        metrics_s=float(row["metrics_s"]),
        forward_passes=int(row["forward_passes"]),
        executor=row["executor"],
        host=row["host"],
        pid=int(row["pid"]),
        pid_started=plain(row.get("pid_started")),
        heartbeat=None if plain(row.get("heartbeat")) is None else pd.Timestamp(row["heartbeat"]).to_pydatetime(),
    )


def insert_run(
    con: duckdb.DuckDBPyConnection, run_id: str, key: str, new: NewRun, version: str, status: str = "running"
) -> None:
    """Add run ``run_id``'s catalogue row, written by this process, inside the caller's
    transaction."""
    now = utc_now()
    units_total = -(-new.rows_total // new.chunk_size) if new.rows_total else 0
    con.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
        " ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            run_id,
            key,
            new.kind,
            new.model,
            new.model_fingerprint,
            new.dataset,
            new.split,
            json.dumps(new.selection),
            list(new.methods),
            list(new.metrics),
            json.dumps(new.params),
            json.dumps(new.overrides),
            new.seed,
            new.target,
            list(new.label_names),
            version,
            status,
            None,
            now,
            now,
            new.chunk_size,
            new.rows_total,
            0,
            units_total,
            0,
            0.0,
            0.0,
            0.0,
            0,
            "",
            socket.gethostname(),
            os.getpid(),
            process_started(os.getpid()),
            now,
        ],
    )
    if new.row_order is not None:
        con.execute("INSERT INTO row_orders VALUES (?, ?)", [run_id, list(new.row_order)])


def commit_unit_rows(
    con: duckdb.DuckDBPyConnection, run_id: str, stats: UnitStats, relative: Path, wall_s: float
) -> None:
    """The unit's row and the run's recounted counters, inside the caller's transaction."""
    now = utc_now()
    con.execute(
        "INSERT OR REPLACE INTO units VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            run_id,
            stats.unit,
            stats.first_row,
            stats.n_rows,
            relative.as_posix(),
            stats.forward_passes,
            stats.explain_s,
            stats.metrics_s,
            now,
        ],
    )
    con.execute(
        """UPDATE runs SET
               rows_done = t.rows, units_done = t.units, forward_passes = t.passes,
               explain_s = t.explain, metrics_s = t.metrics, wall_s = ?, updated = ?
           FROM (SELECT count(*) AS units, sum(n_rows) AS rows, sum(forward_passes) AS passes,
                        sum(explain_s) AS explain, sum(metrics_s) AS metrics
                 FROM units WHERE run_id = ?) AS t
           WHERE runs.run_id = ?""",
        [wall_s, now, run_id, run_id],
    )
