"""High-level engine calls shared by the command line and the app's service layer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import explainers
from core.classifier import Classifier
from core.heads import Head
from core.masked_lm import MaskedLM
from core.types import DEFAULT_THRESHOLD, Attribution, Example, ProgressFn
from engine import windows as windowing
from engine.resources import Resources
from engine.windows import Windows


@dataclass(frozen=True)
class Prediction:
    """The explained output of every label (``core.heads``: probabilities, or a regression head's
    scores), the default target (the most probable label; a regression head's score) and the head
    type."""

    probabilities: tuple[float, ...]
    predicted: int
    head: str = "single_label"

    def text(self, target: int, label_names: Sequence[str], name: Callable[[str], str] = repr) -> str:
        """What the model predicts and what is explained, as the head defines them: a regression
        head's score, a multi-label head's labels at or above ``DEFAULT_THRESHOLD``, or the
        predicted label, each with its probability, and the explained label; each label's name (its
        index where the model names fewer) as ``name`` writes it."""

        def label(index: int) -> str:
            return name(label_names[index] if index < len(label_names) else str(index))

        if self.head == "regression":
            return f"score {label(target)} = {self.probabilities[target]:.4f}"
        predicted = self.predicted
        if self.head == "multi_label":  # the labels at or above the threshold, not the likeliest one
            chosen = Head(self.head, ()).label_set(np.asarray(self.probabilities))
            found = ", ".join(f"{label(i)} (p = {self.probabilities[i]:.3f})" for i in chosen) or (
                f"no label at p ≥ {DEFAULT_THRESHOLD} (likeliest {label(predicted)}, p = {self.probabilities[predicted]:.3f})"
            )
            return f"predicted {found}; explaining {label(target)}"
        return f"predicted {label(predicted)} (p = {self.probabilities[predicted]:.3f}); explaining {label(target)}"


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
    forward_passes: int = 0  # spent on this example: its prediction, its methods, their refused attempts


@dataclass(frozen=True)
class Refused:
    """A method's refusal of one example (its ``ValueError``) and the passes the attempt spent."""

    message: str
    forward_passes: int


def predict(clf: Classifier, example: Example) -> Prediction:
    return predict_many(clf, [example])[0]


