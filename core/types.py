"""The two records everything else passes around, ``Example`` and ``Attribution``, and their
lossless JSON form (``to_json`` / ``from_json``; the schema is docs/attribution-schema.md)."""

from __future__ import annotations

import functools
import json
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Long work reports progress as (fraction done in [0, 1], message); the one callback shape for
# the engine, the command line's progress bar and the app's st.progress.
ProgressFn = Callable[[float, str], None]

# What a model's outputs mean (core/heads.py) and the types the scorer may autocast to
# (core/classifier.py); named here, without torch, for the command line's choices.
HEAD_TYPES = ("single_label", "multi_label", "regression")
AUTOCAST_TYPES = ("float16", "bfloat16")
# A multi-label head predicts the labels whose own probability reaches this (core/heads.py).
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class Example:
    """One input to explain: one or two segments of words, with optional gold label and rationales.

    ``rationales`` holds one 0/1 mask per annotator over the flat word list (``words``);
    ``rationale`` is the majority mask (or the only one). Both are empty when the data has none.
    """

    segments: tuple[tuple[str, ...], ...]
    label: int | None = None
    label_names: tuple[str, ...] = ()
    rationales: tuple[tuple[int, ...], ...] = ()
    rationale: tuple[int, ...] | None = None
    dataset: str = "text"
    split: str = ""
    id: str = ""

    def __post_init__(self) -> None:
        if not 1 <= len(self.segments) <= 2:
            raise ValueError(f"an example has one or two segments, got {len(self.segments)}")
        n = len(self.words)
        for mask in (*self.rationales, *((self.rationale,) if self.rationale is not None else ())):
            if len(mask) != n:
                raise ValueError(f"rationale mask of length {len(mask)} for {n} words in {self.id!r}")

    @functools.cached_property
    def words(self) -> tuple[str, ...]:
        # Cached (the example is frozen): the metrics read it once per variant.
        return tuple(w for segment in self.segments for w in segment)

    @property
    def segment_ids(self) -> tuple[int, ...]:
        return tuple(i for i, segment in enumerate(self.segments) for _ in segment)

    @property
    def is_pair(self) -> bool:
        return len(self.segments) == 2

    @property
    def has_rationale(self) -> bool:
        return self.rationale is not None or bool(self.rationales)

    @property
    def text(self) -> str:
        return " ".join(self.segments[0])

    @property
    def text_b(self) -> str | None:
        return " ".join(self.segments[1]) if self.is_pair else None

    @property
    def gold_name(self) -> str | None:
        if self.label is None or not self.label_names:
            return None
        return self.label_names[self.label]

    def to_json(self) -> dict[str, Any]:
        """The example as a JSON-ready dict (schema ``example/1``, docs/attribution-schema.md)."""
        return {
            "schema": EXAMPLE_SCHEMA,
            "segments": [list(segment) for segment in self.segments],
            "label": self.label,
            "label_names": list(self.label_names),
            "rationales": [list(mask) for mask in self.rationales],
            "rationale": None if self.rationale is None else list(self.rationale),
            "dataset": self.dataset,
            "split": self.split,
            "id": self.id,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> Example:
        """The example written by ``to_json`` (a dict, or its JSON text)."""
        record = read_record(data, EXAMPLE_SCHEMA)
        rationale = record["rationale"]
        return cls(
            segments=tuple(tuple(segment) for segment in record["segments"]),
            label=record["label"],
            label_names=tuple(record["label_names"]),
            rationales=tuple(tuple(int_field(v, "example rationales") for v in mask) for mask in record["rationales"]),
            rationale=None if rationale is None else tuple(int_field(v, "example rationale") for v in rationale),
            dataset=record["dataset"],
            split=record["split"],
            id=record["id"],
        )


@dataclass(frozen=True)
class Attribution:
    """A frozen attribution record: signed, unnormalised word scores for one target class.

    ``subword_scores`` is set where the method is native to subwords (gradients, attention);
    ``extras`` carries method-specific details (convergence delta, fill-in tables, traces).
    """

    method: str
    example_id: str
    target: int
    words: tuple[str, ...]
    scores: np.ndarray  # (n_words,) float32
    params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    subwords: tuple[str, ...] = ()
    subword_scores: np.ndarray | None = None  # (n_subwords,) float32, specials excluded
    subword_word_ids: tuple[int, ...] = ()
    runtime_s: float = 0.0
    forward_passes: int = 0
    backward_passes: int = 0
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        scores = np.asarray(self.scores, dtype=np.float32)
        if scores.shape != (len(self.words),):
            raise ValueError(
                f"{self.method}: {scores.shape[0] if scores.ndim else 0} scores for {len(self.words)} words"
            )
        scores.setflags(write=False)
        object.__setattr__(self, "scores", scores)
        if self.subword_scores is not None:
            sub = np.asarray(self.subword_scores, dtype=np.float32)
            sub.setflags(write=False)
            object.__setattr__(self, "subword_scores", sub)

    def __eq__(self, other: object) -> bool:
        """The same record: every field equal, the scores value by value (the generated ``==``
        compared numpy arrays, which raises)."""
        if not isinstance(other, Attribution):
            return NotImplemented
        return self.to_json() == other.to_json()

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON-ready dict (schema ``attribution/1``, docs/attribution-schema.md);
        ``Attribution.from_json`` gives back an equal record, float32 scores bit for bit."""
        return {
            "schema": ATTRIBUTION_SCHEMA,
            "method": self.method,
            "example_id": self.example_id,
            "target": self.target,
            "words": list(self.words),
            "scores": _float_list(self.scores),
            "subwords": list(self.subwords),
            "subword_scores": None if self.subword_scores is None else _float_list(self.subword_scores),
            "subword_word_ids": list(self.subword_word_ids),
            "params": encode_json(self.params),
            "seed": self.seed,
            "runtime_s": encode_json(self.runtime_s),
            "forward_passes": self.forward_passes,
            "backward_passes": self.backward_passes,
            "extras": encode_json(self.extras),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> Attribution:
        """The record written by ``to_json`` (a dict, or its JSON text)."""
        record = read_record(data, ATTRIBUTION_SCHEMA)
        subword_scores = record.get("subword_scores")
        return cls(
            method=record["method"],
            example_id=record["example_id"],
            target=int_field(record["target"], "attribution target"),
            words=tuple(record["words"]),
            scores=_float32_array(record["scores"], "attribution scores"),
            params=decode_json(record["params"]),
            seed=record["seed"],
            subwords=tuple(record["subwords"]),
            subword_scores=None if subword_scores is None else _float32_array(subword_scores, "subword_scores"),
            subword_word_ids=tuple(int_field(i, "subword_word_ids") for i in record["subword_word_ids"]),
            runtime_s=decode_json(record["runtime_s"]),
            forward_passes=int_field(record["forward_passes"], "forward_passes"),
            backward_passes=int_field(record["backward_passes"], "backward_passes"),
            extras=decode_json(record["extras"]),
        )


# --------------------------------------------------------------------------- JSON


def shared_words(rows: Sequence[Attribution]) -> int:
    """How many first words every row has, the same words in the same places: the words two
    models' rows of one text can be compared on where one model cut the text shorter (a sentence
    pair is cut in its longer segment, so the rows part where the cuts differ)."""
    n = min((len(row.words) for row in rows), default=0)
    for i in range(n):
        if any(row.words[i] != rows[0].words[i] for row in rows):
            return i
    return n


ATTRIBUTION_SCHEMA = "attribution/1"
EXAMPLE_SCHEMA = "example/1"
FLOAT32_MAX = float(np.finfo(np.float32).max)  # the largest finite float32, 3.4e38
_NON_FINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
# Far deeper than any record this project writes, far shallower than Python's recursion limit.
MAX_JSON_DEPTH = 64
# The dtypes of the arrays and numbers ``encode_json`` writes (``dtype.str``), either byte order.
_ARRAY_DTYPES = frozenset(
    name
    for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
              np.float16, np.float32, np.float64, np.longdouble)
    for name in (np.dtype(t).newbyteorder("<").str, np.dtype(t).newbyteorder(">").str)
)  # fmt: skip


def encode_json(value: Any) -> Any:
    """``value`` as plain JSON (no NaN literals), losslessly: what JSON lacks is written as an
    object with one ``$``-key (docs/attribution-schema.md): ``{"$float": "nan"|"inf"|"-inf"}``,
    ``{"$tuple": [...]}``, ``{"$ndarray": {"dtype", "shape", "data"}}``, ``{"$numpy": [dtype,
    value]}`` for a numpy scalar, ``{"$dict": [[key, value], ...]}`` for a dict whose keys are not
    all strings or that has a key starting with ``$``. ``decode_json`` inverts it."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"cannot write a numpy array of dtype {value.dtype} as JSON")
        data = [encode_json(v) for v in value.ravel().tolist()]
        return {"$ndarray": {"dtype": value.dtype.str, "shape": list(value.shape), "data": data}}
    if isinstance(value, np.generic):  # before the Python types: np.float64 is a float
        if value.dtype.kind not in "biufU":
            raise TypeError(f"cannot write a numpy scalar of dtype {value.dtype} as JSON")
        return {"$numpy": [value.dtype.str, encode_json(value.item())]}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, tuple):
        return {"$tuple": [encode_json(v) for v in value]}
    if isinstance(value, list):
        return [encode_json(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode_json(v) for k, v in value.items()}
        return {"$dict": [[encode_json(k), encode_json(v)] for k, v in value.items()]}
    raise TypeError(f"cannot write a {type(value).__name__} as JSON: {value!r:.80}")


def decode_json(value: Any) -> Any:
    """The value ``encode_json`` wrote. A file may hold anything, so what ``encode_json`` never
    writes is a ``ValueError``: an unknown tag, an array dtype other than bool, integer or float,
    a shape that does not match the data, nesting deeper than ``MAX_JSON_DEPTH``."""
    return _decode(value, 0)


def _decode(value: Any, depth: int) -> Any:
    """``decode_json`` of a value ``depth`` levels down in the file."""
    if depth > MAX_JSON_DEPTH:  # each level is a Python frame: refused long before RecursionError
        raise ValueError(f"JSON value nested too deeply (more than {MAX_JSON_DEPTH} levels)")
    depth += 1
    if isinstance(value, list):
        return [_decode(v, depth) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == "$float":
            if not isinstance(inner, str) or inner not in _NON_FINITE:
                raise ValueError(f"$float must be one of {', '.join(_NON_FINITE)}, got {inner!r:.40}")
            return _NON_FINITE[inner]
        if key == "$tuple":
            return tuple(_decode(v, depth) for v in inner)
        if key == "$ndarray":
            return _ndarray(inner, depth)
        if key == "$numpy":
            return _numpy_scalar(inner, depth)
        if key == "$dict":
            return {_hashable(_decode(k, depth)): _decode(v, depth) for k, v in inner}
        if key.startswith("$"):
            raise ValueError(f"unknown JSON tag {key!r:.40}")
    return {k: _decode(v, depth) for k, v in value.items()}


def _array_dtype(name: Any) -> np.dtype:
    """The dtype ``name`` if ``encode_json`` writes arrays of it (a file's ``"S1500000000"`` would
    allocate gigabytes, ``"O"`` would hold arbitrary objects)."""
    if not isinstance(name, str) or name not in _ARRAY_DTYPES:
        raise ValueError(f"$ndarray dtype must be a bool, integer or float dtype, got {name!r:.40}")
    return np.dtype(name)


def _ndarray(inner: Any, depth: int) -> np.ndarray:
    """The array of a ``$ndarray`` tag, its shape checked against its data before numpy sees
    either."""
    if not isinstance(inner, dict) or not isinstance(inner.get("data"), list):
        raise ValueError("$ndarray must be an object with dtype, shape and a list of data")  # noqa: TRY004 (a bad file)
    dtype, shape, data = _array_dtype(inner.get("dtype")), inner.get("shape"), inner["data"]
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError(f"$ndarray shape must be a list of non-negative integers, got {shape!r:.40}")
    if math.prod(shape) != len(data):
        raise ValueError(f"$ndarray shape {shape!r:.40} does not hold its {len(data)} data items")
    try:
        return np.array([_decode(v, depth) for v in data], dtype=dtype).reshape(shape)
    except (OverflowError, TypeError) as error:  # 10**400 in an int64 array, an object in a float one
        raise ValueError(f"$ndarray of {dtype.str}: {error}") from None


def _numpy_scalar(inner: Any, depth: int) -> np.generic:
    """The numpy scalar of a ``$numpy`` tag: ``[dtype, value]``, of a dtype ``encode_json``
    writes."""
    if not isinstance(inner, list) or len(inner) != 2:
        raise ValueError("$numpy must be a list [dtype, value]")
    name, item = inner
    if isinstance(name, str) and re.fullmatch(r"[<>|]U[0-9]{1,9}", name):  # a numpy str
        return np.str_(_decode(item, depth))
    if not isinstance(name, str) or name not in _ARRAY_DTYPES:
        raise ValueError(f"$numpy dtype must be a bool, integer, float or str dtype, got {name!r:.40}")
    try:
        return np.dtype(name).type(_decode(item, depth))
    except (OverflowError, TypeError) as error:  # 300 as an int8, a list as a float
        raise ValueError(f"$numpy of {name}: {error}") from None


def _hashable(key: Any) -> Any:
    return key if not isinstance(key, list) else tuple(key)


def _float_list(values: np.ndarray) -> list[Any]:
    # float32 -> float64 is exact and JSON writes float64 in full, so reading back is bit-exact.
    return [encode_json(float(v)) for v in values]


def _float32_array(values: list[Any], name: str) -> np.ndarray:
    """``values`` (JSON numbers, or the tags ``encode_json`` writes for NaN and infinities) as
    float32, refused with a ``ValueError`` naming the field and place where one is not a number or
    is a finite number a float32 cannot hold (numpy would read 1e308 as infinity)."""
    try:
        decoded = [decode_json(v) for v in values]
    except (TypeError, ValueError) as error:  # a bad tag
        raise ValueError(f"{name} must be a list of numbers ({error})") from None
    for i, value in enumerate(decoded):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{name}[{i}] must be a number, got {value!r:.40}")  # noqa: TRY004 (a bad record)
        try:
            wide = float(value)
        except OverflowError:  # 10**400
            raise ValueError(f"{name}[{i}] is too large to be a number") from None
        if math.isfinite(wide) and abs(wide) > FLOAT32_MAX:
            raise ValueError(f"{name}[{i}] is {wide:g}, too large for a 32-bit float")
    return np.array(decoded, dtype=np.float64).astype(np.float32)


def int_field(value: Any, name: str) -> int:
    """A record's integer field ``name``: a whole number of at most 64 bits (a Python or numpy
    integer; not a bool, a float such as 1.7 or JSON's 1e400, or text), refused with a
    ``ValueError`` naming the field otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r:.40}")  # noqa: TRY004 (a bad record)
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise ValueError(f"{name} must be an integer of at most 64 bits")
    return number


def parsed_json(data: Any, what: str = "JSON") -> Any:
    """JSON text parsed (``ValueError`` where it is not JSON, or ``what`` is nested too deeply);
    anything else as it is."""
    if not isinstance(data, str):
        return data
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError(f"the {what} is nested too deeply") from None


def read_record(data: Mapping[str, Any] | str, schema: str) -> Mapping[str, Any]:
    """``data`` (a dict, or JSON text) checked to be a record of ``schema``."""
    record = parsed_json(data, f"{schema} record")
    if not isinstance(record, Mapping) or record.get("schema") != schema:
        found = record.get("schema") if isinstance(record, Mapping) else type(record).__name__
        raise ValueError(f"expected a {schema!r} record, got schema {found!r}")
    return record
