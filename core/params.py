"""Parameter dataclasses shared by explainers, metrics and experiments.

A method's parameters are a frozen dataclass whose fields are declared with ``param``: the
field metadata (``help``, ``choices``, ``min``, ``max``) drives the UI's generated forms and the
command line's ``--param`` parsing, and ``params_from`` builds and validates an instance.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from dataclasses import dataclass, field
from typing import Any


def param(
    default: Any, help: str, *, choices: tuple | None = None, min: float | None = None, max: float | None = None
) -> Any:
    """A dataclass field carrying its UI/CLI description."""
    meta = {"help": help, "choices": choices, "min": min, "max": max}
    return field(default=default, metadata={k: v for k, v in meta.items() if v is not None})


# The largest seed anything takes: the catalogue keeps a run's seed as a 32-bit integer, and a
# method's seed field is bounded by it too (numpy and torch take it; a form shows the range).
MAX_SEED = 2**31 - 1


def seed_param(help: str = "random seed") -> Any:
    """A method's seed field: a whole number from 0 to ``MAX_SEED``, 0 by default."""
    return param(0, help, min=0, max=MAX_SEED)


class SettingError(ValueError):
    """A refused setting of a run or a job, worded with the setting's name as the code calls it
    (``RunSpec``, ``RoarJob``, ``api.run``: ``chunk_size must be ...``); ``on_command_line``
    words it with the command line's option instead (``--chunk-size must be ...``)."""

    def __init__(self, setting: str, problem: str, option: str | None = None) -> None:
        super().__init__(f"{setting} {problem}")
        self.problem = problem
        self.option = option or f"--{setting.replace('_', '-')}"

    def on_command_line(self) -> str:
        return f"{self.option} {self.problem}"


# What ``--param`` and a form accept as a number: ASCII digits in plain notation, so that Python's
# looser readings ("\u0663" as 3, "1_0" as 10, "nan", surrounding spaces) are refused.
_NUMBER_SYNTAX = {
    int: re.compile(r"[+-]?[0-9]{1,18}"),
    float: re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,3})?"),
}


# Choice values renamed after runs were stored with them: the old name is still read (a command
# line, a link, a stored run or report) as the new one, and a run key hashes the old name
# (``engine.runs.records.run_key``), so a run stored before the rename keeps its id.
RENAMED_CHOICES = {"paper000": "pham2022", "paper001": "madsen2022"}
RENAMED_FIELDS = ("convention", "rounding")  # the settings whose values were renamed


def current_name(value: Any) -> Any:
    """The current name of a renamed choice value; any other value unchanged."""
    return RENAMED_CHOICES.get(value, value) if isinstance(value, str) else value


@dataclass(frozen=True)
class NoParams:
    pass


def params_from(params_cls: type, values: dict[str, Any]) -> Any:
    """Build a params dataclass from values (strings from the command line are converted)."""
    fields = {f.name: f for f in dataclasses.fields(params_cls)}
    converted = {}
    for name, value in values.items():
        if name not in fields:
            raise ValueError(
                f"unknown parameter {name!r} for {params_cls.__name__}; known: {', '.join(fields) or 'none'}"
            )
        if name in RENAMED_FIELDS and current_name(value) in fields[name].metadata.get("choices", ()):
            value = current_name(value)
        converted[name] = _convert(fields[name], value)
    params = params_cls(**converted)
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        meta = f.metadata
        if "choices" in meta and value not in meta["choices"]:
            raise ValueError(f"{f.name}={value!r} is not one of {meta['choices']}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{f.name}={value!r} is not a finite number")
        if "min" in meta and value < meta["min"] or "max" in meta and value > meta["max"]:
            raise ValueError(f"{f.name}={value!r} is outside [{meta.get('min')}, {meta.get('max')}]")
    return params


def _convert(f: dataclasses.Field, value: Any) -> Any:
    kind = type(f.default)
    if not isinstance(value, str):
        return _of_kind(f.name, kind, value)
    if kind is bool:
        if value.lower() in {"1", "true", "yes", "on"}:
            return True
        if value.lower() in {"0", "false", "no", "off"}:
            return False
        raise ValueError(f"{f.name} expects true or false, got {value!r}")
    if kind in (int, float):
        if not _NUMBER_SYNTAX[kind].fullmatch(value):
            wanted = "a whole number" if kind is int else "a number"
            raise ValueError(f"{f.name} expects {wanted} in plain ASCII digits, got {value!r:.40}")
        return kind(value)
    return value


def _of_kind(name: str, kind: type, value: Any) -> Any:
    """A value given as a Python object (the API's ``params``, a form's number) as its field's
    type: a whole number for an int field (numpy's too; 8.0 is 8), any real number for a float
    field, True or False for a bool field; anything else for those is refused in one line."""
    is_bool = isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b"
    if kind is bool and is_bool:
        return bool(value)
    if kind is int and not is_bool and isinstance(value, numbers.Real) and float(value).is_integer():
        return int(value)
    if kind is float and not is_bool and isinstance(value, numbers.Real):
        return float(value)
    if kind not in (bool, int, float):
        return value
    wanted = {bool: "true or false", int: "a whole number", float: "a number"}[kind]
    raise ValueError(f"{name} expects {wanted}, got {value!r:.40} ({type(value).__name__})")


def whole_number(name: str, value: Any, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` as an int when it is a whole number (numpy's too; True and False are not) from
    ``minimum`` to ``maximum``; else a one-line ``ValueError`` naming ``name``."""
    is_whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if is_whole and minimum <= int(value) and (maximum is None or int(value) <= maximum):
        return int(value)
    bounds = f"from {minimum:,} to {maximum:,}" if maximum is not None else f"of {minimum:,} or more"
    raise ValueError(f"{name} must be a whole number {bounds}, got {value!r:.40}")
