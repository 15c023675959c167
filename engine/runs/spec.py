"""What a dataset run is asked to compute (``RunSpec``: the model, the data, the methods and
metrics with their parameters, the seed, the unit and batch sizes and the scorer's autocast), and
the spec of a stored run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from core.params import MAX_SEED, SettingError, whole_number
from core.types import AUTOCAST_TYPES, HEAD_TYPES
from engine.evaluate import DEFAULT_METHODS, DEFAULT_METRICS, metric_params, needs_mlm, resolve_metrics
from engine.runs.records import RunInfo

# Examples per unit at most where a run names no size (fewer for long documents:
# engine.runs.worker.unit_size): a unit is explained as one group (engine.evaluate.DEFAULT_GROUP
# gives the measured effect of the group size); a killed run loses at most one unit per worker.
DEFAULT_CHUNK_SIZE = 16
MAX_CHUNK_SIZE = 2**31 - 1  # the catalogue keeps it as a 32-bit integer
WHOLE_NUMBERS = (("limit", 1, None), ("seed", 0, MAX_SEED), ("chunk_size", 1, MAX_CHUNK_SIZE), ("batch_size", 1, None))


@dataclass(frozen=True)
class RunSpec:
    """What to run. ``limit`` None is the whole split; ``overrides`` are ``--param`` values by
    method or metric key (``{"deletion": {"fraction": "0.5"}}``)."""

    model: str
    dataset: str
    split: str
    limit: int | None = None
    methods: tuple[str, ...] = tuple(DEFAULT_METHODS.split(","))
    metrics: tuple[str, ...] = tuple(DEFAULT_METRICS.split(","))
    overrides: dict[str, dict[str, str]] = field(default_factory=dict)
    seed: int | None = None
    target: str = "predicted"
    mlm: str = "minilm-mlm"
    data_dir: str | None = None
    chunk_size: int | None = None  # examples per unit; None: by the examples' length (worker.unit_size)
    batch_size: int | None = None
    autocast: str | None = None  # the scorer's autocast type (float16, bfloat16), None: float32 throughout
    head_type: str | None = None  # what the outputs mean (core.heads), None: from the model's config

    def __post_init__(self) -> None:
        import explainers

        if self.target not in ("predicted", "gold"):
            raise SettingError("target", f"must be predicted or gold, got {self.target!r}")
        for name, minimum, maximum in WHOLE_NUMBERS:  # numpy's ints read as ints: one run, one id
            if (value := getattr(self, name)) is not None:
                try:
                    object.__setattr__(self, name, whole_number(name, value, minimum, maximum))
                except ValueError as error:
                    raise SettingError(name, str(error).removeprefix(f"{name} ")) from None
        if self.autocast not in (None, *AUTOCAST_TYPES):
            raise SettingError("autocast", f"must be one of {', '.join(AUTOCAST_TYPES)}, got {self.autocast!r}")
        if self.head_type not in (None, *HEAD_TYPES):
            raise SettingError("head_type", f"must be one of {', '.join(HEAD_TYPES)}, got {self.head_type!r}")
        methods = explainers.resolve(list(self.methods))
        metrics = resolve_metrics(",".join(self.metrics))
        unknown = set(self.overrides) - set(methods) - set(metrics)
        if unknown:
            problem = f"for methods or metrics not requested: {', '.join(sorted(unknown))}"
            raise SettingError("params", problem, option="--param")
        metric_params(metrics, self.overrides)  # a bad metric parameter fails here, before any work
        object.__setattr__(self, "methods", tuple(methods))
        object.__setattr__(self, "metrics", tuple(metrics))

    @property
    def method_overrides(self) -> dict[str, dict[str, str]]:
        return {k: v for k, v in self.overrides.items() if k in self.methods}

    def params_by_metric(self) -> dict[str, Any]:
        return metric_params(self.metrics, self.overrides)

    def needs_mlm(self) -> bool:
        return needs_mlm(self.methods, self.params_by_metric())

    def resolved_params(self) -> dict[str, dict[str, Any]]:
        """Every method's and metric's parameters with defaults filled in (the run's key uses
        these, so ``--param deletion.fraction=0.2`` and the default are the same run). A method's
        seed is the run's seed, as ``explain_example`` sets it."""
        import explainers

        out: dict[str, dict[str, Any]] = {}
        for key in self.methods:
            spec = explainers.get(key)
            overrides: dict[str, Any] = dict(self.method_overrides.get(key, {}))
            if self.seed is not None and spec.stochastic:
                overrides.setdefault("seed", self.seed)
            out[key] = dataclasses.asdict(spec.make_params(overrides))
        for key, params in self.params_by_metric().items():
            out[key] = dataclasses.asdict(params)
        return out


def spec_of(info: RunInfo) -> RunSpec:
    """The spec of a stored run (to resume it)."""
    return RunSpec(
        model=info.model,
        dataset=info.dataset,
        split=info.split,
        limit=info.selection.get("limit"),
        methods=info.methods,
        metrics=info.metrics,
        overrides=info.overrides,
        seed=info.seed,
        target=info.target,
        mlm=info.selection.get("mlm", "minilm-mlm"),
        data_dir=info.selection.get("data_dir"),
        chunk_size=info.chunk_size,
        autocast=info.selection.get("autocast"),
        head_type=info.selection.get("head_type"),
    )
