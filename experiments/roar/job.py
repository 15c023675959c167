"""A remove-and-retrain job: what it runs, the units it expands to and what it will cost.

ROAR after Hooker et al. (2019), arXiv:1806.10758, as Pham et al. 2022 (arXiv:2110.11929: ROAR and
ROAR_BERT, 10/20/30%, 5 models per cell) and Madsen et al. 2022 (arXiv:2110.08412: [MASK], 0..100%,
Recursive ROAR, 5 seeds) run it.

A job names a task (a bundled task, whose training recipe is ``core.train.TASKS``) or a model to
fine-tune plus a dataset; the methods (the random baseline is always added); the removal
(``experiments.roar.removal``); the levels; plain or recursive; the number of seeds (models per
cell); the training-set size and training steps; the explained class (``gold``, Madsen et al.'s
choice, or ``predicted``, Pham et al.'s code). Rounding and order default to the removal's paper
(``removal.default_rounding`` / ``default_order``) and are stored resolved.

**Units.** One unit trains one model and evaluates it: (method, level, seed) for every level
strictly between 0% and 100%, plus, per seed, the 0% and 100% units, shared by every method
(``scores.SHARED``). Each seed is its own chain: its 0% model explains the data for plain ROAR
(Madsen et al.'s design, where each seed has its own step-0 model; Pham et al. 2022 explained once
with one model), and a recursive unit is explained by the model of the previous level of the same
method and seed (``depends_on``).

**Cost.** Retrains = units; explanations = examples (train + evaluation) x methods x seeds,
times the levels between 0% and 100% when recursive; masked-LM fill passes = examples x methods
x seeds x the levels between 0% and 100% for ``mlm`` removal, plus per seed the shared 100%
unit's examples and, when recursive, the views of the previous level that each later level
explains (examples x methods x seeds x (levels - 1)); predictions = units x evaluation examples.
The time is their sum weighted by measured per-item rates, on one worker.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from core.datasets import DATASET_NAMES, FILE_PREFIX, HUB_PREFIX
from core.params import SettingError
from core.random_models import PREFIX as RANDOM_MODELS
from experiments.roar.removal import (
    FULL,
    ORDERS,
    REMOVALS,
    ROUNDINGS,
    SCOPES,
    ZERO,
    Level,
    check_choice,
    default_order,
    default_rounding,
)
from experiments.roar.scores import RANDOM, SHARED

TARGETS = ("gold", "predicted")
MAX_SEEDS = 100  # models per cell: the papers train 5; far more is a slip of the keyboard, not a study
MAX_TRAIN_STEPS = 1_000_000  # per model: about a thousand times a bundled task's recipe
DEFAULT_MLM = "minilm-mlm"


@dataclass(frozen=True)
class Unit:
    """One retrain: the model of ``method`` at ``level`` for ``seed`` (``SHARED`` at 0% and
    100%)."""

    method: str
    level: Level
    seed: int

    @property
    def key(self) -> str:
        """A stable name for the run store: ``method/level/seed``."""
        return f"{self.method}/{self.level.amount}{'%' if self.level.unit == 'percent' else 't'}/{self.seed}"


@dataclass(frozen=True)
class Cost:
    retrains: int
    training_steps: int
    explanations: dict[str, int]  # per method
    fills: int  # masked-LM passes over an example (mlm removal)
    predictions: int
    seconds: float

    @property
    def total_explanations(self) -> int:
        return sum(self.explanations.values())


def _bundled_tasks() -> dict:
    from core.train import TASKS

    return {name: spec for name, spec in TASKS.items() if name != "mlm"}


def _positive(value, what: str, allow_none: bool = False, most: int | None = None) -> None:
    """Refuse ``value`` unless it is a whole number from 1 to ``most`` (None: no upper bound; None
    itself passes with ``allow_none``)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (most is not None and value > most):
        accepted = "of at least 1" if most is None else f"from 1 to {most:,}"
        raise SettingError(what, f"must be a whole number {accepted}, got {value!r}")


