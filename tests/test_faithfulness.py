"""Faithfulness metrics on the toy linear model, whose probabilities have a closed form.

The toy model's logits are ``sum_t E[x_t] @ W``: only [CLS] (0.2 on the positive axis), great
(+3), good (+1), bad (-1 on the positive axis, i.e. +1 on the negative one) and awful (-3) carry
weight, and [MASK] / [UNK] / [PAD] embed to zero. So p(positive) = sigmoid(2 * (pos - neg)) with
pos and neg the sums over the words present, whatever the removal token.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

import metrics
from core.encoding import Variant
from core.masked_lm import Fill
from core.types import Example
from explainers.base import make_attribution
from metrics import faithfulness as F
from tests.toy import VOCAB, toy_masked_lm, toy_tokenizer

POSITIVE = 1
EVIDENCE = {"great": 3.0, "good": 1.0, "bad": -1.0, "awful": -3.0}  # each word's pos - neg
CLS = 0.2


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def p_positive(words) -> float:
    """Closed-form p(positive) of the toy linear model for the words present."""
    return sigmoid(2.0 * (CLS + sum(EVIDENCE.get(w, 0.0) for w in words)))


def oracle(example: Example, target: int = POSITIVE):
    """The toy model's true evidence for the target: the important words first."""
    sign = 1.0 if target == POSITIVE else -1.0
    return make_attribution(example, target, [sign * EVIDENCE.get(w, 0.0) for w in example.words])


@pytest.fixture
def mixed_example() -> Example:
    words = ("the", "film", "was", "great", "and", "good", "but", "the", "plot", "was", "bad", ".")
    return Example(segments=(words,), id="toy/mixed")


def kept(example: Example, removed) -> list[str]:
    gone = set(removed)
    return [w for i, w in enumerate(example.words) if i not in gone]


def test_registry_directions():
    expected = {
        "deletion": False,
        "insertion": True,
        "comprehensiveness": True,
        "sufficiency": False,
        "log_odds": False,
    }
    for key, higher in expected.items():
        assert metrics.get(key).higher_is_better is higher
        assert metrics.get(key).family == "faithfulness"


@pytest.mark.parametrize(
    ("fraction", "n", "count"),
    [(0.01, 20, 1), (0.05, 20, 1), (0.2, 10, 2), (0.1, 30, 3), (0.5, 5, 3), (0.2, 4, 1), (1.0, 7, 7), (0.3, 10, 3)],
)
def test_word_count_rounds_up_to_at_least_one(fraction, n, count):
    assert F.word_count(fraction, n) == count


def test_deletion_hand_computed(linear_clf, toy_example):
    # toy_example: the movie was great but the plot was bad . -> order great, then the (ties by position)
    result = metrics.get("deletion").compute(linear_clf, toy_example, oracle(toy_example), F.CurveParams())
    y = [sigmoid(2 * (0.2 + 3 - 1)), sigmoid(2 * (0.2 - 1)), sigmoid(2 * (0.2 - 1))]
    assert [x for x, _ in result.curve] == [0.0, 0.5, 1.0]
    assert [p for _, p in result.curve] == pytest.approx(y, abs=1e-6)
    assert result.value == pytest.approx(0.25 * y[0] + 0.5 * y[1] + 0.25 * y[2], abs=1e-6)
    assert result.extras["order"] == [3, 0]
    assert result.extras["inputs"][2] == "movie was but the plot was bad ."


def test_insertion_hand_computed(linear_clf, toy_example):
    result = metrics.get("insertion").compute(linear_clf, toy_example, oracle(toy_example), F.CurveParams())
    y = [sigmoid(2 * 0.2), sigmoid(2 * 3.2), sigmoid(2 * 3.2)]
    assert [p for _, p in result.curve] == pytest.approx(y, abs=1e-6)
    assert result.value == pytest.approx(0.25 * y[0] + 0.5 * y[1] + 0.25 * y[2], abs=1e-6)
    assert result.extras["inputs"] == ["", "great", "the great"]


