"""Model-parameter randomisation: does an explanation change when the model's weights are destroyed?

After Adebayo et al. (2018), as the thesis (seed 002, section 2.7) applies it to transformers:

* **cascading**: re-initialise the classifier head, then the top encoder block, then the next,
  down to the embeddings, and explain again after each step (the x-axis of the thesis's plots
  runs "original, head, block L, ..., block 1, embeddings");
* **independent**: re-initialise one component at a time, every other weight kept.

A block is a whole transformer layer (self-attention and the MLP after it), as in the thesis. The
similarity of each step's explanation to the original one is Spearman's rho of the signed and of
the absolute scores and the top-k overlap; paper 000 (Table A5) adds, for the classifier-head
reset, the share of words whose score changes sign and the mean absolute change. They are
reported for every step.

Weights are re-initialised with the model's own initializer (``PreTrainedModel._init_weights``)
on CPU under a forked, seeded generator, so a seed gives the same random weights on every device
and in both modes (component ``i`` always draws from the seed ``(seed, i)``). Every step works on
a deep copy: the shared model is never touched.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

import explainers
from core.classifier import Classifier, LoadedClassifier, ProgressFn
from core.masked_lm import MaskedLM
from core.types import Attribution, Example
from metrics import agreement
from metrics.base import mean_interval

MODES = ("cascading", "independent")
ORIGINAL = "original"
HEAD = "head"
EMBEDDINGS = "embeddings"
MEASURES = ("spearman", "spearman_abs", "topk_overlap", "sign_change", "mean_abs_change")
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
        raise ValueError(f"unknown component(s) {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    if not names:
        raise ValueError("select at least one component to randomise")
    return tuple(c for c in every if c.name in set(names))


def plan(model: nn.Module, mode: str, names: Sequence[str] | None = None) -> tuple[Step, ...]:
    """The steps of a run: ``original`` first, then one per component (cumulative when cascading)."""
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
def reinitialize(model: nn.Module, component: Component, seed: int) -> None:
    """Re-initialise a component of ``model`` IN PLACE with the model's own initializer, on CPU
    under a forked generator seeded with ``seed``. Only ever call this on a copy."""
    init_weights = getattr(model, "_init_weights", None)
    if init_weights is None:
        raise ValueError(f"{type(model).__name__} has no _init_weights initializer")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for path in component.modules:
            module = model.get_submodule(path)
            device = next(module.parameters()).device
            module.cpu()
            for sub in module.modules():
                _clear_init_flags(sub)
                init_weights(sub)
            module.to(device)


def step_classifier(clf: Classifier, model: nn.Module, label: str) -> Classifier:
    """A ``Classifier`` on a (randomised) copy of ``clf``'s model, with the same tokenizer and batching."""
    loaded = clf.loaded
    copy_loaded = LoadedClassifier(f"{loaded.name} [{label}]", model, loaded.tokenizer, loaded.device, pair=loaded.pair)
    return Classifier(copy_loaded, batch_size=clf.batch_size, autocast=clf.autocast, head_type=clf.head_type)


def randomized_copy(model: nn.Module, names: Sequence[str], seed: int) -> nn.Module:
    """A deep copy of ``model`` with the named components re-initialised (none: an exact copy)."""
    positions = {c.name: (i, c) for i, c in enumerate(model_components(model))}
    unknown = [n for n in names if n not in positions]
    if unknown:
        raise ValueError(f"unknown component(s) {', '.join(map(repr, unknown))}; known: {', '.join(positions)}")
    copied = copy.deepcopy(model)
    for name in names:
        index, part = positions[name]
        reinitialize(copied, part, component_seed(seed, index))
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


# ---------------------------------------------------------------------------------- similarity


@dataclass(frozen=True)
class Similarity:
    """How close a step's scores are to the original ones (see ``MEASURES``)."""

    spearman: float
    spearman_abs: float
    topk_overlap: float
    sign_change: float
    mean_abs_change: float


def similarity(original, scores, top_k_fraction: float = 0.2) -> Similarity:
    """Compare a step's word scores with the original ones; top-k uses the highest signed scores,
    ``k = top_k_fraction`` of the words rounded, at least 1."""
    original = np.asarray(original, dtype=np.float64)
    if len(original) == 0:
        raise ValueError("cannot compare attributions over zero words")
    k = agreement.top_k_size(len(original), top_k_fraction)
    return Similarity(
        spearman=agreement.spearman(original, scores),
        spearman_abs=agreement.spearman_abs(original, scores),
        topk_overlap=agreement.top_k_overlap(original, scores, k),
        sign_change=agreement.sign_change(original, scores),
        mean_abs_change=agreement.mean_abs_change(original, scores),
    )


# ---------------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class ExampleRandomization:
    """One example's attributions and similarities, one dict (method -> value) per step."""

    example: Example
    target: int
    attributions: tuple[dict[str, Attribution], ...]
    similarities: tuple[dict[str, Similarity], ...]


Interval = tuple[float, float, float, int]  # mean, low, high, n


