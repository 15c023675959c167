"""``api.explain_many``: every example of a dataset or list of texts explained, examples of similar
length together, each result equal to ``api.explain`` of its text, in the dataset's order; the
explained class (predicted, gold or one class) and the refusals as ``evaluate`` has them; the
results as one table and as heatmaps, and an evaluation's examples likewise."""

from __future__ import annotations

import numpy as np
import pytest

import api
from core.types import Example
from tests.test_api import toy_dataset

SENTENCE = "the movie was great but the plot was bad and it was not fun , very boring ."
# 20 texts of 2 to 17 words, longest and shortest mixed, so that the groups of 16 of similar length
# (two groups) reorder them.
TEXTS = [" ".join(SENTENCE.split()[: 2 + (7 * i) % 16]) for i in range(20)]
METHODS = ["loo_empty", "saliency", "grad_x_input", "integrated_gradients", "attention_rollout", "lime"]


def test_each_result_equals_explain_of_its_text_in_the_datasets_order(toy_bert_loaded) -> None:
    calls: list[tuple[float, str]] = []
    many = api.explain_many(
        toy_bert_loaded, TEXTS, METHODS, seed=4, params={"lime": {"n_samples": 40}},
        progress=lambda fraction, message: calls.append((fraction, message)),
    )  # fmt: skip
    assert len(many) == len(TEXTS) and len({len(t.split()) for t in TEXTS}) > 8
    for text, result in zip(TEXTS, many, strict=True):
        alone = api.explain(toy_bert_loaded, text, METHODS, seed=4, params={"lime": {"n_samples": 40}})
        assert result.words == alone.words == tuple(text.split())
        assert result.target == alone.target and result.errors == alone.errors == {}
        np.testing.assert_allclose(result.probabilities, alone.probabilities, atol=1e-6)
        for method in METHODS:
            np.testing.assert_allclose(result[method].scores, alone[method].scores, atol=1e-5, err_msg=method)
    fractions = [fraction for fraction, _ in calls]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    assert any(message.startswith("examples 17-20 of 20: ") for _, message in calls)


def test_the_explained_class_is_predicted_gold_or_one_class(toy_linear_loaded) -> None:
    dataset = toy_dataset()  # labels 1, 0, 1, 0
    predicted = api.explain_many(toy_linear_loaded, dataset, ["loo_empty"], text_column="sentence")
    assert [r.target for r in predicted] == [r.predicted for r in predicted]
    gold = api.explain_many(toy_linear_loaded, dataset, ["loo_empty"], text_column="sentence", target="gold")
    assert [r.target for r in gold] == [1, 0, 1, 0]
    named = api.explain_many(toy_linear_loaded, dataset, ["loo_empty"], text_column="sentence", target="negative")
    assert [r.target for r in named] == [0, 0, 0, 0]
    for by_gold, by_name, row in zip(gold, named, dataset, strict=True):
        alone = api.explain(toy_linear_loaded, row["sentence"], ["loo_empty"], target=row["label"])
        assert by_gold["loo_empty"].scores.tobytes() == alone["loo_empty"].scores.tobytes()
        if row["label"] == 0:
            assert by_name["loo_empty"].scores.tobytes() == alone["loo_empty"].scores.tobytes()
    # An example without a label is explained for its predicted class, as ``evaluate`` does.
    mixed = [Example(segments=(("great",),), label=0, id="a"), Example(segments=(("bad",),), id="b")]
    explained = api.explain_many(toy_linear_loaded, mixed, ["random"], target="gold")
    assert [r.target for r in explained] == [0, explained[1].predicted]