@pytest.mark.parametrize("removal", ["delete", "mask", "unk", "pad"])
def test_full_curve_endpoints(linear_clf, mixed_example, removal):
    attribution = oracle(mixed_example)
    params = F.CurveParams(removal=removal, fraction=1.0)
    deletion = metrics.get("deletion").compute(linear_clf, mixed_example, attribution, params)
    insertion = metrics.get("insertion").compute(linear_clf, mixed_example, attribution, params)
    original, empty = p_positive(mixed_example.words), p_positive([])
    assert len(deletion.curve) == len(mixed_example.words) + 1
    assert deletion.curve[0][1] == pytest.approx(original, abs=1e-6)
    assert deletion.curve[-1][1] == pytest.approx(empty, abs=1e-6)
    assert insertion.curve[0][1] == pytest.approx(empty, abs=1e-6)
    assert insertion.curve[-1][1] == pytest.approx(original, abs=1e-6)


def test_full_curve_endpoints_with_mask_tokens_on_bert(bert_clf, toy_example):
    """On a real transformer [MASK] differs from deletion: the last point is the all-[MASK] input."""
    params = F.CurveParams(removal="mask", fraction=1.0)
    result = metrics.get("deletion").compute(bert_clf, toy_example, oracle(toy_example), params)
    n = len(toy_example.words)
    ids = (VOCAB["[CLS]"],) + (VOCAB["[MASK]"],) * n + (VOCAB["[SEP]"],)
    expected = bert_clf.predict_proba([Variant(ids, (0,) * len(ids))])[0, POSITIVE]
    assert result.curve[-1][1] == pytest.approx(expected, abs=1e-6)
    assert result.extras["inputs"][-1] == " ".join(["[MASK]"] * n)


