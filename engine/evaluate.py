"""Evaluate attributions over a dataset slice: the one implementation behind ``python -m cli
evaluate``, the run store and the app's dataset views.

For each example of the slice every method explains the target class (the predicted one, or the
gold label: ``target="gold"``, MaRC's protocol) through ``engine.explain.explain_example``, then
every metric scores each attribution. The faithfulness metrics of a group of examples are one
scorer call (``score_examples``). Metrics that compare with human rationales skip examples
without one and report how many they skipped.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.datasets.labels import align_labels
from core.progress import count_text
from core.types import Attribution, Example, ProgressFn
from engine.explain import explain_examples
from engine.resources import Resources
from metrics.base import MetricResult

if TYPE_CHECKING:
    from core.classifier import Classifier
    from core.masked_lm import MaskedLM

DEFAULT_METHODS = "loo_empty,saliency,integrated_gradients,attention_rollout,random"
DEFAULT_METRICS = "deletion,insertion,comprehensiveness,sufficiency,log_odds"
# Examples explained together: on 2 CPU cores, 16 sorted by length bring the one-pass methods to
# 1.1-1.5x of their batched floor, round to round (8: 1.5-1.8x; 32 and 64 no better beyond noise;
# BENCHMARKS.md). A run's units hold as many (their own group).
DEFAULT_GROUP = 16
GOLDEN_RATIO = (1 + 5**0.5) / 2  # the step of ``spread``


@dataclass
class ExampleResult:
    """One example's prediction, attributions and metric results (``metrics[method][metric]``;
    a metric skipped for lack of a rationale is absent)."""

    example: Example  # cut to the model's length
    probabilities: tuple[float, ...]
    target: int
    attributions: dict[str, Attribution]
    metrics: dict[str, dict[str, MetricResult]]
    skipped: tuple[str, ...] = ()
    position: int = 0  # index in the slice that was evaluated

    @property
    def predicted(self) -> int:
        return max(range(len(self.probabilities)), key=self.probabilities.__getitem__)


@dataclass
class SliceEvaluation:
    methods: list[str]
    metric_keys: list[str]
    results: list[ExampleResult] = field(default_factory=list)
    explain_s: float = 0.0
    metrics_s: float = 0.0
    forward_passes: int = 0
    errors: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # method -> [{id, index, error}]
    probabilities: bool = True  # the model's outputs are probabilities (False: a regression head's raw scores)

    def skipped(self, metric: str) -> int:
        return sum(metric in r.skipped for r in self.results)


def resolve_metrics(metrics_arg: str) -> list[str]:
    """``"all"`` or comma-separated keys -> validated metric keys (a key named twice once, where
    it is first named)."""
    import metrics

    if metrics_arg == "all":
        return list(metrics.REGISTRY)
    keys = list(dict.fromkeys(k.strip() for k in metrics_arg.split(",") if k.strip()))
    for key in keys:
        metrics.get(key)
    return keys


def metric_params(keys: Sequence[str], overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Each metric's params dataclass with the overrides for its key applied."""
    import metrics
    from core.params import params_from

    return {key: params_from(metrics.get(key).params_cls, (overrides or {}).get(key, {})) for key in keys}


def needs_mlm(methods: Sequence[str], params_by_metric: dict[str, Any]) -> bool:
    import explainers

    return any(explainers.get(m).needs_mlm for m in methods) or any(
        getattr(p, "removal", None) == "mlm" for p in params_by_metric.values()
    )


def score_attribution(
    clf: Classifier,
    example: Example,
    attribution: Attribution,
    params_by_metric: dict[str, Any],
    *,
    mlm: MaskedLM | None = None,
) -> dict[str, MetricResult]:
    """Every metric of one attribution (``score_attributions`` of one)."""
    return score_attributions(clf, example, {"": attribution}, params_by_metric, mlm=mlm)[""]