def test_bad_arguments_are_refused_before_any_work(toy_linear_loaded) -> None:
    with pytest.raises(ValueError, match="target 'gold' needs gold labels"):
        api.explain_many(toy_linear_loaded, ["great", "bad"], ["random"], target="gold")
    with pytest.raises(ValueError, match="unknown class 'neutral'; the model's classes: negative, positive"):
        api.explain_many(toy_linear_loaded, ["great"], ["random"], target="neutral")
    with pytest.raises(ValueError, match="the dataset has no examples"):
        api.explain_many(toy_linear_loaded, [], ["random"])
    with pytest.raises(ValueError, match="limit must be a whole number of 1 or more"):
        api.explain_many(toy_linear_loaded, ["great"], ["random"], limit=0)
    with pytest.raises(ValueError, match="params for methods not requested: lime"):
        api.explain_many(toy_linear_loaded, ["great"], ["random"], params={"lime": {"n_samples": 10}})
    with pytest.raises(ValueError, match="give split= with the dataset name 'examples'"):
        api.explain_many(toy_linear_loaded, "examples", ["random"])
    assert len(api.explain_many(toy_linear_loaded, "examples", ["random"], split="sst2", limit=3)) == 3


def test_the_results_show_as_escaped_heatmaps_and_make_one_table(toy_linear_loaded) -> None:
    hostile = Example(segments=(("it", "was", "<script>", "bad", "."),), id="text/1")  # an Example keeps its words
    many = api.explain_many(toy_linear_loaded, ["the movie was great", hostile], ["loo_empty", "grad_x_input"])
    frame = many.to_pandas()
    columns = ["example", "id", "target", "position", "word", "segment", "loo_empty", "grad_x_input"]
    assert list(frame.columns) == columns
    sizes = [len(result.words) for result in many]
    assert sizes == [4, 5]
    assert frame["example"].tolist() == [0] * sizes[0] + [1] * sizes[1]
    assert frame["id"].tolist() == ["text/0"] * sizes[0] + ["text/1"] * sizes[1]
    assert frame["word"].tolist() == [*many[0].words, *many[1].words]
    assert frame["position"].tolist() == [*range(sizes[0]), *range(sizes[1])]
    assert frame["target"].tolist() == [many[0].target] * sizes[0] + [many[1].target] * sizes[1]
    second = frame[frame["example"] == 1]["grad_x_input"].to_numpy()
    assert second.tobytes() == many[1]["grad_x_input"].scores.tobytes()
    shown = many._repr_html_()
    assert shown.count('class="attrx-explanation"') == 2 and "<script>" not in shown and "&lt;script&gt;" in shown
    longer = api.explain_many(toy_linear_loaded, [f"{word} film" for word in ["great", "bad", "fun"] * 8], ["random"])
    shown = longer._repr_html_()
    assert shown.count('class="attrx-explanation"') == longer.SHOWN == 20 and "and 4 more" in shown


def test_an_evaluations_examples_as_a_table_and_as_heatmaps(toy_linear_loaded) -> None:
    """``EvaluationResult.per_example`` gives the values behind the summary's means, and
    ``explanation(i)`` example i as ``explain`` gives it, the words cut from a long text counted."""
    dataset = toy_dataset()
    methods, metrics = ["loo_empty", "random"], ["deletion", "comprehensiveness"]
    result = api.evaluate(toy_linear_loaded, dataset, methods, metrics, text_column="sentence", target="gold", seed=2)
    table = result.per_example()
    assert (
        list(table.columns) == ["example", "id", "method", "target", "predicted", "label", *metrics] and len(table) == 8
    )
    row = table[(table["example"] == 1) & (table["method"] == "loo_empty")].iloc[0]
    assert row["id"] == "validation/1" and row["target"] == 0
    assert row["deletion"] == result.evaluation.results[1].metrics["loo_empty"]["deletion"].value
    summary = result.summary()
    for method in methods:
        for metric in metrics:
            mean = table[table["method"] == method][metric].mean()
            assert mean == pytest.approx(summary.loc[(method, metric), "mean"], abs=1e-12)
    shown = result.explanation(1)
    alone = api.explain(toy_linear_loaded, dataset[1]["sentence"], ["loo_empty"], target=0)
    assert shown.words == alone.words and shown.target == 0 and shown.label_names == ("negative", "positive")
    assert shown["loo_empty"].scores.tobytes() == alone["loo_empty"].scores.tobytes()
    np.testing.assert_allclose(shown.probabilities, alone.probabilities, atol=1e-12)
    assert shown.errors == {} and 'class="attrx-explanation"' in shown._repr_html_()
    long_text = " ".join(["great", "film"] * 40)  # 80 words, past the toy model's 64 positions
    cut = api.evaluate(toy_linear_loaded, [long_text], ["loo_empty"], ["deletion"]).explanation(0)
    assert cut.dropped_words == api.explain(toy_linear_loaded, long_text, ["loo_empty"]).dropped_words > 0


