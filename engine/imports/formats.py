"""Readers of attribution files made elsewhere, each to a list of ``records.Imported``.

- ``json``: this project's own JSON (docs/attribution-schema.md): one ``attribution/1`` record,
  a list of them, the heatmap page's ``{method: attribution/1}`` download, an ``explanation/1``
  (the notebook API) or a session bundle's ``bundle.json``. Word level.
- ``csv``: a header and rows of ``example_id`` (or ``id``), ``word_index``, ``score``, with
  optional ``method`` and ``target`` columns. Word level.
- ``ferret``: ferret's ``Explanation`` objects (Attanasio et al., 2023, "ferret: a Framework for
  Benchmarking Explainers on Transformers", arXiv:2208.01575) saved as JSON
  (``dataclasses.asdict``): ``text``, ``tokens`` (the model's tokens, specials included),
  ``scores`` (one per token), ``explainer``, ``target_pos_idx``. One object or a list. Token level.
- ``inseq``: ``FeatureAttributionOutput.save`` (Sarti et al., 2023, "Inseq: An Interpretability
  Toolkit for Sequence Generation Models", arXiv:2302.13942): ``sequence_attributions``, each
  with ``source`` (or ``target``) tokens as ``{"token", "id"}`` and ``source_attributions`` (or
  ``target_attributions``) as a tokens x steps array; arrays in json-tricks form
  (``{"__ndarray__": [...] or "b64:...", "dtype", "shape"}``), objects as
  ``{"__instance_type__": ..., "attributes": {...}}``. Aggregated attributions only (one
  score per token and step); the steps are summed. Token level.
- ``thermostat``: a Thermostat dataset (Feldhus et al., 2021, "Thermostat: A Large Collection of
  NLP Model Explanations and Analysis Tools", arXiv:2108.13961): rows with ``input_ids``,
  ``attributions`` (one per input id), ``idx`` and optionally ``label`` / ``predictions``, as
  JSON Lines, a JSON list, Parquet, an Arrow stream or a ``datasets`` ``save_to_disk`` folder.
  Token level, ids only.
"""

from __future__ import annotations

import base64
import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engine.imports.records import (
    BadFile,
    Imported,
    check_count,
    integers,
    method_name,
    number,
    numbers,
    optional_int,
    parse_json,
    read_limited,
    strings,
)

FORMATS = ("json", "csv", "ferret", "inseq", "thermostat")


def read_file(path: str | Path, fmt: str | None = None, *, name: str | None = None) -> tuple[str, list[Imported]]:
    """(format, records) of the file at ``path``; ``fmt`` None detects the format from the
    content. ``name`` is the name used in messages (an upload's own name)."""
    path = Path(path)
    name = name or path.name
    if path.is_dir():
        return "thermostat", check_count(_thermostat_rows(_saved_dataset(path), name), name)
    data = read_limited(path)
    return read_bytes(data, name, fmt)


def read_bytes(data: bytes, name: str, fmt: str | None = None) -> tuple[str, list[Imported]]:
    """(format, records) of a file's bytes (an upload)."""
    if fmt is not None and fmt not in FORMATS:
        raise BadFile(f"unknown import format {fmt!r}; known: {', '.join(FORMATS)}")
    if data[:4] == b"PAR1" or data[:6] == b"ARROW1" or data[:4] == b"\xff\xff\xff\xff":
        if fmt not in (None, "thermostat"):
            raise BadFile(f"{name} is a binary table; only the thermostat format is read from one")
        return "thermostat", check_count(_thermostat_rows(_arrow_rows(data, name), name), name)
    if fmt == "csv" or (fmt is None and name.lower().endswith((".csv", ".tsv"))):
        return "csv", check_count(read_csv(data, name), name)
    if fmt == "thermostat" or (fmt is None and name.lower().endswith(".jsonl")):
        return "thermostat", check_count(_thermostat_rows(_json_lines(data, name), name), name)
    document = parse_json(data, name)
    found = fmt or detect(document, name)
    return found, check_count(READERS[found](document, name), name)


def detect(document: Any, name: str) -> str:
    """The format of a parsed JSON document."""
    first = document[0] if isinstance(document, list) and document else document
    if isinstance(first, dict):
        if "sequence_attributions" in first:
            return "inseq"
        if "schema" in first or (first and all(isinstance(v, dict) and "schema" in v for v in first.values())):
            return "json"
        if {"tokens", "scores"} <= set(first):
            return "ferret"
        if {"input_ids", "attributions"} <= set(first):
            return "thermostat"
    raise BadFile(
        f"{name}: not a known attribution format (expected our JSON, ferret, inseq or Thermostat; "
        "give the format explicitly)"
    )


# ---------------------------------------------------------------------------------- our JSON


