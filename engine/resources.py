"""What explainers that train take from their caller (``ExplainerSpec.takes_resources``): AML's
pre-trained attribution models (Barkan et al. 2024), with the training data and the
encoder they are built from.

A ``Resources`` object is owned by its caller, never by a module: the app keeps one per server
process (services/resources.py, ``st.cache_resource``), each command-line command builds one per
run. Its cache keeps a few pre-trained models (least recently used dropped), keyed by the
classifier object, the pre-training parameters and the training slice; a model is trained once
per key under that key's own lock, so two sessions explaining with other settings do not wait
for each other. With a ``folder`` (``Resources.saved()``: the results folder's, which the app and
the command line use) a model is also kept on disk (engine/pretrained_store.py) and read back
instead of trained in a later process.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

from torch import nn

from core.classifier import Classifier, ProgressFn
from core.types import Example
from explainers.aml import (
    FALLBACK_SOURCE,
    PRETRAIN_FIELDS,
    AmlParams,
    PretrainedAml,
    pretrain_aml,
    select_training_examples,
)
from explainers.aml.model import own_backbone

_SPLIT_PREFERENCE = ("train", "validation", "dev", "val", "dev_highlighted")


def training_split(clf: Classifier) -> tuple[str, str] | None:
    """(dataset, split) pAML trains on, or None: the dataset the classifier was trained for (its
    bundled card's ``dataset``, else its catalog entry's), first split present in the data folder
    among train / validation / dev / val / dev_highlighted."""
    from core import catalog, datasets
    from core.models import model_info

    entry = catalog.find(clf.name)
    dataset = model_info(clf.name).get("dataset") or (entry.dataset if entry is not None else None)
    if dataset not in datasets.DATASET_NAMES or dataset == "examples":
        return None
    splits = datasets.available_splits(dataset)
    split = next((s for s in _SPLIT_PREFERENCE if s in splits), None)
    return (dataset, split) if split is not None else None


def training_examples(clf: Classifier, example: Example, n_train: int, seed: int) -> tuple[list[Example], str]:
    """pAML's training slice and its name: ``select_training_examples`` from ``training_split``;
    without one (no data folder, no known dataset), the explained example repeated ``n_train``
    times."""
    from core import datasets

    found = training_split(clf)
    if found is not None:
        chosen, from_pool = select_training_examples(clf, datasets.load_examples(*found), example, n_train, seed)
        if from_pool:
            return chosen, "/".join(found)
    return [example] * n_train, FALLBACK_SOURCE


def training_digest(clf: Classifier, example: Example) -> str:
    """Names what ``training_examples`` would train on without loading it: the training split's
    dataset, split and a digest of its data files, or the explained example's words."""
    found = training_split(clf)
    if found is None:
        return "example:" + hashlib.sha256(json.dumps(example.segments).encode()).hexdigest()
    from core import datasets
    from engine.runs.model_identity import files_digest

    folder = datasets.split_folder(found[0])
    if folder is None:
        return f"split:{'/'.join(found)}:no data folder"
    files = sorted((p.relative_to(folder).as_posix(), p) for p in folder.rglob("*") if p.is_file())
    return f"split:{'/'.join(found)}:{files_digest(files)}"


def backbone(clf: Classifier) -> tuple[nn.Module, str]:
    """The attribution model's encoder: for the bundled models, the packaged pre-trained MiniLM
    they were fine-tuned from (the paper's choice: the pre-trained, not fine-tuned, version of the
    explained architecture); otherwise the classifier's own encoder copied (``own_backbone``)."""
    from core.models import delta_folder, encoder_path

    if delta_folder(clf.name) is not None:
        from transformers import AutoModel

        return AutoModel.from_pretrained(encoder_path()), "packaged pre-trained MiniLM encoder"
    return own_backbone(clf)