def score_attributions(
    clf: Classifier,
    example: Example,
    attributions: Mapping[str, Attribution],
    params_by_metric: dict[str, Any],
    *,
    mlm: MaskedLM | None = None,
) -> dict[str, dict[str, MetricResult]]:
    """Every metric of each method's attribution of one example (``score_examples`` of one)."""
    return score_examples(clf, [example], [attributions], params_by_metric, mlm=mlm)[0]


def score_examples(
    clf: Classifier,
    examples: Sequence[Example],
    attributions: Sequence[Mapping[str, Attribution]],
    params_by_metric: dict[str, Any],
    *,
    mlm: MaskedLM | None = None,
    progress: ProgressFn | None = None,
) -> list[dict[str, dict[str, MetricResult]]]:
    """Every metric of each method's attribution of each example (per example, then method and
    metric): the faithfulness metrics of all of them in one scorer call
    (``metrics.faithfulness.score_examples``: each example's shared variants scored once, the
    examples' variants pooled into full batches), the others one by one. Metrics that need a
    rationale are left out when the example has none, or when the metric skips it (each metric's
    own rule, which follows its ``annotator`` setting)."""
    import metrics
    from metrics import faithfulness

    batched = {k: p for k, p in params_by_metric.items() if k in faithfulness.METRIC_KEYS}
    scored: list[dict[str, dict[str, MetricResult]]] = [{} for _ in examples]
    if batched:
        planned = [
            faithfulness.plan_attributions(clf, example, per, batched, mlm=mlm)
            for example, per in zip(examples, attributions, strict=True)
        ]
        scored = faithfulness.score_examples(clf, planned, progress)
    out = []
    for example, per, faithful in zip(examples, attributions, scored, strict=True):
        by_method = {}
        for method, attribution in per.items():
            results = {
                key: result for key, result in faithful.get(method, {}).items() if "skipped" not in result.extras
            }
            for key, params in params_by_metric.items():
                if key in batched:
                    continue
                spec = metrics.get(key)
                if spec.needs_rationale and not example.has_rationale:
                    continue
                result = spec.compute(clf, example, attribution, params, mlm=mlm)
                if "skipped" not in result.extras:
                    results[key] = result
            by_method[method] = {key: results[key] for key in params_by_metric if key in results}
        out.append(by_method)
    return out


def slice_methods(methods: Sequence[str], given: Sequence[Mapping[str, Attribution]] | None = None) -> list[str]:
    """The methods of a slice's evaluation: ``methods``, then the names of the ``given``
    attributions in the order they first appear."""
    return [*methods, *dict.fromkeys(m for per in given or () for m in per if m not in methods)]


def _explained_class(example: Example, target: str, supplied: Mapping[str, Attribution]) -> int | None:
    """The class to explain: the one the given attributions name, else the gold label
    (``target="gold"``), else None (the predicted class)."""
    named = {a.target for a in supplied.values() if a.target >= 0}
    if len(named) > 1:
        raise ValueError(f"example {example.id!r}: the given attributions explain different classes {sorted(named)}")
    return named.pop() if named else example.label if target == "gold" else None


def length_groups(indices: Sequence[int], lengths: Sequence[int], group: int) -> list[list[int]]:
    """The groups ``indices`` are explained in (a dataset slice's groups, a run's units): sorted
    by ``lengths`` (an example's tokens: ``Classifier.token_count``) and cut into groups of
    ``group``, so a group's padded passes waste little (SST-2 dev in groups of 16 pads to 1.75x
    its tokens in slice order, 1.12x sorted within windows of 128 and 1.02x sorted whole). The
    groups come in ``spread`` order, so a slice or run stopped part-way has done groups of every
    length, not only its shortest examples; the last group (the longest examples), the only one
    that may hold fewer, stays last."""
    ordered = sorted(indices, key=lambda i: lengths[i])
    groups = [ordered[start : start + group] for start in range(0, len(ordered), group)]
    return [groups[i] for i in spread(len(groups) - 1)] + groups[-1:]


