"""Cached model loading: the shared classifiers and masked LMs, one per process, and the model
pickers' choices."""

from __future__ import annotations

import re
from dataclasses import dataclass

import streamlit as st

from core import catalog, models
from core.classifier import Classifier, autocast_options
from core.devices import best_device
from core.heads import HEAD_LABELS
from core.loaded import LoadedClassifier, load_classifier
from core.masked_lm import MaskedLM
from core.model_refs import ref_autocast, split_ref
from experiments import randomization
from services import access

DEFAULT_MODEL = "minilm-sst2"
DEFAULT_MLM = "minilm-mlm"
HEAD_CHOICES = HEAD_LABELS  # head type -> what the sidebar's head picker shows (core.heads)


# Loading arbitrary hub ids or folders fails in many ways (missing files, wrong architecture,
# incompatible weights); all of them become one message for the user.
_LOAD_ERRORS = (ValueError, OSError, KeyError, RuntimeError, ImportError, TypeError)


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class ModelChoice:
    name: str
    label: str  # what the model picker shows
    description: str = ""


@dataclass(frozen=True)
class ModelInfo:
    name: str
    label_names: tuple[str, ...]
    pair: bool | None  # None: unknown (hub models may take one or two segments)
    max_length: int
    task: str | None = None
    head: str = "single_label"  # the explained output in use (core.heads), override applied


def autocast_choices() -> tuple[str, ...]:
    """The autocast types this machine's device takes: bfloat16, and float16 on a GPU."""
    return ("bfloat16", "float16") if best_device().type == "cuda" else ("bfloat16",)


def model_choices() -> list[ModelChoice]:
    """Bundled classifiers that are present, then the catalog's hub classifiers."""
    present = set(models.bundled_names())
    entries = [e for e in catalog.classifiers("bundled") if e.name in present]
    known = {e.name for e in catalog.CATALOG}
    choices = [ModelChoice(e.name, f"{e.name} (bundled)", e.description) for e in entries]
    choices += [ModelChoice(name, f"{name} (bundled)") for name in sorted(present - known) if _is_classifier(name)]
    choices += [ModelChoice(e.name, f"{e.name} (hub)", e.description) for e in catalog.classifiers("hub")]
    policy = access.policy()
    if policy.shared:  # only the allow-list, in its order after the bundled models
        listed = {c.name for c in choices}
        extra = [ModelChoice(name, f"{name} (offered here)") for name in policy.allowed_models if name not in listed]
        choices = [c for c in choices if c.name in policy.allowed_models] + extra
    return choices


def _is_classifier(name: str) -> bool:
    return models.model_info(name).get("architecture") == "sequence-classification"


def model_task(name: str) -> str | None:
    """The catalog task of a model (``sst2``, ``esnli`` ...), None for models outside the
    catalog."""
    entry = catalog.find(name)
    return entry.task if entry else None


def default_model() -> str:
    names = [c.name for c in model_choices()]
    return DEFAULT_MODEL if DEFAULT_MODEL in names else names[0]


@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def _loaded_classifier(name: str) -> LoadedClassifier:
    return load_classifier(name)


RANDOMIZED_PREFIX = "randomized:"


def randomized_name(name: str) -> str:
    """The name under which ``loaded`` gives the fully randomized copy of model ``name``."""
    return f"{RANDOMIZED_PREFIX}{name.strip()}"


@st.cache_resource(show_spinner="Randomizing the model's weights…", max_entries=2)
def _randomized_classifier(name: str, _base: LoadedClassifier) -> LoadedClassifier:
    return randomization.randomized_model(_base, seed=0)


def loaded(name: str) -> LoadedClassifier:
    """The shared classifier ``name``; ``randomized:<name>`` is a copy of it with every weight
    re-initialised (seed 0), as the sanity checks' last cascading step."""
    name = split_ref(name)[0].strip()
    if name.startswith(RANDOMIZED_PREFIX):
        base = name.removeprefix(RANDOMIZED_PREFIX).strip()
        return _randomized_classifier(base, loaded(base))
    if not name:
        raise ValueError("no model given: pick a bundled model or type a hub id or a local folder")
    access.check_model(name)
    try:
        return _loaded_classifier(name)
    except _LOAD_ERRORS as error:
        raise ValueError(load_error_message(name, error)) from error


