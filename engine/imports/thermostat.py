"""Thermostat datasets (Feldhus et al., 2021, "Thermostat: A Large Collection of NLP Model
Explanations and Analysis Tools", arXiv:2108.13961): rows of ``input_ids`` and ``attributions``
(one per id, padding included), ``idx``, ``predictions`` and ``explainer``, from JSON Lines, a
JSON list, Parquet, an Arrow stream or file, or a ``datasets`` ``save_to_disk`` folder (its Arrow
files read with pyarrow; the dataset's scripts are never run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from engine.imports.records import BadFile, Imported, integers, method_name, numbers, parse_json, read_limited


def json_lines(data: bytes, name: str) -> list[Any]:
    rows = []
    for number_, line in enumerate(data.splitlines(), 1):
        if line.strip():
            rows.append(parse_json(line, f"{name} line {number_}"))
    return rows


def arrow_rows(data: bytes, name: str) -> list[dict[str, Any]]:
    """The rows of a Parquet or Arrow table, decoded in a child process (``arrow_reader``)."""
    from engine.imports.arrow_reader import decode

    return decode(data, name).to_pylist()


def saved_dataset(folder: Path) -> list[dict[str, Any]]:
    """The rows of a ``datasets`` ``save_to_disk`` folder (its Arrow stream files, in order)."""
    files = sorted(folder.glob("*.arrow"))
    if not files:
        raise BadFile(f"{folder.name}: no .arrow files (expected a `datasets` save_to_disk folder)")
    rows: list[dict[str, Any]] = []
    for file in files:
        rows += arrow_rows(read_limited(file), file.name)
    return rows


def thermostat_rows(rows: Any, name: str) -> list[Imported]:
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list):
        raise BadFile(f"{name}: expected rows of a Thermostat dataset")
    out = []
    for i, row in enumerate(rows):
        where = f"{name} row {i}"
        if not isinstance(row, dict):
            raise BadFile(f"{where}: expected an object")
        if "schema" in row:
            raise BadFile(
                f"{where}: a record of schema {str(row['schema'])!r:.40}, not a Thermostat row (this project's own JSON"
                " is read from a .json file)"
            )
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
                method=method_name("thermostat", explainer, where),
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
