"""Per-example rows of a run: ``ExampleResult``s to an Arrow table (one unit's Parquet file) and
back to a ``SliceEvaluation``, so everything ``engine.evaluate`` computes over a slice
(``summarize``, ``mean_curves``, ``rationale_references``, ``example_json``) is recomputed from the
stored rows with the same code.

Columns (one row per example; ``M`` a method key, ``K`` a metric key):

========================  ==========================================================================
``position``              index of the example in the run's selection
``id``                    the example's id
``words``, ``segment_ids``  the words the model saw (cut to its length) and their segment
``label``                 gold label (null when the data has none)
``target``                the class explained
``probabilities``         the model's class probabilities
``rationale``, ``rationales``  majority and per-annotator human masks (null / empty when none)
``dropped_words``         words cut to fit the model's length
``score/M``               the method's word scores (float32), null where the method failed
``attribution/M``         JSON: the rest of the ``Attribution`` (params, seed, runtime, passes,
                          extras, subwords); null where the method failed
``error/M``               the method's error message on this example, else null
``value/M/K``             the metric's value, null where it was skipped or the method failed
``curve/M/K``             the metric's curve as [x, y] pairs (empty when it has none)
``extras/M/K``            JSON: the metric's extras
========================  ==========================================================================
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from core.types import Attribution, Example
from engine.evaluate import ExampleResult, SliceEvaluation
from metrics.base import MetricResult

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


def _json(value: Any) -> str:
    return json.dumps(value, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def schema(methods: Sequence[str], metric_keys: Sequence[str]) -> pa.Schema:
    """The Arrow schema of a run's rows (the same for every unit of the run)."""
    import pyarrow as pa

    fields = [
        pa.field("position", pa.int64()),
        pa.field("id", pa.string()),
        pa.field("words", pa.list_(pa.string())),
        pa.field("segment_ids", pa.list_(pa.int8())),
        pa.field("label", pa.int64()),
        pa.field("target", pa.int64()),
        pa.field("probabilities", pa.list_(pa.float64())),
        pa.field("rationale", pa.list_(pa.int8())),
        pa.field("rationales", pa.list_(pa.list_(pa.int8()))),
        pa.field("dropped_words", pa.int64()),
    ]
    for method in methods:
        fields += [
            pa.field(f"score/{method}", pa.list_(pa.float32())),
            pa.field(f"attribution/{method}", pa.string()),
            pa.field(f"error/{method}", pa.string()),
        ]
        for key in metric_keys:
            fields += [
                pa.field(f"value/{method}/{key}", pa.float64()),
                pa.field(f"curve/{method}/{key}", pa.list_(pa.list_(pa.float64()))),
                pa.field(f"extras/{method}/{key}", pa.string()),
            ]
    return pa.schema(fields)


def to_table(evaluation: SliceEvaluation, dropped_words: Sequence[int] | None = None) -> pa.Table:
    """One row per ``ExampleResult`` of ``evaluation`` (positions as they are in the results)."""
    import pyarrow as pa

    errors = {
        (method, failure["index"]): failure["error"]
        for method, failures in evaluation.errors.items()
        for failure in failures
    }
    columns: dict[str, list[Any]] = {name: [] for name in schema(evaluation.methods, evaluation.metric_keys).names}
    for i, result in enumerate(evaluation.results):
        example = result.example
        columns["position"].append(result.position)
        columns["id"].append(example.id)
        columns["words"].append(list(example.words))
        columns["segment_ids"].append(list(example.segment_ids))
        columns["label"].append(example.label)
        columns["target"].append(result.target)
        columns["probabilities"].append(list(result.probabilities))
        columns["rationale"].append(list(example.rationale) if example.rationale is not None else None)
        columns["rationales"].append([list(mask) for mask in example.rationales])
        columns["dropped_words"].append(int(dropped_words[i]) if dropped_words is not None else 0)
        for method in evaluation.methods:
            attribution = result.attributions.get(method)
            columns[f"score/{method}"].append(attribution.scores.tolist() if attribution is not None else None)
            columns[f"attribution/{method}"].append(_attribution_json(attribution) if attribution else None)
            columns[f"error/{method}"].append(errors.get((method, result.position)))
            per_metric = result.metrics.get(method, {})
            for key in evaluation.metric_keys:
                metric = per_metric.get(key)
                columns[f"value/{method}/{key}"].append(metric.value if metric is not None else None)
                columns[f"curve/{method}/{key}"].append([list(p) for p in metric.curve] if metric else None)
                columns[f"extras/{method}/{key}"].append(_json(metric.extras) if metric is not None else None)
    return pa.table(columns, schema=schema(evaluation.methods, evaluation.metric_keys))