_SEGMENT = r"\.?[\w+-]+(?:\.[\w+-]+)*"
_PATH = re.compile(rf"(?<![\w.:/])/(?:{_SEGMENT}/)*{_SEGMENT}")  # an absolute path, not a URL


def load_error_message(name: str, error: Exception) -> str:
    """One line naming what the user typed: the engine's own "cannot load ..." message is kept as
    it is (not wrapped twice), other errors are prefixed once, and host paths other than the typed
    name are hidden."""
    message = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
    prefix = f"cannot load {name!r} as a sequence classifier: "
    while message.startswith(prefix + prefix):
        message = message[len(prefix) :]
    if not message.startswith(f"cannot load {name!r}"):
        message = prefix + message
    return _hide_paths(message, name)


def _hide_paths(message: str, name: str) -> str:
    """``message`` with every absolute path hidden, except one within the typed ``name`` itself
    (``~/models/m`` or ``<b>x</b>`` is shown as typed)."""
    spans = [(m.start(), m.end()) for m in re.finditer(re.escape(name), message)] if name else []

    def hidden(match: re.Match[str]) -> str:
        inside = any(start <= match.start() and match.end() <= end for start, end in spans)
        return match.group(0) if inside else "<path>"

    return " ".join(_PATH.sub(hidden, message).split())


def label_names(name: str) -> tuple[str, ...]:
    """The label names of model ``name``, from its config where it can be read without the weights
    (a comparison refuses another label set before a 37 s load), else from the loaded model."""
    base = split_ref(name)[0].strip().removeprefix(RANDOMIZED_PREFIX).strip()
    access.check_model(base)
    return _config_label_names(base) or loaded(name).label_names


@st.cache_data(show_spinner=False, max_entries=32)
def _config_label_names(base: str) -> tuple[str, ...] | None:
    """``core.models.config_label_names``, read once per model: the second model's picker asks on
    every run of the page (a hub id's config would be fetched each time)."""
    return models.config_label_names(base)


def model_info(name: str) -> ModelInfo:
    """Label names, pair input and maximum length of a model (loading it if needed)."""
    base = split_ref(name)[0]
    found = loaded(base)
    head = classifier(name).head.kind
    return ModelInfo(found.name, found.label_names, found.pair, found.max_length, model_task(base), head)


def classifier(name: str, batch_size: int = 64) -> Classifier:
    """A fresh per-request view (own pass counters) on the shared, cached model, explaining the
    head the reference names (``model_ref``) or the one its config gives, and scoring
    perturbations under the autocast it names (float32 when none)."""
    base, head_type = split_ref(name)
    return Classifier(loaded(base), batch_size=batch_size, head_type=head_type, **autocast_options(ref_autocast(name)))


@st.cache_resource(show_spinner="Loading the masked language model…", max_entries=2)
def _loaded_masked_lm(name: str) -> MaskedLM:
    return MaskedLM.load(name)


def mlm_choices() -> list[str]:
    """Bundled masked LMs that are present (the default first), then the catalog's hub ones."""
    present = set(models.bundled_names())
    bundled = [e.name for e in catalog.masked_lms("bundled") if e.name in present]
    choices = bundled + [e.name for e in catalog.masked_lms("hub")]
    policy = access.policy()
    return [name for name in choices if name in policy.allowed_models] if policy.shared else choices


def masked_lm(name: str = DEFAULT_MLM) -> MaskedLM:
    access.check_model(name)
    try:
        return _loaded_masked_lm(name)
    except _LOAD_ERRORS as error:
        raise ValueError(_hide_paths(f"cannot load the masked language model {name!r}: {error}", name)) from error