def reference_bins(example: Example, scores, fractions, keep: bool) -> float:
    """ERASER's definition written out on the closed form: mean of p(x) - p(x') over the bins."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    n = len(scores)
    drops = []
    for b in fractions:
        k = min(n, max(1, math.ceil(round(b * n, 9))))
        removed = order[k:] if keep else order[:k]
        drops.append(p_positive(example.words) - p_positive(kept(example, removed)))
    return float(np.mean(drops))


@pytest.mark.parametrize("bins", ["eraser", "marc"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_comprehensiveness_and_sufficiency_match_reference(linear_clf, mixed_example, bins, seed):
    scores = np.random.default_rng(seed).normal(size=len(mixed_example.words))
    attribution = make_attribution(mixed_example, POSITIVE, scores)
    params = F.BinParams(bins=bins)
    comp = metrics.get("comprehensiveness").compute(linear_clf, mixed_example, attribution, params)
    suff = metrics.get("sufficiency").compute(linear_clf, mixed_example, attribution, params)
    fractions = F.BIN_SETS[bins]
    scores32 = attribution.scores.tolist()
    assert comp.value == pytest.approx(reference_bins(mixed_example, scores32, fractions, keep=False), abs=1e-6)
    assert suff.value == pytest.approx(reference_bins(mixed_example, scores32, fractions, keep=True), abs=1e-6)
    assert len(comp.curve) == len(fractions) == (5 if bins == "eraser" else 19)


def test_comprehensiveness_sufficiency_hand_computed(linear_clf, mixed_example):
    # 12 words; bins 1, 5, 10, 20, 50% -> 1, 1, 2, 3, 6 words; oracle order great, good, then neutral words.
    comp = metrics.get("comprehensiveness").compute(linear_clf, mixed_example, oracle(mixed_example), F.BinParams())
    suff = metrics.get("sufficiency").compute(linear_clf, mixed_example, oracle(mixed_example), F.BinParams())
    p0 = sigmoid(2 * (0.2 + 3 + 1 - 1))
    minus_great, minus_both = sigmoid(2 * (0.2 + 1 - 1)), sigmoid(2 * (0.2 - 1))
    assert comp.extras["counts"] == [1, 1, 2, 3, 6]
    assert comp.value == pytest.approx(p0 - (2 * minus_great + 3 * minus_both) / 5, abs=1e-6)
    only_great, great_good = sigmoid(2 * 3.2), sigmoid(2 * 4.2)
    assert suff.value == pytest.approx(p0 - (2 * only_great + 3 * great_good) / 5, abs=1e-6)


def test_aopc_divisor_bins_plus_one_follows_the_eraser_code(linear_clf, mixed_example):
    papers = metrics.get("comprehensiveness").compute(linear_clf, mixed_example, oracle(mixed_example), F.BinParams())
    code = metrics.get("comprehensiveness").compute(
        linear_clf, mixed_example, oracle(mixed_example), F.BinParams(normalization="bins_plus_one")
    )
    assert code.value == pytest.approx(papers.value * 5 / 6, abs=1e-9)
    assert code.curve == papers.curve  # the per-bin drops are the same; only the divisor differs


def test_log_odds_hand_computed(linear_clf, mixed_example):
    # 20% of 12 words -> 3 words (great, good, the) replaced by [MASK]
    result = metrics.get("log_odds").compute(linear_clf, mixed_example, oracle(mixed_example), F.LogOddsParams())
    expected = math.log(sigmoid(2 * (0.2 - 1))) - math.log(sigmoid(2 * (0.2 + 3 + 1 - 1)))
    assert result.value == pytest.approx(expected, abs=1e-5)
    assert result.extras["inputs"] == ["[MASK] film was [MASK] and [MASK] but the plot was bad ."]


def test_oracle_beats_random(linear_clf, mixed_example):
    import explainers

    good = F.score_many(
        linear_clf,
        mixed_example,
        oracle(mixed_example),
        {"deletion": None, "comprehensiveness": None, "sufficiency": None},
    )
    spec = explainers.get("random")
    for seed in range(5):
        attribution = explainers.run_explainer(
            spec, linear_clf, mixed_example, POSITIVE, spec.make_params({"seed": seed})
        )
        bad = F.score_many(
            linear_clf, mixed_example, attribution, {"deletion": None, "comprehensiveness": None, "sufficiency": None}
        )
        assert good["deletion"].value < bad["deletion"].value
        assert good["comprehensiveness"].value > bad["comprehensiveness"].value
        assert good["sufficiency"].value < bad["sufficiency"].value


def reset_counts(clf) -> None:
    clf.forward_passes = clf.backward_passes = clf.model_calls = 0


def count_scorer_calls(clf, monkeypatch) -> list[int]:
    """The scorer calls ``clf`` gets from here on: the number of examples' groups in each."""
    calls: list[int] = []
    original = clf.predict_proba_groups
    monkeypatch.setattr(
        clf,
        "predict_proba_groups",
        lambda groups, progress=None: calls.append(len(groups)) or original(groups, progress),
    )
    return calls


def test_one_batch_per_example_and_method(linear_clf, toy_example, monkeypatch):
    calls = count_scorer_calls(linear_clf, monkeypatch)
    F.score_many(linear_clf, toy_example, oracle(toy_example), {key: None for key in F.METRIC_KEYS})
    assert len(calls) == 1
    # Distinct inputs: original; -great; -great -the (deletion steps = comprehensiveness 1, 2);
    # -5 words (comp 50%); nothing; great; the great (insertion = sufficiency 1, 2);
    # top-5 kept (sufficiency 50%); [MASK] at great and the (log odds) -> 9.
    assert linear_clf.forward_passes == 9


