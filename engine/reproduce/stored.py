"""Reproduction results kept in the run store (``engine.runs.store``) as runs of kind ``reproduce``.

One result is one run. Its key is (kind, reproduction name, slice, code version: the hash of the
computing packages' sources, ``engine.reproduce.base.code_version``), so the same name and slice
computed by the same code is the same run (``--refresh`` recomputes it and replaces the stored
one), and a code change makes a new run (the older result stays, and the page marks it as from an
earlier version). Its only unit is one Parquet file: one row per published cell (``label``,
``key``, ``published``, ``mean``, ``low``, ``high``, ``n``, and the per-example ``values``, absent
from results stored before they were kept) and the rest of the result (paper,
table, claim, settings with the conventions, finding, reasons ours may differ, timings, when it
was computed) as JSON in the schema metadata under ``reproduction``, so the file alone is the
whole result. The catalogue row says what a listing needs (``selection``: name, limit, code,
computed, holds, n) and is committed with the file by ``RunStore.save_whole`` after the
computation has finished: a computation that raises or is killed leaves no row, and readers only
read what the catalogue lists.

Results cached by earlier versions as JSON files under ``<results>/reproduce/`` are imported
once, not read as a fallback: ``import_legacy`` parses each file (JSON only, never evaluated),
stores it as above unless the store already has that key, and renames the file to
``*.json.imported`` (``*.json.unreadable`` when it is not a result of a known reproduction), so
no later read looks at it again. A stored result whose file cannot be read (deleted, cut short)
raises ``UnreadableResult``, a one-line ``ValueError``: the page shows the bundled result instead
and ``cached_run`` computes it again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.runs.records import NewRun, RunInfo, UnitStats
from engine.runs.store import RunStore, results_dir

KIND = "reproduce"
META = b"reproduction"
LEGACY_FOLDER = "reproduce"
_ROW_FIELDS = ("label", "key", "published", "mean", "low", "high", "n")
_PAYLOAD_FIELDS = (
    "name",
    "limit",
    "code_version",
    "rows",
    "finding",
    "settings",
    "runtime_s",
    "differences",
    "published_note",
)


class UnreadableResult(ValueError):
    """A stored result the catalogue lists whose file cannot be read."""


@dataclass(frozen=True)
class StoredResult:
    """One stored reproduction result as the catalogue lists it (its rows are read by ``load``)."""

    run_id: str
    name: str
    limit: int
    code: str  # hash of the computing packages' sources (the key)
    git: str  # ``git describe`` of the checkout that stored it
    computed: dt.datetime  # UTC, when the computation finished
    runtime_s: float
    n: int  # the most examples any row was scored on
    holds: bool | None  # None: undecided


def save(store: RunStore, payload: dict[str, Any]) -> StoredResult:
    """Keep one computed result (``engine.reproduce.run``'s payload) atomically; a stored result
    with the same name, slice and code version is replaced."""
    import pyarrow as pa

    rows = payload["rows"]
    meta = {name: value for name, value in payload.items() if name not in ("rows", "run_id")}
    schema = pa.schema(
        [
            ("label", pa.string()),
            ("key", pa.list_(pa.string())),
            ("published", pa.float64()),
            ("mean", pa.float64()),
            ("low", pa.float64()),
            ("high", pa.float64()),
            ("n", pa.int64()),
            ("values", pa.list_(pa.float64())),
        ],
        metadata={META: json.dumps(meta, allow_nan=False).encode()},
    )
    cells = [{**{name: row[name] for name in _ROW_FIELDS}, "values": row.get("values", [])} for row in rows]
    table = pa.Table.from_pylist(cells, schema=schema)
    info = store.save_whole(
        _new_run(payload), UnitStats(0, 0, len(rows), 0, 0.0, 0.0), table, float(payload["runtime_s"])
    )
    return _stored(info)


def listing(store: RunStore, name: str | None = None) -> list[StoredResult]:
    """Every stored result (of ``name`` when given), newest computation first."""
    found = [_stored(info) for info in store.infos() if info.kind == KIND and info.status == "done"]
    found = [result for result in found if name is None or result.name == name]
    return sorted(found, key=lambda result: result.computed, reverse=True)


def load(store: RunStore, run_id: str) -> dict[str, Any]:
    """The whole stored result: the payload ``engine.reproduce.run`` returned, plus its
    ``run_id``; ``UnreadableResult`` when its file is gone or damaged."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    info = store.get(run_id)
    if info.kind != KIND:
        raise ValueError(f"{run_id} is a run of kind {info.kind}, not a reproduction")
    paths = list(store.units(run_id).get("path", []))
    if len(paths) != 1:
        raise UnreadableResult(f"reproduction {run_id} has {len(paths)} stored files, expected one")
    try:
        table = pq.read_table(store.root / paths[0])
        meta = json.loads((table.schema.metadata or {})[META])
    except (OSError, pa.ArrowException, KeyError, ValueError) as error:
        raise UnreadableResult(f"stored reproduction {run_id} cannot be read ({type(error).__name__})") from None
    return {**meta, "rows": table.to_pylist(), "run_id": run_id}


def import_legacy(root: str | os.PathLike | None, known: Collection[str]) -> int:
    """Import the JSON results of earlier versions under ``<root>/reproduce/`` once (see the module
    docstring); returns how many were stored. Does nothing, and creates nothing, when that folder
    holds no ``*.json`` file."""
    folder = results_dir(root) / LEGACY_FOLDER
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        return 0
    store = RunStore(root)
    stored = {(r.name, r.limit, r.code) for r in listing(store)}
    imported = 0
    for path in files:
        try:
            payload = parsed_payload(path, known)
        except FileNotFoundError:  # another process imported it meanwhile
            continue
        if payload is None:
            _retire(path, ".unreadable")
            continue
        if (payload["name"], payload["limit"], payload["code_version"]) not in stored:
            try:
                save(store, payload)
            except (TypeError, ValueError):  # a value JSON or Parquet cannot hold (NaN, a text mean)
                _retire(path, ".unreadable")
                continue
            imported += 1
        _retire(path, ".imported")
    return imported


def parsed_payload(path: Path, known: Collection[str]) -> dict[str, Any] | None:
    """The parsed result in one JSON file (a legacy result, a bundled one), None when it is not one
    (bad JSON, missing fields, an unknown reproduction). Without ``computed``, the file's
    modification time stands for it."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(payload, dict) or any(field not in payload for field in _PAYLOAD_FIELDS):
        return None
    rows, finding = payload["rows"], payload["finding"]
    if payload["name"] not in known or not isinstance(payload["limit"], int) or not isinstance(rows, list):
        return None
    if not isinstance(finding, dict) or not (finding.get("holds") is None or isinstance(finding["holds"], bool)):
        return None
    if (
        "holds" not in finding
        or not isinstance(finding.get("reason"), str)
        or not isinstance(payload["settings"], dict)
    ):
        return None
    if not isinstance(payload["published_note"], str) or not isinstance(payload["differences"], list):
        return None
    if not all(isinstance(reason, str) for reason in payload["differences"]):
        return None
    if not all(isinstance(row, dict) and all(field in row for field in _ROW_FIELDS) for row in rows):
        return None
    modified = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).replace(tzinfo=None)
    return {**payload, "computed": payload.get("computed") or modified.isoformat(timespec="seconds")}


def _retire(path: Path, suffix: str) -> None:
    with contextlib.suppress(FileNotFoundError):  # another process retired it meanwhile
        os.replace(path, path.with_name(path.name + suffix))


def _new_run(payload: dict[str, Any]) -> NewRun:
    settings = payload["settings"]
    rows = payload["rows"]
    models = [*_names(settings.get("models")), *_names(settings.get("model")), *_names(settings.get("masked_lm"))]
    return NewRun(
        key_fields={"kind": KIND, "name": payload["name"], "limit": payload["limit"], "code": payload["code_version"]},
        kind=KIND,
        model=", ".join(dict.fromkeys(models)),
        model_fingerprint="",
        dataset=", ".join(_names(settings.get("data"))),
        split="",
        selection={
            "name": payload["name"],
            "limit": payload["limit"],
            "code": payload["code_version"],
            "computed": payload["computed"],
            "holds": _holds(payload["finding"]["holds"]),
            "n": max((int(row["n"]) for row in rows), default=0),
        },
        methods=_keys(settings.get("methods")),
        metrics=_keys(settings.get("metrics")),
        params={},
        overrides={},
        seed=None,
        target=str(settings.get("target", "")),
        label_names=(),
        chunk_size=max(1, len(rows)),
        rows_total=len(rows),
    )


def _names(value: Any) -> list[str]:
    """The text values of a setting: itself, a dict's values or a list's items."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else ()
    return [item for item in items if isinstance(item, str)]


def _keys(value: Any) -> list[str]:
    """A dict's keys (the paper's labels) or a list's items."""
    return [str(item) for item in value] if isinstance(value, dict | list | tuple) else []


def _stored(info: RunInfo) -> StoredResult:
    selection = info.selection
    return StoredResult(
        run_id=info.run_id,
        name=selection["name"],
        limit=int(selection["limit"]),
        code=selection["code"],
        git=info.code_version,
        computed=dt.datetime.fromisoformat(selection["computed"]),
        runtime_s=info.wall_s,
        n=int(selection["n"]),
        holds=_holds(selection["holds"]),
    )


def _holds(value: Any) -> bool | None:
    return None if value is None else bool(value)
