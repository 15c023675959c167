"""Registry entries of explainers, metrics and attacks, described for the generated forms."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import explainers
import metrics
from experiments import attacks as _adversarial

# --------------------------------------------------------------------------- methods


@dataclass(frozen=True)
class ParamField:
    """One explainer parameter, described for a generated form."""

    name: str
    default: Any
    help: str = ""
    choices: tuple | None = None
    min: float | None = None
    max: float | None = None


@dataclass(frozen=True, kw_only=True)
class MethodInfo:
    """An explainer (or an attack's form) described for pages and ``ui``, which may not import
    ``explainers``: its capability flags are the registry spec's (explainers/base.py)."""

    key: str
    description: str
    family: str
    needs_mlm: bool
    fields: tuple[ParamField, ...]  # parameters the user may change (those fixing a variant are left out)
    paper: str = ""
    gradient: bool = False
    sampling: bool = False
    mask_optimiser: bool = False
    mask_filler: str | None = None
    stochastic: bool = False
    windowable: bool = False  # explained in sliding windows over a text longer than the model takes


def methods() -> list[MethodInfo]:
    """Every registered explainer, in registry order."""
    return [_method_info(spec) for spec in explainers.REGISTRY.values()]


def _method_info(spec: explainers.ExplainerSpec) -> MethodInfo:
    defaults = spec.make_params()
    fields = tuple(
        ParamField(f.name, getattr(defaults, f.name), **f.metadata)
        for f in dataclasses.fields(spec.params_cls)
        if f.name not in spec.defaults
    )
    return MethodInfo(
        key=spec.key,
        description=spec.description,
        family=spec.family,
        needs_mlm=spec.needs_mlm,
        fields=fields,
        paper=str(spec.paper),
        gradient=spec.gradient,
        sampling=spec.sampling,
        mask_optimiser=spec.mask_optimiser,
        mask_filler=spec.mask_filler,
        stochastic=spec.stochastic,
        windowable=spec.windowable,
    )


@dataclass(frozen=True, kw_only=True)
class MetricInfo:
    """A registered metric described for pages and ``ui`` (the spec's fields, metrics/base.py)."""

    key: str
    label: str
    description: str
    family: str
    higher_is_better: bool
    paper: str
    needs_rationale: bool
    thresholded: bool
    in_table: bool
    value_range: tuple[float, float] | None
    fields: tuple[ParamField, ...]


def metric_infos(family: str | None = None) -> list[MetricInfo]:
    """Registered metrics (of one family when given), in registry order."""
    return [
        MetricInfo(
            key=spec.key,
            label=spec.label,
            description=spec.description,
            family=spec.family,
            higher_is_better=spec.higher_is_better,
            paper=spec.paper,
            needs_rationale=spec.needs_rationale,
            thresholded=spec.thresholded,
            in_table=spec.in_table,
            value_range=spec.value_range,
            fields=tuple(
                ParamField(f.name, getattr(spec.params_cls(), f.name), **f.metadata)
                for f in dataclasses.fields(spec.params_cls)
            ),
        )
        for spec in metrics.REGISTRY.values()
        if family is None or spec.family == family
    ]


def attack_info(attack: str, preset: str = "quick") -> MethodInfo:
    """The parameters of an attack as a form description (defaults from the preset)."""
    defaults = _adversarial.make_params(attack, preset)
    fields = tuple(
        ParamField(f.name, getattr(defaults, f.name), **f.metadata)
        for f in dataclasses.fields(defaults)
        if f.name != "objective"
    )
    return MethodInfo(
        key=f"attack_{attack}",
        description=f"{attack} attack",
        family="adversarial",
        needs_mlm=attack == "substitution",
        fields=fields,
        paper=str(_adversarial.PAPER),
    )