def test_every_method_of_an_example_in_one_batch(linear_clf, toy_example, monkeypatch):
    """The methods' attributions of one example share one scorer call: each gets the values it
    gets alone, and the inputs they have in common are scored once."""
    rng = np.random.default_rng(0)
    attributions = {
        "oracle": oracle(toy_example),
        "random": make_attribution(toy_example, POSITIVE, rng.normal(size=len(toy_example.words))),
    }
    keys = {key: None for key in F.METRIC_KEYS}
    alone = {method: F.score_many(linear_clf, toy_example, a, keys) for method, a in attributions.items()}
    passes_alone = linear_clf.forward_passes
    reset_counts(linear_clf)
    calls = count_scorer_calls(linear_clf, monkeypatch)
    together = F.score_attributions(linear_clf, toy_example, attributions, keys)
    assert len(calls) == 1
    assert linear_clf.forward_passes < passes_alone  # the whole and the emptied input, scored once
    for method, results in alone.items():
        for key, result in results.items():
            assert together[method][key].value == pytest.approx(result.value, rel=1e-9, abs=1e-12)


def test_a_group_of_examples_in_one_scorer_call(linear_clf, toy_example, mixed_example, monkeypatch):
    """Several examples' attributions share one scorer call: each example gets the values it gets
    alone and is charged the passes it costs alone (its identical variants scored once, another
    example's never shared with it)."""
    rng = np.random.default_rng(1)
    examples = [toy_example, mixed_example, toy_example]
    per_example = [
        {"oracle": oracle(example), "random": make_attribution(example, POSITIVE, rng.normal(size=len(example.words)))}
        for example in examples
    ]
    keys = {key: None for key in F.METRIC_KEYS}
    alone, passes_alone = [], []
    for example, attributions in zip(examples, per_example, strict=True):
        reset_counts(linear_clf)
        alone.append(F.score_attributions(linear_clf, example, attributions, keys))
        passes_alone.append(linear_clf.forward_passes)
    reset_counts(linear_clf)
    calls = count_scorer_calls(linear_clf, monkeypatch)
    planned = [F.plan_attributions(linear_clf, e, a, keys) for e, a in zip(examples, per_example, strict=True)]
    with linear_clf.per_example(len(examples)) as ledger:
        together = F.score_examples(linear_clf, planned)
    assert calls == [3]
    assert ledger.forward == passes_alone  # the repeated example is scored again, as its own
    for expected, got in zip(alone, together, strict=True):
        for method, results in expected.items():
            for key, result in results.items():
                assert got[method][key].value == pytest.approx(result.value, rel=1e-9, abs=1e-12)
                np.testing.assert_allclose(got[method][key].curve, result.curve, rtol=1e-9, atol=1e-12)


def test_scores_of_wrong_length_raise(linear_clf, toy_example):
    short = make_attribution(Example(segments=(("great",),), id="x"), POSITIVE, [1.0])
    with pytest.raises(ValueError, match="1 scores for 10 words"):
        metrics.get("deletion").compute(linear_clf, toy_example, short, F.CurveParams())


def test_mlm_removal_needs_a_masked_lm(linear_clf, toy_example):
    with pytest.raises(ValueError, match="masked language model"):
        metrics.get("deletion").compute(linear_clf, toy_example, oracle(toy_example), F.CurveParams(removal="mlm"))


class EchoMaskedLM:
    """A fake masked LM whose top-1 fill-in is always the original word; then a ``##`` piece,
    a special token and a real word from ``alternatives`` (by position)."""

    def __init__(self, alternatives: dict[int, str]) -> None:
        self.tokenizer = toy_tokenizer()
        self.alternatives = alternatives
        self.calls: list[tuple[list[str], int]] = []

    def fill_words(self, segments, positions, k=10, batch_size=64):
        words = [w for s in segments for w in s]
        out = []
        for position in positions:
            self.calls.append((list(words), position))
            original = words[position]
            fills = [Fill(original, VOCAB.get(original, 1), 0.9), Fill("##able", VOCAB["##able"], 0.05)]
            fills.append(Fill("[SEP]", VOCAB["[SEP]"], 0.03))
            if position in self.alternatives:
                fills.append(Fill(self.alternatives[position], VOCAB[self.alternatives[position]], 0.02))
            out.append((fills[:k], 0.9))
        return out

    def token_text(self, token: str) -> str:
        return token


