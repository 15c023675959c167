"""What a run records of its model without loading it: the files that define it, their
fingerprint (part of the run's key, so a changed model is another run) and its class names."""

from __future__ import annotations

import hashlib
from pathlib import Path

# Files that make a model what it is: weights, adapters, configs, tokenizer and vocabulary.
MODEL_FILE_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth", ".json", ".txt", ".model", ".msgpack"}


def model_files(name_or_path: str) -> list[tuple[str, Path]]:
    """(name, path) of every file that defines the model: a bundled delta with the packaged
    encoder it is merged into, a local folder's files, a hub model's cached snapshot, or for a
    benchmark model the packaged encoder's tokenizer and config files."""
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
    if path.is_dir():
        return folder_files("model", path)
    from huggingface_hub import snapshot_download

    try:
        snapshot = snapshot_download(name_or_path, allow_patterns=[f"*{s}" for s in MODEL_FILE_SUFFIXES])
    except Exception as error:  # the hub client raises many types; every one means "not found"
        from core.models import missing_model_message

        raise ValueError(missing_model_message(name_or_path, error)) from error
    return folder_files("hub", Path(snapshot))


def model_fingerprint(name_or_path: str) -> str:
    """SHA-256 over the names and contents of ``model_files``: a changed weight, adapter,
    config or tokenizer file gives another fingerprint. A benchmark model (``random:<size>``) has
    no weight files: its config, its seed and the packaged vocabulary it reads make it what it
    is."""
    from core.random_models import SEED, is_random, random_config

    if is_random(name_or_path):
        config = random_config(name_or_path).to_json_string(use_diff=False)
        digest = hashlib.sha256(f"{config}\0seed {SEED}\0".encode())
        digest.update(files_digest(model_files(name_or_path)).encode())
        return digest.hexdigest()
    files = model_files(name_or_path)
    if not files:
        raise ValueError(f"no model files found for {name_or_path!r}")
    return files_digest(files)


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
