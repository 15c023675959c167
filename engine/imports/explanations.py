"""Whole explanations in an imported file: an ``explanation/1`` record (what
``api.explain(...).to_json()`` writes) or the summary ``python -m cli explain --json`` prints.

Before their attributions are read, both are checked by ``engine.bundles.read_explanation``, the
one check ``api.ExplanationResult.from_json`` and ``python -m cli open`` (through a bundle) make:
attributions of the example's own words, a prediction of the record's classes that its head could
give. A file that names the model it was made with and is imported for another gets a note
(``model_notes``), which the command line prints as a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.model_refs import split_ref
from engine.bundles import EXPLANATION_SCHEMA
from engine.imports.records import BadFile

if TYPE_CHECKING:
    from core.types import Example
    from engine.explain import Explanation
    from engine.imports.records import Imported

SUMMARY = "explain --json summary"
_ERRORS = (KeyError, TypeError, IndexError, AttributeError, ValueError, OverflowError, RecursionError)


def checked_example(document: Mapping[str, Any], name: str) -> Example:
    """The example of a session bundle, an ``explanation/1`` record or an ``explain --json``
    summary, once the whole record passed the check ``open`` and ``from_json`` make."""
    from engine.bundles import BUNDLE_SCHEMA, check_bundle

    if document.get("schema") == BUNDLE_SCHEMA:
        try:
            return check_bundle(document, name).example
        except ValueError as error:
            raise BadFile(str(error)) from None
    return check_explanation(document, name, str(document.get("schema") or SUMMARY)).example


def check_explanation(document: Mapping[str, Any], name: str, kind: str = EXPLANATION_SCHEMA) -> Explanation:
    """The explanation ``document`` holds (an ``explanation/1`` record, or with ``kind`` ``SUMMARY``
    the summary ``explain --json`` prints), checked as ``ExplanationResult.from_json`` checks it;
    else a ``BadFile`` naming ``name`` and what is wrong."""
    from engine.bundles import read_explanation

    try:
        record = summary_record(document) if kind == SUMMARY else document
        label_names = tuple(str(label) for label in record["label_names"])
        return read_explanation(record, label_names)
    except _ERRORS as error:
        raise BadFile(f"{name}: not a valid {kind} file ({type(error).__name__}: {error})") from None


def is_summary(document: Any) -> bool:
    """Whether ``document`` is the summary ``python -m cli explain --json`` prints: no schema, the
    example's words and an ``attributions`` object of records (not a record of a method named
    "attributions")."""
    if not isinstance(document, Mapping):
        return False
    found = document.get("attributions")
    return "schema" not in document and "words" in document and isinstance(found, dict) and "schema" not in found


def summary_record(document: Mapping[str, Any]) -> dict[str, Any]:
    """The ``explanation/1`` record of an ``explain --json`` summary: its ``words`` and
    ``segment_ids`` made the record's example (id ``cli``, as ``explain`` names it)."""
    from core.types import Example

    words = document["words"]
    if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
        raise TypeError("words must be a list of strings")
    example = Example(segments=segments_of(words, document.get("segment_ids")), id="cli")
    return {**document, "example": example.to_json()}


def segments_of(words: Sequence[str], segment_ids: Any) -> tuple[tuple[str, ...], ...]:
    """The texts of ``words`` split by ``segment_ids`` (0 for the first text's words, then 1 for
    the second's; None: one text); a ``ValueError`` where they do not split the words so."""
    segment_ids = [0] * len(words) if segment_ids is None else segment_ids
    if not isinstance(segment_ids, list) or len(segment_ids) != len(words):
        raise ValueError(f"segment_ids must be one per word ({len(words)})")
    if any(isinstance(s, bool) or s not in (0, 1) for s in segment_ids) or segment_ids != sorted(segment_ids):
        raise ValueError("segment_ids must be 0 for the first text's words, then 1 for the second's")
    segments = [tuple(w for w, s in zip(words, segment_ids, strict=True) if s == k) for k in (0, 1)]
    return tuple(segments) if segments[1] else (segments[0],)


def model_notes(records: Sequence[Imported], model: str, name: str) -> tuple[str, ...]:
    """One line per model the file says it was made with (``model`` in an ``explanation/1``,
    a session bundle or an ``explain --json`` summary) that is not ``model``, the model it is
    imported for."""
    named = dict.fromkeys(str(r.extras["model"]) for r in records if r.extras.get("model") is not None)
    return tuple(
        f"{name} was made with the model {other!r:.100}, not {model!r:.100}: its scores are stored as that model's"
        for other in named
        if not same_model(other, model)
    )


def same_model(named: str, model: str) -> bool:
    """Whether a file's model name and the model imported for are the same: equal once an app
    reference's marks are cut (``core.model_refs``), or the same folder."""
    first, second = split_ref(named)[0], split_ref(model)[0]
    if first == second:
        return True
    try:
        paths = Path(first), Path(second)
        return all(p.is_dir() for p in paths) and paths[0].resolve() == paths[1].resolve()
    except (OSError, ValueError):  # a name no file system takes (a NUL byte, too long)
        return False