@dataclass(frozen=True)
class RoarJob:
    """A ROAR or Recursive ROAR job (module docstring); invalid settings raise one-line errors."""

    methods: tuple[str, ...]
    task: str | None = None
    model: str | None = None
    dataset: str | None = None
    removal: str = "delete"
    levels: tuple[Level, ...] = (Level(10), Level(20), Level(30))
    recursive: bool = False
    seeds: int = 3
    train_size: int | None = None  # None: the whole training split
    eval_size: int | None = None  # None: the whole evaluation split
    train_steps: int | None = None  # None: the bundled task's recipe
    target: str = "gold"
    rounding: str | None = None  # None: the removal's paper
    order: str | None = None  # None: the removal's paper
    scope: str = "main"
    mlm: str = DEFAULT_MLM

    def __post_init__(self) -> None:
        from explainers import REGISTRY

        if (self.task is None) == (self.model is None and self.dataset is None):
            raise ValueError("give a task (e.g. sst2) or a model and a dataset, not both and not neither")
        if self.task is not None:
            tasks = _bundled_tasks()
            if self.task not in tasks:
                raise ValueError(f"unknown task {self.task!r}; choose one of {', '.join(tasks)}")
        elif not self.model or not self.dataset:
            raise ValueError(f"a model and a dataset go together, got model {self.model!r}, dataset {self.dataset!r}")
        elif self.model.startswith(RANDOM_MODELS):
            raise SettingError(
                "model", f"{self.model!r} has random weights: ROAR retrains a trained model from its own weights"
            )
        elif self.dataset not in DATASET_NAMES and not self.dataset.startswith((HUB_PREFIX, FILE_PREFIX)):
            raise ValueError(
                f"unknown dataset {self.dataset!r}; choose one of {', '.join(DATASET_NAMES)}, hub:NAME or file:PATH"
            )
        # random last whatever the order given: ("random", "m") and ("m",) are the same job (and run id)
        methods = tuple(dict.fromkeys((*(m for m in self.methods if m != RANDOM), RANDOM)))
        if len(methods) < 2:
            raise ValueError("give at least one method besides the random baseline")
        for method in methods:
            if method not in REGISTRY:
                raise ValueError(f"unknown method {method!r}; choose from {', '.join(REGISTRY)}")
        check_choice(self.removal, REMOVALS, "removal")
        check_choice(self.target, TARGETS, "target")
        check_choice(self.scope, SCOPES, "scope")
        rounding = (
            default_rounding(self.removal)
            if self.rounding is None
            else check_choice(self.rounding, ROUNDINGS, "rounding")
        )
        order = default_order(self.removal) if self.order is None else check_choice(self.order, ORDERS, "order")
        levels = tuple(self.levels)
        if not all(isinstance(level, Level) for level in levels):
            raise ValueError(f"levels are Level records, got {levels!r}")
        middle = [level for level in levels if not (level.is_zero or level.is_full)]
        if not middle:
            raise ValueError(f"give at least one level between 0% and 100%, got {[lv.label for lv in levels]}")
        if len({level.unit for level in middle}) > 1:
            raise ValueError(f"levels are all percentages or all token counts, got {[lv.label for lv in levels]}")
        if FULL in levels and middle[0].unit == "tokens":  # 100% has no place on a curve over token counts
            raise ValueError(
                f"token levels cannot end at 100% (a share, not a count), got {[lv.label for lv in levels]}: "
                "drop 100% or give percentages"
            )
        if any(b.amount <= a.amount for a, b in itertools.pairwise(levels)):
            raise ValueError(f"levels must increase, got {[level.label for level in levels]}")
        _positive(self.seeds, "seeds", most=MAX_SEEDS)
        _positive(self.train_size, "train_size", allow_none=True)
        _positive(self.eval_size, "eval_size", allow_none=True)
        train_steps = self.train_steps
        if train_steps is None:
            if self.task is None:
                raise SettingError("train_steps", "is needed for a model and dataset (no bundled recipe)")
            train_steps = _bundled_tasks()[self.task].steps
        _positive(train_steps, "train_steps", most=MAX_TRAIN_STEPS)
        for name, value in (
            ("methods", methods),
            ("rounding", rounding),
            ("order", order),
            ("levels", levels),
            ("train_steps", train_steps),
        ):
            object.__setattr__(self, name, value)

    def to_json(self) -> dict:
        """The job's settings, resolved, as plain JSON values (levels as ``10%`` / ``3 tokens``)."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return out | {"methods": list(self.methods), "levels": [level.label for level in self.levels]}

    @classmethod
    def from_json(cls, data: dict) -> RoarJob:
        """A job from ``to_json``'s output (validated again)."""
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown job settings {', '.join(unknown)}")
        levels = tuple(Level.parse(label) for label in data.get("levels", ()))
        return cls(**(data | {"methods": tuple(data.get("methods", ())), "levels": levels}))

    @property
    def middle_levels(self) -> tuple[Level, ...]:
        """The levels each method retrains at (strictly between 0% and 100%)."""
        return tuple(level for level in self.levels if not (level.is_zero or level.is_full))

    @property
    def curve_levels(self) -> tuple[Level, ...]:
        """The x axis of the curves and of Eq. 3: 0%, the levels, and 100% when the job lists it."""
        return (ZERO, *self.middle_levels, *((FULL,) if FULL in self.levels else ()))

    @property
    def units(self) -> tuple[Unit, ...]:
        """Every unit once: per seed the shared 0% and 100% models, then method x seed x level."""
        seeds = range(self.seeds)
        shared = [Unit(SHARED, level, seed) for seed in seeds for level in (ZERO, FULL)]
        per_method = [
            Unit(method, level, seed) for method in self.methods for seed in seeds for level in self.middle_levels
        ]
        return (*shared, *per_method)

    def depends_on(self, unit: Unit) -> Unit | None:
        """The unit whose model explains the data of ``unit``: the previous level of the same
        method and seed (recursive) or the seed's 0% model (plain); None for the shared units."""
        if unit.method == SHARED:
            return None
        middle = self.middle_levels
        index = middle.index(unit.level)
        if not self.recursive or index == 0:
            return Unit(SHARED, ZERO, unit.seed)
        return Unit(unit.method, middle[index - 1], unit.seed)

    def estimate(
        self,
        seconds_per_step: float,
        seconds_per_explanation: Mapping[str, float] | float,
        *,
        seconds_per_prediction: float = 0.0,
        seconds_per_fill: float = 0.0,
        n_train: int | None = None,
        n_eval: int | None = None,
    ) -> Cost:
        """Counts and time on one worker from measured rates (``seconds_per_explanation`` per
        method, or one rate for all); the split sizes default to ``train_size``/``eval_size``."""
        n_train = self.train_size if n_train is None else n_train
        n_eval = self.eval_size if n_eval is None else n_eval
        if n_train is None or n_eval is None:
            raise ValueError("the estimate needs the number of training and evaluation examples")
        _positive(n_train, "n_train")
        _positive(n_eval, "n_eval")
        rates = (
            dict.fromkeys(self.methods, float(seconds_per_explanation))
            if isinstance(seconds_per_explanation, (int, float))
            else dict(seconds_per_explanation)
        )
        missing = [m for m in self.methods if m not in rates]
        if missing:
            raise ValueError(f"no seconds per explanation for {', '.join(missing)}")
        for name, value in (
            ("seconds_per_step", seconds_per_step),
            ("seconds_per_prediction", seconds_per_prediction),
            ("seconds_per_fill", seconds_per_fill),
            *((f"seconds per explanation of {m}", rates[m]) for m in self.methods),
        ):
            if not value >= 0:
                raise ValueError(f"{name} must be at least 0, got {value!r}")
        examples = n_train + n_eval
        passes = len(self.middle_levels) if self.recursive else 1
        explanations = {m: examples * self.seeds * passes for m in self.methods}
        fills = 0
        if self.removal == "mlm":  # engine.roar.unit: every view with a removed word is filled
            levels = len(self.middle_levels)
            before = len(self.methods) * (levels - 1) if self.recursive else 0  # the previous level's views, explained
            fills = examples * self.seeds * (len(self.methods) * levels + 1 + before)  # + 1: the shared 100% unit
        retrains = len(self.units)
        predictions = retrains * n_eval
        steps = retrains * self.train_steps
        seconds = (
            steps * seconds_per_step
            + sum(count * rates[m] for m, count in explanations.items())
            + fills * seconds_per_fill
            + predictions * seconds_per_prediction
        )
        return Cost(retrains, steps, explanations, fills, predictions, seconds)
