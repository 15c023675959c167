"""High-level engine calls shared by the command line and the app's service layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import explainers
from core.classifier import Classifier
from core.masked_lm import MaskedLM
from core.types import Attribution, Example, ProgressFn
from engine import windows as windowing
from engine.resources import Resources
from engine.windows import Windows


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
    windows: tuple[tuple[int, int], ...] = ()  # word ranges, when explained in sliding windows


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
    windows: Windows | None = None,
) -> Explanation:
    """Fit the example to the model, predict, and run each method on the target class
    (the predicted class when ``target`` is None). ``seed`` sets every stochastic method's seed.
    A method that refuses the example or its parameters (``ValueError``) is recorded in
    ``errors`` and the other methods still run. ``resources`` (engine/resources.py) hold the
    pre-trained models of the methods that train (AML); the caller owns and reuses them.
    With ``windows``, a single text longer than the model accepts is explained whole in sliding
    windows (engine/windows.py) instead of being cut."""
    if target is not None and not 0 <= target < clf.num_labels:
        raise ValueError(f"target {target} is not a class of {clf.name} (0..{clf.num_labels - 1})")
    fitted, dropped = clf.fit_example(example)
    if windows is not None and dropped and not example.is_pair:
        return _explain_in_windows(
            clf, example, methods, windows, target=target, params=params, seed=seed, mlm=mlm, progress=progress,
            resources=resources,
        )  # fmt: skip
    example = fitted
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


def predict_in_windows(clf: Classifier, example: Example, options: Windows) -> tuple[Prediction, list[tuple[int, int]]]:
    """The prediction of a text read in sliding windows (the mean of the windows' probabilities)
    and the windows' word ranges."""
    spans = windowing.plan(clf, example, options.overlap)
    parts = [windowing.window_example(example, span, i) for i, span in enumerate(spans)]
    probabilities = clf.predict_proba([clf.encode(part).variant for part in parts]).mean(axis=0)
    mean = tuple(float(p) for p in probabilities)
    return Prediction(mean, clf.head.predicted(probabilities), clf.head.kind), spans


def _explain_in_windows(
    clf: Classifier,
    example: Example,
    methods: list[str],
    options: Windows,
    *,
    target: int | None,
    progress: ProgressFn | None,
    **kwargs: Any,
) -> Explanation:
    """Explain every window with the same target and stitch the scores (engine/windows.py)."""
    refused = [key for key in methods if not explainers.get(key).windowable]
    if refused:
        raise ValueError(
            f"{', '.join(refused)} cannot be explained in sliding windows (each fits one model of the whole "
            "input); allowed: " + ", ".join(k for k, s in explainers.REGISTRY.items() if s.windowable)
        )
    prediction, spans = predict_in_windows(clf, example, options)
    parts = [windowing.window_example(example, span, i) for i, span in enumerate(spans)]
    target = prediction.predicted if target is None else target
    results = []
    for index, part in enumerate(parts):

        def step(fraction: float, message: str, index: int = index) -> None:
            if progress is not None:
                progress((index + fraction) / len(parts), f"window {index + 1} of {len(parts)}: {message}")

        results.append(explain_example(clf, part, methods, target=target, progress=step, **kwargs))
    errors = {key: message for result in results for key, message in result.errors.items()}
    attributions = {}
    for key in methods:
        if key in errors:
            continue
        pieces = [result.attributions[key] for result in results]
        scores = windowing.stitch([a.scores for a in pieces], spans, len(example.words), options.stitch)
        first = pieces[0]
        attributions[key] = Attribution(
            method=key,
            example_id=example.id,
            target=target,
            words=example.words,
            scores=scores,
            params=first.params,
            seed=first.seed,
            runtime_s=sum(a.runtime_s for a in pieces),
            forward_passes=sum(a.forward_passes for a in pieces),
            backward_passes=sum(a.backward_passes for a in pieces),
            extras={"windows": [list(span) for span in spans], "stitch": options.stitch, "overlap": options.overlap},
        )
    return Explanation(example, prediction, target, attributions, 0, errors, tuple(spans))
