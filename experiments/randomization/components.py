"""The components of a transformer classifier and their re-initialisation (Adebayo et al. 2018,
arXiv 1810.03292, as the thesis applies it): head, blocks top-down, embeddings; the
steps of a cascading or independent run; a deep copy with components re-drawn under a seeded
generator (``randomized_model``: every component, the model randomization test). The thesis
leaves the scheme open: ``init`` re-draws with the model's own initializer (the default),
``shuffle`` permutes the entries of each weight tensor (its values kept, their places lost).
The shared model is never touched. Definitions in ``experiments.randomization``."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from core.global_rng import seeded_globals
from core.loaded import LoadedClassifier

MODES = ("cascading", "independent")
SCHEMES = ("init", "shuffle")
ORIGINAL = "original"
HEAD = "head"
EMBEDDINGS = "embeddings"
# Where BERT-like base models keep their list of transformer blocks.
_BLOCK_PATHS = ("encoder.layer", "transformer.layer", "encoder.layers", "layers")


@dataclass(frozen=True)
class Component:
    """A unit that is re-initialised as a whole: its name and the module paths inside the model."""

    name: str
    modules: tuple[str, ...]


@dataclass(frozen=True)
class Step:
    """One point of a randomisation curve: the components re-initialised in its model."""

    name: str
    randomized: tuple[str, ...]


def _has_parameters(module: nn.Module) -> bool:
    return any(True for _ in module.parameters())


def _find_blocks(base: nn.Module) -> tuple[str, nn.ModuleList] | None:
    for path in _BLOCK_PATHS:
        try:
            blocks = base.get_submodule(path)
        except AttributeError:
            continue
        if isinstance(blocks, nn.ModuleList) and len(blocks):
            return path, blocks
    return None


def model_components(model: nn.Module) -> tuple[Component, ...]:
    """The components of a BERT-like classifier, top-down: head (classifier and pooler),
    ``block L`` ... ``block 1`` (1 is the lowest), embeddings. Raises ValueError for an
    architecture it cannot split, or when some parameter would belong to no component."""
    prefix = getattr(model, "base_model_prefix", "")
    base = getattr(model, "base_model", None)
    kind = type(model).__name__
    if not prefix or base is None or base is model:
        raise ValueError(f"cannot split {kind} into head, blocks and embeddings: it has no base model")
    found = _find_blocks(base)
    embeddings = getattr(base, "embeddings", None)
    if found is None or not isinstance(embeddings, nn.Module):
        raise ValueError(
            f"cannot split {kind} into head, blocks and embeddings: its base model has no "
            f"{' / '.join(_BLOCK_PATHS)} block list or no 'embeddings' module"
        )
    path, blocks = found
    head = [name for name, child in model.named_children() if name != prefix and _has_parameters(child)]
    pooler = getattr(base, "pooler", None)
    if isinstance(pooler, nn.Module) and _has_parameters(pooler):
        head.append(f"{prefix}.pooler")
    if not head:
        raise ValueError(f"cannot split {kind}: no classifier head outside its base model {prefix!r}")
    parts = (
        Component(HEAD, tuple(head)),
        *(Component(f"block {i + 1}", (f"{prefix}.{path}.{i}",)) for i in reversed(range(len(blocks)))),
        Component(EMBEDDINGS, (f"{prefix}.embeddings",)),
    )
    covered = tuple(f"{name}." for part in parts for name in part.modules)
    missed = [name for name, _ in model.named_parameters() if not name.startswith(covered)]
    if missed:
        raise ValueError(
            f"cannot split {kind}: parameters outside head, blocks and embeddings: {', '.join(missed[:5])}"
        )
    return parts


def select_components(model: nn.Module, names: Sequence[str] | None = None) -> tuple[Component, ...]:
    """The named components (all when ``names`` is None) in top-down order."""
    every = model_components(model)
    if names is None:
        return every
    known = {c.name for c in every}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"unknown component(s) {', '.join(map(repr, unknown))}; known (top down): {', '.join(c.name for c in every)}"
        )
    if not names:
        raise ValueError("select at least one component to randomise")
    return tuple(c for c in every if c.name in set(names))


def plan(model: nn.Module, mode: str, names: Sequence[str] | None = None) -> tuple[Step, ...]:
    """The steps of a run: ``original`` first, then one per component (cumulative when
    cascading)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {MODES}")
    selected = select_components(model, names)
    steps = [Step(ORIGINAL, ())]
    for index, part in enumerate(selected):
        randomized = tuple(c.name for c in selected[: index + 1]) if mode == "cascading" else (part.name,)
        steps.append(Step(part.name, randomized))
    return tuple(steps)


