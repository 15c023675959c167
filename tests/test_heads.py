"""Regression and multi-label heads (issue 24): the explained output decided from the config
(``core.heads``), known answers on the linear toy with a sigmoid per label or one regression
score, every registered method on tiny random BERTs of each head type, the metrics, the command
line's ``evaluate`` and the one-line refusal of a model with no head."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from transformers import BertConfig

import explainers
from cli.main import main
from core.classifier import Classifier
from core.heads import detect_head
from core.loaded import classifier_from_model
from core.masked_lm import MaskedLM
from core.types import Example
from metrics import faithfulness as F
from tests.toy import PLANTED, REGRESSION_WEIGHT, WEIGHT, toy_bert_head, toy_linear, toy_masked_lm, toy_tokenizer

EXAMPLE = Example(segments=(("the", "movie", "was", "great", "but", "the", "plot", "was", "bad", "."),), id="toy/0")


def toy_logits(words: list[str], weight: list[list[float]]) -> np.ndarray:
    """The linear toy by hand: logits = ([CLS] + sum of the planted rows) @ weight."""
    pooled = np.array([0.2, 0.0, 0.0, 0.0]) + sum((np.array(PLANTED[w]) for w in words if w in PLANTED), np.zeros(4))
    return pooled @ np.array(weight)


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


# --------------------------------------------------------------------------- detection


def test_head_detected_from_problem_type_and_num_labels() -> None:
    assert detect_head(BertConfig(num_labels=3)).kind == "single_label"
    assert detect_head(BertConfig(num_labels=1)).kind == "regression"
    assert detect_head(BertConfig(num_labels=1, problem_type="regression")).kind == "regression"
    assert detect_head(BertConfig(num_labels=4, problem_type="multi_label_classification")).kind == "multi_label"
    assert detect_head(BertConfig(num_labels=2, problem_type="regression")).kind == "regression"
    assert detect_head(BertConfig(num_labels=2), override="multi_label").kind == "multi_label"
    names = detect_head(BertConfig(num_labels=1, id2label={0: "stars"})).label_names
    assert names == ("stars",)


def test_head_refusals_are_one_line_and_name_what_was_found() -> None:
    config = BertConfig(num_labels=2)
    config.id2label = {}  # num_labels is len(id2label): a config with no labels at all
    with pytest.raises(ValueError, match=r"no classification head to explain: num_labels=0") as error:
        detect_head(config, name="'x'")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="one output"):
        detect_head(BertConfig(num_labels=1), override="single_label")
    with pytest.raises(ValueError, match="unknown head type 'softmax'"):
        detect_head(BertConfig(num_labels=2), override="softmax")


def test_model_with_no_labels_is_refused_when_shared() -> None:
    loaded = toy_bert_head("regression")
    model = type(loaded.model)(loaded.model.config)
    model.config.id2label = {}
    with pytest.raises(ValueError, match=r"'bad' has no classification head to explain: num_labels=0"):
        classifier_from_model(model, toy_tokenizer(), name="bad")


# --------------------------------------------------------------------------- the scorer and known answers


def test_scorer_returns_each_heads_own_output() -> None:
    variant = Classifier(toy_linear()).encode(EXAMPLE).variant
    logits = toy_logits(list(EXAMPLE.words), WEIGHT)  # [-2.2, 2.2]
    single = Classifier(toy_linear()).predict_proba([variant])[0]
    np.testing.assert_allclose(single, np.exp(logits) / np.exp(logits).sum(), atol=1e-6)
    multi = Classifier(toy_linear("multi_label")).predict_proba([variant])[0]
    np.testing.assert_allclose(multi, [sigmoid(-2.2), sigmoid(2.2)], atol=1e-6)
    assert multi[1] != pytest.approx(single[1], abs=0.05)  # sigmoid(2.2) = 0.90, softmax: sigmoid(4.4) = 0.99
    score = Classifier(toy_linear("regression")).predict_proba([variant])[0]
    np.testing.assert_allclose(score, [2.2], atol=1e-6)
    # The override explains the softmax toy's logits as independent sigmoids, on this request only.
    loaded = toy_linear()
    overridden = Classifier(loaded, head_type="multi_label").predict_proba([variant])[0]
    np.testing.assert_allclose(overridden, multi, atol=1e-6)
    assert Classifier(loaded).head.kind == "single_label"


@pytest.mark.parametrize("key", ["loo_empty", "loo_unk", "loo_zero"])
@pytest.mark.parametrize("output", ["log_odds", "probability"])
def test_leave_one_out_of_a_regression_head_is_the_change_of_the_score(key: str, output: str) -> None:
    clf = Classifier(toy_linear("regression"))
    spec = explainers.get(key)
    result = explainers.run_explainer(spec, clf, EXAMPLE, 0, spec.make_params({"output": output}))
    words = list(EXAMPLE.words)
    original = toy_logits(words, REGRESSION_WEIGHT)[0]
    expected = [original - toy_logits(words[:i] + words[i + 1 :], REGRESSION_WEIGHT)[0] for i in range(len(words))]
    np.testing.assert_allclose(result.scores, expected, atol=1e-5)
    assert result.scores[words.index("great")] == pytest.approx(3.0, abs=1e-5)
    assert result.scores[words.index("bad")] == pytest.approx(-1.0, abs=1e-5)


@pytest.mark.parametrize("target", [0, 1])
@pytest.mark.parametrize("output", ["log_odds", "probability"])
def test_leave_one_out_of_a_multi_label_head_is_the_change_of_the_labels_sigmoid(target: int, output: str) -> None:
    clf = Classifier(toy_linear("multi_label"))
    spec = explainers.get("loo_empty")
    result = explainers.run_explainer(spec, clf, EXAMPLE, target, spec.make_params({"output": output}))
    words = list(EXAMPLE.words)
    z = toy_logits(words, WEIGHT)[target]
    for i, word in enumerate(words):
        removed = toy_logits(words[:i] + words[i + 1 :], WEIGHT)[target]
        # log2-odds of a sigmoid is its logit / ln 2
        expected = (z - removed) / math.log(2) if output == "log_odds" else sigmoid(z) - sigmoid(removed)
        assert result.scores[i] == pytest.approx(expected, abs=1e-5), word
    assert result.scores[words.index("great")] != 0.0


def test_gradients_differentiate_the_regression_score_and_the_labels_sigmoid() -> None:
    spec = explainers.get("grad_x_input")
    regression = explainers.run_explainer(spec, Classifier(toy_linear("regression")), EXAMPLE, 0)
    expected = [
        float(np.array(PLANTED.get(w, [0, 0, 0, 0])) @ np.array(REGRESSION_WEIGHT)[:, 0]) for w in EXAMPLE.words
    ]
    np.testing.assert_allclose(regression.scores, expected, atol=1e-6)  # d score / d x = the weight column
    multi = explainers.run_explainer(spec, Classifier(toy_linear("multi_label")), EXAMPLE, 1)
    slope = sigmoid(2.2) * (1 - sigmoid(2.2))  # d sigmoid(z) / dz at the label's logit
    expected = [slope * float(np.array(PLANTED.get(w, [0, 0, 0, 0])) @ np.array(WEIGHT)[:, 1]) for w in EXAMPLE.words]
    np.testing.assert_allclose(multi.scores, expected, atol=1e-6)


# --------------------------------------------------------------------------- every method, tiny random BERTs

FAST = {
    "integrated_gradients": {"n_steps": 16},
    "lime": {"n_samples": 60},
    "lime_mlm": {"n_samples": 40},
    "kernel_shap": {"n_samples": 60},
    "marc": {"n_steps": 15},
    "aml": {"n_steps": 2, "n_train": 8, "n_epochs": 1},
}
SINGLE_LABEL_ONLY = {"aml"}  # AML's loss is a cross-entropy over a softmax of exclusive classes


@pytest.fixture(scope="module")
def toy_mlm() -> MaskedLM:
    return toy_masked_lm(seed=1)


@pytest.fixture(scope="module", params=["multi_label", "regression"])
def head_bert(request):
    return toy_bert_head(request.param)


@pytest.mark.parametrize("key", list(explainers.REGISTRY))
def test_every_method_explains_each_head(key: str, head_bert, toy_mlm: MaskedLM) -> None:
    clf = Classifier(head_bert)
    spec = explainers.get(key)
    names = {f.name for f in dataclasses.fields(spec.params_cls)}
    params = spec.make_params({k: v for k, v in FAST.get(key, {}).items() if k in names})
    target = clf.head.label_names.index(clf.head.label_names[-1])
    if key in SINGLE_LABEL_ONLY:
        with pytest.raises(ValueError, match=f"single-label.*{clf.head.kind} head"):
            explainers.run_explainer(spec, clf, EXAMPLE, target, params, mlm=toy_mlm)
        return
    result = explainers.run_explainer(spec, clf, EXAMPLE, target, params, mlm=toy_mlm)
    assert result.scores.shape == (len(EXAMPLE.words),)
    assert np.all(np.isfinite(result.scores))
    assert np.any(result.scores != 0.0), key  # the softmax of one logit made every score 0


# --------------------------------------------------------------------------- metrics


def test_faithfulness_of_a_regression_head_measures_the_change_of_the_score() -> None:
    clf = Classifier(toy_linear("regression"))
    attribution = explainers.run_explainer(explainers.get("loo_empty"), clf, EXAMPLE, 0)
    results = F.score_many(clf, EXAMPLE, attribution, {"comprehensiveness": F.BinParams(bins="marc")})
    words = list(EXAMPLE.words)
    original = toy_logits(words, REGRESSION_WEIGHT)[0]
    first_bin = results["comprehensiveness"].curve[0][1]  # 5% of 10 words: "great" removed
    assert first_bin == pytest.approx(original - toy_logits([w for w in words if w != "great"], REGRESSION_WEIGHT)[0])
    assert first_bin == pytest.approx(3.0)
    with pytest.raises(ValueError, match="log_odds metric needs probabilities.*regression head"):
        F.score_many(clf, EXAMPLE, attribution, {"log_odds": None})


def test_faithfulness_of_a_multi_label_head_uses_the_labels_sigmoid() -> None:
    clf = Classifier(toy_linear("multi_label"))
    attribution = explainers.run_explainer(explainers.get("loo_empty"), clf, EXAMPLE, 1)
    result = F.score_many(clf, EXAMPLE, attribution, {"log_odds": F.LogOddsParams(removal="delete")})["log_odds"]
    words = list(EXAMPLE.words)
    order = F.ranking(attribution.scores)  # 20% of 10 words: the top two are deleted
    assert words[order[0]] == "great"
    remaining = [w for i, w in enumerate(words) if i not in set(order[:2])]
    expected = math.log(sigmoid(toy_logits(remaining, WEIGHT)[1])) - math.log(sigmoid(toy_logits(words, WEIGHT)[1]))
    assert result.value == pytest.approx(expected, abs=1e-6)


# --------------------------------------------------------------------------- the command line


@pytest.fixture(scope="module")
def head_dirs(tmp_path_factory) -> dict[str, str]:
    folders = {}
    for head in ("multi_label", "regression"):
        folder = tmp_path_factory.mktemp(head)
        loaded = toy_bert_head(head)
        loaded.model.save_pretrained(folder)
        loaded.tokenizer.save_pretrained(folder)
        folders[head] = str(folder)
    return folders


def evaluate(capsys, model: str, *extra: str) -> tuple[int, dict | None, str]:
    code = main(
        ["evaluate", "--model", model, "--dataset", "examples", "--split", "sst2", "--limit", "2",
         "--methods", "loo_empty,saliency,lime", "--param", "lime.n_samples=40", "--quiet", "--json", *extra]
    )  # fmt: skip
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


@pytest.mark.parametrize("head", ["multi_label", "regression"])
def test_cli_evaluate_each_head(head: str, head_dirs, capsys) -> None:
    code, payload, err = evaluate(capsys, head_dirs[head])
    assert code == 0, err
    metrics = set(payload["metrics"])
    assert ("log_odds" in metrics) == (head == "multi_label")  # left out of the defaults for a score
    for method in ("loo_empty", "saliency", "lime"):
        assert payload["results"][method]["comprehensiveness"]["n"] == 2


def test_cli_refuses_log_odds_for_a_regression_head_and_takes_an_override(head_dirs, capsys) -> None:
    code, _, err = evaluate(capsys, head_dirs["regression"], "--metrics", "deletion,log_odds")
    assert code == 2
    assert err.strip().startswith("error: the log_odds metric needs probabilities")
    assert len(err.strip().splitlines()) == 1
    # The override: the one output read as a sigmoid probability, so log-odds are defined again.
    code, payload, err = evaluate(capsys, head_dirs["regression"], "--head-type", "multi_label")
    assert code == 0, err
    assert "log_odds" in payload["metrics"]


@pytest.mark.parametrize("head", ["regression", "multi_label"])
def test_gold_targets_of_a_regression_or_multi_label_head_are_refused_in_one_line(head, head_dirs, tmp_path, capsys):
    """A regression head has no class to pick: "gold" said "target 1 is not a class of ... (0..0)";
    a multi-label head explained its label of the gold class's number (HateXplain's "normal", 1,
    as the target-group model's "Islam") with exit code 0."""
    said = (
        f"error: a {head.replace('_', '-')} head explains its own outputs, not the dataset's gold class: "
        "explain the predicted output\n"
    )
    code, _, err = evaluate(capsys, head_dirs[head], "--target", "gold")
    assert (code, err) == (2, said)
    results = tmp_path / "results"
    argv = ["run", "--model", head_dirs[head], "--dataset", "examples", "--split", "sst2", "--limit", "2"]
    assert main([*argv, "--target", "gold", "--results-dir", str(results)]) == 2
    assert capsys.readouterr().err == said and not results.exists()  # refused before the run is stored


