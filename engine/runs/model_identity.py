"""What a run records of its model without loading it: the files that define it, their
fingerprint (part of the run's key, so a changed model is another run) and its class names."""

from __future__ import annotations

import hashlib
from pathlib import Path

# Files that make a model what it is: weights, adapters, configs, tokenizer and vocabulary.
MODEL_FILE_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth", ".json", ".txt", ".model", ".msgpack"}


def model_files(name_or_path: str) -> list[tuple[str, Path]]:
    """(name, path) of every file that defines the model: a bundled delta with the packaged
    encoder it is merged into, a local folder's files, or for a benchmark model the packaged
    encoder's tokenizer and config files; none for a hub model (``hub_commit``)."""
    from core.models import delta_folder, encoder_path

    def folder_files(label: str, folder: Path) -> list[tuple[str, Path]]:
        return [
            (f"{label}/{p.relative_to(folder).as_posix()}", p)
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.suffix in MODEL_FILE_SUFFIXES and not p.name.startswith(".")
        ]

    from core.random_models import is_random

    if is_random(name_or_path):  # weights drawn from a config (model_fingerprint): the vocabulary read
        return [item for item in folder_files("encoder", Path(encoder_path())) if item[1].suffix in (".json", ".txt")]
    delta = delta_folder(name_or_path)
    if delta is not None:
        return folder_files("delta", delta) + folder_files("encoder", Path(encoder_path()))
    path = Path(name_or_path).expanduser()
    return folder_files("model", path) if path.is_dir() else []


def hub_commit(name: str) -> str:
    """The commit of hub model ``name`` that loading it reads (its default branch's, as cached
    when offline): the snapshot folder is named by it. Only the config is fetched: the commit
    names every file, so the weights' several formats need not be downloaded to be told apart."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(name, allow_patterns=["config.json"])).name
    except Exception as error:  # the hub client raises many types; every one means "not found"
        from core.models import missing_model_message

        raise ValueError(missing_model_message(name, error)) from error


def model_fingerprint(name_or_path: str) -> str:
    """SHA-256 over the names and contents of ``model_files``: a changed weight, adapter,
    config or tokenizer file gives another fingerprint. A benchmark model (``random:<size>``) has
    no weight files: its config, its seed and the packaged vocabulary it reads make it what it
    is. A hub model is its name at a commit (``hub_commit``), whichever of its files are cached."""
    from core.random_models import SEED, is_random, random_config

    if is_random(name_or_path):
        config = random_config(name_or_path).to_json_string(use_diff=False)
        digest = hashlib.sha256(f"{config}\0seed {SEED}\0".encode())
        digest.update(files_digest(model_files(name_or_path)).encode())
        return digest.hexdigest()
    files = model_files(name_or_path)
    if files:
        return files_digest(files)
    if Path(name_or_path).expanduser().is_dir():
        raise ValueError(f"no model files found for {name_or_path!r}")
    return hashlib.sha256(f"hub\0{name_or_path}\0{hub_commit(name_or_path)}".encode()).hexdigest()


def files_digest(files: list[tuple[str, Path]]) -> str:
    """SHA-256 over each (name, path)'s name and the SHA-256 of its contents, in the given order."""
    digest = hashlib.sha256()
    for name, path in files:
        with open(path, "rb") as handle:
            digest.update(name.encode() + b"\0" + hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()


def label_names(name_or_path: str) -> tuple[str, ...]:
    """The model's class names without loading its weights."""
    from core.models import model_info

    info = model_info(name_or_path)
    if info:
        return tuple(info["label_names"])
    from core.models import model_config

    config = model_config(name_or_path)
    return tuple(config.id2label[i] for i in range(config.num_labels))
