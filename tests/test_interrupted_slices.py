"""A dataset slice stopped part-way in the app (a closed tab, a page left: Streamlit stops the
script at its next call) keeps the examples it finished, says where it stopped, and the same
request goes on from there to the result an uninterrupted run gives."""

from __future__ import annotations

import numpy as np
import pytest

import services
from core.classifier import Classifier
from core.loaded import load_classifier
from core.types import Example
from engine import evaluate as engine
from engine import slice_report as reports
from services import slices

WORDS = ["the", "movie", "was", "great", "but", "the", "plot", "was", "bad", "."]
METRICS = {"deletion": {"removal": "delete", "fraction": 0.5}, "comprehensiveness": {"removal": "delete"}}


class Stopped(BaseException):
    """Stands in for Streamlit's StopException, raised from the progress bar's next update."""


def examples() -> list[Example]:
    return [Example(segments=(tuple(WORDS[i:] + WORDS[:i]),), id=f"toy/{i}") for i in range(5)]


def test_a_stopped_slice_resumes_where_it_stopped(model_dirs, monkeypatch) -> None:
    """A slice stopped between groups keeps the groups it finished (groups of 2 here, of equal
    length so in slice order: 0-1, 2-3, 4) and resumes with the rest."""
    monkeypatch.setitem(engine.evaluate_slice.__kwdefaults__, "group", 2)
    model = str(model_dirs[0])
    methods = ["loo_empty", "saliency"]
    started: list[str] = []

    def stop_at_third(fraction: float, message: str) -> None:
        if message.startswith("example 3 "):
            raise Stopped
        started.append(message)

    with pytest.raises(Stopped):
        services.evaluate_slice(model, examples(), methods, METRICS, progress=stop_at_third)
    assert services.slice_stopped_at(model, examples(), methods, METRICS) == (2, 5)
    assert services.slice_stopped_at(model, examples()[:4], methods, METRICS) is None  # another request

    resumed: list[str] = []
    result = services.evaluate_slice(model, examples(), methods, METRICS, progress=lambda f, m: resumed.append(m))
    assert [m for m in resumed if m.startswith("example ")] == [f"example {i} of 5" for i in (3, 5)]
    assert services.slice_stopped_at(model, examples(), methods, METRICS) is None

    clf = Classifier(load_classifier(model))
    whole = engine.evaluate_slice(clf, examples(), methods, engine.metric_params(list(METRICS), METRICS))
    expected = reports.metric_values(whole)
    for method in methods:
        for metric in METRICS:
            np.testing.assert_allclose(result.values[method][metric], expected[method][metric], rtol=1e-6)
    assert result.forward_passes == whole.forward_passes


def test_a_slice_stopped_before_any_example_leaves_nothing(model_dirs) -> None:
    model = str(model_dirs[0])

    def stop_at_once(fraction: float, message: str) -> None:
        raise Stopped

    with pytest.raises(Stopped):
        services.evaluate_slice(model, examples(), ["random"], METRICS, progress=stop_at_once)
    assert services.slice_stopped_at(model, examples(), ["random"], METRICS) is None
    assert not any(key[0] == "faithfulness" and "random" in key[3] for key in slices._partial_store()._items)


def test_a_slice_explained_by_length_resumes_and_ends_in_slice_order(toy_bert_loaded) -> None:
    """Groups are formed shortest first, so a stopped slice holds examples out of slice order;
    resuming explains only the ones it lacks and ends with every result and error in order."""
    lengths = [9, 2, 6, 1, 4, 8]
    varied = [Example(segments=(tuple(WORDS[:n]),), id=f"toy/{n}") for n in lengths]
    params = engine.metric_params(list(METRICS), METRICS)
    seen: list[str] = []

    def stop_at_third_group(fraction: float, message: str) -> None:
        if message.startswith("example 5 "):
            raise Stopped
        seen.append(message)

    partial = engine.SliceEvaluation(["loo_empty", "saliency"], list(params))
    with pytest.raises(Stopped):
        engine.evaluate_slice(
            Classifier(toy_bert_loaded), varied, ["loo_empty", "saliency"], params, resume=partial,
            progress=stop_at_third_group, group=2,
        )  # fmt: skip
    assert [r.position for r in partial.results] == [3, 1, 4, 2]  # two whole groups, shortest first
    engine.evaluate_slice(
        Classifier(toy_bert_loaded), varied, ["loo_empty", "saliency"], params, resume=partial, group=2
    )
    whole = engine.evaluate_slice(Classifier(toy_bert_loaded), varied, ["loo_empty", "saliency"], params, group=1)
    assert [r.position for r in partial.results] == list(range(len(varied)))
    assert [r.example.id for r in partial.results] == [e.id for e in varied]
    for method, per in reports.metric_values(whole).items():
        for metric, values in per.items():
            np.testing.assert_allclose(reports.metric_values(partial)[method][metric], values, rtol=1e-5, atol=1e-6)