def test_mlm_removal_never_puts_back_the_original_word(linear_clf, toy_example):
    # great (3) is removed first and becomes "awful"; the (0) becomes "good"; the rest has no
    # acceptable candidate and becomes [UNK].
    fake = EchoMaskedLM({3: "awful", 0: "good"})
    result = metrics.get("deletion").compute(
        linear_clf, toy_example, oracle(toy_example), F.CurveParams(removal="mlm", fraction=1.0), mlm=fake
    )
    order = result.extras["order"]
    for step, text in enumerate(result.extras["inputs"]):
        shown = text.split()
        for w in order[:step]:
            assert shown[w].lower() != toy_example.words[w].lower()
    assert result.extras["inputs"][2].split()[:4] == ["good", "movie", "was", "awful"]
    assert result.extras["inputs"][-1].split()[4] == "[UNK]"
    # Cumulative: the second word is filled in the text that already holds the first fill-in.
    second_words, second_position = fake.calls[1]
    assert second_position == 0 and second_words[3] == "awful"
    # Hand computation: [CLS] + awful (-3) + bad (-1) after step 1; + good (+1) after step 2.
    ys = [p for _, p in result.curve]
    assert ys[1] == pytest.approx(sigmoid(2 * (0.2 - 3 - 1)), abs=1e-6)
    assert ys[2] == pytest.approx(sigmoid(2 * (0.2 + 1 - 3 - 1)), abs=1e-6)


def test_mlm_fill_ins_are_shared_between_metrics(linear_clf, toy_example):
    fake = EchoMaskedLM({3: "awful", 0: "good"})
    params = {"deletion": F.CurveParams(removal="mlm"), "comprehensiveness": F.BinParams(removal="mlm")}
    F.score_many(linear_clf, toy_example, oracle(toy_example), params, mlm=fake)
    # comprehensiveness needs the top 5 words (50% bin), deletion the top 2: one chain of 5 fill-ins.
    assert [position for _, position in fake.calls] == [3, 0, 1, 2, 4]


def test_mlm_removal_with_a_real_tiny_masked_lm(linear_clf, mixed_example):
    mlm = toy_masked_lm()
    attribution = oracle(mixed_example)
    result = metrics.get("deletion").compute(
        linear_clf, mixed_example, attribution, F.CurveParams(removal="mlm", fraction=1.0), mlm=mlm
    )
    final = result.extras["inputs"][-1].split()
    assert len(final) == len(mixed_example.words)
    assert all(a.lower() != b.lower() for a, b in zip(final, mixed_example.words))
    assert mlm.forward_passes == len(mixed_example.words)
    assert result.curve[-1][1] == pytest.approx(p_positive([w for w in final if w != "[UNK]"]), abs=1e-6)


def test_pair_example_text_keeps_segments(linear_clf):
    example = Example(segments=(("a", "man", "sleeps"), ("the", "man", "is", "great")), id="pair")
    result = metrics.get("deletion").compute(linear_clf, example, oracle(example), F.CurveParams(fraction=1.0))
    assert result.extras["inputs"][0] == "a man sleeps ‖ the man is great"
    assert result.extras["inputs"][1] == "a man sleeps ‖ the man is"


