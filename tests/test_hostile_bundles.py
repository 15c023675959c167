"""Hostile records and session bundles (the fuzz review's findings 2-5 and 9): whatever an upload
holds, ``decode_json``, ``Attribution.from_json``, ``Example.from_json`` and ``read_bundle`` answer
with one ``ValueError`` naming what is wrong, quickly and without allocating what the file asks
for; a link's ``?index=`` of thousands of digits is ignored."""

from __future__ import annotations

import io
import json
import time
import tracemalloc
import warnings
import zipfile
from typing import Any

import numpy as np
import pytest

from core.types import Attribution, Example, decode_json
from engine.bundles import MAX_DROPPED_WORDS, check_bundle, read_bundle, write_bundle
from tests.test_bundles import toy_bundle, zipped
from ui.sidebar_link import url_index


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def refused(data: bytes) -> str:
    """The one-line ValueError ``read_bundle`` gives for ``data``."""
    with pytest.raises(ValueError) as caught:
        read_bundle(data, "b.zip")
    assert "\n" not in str(caught.value)
    return str(caught.value)


@pytest.fixture
def payload(linear_clf, toy_example) -> dict[str, Any]:
    """The bundle.json of a valid bundle, to spoil one field at a time."""
    return json.loads(
        zipfile.ZipFile(io.BytesIO(write_bundle(toy_bundle(linear_clf, toy_example)))).read("bundle.json")
    )


ONE_E_400 = "<1e400>"  # written as the JSON number 1e400, which parses to infinity


def bundle_with(payload: dict[str, Any], path: tuple[str, ...], value: Any) -> bytes:
    """The bundle of ``payload`` with ``value`` at ``path``."""
    spoiled = json.loads(json.dumps(payload))
    record = spoiled
    for key in path[:-1]:
        record = record[key]
    record[path[-1]] = value
    return zipped({"bundle.json": json.dumps(spoiled).replace(f'"{ONE_E_400}"', "1e400").encode()})


# ------------------------------------------------------------------------------ decode_json


