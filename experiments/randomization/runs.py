"""A randomisation run (Adebayo et al. 2018, arXiv 1810.03292, as the thesis runs
it): every example explained by every method on the original model and after each step, each
step's scores compared with the original ones, and the result's summary with 95% intervals.
Definitions in ``experiments.randomization``."""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import nn

import explainers
from core.classifier import Classifier, ProgressFn
from core.loaded import LoadedClassifier
from core.masked_lm import MaskedLM
from core.types import Attribution, Example
from experiments.randomization.components import (
    ORIGINAL,
    Step,
    check_scheme,
    component_seed,
    model_components,
    plan,
    randomized_copy,
    reinitialize,
)
from experiments.randomization.similarity import MEASURE_BOUNDS, MEASURES, Similarity, pooled_correlation, similarity
from metrics import agreement
from metrics.base import mean_interval


def step_classifier(clf: Classifier, model: nn.Module, label: str) -> Classifier:
    """A ``Classifier`` on a (randomised) copy of ``clf``'s model, with the same tokenizer and
    batching."""
    loaded = clf.loaded
    copy_loaded = LoadedClassifier(f"{loaded.name} [{label}]", model, loaded.tokenizer, loaded.device, pair=loaded.pair)
    return Classifier(
        copy_loaded,
        batch_size=clf.batch_size,
        autocast=clf.autocast,
        autocast_dtype=clf.autocast_dtype,
        head_type=clf.head_type,
    )


@dataclass(frozen=True)
class ExampleRandomization:
    """One example's attributions and similarities, one dict (method -> value) per step."""

    example: Example
    target: int
    attributions: tuple[dict[str, Attribution], ...]
    similarities: tuple[dict[str, Similarity], ...]


Interval = tuple[float, float, float, int]  # mean, low, high, n
# The measures ``summary(pooled=True)`` computes over every word of every example.
POOLED = ("spearman", "spearman_abs")


@dataclass(frozen=True)
class RandomizationResult:
    mode: str
    seed: int
    scheme: str
    methods: tuple[str, ...]
    steps: tuple[Step, ...]
    examples: tuple[ExampleRandomization, ...]
    top_k_fraction: float
    runtime_s: float
    forward_passes: int
    backward_passes: int

    def summary(self, pooled: bool = False) -> list[dict[str, dict[str, Interval]]]:
        """Per step, per method, per measure: mean over examples with its 95% interval and n;
        ``pooled``: the rank correlations as one over every word of every example instead
        (``similarity.pooled_correlation``; n counts words)."""

        def value(s: int, method: str, measure: str) -> Interval:
            if pooled and measure in POOLED:
                return self._pooled(s, method, measure)
            values = [getattr(e.similarities[s][method], measure) for e in self.examples]
            return mean_interval(values, bounds=MEASURE_BOUNDS[measure])

        return [
            {method: {measure: value(s, method, measure) for measure in MEASURES} for method in self.methods}
            for s in range(len(self.steps))
        ]

    def _pooled(self, s: int, method: str, measure: str) -> Interval:
        """A rank correlation (one of ``POOLED``) of step ``s`` over every word of every example."""
        original = [e.attributions[0][method].scores for e in self.examples]
        randomized = [e.attributions[s][method].scores for e in self.examples]
        return pooled_correlation(original, randomized, absolute=measure == "spearman_abs")

    def to_json(self) -> dict[str, Any]:
        """Per step and method, each measure's mean over the examples (NaN as None), its 95%
        interval as ``<measure>_ci`` when there are several examples, and ``n`` (examples where
        the correlation is defined); with several examples also ``pooled``: the rank
        correlations over every word of every example, their intervals and ``n_words``."""
        several = len(self.examples) > 1
        steps = []
        for s, (step, per_method) in enumerate(zip(self.steps, self.summary())):
            methods = {}
            for method, measures in per_method.items():
                entry: dict[str, Any] = {}
                for measure, (mean, low, high, _) in measures.items():
                    entry[measure] = _finite(mean)
                    if several:
                        entry[f"{measure}_ci"] = [_finite(low), _finite(high)]
                entry["n"] = measures["spearman"][3]
                if several:
                    over_words = {m: self._pooled(s, method, m) for m in POOLED}
                    entry["pooled"] = {
                        **{m: _finite(over_words[m][0]) for m in POOLED},
                        **{f"{m}_ci": [_finite(over_words[m][1]), _finite(over_words[m][2])] for m in POOLED},
                        "n_words": over_words["spearman"][3],
                    }
                methods[method] = entry
            steps.append({"name": step.name, "randomized": list(step.randomized), "methods": methods})
        return {
            "mode": self.mode,
            "seed": self.seed,
            "scheme": self.scheme,
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
    scheme: str = "init",
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
    ``seed`` sets the random weights and every stochastic method's seed, ``scheme`` how they are
    re-drawn (``components.SCHEMES``); ``components`` selects a subset (all by default), always
    applied top-down.
    """
    if not examples:
        raise ValueError("give at least one example")
    agreement.top_k_size(1, top_k_fraction)  # a fraction out of (0, 1] is refused before any step
    methods = tuple(explainers.resolve(list(methods)))
    if not methods:
        raise ValueError("give at least one method")
    check_scheme(scheme)
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
            reinitialize(working, part, component_seed(seed, position), scheme)
            model = working
        else:
            model = randomized_copy(clf.model, step.randomized, seed, scheme)
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
        scheme=scheme,
        methods=methods,
        steps=steps,
        examples=results,
        top_k_fraction=top_k_fraction,
        runtime_s=time.perf_counter() - start,
        forward_passes=clf.forward_passes - forward0 + passes[0],
        backward_passes=clf.backward_passes - backward0 + passes[1],
    )