def test_the_same_slice_scored_with_another_removal_is_not_explained_again(model_dirs, monkeypatch) -> None:
    """The faithfulness page's "Removal modes compared" scores one slice with two removals: the
    second explained every example again (IM's fill-ins twice). It now reuses the first's
    attributions, and its values equal a fresh evaluation's."""
    model, methods = str(model_dirs[0]), ["loo_empty", "saliency"]
    delete = {"deletion": {"removal": "delete", "fraction": 0.5}}
    mask = {"deletion": {"removal": "mask", "fraction": 0.5}}
    services.evaluate_slice(model, examples(), methods, delete)
    explained: list[list[str]] = []
    real = engine.explain_examples

    def recorded(clf, chosen, keys, **kwargs):
        explained.append(list(keys))
        return real(clf, chosen, keys, **kwargs)

    monkeypatch.setattr(engine, "explain_examples", recorded)
    reused = services.evaluate_slice(model, examples(), methods, mask)
    assert explained and all(keys == [] for keys in explained)  # predictions only
    assert list(reused.values) == methods

    clf = Classifier(load_classifier(model))
    fresh = reports.metric_values(
        engine.evaluate_slice(clf, examples(), methods, engine.metric_params(["deletion"], mask))
    )
    for method in methods:
        np.testing.assert_allclose(reused.values[method]["deletion"], fresh[method]["deletion"], rtol=1e-6)


@pytest.fixture
def saliency_refused(monkeypatch) -> None:
    """Every saliency request refused, as a method refuses an input it cannot explain."""
    import explainers

    real = explainers.run_explainers

    def refusing(spec, *args, **kwargs):
        if spec.key == "saliency":
            raise ValueError("saliency is refused here")
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(explainers, "run_explainers", refusing)


def test_a_method_refused_everywhere_is_still_named_when_the_slice_is_scored_again(
    model_dirs, saliency_refused
) -> None:
    """Scored again with another removal, the reused attributions hold no trace of a method that
    was refused on every example: it vanished from the values and its refusal from the errors."""
    model, methods = str(model_dirs[0]), ["loo_empty", "saliency"]
    chosen = examples()[:4]  # a slice no other test keeps explained
    first = services.evaluate_slice(model, chosen, methods, {"deletion": {"removal": "delete", "fraction": 0.5}})
    again = services.evaluate_slice(model, chosen, methods, {"deletion": {"removal": "mask", "fraction": 0.5}})
    for result in (first, again):
        assert list(result.values) == methods and result.errors == {"saliency": "saliency is refused here"}
        assert result.values["saliency"]["deletion"] == [None] * 4


def test_a_slice_stopped_while_a_group_is_scored_counts_its_refusals_once(
    toy_bert_loaded, saliency_refused, monkeypatch
) -> None:
    """A group's refusals were kept as soon as it was explained: stopped while its metrics were
    scored, the group was explained again on resume and its refusals counted twice."""
    scored = engine.score_examples
    calls: list[int] = []

    def stop_while_scoring_the_second_group(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise Stopped
        return scored(*args, **kwargs)

    params = engine.metric_params(list(METRICS), METRICS)
    partial = engine.SliceEvaluation(["loo_empty", "saliency"], list(params))
    clf = Classifier(toy_bert_loaded)
    with monkeypatch.context() as stopping:
        stopping.setattr(engine, "score_examples", stop_while_scoring_the_second_group)
        with pytest.raises(Stopped):
            engine.evaluate_slice(clf, examples(), ["loo_empty", "saliency"], params, resume=partial, group=2)
    assert len(partial.results) == len(partial.errors["saliency"]) == 2
    engine.evaluate_slice(clf, examples(), ["loo_empty", "saliency"], params, resume=partial, group=2)
    assert [failure["index"] for failure in partial.errors["saliency"]] == [0, 1, 2, 3, 4]
