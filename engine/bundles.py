"""Session bundles (issue 19 item 5): one zip file that holds a view of the heatmap page, so
another user sees the same view without recomputing anything.

Layout::

    bundle.json      schema "bundle/1": the selection (model, dataset, split, index, the typed
                     text, target, masked LM, methods, view settings), each method's parameters,
                     the example as the model saw it (example/1), the prediction, the class
                     explained and every attribution (attribution/1, lossless), the methods'
                     errors, the code version and the creation time
    figures/...      the heatmap as HTML, LaTeX and (with a browser) PNG, for papers and slides

Reading is parsing only: the zip is opened from memory, only ``bundle.json`` is read (never
extracted to disk), its size is checked against ``MAX_JSON_BYTES`` both in the zip's directory and
while reading (a zip can lie about sizes), the bundle against ``MAX_BUNDLE_BYTES`` and
``MAX_MEMBERS``; the member count and the central directory's size are read from the zip's end
record before ``zipfile`` parses the directory, so a zip of a million empty members costs
nothing. Errors are one-line ``ValueError``s.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import lzma
import math
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.types import Attribution, Example, int_field

if TYPE_CHECKING:
    from engine.explain import Explanation

BUNDLE_SCHEMA = "bundle/1"
EXPLANATION_SCHEMA = "explanation/1"  # one explanation (api.ExplanationResult.to_json)
MAX_BUNDLE_BYTES = 32 * 1024 * 1024
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_MEMBERS = 64
# The most words a bundle may say were cut to fit the model (``dropped_words``): the words of a
# document past the model's length (core.encoding.cut_to_fit), so at most a document's words. A
# million words is a long book; the longest document of the bundled datasets has 1,392.
MAX_DROPPED_WORDS = 1_000_000
MAX_DIRECTORY_BYTES = MAX_MEMBERS * 1024  # a bundle's member names are short
_END_RECORD = b"PK\x05\x06"  # the end of central directory record (PKWARE APPNOTE 4.3.16)
_ZIP64_LOCATOR = b"PK\x06\x07"
# What reading a damaged member raises: damaged data (zlib, lzma; bz2 raises OSError), a
# compression method zipfile lacks (NotImplementedError), an encrypted member (RuntimeError).
_MEMBER_ERRORS = (zipfile.BadZipFile, OSError, EOFError, zlib.error, lzma.LZMAError, NotImplementedError, RuntimeError)
SELECTION_KEYS = ("dataset", "split", "index", "text", "text_b", "target", "mlm", "methods", "view", "shared_scale")


@dataclass(frozen=True)
class Bundle:
    """A view of the heatmap page: what was selected and everything computed for it."""

    model: str
    label_names: tuple[str, ...]
    selection: dict[str, Any]
    params: dict[str, dict[str, Any]]
    example: Example
    probabilities: tuple[float, ...]
    predicted: int
    target: int
    attributions: dict[str, Attribution]
    errors: dict[str, str] = field(default_factory=dict)
    dropped_words: int = 0
    created: str = ""
    code_version: str = ""
    figures: tuple[str, ...] = ()
    head: str = "single_label"  # core.heads: what ``probabilities`` are (scores for regression)

    def to_json(self) -> dict[str, Any]:
        from core.types import encode_json

        return {
            "schema": BUNDLE_SCHEMA,
            "model": self.model,
            "label_names": list(self.label_names),
            "selection": {k: self.selection.get(k) for k in SELECTION_KEYS},
            "params": encode_json(self.params),
            "example": self.example.to_json(),
            "probabilities": list(self.probabilities),
            "head": self.head,
            "predicted": self.predicted,
            "target": self.target,
            "attributions": {method: a.to_json() for method, a in self.attributions.items()},
            "errors": dict(self.errors),
            "dropped_words": self.dropped_words,
            "created": self.created or dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "code_version": self.code_version,
        }


def write_bundle(bundle: Bundle, figures: Mapping[str, bytes] | None = None) -> bytes:
    """The bundle as zip bytes: ``bundle.json`` and each figure under ``figures/``."""
    payload = json.dumps(bundle.to_json(), indent=2, ensure_ascii=False, allow_nan=False)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bundle.json", payload)
        for name, data in (figures or {}).items():
            archive.writestr(f"figures/{name}", data)
    return buffer.getvalue()


def read_bundle(data: bytes, name: str = "bundle") -> Bundle:
    """The bundle in zip bytes (or in a bare ``bundle.json``)."""
    if len(data) > MAX_BUNDLE_BYTES:
        raise ValueError(f"{name} is {len(data):,} bytes, more than the {MAX_BUNDLE_BYTES:,} allowed")
    figures: tuple[str, ...] = ()
    if data[:2] == b"PK":
        text, figures = bundle_json(data, name)
    else:
        text = data
    from engine.imports.records import parse_json

    try:
        document = parse_json(text, name)
    except ValueError as error:
        if data[:2] == b"PK":
            raise
        detail = str(error).removeprefix(f"{name} ")
        raise ValueError(f"{name} is neither a session bundle (a zip) nor a bundle.json: it {detail}") from None
    return check_bundle(document, name, figures)


def check_bundle(document: Any, name: str = "bundle", figures: tuple[str, ...] = ()) -> Bundle:
    """The one check of a parsed ``bundle.json``, for ``open`` (``read_bundle``) and ``import``
    (``engine.imports`` reads a bundle's attributions only once it passes): the bundle, else a
    one-line ``ValueError`` naming ``name`` and what is wrong."""
    try:
        return _bundle(document, figures)
    except (KeyError, TypeError, IndexError, AttributeError, ValueError, OverflowError, RecursionError) as error:
        raise ValueError(f"{name}: not a valid {BUNDLE_SCHEMA} file ({type(error).__name__}: {error})") from None


def _directory_problem(data: bytes) -> str | None:
    """Why the zip's directory is too large to parse, from its end record (found as ``zipfile``
    finds it: at the very end, else the last signature within a comment's reach); None if small
    or if there is no end record (``zipfile`` then says the file is not a zip)."""
    start = len(data) - 22
    if not (data[start : start + 4] == _END_RECORD and data[-2:] == b"\0\0"):
        start = data.rfind(_END_RECORD, max(0, len(data) - 22 - 65535))
    if start < 0 or len(data) - start < 22:
        return None
    if data[max(0, start - 20) : start - 16] == _ZIP64_LOCATOR:
        return "uses zip64 records, which no bundle needs"
    members = int.from_bytes(data[start + 10 : start + 12], "little")
    directory = int.from_bytes(data[start + 12 : start + 16], "little")
    if members > MAX_MEMBERS:
        return f"holds {members:,} files, more than the {MAX_MEMBERS} a bundle has"
    if directory > MAX_DIRECTORY_BYTES:
        return f"has a {directory:,}-byte file directory, more than the {MAX_DIRECTORY_BYTES:,} a bundle has"
    return None


def bundle_json(data: bytes, name: str) -> tuple[bytes, tuple[str, ...]]:
    """The ``bundle.json`` bytes of a session bundle's zip and the names of its figures."""
    problem = _directory_problem(data)
    if problem:
        raise ValueError(f"{name} {problem}")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise ValueError(f"{name} is not a readable zip file ({error})") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise ValueError(f"{name} holds {len(members)} files, more than the {MAX_MEMBERS} a bundle has")
        found = [m for m in members if m.filename == "bundle.json"]
        if not found:
            raise ValueError(f"{name} has no bundle.json (not a session bundle)")
        if found[0].file_size > MAX_JSON_BYTES:
            raise ValueError(f"{name}: bundle.json is {found[0].file_size:,} bytes, more than allowed")
        try:
            with archive.open(found[0]) as handle:
                text = handle.read(MAX_JSON_BYTES + 1)
        except _MEMBER_ERRORS as error:
            raise ValueError(f"{name}: bundle.json cannot be read ({error})") from None
        if len(text) > MAX_JSON_BYTES:
            raise ValueError(f"{name}: bundle.json unpacks to more than {MAX_JSON_BYTES:,} bytes")
        figures = tuple(m.filename.removeprefix("figures/") for m in members if m.filename.startswith("figures/"))
    return text, figures


def _bundle(document: Any, figures: tuple[str, ...]) -> Bundle:
    from core.types import decode_json, read_record

    record = read_record(document, BUNDLE_SCHEMA)
    selection = _selection(record["selection"])
    label_names = tuple(str(n) for n in record["label_names"])
    explanation = read_explanation(record, label_names)
    if selection["target"] is not None and not 0 <= selection["target"] < len(label_names):
        raise ValueError(f"selection target must be a class 0 to {len(label_names) - 1}, got {selection['target']}")
    return Bundle(
        model=str(record["model"]),
        label_names=label_names,
        selection=selection,
        params=decode_json(record["params"]),
        example=explanation.example,
        probabilities=explanation.prediction.probabilities,
        predicted=explanation.prediction.predicted,
        target=explanation.target,
        attributions=explanation.attributions,
        errors=explanation.errors,
        dropped_words=explanation.dropped_words,
        created=str(record.get("created", "")),
        code_version=str(record.get("code_version", "")),
        figures=figures,
        head=explanation.prediction.head,
    )


def read_explanation(record: Mapping[str, Any], label_names: tuple[str, ...]) -> Explanation:
    """The explanation a stored record holds (a session bundle's, or an ``ExplanationResult``'s
    JSON), checked as user input: attributions of the example's own words and of its target; a
    prediction of the model's classes that its head could give; at most ``MAX_DROPPED_WORDS`` words
    cut."""
    from core.heads import KINDS
    from core.types import decode_json
    from engine.explain import Explanation, Prediction

    example = Example.from_json(record["example"])
    attributions = {
        str(k): _attribution(str(k), v, len(example.words)) for k, v in dict(record["attributions"]).items()
    }
    for method, attribution in attributions.items():
        if attribution.words != example.words:
            raise ValueError(f"the {method} attribution scores other words than the example")
    probabilities = tuple(_finite(decode_json(p), "probabilities") for p in record["probabilities"])
    target, predicted = int_field(record["target"], "target"), int_field(record["predicted"], "predicted")
    if len(probabilities) != len(label_names):
        raise ValueError(f"{len(probabilities)} probabilities for the model's {len(label_names)} classes")
    for name, value in (("target", target), ("predicted", predicted)):
        if not 0 <= value < len(label_names):
            raise ValueError(f"{name} {value} is not one of the model's classes (0 to {len(label_names) - 1})")
    for method, attribution in attributions.items():  # one record explains one class
        if attribution.target is not None and attribution.target != target:
            raise ValueError(f"the {method} attribution explains class {attribution.target}, not the target {target}")
    head = str(record.get("head") or "single_label")  # records before the field were single-label
    if head not in KINDS:
        raise ValueError(f"unknown head {head!r} (one of {', '.join(KINDS)})")
    _check_outputs(probabilities, head)
    dropped_words = int_field(record.get("dropped_words") or 0, "dropped_words")
    if dropped_words < 0:
        raise ValueError(f"dropped_words must not be negative, got {dropped_words}")
    if dropped_words > MAX_DROPPED_WORDS:
        raise ValueError(
            f"dropped_words must be at most {MAX_DROPPED_WORDS:,} (the longest document explained), got {dropped_words}"
        )
    errors = {str(k): str(v) for k, v in dict(record.get("errors") or {}).items()}
    windows = tuple(_window(span, len(example.words)) for span in record.get("windows") or ())
    passes = int_field(record.get("forward_passes") or 0, "forward_passes")
    if passes < 0:
        raise ValueError(f"forward_passes must not be negative, got {passes}")
    prediction = Prediction(probabilities, predicted, head)
    return Explanation(example, prediction, target, attributions, dropped_words, errors, windows, passes)


def _window(span: Any, n_words: int) -> tuple[int, int]:
    """A sliding window's word range [start, end) within the example's ``n_words`` words."""
    start, end = (int_field(value, "a window's start and end") for value in span)
    if not 0 <= start < end <= n_words:
        raise ValueError(f"window {[start, end]} is not a range of the example's {n_words} words")
    return start, end


def _attribution(method: str, record: Any, n_words: int) -> Attribution:
    """The bundle's ``method`` attribution, its errors named by the method; each subword belongs to
    one of the example's ``n_words`` words, with one word id and one score where those are given."""
    try:
        attribution = Attribution.from_json(record)
    except ValueError as error:
        raise ValueError(f"{method}: {error}") from None
    subwords = attribution.subwords, attribution.subword_word_ids, attribution.subword_scores
    lengths = [len(part) for part in subwords if part is not None and len(part)]
    if len(set(lengths)) > 1:  # the subword view draws each subword's score over its word
        raise ValueError(f"{method}: subwords, subword_word_ids and subword_scores differ in length ({lengths})")
    outside = next((i for i in attribution.subword_word_ids if not 0 <= i < n_words), None)
    if outside is not None:
        raise ValueError(f"{method}: subword_word_ids must be word positions 0 to {n_words - 1}, got {outside}")
    return attribution


def _check_outputs(outputs: tuple[float, ...], head: str) -> None:
    """Refuse outputs the head cannot give: probabilities outside [0, 1], or a softmax's not
    summing to 1 (a multi-label head's sigmoids need not; a regression head's are raw scores)."""
    if head == "regression":
        return
    outside = next((p for p in outputs if not 0 <= p <= 1), None)
    if outside is not None:
        raise ValueError(f"probabilities must be between 0 and 1, got {outside}")
    if head == "single_label" and not math.isclose(sum(outputs), 1, abs_tol=1e-3):
        raise ValueError(f"the probabilities of a single-label head sum to 1, these to {sum(outputs):.6g}")


def _finite(value: Any, name: str) -> float:
    """``value`` as a finite float (JSON ``1e400`` reads as infinity, ``10**400`` overflows a float;
    ``write_bundle`` writes neither)."""
    try:
        number = float(value)
    except (OverflowError, TypeError, ValueError):
        raise ValueError(f"{name} must be finite numbers, got {value!r:.40}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite numbers, got {number}")
    return number


# What each selection key may hold (None: not set): the page puts these in its widgets.
_SELECTION_TYPES: dict[str, type | tuple[type, ...]] = {
    "dataset": str, "split": str, "index": int, "text": str, "text_b": str, "target": int, "mlm": str,
    "methods": list, "view": str, "shared_scale": bool,
}  # fmt: skip


def _selection(selection: Any) -> dict[str, Any]:
    """The bundle's selection, each key of ``SELECTION_KEYS`` of its type or None."""
    if not isinstance(selection, dict):
        raise TypeError("selection must be an object")
    chosen = {k: selection.get(k) for k in SELECTION_KEYS}
    for key, value in chosen.items():
        kind = _SELECTION_TYPES[key]
        wrong_bool = isinstance(value, bool) and kind is int  # JSON true is not an index
        if value is not None and (wrong_bool or not isinstance(value, kind)):
            raise TypeError(f"selection {key} must be a {getattr(kind, '__name__', kind)}, got {value!r:.40}")
    if chosen["methods"] is not None and not all(isinstance(m, str) for m in chosen["methods"]):
        raise TypeError("selection methods must be a list of method names")
    if chosen["index"] is not None and chosen["index"] < 0:
        raise ValueError(f"selection index must not be negative, got {chosen['index']}")
    if chosen["dataset"] and not chosen["split"]:
        raise ValueError(f"selection dataset {chosen['dataset']!r:.60} is given without its split")
    if chosen["split"] and not chosen["dataset"]:
        raise ValueError(f"selection split {chosen['split']!r:.60} is given without its dataset")
    return chosen
