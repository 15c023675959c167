"""Layer randomization and attacks on explanations, cached per request."""

from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

import explainers
from core.progress import with_eta
from core.types import Example, ProgressFn
from experiments import attacks as _adversarial
from experiments import randomization as _randomization
from services import models, store
from services.resources import resources

# =========================================================================== sanity checks
# Section owned by the layer-randomisation sanity checks (app_pages/sanity_checks.py): whole runs
# cached per model, examples, methods (with their parameters), mode, seed, targets and top-k.


POOLED = _randomization.runs.POOLED  # the measures the page may pool over every word


def randomization_steps(model: str, mode: str) -> list[str]:
    """Step names of a run on ``model`` (``original`` first); ValueError for an architecture
    that cannot be split into head, blocks and embeddings."""
    return [step.name for step in _randomization.plan(models.loaded(model).model, mode)]


@st.cache_resource
def _randomization_cache() -> store.ResultStore:
    """Finished runs shared by every session (not ``st.cache_data``: see ``store.ResultStore``)."""
    return store.ResultStore(max_entries=32)


def randomize(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    *,
    mode: str,
    seed: int,
    scheme: str = "init",
    components: list[str] | None = None,
    targets: list[int] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    top_k_fraction: float = 0.2,
    mlm_name: str = models.DEFAULT_MLM,
    progress: ProgressFn | None = None,
) -> _randomization.RandomizationResult:
    """Cascading or independent randomisation of ``model`` (a deep copy per run: the cached
    model is never touched) under ``scheme``, of the named ``components`` (all by default),
    every method on every example after each step; cached."""
    params = {key: dict((params or {}).get(key, {})) for key in method_keys}
    needs_mlm = any(explainers.get(key).needs_mlm for key in method_keys)
    key = (
        model,
        store.examples_key(examples),
        tuple(method_keys),
        mode,
        seed,
        scheme,
        None if components is None else tuple(components),
        None if targets is None else tuple(targets),
        store.params_key(params),
        top_k_fraction,
        mlm_name if needs_mlm else None,
    )
    cache = _randomization_cache()
    cached = cache.get(key)
    if cached is not None:
        return cached
    clf = models.classifier(model)
    mlm = models.masked_lm(mlm_name) if needs_mlm else None
    result = _randomization.run_randomization(
        clf,
        examples,
        method_keys,
        mode=mode,
        seed=seed,
        scheme=scheme,
        components=components,
        targets=targets,
        params=params,
        top_k_fraction=top_k_fraction,
        resources=resources(),
        mlm=mlm,
        progress=progress,
    )
    cache.put(key, result)
    return result


# =========================================================================== adversarial
# Section owned by the attacks on explanations (app_pages/adversarial.py): each example's attack
# cached per model, example, methods (with their parameters), attack and attack parameters.


@st.cache_resource
def _attack_cache() -> store.ResultStore:
    """Finished attacks shared by every session (not ``st.cache_data``: see
    ``store.ResultStore``)."""
    return store.ResultStore(max_entries=256)


def attack(
    model: str,
    examples: list[Example],
    method_keys: list[str],
    *,
    attack: str,
    attack_params: dict[str, Any],
    preset: str = "quick",
    params: dict[str, dict[str, Any]] | None = None,
    mlm_name: str = models.DEFAULT_MLM,
    progress: ProgressFn | None = None,
) -> list[dict[str, _adversarial.AttackResult]]:
    """Attack every method's explanation of every example (the predicted class); one cache entry
    per example, so a longer slice reuses the examples already attacked. Progress messages end
    with the time left (``core.progress.with_eta``)."""
    progress = with_eta(progress)
    params = {key: dict((params or {}).get(key, {})) for key in method_keys}
    chosen = _adversarial.make_params(attack, preset, attack_params)
    needs_mlm = attack == "substitution" or any(explainers.get(key).needs_mlm for key in method_keys)
    cache = _attack_cache()
    results = []
    for index, example in enumerate(examples):
        key = (
            model,
            store.example_key(example),
            tuple(method_keys),
            attack,
            store.params_key(dataclasses.asdict(chosen)),
            store.params_key(params),
            mlm_name if needs_mlm else None,
        )
        cached = cache.get(key)
        if cached is None:

            def step(fraction: float, message: str, index: int = index) -> None:
                if progress is not None:
                    progress(
                        min(1.0, (index + fraction) / len(examples)),
                        f"example {index + 1} of {len(examples)}, {message}",
                    )

            cached = _adversarial.attack_example(
                models.classifier(model),
                example,
                method_keys,
                attack,
                chosen,
                mlm=models.masked_lm(mlm_name) if needs_mlm else None,
                explainer_params=params,
                resources=resources(),
                progress=step,
            )
            cache.put(key, cached)
        results.append(cached)
    if progress is not None:
        progress(1.0, "done")
    return results


def attack_summary(results: list[dict[str, _adversarial.AttackResult]]) -> dict[str, dict[str, Any]]:
    """Mean measures per method over the examples, with the fragility ranking."""
    return _adversarial.summarize(results)
