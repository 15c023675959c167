"""What every explainer shares: parameter dataclasses, the registry entry type and the runner.

An explainer is ``explain(clf, example, target, params, *, mlm=None, progress=None)`` returning
an ``Attribution``. Its parameters are a frozen dataclass whose field metadata (``help``,
``choices``, ``min``, ``max``) also drives the parameter forms of the UI and ``--param`` parsing.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.classifier import Classifier, ProgressFn
from core.masked_lm import MaskedLM
from core.params import params_from
from core.types import Attribution, Example

ExplainFn = Callable[..., Attribution]


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
    many of those also go backward (the noise-sampling gradient methods), and on the masked
    language model."""

    classifier: int
    mlm: int = 0
    backward: int = 0


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

    ``gradient``: differentiable in the input embeddings (``explainers.gradients.word_scores``
    recomputes it with ``create_graph``; the embedding attack takes these). ``sampling``: a
    perturbation or noise-sampling method whose cost is ``passes(n_words, params)``. ``mask_optimiser``: optimises a
    word mask; its cost is ``steps(params)`` and ``mask_filler`` names the token a masked word is
    blended toward. ``stochastic``: its parameters have a ``seed``. ``takes_resources``: its
    function takes the caller's ``resources`` (pre-trained models, training data; AML's).
    ``windowable``: a word's score is read off its neighbourhood (leave-one-out, gradients), so a
    long document can be explained in sliding windows whose scores are stitched (engine/windows.py).
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

    def __post_init__(self) -> None:
        if self.sampling != (self.passes is not None):
            raise ValueError(f"{self.key}: a sampling method needs a passes cost model, and only it has one")
        if self.mask_optimiser != (self.steps is not None):
            raise ValueError(f"{self.key}: a mask optimiser needs a steps cost model, and only it has one")
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
    """Run one explainer and record its runtime and the passes it spent on the classifier.
    ``resources`` (the engine's, engine/resources.py) reaches the methods that take them."""
    if not 0 <= target < clf.num_labels:
        raise ValueError(f"target {target} is not a class of {clf.name} (0..{clf.num_labels - 1})")
    if spec.needs_mlm and mlm is None:
        raise ValueError(f"{spec.key} needs a masked language model")
    clf.check_example(example)
    params = params if params is not None else spec.make_params()
    forward0, backward0 = clf.forward_passes, clf.backward_passes
    mlm0 = mlm.forward_passes if mlm is not None else 0
    start = time.perf_counter()
    extra = {"resources": resources} if spec.takes_resources else {}
    attribution = spec.explain(clf, example, target, params, mlm=mlm, progress=progress, **extra)
    runtime = time.perf_counter() - start
    extras = dict(attribution.extras)
    if mlm is not None and mlm.forward_passes > mlm0:
        extras["mlm_forward_passes"] = mlm.forward_passes - mlm0
    return dataclasses.replace(
        attribution,
        method=spec.key,
        params=dataclasses.asdict(params),
        seed=getattr(params, "seed", None),
        runtime_s=runtime,
        forward_passes=clf.forward_passes - forward0,
        backward_passes=clf.backward_passes - backward0,
        extras=extras,
    )


def make_attribution(example: Example, target: int, scores, **kwargs: Any) -> Attribution:
    """An ``Attribution`` for ``example`` (method, params and costs are filled in by the runner)."""
    return Attribution(method="", example_id=example.id, target=target, words=example.words, scores=scores, **kwargs)