def spread(count: int) -> list[int]:
    """``range(count)`` in an order whose every prefix is spread evenly over the range: by the
    fractional part of ``i`` times the golden ratio (the gaps between a prefix's indices take at
    most three values, Slater's gap theorem; no prefix of ``m`` leaves a gap over twice
    ``count / m``, tested up to 160)."""
    return sorted(range(count), key=lambda i: (i * GOLDEN_RATIO) % 1.0)


def evaluate_slice(
    clf: Classifier,
    examples: Sequence[Example],
    methods: Sequence[str],
    params_by_metric: dict[str, Any],
    *,
    method_params: dict[str, dict[str, Any]] | None = None,
    seed: int | None = None,
    mlm: MaskedLM | None = None,
    progress: ProgressFn | None = None,
    target: str = "predicted",
    resources: Resources | None = None,
    given: Sequence[Mapping[str, Attribution]] | None = None,
    resume: SliceEvaluation | None = None,
    group: int = DEFAULT_GROUP,
) -> SliceEvaluation:
    """Explain every example with every method and score every attribution with every metric.
    A method that fails on an example (``ValueError``) is recorded in ``errors`` and left out of
    that example's metrics; the run goes on.

    Examples are explained ``group`` at a time, examples of similar length together
    (``length_groups``; ``engine.explain.explain_examples``: the one-pass gradient and attention
    methods in one padded forward/backward, the one-call perturbation methods' variants pooled in
    the scorer's batches; the results equal one-by-one runs), then scored together
    (``score_examples``: the group's faithfulness variants pooled in one scorer call). Results
    are appended to ``resume`` (a fresh evaluation when None) one whole group at a time, so a run
    stopped between groups leaves the finished ones in it, and calling again with it explains
    the examples it lacks. At the end the results and errors are in slice order.

    ``target`` is the class explained: ``predicted`` (the AML / ERASER protocol) or ``gold``
    (the example's label, MaRC's protocol; the predicted class where an example has none; a
    dataset that names the model's classes in another order is renumbered, ``align_labels``).

    ``given`` (one mapping per example) adds attributions made elsewhere (imports,
    ``engine.imports``): scored like the methods' own, over the example cut to the model's
    length. Their class is explained (a target of -1 stands for the class ``target`` picks)."""
    from metrics.faithfulness import check_head

    check_head(clf.head, list(params_by_metric))
    examples = align_labels(examples, clf.label_names)  # gold labels numbered as the model's classes
    if given is None:
        check_target(examples, target, clf.head.kind)
    all_methods = slice_methods(methods, given)
    evaluation = resume if resume is not None else SliceEvaluation(all_methods, list(params_by_metric))
    evaluation.probabilities = clf.head.is_probability
    if (evaluation.methods, evaluation.metric_keys) != (all_methods, list(params_by_metric)):
        raise ValueError("the evaluation to resume has other methods or metrics than this request")
    done = {r.position for r in evaluation.results}
    todo = [i for i in range(len(examples)) if i not in done]
    lengths = [clf.token_count(example) for example in examples]
    for indices in length_groups(todo, lengths, group):
        finished = len(evaluation.results)
        if progress is not None:
            progress(finished / len(examples), f"example {finished + 1} of {len(examples)}")
        start = time.perf_counter()
        supplied = [dict(given[i]) if given is not None else {} for i in indices]
        targets = [_explained_class(examples[i], target, per) for i, per in zip(indices, supplied, strict=True)]

        # A group's share of the progress: the first half while it is explained...
        def explaining(fraction: float, message: str, finished: int = finished, size: int = len(indices)) -> None:
            if progress is not None:
                share = (finished + 0.5 * fraction * size) / len(examples)
                progress(share, f"explaining examples {finished + 1}-{finished + size} of {len(examples)}: {message}")

        explanations = explain_examples(
            clf,
            [examples[i] for i in indices],
            list(methods),
            targets=targets,
            params=method_params,
            seed=seed,
            mlm=mlm,
            progress=explaining,
            resources=resources,
        )
        explain_s = time.perf_counter() - start
        for index, explanation, per in zip(indices, explanations, supplied, strict=True):
            for method, attribution in per.items():
                if attribution.words != explanation.example.words:
                    raise ValueError(
                        f"example {examples[index].id!r}: the given {method} scores other words than the model sees"
                    )
                explanation.attributions[method] = dataclasses.replace(attribution, target=explanation.target)

        # Then the second half while its metrics are scored (its end is the next group's start).
        def scoring(fraction: float, message: str, finished: int = finished, size: int = len(indices)) -> None:
            if progress is not None and fraction < 1.0:
                share = (finished + (0.5 + 0.5 * fraction) * size) / len(examples)
                progress(share, f"scoring examples {finished + 1}-{finished + size} of {len(examples)}: {message}")

        middle = time.perf_counter()
        passes = clf.forward_passes
        scored = score_examples(
            clf,
            [explanation.example for explanation in explanations],
            [explanation.attributions for explanation in explanations],
            params_by_metric,
            mlm=mlm,
            progress=scoring,
        )
        # The group is kept whole or not at all (a stop while it is scored leaves nothing of it to
        # count twice on resume): its times, its passes (the explanations' own, a refused batch's
        # repeated passes charged to no example, and the metrics'), its refusals and results.
        evaluation.explain_s += explain_s
        evaluation.metrics_s += time.perf_counter() - middle
        evaluation.forward_passes += sum(e.forward_passes for e in explanations) + clf.forward_passes - passes
        for index, explanation, per_method in zip(indices, explanations, scored, strict=True):
            for method, message in explanation.errors.items():
                evaluation.errors.setdefault(method, []).append(
                    {"index": index, "id": examples[index].id, "error": message}
                )
            skipped = tuple(k for k in params_by_metric if not any(k in results for results in per_method.values()))
            evaluation.results.append(
                ExampleResult(
                    explanation.example,
                    explanation.prediction.probabilities,
                    explanation.target,
                    explanation.attributions,
                    per_method,
                    skipped,
                    index,
                )
            )
    evaluation.results.sort(key=lambda r: r.position)
    for failures in evaluation.errors.values():
        failures.sort(key=lambda failure: failure["index"])
    if progress is not None:
        progress(1.0, f"{count_text(len(examples), 'example')} done")
    return evaluation