def predict_many(clf: Classifier, examples: Sequence[Example]) -> list[Prediction]:
    """Every example's prediction from one scorer call."""
    outputs = clf.predict_proba_groups([[clf.encode(example).variant] for example in examples])
    return [Prediction(tuple(float(p) for p in out[0]), clf.head.predicted(out[0]), clf.head.kind) for out in outputs]


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
    (the predicted class when ``target`` is None): ``explain_examples`` on one example.
    With ``windows``, a single text longer than the model accepts is explained whole in sliding
    windows (engine/windows.py) instead of being cut."""
    if target is not None and not 0 <= target < clf.num_labels:
        raise ValueError(f"target {target} is not a class of {clf.name} (0..{clf.num_labels - 1})")
    if windows is not None and not example.is_pair and clf.fit_example(example)[1]:
        return _explain_in_windows(
            clf, example, methods, windows, target=target, params=params, seed=seed, mlm=mlm, progress=progress,
            resources=resources,
        )  # fmt: skip
    explained = explain_examples(
        clf, [example], methods, targets=[target], params=params, seed=seed, mlm=mlm, progress=progress,
        resources=resources,
    )  # fmt: skip
    return explained[0]


def explain_examples(
    clf: Classifier,
    examples: Sequence[Example],
    methods: list[str],
    *,
    targets: Sequence[int | None] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    seed: int | None = None,
    mlm: MaskedLM | None = None,
    progress: ProgressFn | None = None,
    resources: Resources | None = None,
) -> list[Explanation]:
    """Fit each example to the model, predict them all in one scorer call (or, when a requested
    method ``predicts``, from that method's own pass, which then runs first), and run each method
    on each example's target class (its predicted class where the target is None). ``seed`` sets
    every stochastic method's seed. A method with a batch function explains the examples together
    (one padded forward/backward, or one pooled scorer call: ``explainers.run_explainers``), any
    other one by one; the results equal one-by-one runs. A method that refuses an example or its
    parameters (``ValueError``) is recorded in that example's ``errors`` and the other methods
    and examples still run. ``resources`` (engine/resources.py) hold the pre-trained models of
    the methods that train (AML); the caller owns and reuses them."""
    targets = list(targets) if targets is not None else [None] * len(examples)
    for target in targets:
        if target is not None and not 0 <= target < clf.num_labels:
            raise ValueError(f"target {target} is not a class of {clf.name} (0..{clf.num_labels - 1})")
    fitted = [clf.fit_example(example) for example in examples]
    cut = [example for example, _ in fitted]
    specs = {key: explainers.get(key) for key in methods}
    method_params = {}  # built first, so a bad parameter stops the run before any work
    for key, spec in specs.items():
        overrides = dict((params or {}).get(key, {}))
        if seed is not None and spec.stochastic:
            overrides.setdefault("seed", seed)
        method_params[key] = spec.make_params(overrides)
    # A method that predicts (saliency, gradient x input) reads the predictions off its own
    # forward pass, so it runs first and the request spends no prediction pass of its own.
    first = next((key for key, spec in specs.items() if spec.predicts), None)
    order = [key for key in specs if key == first] + [key for key in specs if key != first]
    predictions = predict_many(clf, cut) if first is None else []
    spent = [1 if first is None else 0] * len(examples)
    results: list[dict[str, Attribution]] = [{} for _ in examples]
    errors: list[dict[str, str]] = [{} for _ in examples]
    # Inside one request, saliency and gradient x input share their gradient pass and the two
    # attention methods their attention pass (``Classifier.sharing_passes``).
    with clf.sharing_passes():
        for index, key in enumerate(order):
            spec = specs[key]
            chosen = [predictions[i].predicted if t is None and predictions else t for i, t in enumerate(targets)]

            reached = [0.0]  # a batch refused and run again one by one does not take the bar back

            def step(fraction: float, message: str, index: int = index, key: str = key, reached=reached) -> None:
                reached[0] = max(reached[0], fraction)
                if progress is not None:
                    progress((index + reached[0]) / len(order), f"{key}: {message}")

            def run(positions: list[int], part: ProgressFn, spec=spec, key=key, chosen=chosen) -> list[Attribution]:
                return explainers.run_explainers(
                    spec, clf, [cut[i] for i in positions], [chosen[i] for i in positions], method_params[key],
                    mlm=mlm, progress=part, resources=resources,
                )  # fmt: skip

            together = spec.explain_batch is not None
            for position, outcome in enumerate(_each_or_alone(clf, run, len(examples), together, step)):
                spent[position] += outcome.forward_passes
                if isinstance(outcome, Refused):
                    errors[position][key] = outcome.message
                else:
                    results[position][key] = outcome
            if key == first:
                predictions = _read_predictions(clf, cut, [r.get(key) for r in results], spent)
            if progress is not None:
                progress((index + 1) / len(order), f"{key} done")
    explained = [p.predicted if t is None else t for p, t in zip(predictions, targets, strict=True)]
    return [
        Explanation(
            example, prediction, target, {k: found[k] for k in methods if k in found}, dropped, failed, (), passes
        )
        for example, (_, dropped), prediction, target, found, failed, passes in zip(
            cut, fitted, predictions, explained, results, errors, spent, strict=True
        )
    ]


def _read_predictions(
    clf: Classifier, examples: Sequence[Example], attributions: Sequence[Attribution | None], spent: list[int]
) -> list[Prediction]:
    """Every example's prediction from its attribution by a method that ``predicts`` (the outputs
    of its own forward pass); an example that method refused gets a prediction pass of its own,
    charged to it in ``spent``."""
    predictions: dict[int, Prediction] = {}
    for i, attribution in enumerate(attributions):
        if attribution is not None:
            outputs = tuple(float(p) for p in attribution.extras["outputs"])
            predictions[i] = Prediction(outputs, clf.head.predicted(np.asarray(outputs)), clf.head.kind)
    missing = [i for i in range(len(examples)) if i not in predictions]
    for i, prediction in zip(
        missing, predict_many(clf, [examples[i] for i in missing]) if missing else [], strict=True
    ):
        predictions[i] = prediction
        spent[i] += 1
    return [predictions[i] for i in range(len(examples))]


def _each_or_alone(
    clf: Classifier, run: Callable[[list[int], ProgressFn], list[Attribution]], n: int, together: bool, step: ProgressFn
) -> list[Attribution | Refused]:
    """Every example's attribution or refusal: all examples in one call when the method explains
    them together, else (or when one of them is refused, to know which) one call per example,
    each call's progress its share of ``step``'s. The passes of a refused batch are spent again
    one by one and charged to no example."""
    if together and n > 1:
        try:
            return list(run(list(range(n)), step))
        except ValueError:
            pass
    outcomes: list[Attribution | Refused] = []
    for i in range(n):
        before = clf.forward_passes

        def part(fraction: float, message: str, i: int = i) -> None:
            step((i + fraction) / n, message)

        try:
            outcomes.append(run([i], part)[0])
        except ValueError as error:
            outcomes.append(Refused(str(error), clf.forward_passes - before))
    return outcomes


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
    passes = len(parts) + sum(result.forward_passes for result in results)
    return Explanation(example, prediction, target, attributions, 0, errors, tuple(spans), passes)
