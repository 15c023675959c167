"""The Parquet file of each finished unit, ``runs/<run_id>/unit-00003.parquet`` under the results
folder: written atomically (``core.files.replaced_atomically``), never changed after,
and read only through the paths the catalogue lists (``engine.runs.store``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


def write_unit_file(root: Path, run_id: str, unit: int, table: pa.Table) -> Path:
    """The unit's Parquet file, written under a temporary name, synced and renamed into place;
    returns its path relative to the results folder ``root``."""
    import pyarrow.parquet as pq

    from core.files import replaced_atomically

    relative = Path("runs") / run_id / f"unit-{unit:05d}.parquet"
    with replaced_atomically(root / relative) as temporary:
        pq.write_table(table, temporary)
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
