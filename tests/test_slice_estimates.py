"""The time estimate a dataset slice shows before its Run button (``services.estimate_slice``):
its passes counted by hand on the toy classifier, and its seconds weighed by each example's tokens."""

from __future__ import annotations

import math

import pytest

import services
from core.classifier import Classifier
from core.types import Example

SHORT = Example(segments=(("a", "fine", "film", "."),), id="toy/short")
LONG = Example(segments=(("the", "movie", "was", "great", "but", "the", "plot", "was", "bad", "."),), id="toy/long")
MIDDLE = Example(segments=(("the", "plot", "was", "bad", "."),), id="toy/middle")


@pytest.fixture
def toy_services(monkeypatch, toy_linear_loaded):
    monkeypatch.setattr(services.models, "loaded", lambda name: toy_linear_loaded)
    monkeypatch.setattr(services.estimates, "measured_rate", lambda model, example: 100.0)
    return Classifier(toy_linear_loaded)


def test_passes_are_the_methods_and_metrics_cost_models_summed_over_the_examples(toy_services):
    examples = [SHORT, LONG, MIDDLE]
    metric_sets = [{"deletion": {}, "comprehensiveness": {}}, {"deletion": {"removal": "mlm", "fraction": 1.0}}]
    estimate = services.estimate_slice("toy", examples, ["loo_empty", "im"], {"im": {"k": 3}}, metric_sets)

    def passes(n: int) -> tuple[int, int]:
        loo, im = n + 1, 1 + 3 * n  # the original and one per word; the original and k fill-ins per word
        deletion = 1 + math.ceil(0.2 * n) + 1  # the original, then 0..ceil(0.2 n) words removed
        comprehensiveness = 1 + len({0.01, 0.05, 0.10, 0.20, 0.50})
        full_deletion = 1 + n + 1
        metrics = 2 * (deletion + comprehensiveness + full_deletion)  # both methods' attributions
        return loo + im + metrics, n + 2 * n  # IM's masked-LM pass per word; each method's n fill-ins

    counted = [passes(len(e.words)) for e in examples]
    assert estimate.classifier_passes == sum(c for c, _ in counted)
    assert estimate.mlm_passes == sum(m for _, m in counted)
    assert estimate.backward_passes == 0
    # Seconds: each example's passes at the median example's tokens per second (100 passes/s).
    tokens = [toy_services.token_count(e) for e in examples]
    per_second = 100.0 * sorted(tokens)[1]
    expected = sum((c + m) * t / per_second for (c, m), t in zip(counted, tokens))
    assert estimate.seconds == pytest.approx(expected)


def test_imported_attributions_are_scored_not_computed(toy_services):
    metrics = [{"log_odds": {}}]
    alone = services.estimate_slice("toy", [LONG], ["loo_empty"], {}, metrics)
    with_two = services.estimate_slice("toy", [LONG], ["loo_empty"], {}, metrics, scored=2)
    assert with_two.classifier_passes - alone.classifier_passes == 2 * 2  # two inputs per log-odds plan


def test_gradient_methods_count_their_backward_passes(toy_services):
    estimate = services.estimate_slice(
        "toy", [SHORT], ["integrated_gradients"], {"integrated_gradients": {"n_steps": 8}}, []
    )
    # 8 path points forward and backward, and the input and the baseline forward (completeness)
    assert (estimate.classifier_passes, estimate.backward_passes) == (10, 8)
    tokens = toy_services.token_count(SHORT)
    units = 10 + services.estimates.BACKWARD_COST * 8
    assert estimate.seconds == pytest.approx(units * tokens / (100.0 * tokens))


def test_an_empty_slice_costs_nothing(toy_services):
    assert services.estimate_slice("toy", [], ["loo_empty"], {}, [{"deletion": {}}]) == services.CostEstimate(0, 0, 0.0)
