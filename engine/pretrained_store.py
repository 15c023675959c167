"""AML's pre-trained attribution models kept on disk, so a new process (a command, a restarted
app) reads one back in about a second instead of pre-training it again (11-13 s for the bundled
models on 2 CPU cores; Barkan et al. 2024, arXiv:2405.12522).

Layout under the results folder (``$ATTRIBUTION_RESULTS_DIR``, default ``./results``)::

    pretrained/aml/<key>/model.safetensors   the attribution model's weights
    pretrained/aml/<key>/card.json           what it was trained on, its cost and training trace

The key is a digest of everything that decides the trained weights: the classifier's files
(``model_fingerprint``: weights, adapter, config, tokenizer), its head type, the device type, the
pre-training parameters (``PRETRAIN_FIELDS``), the training data (the training split's data
files, or the explained example's words when the model trains on it) and ``PRETRAIN_VERSION``.
A classifier handed over as an object, or whose files cannot be found, has no key and is never
saved. An entry is written into a temporary folder and renamed into place, so a reader sees a
whole entry or none; an entry that cannot be read back (damaged, another layout) is trained
again and replaced. Weights are safetensors and the card JSON: reading an entry runs no code
from it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from safetensors import SafetensorError
from safetensors.torch import load_model, save_model

from core.classifier import Classifier
from core.files import replaced_atomically
from engine.runs.model_identity import model_fingerprint
from engine.runs.store import results_dir
from explainers.aml import PRETRAIN_FIELDS, AmlParams, PretrainedAml
from explainers.aml.pretrain import PRETRAIN_VERSION, BackboneFn, freeze, new_attribution_model

FOLDER = Path("pretrained") / "aml"
_WEIGHTS = "model.safetensors"
_CARD = "card.json"
_CARD_FIELDS = ("backbone", "source", "n_examples", "runtime_s", "forward_passes", "backward_passes", "trace")


def default_folder(results: Path | None = None) -> Path:
    """Where pre-trained models are kept: under the results folder ``results`` (None: the app's
    and the command line's default)."""
    return (results if results is not None else results_dir()) / FOLDER


def entry_key(clf: Classifier, params: AmlParams, training: str) -> str | None:
    """The digest naming the entry of this classifier, parameters and training data (``training``:
    ``engine.resources.training_digest``); None when the classifier's weights are not known to
    come from files that can be fingerprinted."""
    if not clf.loaded.from_files:
        return None
    try:
        fingerprint = model_fingerprint(clf.name)
    except ValueError:
        return None
    parts = {
        "version": PRETRAIN_VERSION,
        "model": fingerprint,
        "head": clf.head_type,
        "device": clf.device.type,
        "settings": {name: getattr(params, name) for name in PRETRAIN_FIELDS},
        "training": training,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:40]


def has(folder: Path, key: str) -> bool:
    """Whether the folder holds a whole entry ``key`` (``load`` may still find it unreadable)."""
    return (folder / key / _CARD).is_file()


def load(folder: Path, key: str, clf: Classifier, backbone: BackboneFn) -> PretrainedAml | None:
    """The entry ``key`` read back onto the classifier's device, or None when there is none or it
    cannot be read (then the caller trains again and ``save`` replaces it)."""
    entry = folder / key
    if not has(folder, key):
        return None
    try:
        card = json.loads((entry / _CARD).read_text())
        model, _ = new_attribution_model(clf, backbone)
        load_model(model, entry / _WEIGHTS, strict=True, device=str(clf.device))
        freeze(model)
        return PretrainedAml(model, **{name: card[name] for name in _CARD_FIELDS}, loaded_from=str(entry))
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, SafetensorError):
        return None


def save(folder: Path, key: str, trained: PretrainedAml) -> Path:
    """Write ``trained`` as the entry ``key`` (whole or not at all) and return its folder."""
    entry = folder / key
    try:
        with replaced_atomically(entry) as staging:  # a damaged entry, or one just written elsewhere, is replaced
            staging.mkdir()
            save_model(trained.model, str(staging / _WEIGHTS))
            card = {name: getattr(trained, name) for name in _CARD_FIELDS}
            (staging / _CARD).write_text(json.dumps(card))
    except OSError:
        if not (entry / _CARD).is_file():  # another process's entry took the place first: keep it
            raise
    return entry