def read_ours(document: Any, name: str) -> list[Imported]:
    from core.types import ATTRIBUTION_SCHEMA, Attribution

    def attribution(record: Any, where: str, words: tuple[str, ...] | None = None) -> Imported:
        if not isinstance(record, dict) or record.get("schema") != ATTRIBUTION_SCHEMA:
            raise BadFile(f"{where}: expected an {ATTRIBUTION_SCHEMA!r} record")
        try:
            parsed = Attribution.from_json(record)
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise BadFile(
                f"{where}: not a valid {ATTRIBUTION_SCHEMA} record ({type(error).__name__}: {error})"
            ) from None
        return Imported(
            method=method_name("json", parsed.method),
            scores=tuple(float(s) for s in parsed.scores),
            level="word",
            where=where,
            example_id=parsed.example_id or None,
            words=words or parsed.words,
            target=parsed.target,
            extras={"params": record.get("params"), "original_method": parsed.method},
        )

    if isinstance(document, list):
        return [attribution(r, f"{name} record {i}") for i, r in enumerate(document)]
    if not isinstance(document, dict):
        raise BadFile(f"{name}: expected a JSON object or list, got {type(document).__name__}")
    schema = document.get("schema")
    if schema == ATTRIBUTION_SCHEMA:
        return [attribution(document, f"{name} record 0")]
    if schema in ("explanation/1", "bundle/1"):
        found = document.get("attributions")
        if not isinstance(found, dict):
            raise BadFile(f"{name}: {schema} without an 'attributions' object")
        return [attribution(r, f"{name} attribution {k!r}") for k, r in found.items()]
    if schema is None:
        return [attribution(r, f"{name} attribution {k!r}") for k, r in document.items()]
    raise BadFile(f"{name}: unknown schema {schema!r}")


# ---------------------------------------------------------------------------------- CSV


def read_csv(data: bytes, name: str) -> list[Imported]:
    """Rows of (example id, word index, score[, method][, target]) grouped by example and method;
    word indices must cover 0..n-1 of each example exactly once."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise BadFile(f"{name} is not UTF-8 text (byte {error.start})") from None
    dialect = "excel-tab" if "\t" in text.split("\n", 1)[0] else "excel"
    reader = csv.DictReader(io.StringIO(text), dialect=dialect)
    header = [h.strip().lower() for h in reader.fieldnames or []]
    reader.fieldnames = header
    id_column = "example_id" if "example_id" in header else "id" if "id" in header else None
    if id_column is None or "word_index" not in header or "score" not in header:
        raise BadFile(f"{name}: the header needs example_id (or id), word_index and score columns")
    groups: dict[tuple[str, str], dict[int, float]] = {}
    targets: dict[tuple[str, str], int | None] = {}
    for line, row in enumerate(reader, 2):
        where = f"{name} line {line}"
        if None in row:
            raise BadFile(f"{where}: more fields than the header")
        example_id = (row.get(id_column) or "").strip()
        if not example_id:
            raise BadFile(f"{where}: empty {id_column}")
        try:
            index = int(row["word_index"])
            score = number(float(row["score"]), where)
        except (TypeError, ValueError) as error:
            raise BadFile(f"{where}: word_index must be a whole number and score a number ({error})") from None
        key = (example_id, method_name("csv", row.get("method") or "scores"))
        target_text = (row.get("target") or "").strip()
        target = int(target_text) if target_text.lstrip("-").isdigit() else None
        if target_text and target is None:
            raise BadFile(f"{where}: target must be a whole number, got {target_text!r}")
        if key in targets and targets[key] != target:
            raise BadFile(f"{where}: example {example_id!r} has two targets")
        targets[key] = target
        per = groups.setdefault(key, {})
        if index in per:
            raise BadFile(f"{where}: example {example_id!r} word {index} is given twice")
        per[index] = score
    out = []
    for (example_id, method), per in groups.items():
        missing = sorted(set(range(len(per))) - set(per))
        if missing:
            raise BadFile(f"{name}: example {example_id!r} has no score for word {missing[0]}")
        scores = tuple(per[i] for i in range(len(per)))
        out.append(
            Imported(
                method,
                scores,
                "word",
                f"{name} example {example_id!r}",
                example_id,
                target=targets[(example_id, method)],
            )
        )
    return out


# ---------------------------------------------------------------------------------- ferret


def read_ferret(document: Any, name: str) -> list[Imported]:
    items = document if isinstance(document, list) else [document]
    out = []
    for i, item in enumerate(items):
        where = f"{name} explanation {i}"
        if not isinstance(item, dict):
            raise BadFile(f"{where}: expected an object")
        tokens = strings(item.get("tokens"), f"{where} tokens")
        scores = numbers(item.get("scores"), f"{where} scores")
        if len(tokens) != len(scores):
            raise BadFile(f"{where}: {len(scores)} scores for {len(tokens)} tokens")
        text = item.get("text")
        explainer = item.get("explainer")
        out.append(
            Imported(
                method=method_name("ferret", explainer if isinstance(explainer, str) else "explainer"),
                scores=scores,
                level="token",
                where=where,
                example_id=str(item["id"]) if isinstance(item.get("id"), (str, int)) else None,
                text=text if isinstance(text, str) else None,
                tokens=tokens,
                target=optional_int(item.get("target_pos_idx"), f"{where} target_pos_idx"),
                extras={"helper_type": str(item.get("helper_type", ""))[:80]},
            )
        )
    return out


# ---------------------------------------------------------------------------------- inseq


def _plain(value: Any, where: str) -> Any:
    """json-tricks' wrappers removed: objects to their attributes, arrays to numpy."""
    if isinstance(value, list):
        return [_plain(v, where) for v in value]
    if not isinstance(value, dict):
        return value
    if "__ndarray__" in value:
        return _ndarray(value, where)
    if "__instance_type__" in value:
        return _plain(value.get("attributes", {}), where)
    return {k: _plain(v, where) for k, v in value.items()}


