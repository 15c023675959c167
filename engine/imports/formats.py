"""Readers of attribution files made elsewhere, each to a list of ``records.Imported`` (inseq and
Thermostat in their own modules).

- ``json``: this project's own JSON (docs/attribution-schema.md): one ``attribution/1`` record,
  a list of them, the heatmap page's ``{method: attribution/1}`` download (each record with the
  example's ``segment_ids``, which split a pair's words into its two texts), an ``explanation/1``
  (the notebook API; a list of them from ``ExplanationResults.to_json``), the summary
  ``explain --json`` prints, or a session bundle's ``bundle.json`` (or the bundle's zip, whose
  ``bundle.json`` is read as ``engine.bundles`` reads it). Word level.
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

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from engine.bundles import BUNDLE_SCHEMA, EXPLANATION_SCHEMA
from engine.imports.explanations import checked_example, is_summary, segments_of
from engine.imports.inseq import read_inseq
from engine.imports.records import (
    BadFile,
    Imported,
    Segments,
    check_count,
    method_name,
    number,
    numbers,
    optional_int,
    parse_json,
    read_limited,
    strings,
)
from engine.imports.thermostat import arrow_rows, json_lines, saved_dataset, thermostat_rows

if TYPE_CHECKING:
    from core.types import Attribution, Example

FORMATS = ("json", "csv", "ferret", "inseq", "thermostat")
_T = TypeVar("_T")


def read_file(path: str | Path, fmt: str | None = None, *, name: str | None = None) -> tuple[str, list[Imported]]:
    """(format, records) of the file at ``path``; ``fmt`` None detects the format from the
    content. ``name`` is the name used in messages (an upload's own name)."""
    path = Path(path)
    name = name or path.name
    if path.is_dir():
        records = refused_as_bad_file(name, lambda: thermostat_rows(saved_dataset(path), name))
        return "thermostat", check_count(records, name)
    data = read_limited(path)
    return read_bytes(data, name, fmt)


def read_bytes(data: bytes, name: str, fmt: str | None = None) -> tuple[str, list[Imported]]:
    """(format, records) of a file's bytes (an upload)."""
    return refused_as_bad_file(name, _read_bytes, data, name, fmt)


def refused_as_bad_file(name: str, read: Callable[..., _T], *args: Any) -> _T:
    """``read(*args)``, where anything a malformed file makes the parsing raise is a ``BadFile``:
    the one boundary where a file from anyone is parsed (the readers name the record where they
    can; this catches what they did not foresee, such as a number too large for a float)."""
    try:
        return read(*args)
    except BadFile:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as error:
        reason = " ".join(str(error).split())[:200]
        raise BadFile(f"{name} could not be read ({type(error).__name__}: {reason})") from None


def _read_bytes(data: bytes, name: str, fmt: str | None) -> tuple[str, list[Imported]]:
    if fmt is not None and fmt not in FORMATS:
        raise BadFile(f"unknown import format {fmt!r}; known: {', '.join(FORMATS)}")
    if not data or data.isspace():
        raise BadFile(f"{name} is empty")
    if data[:4] == b"PAR1" or data[:6] == b"ARROW1" or data[:4] == b"\xff\xff\xff\xff":
        if fmt not in (None, "thermostat"):
            raise BadFile(f"{name} is a binary table; only the thermostat format is read from one")
        return "thermostat", check_count(thermostat_rows(arrow_rows(data, name), name), name)
    if data[:2] == b"PK" and fmt in (None, "json"):  # a session bundle's zip
        return "json", check_count(read_ours(parse_json(session_bundle_json(data, name), name), name), name)
    if fmt == "csv" or (fmt is None and name.lower().endswith((".csv", ".tsv"))):
        return "csv", check_count(read_csv(data, name), name)
    if fmt == "thermostat" or (fmt is None and name.lower().endswith(".jsonl")):
        return "thermostat", check_count(thermostat_rows(json_lines(data, name), name), name)
    document = parse_json(data, name)
    if document == [] or document == {}:
        raise BadFile(f"{name} holds no attribution")
    found = fmt or detect(document, name)
    return found, check_count(READERS[found](document, name), name)


def session_bundle_json(data: bytes, name: str) -> bytes:
    """The ``bundle.json`` of a session bundle's zip (``engine.bundles``), whose attributions are
    then read as our JSON."""
    from engine.bundles import bundle_json

    try:
        return bundle_json(data, name)[0]
    except ValueError as error:
        raise BadFile(str(error)) from None


def detect(document: Any, name: str) -> str:
    """The format of a parsed JSON document."""
    first = document[0] if isinstance(document, list) and document else document
    if isinstance(first, dict):
        if "sequence_attributions" in first:
            return "inseq"
        if (
            "schema" in first
            or is_summary(first)
            or (first and all(isinstance(v, dict) and "schema" in v for v in first.values()))
        ):
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
    from core.types import ATTRIBUTION_SCHEMA, Attribution, decode_json

    def attribution(record: Any, where: str, model: Any = None, example: Example | None = None) -> Imported:
        if not isinstance(record, dict) or record.get("schema") != ATTRIBUTION_SCHEMA:
            raise BadFile(f"{where}: expected an {ATTRIBUTION_SCHEMA!r} record")
        try:  # the scores as written and finite: Attribution keeps NaN, which an import refuses
            scores = numbers(decode_json(record["scores"]), where)
            parsed = Attribution.from_json(record)
        except BadFile:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise BadFile(
                f"{where}: not a valid {ATTRIBUTION_SCHEMA} record ({type(error).__name__}: {error})"
            ) from None
        if parsed.example_id is not None and not isinstance(parsed.example_id, str):
            raise BadFile(f"{where}: example_id must be text, got {type(parsed.example_id).__name__}")
        return Imported(
            method=method_name("json", parsed.method, where),
            scores=scores,
            level="word",
            where=where,
            example_id=parsed.example_id or None,
            words=parsed.words,
            segments=example.segments if example is not None else _segments(record, parsed.words, where),
            target=parsed.target,
            example=example,
            subwords=_subwords(record, parsed, where),
            extras={"params": record.get("params"), "original_method": parsed.method, "model": model},
        )

    def whole(record: dict, where: str) -> list[Imported]:
        example = checked_example(record, where)  # the whole record, as ``open`` / ``from_json`` check it
        found = record.get("attributions")
        if not isinstance(found, dict):
            raise BadFile(f"{where}: {record.get('schema')} without an 'attributions' object")
        model = record.get("model")  # the model the file was made with (a note if it is not ours)
        return [attribution(r, f"{where} attribution {k!r}", model, example) for k, r in found.items()]

    def is_whole(record: Any) -> bool:
        return isinstance(record, dict) and (
            record.get("schema") in (EXPLANATION_SCHEMA, BUNDLE_SCHEMA) or is_summary(record)
        )

    if isinstance(document, list):  # attribution/1 records, or whole explanations (``ExplanationResults``)
        return [
            found
            for i, r in enumerate(document)
            for found in (whole(r, f"{name} record {i}") if is_whole(r) else [attribution(r, f"{name} record {i}")])
        ]
    if not isinstance(document, dict):
        raise BadFile(f"{name}: expected a JSON object or list, got {type(document).__name__}")
    schema = document.get("schema")
    if schema == ATTRIBUTION_SCHEMA:
        return [attribution(document, f"{name} record 0")]
    if is_whole(document):
        return whole(document, name)
    if schema is None:
        return [attribution(r, f"{name} attribution {k!r}") for k, r in document.items()]
    raise BadFile(f"{name}: unknown schema {schema!r}")


def _segments(record: dict, words: tuple[str, ...], where: str) -> Segments | None:
    """The texts of an ``attribution/1`` record's words where it gives their ``segment_ids`` (the
    heatmap page's download of a pair), else None."""
    if record.get("segment_ids") is None:
        return None
    try:
        return segments_of(words, record["segment_ids"])
    except ValueError as error:
        raise BadFile(f"{where}: {error}") from None


def _subwords(record: dict, parsed: Attribution, where: str) -> tuple[tuple[str, float, int], ...]:
    """(subword, score, word index) of a record whose ``subword_word_ids`` give each subword's
    word (one per subword, in order, each a word of the record); none otherwise."""
    from core.types import decode_json

    ids, found = parsed.subword_word_ids, parsed.subword_scores
    if found is None or not ids or not len(parsed.subwords) == len(ids) == len(found):
        return ()
    if list(ids) != sorted(ids) or ids[0] < 0 or ids[-1] >= len(parsed.words):
        return ()
    scores = numbers(decode_json(record["subword_scores"]), f"{where} subword_scores")
    return tuple(zip(parsed.subwords, scores, ids, strict=True))


# ---------------------------------------------------------------------------------- CSV


def read_csv(data: bytes, name: str) -> list[Imported]:
    """Rows of (example id, word index, score[, method][, target]) grouped by example and method;
    word indices must cover 0..n-1 of each example exactly once."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise BadFile(f"{name} is not UTF-8 text (byte {error.start})") from None
    dialect = "excel-tab" if "\t" in text.split("\n", 1)[0] else "excel"
    reader = csv.DictReader(io.StringIO(text, newline=""), dialect=dialect)
    try:
        return _csv_records(reader, name)
    except csv.Error as error:  # a field over csv's size limit, a stray carriage return
        raise BadFile(f"{name} line {reader.line_num}: {error}") from None


def _csv_records(reader: csv.DictReader, name: str) -> list[Imported]:
    header = [h.strip().lower() for h in reader.fieldnames or []]
    reader.fieldnames = header
    id_column = "example_id" if "example_id" in header else "id" if "id" in header else None
    if id_column is None or "word_index" not in header or "score" not in header:
        raise BadFile(f"{name}: the header needs example_id (or id), word_index and score columns")
    groups: dict[tuple[str, str], dict[int, float]] = {}
    targets: dict[tuple[str, str], int | str | None] = {}
    for line, row in enumerate(reader, 2):
        where = f"{name} line {line}"
        if None in row:
            raise BadFile(f"{where}: more fields than the header")
        if row["word_index"] is None or row["score"] is None:
            raise BadFile(f"{where}: fewer fields than the header")
        example_id = (row.get(id_column) or "").strip()
        if not example_id:
            raise BadFile(f"{where}: empty {id_column}")
        try:
            index = int(row["word_index"])
        except ValueError:
            raise BadFile(f"{where}: word_index must be a whole number, got {row['word_index']!r:.40}") from None
        if index < 0:
            raise BadFile(f"{where}: word_index {index} is negative (words count from 0)")
        try:
            value = float(row["score"])
        except ValueError:
            raise BadFile(f"{where}: score must be a number, got {row['score']!r:.40}") from None
        score = number(value, where)
        key = (example_id, method_name("csv", row.get("method") or "scores", where))
        target = csv_target((row.get("target") or "").strip(), where)
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
            raise BadFile(
                f"{name}: example {example_id!r} has a score for word {max(per)} but none for word {missing[0]}"
            )
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


def csv_target(text: str, where: str) -> int | str | None:
    """A CSV row's target: a class index (a whole number), a label name (any other text, matched
    to the model's labels when the file is aligned) or None (an empty cell: the class explained)."""
    digits = text.removeprefix("-")
    if digits.isascii() and digits.isdigit():  # not "²"
        if len(digits) >= 10:
            raise BadFile(f"{where}: target {text:.40} is too large for a class index")
        return int(text)
    return text or None


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
                method=method_name("ferret", explainer if isinstance(explainer, str) else "explainer", where),
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


READERS: dict[str, Callable[[Any, str], list[Imported]]] = {
    "json": read_ours,
    "ferret": read_ferret,
    "inseq": read_inseq,
    "thermostat": thermostat_rows,
}