def component_seed(seed: int, index: int) -> int:
    """The seed component ``index`` (in top-down order) is re-initialised with."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def _clear_init_flags(module: nn.Module) -> None:
    """transformers skips tensors marked as loaded from a checkpoint; unmark the copy's."""
    for tensor in (*module.parameters(recurse=False), *module.buffers(recurse=False)):
        if hasattr(tensor, "_is_hf_initialized"):
            del tensor._is_hf_initialized
    if hasattr(module, "_is_hf_initialized"):
        del module._is_hf_initialized


@torch.no_grad()
def _shuffle(module: nn.Module, seed: int) -> None:
    """Permute the entries of each of ``module``'s parameter tensors under a generator seeded
    with ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    for parameter in module.parameters():
        flat = parameter.detach().flatten()
        order = torch.randperm(flat.numel(), generator=generator).to(flat.device)
        parameter.copy_(flat[order].view_as(parameter))


def check_scheme(scheme: str) -> None:
    """ValueError for a re-initialisation scheme that is not one of ``SCHEMES``."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme {scheme!r} is not one of {SCHEMES}")


@torch.no_grad()
def reinitialize(model: nn.Module, component: Component, seed: int, scheme: str = "init") -> None:
    """Re-initialise a component of ``model`` IN PLACE under ``seed``: with the model's own
    initializer on CPU under a forked generator (``init``), or by permuting each weight tensor
    (``shuffle``). Only ever call this on a copy."""
    check_scheme(scheme)
    if scheme == "shuffle":
        for path in component.modules:
            _shuffle(model.get_submodule(path), seed)
        return
    init_weights = getattr(model, "_init_weights", None)
    if init_weights is None:
        raise ValueError(f"{type(model).__name__} has no _init_weights initializer")
    with seeded_globals(seed):
        for path in component.modules:
            module = model.get_submodule(path)
            device = next(module.parameters()).device
            module.cpu()
            for sub in module.modules():
                _clear_init_flags(sub)
                init_weights(sub)
            module.to(device)


def randomized_copy(model: nn.Module, names: Sequence[str], seed: int, scheme: str = "init") -> nn.Module:
    """A deep copy of ``model`` with the named components re-initialised (none: an exact copy)."""
    positions = {c.name: (i, c) for i, c in enumerate(model_components(model))}
    unknown = [n for n in names if n not in positions]
    if unknown:
        raise ValueError(f"unknown component(s) {', '.join(map(repr, unknown))}; known: {', '.join(positions)}")
    copied = copy.deepcopy(model)
    for name in names:
        index, part = positions[name]
        reinitialize(copied, part, component_seed(seed, index), scheme)
    return copied


def randomized_model(loaded: LoadedClassifier, seed: int = 0) -> LoadedClassifier:
    """A copy of ``loaded`` with every component re-initialised (the last step of a cascading
    run: head, every block and the embeddings), sharing its tokenizer and device; the "model
    randomization test" of Adebayo et al. (2018, arXiv:1810.03292) compares a model's
    explanations with this copy's."""
    names = [c.name for c in model_components(loaded.model)]
    model = randomized_copy(loaded.model, names, seed)
    return LoadedClassifier(
        f"{loaded.name} [randomized, seed {seed}]", model, loaded.tokenizer, loaded.device, pair=loaded.pair
    )
