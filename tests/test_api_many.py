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
    assert list(table.columns) == ["example", "id", "method", "target", "predicted", *metrics] and len(table) == 8
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
