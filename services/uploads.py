"""Uploaded data files, kept in the results folder under ``uploads/<SHA-256 of the bytes>/`` with
their own names: saved whole or not at all, listed, deleted, and on a shared server each
visitor's own (a run on another visitor's upload is not listed to them)."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from core.datasets import FILE_PREFIX
from core.datasets.files import BUILDERS
from core.files import replaced_atomically
from engine.runs.records import RunInfo
from engine.runs.store import RunStore, results_dir

DATA_FILE_TYPES = [suffix.lstrip(".") for suffix in BUILDERS]
# A shared server parses no Parquet upload: pyarrow's Parquet reader trusts the file's own sizes
# (a crafted file can ask for more memory than it holds), unlike the text formats' readers.
SHARED_DATA_FILE_TYPES = [kind for kind in DATA_FILE_TYPES if kind != "parquet"]
DATA_UPLOAD_MB = 64  # the largest data file the sidebar takes as an upload
UPLOADS = "uploads"  # the results folder's folder of uploaded data files, one folder per content


def save_upload(filename: str, content: bytes) -> str:
    """Keep an uploaded data file in the results folder, under ``uploads/<SHA-256 of its bytes>/``
    with its own name (letters, digits, ``.``, ``_`` and ``-`` kept; the rest become ``_``), written
    whole or not at all, and return its dataset name (``file:PATH``, the path absolute: a link or
    a command copied from the app names it from anywhere). The same bytes uploaded again
    are the same file. A name without a data file's suffix, or a file over ``DATA_UPLOAD_MB``, is
    refused."""
    from services.access import shared_mode

    suffix = Path(filename).suffix.lower()
    kinds = SHARED_DATA_FILE_TYPES if shared_mode() else DATA_FILE_TYPES
    if suffix.lstrip(".") not in kinds:
        raise ValueError(f"{filename!r}: a data file here is one of {', '.join('.' + kind for kind in kinds)}")
    if len(content) > DATA_UPLOAD_MB * 1024 * 1024:
        raise ValueError(f"{filename!r} is over {DATA_UPLOAD_MB} MB")
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", Path(filename).stem)[:80].lstrip(".") or "data"
    path = results_dir().absolute() / UPLOADS / hashlib.sha256(content).hexdigest()[:32] / f"{stem}{suffix}"
    if not path.is_file():
        with replaced_atomically(path) as temporary:
            temporary.write_bytes(content)
    return FILE_PREFIX + str(path)


def is_upload(name: str) -> bool:
    """Whether the data file ``name`` (``file:PATH``) is one ``save_upload`` kept."""
    path = Path(name.removeprefix(FILE_PREFIX)).expanduser().resolve()
    return path.is_relative_to((results_dir() / UPLOADS).resolve())


def dataset_label(name: str) -> str:
    """A dataset's name as a picker shows it: an uploaded data file by its own name (its folder in
    the results folder is a long digest), anything else as it is."""
    return f"upload {Path(name).name}" if name.startswith(FILE_PREFIX) and is_upload(name) else name


def hidden_uploads(names: Sequence[str], mine: Collection[str]) -> list[bool]:
    """For each dataset of the stored runs or jobs ``names``, whether it is kept from a session of a
    shared server: a data file someone uploaded whose bytes the session (``mine``: its own data
    files) has not uploaded. A visitor sees the runs on their own data, not on a classmate's."""
    from services.access import shared_mode

    if not shared_mode():
        return [False] * len(names)
    own = {_content_folder(name) for name in mine}
    return [name.startswith(FILE_PREFIX) and is_upload(name) and _content_folder(name) not in own for name in names]


def _content_folder(name: str) -> str:
    return Path(name.removeprefix(FILE_PREFIX)).parent.name  # uploads/<SHA-256 of the bytes>/


@dataclass(frozen=True)
class KeptUpload:
    """A data file kept by ``save_upload``: its dataset name (``file:PATH``), size, when it was
    saved (seconds since the epoch) and the stored runs and ROAR jobs on it."""

    name: str
    size: int
    saved: float
    runs: int

    @property
    def label(self) -> str:
        """``reviews.csv · 12.3 KB · 2 runs``, as the sidebar's picker shows it."""
        runs = f" · {self.runs} run{'s' * (self.runs != 1)}" if self.runs else ""
        return f"{Path(self.name).name} · {self.size / 1024:.1f} KB{runs}"


def kept_uploads(mine: Collection[str]) -> list[KeptUpload]:
    """The uploaded data files kept in the results folder, newest first; on a shared server only
    those whose bytes the session counts as its own (``mine``)."""
    folder = results_dir().absolute() / UPLOADS
    # an upload being written (or one a killed writer left) has a hidden temporary name
    names = [FILE_PREFIX + str(path) for path in folder.glob("*/[!.]*") if path.is_file()]
    names = [name for name, hidden in zip(names, hidden_uploads(names, mine), strict=True) if not hidden]
    runs = _runs_per_dataset(*RunStore(read_only=True).cache_key()) if names else {}
    kept = []
    for name in names:
        try:
            stat = Path(name.removeprefix(FILE_PREFIX)).stat()
        except FileNotFoundError:  # deleted by another session since the listing
            continue
        kept.append(KeptUpload(name, stat.st_size, stat.st_mtime, runs.get(name, 0)))
    return sorted(kept, key=lambda upload: upload.saved, reverse=True)


def delete_upload(name: str) -> None:
    """Remove an uploaded data file (its content folder with it once empty). The stored runs and
    jobs on it keep their examples and scores, but cannot be resumed or extended. Refused on a
    shared server (another visitor may have uploaded the same bytes), for a file no upload kept,
    and while a live process writes a run or job on it."""
    from services.access import shared_mode

    if shared_mode():
        raise ValueError("uploads are not deleted on a shared server: other visitors may use the same file")
    if not name.startswith(FILE_PREFIX) or not is_upload(name):
        raise ValueError(f"{name!r} is not an uploaded data file")
    writing = [info.run_id for info in _stored_runs() if info.dataset == name and info.being_written]
    if writing:
        raise ValueError(f"run {writing[0]} is being computed on {Path(name).name}: delete the file when it stops")
    path = Path(name.removeprefix(FILE_PREFIX))
    path.unlink(missing_ok=True)
    if path.parent.is_dir() and not any(path.parent.iterdir()):
        path.parent.rmdir()


def _stored_runs() -> list[RunInfo]:
    store = RunStore(read_only=True)
    return store.infos() if store.catalogue_path.exists() else []


@st.cache_data(show_spinner=False, max_entries=8)
def _runs_per_dataset(root: str, version: tuple[int, ...]) -> dict[str, int]:
    """The number of stored runs and jobs on each dataset, read again only when the catalogue
    changed (the sidebar asks on every rerun)."""
    store = RunStore(root, read_only=True)
    return Counter(info.dataset for info in store.infos()) if store.catalogue_path.exists() else {}