def test_a_dtype_the_file_names_is_refused_before_anything_is_allocated() -> None:
    bomb = {"$ndarray": {"dtype": "S1500000000", "shape": [1], "data": ["a"]}}  # 1.4 GB before the fix
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ValueError, match="dtype must be a bool, integer or float dtype, got 'S1500000000'"):
            decode_json(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 1 and peak < 1_000_000
    with pytest.raises(ValueError, match="numpy dtype must be .* got 'V'"):
        decode_json({"$numpy": ["V", 3_000_000_000]})  # OverflowError before the fix
    with pytest.raises(ValueError, match="ndarray dtype must be .* got 'O'"):
        decode_json({"$ndarray": {"dtype": "O", "shape": [1], "data": [{"any": "object"}]}})
    with pytest.raises(ValueError, match="ndarray dtype must be"):
        decode_json({"$ndarray": {"dtype": ["<f4"], "shape": [1], "data": [1.0]}})


def test_an_ndarray_shape_must_hold_its_data() -> None:
    for shape in ([2], [True], [-1, -1], "1", [1.0]):
        with pytest.raises(ValueError, match=r"\$ndarray shape"):
            decode_json({"$ndarray": {"dtype": "<f4", "shape": shape, "data": [1.0]}})
    with pytest.raises(ValueError, match=r"\$ndarray of <i8: .*too large"):
        decode_json({"$ndarray": {"dtype": "<i8", "shape": [1], "data": [10**400]}})
    with pytest.raises(ValueError, match=r"\$numpy of \|i1"):
        decode_json({"$numpy": ["|i1", 300]})
    # what encode_json writes still reads back, a numpy str scalar and an empty array included
    assert decode_json({"$numpy": ["<U3", "abc"]}) == np.str_("abc")
    assert decode_json({"$ndarray": {"dtype": ">f8", "shape": [0, 3], "data": []}}).shape == (0, 3)
    assert decode_json({"$ndarray": {"dtype": "|b1", "shape": [2, 1], "data": [True, False]}}).tolist() == [
        [True],
        [False],
    ]


def test_deep_nesting_is_a_value_error_not_a_recursion_error() -> None:
    for deep in (nested(600), {"$tuple": nested(600)}, {"a": nested(600)}):
        with pytest.raises(ValueError, match="nested too deeply"):
            decode_json(deep)
    assert decode_json(nested(60)) == nested(60)  # deeper than any record the project writes
    record = Attribution("m", "x", 0, ("a",), np.zeros(1, np.float32)).to_json()
    with pytest.raises(ValueError, match="nested too deeply"):
        Attribution.from_json({**record, "params": {"x": nested(600)}})
    with pytest.raises(ValueError, match="attribution/1 record is nested too deeply"):
        Attribution.from_json("[" * 100_000 + "]" * 100_000)


# ------------------------------------------------------------------------------ numbers


def test_infinite_and_huge_numbers_in_records_name_the_field() -> None:
    record = Attribution("m", "x", 0, ("a",), np.zeros(1, np.float32)).to_json()
    for key, value, field in (("target", float("inf"), "attribution target"),
                              ("target", 10**400, "attribution target"),
                              ("forward_passes", float("-inf"), "forward_passes"),
                              ("subword_word_ids", [float("nan")], "subword_word_ids"),
                              ("scores", [10**400], "attribution scores"),
                              ("subword_scores", [{"a": 1}], "subword_scores")):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            Attribution.from_json({**record, key: value})
    example = Example(segments=(("a", "b"),)).to_json()
    with pytest.raises(ValueError, match="example rationales must be an integer, got inf"):
        Example.from_json({**example, "rationales": [[0, float("inf")]]})
    with pytest.raises(ValueError, match="example rationale must be an integer"):
        Example.from_json({**example, "rationale": [1, 10**400]})


def test_infinite_and_huge_numbers_in_a_bundle_name_the_field(payload) -> None:
    one_e_400 = ONE_E_400
    for path, value, field in ((("target",), one_e_400, "target must be an integer, got inf"),
                               (("predicted",), one_e_400, "predicted must be an integer, got inf"),
                               (("dropped_words",), one_e_400, "dropped_words must be an integer, got inf"),
                               (("probabilities",), [10**400, 0.5], "probabilities must be finite numbers"),
                               (("probabilities",), [one_e_400, 0.5], "probabilities must be finite numbers"),
                               (("attributions", "saliency", "target"), one_e_400, "attribution target"),
                               (("example", "rationale"), [one_e_400] * 10, "example rationale")):  # fmt: skip
        message = refused(bundle_with(payload, path, value))
        assert message.startswith("b.zip: not a valid bundle/1 file (ValueError: ") and field in message
    bomb = {"$ndarray": {"dtype": "S1500000000", "shape": [1], "data": ["a"]}}
    assert "dtype must be" in refused(bundle_with(payload, ("params", "saliency"), {"x": bomb}))
    assert "nested too deeply" in refused(bundle_with(payload, ("params",), nested(600)))
    assert "nested too deeply" in refused(bundle_with(payload, ("attributions", "saliency", "extras"), nested(600)))


def test_impossible_values_in_a_bundle_are_refused(payload) -> None:
    """``open`` showed these: a target of 1.7 or true as class 1, probabilities [2.0, -1.0] as
    "(-100.0%)", dropped_words -5."""
    for path, value, said in ((("target",), 1.7, "target must be an integer, got 1.7"),
                              (("target",), True, "target must be an integer, got True"),
                              (("predicted",), "1", "predicted must be an integer, got '1'"),
                              (("dropped_words",), -5, "dropped_words must not be negative, got -5"),
                              (("probabilities",), [2.0, -1.0], "probabilities must be between 0 and 1, got 2.0"),
                              (("probabilities",), [0.5, 0.75],
                               "the probabilities of a single-label head sum to 1, these to 1.25")):  # fmt: skip
        assert refused(bundle_with(payload, path, value)) == f"b.zip: not a valid bundle/1 file (ValueError: {said})"
    for head, outputs in (("multi_label", [0.9, 0.8]), ("regression", [2.0, -1.0])):  # sigmoids; raw scores
        spoiled = {**payload, "head": head, "probabilities": outputs}
        assert read_bundle(zipped({"bundle.json": json.dumps(spoiled).encode()})).probabilities == tuple(outputs)
    assert "between 0 and 1, got 1.5" in refused(
        zipped({"bundle.json": json.dumps({**payload, "head": "multi_label", "probabilities": [1.5, 0.5]}).encode()})
    )


def test_a_score_beyond_float32_and_a_nan_literal_are_one_line_naming_the_file(payload) -> None:
    """A score of 1e308 was opened as infinity after numpy's overflow warning; a NaN literal was
    refused without the file's name."""
    scores = [1e308, *payload["attributions"]["saliency"]["scores"][1:]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        message = refused(bundle_with(payload, ("attributions", "saliency", "scores"), scores))
    assert message == (
        "b.zip: not a valid bundle/1 file (ValueError: saliency: attribution scores[0] is 1e+308, too large"
        " for a 32-bit float)"
    )
    assert refused(bundle_with(payload, ("probabilities",), [float("nan"), 0.5])) == (
        "b.zip holds NaN, which is not a JSON number"
    )


# ------------------------------------------------------------------------------ damaged zips


def member_data_offset(data: bytes) -> int:
    """Where the first member's data starts: after its 30-byte local header, name and extra field."""
    return 30 + int.from_bytes(data[26:28], "little") + int.from_bytes(data[28:30], "little")


def with_header_fields(data: bytes, local: int, central: int, value: bytes) -> bytes:
    """``data`` with ``value`` at offset ``local`` of the first local header and ``central`` of the
    first central directory header."""
    spoiled = bytearray(data)
    start = spoiled.find(b"PK\x01\x02")
    spoiled[local : local + len(value)] = value
    spoiled[start + central : start + central + len(value)] = value
    return bytes(spoiled)


def test_a_damaged_member_is_one_line(payload) -> None:
    text = json.dumps(payload).encode()
    deflated = zipped({"bundle.json": text})
    start = member_data_offset(deflated)
    broken = deflated[:start] + b"\xff" + deflated[start + 1 :]  # deflate block type 3 is invalid
    assert "bundle.json cannot be read (Error -3 while decompressing data" in refused(broken)  # zlib.error

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_LZMA) as archive:
        archive.writestr("bundle.json", text)
    lzma_zip = buffer.getvalue()
    start = member_data_offset(lzma_zip) + 9  # after zipfile's 4-byte header and 5 bytes of properties
    broken = lzma_zip[:start] + b"\xff" * 64 + lzma_zip[start + 64 :]
    assert "bundle.json cannot be read (Corrupt input data)" in refused(broken)  # lzma.LZMAError

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("bundle.json", text)
    stored = buffer.getvalue()
    method_99 = with_header_fields(stored, 8, 10, (99).to_bytes(2, "little"))  # NotImplementedError
    assert "bundle.json cannot be read (That compression method is not supported)" in refused(method_99)
    encrypted = with_header_fields(stored, 6, 8, (1).to_bytes(2, "little"))  # RuntimeError
    assert "bundle.json cannot be read (" in refused(encrypted) and "password required" in refused(encrypted)


def test_a_huge_zip_directory_is_refused_from_its_end_record(payload) -> None:
    text = json.dumps(payload).encode()
    many = zipped({"bundle.json": text, **{f"f{i}": b"" for i in range(100_000)}})  # zipfile writes zip64 records
    started = time.perf_counter()
    assert "uses zip64 records" in refused(many)
    assert time.perf_counter() - started < 0.2  # zipfile alone parses these members' directory in ~0.6 s
    assert "holds 1,001 files, more than the 64 a bundle has" in refused(
        zipped({"bundle.json": text, **{f"f{i}": b"" for i in range(1_000)}})
    )

    few = zipped({"bundle.json": text, **{f"f{i}": b"" for i in range(3_000)}})
    end = few.rfind(b"PK\x05\x06")
    lying = bytearray(few)
    lying[end + 8 : end + 12] = (2).to_bytes(2, "little") * 2  # the end record claims two members
    assert "-byte file directory, more than the 65,536 a bundle has" in refused(bytes(lying))

    buffer = io.BytesIO(zipped({"bundle.json": text}))
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.comment = b"a comment moves the end record away from the end"
    assert read_bundle(buffer.getvalue()).model == payload["model"]


# ------------------------------------------------------------------------------ ?index=


def test_a_link_index_is_plain_digits_of_reasonable_length() -> None:
    assert url_index("12") == 12 and url_index("0") == 0 and url_index("123456789") == 123456789
    for junk in ("1" * 5000, "1234567890", "²", "-1", "1.5", "", " 5"):  # int() raised on 5000 digits
        assert url_index(junk) is None


# What the CLI probe found ``open`` and ``import`` checking differently (the same spoiled bundle
# refused by one, stored by the other) or neither refusing.
WORDS = 10  # the toy example's words
SPOILED = {
    "rationale": (("example", "rationale"), [1, 0], "rationale mask of length 2 for 10 words in 'toy/0'"),
    "dropped_words": (("dropped_words",), 10**30, "dropped_words must be an integer of at most 64 bits"),
    "dropped_words_past_a_document": (
        ("dropped_words",),
        2**62,
        "dropped_words must be at most 1,000,000 (the longest document explained), got 4611686018427387904",
    ),
    "subword_word_ids": (
        ("attributions", "saliency", "subword_word_ids"),
        "past",
        "saliency: subword_word_ids must be word positions 0 to 9, got 10",
    ),
    "subword_scores": (
        ("attributions", "saliency", "subword_scores"),
        "short",
        "saliency: subwords, subword_word_ids and subword_scores differ in length ([10, 10, 9])",
    ),
    "index": (("selection", "index"), -5, "selection index must not be negative, got -5"),
    "split": (("selection", "dataset"), "sst2", "selection dataset 'sst2' is given without its split"),
    "dataset": (("selection", "split"), "dev", "selection split 'dev' is given without its dataset"),
    "target": (("selection", "target"), 7, "selection target must be a class 0 to 1, got 7"),
}


@pytest.mark.parametrize("spoil", list(SPOILED))
def test_open_and_import_refuse_the_same_spoiled_bundle_with_the_same_line(payload, spoil, tmp_path, capsys) -> None:
    from cli.main import main

    path, value, said = SPOILED[spoil]
    if value == "past":  # the last subword points one past the words
        ids = payload["attributions"]["saliency"]["subword_word_ids"]
        assert ids and max(ids) == WORDS - 1
        value = [*ids[:-1], WORDS]
    if value == "short":  # one subword's score missing: the subword view read past the end
        value = payload["attributions"]["saliency"]["subword_scores"]
        value = {**value, "data": value["data"][:-1]} if isinstance(value, dict) else value[:-1]
    bundle = tmp_path / "b.zip"
    bundle.write_bytes(bundle_with(payload, path, value))
    expected = f"error: b.zip: not a valid bundle/1 file (ValueError: {said})\n"
    assert main(["open", str(bundle)]) == 2
    assert capsys.readouterr().err == expected
    store = tmp_path / "store"
    assert main(["import", str(bundle), "--model", "minilm-sst2", "--results-dir", str(store), "--quiet"]) == 2
    assert capsys.readouterr().err == expected
    assert not store.exists()


def test_dropped_words_is_bounded_by_the_longest_document(payload) -> None:
    """A probe's bundle said 2**62 words were cut (any 64-bit count passed); at most
    ``MAX_DROPPED_WORDS`` is a document's length, and exactly that many still opens."""
    assert MAX_DROPPED_WORDS == 1_000_000
    assert check_bundle({**payload, "dropped_words": MAX_DROPPED_WORDS}).dropped_words == MAX_DROPPED_WORDS
    for value in (MAX_DROPPED_WORDS + 1, 2**62):
        with pytest.raises(ValueError) as caught:
            check_bundle({**payload, "dropped_words": value}, "b.json")
        assert str(caught.value) == (
            "b.json: not a valid bundle/1 file (ValueError: dropped_words must be at most 1,000,000 (the longest"
            f" document explained), got {value})"
        )