def _ndarray(value: dict[str, Any], where: str) -> np.ndarray:
    dtype_name = value.get("dtype", "float64")
    if dtype_name not in ("float16", "float32", "float64", "bfloat16", "int64", "int32"):
        raise BadFile(f"{where}: array dtype {dtype_name!r} is not read")
    dtype = np.dtype("float32" if dtype_name == "bfloat16" else dtype_name)
    shape = value.get("shape")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape) or len(shape) > 4:
        raise BadFile(f"{where}: bad array shape {shape!r}")
    size = int(np.prod(shape)) if shape else 1
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


def _flat_numbers(data: Any, where: str) -> list[float]:
    if isinstance(data, list):
        return [x for item in data for x in _flat_numbers(item, where)]
    return [number(data, where)]


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
        except (TypeError, ValueError):
            raise BadFile(f"{where}: {side}_attributions is not an array of numbers") from None
        if array.ndim > 2:
            raise BadFile(f"{where}: {array.ndim}-d attributions; aggregate them in inseq first (out.aggregate())")
        scores = array.reshape(array.shape[0], -1) if array.ndim else array.reshape(1, 1)
        n = scores.shape[0]
        if side == "target":  # a decoder-only model: the prompt tokens before the first attributed step
            start = sequence.get("attr_pos_start") or n
            n, words, ids = min(n, int(start)), words[: int(start)], ids[: int(start)]
        if n != len(words):
            raise BadFile(f"{where}: {n} attribution rows for {len(words)} tokens")
        per_token = np.nansum(scores[:n], axis=1)
        text = texts[i] if i < len(texts) and isinstance(texts[i], str) else None
        out.append(
            Imported(
                method=method_name("inseq", method),
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


# ---------------------------------------------------------------------------------- Thermostat


def _json_lines(data: bytes, name: str) -> list[Any]:
    rows = []
    for number_, line in enumerate(data.splitlines(), 1):
        if line.strip():
            rows.append(parse_json(line, f"{name} line {number_}"))
    return rows


def _arrow_rows(data: bytes, name: str) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if data[:4] == b"PAR1":
            table = pq.read_table(io.BytesIO(data))
        else:
            opener = pa.ipc.open_file if data[:6] == b"ARROW1" else pa.ipc.open_stream
            table = opener(pa.BufferReader(data)).read_all()
    except (pa.ArrowException, OSError) as error:
        raise BadFile(f"{name} is not a readable Parquet or Arrow table ({error})") from None
    if table.num_rows > 100_000:
        raise BadFile(f"{name} has {table.num_rows:,} rows, more than the 100,000 allowed")
    return table.to_pylist()


def _saved_dataset(folder: Path) -> list[dict[str, Any]]:
    """The rows of a ``datasets`` ``save_to_disk`` folder (its Arrow stream files, in order)."""
    files = sorted(folder.glob("*.arrow"))
    if not files:
        raise BadFile(f"{folder.name}: no .arrow files (expected a `datasets` save_to_disk folder)")
    rows: list[dict[str, Any]] = []
    for file in files:
        rows += _arrow_rows(read_limited(file), file.name)
    return rows


def _thermostat_rows(rows: Any, name: str) -> list[Imported]:
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list):
        raise BadFile(f"{name}: expected rows of a Thermostat dataset")
    out = []
    for i, row in enumerate(rows):
        where = f"{name} row {i}"
        if not isinstance(row, dict):
            raise BadFile(f"{where}: expected an object")
        ids = integers(_as_list(row.get("input_ids")), f"{where} input_ids")
        scores = numbers(_as_list(row.get("attributions")), f"{where} attributions")
        if len(ids) != len(scores):
            raise BadFile(f"{where}: {len(scores)} attributions for {len(ids)} input ids")
        explainer = str(row.get("explainer") or "attributions")
        index = row.get("idx")
        predictions = row.get("predictions")
        target = None
        if isinstance(predictions, list) and predictions:
            target = int(np.argmax(numbers(predictions, f"{where} predictions")))
        out.append(
            Imported(
                method=method_name("thermostat", explainer),
                scores=scores,
                level="token",
                where=where,
                example_id=str(index) if isinstance(index, (int, str)) and not isinstance(index, bool) else None,
                token_ids=ids,
                target=target,
                extras={"label": row.get("label") if isinstance(row.get("label"), int) else None},
            )
        )
    return out


def _as_list(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


READERS: dict[str, Callable[[Any, str], list[Imported]]] = {
    "json": read_ours,
    "ferret": read_ferret,
    "inseq": read_inseq,
    "thermostat": _thermostat_rows,
}
