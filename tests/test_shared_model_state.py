"""The shared, cached model carries no state from a request: no hooks left after attention
methods (transformers installs capture hooks on the first ``output_attentions=True`` call)."""

from __future__ import annotations

import threading

import numpy as np

from core.classifier import Classifier
from engine.explain import explain_example


def hook_count(model) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_attention_methods_leave_no_hooks(toy_bert_loaded, toy_example) -> None:
    model = toy_bert_loaded.model
    assert hook_count(model) == 0
    first = explain_example(Classifier(toy_bert_loaded), toy_example, ["attention_mean", "attention_rollout"])
    assert hook_count(model) == 0
    assert not getattr(model, "_output_capturing_hooks_installed", False)
    again = explain_example(Classifier(toy_bert_loaded), toy_example, ["attention_mean", "attention_rollout"])
    for key in ("attention_mean", "attention_rollout"):
        assert np.array_equal(first.attributions[key].scores, again.attributions[key].scores)


def test_concurrent_attention_requests_get_their_own_results(toy_bert_loaded, toy_example) -> None:
    expected = explain_example(Classifier(toy_bert_loaded), toy_example, ["attention_mean"]).attributions
    results, errors = [], []

    def run() -> None:
        try:
            results.append(explain_example(Classifier(toy_bert_loaded), toy_example, ["attention_mean"]).attributions)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and len(results) == 6
    assert all(np.array_equal(r["attention_mean"].scores, expected["attention_mean"].scores) for r in results)
    assert hook_count(toy_bert_loaded.model) == 0