def _attribution_json(attribution: Attribution) -> str:
    payload = attribution.to_json()
    del payload["scores"]
    payload.update(
        seed=attribution.seed,
        subwords=list(attribution.subwords),
        subword_scores=None if attribution.subword_scores is None else attribution.subword_scores.tolist(),
        subword_word_ids=list(attribution.subword_word_ids),
    )
    return _json(payload)


def example_of(row: dict[str, Any], dataset: str, split: str, label_names: Sequence[str]) -> Example:
    """The (cut) ``Example`` a stored row was computed on."""
    words, segment_ids = row["words"], row["segment_ids"]
    n_segments = max(segment_ids) + 1 if segment_ids else 1
    segments = tuple(tuple(w for w, s in zip(words, segment_ids, strict=True) if s == k) for k in range(n_segments))
    rationale = row["rationale"]
    return Example(
        segments=segments,
        label=row["label"],
        label_names=tuple(label_names),
        rationales=tuple(tuple(mask) for mask in row["rationales"] or ()),
        rationale=tuple(rationale) if rationale is not None else None,
        dataset=dataset,
        split=split,
        id=row["id"],
    )


def attribution_of(row: dict[str, Any], method: str, example: Example) -> Attribution | None:
    """The method's ``Attribution`` stored in a row, None where the method failed."""
    scores = row.get(f"score/{method}")
    if scores is None:
        return None
    meta = json.loads(row[f"attribution/{method}"])
    subword_scores = meta["subword_scores"]
    return Attribution(
        method=method,
        example_id=example.id,
        target=int(row["target"]),
        words=example.words,
        scores=np.asarray(scores, dtype=np.float32),
        params=meta["params"],
        seed=meta["seed"],
        subwords=tuple(meta["subwords"]),
        subword_scores=None if subword_scores is None else np.asarray(subword_scores, dtype=np.float32),
        subword_word_ids=tuple(meta["subword_word_ids"]),
        runtime_s=meta["runtime_s"],
        forward_passes=meta["forward_passes"],
        backward_passes=meta["backward_passes"],
        extras=meta["extras"],
    )


def from_table(
    table: pa.Table,
    methods: Sequence[str],
    metric_keys: Sequence[str],
    *,
    dataset: str,
    split: str,
    label_names: Sequence[str],
) -> SliceEvaluation:
    """The ``SliceEvaluation`` of stored rows (sorted by position). Times and passes are the
    caller's to fill in (the catalogue has them per unit)."""
    evaluation = SliceEvaluation(list(methods), list(metric_keys))
    rows = sorted(table.to_pylist(), key=lambda r: r["position"])
    for row in rows:
        example = example_of(row, dataset, split, label_names)
        attributions: dict[str, Attribution] = {}
        metrics: dict[str, dict[str, MetricResult]] = {}
        for method in methods:
            error = row.get(f"error/{method}")
            if error is not None:
                evaluation.errors.setdefault(method, []).append(
                    {"index": row["position"], "id": example.id, "error": error}
                )
            attribution = attribution_of(row, method, example)
            if attribution is None:
                continue
            attributions[method] = attribution
            metrics[method] = {
                key: MetricResult(
                    row[f"value/{method}/{key}"],
                    tuple(tuple(point) for point in row[f"curve/{method}/{key}"] or ()),
                    json.loads(row[f"extras/{method}/{key}"]),
                )
                for key in metric_keys
                if row[f"extras/{method}/{key}"] is not None
            }
        skipped = tuple(k for k in metric_keys if not any(k in per for per in metrics.values()))
        evaluation.results.append(
            ExampleResult(
                example,
                tuple(row["probabilities"]),
                int(row["target"]),
                attributions,
                metrics,
                skipped,
                int(row["position"]),
            )
        )
    return evaluation


def to_frame(table: pa.Table) -> pd.DataFrame:
    """Rows as a pandas DataFrame sorted by position (list columns hold numpy arrays)."""
    frame = table.to_pandas()
    if "position" in frame:
        frame = frame.sort_values("position", kind="stable").reset_index(drop=True)
    return frame