class Resources:
    """The caller's AML resources (``explainers.aml.AmlResources``): a small cache of pre-trained
    attribution models with one lock per key."""

    def __init__(self, size: int = 4, folder: str | os.PathLike | None = None) -> None:
        self.size = size
        self.folder = Path(folder) if folder is not None else None
        self._entries: OrderedDict[tuple, tuple[weakref.ref, PretrainedAml]] = OrderedDict()
        self._locks: dict[tuple, threading.Lock] = {}
        self._falls_back: set[tuple] = set()  # keys whose training split has no example that fits
        self._guard = threading.Lock()  # held only to read or change the two dictionaries

    def pretrained(
        self, clf: Classifier, example: Example, params: AmlParams, progress: ProgressFn | None = None
    ) -> PretrainedAml:
        """The pre-trained attribution model for this classifier and parameters, trained on first
        use."""
        base, key = self._keys(clf, example, params)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if (found := self._cached(clf, key)) is not None:
                return found
            trained = self._trained(clf, example, params, progress)
            with self._guard:
                # the split had no example that fits: the model is the explained example's
                if key[-1] is None and trained.source == FALLBACK_SOURCE:
                    self._falls_back.add(base)
                    key = (*base, example.segments)
                self._entries[key] = (weakref.ref(clf.loaded.model), trained)
                while len(self._entries) > self.size:
                    dropped, _ = self._entries.popitem(last=False)
                    self._locks.pop(dropped, None)
            return trained

    def ready(self, clf: Classifier, example: Example, params: AmlParams) -> bool:
        """Whether ``pretrained`` would answer without training: the model is in the cache, or in
        the folder (a time estimate leaves the pre-training out then)."""
        from engine import pretrained_store

        if self._cached(clf, self._keys(clf, example, params)[1]) is not None:
            return True
        if self.folder is None:
            return False
        entry = pretrained_store.entry_key(clf, params, training_digest(clf, example))
        return entry is not None and pretrained_store.has(self.folder, entry)

    def _cached(self, clf: Classifier, key: tuple) -> PretrainedAml | None:
        """The model kept under ``key`` when it was trained for this very classifier object."""
        with self._guard:
            found = self._entries.get(key)
            if found is None or found[0]() is not clf.loaded.model:
                return None
            self._entries.move_to_end(key)
            return found[1]

    def _keys(self, clf: Classifier, example: Example, params: AmlParams) -> tuple[tuple, tuple]:
        """The cache's key without the example, and the key of this example's model."""
        settings = tuple(getattr(params, name) for name in PRETRAIN_FIELDS)
        base = (id(clf.loaded.model), clf.name, str(clf.device), settings, len(example.segments))
        # Without a training split, or with one of which no example fits (_falls_back), the model
        # is trained on the explained example: one per example.
        on_example = training_split(clf) is None or base in self._falls_back
        return base, (*base, example.segments if on_example else None)

    @classmethod
    def saved(cls, results: Path | None = None) -> Resources:
        """Resources that keep pre-trained models in the results folder ``results`` (None: the
        default one; ``pretrained_store``)."""
        from engine.pretrained_store import default_folder

        return cls(folder=default_folder(results))

    def _trained(
        self, clf: Classifier, example: Example, params: AmlParams, progress: ProgressFn | None
    ) -> PretrainedAml:
        """The model from the folder when it has it, else trained on ``training_examples`` (and
        saved when it has a key)."""
        from engine import pretrained_store

        folder = self.folder
        key = pretrained_store.entry_key(clf, params, training_digest(clf, example)) if folder is not None else None
        if folder is not None and key is not None:
            found = pretrained_store.load(folder, key, clf, backbone)
            if found is not None:
                return found
        examples, source = training_examples(clf, example, params.n_train, params.seed)
        trained = pretrain_aml(clf, examples, source, params, backbone, progress)
        # A split with no example that fits falls back on the explained example, which the key does not name.
        if folder is not None and key is not None and (source != FALLBACK_SOURCE or training_split(clf) is None):
            pretrained_store.save(folder, key, trained)
        return trained

    def clear(self) -> None:
        with self._guard:
            self._entries.clear()
            self._locks.clear()
            self._falls_back.clear()
