"""High-level engine calls shared by the command line and the app's service layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import explainers
from core.classifier import Classifier
from core.masked_lm import MaskedLM
from core.types import Attribution, Example, ProgressFn
from engine.resources import Resources


@dataclass(frozen=True)
class Prediction:
    """The explained output of every label (``core.heads``: probabilities, or a regression head's
    scores), the default target (the most probable label; a regression head's score) and the head type."""

    probabilities: tuple[float, ...]
    predicted: int
    head: str = "single_label"


@dataclass
class Explanation:
    """Every requested method's attribution for one example, with the prediction."""

    example: Example
    prediction: Prediction
    target: int
    attributions: dict[str, Attribution]
    dropped_words: int = 0
    errors: dict[str, str] = field(default_factory=dict)


def predict(clf: Classifier, example: Example) -> Prediction:
    probs = clf.predict_proba([clf.encode(example).variant])[0]
    return Prediction(tuple(float(p) for p in probs), clf.head.predicted(probs), clf.head.kind)


def explain_example(
    clf: Classifier,
    example: Example,
    methods: list[str],
    *,
    target: int | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    seed: int | None = None,
    mlm: MaskedLM | None = None,
    progress: ProgressFn | None = None,
    resources: Resources | None = None,
) -> Explanation:
    """Fit the example to the model, predict, and run each method on the target class
    (the predicted class when ``target`` is None). ``seed`` sets every stochastic method's seed.
    A method that refuses the example or its parameters (``ValueError``) is recorded in
    ``errors`` and the other methods still run. ``resources`` (engine/resources.py) hold the
    pre-trained models of the methods that train (AML); the caller owns and reuses them."""
    if target is not None and not 0 <= target < clf.num_labels:
        raise ValueError(f"target {target} is not a class of {clf.name} (0..{clf.num_labels - 1})")
    example, dropped = clf.fit_example(example)
    prediction = predict(clf, example)
    target = prediction.predicted if target is None else target
    specs = {key: explainers.get(key) for key in methods}
    method_params = {}  # built first, so a bad parameter stops the run before any work
    for key, spec in specs.items():
        overrides = dict((params or {}).get(key, {}))
        if seed is not None and spec.stochastic:
            overrides.setdefault("seed", seed)
        method_params[key] = spec.make_params(overrides)
    results: dict[str, Attribution] = {}
    errors: dict[str, str] = {}
    for index, (key, spec) in enumerate(specs.items()):

        def step(fraction: float, message: str, index: int = index, key: str = key) -> None:
            if progress is not None:
                progress((index + fraction) / len(methods), f"{key}: {message}")

        try:
            results[key] = explainers.run_explainer(
                spec, clf, example, target, method_params[key], mlm=mlm, progress=step, resources=resources
            )
        except ValueError as error:
            errors[key] = str(error)
        if progress is not None:
            progress((index + 1) / len(methods), f"{key} done")
    return Explanation(example, prediction, target, results, dropped, errors)
