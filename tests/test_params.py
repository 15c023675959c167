"""``core.params``: what a command line or form string becomes, and what is refused."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from core.params import param, params_from


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
    ],
)
def test_loose_or_wrong_values_are_refused(values: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        params_from(Knobs, values)


def test_a_renamed_choice_is_read_under_its_old_name() -> None:
    """Runs and links made before ``paper000`` / ``paper001`` became ``pham2022`` / ``madsen2022``."""
    from metrics.faithfulness import CurveParams

    assert params_from(CurveParams, {"convention": "paper000"}).convention == "pham2022"
    assert params_from(CurveParams, {"convention": "pham2022"}).convention == "pham2022"
    with pytest.raises(ValueError, match="convention='paper001' is not one of"):
        params_from(CurveParams, {"convention": "paper001"})  # the old name of a ROAR rule, not a convention