def test_mean_curve_interpolates_different_lengths():
    short = ((0.0, 1.0), (1.0, 0.0))
    long = ((0.0, 1.0), (0.5, 1.0), (1.0, 0.0))
    curve = F.mean_curve([short, long], n_points=3)
    assert curve["x"] == [0.0, 0.5, 1.0]
    assert curve["mean"] == pytest.approx([1.0, 0.75, 0.0])
    assert curve["low"][1] < 0.75 < curve["high"][1]
    same = F.mean_curve([((0.01, 0.2), (0.5, 0.4)), ((0.01, 0.4), (0.5, 0.6))])
    assert same["x"] == [0.01, 0.5] and same["mean"] == pytest.approx([0.3, 0.5])


# --------------------------------------------------------------------------- the page


def test_page_runs_in_apptest(toy_bert_folder, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from core.classifier import Classifier
    from core.datasets import load_examples
    from core.loaded import load_classifier

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=180)
    at.session_state["sidebar.model_path"] = toy_bert_folder
    at.session_state["heatmaps.methods"] = []  # the home page computes nothing
    at.run()
    at.switch_page("app_pages/faithfulness.py").run()
    assert not at.exception
    at.multiselect(key="faithfulness.methods").set_value(["loo_empty", "random"]).run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 4
    table = at.dataframe[0].value
    assert list(table.index) == ["loo_empty", "random"]
    assert "deletion AUC ↓" in table.columns and "insertion AUC ↑" in table.columns
    downloads = {b.key for b in at.download_button}  # a download row under every figure and table
    for key in ("deletion", "insertion", "comprehensiveness", "sufficiency"):
        assert f"faithfulness.example.{key}.download.figure.png" in downloads
    assert "faithfulness.example.table.download.table.csv" in downloads

    # The table's values are the metrics of the same attribution computed directly.
    import explainers

    clf = Classifier(load_classifier(toy_bert_folder))
    example = load_examples("examples", "sst2")[0]
    target = int(np.argmax(clf.predict_proba([clf.encode(example).variant])[0]))
    spec = explainers.get("random")
    attribution = explainers.run_explainer(spec, clf, example, target, spec.make_params())
    direct = F.score_many(clf, example, attribution, {"deletion": None, "sufficiency": None})
    assert table.loc["random", "deletion AUC ↓"] == pytest.approx(direct["deletion"].value, abs=1e-9)
    assert table.loc["random", "sufficiency ↓"] == pytest.approx(direct["sufficiency"].value, abs=1e-9)

    # Moving the budget changes the metric, not the attribution: nothing is explained again.
    explained = []
    real = explainers.run_explainer
    monkeypatch.setattr(
        explainers, "run_explainer", lambda spec, *a, **k: explained.append(spec.key) or real(spec, *a, **k)
    )
    at.slider(key="faithfulness.budget").set_value(100).run()
    assert not at.exception
    assert explained == []
    full = F.score_many(clf, example, attribution, {"deletion": F.CurveParams(fraction=1.0)})["deletion"].value
    assert at.dataframe[0].value.loc["random", "deletion AUC ↓"] == pytest.approx(full, abs=1e-9)

    at.segmented_control(key="faithfulness.view").set_value("Dataset slice").run()
    at.number_input(key="faithfulness.slice_n").set_value(2).run()
    captions = " ".join(c.value for c in at.caption)
    said = (
        r"Estimated time for the slice: about \d+ s on this machine \(at most [\d,]+ classifier forward passes over 2 "
    )
    assert re.search(said, captions), (captions, [e.value for e in at.exception], [i.value for i in at.info])
    at.button(key="faithfulness.slice_run").click().run()
    assert not at.exception and not at.error
    summary = at.dataframe[0].value
    assert list(summary["n"]) == [2, 2]
    downloads = {b.key for b in at.download_button}
    assert {
        "faithfulness.slice.deletion.download.figure.svg",
        "faithfulness.slice.table.download.table.parquet",
    } <= downloads

    at.segmented_control(key="faithfulness.view").set_value("Removal modes compared").run()
    assert "faithfulness.removal" not in [s.key for s in at.selectbox]  # Removal A and B set it here
    at.selectbox(key="faithfulness.compare_b").set_value("mask").run()
    at.button(key="faithfulness.slice_run").click().run()
    assert not at.exception and not at.error
    compare = at.dataframe[0].value
    assert {"rank (delete)", "rank (mask)", "rank change"} <= set(compare.columns)
    assert sorted(compare["rank (delete)"]) == [1, 2]
    downloads = {b.key for b in at.download_button}
    assert {
        "faithfulness.compare.table.download.table.csv",
        "faithfulness.compare.ranks.download.figure.png",
    } <= downloads
    at.button(key="faithfulness.compare_add_im").click().run()
    assert not at.exception
    assert at.multiselect(key="faithfulness.methods").value == ["loo_empty", "random", "im"]


