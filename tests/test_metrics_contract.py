"""One contract test over the whole metric registry (like the explainer one in test_explainers.py):
every registered metric, on the toy BERT classifier, gives a value in its declared range (or NaN
with a reason), the same value twice, leaves the shared model unchanged and declares its direction
and label. A metric added to a family module is covered with no edit here."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

import metrics
from core.classifier import Classifier
from core.types import Example
from explainers.base import make_attribution
from metrics.base import MetricResult, MetricSpec

WORDS = ("the", "film", "was", "unbelievable", "and", "fun")
EXAMPLE = Example(
    segments=(WORDS,),
    id="toy/metric-contract",
    rationales=((0, 0, 0, 1, 0, 1), (0, 0, 0, 1, 1, 1)),
    rationale=(0, 0, 0, 1, 0, 1),
)
NO_RATIONALE = Example(segments=(WORDS,), id="toy/metric-contract-empty", rationale=(0, 0, 0, 0, 0, 0))
SCORES = np.array([0.05, -0.2, 0.1, 0.9, -0.4, 0.6])


def _compute(spec: MetricSpec, clf: Classifier, example: Example) -> MetricResult:
    attribution = make_attribution(example, 1, SCORES)
    return spec.compute(clf if spec.needs_classifier else None, example, attribution)


@pytest.mark.parametrize("key", list(metrics.REGISTRY))
def test_metric_registry_contract(key: str, toy_bert_loaded) -> None:
    spec = metrics.get(key)
    assert isinstance(spec.higher_is_better, bool), f"{key} declares no direction"
    assert spec.label and spec.description and spec.paper and spec.family
    assert all(f.metadata.get("help") for f in dataclasses.fields(spec.params_cls)), f"{key}: a parameter has no help"
    before = {name: t.clone() for name, t in toy_bert_loaded.model.state_dict().items()}
    clf = Classifier(toy_bert_loaded)

    first = _compute(spec, clf, EXAMPLE)
    if math.isnan(first.value):
        assert first.extras.get("skipped"), f"{key} gave NaN without a reason"
    elif spec.value_range is not None:
        low, high = spec.value_range
        assert low - 1e-9 <= first.value <= high + 1e-9, (key, first.value)
    assert math.isfinite(first.value), f"{key} should score an example with a rationale"
    again = _compute(spec, Classifier(toy_bert_loaded, batch_size=1), EXAMPLE)
    assert again.value == pytest.approx(first.value, rel=1e-5, abs=1e-7)
    for name, tensor in toy_bert_loaded.model.state_dict().items():
        assert torch.equal(tensor, before[name]), f"{key} changed {name}"
    assert all(p.grad is None for p in toy_bert_loaded.model.parameters())

    if spec.needs_rationale:
        empty = _compute(spec, clf, NO_RATIONALE)
        assert math.isnan(empty.value) and empty.extras.get("skipped"), key


def _spec(value: float, extras: dict | None = None, **kwargs) -> MetricSpec:
    def function(clf, example, attribution, params, *, mlm=None) -> MetricResult:
        return MetricResult(value, extras=extras or {})

    base = metrics.get("iou")
    fields = {
        "key": "toy",
        "function": function,
        "params_cls": base.params_cls,
        "description": "a toy metric",
        "label": "toy",
        "family": "toy",
        "paper": "none",
        "higher_is_better": True,
        "value_range": (0.0, 1.0),
        "needs_classifier": False,
    }
    return MetricSpec(**{**fields, **kwargs})


def test_compute_enforces_the_declared_range_and_reasons() -> None:
    attribution = make_attribution(EXAMPLE, 1, SCORES)
    assert _spec(0.25).compute(None, EXAMPLE, attribution).value == 0.25
    with pytest.raises(ValueError, match=r"toy returned 1\.5, outside its range \[0\.0, 1\.0\]"):
        _spec(1.5).compute(None, EXAMPLE, attribution)
    with pytest.raises(ValueError, match="NaN without a reason"):
        _spec(float("nan")).compute(None, EXAMPLE, attribution)
    assert math.isnan(_spec(float("nan"), {"skipped": "no rationale"}).compute(None, EXAMPLE, attribution).value)
    assert _spec(7.0, value_range=None).compute(None, EXAMPLE, attribution).value == 7.0
    with pytest.raises(ValueError, match="toy needs a classifier"):
        _spec(0.5, needs_classifier=True).compute(None, EXAMPLE, attribution)
    with pytest.raises(ValueError, match="value_range"):
        _spec(0.5, value_range=(1.0, 0.0))


def test_registry_is_read_only() -> None:
    with pytest.raises(TypeError):
        metrics.REGISTRY["toy"] = _spec(0.5)  # type: ignore[index]


def test_an_interval_is_cut_to_the_values_range() -> None:
    """The mean of values in [0, 1] lies in [0, 1]: its t interval is cut there, the mean is not."""
    from metrics.base import Summary, mean_interval

    values = [0.9, 1.0, 1.0, 0.95]
    mean, low, high, n = mean_interval(values)
    assert high > 1.0 and n == 4  # the plain t interval spills over
    cut = Summary.of(values, skipped=1, bounds=(0.0, 1.0))
    assert (cut.mean, cut.low, cut.high, cut.n, cut.skipped) == (mean, low, 1.0, 4, 1)
    assert mean_interval([0.0, 0.0, 0.1], bounds=(0.0, 1.0))[1] == 0.0
    # a regression head's scores under a probability metric's range: not theirs, so not cut
    scores = [2.0, 3.0, 4.5]
    assert mean_interval(scores, bounds=(0.0, 1.0)) == mean_interval(scores)
    assert mean_interval(scores)[1] < 3.1667 < mean_interval(scores)[2]


def test_a_mean_curves_band_is_cut_to_the_curves_range() -> None:
    """Each point of a slice's mean curve has the interval of its values, cut to the metric's
    range as a summary's is: a deletion curve's band stays inside [0, 1] where the plain t
    interval of four probabilities near 1 passes it; a regression score's band is left alone."""
    from metrics.base import mean_interval
    from metrics.faithfulness import mean_curve

    curves = [((0.0, p), (1.0, q)) for p, q in [(0.95, 0.2), (1.0, 0.1), (1.0, 0.5), (0.9, 0.0)]]
    plain, cut = mean_curve(curves), mean_curve(curves, bounds=(0.0, 1.0))
    assert plain["x"] == cut["x"] == [0.0, 1.0] and plain["mean"] == cut["mean"]
    assert plain["high"][0] > 1.0 and plain["low"][1] < 0.0  # what the band was before
    assert cut["high"][0] == 1.0 and cut["low"][1] == 0.0
    assert cut["low"][0] == plain["low"][0] == mean_interval([0.95, 1.0, 1.0, 0.9])[1]
    scores = [((0.0, 1.5), (1.0, 0.2)), ((0.0, 2.5), (1.0, 0.1))]
    assert mean_curve(scores, bounds=(0.0, 1.0)) == mean_curve(scores)


def test_one_value_has_no_interval_and_tables_print_none() -> None:
    """A t interval needs two values: one gives NaN, not a zero-width interval that made a
    one-seed ROAR rise look significant; tables print the mean alone (also for IOU-F1's figure,
    which has no interval), and "—" where nothing was scored."""
    from metrics.base import Summary, interval_text, mean_interval

    mean, low, high, n = mean_interval([0.4])
    assert (mean, n) == (0.4, 1) and math.isnan(low) and math.isnan(high)
    assert Summary.of([0.4]).text() == "0.400"
    assert Summary(0.58, float("nan"), float("nan"), 20).text() == "0.580"  # not "0.580 [nan, nan]"
    assert Summary.of([0.2, 0.4]).text(digits=1) == "0.3 [-1.0, 1.6]"  # t(0.975, 1) = 12.71
    assert Summary.of([]).text() == "—"
    assert interval_text(0.5, 0.25, 0.75, 4, show_n=True) == "0.500 [0.250, 0.750] n=4"
    assert interval_text(None, None, None, 0, show_n=True) == "—"
