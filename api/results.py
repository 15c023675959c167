"""What the notebook API returns: an explanation of one text and the evaluation of a slice.

``ExplanationResult`` renders in Jupyter as the app's heatmap (``ui.heatmap``, every token
escaped), converts to pandas (one row per word, one column per method) and round-trips through
JSON without loss (schema ``explanation/1``, docs/attribution-schema.md). ``EvaluationResult``
gives the slice's summary and each example's metric values as DataFrames, its mean curves, and
each example's explanation. ``ExplanationResults`` is the list of explanations ``explain_many``
returns.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.progress import count_text
from core.types import Attribution, Example, encode_json, parsed_json, read_record
from engine.bundles import EXPLANATION_SCHEMA, read_explanation
from engine.evaluate import SliceEvaluation
from engine.explain import Explanation, Prediction
from engine.slice_report import mean_curves, metric_summaries, metric_values
from ui.heatmap import heatmap_html

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class ExplanationResult:
    """The engine's ``Explanation`` of one text, with the model it came from.

    ``example`` is the text as explained (cut to the model's length: ``dropped_words`` words were
    dropped from its end); ``errors`` holds the message of each method that refused it.
    """

    model: str
    label_names: tuple[str, ...]
    explanation: Explanation

    @property
    def example(self) -> Example:
        return self.explanation.example

    @property
    def probabilities(self) -> tuple[float, ...]:
        return self.explanation.prediction.probabilities

    @property
    def predicted(self) -> int:
        return self.explanation.prediction.predicted

    @property
    def target(self) -> int:
        return self.explanation.target

    @property
    def attributions(self) -> dict[str, Attribution]:
        return self.explanation.attributions

    @property
    def errors(self) -> dict[str, str]:
        return self.explanation.errors

    @property
    def dropped_words(self) -> int:
        return self.explanation.dropped_words

    @property
    def words(self) -> tuple[str, ...]:
        return self.example.words

    def __getitem__(self, method: str) -> Attribution:
        if method not in self.attributions:
            raise KeyError(f"no attribution for {method!r}; have: {', '.join(self.attributions) or 'none'}")
        return self.attributions[method]

    def label(self, index: int) -> str:
        """The model's name of output ``index`` (the index itself where the model names fewer)."""
        return self.label_names[index] if index < len(self.label_names) else str(index)

    def prediction_text(self, name: Callable[[str], str] = repr) -> str:
        """What the model predicts and what is explained (``Prediction.text``), each output's
        name as ``name`` writes it (quoted by default)."""
        return self.explanation.prediction.text(self.target, self.label_names, name)

    def prediction_html(self) -> str:
        """``prediction_text`` for a page: the names escaped, in bold."""
        return self.prediction_text(lambda label: f"<b>{html.escape(label)}</b>")

    def __repr__(self) -> str:
        """One line for a terminal (Jupyter shows the heatmap): the model, the prediction, the
        words and the methods, not every score."""
        dropped = f" ({self.dropped_words} dropped past the model's length)" if self.dropped_words else ""
        failed = f"; failed: {', '.join(self.errors)}" if self.errors else ""
        return (
            f"<ExplanationResult {self.model!r}: {self.prediction_text()}; {len(self.words)} "
            f"word{'' if len(self.words) == 1 else 's'}{dropped}; "
            f"methods: {', '.join(self.attributions) or 'none'}{failed}>"
        )

    def html(self, *, subwords: bool = False, shared_scale: bool = False) -> str:
        """The app's heatmap (one row per method) under a line naming the model, the prediction
        and the explained class; failed methods are listed below it. Every text is escaped."""
        head = (
            f"<p><b>{html.escape(self.model)}</b>: {self.prediction_html()}"
            + (f"; {self.dropped_words} words past the model's length dropped" if self.dropped_words else "")
            + "</p>"
        )
        body = heatmap_html(
            self.example.words,
            self.example.segment_ids,
            self.attributions,
            rationale=self.example.rationale,
            subwords=subwords,
            shared_scale=shared_scale,
        )
        failures = "".join(
            f'<p class="hm-error"><b>{html.escape(key)}</b> failed: {html.escape(message)}</p>'
            for key, message in self.errors.items()
        )
        return f'<div class="attrx-explanation">{head}{body}{failures}</div>'

    def _repr_html_(self) -> str:
        return self.html()

    def to_pandas(self) -> pd.DataFrame:
        """One row per word (``word``, ``segment``), one float32 column of scores per method."""
        import pandas as pd

        frame = pd.DataFrame({"word": list(self.example.words), "segment": list(self.example.segment_ids)})
        for key, attribution in self.attributions.items():
            frame[key] = attribution.scores
        frame.index.name = "position"
        return frame

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (schema ``explanation/1``); ``from_json`` gives back an equal
        result."""
        return {
            "schema": EXPLANATION_SCHEMA,
            "model": self.model,
            "label_names": list(self.label_names),
            "example": self.example.to_json(),
            "probabilities": [encode_json(float(p)) for p in self.probabilities],
            "predicted": self.predicted,
            "head": self.explanation.prediction.head,
            "target": self.target,
            "attributions": {key: a.to_json() for key, a in self.attributions.items()},
            "dropped_words": self.dropped_words,
            "errors": dict(self.errors),
            "windows": [list(span) for span in self.explanation.windows],
            "forward_passes": self.explanation.forward_passes,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> ExplanationResult:
        """The result written by ``to_json`` (a dict, or its JSON text), or read from the summary
        ``python -m cli explain --json`` prints (its example named ``cli``)."""
        from engine.imports.explanations import SUMMARY, check_explanation, is_summary

        document = parsed_json(data, f"{EXPLANATION_SCHEMA} record")
        if is_summary(document):
            explanation = check_explanation(document, "the record", SUMMARY)  # its words and prediction
            return cls(str(document.get("model")), tuple(map(str, document["label_names"])), explanation)
        record = read_record(document, EXPLANATION_SCHEMA)
        try:
            return cls._from_record(record)
        except (KeyError, TypeError, IndexError) as error:
            raise ValueError(f"not a valid {EXPLANATION_SCHEMA} record ({type(error).__name__}: {error})") from None

    @classmethod
    def _from_record(cls, record: Mapping[str, Any]) -> ExplanationResult:
        label_names = tuple(str(name) for name in record["label_names"])
        return cls(str(record["model"]), label_names, read_explanation(record, label_names))


class ExplanationResults(list[ExplanationResult]):
    """``explain_many``'s results: a list of ``ExplanationResult`` in the dataset's order, which
    Jupyter shows as their heatmaps (the first ``SHOWN``) and which converts to one pandas table."""

    SHOWN = 20

    def to_pandas(self) -> pd.DataFrame:
        """One row per word of every example: ``example`` (its index in the list), ``id``,
        ``target``, ``position``, ``word``, ``segment`` and one column of scores per method (NaN
        where a method failed on the example)."""
        import pandas as pd

        frames = []
        for index, result in enumerate(self):
            frame = result.to_pandas().reset_index()
            frame.insert(0, "example", index)
            frame.insert(1, "id", result.example.id)
            frame.insert(2, "target", result.target)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def to_json(self) -> list[dict[str, Any]]:
        """A JSON-ready list of the results' ``explanation/1`` records, which ``from_json`` (and
        ``python -m cli import``) reads back."""
        return [result.to_json() for result in self]

    @classmethod
    def from_json(cls, data: Sequence[Mapping[str, Any]] | str) -> ExplanationResults:
        """The results written by ``to_json`` (a list, or its JSON text); each record as
        ``ExplanationResult.from_json`` reads it."""
        records = parsed_json(data)
        if not isinstance(records, list):
            raise ValueError(f"expected a list of {EXPLANATION_SCHEMA} records, got {type(records).__name__}")  # noqa: TRY004
        results = cls()
        for index, record in enumerate(records):
            try:
                results.append(ExplanationResult.from_json(record))
            except ValueError as error:
                raise ValueError(f"record {index}: {error}") from None
        return results

    def __repr__(self) -> str:
        """One line for a terminal, not every result's (index the list to see one)."""
        models = sorted({result.model for result in self})
        return f"<ExplanationResults: {len(self)} explanations by {', '.join(map(repr, models)) or 'no model'}>"

    def _repr_html_(self) -> str:
        shown = "".join(result.html() for result in self[: self.SHOWN])
        rest = len(self) - self.SHOWN
        return shown + (f"<p>and {rest} more: index the list to see one</p>" if rest > 0 else "")