# --------------------------------------------------------------------------- Pham et al.'s convention


@pytest.mark.parametrize(
    ("fraction", "n", "steps"), [(0.2, 10, 2), (0.2, 12, 3), (0.2, 3, 2), (0.2, 1, 1), (0.5, 9, 4)]
)
def test_pham2022_step_rule(fraction, n, steps):
    assert F.pham2022_steps(fraction, n) == steps


def test_deletion_pham2022_by_hand(linear_clf, mixed_example):
    """12 words: L = max(2, ceil(11 * 0.2)) = 3 steps; the unperturbed input is off the curve and
    the points sit at x = 1/3, 2/3, 1 (ours: ceil(0.2 * 12) = 3 steps from x = 0)."""
    params = F.CurveParams(convention="pham2022")
    result = metrics.get("deletion").compute(linear_clf, mixed_example, oracle(mixed_example), params)
    y = [sigmoid(2 * (CLS + 1 - 1)), sigmoid(2 * (CLS - 1)), sigmoid(2 * (CLS - 1))]  # great, good, then "the"
    assert [x for x, _ in result.curve] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert [p for _, p in result.curve] == pytest.approx(y, abs=1e-6)
    assert result.value == pytest.approx((1 / 3) * ((y[0] + y[1]) / 2 + (y[1] + y[2]) / 2), abs=1e-6)
    ours = metrics.get("deletion").compute(linear_clf, mixed_example, oracle(mixed_example), F.CurveParams())
    assert ours.curve[0][0] == 0.0 and len(ours.curve) == 4
    assert result.extras["convention"] == "pham2022"


@pytest.mark.parametrize("key", ["deletion", "insertion"])
def test_a_one_word_text_has_no_pham2022_curve(linear_clf, key):
    """One word gives Pham et al.'s rule one step, whose curve is the single point x = 1: its area
    was 0, the best deletion score there is, and pulled a slice's mean down."""
    example = Example(segments=(("great",),), id="one")
    params = F.CurveParams(convention="pham2022")
    result = metrics.get(key).compute(linear_clf, example, oracle(example), params)
    assert math.isnan(result.value) and result.extras == {"skipped": "one word: no curve of two steps"}
    ours = metrics.get(key).compute(linear_clf, example, oracle(example), F.CurveParams())
    assert len(ours.curve) == 2  # ours keeps the unperturbed input at x = 0


def test_deletion_bert_pham2022_takes_the_top_two_only(linear_clf, toy_example):
    """The fake masked LM ranks the original word first, a ## piece second and a real word fourth:
    ours uses the real word, Pham et al.'s top-2 rule finds nothing usable and puts [UNK]."""
    fake = EchoMaskedLM({3: "awful"})
    ours = metrics.get("deletion").compute(
        linear_clf, toy_example, oracle(toy_example), F.CurveParams(removal="mlm"), mlm=fake
    )
    paper = metrics.get("deletion").compute(
        linear_clf, toy_example, oracle(toy_example), F.CurveParams(removal="mlm", convention="pham2022"), mlm=fake
    )
    assert ours.extras["inputs"][1].split()[3] == "awful"
    assert paper.extras["inputs"][0].split()[3] == "[UNK]"
    assert paper.curve[0][1] == pytest.approx(sigmoid(2 * (CLS - 1)), abs=1e-6)


