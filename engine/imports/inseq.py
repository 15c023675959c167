"""inseq's saved attributions (Sarti et al., 2023, "Inseq: An Interpretability Toolkit for
Sequence Generation Models", arXiv:2302.13942): ``FeatureAttributionOutput.save`` output, with
json-tricks arrays (``{"__ndarray__": [...] or "b64:...", "dtype", "shape"}``, decoded with
numpy from the listed dtypes only) and objects (``{"__instance_type__": ..., "attributes"}``,
whose attributes are read; no class is ever looked up)."""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from core.types import MAX_JSON_DEPTH
from engine.imports.records import (
    BadFile,
    Imported,
    integers,
    method_name,
    number,
    numbers,
    strings,
    whole_number,
)


def _plain(value: Any, where: str, depth: int = 0) -> Any:
    """json-tricks' wrappers removed: objects to their attributes, arrays to numpy."""
    if depth > MAX_JSON_DEPTH:
        raise BadFile(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep")
    if isinstance(value, list):
        return [_plain(v, where, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value
    if "__ndarray__" in value:
        return _ndarray(value, where)
    if "__instance_type__" in value:
        return _plain(value.get("attributes", {}), where, depth + 1)
    return {k: _plain(v, where, depth + 1) for k, v in value.items()}


def _ndarray(value: dict[str, Any], where: str) -> np.ndarray:
    dtype_name = value.get("dtype", "float64")
    if dtype_name not in ("float16", "float32", "float64", "bfloat16", "int64", "int32"):
        raise BadFile(f"{where}: array dtype {dtype_name!r} is not read")
    dtype = np.dtype("float32" if dtype_name == "bfloat16" else dtype_name)
    shape = value.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > 4
        or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 1_000_000 for n in shape)
    ):
        raise BadFile(f"{where}: bad array shape {shape!r:.80}")
    size = math.prod(shape)  # Python integers: no overflow
    if size > 1_000_000:
        raise BadFile(f"{where}: an array of {size:,} values is too large")
    data = value["__ndarray__"]
    if isinstance(data, str):
        payload = data.removeprefix("b64:")
        try:
            raw = base64.b64decode(payload, validate=True)
        except ValueError:
            raise BadFile(f"{where}: array data is not base64") from None
        if len(raw) != size * dtype.itemsize:
            raise BadFile(f"{where}: array data has {len(raw)} bytes for shape {shape}")
        return np.frombuffer(raw, dtype=dtype).reshape(shape)
    array = np.asarray(_flat_numbers(data, where), dtype=np.float64)
    if array.size != size:
        raise BadFile(f"{where}: array data has {array.size} values for shape {shape}")
    return array.reshape(shape)


def _flat_numbers(data: Any, where: str, depth: int = 0) -> list[float]:
    if depth > MAX_JSON_DEPTH:
        raise BadFile(f"{where}: array data nested more than {MAX_JSON_DEPTH} levels deep")
    if isinstance(data, list):
        return [x for item in data for x in _flat_numbers(item, where, depth + 1)]
    return [number(data, where)]


def _check_finite(scores: np.ndarray, tokens: list[Any], where: str) -> None:
    """Refuse a score that is not finite (a NaN in a ``b64:`` array), naming its token and step."""
    bad = np.argwhere(~np.isfinite(scores))
    if bad.size:
        token, step = (int(i) for i in bad[0])
        raise BadFile(
            f"{where}: the score of token {token} ({tokens[token]!r:.40}) at step {step} is"
            f" {scores[token, step]}, not a finite number"
        )


def read_inseq(document: Any, name: str) -> list[Imported]:
    plain = _plain(document, name)
    sequences = plain.get("sequence_attributions") if isinstance(plain, dict) else None
    if not isinstance(sequences, list):
        raise BadFile(f"{name}: inseq output without a 'sequence_attributions' list")
    info: dict[str, Any] = plain["info"] if isinstance(plain.get("info"), dict) else {}
    method = str(info.get("attribution_method") or "attribution")
    texts: list[Any] = info["input_texts"] if isinstance(info.get("input_texts"), list) else []
    out = []
    for i, sequence in enumerate(sequences):
        where = f"{name} sequence {i}"
        if not isinstance(sequence, dict):
            raise BadFile(f"{where}: expected an object")
        side = "source" if sequence.get("source_attributions") is not None else "target"
        tokens = sequence.get(side)
        attributions = sequence.get(f"{side}_attributions")
        if not isinstance(tokens, list) or attributions is None:
            raise BadFile(f"{where}: no {side} tokens with attributions")
        words: list[Any] = [t.get("token") if isinstance(t, dict) else t for t in tokens]
        ids: list[Any] = [t.get("id") for t in tokens if isinstance(t, dict)]
        try:
            array = np.asarray(attributions, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            raise BadFile(f"{where}: {side}_attributions is not an array of numbers") from None
        if array.size == 0:
            raise BadFile(f"{where}: {side}_attributions is empty")
        if array.ndim > 2:
            raise BadFile(f"{where}: {array.ndim}-d attributions; aggregate them in inseq first (out.aggregate())")
        scores = array.reshape(array.shape[0], -1) if array.ndim else array.reshape(1, 1)
        n = scores.shape[0]
        if side == "target":  # a decoder-only model: the prompt tokens before the first attributed step
            given = sequence.get("attr_pos_start")
            start = whole_number(n if given is None else given, f"{where} attr_pos_start")
            if start < 1:
                raise BadFile(f"{where}: attr_pos_start {start} leaves no prompt token to score")
            n, words, ids = min(n, start), words[:start], ids[:start]
        if n != len(words):
            raise BadFile(f"{where}: {n} attribution rows for {len(words)} tokens")
        _check_finite(scores[:n], words, where)
        per_token = np.sum(scores[:n], axis=1)
        text = texts[i] if i < len(texts) and isinstance(texts[i], str) else None
        out.append(
            Imported(
                method=method_name("inseq", method, where),
                scores=numbers(per_token.tolist(), where),
                level="token",
                where=where,
                text=text,
                tokens=strings(words, f"{where} tokens"),
                token_ids=integers(ids, f"{where} ids") if len(ids) == len(words) else (),
                extras={"steps": int(scores.shape[1])},
            )
        )
    return out
