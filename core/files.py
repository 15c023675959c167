"""Files and folders written whole or not at all, the check that a place can be written before
long work starts, and the clean-up of what a killed writer left behind.

Every result the project keeps on disk (a run's unit files, a ROAR job's scores and models, a
report, a trained model, a pretrained mask model) is written under a temporary name beside its
final place (``.<name>.<pid>.<random>.tmp``), synced and renamed into place, so a reader sees the
old file or the new one, never half of one (a folder that replaces another is gone for the moment
between the old one's removal and the rename, never half-written). ``interrupts_held`` keeps
Ctrl-C from cutting a catalogue transaction short.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

TEMPORARY_SUFFIX = ".tmp"


@contextlib.contextmanager
def replaced_atomically(final: Path) -> Iterator[Path]:
    """A temporary path beside ``final`` for the block to write (a file, or a folder it creates);
    when the block ends, its files are synced and the path renamed to ``final``, replacing what
    was there, and the rename synced. When the block raises, the temporary is removed and
    ``final`` is left as it was."""
    final.parent.mkdir(parents=True, exist_ok=True)
    temporary = final.with_name(f".{final.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMPORARY_SUFFIX}")
    try:
        yield temporary
        files = sorted(p for p in temporary.rglob("*") if p.is_file()) if temporary.is_dir() else [temporary]
        for path in files:
            _sync(path, os.O_RDONLY)
        if temporary.is_dir() and final.is_dir():  # a folder cannot be renamed over a full one
            shutil.rmtree(final)
        os.replace(temporary, final)
        _sync(final.parent, os.O_RDONLY | os.O_DIRECTORY)  # the rename itself survives a crash
    except BaseException:
        _remove(temporary)
        raise


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) and SIGTERM until the block ends, then deliver the first to the
    handler that was there (Python's raises ``KeyboardInterrupt``; ``cli run`` exits on SIGTERM).
    DuckDB answers an interrupt inside a query with ``RuntimeError: Query interrupted``, which
    would end a catalogue transaction half-way and turn a stopped run into a failed one. Only the
    main thread can set a signal handler, so elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.signal(signum, lambda signum, frame: caught.append(signum)) for signum in held}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught:
            signal.raise_signal(caught[0])


def write_text_atomic(path: Path, text: str) -> None:
    """``path``'s new text (UTF-8), written whole or not at all."""
    with replaced_atomically(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def remove_leftovers(folder: Path, name: str | None = None) -> int:
    """Remove the temporaries (files or folders named ``.*.tmp``) that a killed writer left under
    ``folder`` and return how many. With ``name``, only those that ``replaced_atomically`` made
    for ``folder / name`` go. A temporary whose writer (the process id in its name) still runs
    is kept: another process may be writing it now."""
    if not folder.is_dir():
        found = []
    elif name is None:
        found = list(folder.rglob(f".*{TEMPORARY_SUFFIX}"))
    else:
        found = list(folder.glob(f".{glob.escape(name)}.*{TEMPORARY_SUFFIX}"))
    left = [path for path in found if not _writer_runs(path)]
    for path in left:
        _remove(path)
    return len(left)


def _writer_runs(temporary: Path) -> bool:
    """Whether the process named in a ``replaced_atomically`` temporary
    (``.<name>.<pid>.<hex>.tmp``) runs now, this one included."""
    parts = temporary.name.removesuffix(TEMPORARY_SUFFIX).split(".")
    try:
        pid = int(parts[-2])
    except (IndexError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:  # another user's process
        return True
    except (ProcessLookupError, OverflowError):  # no process has that number
        return False
    return True


def writable_folder_problem(folder: Path) -> str | None:
    """Why nothing can be written in ``folder`` (created if missing, as a writer would), or None:
    the check to run before long work whose result goes there."""
    if folder.exists() and not folder.is_dir():
        return "a file is in the way"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:  # FileExistsError: a folder to create is a file
        return "a file is in the way" if isinstance(error, FileExistsError) else error.strerror
    return None


def _sync(path: Path, flags: int) -> None:
    handle = os.open(path, flags)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
