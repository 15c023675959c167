"""``core.params``: what a command line or form string becomes, and what is refused."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest

from core.params import param, params_from, whole_number


@dataclass(frozen=True)
class Knobs:
    steps: int = param(3, "steps", min=1, max=1000)
    scale: float = param(0.5, "scale", min=0.0)
    signed: bool = param(False, "signed")
    removal: str = param("empty", "removal", choices=("empty", "mask"))


@pytest.mark.parametrize(
    "values, expected",
    [
        ({"steps": "7"}, Knobs(steps=7)),
        ({"steps": "+7"}, Knobs(steps=7)),
        ({"scale": "1e-3"}, Knobs(scale=0.001)),
        ({"scale": ".25"}, Knobs(scale=0.25)),
        ({"scale": "2."}, Knobs(scale=2.0)),
        ({"signed": "Yes", "removal": "mask"}, Knobs(signed=True, removal="mask")),
        ({"steps": 9, "scale": 0.0}, Knobs(steps=9, scale=0.0)),
        # Python objects (the API's params): numpy's numbers, a whole float for an int, an int for a float
        ({"steps": np.int64(9), "scale": np.float32(0.25), "signed": np.bool_(True)}, Knobs(9, 0.25, True)),
        ({"steps": 8.0, "scale": 2}, Knobs(steps=8, scale=2.0)),
    ],
)
def test_strings_become_typed_values(values: dict, expected: Knobs) -> None:
    assert params_from(Knobs, values) == expected


@pytest.mark.parametrize(
    "values, message",
    [
        ({"steps": "\u0663"}, "steps expects a whole number"),  # Arabic-Indic three: int() reads it
        ({"steps": "1_0"}, "steps expects a whole number"),  # int() reads 10
        ({"steps": " 5 "}, "steps expects a whole number"),  # int() strips spaces
        ({"steps": "5.0"}, "steps expects a whole number"),
        ({"steps": "9" * 5000}, "steps expects a whole number"),  # int() raises its own digit-limit error
        ({"scale": "nan"}, "scale expects a number"),
        ({"scale": "1_0.5"}, "scale expects a number"),
        ({"scale": "\u00b2"}, "scale expects a number"),
        ({"scale": "1e999"}, "is not a finite number"),  # overflows to inf
        ({"steps": "0"}, "outside [1, 1000]"),
        ({"scale": "-1"}, "outside [0.0, None]"),
        ({"signed": "maybe"}, "expects true or false"),
        ({"removal": "zero"}, "is not one of"),
        ({"bogus": "1"}, "unknown parameter 'bogus'"),
        # Python objects of the wrong kind: refused in one line, not deep inside a method
        ({"steps": 8.5}, "steps expects a whole number, got 8.5 (float)"),
        ({"steps": None}, "steps expects a whole number, got None (NoneType)"),
        ({"steps": True}, "steps expects a whole number, got True (bool)"),
        ({"scale": [1]}, "scale expects a number, got [1] (list)"),
        ({"signed": 1}, "signed expects true or false, got 1 (int)"),
    ],
)
def test_loose_or_wrong_values_are_refused(values: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        params_from(Knobs, values)


def test_a_renamed_choice_is_read_under_its_old_name() -> None:
    """Runs and links made before ``paper000`` / ``paper001`` became ``pham2022`` / ``madsen2022``."""
    from metrics.faithfulness import CurveParams

    assert params_from(CurveParams, {"convention": "paper000"}).convention == "pham2022"
    assert params_from(CurveParams, {"convention": "pham2022"}).convention == "pham2022"
    with pytest.raises(ValueError, match="convention='paper001' is not one of"):
        params_from(CurveParams, {"convention": "paper001"})  # the old name of a ROAR rule, not a convention


@pytest.mark.parametrize(
    "value, minimum, maximum, expected",
    [(3, 0, None, 3), (np.int32(7), 1, 10, 7), (0, 0, 5, 0)],
)
def test_whole_numbers_are_read_as_ints(value, minimum, maximum, expected) -> None:
    found = whole_number("--seed", value, minimum, maximum)
    assert found == expected and type(found) is int


@pytest.mark.parametrize(
    "value, message",
    [
        ("1", "--seed must be a whole number from 0 to 10, got '1'"),
        (True, "--seed must be a whole number from 0 to 10, got True"),
        (2.0, "--seed must be a whole number from 0 to 10, got 2.0"),
        (-1, "--seed must be a whole number from 0 to 10, got -1"),
        (11, "--seed must be a whole number from 0 to 10, got 11"),
    ],
)
def test_anything_else_is_refused_as_a_whole_number(value, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        whole_number("--seed", value, 0, 10)


def test_every_methods_seed_is_bounded_as_a_runs_seed() -> None:
    """A seed of -1 failed inside numpy ("expected non-negative integer") and one of 2**33 inside
    torch, after the form and ``--param`` had taken them; every seed field is now 0..MAX_SEED."""
    import dataclasses

    import explainers
    from core.params import MAX_SEED
    from experiments.attacks.substitution import SubstitutionAttackParams

    classes = {spec.params_cls for spec in explainers.REGISTRY.values()} | {SubstitutionAttackParams}
    seeded = [cls for cls in classes if "seed" in {f.name for f in dataclasses.fields(cls)}]
    assert len(seeded) >= 9
    for cls in seeded:
        bounds = {f.name: f.metadata for f in dataclasses.fields(cls)}["seed"]
        assert (bounds.get("min"), bounds.get("max")) == (0, MAX_SEED), cls.__name__
        with pytest.raises(ValueError, match=r"seed=-1 is outside \[0, 2147483647\]"):
            params_from(cls, {"seed": "-1"})
        assert params_from(cls, {"seed": MAX_SEED}).seed == MAX_SEED
