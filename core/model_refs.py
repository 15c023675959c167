"""The app's model references: a model's name with the head-type override and the scorer's
autocast it is explained under ("minilm-sst2 [head: multi_label] [autocast: bfloat16]"), so that
every cache keyed by the model also keys by them, and every file that names a model can be
matched to the model it is imported for."""

from __future__ import annotations

import re

from core.types import AUTOCAST_TYPES, HEAD_TYPES

_MARKS = re.compile(
    rf"^(?P<name>.*?)(?: \[head: (?P<head>{'|'.join(HEAD_TYPES)})\])?"
    rf"(?: \[autocast: (?P<autocast>{'|'.join(AUTOCAST_TYPES)})\])?$",
    re.DOTALL,  # a name read from a file may hold any character
)


def model_ref(name: str, head_type: str | None, autocast: str | None = None) -> str:
    """The reference of ``name`` explained with the head ``head_type`` (None: the detected one),
    its perturbations scored under ``autocast`` (None: float32)."""
    head = f" [head: {head_type}]" if head_type is not None else ""
    return f"{name}{head}" + (f" [autocast: {autocast}]" if autocast is not None else "")


def _ref_parts(ref: str) -> dict[str, str | None]:
    found = _MARKS.match(ref.strip())
    assert found is not None  # every part after the name is optional
    return found.groupdict()


def split_ref(ref: str) -> tuple[str, str | None]:
    """(model name, head-type override or None) of a reference made by ``model_ref``; a plain
    name is its own reference."""
    parts = _ref_parts(ref)
    return str(parts["name"]), parts["head"]


def ref_autocast(ref: str) -> str | None:
    """The scorer's autocast type a reference made by ``model_ref`` names (None: float32)."""
    return _ref_parts(ref)["autocast"]