def head_defaults(metric_keys: Sequence[str], head: str | None) -> list[str]:
    """``metric_keys``, a command's default metrics, fitted to a ``head`` of that kind: the metrics
    of probabilities (log-odds) left out for a regression head's raw score. Metrics named on
    purpose are not fitted: ``metrics.faithfulness.check_head`` refuses them."""
    from metrics.faithfulness import PROBABILITY_ONLY

    return [key for key in metric_keys if head != "regression" or key not in PROBABILITY_ONLY]


def check_target(examples: Sequence[Example], target: str, head: str | None = None) -> None:
    """Refuse ``target="gold"`` for a regression or multi-label ``head`` (the dataset's gold class
    is none of its outputs: HateXplain's "normal" is 1, a target-group model's label 1 "Islam") and
    on examples none of which has a gold label (an unlabelled test split)."""
    if target == "gold" and head is not None and head != "single_label":
        raise ValueError(
            f"a {head.replace('_', '-')} head explains its own outputs, not the dataset's gold class: "
            "explain the predicted output"
        )
    if target == "gold" and examples and all(e.label is None for e in examples):
        raise ValueError("target 'gold' needs gold labels and these examples have none: explain the predicted class")


def select_examples(examples: Sequence[Example], random_n: int | None, seed: int | None) -> list[Example]:
    """All ``examples``, or ``random_n`` of them drawn without replacement with ``seed`` (0 when
    None), kept in dataset order."""
    import numpy as np

    if random_n is None:
        return list(examples)
    if not 0 < random_n <= len(examples):
        raise ValueError(f"--random {random_n} is outside 1..{len(examples)}")
    chosen = np.random.default_rng(0 if seed is None else seed).choice(len(examples), size=random_n, replace=False)
    return [examples[int(i)] for i in sorted(chosen)]