@dataclass(frozen=True)
class EvaluationResult:
    """Metrics of several methods over a slice (``evaluation`` is the engine's full record), with
    the model's class names, its head and the words cut from each example's end."""

    model: str
    evaluation: SliceEvaluation
    label_names: tuple[str, ...] = ()
    head: str = "single_label"
    dropped_words: tuple[int, ...] = ()  # one per result, in the order of evaluation.results
    partial: str | None = None  # a stored run read back before it finished: "killed, 2 of 8 examples"

    def per_example(self) -> pd.DataFrame:
        """One row per example and method: ``example`` (its position in the slice or run), ``id``,
        ``method``, ``target``, ``predicted``, ``label`` (the gold label as the model's class, <NA>
        where there is none) and one column per metric (NaN where the metric skipped the example or
        the method failed on it), to find the examples behind a mean."""
        import pandas as pd

        values = metric_values(self.evaluation)
        rows = [
            {
                "example": result.position,
                "id": result.example.id,
                "method": method,
                "target": result.target,
                "predicted": result.predicted,
                "label": result.example.label,
                **{metric: values[method][metric][index] for metric in self.evaluation.metric_keys},
            }
            for index, result in enumerate(self.evaluation.results)
            for method in self.evaluation.methods
        ]
        columns = ["example", "id", "method", "target", "predicted", "label", *self.evaluation.metric_keys]
        types = {"label": "Int64", **dict.fromkeys(self.evaluation.metric_keys, float)}
        return pd.DataFrame(rows, columns=columns).astype(types)

    def explanation(self, position: int) -> ExplanationResult:
        """The example at ``position`` (``per_example``'s ``example``: its index in the slice, or
        in a stored run) as ``explain`` shows one: its heatmap (every method's attribution),
        prediction and explained class, and the methods that failed on it."""
        index = next((i for i, r in enumerate(self.evaluation.results) if r.position == position), None)
        if index is None:
            raise IndexError(f"no example at position {position} (the examples scored are the per_example() rows)")
        result = self.evaluation.results[index]
        errors = {
            method: found["error"]
            for method, failures in self.evaluation.errors.items()
            for found in failures
            if found["index"] == result.position
        }
        prediction = Prediction(tuple(result.probabilities), result.predicted, self.head)
        dropped = self.dropped_words[index] if self.dropped_words else 0
        explanation = Explanation(result.example, prediction, result.target, dict(result.attributions), dropped, errors)
        return ExplanationResult(self.model, self.label_names, explanation)

    def summary(self) -> pd.DataFrame:
        """One row per method and metric: mean, 95% t interval (``low``, ``high``), the number of
        examples scored and skipped, and whether higher is better."""
        import pandas as pd

        import metrics

        rows = [
            {
                "method": method,
                "metric": metric,
                "mean": summary.mean,
                "low": summary.low,
                "high": summary.high,
                "n": summary.n,
                "skipped": summary.skipped,
                "higher_is_better": metrics.get(metric).higher_is_better,
            }
            for method, per_metric in metric_summaries(self.evaluation).items()
            for metric, summary in per_metric.items()
        ]
        return pd.DataFrame(rows).set_index(["method", "metric"])

    @property
    def mean_curves(self) -> dict[str, dict[str, dict[str, list[float]]]]:
        """``[method][metric]``: the pointwise mean curve with its 95% band (``x``, ``mean``,
        ``low``, ``high``) of every metric that has a curve."""
        return mean_curves(self.evaluation)

    @property
    def errors(self) -> dict[str, list[dict[str, Any]]]:
        """``[method]``: the examples it failed on (``index``, ``id``, ``error``)."""
        return self.evaluation.errors

    def __repr__(self) -> str:
        """One line for a terminal (``summary()`` gives the means, Jupyter shows them)."""
        evaluation = self.evaluation
        count = self.partial or count_text(len(evaluation.results), "example")
        return (
            f"<EvaluationResult {self.model!r}: {count}; "
            f"methods: {', '.join(evaluation.methods)}; metrics: {', '.join(evaluation.metric_keys)}>"
        )

    def _repr_html_(self) -> str:
        count = html.escape(self.partial or count_text(len(self.evaluation.results), "example"))
        return f"<p><b>{html.escape(self.model)}</b>, {count}</p>" + str(self.summary().to_html())