def test_a_dataframe_a_mapping_of_columns_and_a_list_of_pairs_are_read_as_their_rows(toy_bert_loaded) -> None:
    """A DataFrame or a dict of columns was iterated, so its column names were explained as the
    texts; a list of (premise, hypothesis) pairs was refused though a pair is what explain takes."""
    import pandas as pd

    texts = ["the movie was great", "the plot was bad"]
    expected = [tuple(text.split()) for text in texts]
    frame = pd.DataFrame({"text": texts, "label": [1, 0]})
    assert [r.words for r in api.explain_many(toy_bert_loaded, frame, ["saliency"])] == expected
    mapping = {"text": texts}
    assert [r.words for r in api.explain_many(toy_bert_loaded, mapping, ["saliency"], label_column=None)] == expected
    evaluated = api.evaluate(toy_bert_loaded, frame, ["loo_empty"], ["comprehensiveness"], target="gold")
    assert [evaluated.explanation(i).target for i in range(2)] == [1, 0]
    assert evaluated.per_example()["label"].tolist() == [1, 0]  # the gold labels, beside what was explained
    pairs = api.explain_many(toy_bert_loaded, [("the movie", "was great"), ("the plot", "was bad")], ["saliency"])
    for (premise, hypothesis), result in zip([("the movie", "was great"), ("the plot", "was bad")], pairs, strict=True):
        alone = api.explain(toy_bert_loaded, (premise, hypothesis), ["saliency"])
        assert result.words == alone.words and len(alone.example.segments) == 2
        np.testing.assert_allclose(result["saliency"].scores, alone["saliency"].scores, atol=1e-5)
    with pytest.raises(ValueError, match="item 1 of the dataset: give a text, a"):
        api.explain_many(toy_bert_loaded, ["fine", ("a", "b", "c")], ["saliency"])
    with pytest.raises(ValueError, match="a mapping as the dataset must map column names to columns"):
        api.explain_many(toy_bert_loaded, {"text": 3}, ["saliency"], label_column=None)


def test_a_method_or_metric_named_twice_runs_once(toy_bert_loaded) -> None:
    once = api.evaluate(toy_bert_loaded, ["the movie was great"], ["loo_empty"], ["comprehensiveness"])
    twice = api.evaluate(
        toy_bert_loaded, ["the movie was great"], ["loo_empty", "loo_empty"], "comprehensiveness,comprehensiveness"
    )
    assert list(twice.evaluation.methods) == list(once.evaluation.methods) == ["loo_empty"]
    assert list(twice.evaluation.metric_keys) == ["comprehensiveness"] and len(twice.per_example()) == 1
    assert twice.per_example().equals(once.per_example())
    assert ": 1 example; methods: loo_empty; metrics: comprehensiveness>" in repr(once)  # not "1 examples"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: api.explain(m, "good", methods=None), "methods must be method keys"),
        (lambda m: api.evaluate(m, ["good"], ["loo_empty"], metrics=None), "metrics must be metric keys"),
        (lambda m: api.explain(m, "good", ["loo_empty"], params=[("lime", {})]), "params must map method or metric"),
        (lambda m: api.explain(m, "good film", ["lime"], seed=1.5), "seed must be None or a whole number from 0 to"),
        (
            lambda m: api.explain(
                m, "good film", ["integrated_gradients"], params={"integrated_gradients": {"n_steps": 8.5}}
            ),
            "n_steps expects a whole number, got 8.5",
        ),
        (
            lambda m: api.explain(m.model.bert, "good", ["saliency"], tokenizer=m.tokenizer),
            "has no classification head",
        ),
    ],
)
def test_bad_arguments_are_one_value_error(toy_bert_loaded, call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(toy_bert_loaded)
