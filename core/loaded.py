"""The shared model: ``LoadedClassifier`` holds a sequence classifier and its fast tokenizer, loaded
once (``load_classifier``: a bundled name, hub id or folder; ``classifier_from_model``: a model
object) and frozen, then read by every request through its own ``core.classifier.Classifier``."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch

from core.attention_view import eager_view
from core.devices import chosen_device
from core.first_token_view import first_token_view
from core.heads import detect_head
from core.last_token import reads_last_token
from core.models import readable_length


@dataclass
class LoadedClassifier:
    """A model and tokenizer loaded once and shared (read-only) by every request."""

    name: str
    model: torch.nn.Module
    tokenizer: object
    device: torch.device
    pair: bool | None = None  # None: unknown (hub models accept one or two segments)
    # True when ``name`` names the files the weights were read from (``load_classifier``); False
    # for a model object handed over (``classifier_from_model``), whose weights may differ from
    # any files of that name.
    from_files: bool = False
    # Guards the one-off construction of the views (``eager_model``, ``logits_model``) and probes.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _eager: torch.nn.Module | None = field(default=None, init=False, repr=False, compare=False)
    _logits: torch.nn.Module | None = field(default=None, init=False, repr=False, compare=False)
    _last_token: bool | None = field(default=None, init=False, repr=False, compare=False)
    # How rows of different lengths may share a pass (``core.padding``), once ``Classifier.padding`` probed it.
    padding: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def eager_model(self) -> torch.nn.Module:
        """The shared model's eager-attention view (``core.attention_view``), built on first use."""
        if self._eager is None:
            with self.lock:
                if self._eager is None:
                    self._eager = eager_view(self.model)
        return self._eager

    @property
    def logits_model(self) -> torch.nn.Module:
        """The module the passes that read only logits run: the shared model's view with its last
        layer computed at the first token only (``core.first_token_view``), built and checked on
        first use, or the shared model itself where that view does not fit."""
        if self._logits is None:
            with self.lock:
                if self._logits is None:
                    self._logits = first_token_view(self.model) or self.model
        return self._logits

    @property
    def reads_last_token(self) -> bool:
        """Whether the model is a decoder classifier whose logits are read at each row's last real
        token by ``core.last_token`` (probed on first use)."""
        if self._last_token is None:
            with self.lock:
                if self._last_token is None:
                    self._last_token = reads_last_token(self.model)
        return self._last_token

    def __repr__(self) -> str:
        """One line (a notebook cell printed the whole model and tokenizer): the name, the model's
        class, its labels and device."""
        labels = ", ".join(self.label_names)
        return f"<LoadedClassifier {self.name!r}: {type(self.model).__name__} on {self.device}, labels {labels:.200}>"

    @property
    def label_names(self) -> tuple[str, ...]:
        config = self.model.config
        return tuple(config.id2label[i] for i in range(config.num_labels))

    @property
    def max_length(self) -> int:
        return readable_length(self.model.config, self.tokenizer)

    def check_texts(self, count: int) -> None:
        """Refuse two texts (read as a premise and a hypothesis) for a model known to read one,
        which would explain an input it was never trained on."""
        if count == 2 and self.pair is False:
            raise ValueError(
                f"{self.name!r} reads one text, not a (premise, hypothesis) pair: explain each text on its own"
            )


def segments_refusal(name: str, pair: bool | None, is_pair: bool) -> str | None:
    """Why the model ``name``, which reads sentence pairs (``pair`` True) or single texts (False),
    cannot read an example of two segments (``is_pair``) or one; None where it can, or where what
    it reads is unknown (``pair`` None)."""
    if pair is True and not is_pair:
        return f"{name} classifies sentence pairs: give a premise and a hypothesis"
    if pair is False and is_pair:
        return f"{name} classifies single texts, not sentence pairs"
    return None


def load_classifier(name_or_path: str, device: str | torch.device | None = None) -> LoadedClassifier:
    """Load a sequence classifier (bundled name, hub id or local folder) for sharing, frozen as
    ``classifier_from_model`` freezes it, on ``device`` (default: CUDA, else MPS, else CPU)."""
    from safetensors import SafetensorError

    from core.models import check_vocabulary, load_sequence_classifier, load_tokenizer, model_info

    try:
        model = load_sequence_classifier(name_or_path)
        tokenizer = load_tokenizer(name_or_path)
        check_vocabulary(model, tokenizer)
    except SafetensorError as error:
        raise ValueError(
            f"cannot load {name_or_path!r} as a sequence classifier: the weights file is damaged ({error})"
        ) from error
    except (OSError, ValueError, KeyError) as error:
        raise ValueError(f"cannot load {name_or_path!r} as a sequence classifier: {error}") from error
    chosen = chosen_device(device)
    loaded = classifier_from_model(
        model, tokenizer, name=name_or_path, device=chosen, pair=model_info(name_or_path).get("pair")
    )
    loaded.from_files = True
    return loaded


def classifier_from_model(
    model: torch.nn.Module,
    tokenizer: object,
    *,
    name: str | None = None,
    device: str | torch.device | None = None,
    pair: bool | None = None,
) -> LoadedClassifier:
    """Share an already-loaded ``transformers`` sequence classifier and its fast tokenizer.

    The model is frozen in place, and changed in no other way: ``eval()`` and
    ``requires_grad_(False)`` on every parameter (gradient methods differentiate with respect to
    input embeddings only, so no gradient ever lands on the shared weights). It stays on its own
    device unless ``device`` is given, when it is moved there (``Module.to``, in place).
    """
    config = getattr(model, "config", None)
    if not isinstance(model, torch.nn.Module) or config is None:
        raise ValueError(f"{name or type(model).__name__!r} is not a sequence classifier (no config)")
    if getattr(model, "base_model_prefix", "") and getattr(model, "base_model", None) is model:  # BertModel: no head
        raise ValueError(
            f"{name or type(model).__name__!r} has no classification head: give a *ForSequenceClassification model"
        )
    detect_head(config, name=repr(name or type(model).__name__))  # refuses a model with no head
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"{type(tokenizer).__name__} is not a fast tokenizer: one is needed to map words to subwords")
    from core.models import check_vocabulary

    try:
        check_vocabulary(model, tokenizer)
    except ValueError as error:
        raise ValueError(f"{name or type(model).__name__!r}: {error}") from error
    if device is not None:
        model.to(chosen_device(device))
    first = next(model.parameters(), None)
    chosen = torch.device(device) if device is not None else first.device if first is not None else torch.device("cpu")
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    label = name or getattr(config, "name_or_path", "") or type(model).__name__
    return LoadedClassifier(label, model, tokenizer, chosen, pair=pair)