@pytest.mark.parametrize("head", ["multi_label", "regression"])
def test_cli_predict_shows_the_heads_prediction(head: str, head_dirs, tmp_path, capsys) -> None:
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"text": "the movie was great"}\n')
    threshold = ["--threshold", "0.3"] if head == "multi_label" else []
    code = main(["predict", "--model", head_dirs[head], "--texts", str(texts), *threshold])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["head"] == head
    row = payload["examples"][0]
    if head == "regression":
        assert len(row["scores"]) == 1 and "predicted" not in row and "threshold" not in payload
    else:
        assert row["labels"] == [i for i, p in enumerate(row["probabilities"]) if p >= 0.3]
        assert payload["threshold"] == 0.3


@pytest.mark.parametrize("head", ["single_label", "regression"])
def test_cli_predict_refuses_a_threshold_its_head_would_ignore(
    head: str, head_dirs, toy_bert_folder, tmp_path, capsys
) -> None:
    """Only a multi-label head's labels are chosen by a threshold: elsewhere it is refused, not
    silently dropped."""
    model = toy_bert_folder if head == "single_label" else head_dirs[head]
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"text": "the movie was great"}\n')
    code = main(["predict", "--model", model, "--texts", str(texts), "--threshold", "0.3"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert f"--threshold picks a multi-label head's labels; {model}'s head is {head}" in captured.err


def test_cli_refuses_a_model_with_no_head_in_one_line(tmp_path, capsys) -> None:
    loaded = toy_bert_head("regression")
    config = loaded.model.config
    config.id2label = {}  # a classifier with zero outputs
    type(loaded.model)(config).save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"text": "the movie was great"}\n')
    capsys.readouterr()  # the weights writer's progress bar
    code = main(["predict", "--model", str(tmp_path), "--texts", str(texts)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "no classification head to explain: num_labels=0" in err
    assert len(err.splitlines()) == 1


def test_a_gold_label_the_model_does_not_have_is_named_the_datasets_label():
    """A HateXplain example's class ("normal") was shown as the gold label under the model of its
    target groups, whose labels are communities."""
    from ui.prediction import prediction_markdown

    classes = prediction_markdown(("normal", "offensive"), (0.7, 0.3), "single_label", 0, 0, gold="normal")
    assert classes.endswith("**Gold label:** normal")
    groups = prediction_markdown(("African", "Jewish"), (0.2, 0.9), "multi_label", 1, 1, gold="normal")
    assert groups.endswith("**Dataset label:** normal (not one of the model's labels)")


def test_a_multi_label_prediction_is_said_as_its_label_set() -> None:
    """It said "predicted 'Jewish' (p = 0.062)" for a head that predicts no label at all."""
    from engine.explain import Prediction

    names = ("toxic", "insult", "threat")
    both = Prediction((0.9, 0.2, 0.7), 0, "multi_label").text(2, names)
    assert both == "predicted 'toxic' (p = 0.900), 'threat' (p = 0.700); explaining 'threat'"
    none = Prediction((0.1, 0.3, 0.2), 1, "multi_label").text(1, names)
    assert none == "predicted no label at p ≥ 0.5 (likeliest 'insult', p = 0.300); explaining 'insult'"
    single = Prediction((0.1, 0.9), 1).text(1, ("negative", "positive"))
    assert single == "predicted 'positive' (p = 0.900); explaining 'positive'"


@pytest.mark.parametrize("head", ["multi_label", "regression"])
def test_predict_names_the_datasets_classes_a_gold_number_stands_for(head, head_dirs, capsys) -> None:
    """A multi-label or regression head's predictions printed "gold": 1 beside its own outputs,
    which read as its label 1 (a target group, or no label at all)."""
    import json

    argv = ["predict", "--model", head_dirs[head], "--dataset", "examples", "--split", "sst2", "--limit", "2"]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["gold_label_names"] == ["negative", "positive"]
    assert [row["gold"] for row in payload["examples"]] == [1, 0] and "accuracy" not in payload


def test_runs_imports_and_the_api_leave_log_odds_out_of_a_regression_heads_defaults(head_dirs, tmp_path, capsys):
    """``evaluate`` and the app left log-odds out of a regression head's default metrics, but
    ``run`` stored a run that failed on every unit, ``import`` an import that failed, and
    ``api.evaluate`` / ``api.run`` refused the defaults."""
    import json

    import api

    model, results = head_dirs["regression"], tmp_path / "results"
    slice_args = ["--model", model, "--dataset", "examples", "--split", "sst2", "--limit", "2", "--methods", "random"]
    common = ["--executor", "serial", "--results-dir", str(results), "--quiet", "--json"]
    assert main(["run", *slice_args, *common]) == 0
    assert list(json.loads(capsys.readouterr().out)["metrics"]) == [
        "deletion",
        "insertion",
        "comprehensiveness",
        "sufficiency",
    ]
    assert main(["run", *slice_args, "--metrics", "deletion,log_odds", *common]) == 2  # named on purpose: refused
    assert "the log_odds metric needs probabilities" in capsys.readouterr().err
    assert [info.status for info in api.runs(results).itertuples()] == ["done"]  # nothing failed was stored

    record = api.explain(model, "a fine film", ["random"], seed=0).to_json()
    (tmp_path / "one.json").write_text(json.dumps(record))
    assert main(["import", str(tmp_path / "one.json"), "--model", model, "--results-dir", str(results), "--quiet"]) == 0
    capsys.readouterr()
    evaluation = api.evaluate(model, ["a fine film", "a dull plot"], ["random"], seed=0)
    assert set(evaluation.summary().index.get_level_values("metric")) == {
        "deletion",
        "insertion",
        "comprehensiveness",
        "sufficiency",
    }
    stored = api.run(Path(model), "examples", "sst2", ["random"], limit=2, results_dir=results)  # a path, too
    assert "log_odds" not in set(stored.summary().index.get_level_values("metric"))


def test_a_regression_slices_intervals_are_not_cut_to_a_probabilitys_range() -> None:
    """A slice's interval was cut to a metric's probability range [0, 1] whenever the values lay
    in it, a regression head's raw scores too, whose range is not [0, 1]: the interval came out
    narrower than the t interval."""
    from engine.evaluate import ExampleResult, SliceEvaluation, evaluate_slice, metric_params
    from engine.slice_report import summarize
    from metrics.base import MetricResult, mean_interval

    values = [0.95, 0.99, 1.0]
    results = [
        ExampleResult(EXAMPLE, (0.5, 0.5), 0, {}, {"random": {"deletion": MetricResult(v)}}, position=i)
        for i, v in enumerate(values)
    ]
    cut = summarize(SliceEvaluation(["random"], ["deletion"], results))["random"]["deletion"]
    raw = summarize(SliceEvaluation(["random"], ["deletion"], results, probabilities=False))["random"]["deletion"]
    _, low, high, _ = mean_interval(values)
    assert high > 1 and cut["interval"] == [pytest.approx(low), 1.0]
    assert raw["interval"] == [pytest.approx(low), pytest.approx(high)]
    evaluation = evaluate_slice(
        Classifier(toy_linear("regression")), [EXAMPLE], ["random"], metric_params(["deletion"])
    )
    assert evaluation.probabilities is False


def test_a_stored_run_takes_a_head_type_as_evaluate_does(head_dirs, tmp_path, capsys, monkeypatch):
    """``run`` had no ``--head-type``: a model whose config names the wrong head could be
    evaluated but not kept in the store. The override now fits the defaults (log-odds back for a
    sigmoid read), gives the numbers ``evaluate`` gives, is its own run and is kept on resume."""
    import json

    from engine.runs.store import RunStore

    model, results = head_dirs["regression"], tmp_path / "results"
    slice_args = ["--model", model, "--dataset", "examples", "--split", "sst2", "--limit", "2", "--methods", "random"]
    common = ["--seed", "0", "--executor", "serial", "--results-dir", str(results), "--quiet", "--json"]
    assert main(["run", *slice_args, "--head-type", "multi_label", *common]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert "log_odds" in stored["metrics"]
    code = main(["evaluate", *slice_args, "--seed", "0", "--head-type", "multi_label", "--quiet", "--json"])
    computed = json.loads(capsys.readouterr().out)
    assert code == 0
    for metric in ("deletion", "log_odds"):
        assert stored["results"]["random"][metric]["mean"] == pytest.approx(
            computed["results"]["random"][metric]["mean"]
        )
    (info,) = RunStore(results).infos()
    assert info.selection["head_type"] == "multi_label"
    import api  # the Python API's run of the same settings is the same stored run: read back

    read_back = api.run(
        model, "examples", "sst2", ["random"], limit=2, seed=0, head_type="multi_label", results_dir=results
    )
    assert [i.run_id for i in RunStore(results).infos()] == [info.run_id]
    assert read_back.head == "multi_label"  # the head the run explained (it said the config's, regression)
    from engine.runs.executor import read_evaluation
    from services.runs import snapshot

    assert read_evaluation(RunStore(results), info.run_id)[1].probabilities  # sigmoids, not a raw score
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(results))
    assert snapshot(info.run_id).head == "multi_label"
    assert main(["run", "--resume", info.run_id, "--executor", "serial", "--results-dir", str(results), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", *slice_args, *common]) == 0  # the config's head: another run
    assert len(RunStore(results).infos()) == 2
    assert main(["run", *slice_args, "--head-type", "regression", *common]) == 0  # the config's own: the same run
    assert len(RunStore(results).infos()) == 2