def test_pham2022_correct_only_skips_wrong_predictions(linear_clf, toy_example):
    import dataclasses

    from engine.evaluate import score_attribution

    wrong = dataclasses.replace(toy_example, label=0)  # the toy model predicts positive
    params = F.CurveParams(convention="pham2022", correct_only=True)
    skipped = metrics.get("deletion").compute(linear_clf, wrong, oracle(wrong), params)
    assert math.isnan(skipped.value) and skipped.extras["skipped"] == "predicted wrongly"
    assert score_attribution(linear_clf, wrong, oracle(wrong), {"deletion": params}) == {}
    right = dataclasses.replace(toy_example, label=1)
    assert not math.isnan(metrics.get("deletion").compute(linear_clf, right, oracle(right), params).value)


def test_the_rank_chart_names_the_removals_as_the_pickers_do():
    """The chart's axis said "delete" and "mlm" under pickers reading "delete the words" and
    "masked-LM fill-in"."""
    from ui.faithfulness import rank_figure

    figure = rank_figure(["a", "b"], ("delete", "mlm"), ({"a": 1, "b": 2}, {"a": 2, "b": 1}))
    assert list(figure.layout.xaxis.ticktext) == ["delete the words", "masked-LM fill-in"]


@pytest.mark.parametrize(
    "key, params",
    [
        ("deletion", F.CurveParams(removal="mlm")),
        ("deletion", F.CurveParams(removal="mlm", fraction=1.0, convention="pham2022")),
        ("insertion", F.CurveParams(removal="mlm", fraction=0.5)),
        ("insertion", F.CurveParams(removal="mlm", fraction=0.3, convention="pham2022")),
        ("comprehensiveness", F.BinParams(removal="mlm")),
        ("sufficiency", F.BinParams(removal="mlm", bins="marc")),
        ("log_odds", F.LogOddsParams(removal="mlm", fraction=0.4)),
    ],
)
def test_plan_cost_counts_the_inputs_and_fill_ins_a_plan_builds(linear_clf, mixed_example, key, params):
    mlm = toy_masked_lm()
    attribution = make_attribution(mixed_example, POSITIVE, np.arange(12.0) % 5)
    plans = F.plan_attributions(linear_clf, mixed_example, {"m": attribution}, {key: params}, mlm=mlm)
    cost = F.plan_cost(key, len(mixed_example.words), params)
    assert cost.inputs == len(plans.plans["m"][key].variants)
    assert cost.fills == mlm.forward_passes
    assert F.plan_cost(key, len(mixed_example.words), dataclasses.replace(params, removal="delete")).fills == 0


def test_removals_compared_leave_a_method_without_values_empty():
    """A method that failed on every example is in the first set's summary only (the second scores
    the first's stored attributions): the comparison raised KeyError."""
    from types import SimpleNamespace

    from metrics.base import Summary
    from ui.faithfulness import compare_table

    def result(**means):
        return SimpleNamespace(
            summary={m: {"deletion": Summary.of([v] if v is not None else [])} for m, v in means.items()}
        )

    first, second = result(loo_empty=0.2, random=0.5, deeplift=None), result(loo_empty=0.4, random=0.3)
    frame, _, flips, (rank_a, rank_b) = compare_table(
        ["loo_empty", "random", "deeplift"], "deletion", ("delete", "mask"), (first, second)
    )
    assert frame.loc["loo_empty"].iloc[0] == pytest.approx(0.2) and frame.loc["random"].iloc[2] == pytest.approx(0.3)
    assert frame.loc["deeplift"].isna().all()
    assert (rank_a, rank_b) == ({"loo_empty": 1, "random": 2}, {"random": 1, "loo_empty": 2})
    assert flips == ["loo_empty: 1 → 2", "random: 2 → 1"]
