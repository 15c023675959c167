"""The Parquet file of each finished unit, ``runs/<run_id>/unit-00003.parquet`` under the results
folder: written atomically (a temporary name, synced, renamed into place), never changed after,
and read only through the paths the catalogue lists (``engine.runs.store``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


def write_unit_file(root: Path, run_id: str, unit: int, table: pa.Table) -> Path:
    """The unit's Parquet file, written under a temporary name, synced and renamed into place;
    returns its path relative to the results folder ``root``."""
    import pyarrow.parquet as pq

    relative = Path("runs") / run_id / f"unit-{unit:05d}.parquet"
    final = root / relative
    final.parent.mkdir(parents=True, exist_ok=True)
    temporary = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    pq.write_table(table, temporary)
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, final)
    return relative


def read_unit_files(root: Path, paths: Iterable[str], columns: Sequence[str] | None = None) -> pa.Table:
    """The rows of the unit files at ``paths`` (relative to ``root``), in that order; an empty table
    when there are none."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(root / path, columns=columns) for path in paths]
    if not tables:
        return pa.table({})
    return pa.concat_tables(tables, promote_options="default")


def read_unit_row(root: Path, path: str, position: int) -> dict[str, Any]:
    """The row at run position ``position``, read from its unit's file ``path`` alone."""
    import pyarrow.parquet as pq

    table = pq.read_table(root / path, filters=[("position", "=", position)])
    return table.to_pylist()[0]
