"""Dataset loaders behind one interface: ``load_dataset(name, split)`` returns a
``datasets.Dataset`` (one row per example, ``core.example_dataset``) and ``load_examples`` the
``Example``s of its rows.

Local files are read from the folder in ``ATTRIBUTION_DATA_DIR`` (formats in that folder's
README): SST-2 TSV, e-SNLI line files with the human highlight files, ERASER movie reviews
(``datasets.load_from_disk``), HateXplain CSV and MultiRC JSON. ``examples`` is the project's
own hand-written set under ``assets/examples``. Hub versions for online users live in
``core.hub_datasets`` behind the same ``Example`` type, and a file of one's own (``file:PATH``:
CSV, TSV, JSON lines or Parquet, one split ``all``) in ``files``.

One module per source (``sst2``, ``esnli``, ``movies``, ``hatexplain``, ``multirc``, ``bundled``)
and what they share (``common``); this module is the registry of names and splits and the
interface the rest of the project imports.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from core.datasets.bundled import EXAMPLES_FILE, load_bundled_examples
from core.datasets.common import DATA_DIR_ENV, data_dir, majority_mask, split_words
from core.datasets.esnli import ESNLI_LABELS, load_esnli
from core.datasets.files import (
    FILE_PREFIX,
    FILE_SPLIT,
    SPLIT_COLUMN,
    content_key,
    file_splits,
    file_version,
    load_file_examples,
    read_file_table,
)
from core.datasets.hatexplain import HATEXPLAIN_COMMUNITIES, HATEXPLAIN_LABELS, hatexplain_annotations, load_hatexplain
from core.datasets.labels import align_labels
from core.datasets.movies import MOVIES_LABELS, load_movie_reviews, load_movies
from core.datasets.multirc import MULTIRC_LABELS, load_multirc
from core.datasets.sst2 import SST2_LABELS, load_sst2
from core.types import Example

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = [
    "DATASET_NAMES",
    "DATA_DIR_ENV",
    "ESNLI_LABELS",
    "EXAMPLES_FILE",
    "FILE_PREFIX",
    "FILE_SPLIT",
    "HATEXPLAIN_COMMUNITIES",
    "HATEXPLAIN_LABELS",
    "HUB_PREFIX",
    "MOVIES_LABELS",
    "MULTIRC_LABELS",
    "SPLIT_COLUMN",
    "SST2_LABELS",
    "align_labels",
    "available_datasets",
    "available_splits",
    "content_key",
    "data_dir",
    "file_version",
    "hatexplain_annotations",
    "hub_online",
    "load_bundled_examples",
    "load_dataset",
    "load_examples",
    "majority_mask",
    "split_words",
]

_LOCAL: dict[str, tuple[Callable[[Path, str], list[Example]], dict[str, str]]] = {
    # name: (loader, {split: file or folder that must exist, relative to the data folder})
    "sst2": (load_sst2, {"train": "sst2/train.tsv", "dev": "sst2/dev.tsv", "test": "sst2/test.tsv"}),
    "esnli": (load_esnli, {"dev_highlighted": "esnli/highlights", "dev": "esnli/s1.dev", "test": "esnli/s1.test"}),
    "movies": (load_movies, {s: f"movies/{s}" for s in ("train", "validation", "test")}),
    "movie-reviews": (load_movie_reviews, {s: f"movies/{s}" for s in ("train", "validation", "test")}),
    "hatexplain": (load_hatexplain, {"val": "hatexplain/val.csv", "test": "hatexplain/test.csv"}),
    "multirc": (load_multirc, {"train": "multirc/train.json", "dev": "multirc/dev.json"}),
}
DATASET_NAMES = (*_LOCAL, "examples")
# Hub versions of the datasets (``core.hub_datasets``): ``hub:sst2``, ``hub:movies`` ... load with
# ``datasets.load_dataset`` and need the network (or the hub cache); offered when HF_HUB_OFFLINE is off.
HUB_PREFIX = "hub:"


def hub_online() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() not in ("1", "true", "yes", "on")


def available_splits(name: str, root: str | os.PathLike | None = None) -> list[str]:
    """Splits of ``name`` present in the data folder (bundled examples: one split per task)."""
    if name == "examples":
        return ["all", *sorted({e.split for e in load_bundled_examples()})]
    if name.startswith(FILE_PREFIX):
        return file_splits(read_file_table(name))
    if name.startswith(HUB_PREFIX):
        from core.hub_datasets import HUB_SOURCES

        if name[len(HUB_PREFIX) :] not in HUB_SOURCES:
            raise ValueError(f"unknown hub dataset {name!r}; known: {', '.join(HUB_PREFIX + n for n in HUB_SOURCES)}")
        return list(HUB_SOURCES[name[len(HUB_PREFIX) :]].splits)
    folder = data_dir(root)
    if name not in _LOCAL:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASET_NAMES)}, or file:PATH")
    if folder is None:
        return []
    return [split for split, rel in _LOCAL[name][1].items() if (folder / rel).exists()]


def split_folder(name: str, root: str | os.PathLike | None = None) -> Path | None:
    """The folder under the data folder that holds every file of a local dataset's splits
    (``sst2/``, ``esnli/`` ...); None for the bundled examples, the hub versions or no data
    folder."""
    folder = data_dir(root)
    if name not in _LOCAL or folder is None:
        return None
    first = next(iter(_LOCAL[name][1].values()))
    return folder / Path(first).parts[0]


def available_datasets(root: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """``{dataset: [splits]}`` for every dataset with at least one split present, then (online)
    the hub versions."""
    names = list(DATASET_NAMES)
    if hub_online():
        from core.hub_datasets import HUB_SOURCES

        names += [HUB_PREFIX + name for name in HUB_SOURCES]
    found = {name: available_splits(name, root) for name in names}
    return {name: splits for name, splits in found.items() if splits}


def load_dataset(name: str, split: str, root: str | os.PathLike | None = None, limit: int | None = None) -> Dataset:
    """Load a split of a dataset as a ``datasets.Dataset`` of examples (``core.example_dataset``
    columns; first ``limit`` rows when given); ``hub:NAME`` loads the hub version
    (``core.hub_datasets``)."""
    from core.example_dataset import to_dataset

    return to_dataset(_parse(name, split, root, limit))


def load_examples(
    name: str, split: str, root: str | os.PathLike | None = None, limit: int | None = None, *, exact: bool = False
) -> list[Example]:
    """The ``Example``s of ``load_dataset(name, split, root, limit)``, built from its rows. With
    ``exact`` a limit past the split's end is refused: it would give the whole split under the
    name of a slice (another run key than the whole split's, a request that runs far longer than
    asked)."""
    from core.example_dataset import to_examples

    examples = to_examples(load_dataset(name, split, root, limit))
    if exact and limit is not None and len(examples) < limit:
        raise ValueError(
            f"a limit of {limit} is more than the {len(examples)} examples of {name}/{split}: "
            "ask for the whole split instead"
        )
    return examples


def _parse(name: str, split: str, root: str | os.PathLike | None, limit: int | None) -> list[Example]:
    """Each row of a split parsed from its source (local files, bundled examples or the hub)."""
    if name.startswith(HUB_PREFIX):
        from core.hub_datasets import load_hub_examples

        return load_hub_examples(name[len(HUB_PREFIX) :], split, limit=limit)
    if name.startswith(FILE_PREFIX):
        return load_file_examples(name, split, limit)
    if name == "examples":
        if split not in available_splits("examples"):
            raise ValueError(f"unknown split {split!r} of examples; known: {', '.join(available_splits('examples'))}")
        examples = load_bundled_examples(split=split)
    else:
        if name not in _LOCAL:
            raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASET_NAMES)}, or file:PATH")
        folder = data_dir(root)
        if folder is None:
            raise FileNotFoundError(_no_data_folder(name, root))
        loader, splits = _LOCAL[name]
        if split not in splits:
            raise ValueError(f"unknown split {split!r} of {name}; known: {', '.join(splits)}")
        if not (folder / splits[split]).exists():
            raise FileNotFoundError(f"{name}/{split} not found under {folder}")
        examples = loader(folder, split)
    return examples[:limit] if limit is not None else examples


def _no_data_folder(name: str, root: str | os.PathLike | None) -> str:
    """Why there is no data folder: the one given (``root``, else ``$ATTRIBUTION_DATA_DIR``) is
    not a folder, or none was given."""
    if root:
        return f"data folder {root} not found (it should hold {name}/)"
    if root is None and os.environ.get(DATA_DIR_ENV):
        return f"data folder {os.environ[DATA_DIR_ENV]} (${DATA_DIR_ENV}) not found (it should hold {name}/)"
    return f"no data folder: set {DATA_DIR_ENV} to the folder holding {name}/ (e.g. ../shared/data)"
