"""The Parquet file of each finished unit, ``runs/<run_id>/unit-00003.parquet`` under the results
folder: written atomically (``core.files.replaced_atomically``), never changed after,
and read only through the paths the catalogue lists (``engine.runs.store``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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
    when there are none. A file that is gone or damaged is an ``OSError`` naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [_read(root, path, lambda file: pq.read_table(file, columns=columns)) for path in paths]
    if not tables:
        return pa.table({})
    return pa.concat_tables(tables, promote_options="default")


def read_unit_row(root: Path, path: str, position: int) -> dict[str, Any]:
    """The row at run position ``position``, read from its unit's file ``path`` alone."""
    import pyarrow.parquet as pq

    table = _read(root, path, lambda file: pq.read_table(file, filters=[("position", "=", position)]))
    return table.to_pylist()[0]


def unit_file_problem(root: Path, path: str) -> str | None:
    """Why the unit file ``path`` cannot be read (gone, or not a whole Parquet file), or None;
    reads only the file's footer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not (root / path).is_file():
        return "the file is gone"
    try:
        pq.read_metadata(root / path)
    except (OSError, pa.ArrowException) as error:
        return f"it is not a whole Parquet file ({error})"
    return None


def _read(root: Path, path: str, read: Callable[[Path], pa.Table]) -> pa.Table:
    import pyarrow as pa

    try:
        return read(root / path)
    except (OSError, pa.ArrowException) as error:
        problem = unit_file_problem(root, path) or str(error)
        raise OSError(
            f"the stored unit {path} under {root} cannot be read: {problem}; `run --resume` with the run's id "
            "computes it again"
        ) from error
