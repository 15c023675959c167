"""The notebook API (api/): every form of ``model`` gives the engine's numbers, a caller's model is
frozen and nothing else, results render the app's escaped heatmap, convert to pandas and
round-trip through JSON; ``evaluate`` over a ``datasets.Dataset`` equals ``evaluate_slice``. The
README's API example runs as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import api
import explainers
from core.classifier import Classifier
from core.loaded import classifier_from_model
from core.types import Example
from engine.evaluate import DEFAULT_METHODS, evaluate_slice, metric_params
from engine.explain import Explanation, explain_example
from engine.slice_report import mean_curves, metric_summaries
from tests.page_text import one_layout
from tests.test_explainers import FAST, toy_probabilities
from tests.toy import ToyConfig, ToyLinearClassifier, toy_bert, toy_bert_head, toy_tokenizer

ROOT = Path(__file__).resolve().parents[1]
TEXT = "the movie was great but the plot was bad ."


def fresh_toy_model() -> ToyLinearClassifier:
    """The toy linear classifier as a user holds it: training mode, parameters trainable."""
    model = ToyLinearClassifier(
        ToyConfig(id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1})
    )
    return model.train()


def test_model_object_is_frozen_in_place_and_gives_known_answers() -> None:
    model = fresh_toy_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = api.explain(model, TEXT, ["loo_empty", "grad_x_input"], tokenizer=toy_tokenizer(), target="positive")
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())
    words = TEXT.split()
    assert result.words == tuple(words) and result.target == 1 and result.errors == {}
    # Leave-one-out by hand on the toy model (log2-odds difference, Pham et al. 2022 Eq. 1).
    full = toy_probabilities(words)[1]
    odds = lambda p: np.log2(p / (1 - p))
    expected = [odds(full) - odds(toy_probabilities(words[:i] + words[i + 1 :])[1]) for i in range(len(words))]
    np.testing.assert_allclose(result["loo_empty"].scores, expected, atol=1e-5)
    np.testing.assert_allclose(result.probabilities, toy_probabilities(words), atol=1e-6)
    assert result.predicted == int(np.argmax(toy_probabilities(words)))


def test_loaded_classifier_and_engine_give_identical_scores(toy_linear_loaded) -> None:
    example = Example(segments=(tuple(TEXT.split()),), id="text")
    direct = explain_example(Classifier(toy_linear_loaded), example, ["loo_unk", "saliency"], target=0)
    result = api.explain(toy_linear_loaded, TEXT, "loo_unk,saliency", target=0)
    for key, attribution in direct.attributions.items():
        assert result[key].scores.tobytes() == attribution.scores.tobytes()
    assert result.model == "toy-linear" and result.label_names == ("negative", "positive")


def test_pipeline_wraps_the_same_model() -> None:
    from transformers import pipeline

    loaded = toy_bert(seed=4)
    classify = pipeline("text-classification", model=loaded.model, tokenizer=loaded.tokenizer, device="cpu")
    result = api.explain(classify, "the film was fun", ["attention_rollout", "loo_empty"])
    by_label = {row["label"]: row["score"] for row in classify("the film was fun", top_k=None)}
    np.testing.assert_allclose(result.probabilities, [by_label["negative"], by_label["positive"]], atol=1e-6)
    assert set(result.attributions) == {"attention_rollout", "loo_empty"}


def test_local_folders_load_like_the_cli(model_dirs) -> None:
    from core.loaded import load_classifier
    from core.masked_lm import MaskedLM

    clf_dir, mlm_dir = (str(d) for d in model_dirs)
    result = api.explain(clf_dir, ("a man sleeps", "a dog runs"), ["loo_empty", "im"], target=1, mlm=mlm_dir)
    direct = explain_example(
        Classifier(load_classifier(clf_dir)), result.example, ["loo_empty", "im"], target=1, mlm=MaskedLM.load(mlm_dir)
    ).attributions
    assert result.example.is_pair and result.model == clf_dir and result.errors == {}
    for key in ("loo_empty", "im"):
        assert result[key].scores.tobytes() == direct[key].scores.tobytes()


def test_html_is_the_app_heatmap_escaped(toy_linear_loaded) -> None:
    from ui.heatmap import heatmap_html

    hostile = Example(segments=(("<script>alert(1)</script>", "great", "&amp;"),), id="hostile")
    result = api.explain(toy_linear_loaded, hostile, ["loo_empty", "random"])
    page = result._repr_html_()
    assert heatmap_html(hostile.words, hostile.segment_ids, result.attributions) in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&amp;amp;" in page and one_layout(page).count('class="hm-row"') == 2
    refused = Explanation(hostile, result.explanation.prediction, 1, {}, errors={"x<b>": "bad <i>"})
    failed = api.ExplanationResult(result.model, result.label_names, refused)
    assert "x&lt;b&gt;</b> failed: bad &lt;i&gt;" in failed.html()


def test_results_print_as_one_line_in_a_terminal(toy_linear_loaded) -> None:
    """``repr`` (a terminal, ``print``) gives one line naming the model, the prediction, the words
    and the methods: the dataclasses' own repr printed every score and probability, thousands of
    characters for one sentence."""
    result = api.explain(toy_linear_loaded, "the film was great", ["loo_empty", "random"])
    predicted, target = result.label(result.predicted), result.label(result.target)
    assert repr(result) == (
        f"<ExplanationResult {result.model!r}: predicted {predicted!r} (p = {result.probabilities[result.predicted]:.3f}); "
        f"explaining {target!r}; 4 words; methods: loo_empty, random>"
    )
    failed = Explanation(result.example, result.explanation.prediction, 1, {}, errors={"lime": "too short"})
    refused = api.ExplanationResult(result.model, result.label_names, failed)
    assert repr(refused).endswith("methods: none; failed: lime>")
    many = api.explain_many(toy_linear_loaded, ["a good film", "bad"], ["random"])
    assert repr(many) == f"<ExplanationResults: 2 explanations by {result.model!r}>"
    assert "; 1 word; methods: random>" in repr(many[1])
    evaluation = api.evaluate(toy_linear_loaded, "examples", ["random"], ["deletion"], split="sst2", limit=2)
    assert repr(evaluation) == f"<EvaluationResult {result.model!r}: 2 examples; methods: random; metrics: deletion>"


def test_to_pandas_one_row_per_word_one_column_per_method(toy_linear_loaded) -> None:
    result = api.explain(toy_linear_loaded, ("the film was great", "it was bad"), ["loo_empty", "grad_x_input"])
    frame = result.to_pandas()
    assert list(frame.columns) == ["word", "segment", "loo_empty", "grad_x_input"]
    assert frame["word"].tolist() == ["the", "film", "was", "great", "it", "was", "bad"]
    assert frame["segment"].tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert frame["grad_x_input"].to_numpy().tobytes() == result["grad_x_input"].scores.tobytes()


def test_explanation_round_trips_through_json(toy_bert_loaded) -> None:
    result = api.explain(toy_bert_loaded, TEXT, ["integrated_gradients", "lime"], params={"lime": {"n_samples": 50}})
    text = json.dumps(result.to_json(), allow_nan=False)
    restored = api.ExplanationResult.from_json(text)
    assert restored.to_json() == json.loads(text)
    assert restored.example == result.example and restored.probabilities == result.probabilities
    for key, attribution in result.attributions.items():
        assert restored[key].scores.tobytes() == attribution.scores.tobytes()
        assert restored[key].subword_word_ids == attribution.subword_word_ids
    assert restored.html() == result.html()
    assert restored.attributions == result.attributions  # equal records, as promised (== raised on the arrays)
    with pytest.raises(ValueError, match="not a valid explanation/1 record \\(KeyError"):
        api.ExplanationResult.from_json('{"schema": "explanation/1"}')


def test_a_numpy_class_index_and_a_bad_limit(toy_linear_loaded) -> None:
    """An argmax is a numpy integer (it was refused as an unknown class, while True passed as
    class 1); a limit below 1 did three different things."""
    result = api.explain(toy_linear_loaded, "the film was great", ["loo_empty"], target=np.int64(0))
    assert result.target == 0 and type(result.target) is int
    with pytest.raises(ValueError, match="unknown class True"):
        api.explain(toy_linear_loaded, "the film was great", ["loo_empty"], target=True)
    for limit in (0, -1, 2.5):
        with pytest.raises(ValueError, match="limit must be a whole number of 1 or more"):
            api.evaluate(toy_linear_loaded, "examples", ["random"], split="sst2", limit=limit)
    with pytest.raises(ValueError, match="a limit of 100000 is more than the"):  # not the whole split
        api.evaluate(toy_linear_loaded, "examples", ["random"], split="sst2", limit=100000)


def test_a_regression_heads_explanation_keeps_its_head_through_json() -> None:
    """A regression head's result says "score = ..." (not a class probability) and keeps its head
    through ``to_json`` / ``from_json``; a record without ``head`` reads as single-label."""
    result = api.explain(toy_bert_head("regression"), TEXT, ["loo_empty"])
    assert result.explanation.prediction.head == "regression"
    assert re.search(r": score <b>[^<]+</b> = -?\d\.\d{4}", result.html()) and "p = " not in result.html()
    assert re.search(r": score '[^']+' = -?\d\.\d{4}; \d+ words; methods: loo_empty>$", repr(result))
    record = result.to_json()
    assert record["head"] == "regression"
    restored = api.ExplanationResult.from_json(json.dumps(record))
    assert restored.explanation.prediction.head == "regression" and restored.html() == result.html()
    with pytest.raises(ValueError, match="unknown head 'ranking'"):
        api.ExplanationResult.from_json({**record, "head": "ranking"})
    with pytest.raises(ValueError, match="probabilities must be between 0 and 1"):
        api.ExplanationResult.from_json({**record, "head": "single_label"})  # a score is no probability
    del record["head"]  # written before the head was recorded, when every head was single-label
    legacy = api.ExplanationResult.from_json({**record, "probabilities": [1.0]})
    assert legacy.explanation.prediction.head == "single_label"


def test_errors_name_the_bad_value(toy_linear_loaded) -> None:
    with pytest.raises(ValueError, match="give tokenizer= with a ToyLinearClassifier model object"):
        api.explain(fresh_toy_model(), TEXT, ["loo_empty"])
    with pytest.raises(ValueError, match="unknown class 'neutral'; the model's classes: negative, positive"):
        api.explain(toy_linear_loaded, TEXT, ["loo_empty"], target="neutral")
    with pytest.raises(ValueError, match=r"target 2 is not a class of the model \(0..1\)"):
        api.explain(toy_linear_loaded, TEXT, ["loo_empty"], target=2)
    with pytest.raises(ValueError, match="unknown method 'shapley'"):
        api.explain(toy_linear_loaded, TEXT, ["shapley"])
    with pytest.raises(ValueError, match="params for methods not requested: lime"):
        api.explain(toy_linear_loaded, TEXT, ["loo_empty"], params={"lime": {"n_samples": 10}})
    with pytest.raises(ValueError, match="is not a fast tokenizer"):
        classifier_from_model(fresh_toy_model(), object())
    with pytest.raises(ValueError, match="'Linear' is not a sequence classifier"):
        classifier_from_model(torch.nn.Linear(2, 2), toy_tokenizer())


def test_bad_model_text_params_and_batch_size_are_refused(toy_linear_loaded) -> None:
    """None or a number as the model once asked for ``tokenizer=`` with a NoneType model; None as
    the text, a method's params that are no mapping and a batch size below 1 (which the command
    line refuses) failed deep inside or were taken."""
    accepted = r"model must be a model name, a folder, a loaded transformers model \(with tokenizer=\)"
    for model in (None, 42):
        with pytest.raises(
            ValueError, match=f"{accepted}, a text-classification pipeline or a LoadedClassifier, got {model}"
        ):
            api.load(model)
    with pytest.raises(ValueError, match=f"{accepted}.*, got None"):
        api.explain(None, TEXT, ["loo_empty"])
    for text in (None, 42, ["one", "two", "three"]):
        accepted = r"give a text, a \(premise, hypothesis\) pair of texts or an Example \(several texts: explain_many\)"
        with pytest.raises(ValueError, match=rf"{accepted}, got {re.escape(repr(text))}"):
            api.explain(toy_linear_loaded, text, ["loo_empty"])
    mapping = "each method's \\(or metric's\\) params must be a mapping of parameter names to values, got"
    with pytest.raises(ValueError, match=f"{mapping} params\\['lime'\\] = 5"):
        api.explain(toy_linear_loaded, TEXT, ["lime"], params={"lime": 5})
    with pytest.raises(ValueError, match=f"{mapping} params\\['deletion'\\] = 'steps'"):
        api.evaluate(toy_linear_loaded, [TEXT], ["random"], ["deletion"], params={"deletion": "steps"})
    for batch_size in (0, -1):
        with pytest.raises(ValueError, match=f"batch_size must be a whole number of 1 or more, got {batch_size}"):
            api.explain(toy_linear_loaded, TEXT, ["loo_empty"], batch_size=batch_size)
        with pytest.raises(ValueError, match=f"batch_size must be a whole number of 1 or more, got {batch_size}"):
            api.evaluate(toy_linear_loaded, [TEXT], ["random"], ["deletion"], batch_size=batch_size)


def test_no_methods_or_metrics_are_refused(toy_linear_loaded) -> None:
    """An empty list of methods or metrics gave an empty result; the command line refuses one."""
    example = Example(segments=(tuple(TEXT.split()),), id="toy/0")
    for methods in ([], "", " , "):
        with pytest.raises(
            ValueError,
            match=re.escape(f"no methods in {methods!r}: name at least one method key, 'default', 'panel' or 'all'"),
        ):
            api.explain(toy_linear_loaded, TEXT, methods)
        with pytest.raises(ValueError, match=re.escape(f"no methods in {methods!r}")):
            api.evaluate(toy_linear_loaded, [example], methods, ["deletion"])
        with pytest.raises(ValueError, match=re.escape(f"no methods in {methods!r}")):
            api.compare(toy_linear_loaded, "randomized", TEXT, methods)
    for metrics in ([], ""):
        with pytest.raises(
            ValueError, match=re.escape(f"no metrics in {metrics!r}: name at least one metric key or 'all'")
        ):
            api.evaluate(toy_linear_loaded, [example], ["random"], metrics)


def test_evaluate_reads_texts_as_explain_does(toy_linear_loaded) -> None:
    """Texts among the examples are split as ``explain`` splits one (they failed on ``.words``);
    anything else is refused by name."""
    texts, methods = ["the film was great", "it was bad ."], ["loo_empty", "random"]
    examples = [Example(segments=(tuple(t.split()),), id=f"text/{i}") for i, t in enumerate(texts)]
    from_texts = api.evaluate(toy_linear_loaded, texts, methods, ["deletion"], seed=3).evaluation.results
    from_examples = api.evaluate(toy_linear_loaded, examples, methods, ["deletion"], seed=3).evaluation.results
    assert [r.example for r in from_texts] == examples
    for text, by_text, by_example in zip(texts, from_texts, from_examples, strict=True):
        explained = api.explain(toy_linear_loaded, text, methods, seed=3)
        for key in methods:
            scores = by_text.attributions[key].scores.tobytes()
            assert scores == by_example.attributions[key].scores.tobytes() == explained[key].scores.tobytes()
        assert by_text.metrics == by_example.metrics
    accepted = re.escape(
        "give Examples, texts, (premise, hypothesis) pairs, a datasets.Dataset, a DataFrame or a dataset name"
    )
    with pytest.raises(ValueError, match=rf"item 1 of the dataset is 7 \(int\); {accepted}"):
        api.evaluate(toy_linear_loaded, [TEXT, 7], ["random"], ["deletion"])
    with pytest.raises(ValueError, match=rf"the dataset is 42 \(int\); {accepted}"):
        api.evaluate(toy_linear_loaded, 42, ["random"], ["deletion"])


def toy_dataset():
    from datasets import ClassLabel, Dataset, Features, Value

    features = Features({"sentence": Value("string"), "label": ClassLabel(names=["negative", "positive"])})
    rows = {
        "sentence": ["the movie was great .", "the plot was bad", "it was good and fun", "awful , very awful"],
        "label": [1, 0, 1, 0],
    }
    return Dataset.from_dict(rows, features=features, split="validation")


def test_evaluate_a_dataset_equals_the_engine(toy_linear_loaded) -> None:
    dataset = toy_dataset()
    methods, metrics = ["loo_empty", "random"], ["deletion", "comprehensiveness"]
    result = api.evaluate(toy_linear_loaded, dataset, methods, metrics, text_column="sentence", target="gold", seed=2)
    examples = api.examples_from_dataset(dataset, "sentence")
    assert examples[0].words == ("the", "movie", "was", "great", ".") and examples[0].label_names[1] == "positive"
    assert [e.id for e in examples] == [f"validation/{i}" for i in range(4)] and examples[1].label == 0
    direct = evaluate_slice(
        Classifier(toy_linear_loaded), examples, methods, metric_params(metrics), seed=2, target="gold"
    )
    summary = result.summary()
    assert summary.shape == (4, 6) and summary.loc[("loo_empty", "deletion"), "n"] == 4
    for method, per_metric in metric_summaries(direct).items():
        for metric, expected in per_metric.items():
            assert summary.loc[(method, metric), "mean"] == expected.mean
            assert summary.loc[(method, metric), "low"] == expected.low
    assert result.mean_curves == mean_curves(direct)
    assert set(result.mean_curves["loo_empty"]) == {"deletion", "comprehensiveness"}
    assert not summary.loc[("loo_empty", "deletion"), "higher_is_better"]
    # An oracle-like method beats the random ranking on comprehensiveness (ERASER; higher is better).
    assert (
        summary.loc[("loo_empty", "comprehensiveness"), "mean"] > summary.loc[("random", "comprehensiveness"), "mean"]
    )


def test_evaluate_a_bundled_dataset_by_name(toy_linear_loaded) -> None:
    result = api.evaluate(toy_linear_loaded, "examples", ["random"], ["deletion"], split="sst2", limit=3)
    assert len(result.evaluation.results) == 3
    assert all(r.example.id.startswith("examples/sst2/") for r in result.evaluation.results)
    with pytest.raises(ValueError, match="give split= with the dataset name 'examples'"):
        api.evaluate(toy_linear_loaded, "examples", ["random"], ["deletion"])
    with pytest.raises(ValueError, match="no column 'text' in the dataset; its columns: sentence, label"):
        api.evaluate(toy_linear_loaded, toy_dataset(), ["random"], ["deletion"])
    from datasets import Dataset

    named = Dataset.from_dict({"text": ["great", "bad", "fine"], "label": ["positive", "negative", ""]})
    examples = api.examples_from_dataset(named)  # labels by name: the column's words, sorted
    assert [(e.label, e.gold_name) for e in examples] == [(1, "positive"), (0, "negative"), (None, None)]
    assert examples[0].label_names == ("negative", "positive")
    stored = api.evaluate(toy_linear_loaded, named, ["random"], ["deletion"], target="gold", limit=2)
    assert [r.example.label for r in stored.evaluation.results] == [1, 0]
    with pytest.raises(ValueError, match=r"label 'neutral' of row 0 in 'label' is not a class index nor one of its "):
        api.examples_from_dataset(Dataset.from_dict({"text": ["so so"], "label": ["neutral"]}), class_names=("a", "b"))
    unlabelled = Dataset.from_dict({"text": ["great", "bad"], "label": [-1, -1]})
    assert [e.label for e in api.examples_from_dataset(unlabelled)] == [None, None]


def readme_api_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python api-example\n(.*?)```", readme, flags=re.DOTALL)
    assert len(blocks) == 1, "README.md needs exactly one ```python api-example block"
    return blocks[0]


def test_readme_api_example_runs_as_written(capsys) -> None:
    namespace: dict = {}
    exec(compile(readme_api_example(), "README.md", "exec"), namespace)  # noqa: S102
    result = namespace["result"]
    assert isinstance(result, api.ExplanationResult) and result.errors == {}
    assert result.label_names[result.predicted] == "positive"
    assert "beautifully" in capsys.readouterr().out
    assert set(namespace["evaluation"].summary().index.get_level_values("method")) == {"loo_empty", "random"}


def test_every_registered_method_through_the_api(toy_bert_loaded, model_dirs) -> None:
    result = api.explain(toy_bert_loaded, "the film was fun", "all", params=FAST, seed=1, mlm=str(model_dirs[1]))
    assert result.errors == {} and list(result.attributions) == list(explainers.REGISTRY)


def test_console_script_entry_point_runs(capsys) -> None:
    import importlib
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "attribution-explorer"
    module, _, function = project["scripts"]["attrx"].partition(":")
    assert getattr(importlib.import_module(module), function)(["methods"]) == 0
    assert capsys.readouterr().out.split()[0] == next(iter(explainers.REGISTRY))


def test_attention_methods_work_on_a_model_with_the_fused_kernel() -> None:
    """A model loaded with sdpa keeps it; the attention methods read the weights of an eager view
    of the same weights, so they equal those of the same model loaded with eager attention."""
    from transformers import BertConfig, BertForSequenceClassification

    def model(attention: str):
        torch.manual_seed(0)
        config = BertConfig(
            vocab_size=len(toy_tokenizer()), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=64, attn_implementation=attention,
        )  # fmt: skip
        return BertForSequenceClassification(config)

    fused, eager = model("sdpa"), model("eager")
    methods = ["attention_mean", "attention_rollout", "loo_empty"]
    result = api.explain(fused, "the film was fun", methods, tokenizer=toy_tokenizer())
    expected = api.explain(eager, "the film was fun", methods, tokenizer=toy_tokenizer())
    assert not result.errors and set(result.attributions) == set(methods)
    for method in methods:
        np.testing.assert_allclose(result.attributions[method].scores, expected.attributions[method].scores, atol=1e-6)
    assert fused.config._attn_implementation == "sdpa"


def test_a_split_loaded_as_a_dataset_keeps_its_examples():
    """``core.datasets.load_dataset`` gives a ``datasets.Dataset`` whose rows are examples: the API
    takes it as it is (words, labels, rationales, ids), ``limit`` included."""
    from core.datasets import load_dataset, load_examples

    loaded = load_dataset("examples", "esnli")
    expected = load_examples("examples", "esnli")
    assert api.examples_from_dataset(loaded) == expected
    assert api.examples_from_dataset(loaded, limit=2) == expected[:2]


def test_methods_default_is_what_leaving_methods_out_runs(toy_linear_loaded) -> None:
    """``"default"`` meant the heatmap page's seven methods everywhere, so ``evaluate`` with
    ``methods="default"`` ran other methods than without ``methods``; now each function's
    ``"default"`` is its own default, and ``"panel"`` names the seven."""
    example = Example(segments=(tuple(TEXT.split()),), id="toy/0")

    def evaluated(*methods: str) -> list[str]:
        return api.evaluate(toy_linear_loaded, [example], *methods, metrics=["deletion"], seed=0).evaluation.methods

    assert evaluated() == evaluated("default") == DEFAULT_METHODS.split(",")
    assert evaluated("panel") == list(explainers.DEFAULT_PANEL)

    def explained(*methods: str) -> list[str]:
        result = api.explain(toy_linear_loaded, TEXT, *methods, seed=0)
        return sorted([*result.attributions, *result.errors])

    assert explained() == explained("default") == explained("panel") == sorted(explainers.DEFAULT_PANEL)


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"dropped_words": 2**62}, "dropped_words must be at most 1,000,000"),
        ({"dropped_words": -1}, "dropped_words must not be negative"),
        ({"target": 7}, "target 7 is not one of the model's classes (0 to 1)"),
        ({"predicted": -1}, "predicted -1 is not one of the model's classes (0 to 1)"),
        ({"probabilities": [0.9, 0.9]}, "the probabilities of a single-label head sum to 1"),
        ({"probabilities": [{"$float": "nan"}, 0.5]}, "probabilities must be finite numbers"),
    ],
)
def test_a_saved_result_is_checked_as_a_session_bundle_is(toy_linear_loaded, change, refusal) -> None:
    """``ExplanationResult.from_json`` read a saved result with bare ``int()`` and ``float()``: it
    took 2**62 dropped words, a target outside the classes and probabilities that are none. It now
    reads the record with the bundle's own reader (``engine.bundles.read_explanation``)."""
    record = api.explain(toy_linear_loaded, TEXT, ["loo_empty"]).to_json()
    assert api.ExplanationResult.from_json(record).to_json() == record
    with pytest.raises(ValueError, match=re.escape(refusal)):
        api.ExplanationResult.from_json({**record, **change})
    shifted = {**record, "attributions": {"loo_empty": {**record["attributions"]["loo_empty"], "words": ["x"]}}}
    with pytest.raises(ValueError, match="words"):
        api.ExplanationResult.from_json(shifted)


