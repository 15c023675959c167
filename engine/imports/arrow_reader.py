"""A Parquet or Arrow file from outside, decoded in a child process.

pyarrow's readers are C++: on some damaged or crafted files they crashed the process (a
segfault converting a corrupt Arrow stream, an abort in a Parquet reader thread), and a
compressed file of a few kilobytes can decode to gigabytes. An uploaded file must cost neither
the server nor anyone else's session, so ``decode`` hands the bytes to ``python -m
engine.imports.arrow_reader``, which runs under an address-space limit, refuses a table that
decodes to more than ``MAX_DECODED_BYTES`` or ``MAX_ROWS`` rows, validates it in full, and
writes it back as a plain (uncompressed) Arrow stream. Whatever stops the child (a crash, the
memory limit, the time limit) is a refusal of the file, in one line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from engine.imports.records import MAX_BYTES, BadFile

if TYPE_CHECKING:
    import pyarrow as pa

MAX_ROWS = 100_000
MAX_DECODED_BYTES = MAX_BYTES  # the decoded table's Arrow buffers: as much as the largest file read
CHILD_MEMORY_BYTES = 3 * 1024**3  # the child's address space: Python and pyarrow, and the table twice
TIMEOUT_S = 120.0
_REFUSED = 2  # the child's exit status when it refused the file (its reason on stderr)
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def decode(data: bytes, name: str) -> pa.Table:
    """The table in ``data`` (Parquet, or an Arrow IPC file or stream), decoded in a child
    process; ``BadFile`` names what was wrong with it."""
    import pyarrow as pa

    try:
        done = subprocess.run(
            [sys.executable, "-m", "engine.imports.arrow_reader"],
            input=data, capture_output=True, timeout=TIMEOUT_S, cwd=_PROJECT_ROOT, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise BadFile(f"{name} took more than {TIMEOUT_S:.0f} s to decode") from None
    if done.returncode == _REFUSED:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no reason given"]
        raise BadFile(f"{name} {reason[0]}")
    if done.returncode != 0:
        how = f"signal {-done.returncode}" if done.returncode < 0 else f"status {done.returncode}"
        raise BadFile(f"{name} is not a readable Parquet or Arrow table (its reader stopped with {how})")
    return pa.ipc.open_stream(pa.BufferReader(done.stdout)).read_all()


def _child() -> int:
    """Read a table from stdin, write it to stdout as a plain Arrow stream (see the module
    docstring); a refusal is one line on stderr and exit status ``_REFUSED``."""
    import resource

    import pyarrow as pa

    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    data = sys.stdin.buffer.read()
    try:
        table = read_checked(data)
    except Refusal as refusal:
        print(refusal, file=sys.stderr)
        return _REFUSED
    except MemoryError:  # pyarrow's ArrowMemoryError too
        print(f"decodes to more than the {CHILD_MEMORY_BYTES // 1024**3} GB its reader may use", file=sys.stderr)
        return _REFUSED
    except (pa.ArrowException, OSError, ValueError, TypeError) as error:  # a damaged or unusual file
        print(f"is not a readable Parquet or Arrow table ({' '.join(str(error).split())[:200]})", file=sys.stderr)
        return _REFUSED
    with pa.ipc.new_stream(sys.stdout.buffer, table.schema) as writer:
        writer.write_table(table)
    return 0


class Refusal(Exception):
    """A table the child refuses to hand back (too many rows, too large decoded)."""


def read_checked(data: bytes) -> pa.Table:
    """The table in ``data``, refused (``Refusal``) past the size limits and validated in full;
    pyarrow's own errors pass through (the child turns every one into a refusal)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    if data[:4] == b"PAR1":
        parquet = pq.ParquetFile(io.BytesIO(data))
        metadata = parquet.metadata
        _check_size(
            metadata.num_rows, sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
        )
        table = parquet.read(use_threads=False)  # read_table's reader threads abort on some damaged files
    else:
        opener = pa.ipc.open_file if data[:6] == b"ARROW1" else pa.ipc.open_stream
        reader = opener(pa.BufferReader(data))
        batches, rows, decoded = [], 0, 0
        for batch in _batches(reader):
            rows, decoded = rows + batch.num_rows, decoded + batch.nbytes
            _check_size(rows, decoded)
            batches.append(batch)
        table = pa.Table.from_batches(batches, schema=reader.schema)
    _check_size(table.num_rows, table.nbytes)
    table.validate(full=True)  # a malformed buffer fails here, not in the conversion that follows
    return table


def _batches(reader):
    if hasattr(reader, "num_record_batches"):  # an IPC file
        return (reader.get_batch(i) for i in range(reader.num_record_batches))
    return iter(reader)


def _check_size(rows: int, decoded_bytes: int) -> None:
    if rows > MAX_ROWS:
        raise Refusal(f"has {rows:,} rows, more than the {MAX_ROWS:,} allowed")
    if decoded_bytes > MAX_DECODED_BYTES:
        raise Refusal(f"decodes to {decoded_bytes:,} bytes, more than the {MAX_DECODED_BYTES:,} allowed")


if __name__ == "__main__":
    sys.exit(_child())