@dataclass(frozen=True)
class RandomizationResult:
    mode: str
    seed: int
    methods: tuple[str, ...]
    steps: tuple[Step, ...]
    examples: tuple[ExampleRandomization, ...]
    top_k_fraction: float
    runtime_s: float
    forward_passes: int
    backward_passes: int

    def summary(self) -> list[dict[str, dict[str, Interval]]]:
        """Per step, per method, per measure: mean over examples with its 95% interval and n."""
        return [
            {
                method: {
                    measure: mean_interval([getattr(e.similarities[s][method], measure) for e in self.examples])
                    for measure in MEASURES
                }
                for method in self.methods
            }
            for s in range(len(self.steps))
        ]

    def to_json(self) -> dict[str, Any]:
        """Per step and method, each measure's mean over the examples (NaN as None), its 95%
        interval as ``<measure>_ci`` when there are several examples, and ``n`` (examples where
        the correlation is defined)."""
        steps = []
        for step, per_method in zip(self.steps, self.summary()):
            methods = {}
            for method, measures in per_method.items():
                entry: dict[str, Any] = {}
                for measure, (mean, low, high, _) in measures.items():
                    entry[measure] = _finite(mean)
                    if len(self.examples) > 1:
                        entry[f"{measure}_ci"] = [_finite(low), _finite(high)]
                entry["n"] = measures["spearman"][3]
                methods[method] = entry
            steps.append({"name": step.name, "randomized": list(step.randomized), "methods": methods})
        return {
            "mode": self.mode,
            "seed": self.seed,
            "methods": list(self.methods),
            "top_k_fraction": self.top_k_fraction,
            "n_examples": len(self.examples),
            "runtime_s": self.runtime_s,
            "forward_passes": self.forward_passes,
            "backward_passes": self.backward_passes,
            "steps": steps,
        }


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _explain_all(
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int],
    methods: Sequence[str],
    params: dict[str, dict[str, Any]],
    seed: int,
    mlm: MaskedLM | None,
    tick,
    resources: Any = None,
) -> list[dict[str, Attribution]]:
    out = []
    for example, target in zip(examples, targets):
        row = {}
        for key in methods:
            spec = explainers.get(key)
            overrides = dict(params.get(key, {}))
            if spec.stochastic:
                overrides.setdefault("seed", seed)
            row[key] = explainers.run_explainer(
                spec, clf, example, target, spec.make_params(overrides), mlm=mlm, resources=resources
            )
            tick(f"{key} on example {len(out) + 1}/{len(examples)}")
        out.append(row)
    return out


def run_randomization(
    clf: Classifier,
    examples: Sequence[Example],
    methods: Sequence[str],
    *,
    mode: str = "cascading",
    seed: int = 0,
    components: Sequence[str] | None = None,
    targets: Sequence[int] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    top_k_fraction: float = 0.2,
    mlm: MaskedLM | None = None,
    progress: ProgressFn | None = None,
    resources: Any = None,
) -> RandomizationResult:
    """Explain every example with every method on the original model and after each
    randomisation step, and compare each step's scores with the original ones.

    ``targets`` default to the original model's predicted classes and stay fixed across steps;
    ``seed`` sets the random weights and every stochastic method's seed; ``components`` selects
    a subset (all by default), always applied top-down.
    """
    if not examples:
        raise ValueError("give at least one example")
    methods = tuple(explainers.resolve(list(methods)))
    if not methods:
        raise ValueError("give at least one method")
    steps = plan(clf.model, mode, components)
    params = params or {}
    start = time.perf_counter()
    forward0, backward0 = clf.forward_passes, clf.backward_passes
    fitted = [clf.fit_example(e)[0] for e in examples]
    if targets is None:
        probabilities = clf.predict_proba([clf.encode(e).variant for e in fitted])
        targets = [clf.head.predicted(p) for p in probabilities]
    elif len(targets) != len(fitted):
        raise ValueError(f"{len(targets)} targets for {len(fitted)} examples")
    total = len(steps) * len(fitted) * len(methods)
    done = 0
    passes = [0, 0]
    per_step: list[list[dict[str, Attribution]]] = []
    positions = {c.name: (i, c) for i, c in enumerate(model_components(clf.model))}
    working: nn.Module | None = None  # the cascading copy, randomised a little more at each step
    for step in steps:

        def tick(message: str, name: str = step.name) -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(done / total, f"{name}: {message}")

        if step.name == ORIGINAL:
            per_step.append(_explain_all(clf, fitted, targets, methods, params, seed, mlm, tick, resources))
            continue
        if mode == "cascading":
            working = copy.deepcopy(clf.model) if working is None else working
            position, part = positions[step.name]
            reinitialize(working, part, component_seed(seed, position))
            model = working
        else:
            model = randomized_copy(clf.model, step.randomized, seed)
        step_clf = step_classifier(clf, model, f"randomized: {', '.join(step.randomized)}")
        per_step.append(_explain_all(step_clf, fitted, targets, methods, params, seed, mlm, tick, resources))
        passes[0] += step_clf.forward_passes
        passes[1] += step_clf.backward_passes
    results = tuple(
        ExampleRandomization(
            example,
            target,
            tuple(step_rows[e] for step_rows in per_step),
            tuple(
                {m: similarity(per_step[0][e][m].scores, step_rows[e][m].scores, top_k_fraction) for m in methods}
                for step_rows in per_step
            ),
        )
        for e, (example, target) in enumerate(zip(fitted, targets))
    )
    return RandomizationResult(
        mode=mode,
        seed=seed,
        methods=methods,
        steps=steps,
        examples=results,
        top_k_fraction=top_k_fraction,
        runtime_s=time.perf_counter() - start,
        forward_passes=clf.forward_passes - forward0 + passes[0],
        backward_passes=clf.backward_passes - backward0 + passes[1],
    )