def test_two_texts_for_a_model_that_reads_one_are_refused(capsys) -> None:
    """``api.explain(model, ["good", "bad"])`` on the SST-2 model read the two texts as a premise
    and a hypothesis the model was never trained on; a model known to read one text now refuses
    them, as ``cli explain --text-b`` does, while the e-SNLI model reads the pair."""
    from cli.main import main

    refused = "'minilm-sst2' reads one text, not a (premise, hypothesis) pair: explain each text on its own"
    assert main(["explain", "--model", "minilm-sst2", "--text", "a good film", "--text-b", "a bad film"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {refused}"
    with pytest.raises(ValueError, match=re.escape(refused)):
        api.explain("minilm-sst2", ["a good film", "a bad film"], "loo_empty")
    pair = api.explain("minilm-esnli", ("a man runs", "a man sleeps"), "loo_empty")
    assert pair.example.segment_ids == (0, 0, 0, 1, 1, 1) and np.isfinite(pair["loo_empty"].scores).all()
    assert api.explain("minilm-sst2", "a good film", "loo_empty").words == ("a", "good", "film")


def test_a_result_read_back_from_json_equals_the_result(toy_linear_loaded) -> None:
    """``to_json`` left out the forward passes and the sliding windows, so ``from_json`` gave back
    a result that was not equal to the one written ("lossless" in the README)."""
    result = api.explain(toy_linear_loaded, TEXT, ["loo_empty", "random"], seed=0)
    assert result.explanation.forward_passes > 0
    back = api.ExplanationResult.from_json(json.dumps(result.to_json()))
    assert back.explanation.forward_passes == result.explanation.forward_passes
    assert back.to_json() == result.to_json()
    windowed = {**result.to_json(), "windows": [[0, 2], [1, len(result.words)]]}
    assert api.ExplanationResult.from_json(windowed).explanation.windows == ((0, 2), (1, len(result.words)))
    with pytest.raises(ValueError, match=re.escape("window [2, 99] is not a range of the example's")):
        api.ExplanationResult.from_json({**windowed, "windows": [[2, 99]]})


def test_predicted_names_the_predicted_class_in_explain_as_in_evaluate(toy_linear_loaded) -> None:
    """``api.explain(target="predicted")`` said "unknown class 'predicted'"; ``explain_many`` and
    ``evaluate`` take it."""
    named = api.explain(toy_linear_loaded, TEXT, ["loo_empty"], target="predicted")
    assert named.target == api.explain(toy_linear_loaded, TEXT, ["loo_empty"]).target == named.predicted


def test_a_frame_without_a_label_column_is_unlabelled(toy_linear_loaded) -> None:
    """A DataFrame or dict of texts only was refused ("no column 'label' in the dataset") unless
    ``label_column=None`` was given, though explaining the predicted class needs no label."""
    import pandas as pd

    frame = pd.DataFrame({"text": ["a good film", "bad"]})
    results = api.explain_many(toy_linear_loaded, frame, ["random"], seed=0)
    assert [r.words for r in results] == [("a", "good", "film"), ("bad",)]
    assert [r.example.label for r in results] == [None, None]
    evaluation = api.evaluate(toy_linear_loaded, {"text": ["a good film", "bad"]}, ["random"], ["deletion"], seed=0)
    assert len(evaluation.per_example()) == 2
    with pytest.raises(ValueError, match="no column 'gold' in the dataset"):
        api.explain_many(toy_linear_loaded, frame, ["random"], label_column="gold")


def test_labels_taken_by_number_are_said_as_the_command_line_says_them(toy_linear_loaded) -> None:
    """The command line prints how a dataset's gold labels were taken under the model's classes
    and the app shows it; the API said nothing."""
    names = ("bad", "good")  # the toy model's classes are named otherwise
    assert tuple(toy_linear_loaded.label_names) != names
    examples = [Example(segments=(("a", "good", "film"),), label=1, label_names=names, id="mine/0")]
    said = "each gold label was taken as the model's class of the same number: bad → "
    with pytest.warns(UserWarning, match=re.escape(said)):
        [result] = api.explain_many(toy_linear_loaded, examples, ["random"], target="gold", seed=0)
    assert result.target == 1
    with pytest.warns(UserWarning, match=re.escape(said)):
        api.evaluate(toy_linear_loaded, examples, ["random"], ["deletion"], seed=0)


@pytest.mark.parametrize("seed", [-1, 2**31, 1.5, "3", True])
def test_a_seed_out_of_range_is_refused_before_any_work(toy_linear_loaded, seed) -> None:
    """A negative seed was taken and failed every seeded method on every example (numpy refuses
    it), shown only among the errors; the API now refuses what the command line and ``api.run``
    refuse."""
    message = re.escape(f"seed must be None or a whole number from 0 to 2,147,483,647, got {seed!r}")
    with pytest.raises(ValueError, match=message):
        api.explain(toy_linear_loaded, TEXT, ["random"], seed=seed)
    with pytest.raises(ValueError, match=message):
        api.explain_many(toy_linear_loaded, [TEXT], ["random"], seed=seed)
    with pytest.raises(ValueError, match=message):
        api.evaluate(toy_linear_loaded, [TEXT], ["random"], ["deletion"], seed=seed)
    with pytest.raises(ValueError, match=message):
        api.compare(toy_linear_loaded, "no/such-model", TEXT, ["random"], seed=seed)  # before any model loads
    assert api.explain(toy_linear_loaded, TEXT, ["random"], seed=np.int64(2**31 - 1)).errors == {}


def test_a_loaded_classifier_on_another_device_is_refused_not_moved(toy_linear_loaded) -> None:
    """``device=`` with a loaded classifier was ignored: the work ran where the model was."""
    with pytest.raises(ValueError, match="this classifier is on cpu, not meta: load it on that device"):
        api.explain(toy_linear_loaded, TEXT, ["loo_empty"], device="meta")
    assert api.load(toy_linear_loaded, device="cpu") is toy_linear_loaded
    assert api.load(toy_linear_loaded, device=torch.device("cpu", 0)) is toy_linear_loaded  # one CPU: any index


def test_compare_takes_a_model_object_as_model_b(toy_linear_loaded) -> None:
    """Model B as a model object needed a tokenizer the call had no place for (``tokenizer=`` is
    model A's)."""
    result = api.compare(toy_linear_loaded, fresh_toy_model(), TEXT, ["loo_empty"], tokenizer_b=toy_tokenizer())
    expected = api.explain(toy_linear_loaded, TEXT, ["loo_empty"])
    np.testing.assert_allclose(result.second["loo_empty"].scores, expected["loo_empty"].scores, rtol=1e-5)


def test_a_dataset_dict_is_asked_for_one_split(toy_linear_loaded) -> None:
    from datasets import Dataset, DatasetDict

    splits = DatasetDict(
        {"train": Dataset.from_dict({"text": ["a", "b"]}), "validation": Dataset.from_dict({"text": ["c"]})}
    )
    with pytest.raises(
        ValueError, match=re.escape("a DatasetDict holds splits (train, validation): pick one, e.g. dataset['train']")
    ):
        api.evaluate(toy_linear_loaded, splits, ["random"], ["deletion"])
