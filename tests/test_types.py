"""The JSON form of the records (docs/attribution-schema.md): lossless for every registered method's
attribution on the toy model, float32 scores bit for bit, through real JSON text."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

import explainers
from core.classifier import Classifier
from core.masked_lm import MaskedLM
from core.types import Attribution, Example, decode_json, encode_json
from tests.test_explainers import _fast_params


def same(a: Any, b: Any) -> bool:
    """Equal in value and type, arrays by dtype, shape and bits, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float | np.floating) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def assert_same_attribution(a: Attribution, b: Attribution) -> None:
    for name in Attribution.__dataclass_fields__:
        assert same(getattr(a, name), getattr(b, name)), name


def through_text(record: dict[str, Any]) -> str:
    return json.dumps(record, allow_nan=False)  # strict JSON: a NaN literal would fail here


@pytest.fixture(scope="module")
def folder_mlm(model_dirs) -> MaskedLM:
    return MaskedLM.load(str(model_dirs[1]), "cpu")


@pytest.mark.parametrize("key", list(explainers.REGISTRY))
def test_every_method_round_trips_bit_exact(key: str, toy_bert_loaded, folder_mlm: MaskedLM) -> None:
    spec = explainers.get(key)
    example = Example(segments=(("the", "film", "was", "unbelievable", "and", "fun"),), id="toy/json")
    clf = Classifier(toy_bert_loaded)
    original = explainers.run_explainer(spec, clf, example, 1, _fast_params(spec, 3), mlm=folder_mlm)
    text = through_text(original.to_json())
    restored = Attribution.from_json(text)
    assert_same_attribution(original, restored)
    assert restored.scores.dtype == np.float32 and restored.scores.tobytes() == original.scores.tobytes()
    assert not restored.scores.flags.writeable
    assert restored.to_json() == json.loads(text)


def test_round_trip_keeps_arrays_tuples_nan_and_odd_keys() -> None:
    scores = np.array([0.1, -np.inf, np.nan, 1e-45, 3.4e38], dtype=np.float32)  # smallest subnormal, near max
    extras = {
        "mask": np.arange(6, dtype=np.int64).reshape(2, 3),
        "probs": np.array([[0.25, np.nan]], dtype=np.float64),
        "flags": np.array([True, False]),
        "spans": [(0, 2), (4, 5)],
        "scalar": np.float32(0.1),
        "count": np.int64(7),
        "delta": float("inf"),
        "by_class": {0: "negative", 1: "positive"},
        "$weird": {"$tuple": "not a tag"},
        "nested": [{"a": (1.5, None, "x")}],
    }
    original = Attribution(
        "custom",
        "ex/1",
        0,
        ("a", "b", "c", "d", "e"),
        scores,
        params={"window": (2, 3), "name": "x"},
        seed=11,
        subwords=("a", "b", "##c"),
        subword_scores=np.array([0.5, np.nan, -0.25], dtype=np.float32),
        subword_word_ids=(0, 1, 1),
        runtime_s=0.123456789,
        forward_passes=12,
        backward_passes=3,
        extras=extras,
    )
    restored = Attribution.from_json(through_text(original.to_json()))
    assert_same_attribution(original, restored)
    assert restored.extras["mask"].dtype == np.int64 and restored.extras["mask"].shape == (2, 3)
    assert type(restored.extras["scalar"]) is np.float32 and restored.extras["scalar"] == np.float32(0.1)
    assert restored.extras["spans"] == [(0, 2), (4, 5)]
    assert restored.extras["by_class"] == {0: "negative", 1: "positive"}
    assert restored.extras["$weird"] == {"$tuple": "not a tag"}


def test_scores_are_written_as_plain_numbers() -> None:
    record = Attribution("m", "x", 1, ("a", "b"), np.array([0.1, -2.0], dtype=np.float32)).to_json()
    assert record["schema"] == "attribution/1"
    assert record["scores"] == [float(np.float32(0.1)), -2.0]
    assert record["words"] == ["a", "b"] and record["subword_scores"] is None


def test_example_round_trips() -> None:
    example = Example(
        segments=(("a", "man", "sleeps"), ("a", "dog", "runs")),
        label=2,
        label_names=("entailment", "neutral", "contradiction"),
        rationales=((0, 1, 1, 0, 0, 1), (0, 1, 0, 0, 1, 1)),
        rationale=(0, 1, 1, 0, 1, 1),
        dataset="esnli",
        split="dev",
        id="esnli/dev/4",
    )
    assert Example.from_json(through_text(example.to_json())) == example


def test_wrong_schema_and_unknown_tag_are_one_clear_line() -> None:
    with pytest.raises(ValueError, match="expected a 'attribution/1' record, got schema 'example/1'"):
        Attribution.from_json(Example(segments=(("a",),)).to_json())
    with pytest.raises(ValueError, match=r"unknown JSON tag '\$set'"):
        decode_json({"$set": [1]})
    with pytest.raises(TypeError, match="cannot write a set as JSON"):
        encode_json({1, 2})


def test_records_refuse_integers_and_scores_they_cannot_hold_exactly() -> None:
    """``int_field`` read 1.7 as 1, ``true`` as 1 and "1" as 1, and a score of 1e308 became float32
    infinity; every reader of ``Attribution`` and ``Example`` records refuses them now."""
    record = Attribution("m", "x", 0, ("a", "b"), np.zeros(2, np.float32)).to_json()
    for key, value, said in (("target", 1.7, "attribution target must be an integer, got 1.7"),
                             ("target", True, "attribution target must be an integer, got True"),
                             ("forward_passes", "1", "forward_passes must be an integer, got '1'"),
                             ("scores", [0.5, 1e308], r"attribution scores\[1\] is 1e\+308, too large for a 32-bit float"),
                             ("scores", [0.5, True], r"attribution scores\[1\] must be a number, got True"),
                             ("scores", [0.5, "1"], r"attribution scores\[1\] must be a number, got '1'")):  # fmt: skip
        with pytest.raises(ValueError, match=said):
            Attribution.from_json({**record, key: value})
    with pytest.raises(ValueError, match="example rationale must be an integer, got 1.0"):
        Example.from_json({**Example(segments=(("a", "b"),)).to_json(), "rationale": [1.0, 0]})
    kept = Attribution.from_json({**record, "target": np.int64(1), "scores": [-3.4e38, {"$float": "nan"}]})
    assert kept.target == 1 and kept.scores[0] == np.float32(-3.4e38) and np.isnan(kept.scores[1])
