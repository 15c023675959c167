"""The metric registry: one key per metric, each a ``MetricSpec``, gathered from the family
modules."""

from __future__ import annotations

import importlib
from types import MappingProxyType

from metrics.base import MetricResult, MetricSpec, Summary, mean_interval

_FAMILIES = ("faithfulness", "plausibility")


def _collect() -> MappingProxyType[str, MetricSpec]:
    """The family modules' ``METRICS`` in order, read-only; a key registered twice is an error."""
    registry: dict[str, MetricSpec] = {}
    for family in _FAMILIES:
        try:
            module = importlib.import_module(f"metrics.{family}")
        except ModuleNotFoundError as error:
            if error.name != f"metrics.{family}":
                raise
            continue
        for spec in module.METRICS:
            if spec.key in registry:
                raise ValueError(f"metric {spec.key!r} is registered twice")
            registry[spec.key] = spec
    return MappingProxyType(registry)


REGISTRY: MappingProxyType[str, MetricSpec] = _collect()


def get(key: str) -> MetricSpec:
    if key not in REGISTRY:
        raise ValueError(f"unknown metric {key!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[key]


__all__ = ["REGISTRY", "MetricResult", "MetricSpec", "Summary", "get", "mean_interval"]
