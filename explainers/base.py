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
from core.types import Attribution, Example


def param(
    default: Any, help: str, *, choices: tuple | None = None, min: float | None = None, max: float | None = None
) -> Any:
    """A dataclass field carrying its UI/CLI description."""
    meta = {"help": help, "choices": choices, "min": min, "max": max}
    return field(default=default, metadata={k: v for k, v in meta.items() if v is not None})


@dataclass(frozen=True)
class NoParams:
    pass


ExplainFn = Callable[..., Attribution]


@dataclass(frozen=True)
class ExplainerSpec:
    """A registry entry: the function, its parameter class and the defaults for this key."""

    key: str
    explain: ExplainFn
    params_cls: type
    description: str
    family: str
    defaults: dict[str, Any] = field(default_factory=dict)
    needs_mlm: bool = False
    gradient: bool = False

    def make_params(self, overrides: dict[str, Any] | None = None) -> Any:
        return params_from(self.params_cls, {**self.defaults, **(overrides or {})})

    @property
    def stochastic(self) -> bool:
        return "seed" in {f.name for f in dataclasses.fields(self.params_cls)}


def params_from(params_cls: type, values: dict[str, Any]) -> Any:
    """Build a params dataclass from values (strings from the command line are converted)."""
    fields = {f.name: f for f in dataclasses.fields(params_cls)}
    converted = {}
    for name, value in values.items():
        if name not in fields:
            raise ValueError(
                f"unknown parameter {name!r} for {params_cls.__name__}; known: {', '.join(fields) or 'none'}"
            )
        converted[name] = _convert(fields[name], value)
    params = params_cls(**converted)
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        meta = f.metadata
        if "choices" in meta and value not in meta["choices"]:
            raise ValueError(f"{f.name}={value!r} is not one of {meta['choices']}")
        if "min" in meta and value < meta["min"] or "max" in meta and value > meta["max"]:
            raise ValueError(f"{f.name}={value!r} is outside [{meta.get('min')}, {meta.get('max')}]")
    return params


def _convert(f: dataclasses.Field, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    kind = type(f.default)
    if kind is bool:
        if value.lower() in {"1", "true", "yes", "on"}:
            return True
        if value.lower() in {"0", "false", "no", "off"}:
            return False
        raise ValueError(f"{f.name} expects true or false, got {value!r}")
    if kind in (int, float):
        try:
            return kind(value)
        except ValueError as error:
            raise ValueError(f"{f.name} expects a {kind.__name__}, got {value!r}") from error
    return value


def run_explainer(
    spec: ExplainerSpec,
    clf: Classifier,
    example: Example,
    target: int,
    params: Any = None,
    *,
    mlm: MaskedLM | None = None,
    progress: ProgressFn | None = None,
) -> Attribution:
    """Run one explainer and record its runtime and the passes it spent on the classifier."""
    if not 0 <= target < clf.num_labels:
        raise ValueError(f"target {target} is not a class of {clf.name} (0..{clf.num_labels - 1})")
    if spec.needs_mlm and mlm is None:
        raise ValueError(f"{spec.key} needs a masked language model")
    clf.check_example(example)
    params = params if params is not None else spec.make_params()
    forward0, backward0 = clf.forward_passes, clf.backward_passes
    mlm0 = mlm.forward_passes if mlm is not None else 0
    start = time.perf_counter()
    attribution = spec.explain(clf, example, target, params, mlm=mlm, progress=progress)
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
