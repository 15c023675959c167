"""What every explainer shares: parameter dataclasses, the registry entry type and the runner.

An explainer is ``explain(clf, example, target, params, *, mlm=None, progress=None)`` returning
an ``Attribution``. A method that can explain several examples together (one padded
forward/backward for the one-pass gradient and attention methods, one pooled scorer call for the
one-call perturbation methods) is written once as ``explain_batch(clf, examples, targets,
params, *, mlm=None, progress=None) -> list[Attribution]``, and its ``explain`` is that function
on a batch of one (``one_example``), so there is no second copy of it. Its parameters are a
frozen dataclass whose field metadata (``help``, ``choices``, ``min``, ``max``) also drives the
parameter forms of the UI and ``--param`` parsing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.classifier import Classifier, ProgressFn
from core.devices import is_out_of_memory
from core.masked_lm import MaskedLM
from core.params import params_from
from core.types import Attribution, Example

ExplainFn = Callable[..., Attribution]
BatchFn = Callable[..., list[Attribution]]


class OneExample:
    """The explainer of one example that is a batch function on a batch of one."""

    def __init__(self, batch: BatchFn) -> None:
        self.batch = batch

    def __call__(
        self, clf: Classifier, example: Example, target: int, params: Any, *, mlm=None, progress=None, **resources
    ) -> Attribution:
        return self.batch(clf, [example], [target], params, mlm=mlm, progress=progress, **resources)[0]


def one_example(batch: BatchFn) -> OneExample:
    """``explain(clf, example, target, params)`` as ``batch`` on one example."""
    return OneExample(batch)


@dataclass(frozen=True, kw_only=True)
class Paper:
    """Where a method comes from: ``Paper(authors="Kim et al.", year=2020, arxiv="2010.04920")``."""

    authors: str
    year: int
    arxiv: str | None = None
    note: str = ""  # e.g. the project's seed paper it is compared in

    def __str__(self) -> str:
        arxiv = f", arXiv:{self.arxiv}" if self.arxiv else ""
        note = f"; {self.note}" if self.note else ""
        return f"{self.authors} {self.year}{arxiv}{note}"


@dataclass(frozen=True)
class Passes:
    """Forward passes a run needs: on the classifier (at most: duplicates are scored once), how
    many of those also go backward (the gradient methods), and on the masked language model."""

    classifier: int
    mlm: int = 0
    backward: int = 0


def fixed_passes(classifier: int, backward: int = 0) -> PassesFn:
    """The cost model of a method whose passes do not depend on the text or its parameters."""
    return lambda _n_words, _params: Passes(classifier=classifier, backward=backward)


@dataclass(frozen=True)
class Steps:
    """Cost of a mask optimiser in units of one batch-2 forward and backward pass of the classifier
    (``python -m cli bench`` measures the unit): the run itself and a one-off pre-training."""

    run: float
    pretrain: float = 0.0
    note: str = ""


PassesFn = Callable[[int, Any], Passes]
StepsFn = Callable[[Any], Steps]


@dataclass(frozen=True, kw_only=True)
class ExplainerSpec:
    """A registry entry: the function, its parameter class, the defaults for this key, and what
    the rest of the project needs to know about the method without naming it.

    ``gradient``: differentiable in the input embeddings (``explainers.word_scores.word_scores``
    recomputes it with ``create_graph``; the embedding attack takes these). ``sampling``: a
    perturbation or noise-sampling method (its cost grows with its samples). ``passes(n_words,
    params)``: the cost model of every method but a mask optimiser. ``mask_optimiser``: optimises a
    word mask; its cost is ``steps(params)`` and ``mask_filler`` names the token a masked word is
    blended toward. ``stochastic``: its parameters have a ``seed``. ``takes_resources``: its
    function takes the caller's ``resources`` (pre-trained models, training data; AML's).
    ``windowable``: a word's score is read off its neighbourhood (leave-one-out, gradients), so a
    long document can be explained in sliding windows whose scores are stitched (engine/windows.py).
    ``needs_attention_weights``: reads the model's attention weights, so the runner runs it on the
    eager-attention view of the weights (``Classifier.eager_attention``); every other method runs
    on the fused kernel. ``explain_batch``: explains several examples together (see module); then
    ``explain`` must be ``one_example(explain_batch)``. ``predicts``: its batch function takes a
    None target as the example's predicted label, read off the method's own forward pass, and
    reports every label's explained output in ``extras["outputs"]``, so a request that runs it
    needs no prediction pass of its own (``engine.explain.explain_examples``).
    """

    key: str
    explain: ExplainFn
    params_cls: type
    description: str
    family: str
    paper: Paper
    defaults: dict[str, Any] = field(default_factory=dict)
    needs_mlm: bool = False
    gradient: bool = False
    sampling: bool = False
    mask_optimiser: bool = False
    mask_filler: str | None = None
    passes: PassesFn | None = None
    steps: StepsFn | None = None
    takes_resources: bool = False
    windowable: bool = False
    needs_attention_weights: bool = False
    explain_batch: BatchFn | None = None
    predicts: bool = False

    def __post_init__(self) -> None:
        if self.explain_batch is not None and getattr(self.explain, "batch", None) is not self.explain_batch:
            raise ValueError(f"{self.key}: explain must be one_example(explain_batch), not a second implementation")
        if self.predicts and self.explain_batch is None:
            raise ValueError(f"{self.key}: a method that predicts its own target needs a batch function")
        if self.explain_batch is not None and self.needs_mlm:
            raise ValueError(f"{self.key}: a batch function cannot count masked-LM passes per example")
        if self.mask_optimiser != (self.steps is not None):
            raise ValueError(f"{self.key}: a mask optimiser needs a steps cost model, and only it has one")
        if (self.passes is None) != self.mask_optimiser:
            raise ValueError(f"{self.key}: every method but a mask optimiser needs a passes cost model")
        if self.mask_filler is not None and not self.mask_optimiser:
            raise ValueError(f"{self.key}: mask_filler is for mask optimisers")
        unknown = set(self.defaults) - {f.name for f in dataclasses.fields(self.params_cls)}
        if unknown:
            raise ValueError(f"{self.key}: defaults name unknown parameters {sorted(unknown)}")

    def make_params(self, overrides: dict[str, Any] | None = None) -> Any:
        return params_from(self.params_cls, {**self.defaults, **(overrides or {})})

    @property
    def stochastic(self) -> bool:
        return "seed" in {f.name for f in dataclasses.fields(self.params_cls)}


def run_explainer(
    spec: ExplainerSpec,
    clf: Classifier,
    example: Example,
    target: int,
    params: Any = None,
    *,
    mlm: MaskedLM | None = None,
    progress: ProgressFn | None = None,
    resources: Any = None,
) -> Attribution:
    """Run one explainer on one example: ``run_explainers`` on a batch of one."""
    return run_explainers(spec, clf, [example], [target], params, mlm=mlm, progress=progress, resources=resources)[0]


def run_explainers(
    spec: ExplainerSpec,
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int | None],
    params: Any = None,
    *,
    mlm: MaskedLM | None = None,
    progress: ProgressFn | None = None,
    resources: Any = None,
) -> list[Attribution]:
    """Run one explainer on several examples and record each one's runtime and the passes it spent
    on the classifier (a None target: the predicted label, for a method that ``predicts``). A method
    with a batch function explains them together: its passes are counted per example
    (``Classifier.per_example``) and the batch's time is shared equally among its examples; any
    other method explains them one after the other. A method that ``needs_attention_weights`` runs
    on the eager-attention view. ``resources`` (the engine's, engine/resources.py) reach the methods
    that take them. A gradient pass (or anything else) that runs out of device memory halves
    ``clf.batch_size`` and runs the explainer again, down to batch size 1 (the scorer retries its
    own chunks the same way)."""
    if len(examples) != len(targets):
        raise ValueError("one target per example")
    for example, target in zip(examples, targets):
        if not (target is None and spec.predicts) and not (target is not None and 0 <= target < clf.num_labels):
            raise ValueError(f"target {target} is not a class of {clf.name} (0..{clf.num_labels - 1})")
        clf.check_example(example)
    if spec.needs_mlm and mlm is None:
        raise ValueError(f"{spec.key} needs a masked language model")
    params = params if params is not None else spec.make_params()
    while True:
        forward0, backward0 = clf.forward_passes, clf.backward_passes
        try:
            with clf.eager_attention() if spec.needs_attention_weights else contextlib.nullcontext():
                if spec.explain_batch is not None:
                    extra = {"resources": resources} if spec.takes_resources else {}
                    return _batched(spec.explain_batch, spec, clf, examples, targets, params, progress, extra)
                return [_one(spec, clf, e, t, params, mlm, progress, resources) for e, t in zip(examples, targets)]
        except Exception as error:
            if not is_out_of_memory(error) or not clf.halve_batch():
                raise
            # Run again with half the batch (results do not depend on it); count only that run's passes.
            clf.forward_passes, clf.backward_passes = forward0, backward0


def _batched(
    batch: BatchFn,
    spec: ExplainerSpec,
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int],
    params: Any,
    progress: ProgressFn | None,
    extra: dict[str, Any],
) -> list[Attribution]:
    forward0, backward0 = clf.forward_passes, clf.backward_passes
    start = time.perf_counter()
    with clf.per_example(len(examples)) as ledger:
        attributions = batch(clf, list(examples), list(targets), params, mlm=None, progress=progress, **extra)
    runtime = (time.perf_counter() - start) / len(examples)
    if (sum(ledger.forward), sum(ledger.backward)) != (clf.forward_passes - forward0, clf.backward_passes - backward0):
        raise RuntimeError(f"{spec.key}: a pass of the batch was not counted for its example")
    return [
        _recorded(spec, a, params, runtime, forward, backward, {})
        for a, forward, backward in zip(attributions, ledger.forward, ledger.backward, strict=True)
    ]


def _one(
    spec: ExplainerSpec,
    clf: Classifier,
    example: Example,
    target: int,
    params: Any,
    mlm: MaskedLM | None,
    progress: ProgressFn | None,
    resources: Any,
) -> Attribution:
    forward0, backward0 = clf.forward_passes, clf.backward_passes
    mlm0 = mlm.forward_passes if mlm is not None else 0
    start = time.perf_counter()
    extra = {"resources": resources} if spec.takes_resources else {}
    attribution = spec.explain(clf, example, target, params, mlm=mlm, progress=progress, **extra)
    runtime = time.perf_counter() - start
    mlm_passes = mlm.forward_passes - mlm0 if mlm is not None else 0
    return _recorded(
        spec,
        attribution,
        params,
        runtime,
        clf.forward_passes - forward0,
        clf.backward_passes - backward0,
        {"mlm_forward_passes": mlm_passes} if mlm_passes else {},
    )


def _recorded(
    spec: ExplainerSpec, attribution: Attribution, params: Any, runtime: float, forward: int, backward: int, extras
) -> Attribution:
    return dataclasses.replace(
        attribution,
        method=spec.key,
        params=dataclasses.asdict(params),
        seed=getattr(params, "seed", None),
        runtime_s=runtime,
        forward_passes=forward,
        backward_passes=backward,
        extras={**attribution.extras, **extras},
    )


def make_attribution(example: Example, target: int, scores, **kwargs: Any) -> Attribution:
    """An ``Attribution`` for ``example`` (method, params and costs are filled in by the runner)."""
    return Attribution(method="", example_id=example.id, target=target, words=example.words, scores=scores, **kwargs)
