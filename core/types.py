"""The two records everything else passes around, ``Example`` and ``Attribution``, and their
lossless JSON form (``to_json`` / ``from_json``; the schema is docs/attribution-schema.md)."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
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
            rationales=tuple(tuple(int(v) for v in mask) for mask in record["rationales"]),
            rationale=None if rationale is None else tuple(int(v) for v in rationale),
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
            target=int(record["target"]),
            words=tuple(record["words"]),
            scores=_float32_array(record["scores"]),
            params=decode_json(record["params"]),
            seed=record["seed"],
            subwords=tuple(record["subwords"]),
            subword_scores=None if subword_scores is None else _float32_array(subword_scores),
            subword_word_ids=tuple(int(i) for i in record["subword_word_ids"]),
            runtime_s=decode_json(record["runtime_s"]),
            forward_passes=int(record["forward_passes"]),
            backward_passes=int(record["backward_passes"]),
            extras=decode_json(record["extras"]),
        )


# --------------------------------------------------------------------------- JSON

ATTRIBUTION_SCHEMA = "attribution/1"
EXAMPLE_SCHEMA = "example/1"
_NON_FINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


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
    """The value ``encode_json`` wrote."""
    if isinstance(value, list):
        return [decode_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == "$float":
            if inner not in _NON_FINITE:
                raise ValueError(f"$float must be one of {', '.join(_NON_FINITE)}, got {inner!r}")
            return _NON_FINITE[inner]
        if key == "$tuple":
            return tuple(decode_json(v) for v in inner)
        if key == "$ndarray":
            data = [decode_json(v) for v in inner["data"]]
            return np.array(data, dtype=np.dtype(inner["dtype"])).reshape(inner["shape"])
        if key == "$numpy":
            dtype, item = inner
            return np.dtype(dtype).type(decode_json(item))
        if key == "$dict":
            return {_hashable(decode_json(k)): decode_json(v) for k, v in inner}
        if key.startswith("$"):
            raise ValueError(f"unknown JSON tag {key!r}")
    return {k: decode_json(v) for k, v in value.items()}


def _hashable(key: Any) -> Any:
    return key if not isinstance(key, list) else tuple(key)


def _float_list(values: np.ndarray) -> list[Any]:
    # float32 -> float64 is exact and JSON writes float64 in full, so reading back is bit-exact.
    return [encode_json(float(v)) for v in values]


def _float32_array(values: list[Any]) -> np.ndarray:
    return np.array([decode_json(v) for v in values], dtype=np.float64).astype(np.float32)


def read_record(data: Mapping[str, Any] | str, schema: str) -> Mapping[str, Any]:
    """``data`` (a dict, or JSON text) checked to be a record of ``schema``."""
    record = json.loads(data) if isinstance(data, str) else data
    if not isinstance(record, Mapping) or record.get("schema") != schema:
        found = record.get("schema") if isinstance(record, Mapping) else type(record).__name__
        raise ValueError(f"expected a {schema!r} record, got schema {found!r}")
    return record
