"""Attacks on explanations (experiments/attacks/), checked on the toy models with hand answers.

The linear toy with gradient x input on the logit gives ``a_t = x_t . (1, -1, 0, 0)`` whatever the
context, so the attacks' outcomes can be worked out by hand: "great" (3, 0, 0, 0) scores 3, "bad"
(0, 1, 0, 0) scores -1, every other word 0; the logit margin of "positive" is
``z = sum_t x_t . (2, -2, 0, 0) = 0.4 + 6 - 2 = 4.4`` for the toy example (p = 0.98787).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

import explainers
from core.classifier import Classifier
from core.masked_lm import Fill
from core.types import Example
from experiments.attacks import (
    embedding_attack,
    k_for,
    make_params,
    rank_change,
    substitution,
    substitution_attack,
    summarize,
    topk_sum_change,
)
from explainers.word_scores import word_scores
from tests.toy import VOCAB, WEIGHT, toy_linear, toy_tokenizer

LOGIT = {"output": "logit"}
GRADIENT_METHODS = [key for key, spec in explainers.REGISTRY.items() if spec.gradient]
P_ORIGINAL = 1 / (1 + np.exp(-4.4))


class FakeMLM:
    """Returns the same fill-ins for every masked word, in a fixed order."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.tokenizer = toy_tokenizer()
        self.forward_passes = 0

    def fill_words(self, segments, positions, k=10, batch_size=64):
        self.forward_passes += len(positions)
        return [([Fill(w, VOCAB[w], 0.1) for w in self.words[:k]], None) for _ in positions]

    def token_text(self, token: str) -> str:
        return token


def _attack(clf, example, objective: str, **overrides):
    params = make_params("embedding", "paper", {"objective": objective, "optimizer": "adam", "steps": 100, **overrides})
    return embedding_attack(clf, example, "grad_x_input", params, explainer_params=LOGIT)


# ------------------------------------------------------------------ measures


def test_rank_change_matches_the_thesis_worked_example():
    # Top-3 [12, 3, 7] against [3, 15, 7]: the first two positions differ -> 2/3.
    original, attacked = np.zeros(16), np.zeros(16)
    original[[12, 3, 7]] = [3.0, 2.0, 1.0]
    attacked[[3, 15, 7]] = [3.0, 2.0, 1.0]
    assert rank_change(original, attacked, 3) == pytest.approx(2 / 3)
    assert rank_change(original, original, 3) == 0.0
    # Top-k Sum Change: original mass at [12, 3, 7] is 6, the attacked one there 0 + 3 + 1.
    assert topk_sum_change(original, attacked, 3) == pytest.approx(6.0 - 4.0)


@pytest.mark.parametrize(("n_words", "k"), [(1, 1), (6, 1), (7, 1), (10, 1), (20, 3), (40, 6), (100, 15)])
def test_k_is_fifteen_percent_rounded_down_at_least_one(n_words, k):
    assert k_for(n_words, 0.15) == k


# ------------------------------------------------------------------ embedding attack


@pytest.mark.parametrize("method", GRADIENT_METHODS)
def test_differentiable_explanation_equals_the_registry_explainer(bert_clf, toy_example, method):
    spec = explainers.get(method)
    params = spec.make_params({"n_steps": 16} if method == "integrated_gradients" else None)
    target = 1
    registry = explainers.run_explainer(spec, bert_clf, toy_example, target, params)
    encoded = bert_clf.encode(toy_example)
    embeds = bert_clf.input_embeddings(torch.tensor([encoded.input_ids])).detach()
    scores, probs = word_scores(bert_clf, encoded, embeds, target, params)
    np.testing.assert_allclose(scores.numpy(), registry.scores, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(probs.numpy(), bert_clf.predict_proba([encoded.variant])[0], atol=1e-5)


def test_constrained_objective_keeps_the_probability_the_unconstrained_one_gives_it_away(linear_clf, toy_example):
    # Only "great"'s own perturbation lowers its score, and lowering it lowers the margin z.
    # Unconstrained: the distance has no slope on the other words, so "great" moves until the
    # class would flip: z -> 0+, p -> 0.5, and "great" still scores (z + 2 - 0.4) / 2 = 0.8,
    # above every other word (rank change 0).
    loose = _attack(linear_clf, toy_example, "unconstrained")
    assert loose.attacked_predicted == 1
    assert loose.attacked_probabilities[1] == pytest.approx(0.5, abs=0.02)
    assert loose.probability_change == pytest.approx(P_ORIGINAL - 0.5, abs=0.02)
    assert loose.probability_change > 0.4
    assert loose.attacked.scores[3] == pytest.approx(0.8, abs=0.1)
    assert loose.rank_change == 0.0 and not loose.success
    # Constrained: the penalty pulls the other words up to keep p, so "great" can go to the bound
    # epsilon = 2 on both coordinates: (3 - 2) - (0 + 2) = -1, below the zeros -> rank change 1.
    tight = _attack(linear_clf, toy_example, "constrained")
    assert abs(tight.probability_change) < 0.05
    assert tight.attacked.scores[3] == pytest.approx(-1.0, abs=1e-4)
    assert tight.topk_sum_change == pytest.approx(4.0, abs=1e-4)
    assert tight.rank_change == 1.0 and tight.success
    assert tight.changed[3] and tight.attacked.words[3] == "awful"  # (1, 2, 0, 0) is nearest to "awful" (0, 3, 0, 0)
    assert np.abs(tight.delta).max() <= 2.0 + 1e-6


def test_reported_measures_match_a_recomputation_from_delta(linear_clf, toy_example):
    result = _attack(linear_clf, toy_example, "constrained")
    encoded = linear_clf.encode(toy_example)
    embeds = linear_clf.input_embeddings(torch.tensor([encoded.input_ids]))[0].double().numpy() + result.delta
    weight = np.array(WEIGHT)
    token_scores = embeds @ (weight[:, 1])  # logit gradient x input of class 1, per token
    words = np.array([token_scores[encoded.word_positions(w)].sum() for w in range(encoded.n_words)])
    np.testing.assert_allclose(result.attacked.scores, words, atol=1e-5)
    margin = embeds.sum(0) @ weight  # logits
    probability = np.exp(margin[1]) / np.exp(margin).sum()
    assert result.attacked_probabilities[1] == pytest.approx(probability, abs=1e-5)
    assert result.probability_change == pytest.approx(P_ORIGINAL - probability, abs=1e-5)
    top_before = np.argsort(-result.original.scores, kind="stable")[: result.k]
    top_after = np.argsort(-words, kind="stable")[: result.k]
    assert result.rank_change == pytest.approx(np.mean(top_before != top_after))
    assert result.to_json()["rank_change"] == result.rank_change
    np.testing.assert_array_equal(np.array(result.to_json()["delta"]), result.delta)
    # Special tokens are never perturbed.
    specials = [t for t, w in enumerate(encoded.word_ids) if w is None]
    assert not result.delta[specials].any()


def test_embedding_attack_is_repeatable_and_leaves_the_model_alone(bert_clf, toy_example):
    before = {k: v.clone() for k, v in bert_clf.model.state_dict().items()}
    params = make_params("embedding", "quick", {"steps": 4, "optimizer": "adam"})
    first = embedding_attack(bert_clf, toy_example, "integrated_gradients", params)
    second = embedding_attack(bert_clf, toy_example, "integrated_gradients", params)
    np.testing.assert_array_equal(first.delta, second.delta)
    np.testing.assert_array_equal(first.attacked.scores, second.attacked.scores)
    assert first.steps == 4 and first.forward_passes > 4 * 8
    for key, value in bert_clf.model.state_dict().items():
        assert torch.equal(value, before[key]), key
    assert all(p.grad is None and not p.requires_grad for p in bert_clf.model.parameters())


def test_embedding_attack_rejects_a_non_differentiable_method(linear_clf, toy_example):
    with pytest.raises(ValueError, match="loo_empty"):
        embedding_attack(linear_clf, toy_example, "loo_empty")


def test_screened_retries_give_the_try_by_try_ascent(linear_clf, toy_example, monkeypatch):
    """Unconstrained, "great" is pushed to the class boundary, where step after step is rejected
    and retried at half the size. Screening the retries in one forward pass (no explanation, no
    double back-propagation) must end where trying them one by one does."""
    from experiments.attacks import embedding

    screened = _attack(linear_clf, toy_example, "unconstrained")
    monkeypatch.setattr(embedding, "_SCREENED", 0)
    one_by_one = _attack(linear_clf, toy_example, "unconstrained")
    np.testing.assert_allclose(screened.delta, one_by_one.delta, atol=1e-6)
    np.testing.assert_allclose(screened.attacked.scores, one_by_one.attacked.scores, atol=1e-6)
    assert screened.steps == one_by_one.steps
    np.testing.assert_allclose(screened.trace["probability"], one_by_one.trace["probability"], atol=1e-6)
    distances = np.array(screened.trace["distance"])
    skipped = np.isnan(distances)
    assert skipped.any()  # some retries were screened out without being explained
    np.testing.assert_allclose(distances[~skipped], np.array(one_by_one.trace["distance"])[~skipped], atol=1e-6)
    # grad x input: one backward pass per explained try, none for a screened one
    assert screened.backward_passes == one_by_one.backward_passes - int(skipped.sum())


# ------------------------------------------------------------------ substitution attack


def _substitute(clf, example, words, method="grad_x_input", explainer_params=LOGIT, **overrides):
    # The search tests take every fill-in; the similarity check has its own test.
    params = make_params("substitution", overrides={"min_similarity": -1.0, **overrides})
    return substitution_attack(clf, example, method, FakeMLM(words), params, explainer_params=explainer_params)


def test_substitution_never_flips_the_class_nor_touches_the_top_words(linear_clf, toy_example):
    # "awful" anywhere flips the class (z = 4.4 - 6 < 0) and is never taken. Another "great"
    # before position 3 ties with it and wins the stable ordering, so the greedy search puts
    # "great" at positions 0, 1, 2 (z = 22.4, p change 0.012 <= 0.05): the original top word
    # drops to rank 3 while its score stays 3.
    result = _substitute(linear_clf, toy_example, ["awful", "good", "film", "great"], budget=3)
    assert result.substitutions == ((0, "the", "great"), (1, "movie", "great"), (2, "was", "great"))
    assert result.attacked_predicted == result.target == 1
    assert result.changed == (True, True, True) + (False,) * 7
    assert result.rank_change == 1.0 and result.success
    assert result.topk_sum_change == pytest.approx(0.0)
    assert result.probability_change == pytest.approx(P_ORIGINAL - 1 / (1 + np.exp(-22.4)), abs=1e-6)
    assert all(index not in result.top_k for index, _, _ in result.substitutions)


def test_fill_ins_must_look_like_words_and_be_close_enough_to_the_original(linear_clf):
    # Toy embeddings: good = (1,0,0,0), great = (3,0,0,0), awful = (0,3,0,0), film and "," zero:
    # cosine to "good" is 1 for great and 0 for awful and film; "," is punctuation for a word.
    example = Example(segments=(("it", "was", "good", "."),), id="toy/fills")
    fills = FakeMLM(["great", "awful", "film", ",", "good"])

    def candidates(min_similarity: float) -> dict[int, list[str]]:
        params = make_params("substitution", overrides={"min_similarity": min_similarity})
        return substitution._candidates(linear_clf, fills, example, [2, 3], params)

    assert candidates(-1.0) == {2: ["great", "awful", "film"], 3: ["great", "awful", "film", ",", "good"]}
    assert candidates(0.5)[2] == ["great"]
    assert candidates(0.0)[2] == ["great", "awful", "film"]
    assert make_params("substitution").min_similarity == 0.2
    # A word the tokenizer drops (here a no-break space; BERT's also drops control characters)
    # has no embedding to compare with.
    dropped = Example(segments=(("it", "was", "\xa0"),), id="toy/dropped")
    params = make_params("substitution", overrides={"min_similarity": 0.5})
    assert linear_clf.word_tokens("\xa0") == ()
    assert substitution._candidates(linear_clf, fills, dropped, [2], params) == {
        2: ["great", "awful", "film", ",", "good"]
    }


def test_a_round_explains_the_drawn_candidates_only(linear_clf, toy_example, monkeypatch):
    """``explained_per_round`` (the quick preset's 12) explains a seeded random draw of a round's
    kept candidates: at most that many per round, the same draw for the same seed."""
    explained: list[int] = []
    real = explainers.run_explainers

    def counting(spec, clf, examples, *args, **kwargs):
        explained.append(len(examples))
        return real(spec, clf, examples, *args, **kwargs)

    monkeypatch.setattr(substitution.explainers, "run_explainers", counting)
    words = ["awful", "good", "film", "great"]
    every = _substitute(linear_clf, toy_example, words, budget=2)
    rounds_every, explained[:] = list(explained), []
    assert max(rounds_every) > 4  # a round of the full search explains more than the draw below
    drawn = _substitute(linear_clf, toy_example, words, budget=2, explained_per_round=4)
    assert explained and all(n <= 4 for n in explained)  # one call per round
    first, explained[:] = list(explained), []
    again = _substitute(linear_clf, toy_example, words, budget=2, explained_per_round=4)
    assert explained == first and again.substitutions == drawn.substitutions
    assert make_params("substitution", "quick").explained_per_round == 12
    assert every.forward_passes > drawn.forward_passes


def test_substitution_respects_the_probability_tolerance(linear_clf, toy_example):
    # "good" moves p by 0.0105 or more: over a 0.005 tolerance. "film" keeps p but changes nothing
    # in the explanation, so the greedy search stops without a substitution.
    result = _substitute(linear_clf, toy_example, ["good", "film"], tolerance=0.005)
    assert result.substitutions == ()
    assert result.attacked_probabilities == result.original_probabilities
    assert result.rank_change == 0.0 and not result.success


@pytest.mark.parametrize("method", ["loo_unk", "saliency"])
def test_greedy_picks_the_best_single_substitution(bert_clf, toy_example, method):
    words = ["good", "bad", "film", "fun"]
    result = _substitute(bert_clf, toy_example, words, method=method, explainer_params=None, budget=1, tolerance=0.2)
    spec = explainers.get(method)
    target, top = result.target, np.array(result.top_k)
    p0 = result.original_probabilities[target]
    best = substitution._demotion(result.original.scores, top)
    for position in range(len(toy_example.words)):
        for word in words:
            if position in top or word == toy_example.words[position]:
                continue
            attacked = substitution._substituted(toy_example, [(position, word)])
            probs = bert_clf.predict_proba([bert_clf.encode(attacked).variant])[0]
            if int(np.argmax(probs)) == target and abs(probs[target] - p0) <= 0.2:
                scores = explainers.run_explainer(spec, bert_clf, attacked, target).scores
                best = max(best, substitution._demotion(scores, top))
    # the attack scores its candidates in other batches than this one-by-one search: equal up to
    # float32 rounding, which leave-one-out's differences of near-equal probabilities magnify
    assert substitution._demotion(result.attacked.scores, top) == pytest.approx(best, abs=1e-3)
    if result.substitutions:
        # The reported attacked explanation is the registry's explanation of the attacked text.
        ((position, _, word),) = result.substitutions
        attacked = substitution._substituted(toy_example, [(position, word)])
        recomputed = explainers.run_explainer(spec, bert_clf, attacked, target).scores
        peak = float(np.abs(recomputed).max())  # leave-one-out's scores here are about 1e-6
        np.testing.assert_allclose(result.attacked.scores, recomputed, rtol=1e-3, atol=1e-3 * peak)
        assert result.rank_change == pytest.approx(rank_change(result.original.scores, recomputed, result.k))


def test_substitution_explains_a_round_of_candidates_in_one_batch(bert_clf, toy_example):
    """The round's candidates are scored in one scorer call and the ones kept explained together
    (one padded forward and backward pass for saliency), not one candidate at a time."""
    calls: list[int] = []
    handle = bert_clf.logits_model.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        result = _substitute(
            bert_clf, toy_example, ["good", "bad", "film", "fun"], method="saliency", explainer_params=None,
            budget=1, tolerance=0.2,
        )  # fmt: skip
    finally:
        handle.remove()
    # the prediction, the original explanation, the candidates' scores, the kept candidates' explanations
    assert len(calls) == 4
    assert result.backward_passes > 2  # the original and more than one candidate explained in that one call


def test_beam_search_does_at_least_as_well_as_greedy(bert_clf, toy_example):
    words = ["good", "bad", "film", "fun", "boring"]
    greedy = _substitute(
        bert_clf, toy_example, words, method="grad_x_input", explainer_params=None, budget=2, tolerance=0.2
    )
    beam = _substitute(
        bert_clf,
        toy_example,
        words,
        method="grad_x_input",
        explainer_params=None,
        budget=2,
        tolerance=0.2,
        search="beam",
    )
    top = np.array(greedy.top_k)
    assert substitution._demotion(beam.attacked.scores, top) >= substitution._demotion(greedy.attacked.scores, top)
    for result in (greedy, beam):
        assert result.attacked_predicted == result.target
        assert abs(result.probability_change) <= 0.2


# ------------------------------------------------------------------ summary and command line


def test_summary_ranks_the_more_fragile_method_first(linear_clf, toy_example):
    tight = _attack(linear_clf, toy_example, "constrained")
    loose = _attack(linear_clf, toy_example, "unconstrained")
    summary = summarize([{"a": loose, "b": tight}, {"a": loose, "b": tight}])
    assert summary["b"]["fragility_rank"] == 1 and summary["a"]["fragility_rank"] == 2
    assert summary["b"]["rank_change"]["mean"] == 1.0 and summary["b"]["success_rate"] == 1.0
    assert summary["a"]["abs_probability_change"] == pytest.approx(abs(loose.probability_change))


def test_attack_command_prints_the_measures(monkeypatch, capsys):
    from cli import main as cli

    monkeypatch.setattr("core.loaded.load_classifier", lambda name: toy_linear())
    code = cli.main(
        [
            "attack",
            "--model",
            "toy",
            "--text",
            "the movie was great but the plot was bad .",
            "--methods",
            "grad_x_input",
            "--objective",
            "constrained",
            "--param",
            "attack.optimizer=adam",
            "--param",
            "attack.steps=100",
            "--param",
            "grad_x_input.output=logit",
            "--json",
        ]
    )
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    result = payload["examples"][0]["results"]["grad_x_input"]
    assert result["rank_change"] == 1.0 and result["success"] is True
    assert abs(result["probability_change"]) < 0.05
    assert result["original_words"][3] == "great" and result["attacked_words"][3] == "awful"
    assert result["original_scores"][3] == pytest.approx(3.0) and result["attacked_scores"][3] == pytest.approx(
        -1.0, abs=1e-4
    )
    assert payload["summary"]["grad_x_input"]["fragility_rank"] == 1


def test_attack_command_rejects_a_method_the_embedding_attack_cannot_take(monkeypatch, capsys):
    from cli import main as cli

    monkeypatch.setattr("core.loaded.load_classifier", lambda name: toy_linear())
    assert cli.main(["attack", "--model", "toy", "--text", "a good film", "--methods", "random", "--json"]) == 2
    assert "not differentiable" in capsys.readouterr().err


def test_pair_examples_keep_their_segments(linear_clf):
    example = Example(segments=(("the", "film", "was", "great"), ("it", "is", "bad")), id="pair")
    result = _substitute(linear_clf, example, ["film", "good"], budget=1)
    assert [len(s) for s in substitution._substituted(example, [(5, "good")]).segments] == [4, 3]
    assert result.attacked_predicted == result.target


def test_classifier_view_counts_are_its_own(toy_linear_loaded, toy_example):
    clf = Classifier(toy_linear_loaded)
    result = _attack(clf, toy_example, "unconstrained")
    assert clf.forward_passes == result.forward_passes


# ------------------------------------------------------------------ page


@pytest.fixture(scope="module")
def toy_folders(tmp_path_factory) -> tuple[str, str]:
    from tests.toy import save_toy_masked_lm, toy_bert

    root = tmp_path_factory.mktemp("adversarial")
    loaded = toy_bert()
    loaded.model.save_pretrained(root / "clf")
    loaded.tokenizer.save_pretrained(root / "clf")
    save_toy_masked_lm(root / "mlm")
    return str(root / "clf"), str(root / "mlm")


def measures_table(app):
    """The per-method measures table (AppTest does not expose dataframe keys): found by its columns."""
    return next(d.value for d in app.dataframe if {"p before", "p after"} <= set(d.value.columns)).set_index("method")


@pytest.mark.slow  # AppTest imports the whole app
def test_page_shows_both_texts_and_heatmaps_for_both_attacks(toy_folders):
    from streamlit.testing.v1 import AppTest

    from ui.state import Selection

    model, mlm = toy_folders
    words = ("the", "movie", "was", "<script>", "great", "but", "the", "plot", "was", "bad")
    app = AppTest.from_file("../app_pages/adversarial.py", default_timeout=300)
    app.session_state["selection"] = Selection(
        model=model, label_names=("negative", "positive"), example=Example(segments=(words,), id="page"), mlm=mlm
    )
    app.run()
    assert not app.exception
    app.number_input(key="adversarial.quick.param.attack_embedding.steps").set_value(3).run()
    estimated = re.compile(r"Estimated time: about \d+ (s|min \d+ s) on this machine, less if it stops early\.")
    assert any(estimated.search(c.value) for c in app.caption)
    app.button(key="adversarial.run").click().run()
    assert not app.exception
    measures = measures_table(app)
    assert list(measures.index) == list(GRADIENT_METHODS)
    assert (measures["steps"] <= 3).all()
    downloads = {b.key for b in app.download_button}
    assert {"adversarial.measures.download.table.csv", "adversarial.trace.download.figure.png"} <= downloads
    bodies = [h.proto.body for h in app.get("html")]
    heatmaps = [b for b in bodies if 'class="hm-row"' in b]
    assert len(heatmaps) == 2 * 3  # original and attacked, per method
    assert sum('data-method="attacked"' in b for b in heatmaps) == 3
    texts = [b for b in bodies if 'class="adv-text"' in b]
    # Each original shows the markup escaped; the attack may have replaced it in the attacked text.
    assert len(texts) == 6 and all("<script>" not in b for b in texts)
    assert sum("&lt;script&gt;" in b for b in texts) >= 3

    app.radio(key="adversarial.attack").set_value("substitution").run()
    app.multiselect(key="adversarial.methods").set_value(["loo_unk", "grad_x_input"]).run()
    app.number_input(key="adversarial.quick.param.attack_substitution.budget").set_value(1).run()
    app.number_input(key="adversarial.quick.param.attack_substitution.n_candidates").set_value(3).run()
    assert any(estimated.search(c.value) for c in app.caption)
    app.button(key="adversarial.run").click().run()
    assert not app.exception
    measures = measures_table(app)
    assert list(measures.index) == ["loo_unk", "grad_x_input"]
    assert (measures["class after"] == measures["class"]).all()
    assert ((measures["p after"] - measures["p before"]).abs() <= 0.05 + 1e-9).all()


@pytest.mark.slow  # AppTest imports the whole app
def test_page_dataset_mode_ranks_methods_by_mean_rank_change(toy_folders):
    from streamlit.testing.v1 import AppTest

    from core.datasets import load_bundled_examples
    from ui.state import Selection

    model, mlm = toy_folders
    first = load_bundled_examples(split="sst2")[0]
    app = AppTest.from_file("../app_pages/adversarial.py", default_timeout=300)
    app.session_state["selection"] = Selection(
        model=model, label_names=("negative", "positive"), dataset="examples", split="sst2", index=0,
        example=first, mlm=mlm,
    )  # fmt: skip
    app.run()
    app.radio(key="adversarial.scope").set_value("dataset slice").run()
    app.number_input(key="adversarial.n_examples").set_value(3).run()
    app.multiselect(key="adversarial.methods").set_value(["saliency", "grad_x_input"]).run()
    app.number_input(key="adversarial.quick.param.attack_embedding.steps").set_value(3).run()
    app.button(key="adversarial.run").click().run()
    assert not app.exception and not app.error
    summary = next(d.value for d in app.dataframe if "fragility rank" in d.value.columns).set_index("method")
    assert sorted(summary["fragility rank"]) == [1, 2] and (summary["n"] == 3).all()
    means = summary["Rank Change"]
    assert summary["fragility rank"].idxmin() == means.idxmax()
    assert means.between(0.0, 1.0).all()
    downloads = {b.key for b in app.download_button}
    assert {"adversarial.summary.download.table.csv", "adversarial.bars.download.figure.svg"} <= downloads
    per_example = measures_table(app)  # one row per example and method
    assert len(per_example) == 6 and sorted(set(per_example["example"])) == [0, 1, 2]
    for method in ("saliency", "grad_x_input"):
        assert means[method] == pytest.approx(per_example.loc[method, "Rank Change"].mean())


def test_attack_command_refuses_a_seed_for_the_deterministic_embedding_attack(monkeypatch, capsys):
    from cli import main as cli

    monkeypatch.setattr("core.loaded.load_classifier", lambda name: toy_linear())
    argv = ["attack", "--model", "toy", "--text", "a good film", "--methods", "saliency", "--seed", "3", "--json"]
    assert cli.main(argv) == 2
    assert "deterministic" in capsys.readouterr().err


# ------------------------------------------------------------------ progress


def test_progress_is_shared_by_each_methods_cost(linear_clf, toy_example):
    """Integrated gradients differentiates ``ig_n_steps`` path points per ascent step in one batched
    pass, saliency one: at 4 points IG weighs 1 + 3 x 0.4 = 2.2 one-row passes, so saliency's share
    of the bar is 1 / 3.2 and an ETA read off the bar holds."""
    from experiments.attacks import attack_example

    params = make_params("embedding", "quick", {"steps": 5, "ig_n_steps": 4})
    seen: list[tuple[float, str]] = []
    attack_example(
        linear_clf, toy_example, ["saliency", "integrated_gradients"], "embedding", params,
        progress=lambda fraction, message: seen.append((fraction, message)),
    )  # fmt: skip
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    saliency = [f for f, m in seen if m.startswith("saliency")]
    integrated = [f for f, m in seen if m.startswith("integrated_gradients")]
    share = 1 / 3.2
    assert max(saliency) <= share + 1e-9
    assert share <= min(integrated) <= share + (1 - share) / 5 + 1e-9  # after its first of 5 steps


def test_cost_weights_follow_each_methods_passes():
    from experiments.attacks import cost_weights

    params = make_params("substitution", "quick")
    lime = explainers.get("lime")
    lime_passes = lime.passes(7, lime.make_params({"n_samples": 300}))
    weights = cost_weights(
        "substitution",
        ["saliency", "loo_empty", "integrated_gradients", "lime"],
        params,
        {"integrated_gradients": {"n_steps": 20}, "lime": {"n_samples": 300}},
        7,
    )
    # forward + backward passes: saliency 1 + 1, leave-one-out 7 + 1, IG 20 path points + 2 ends and 20 backward
    assert weights == [2.0, 8.0, 42.0, float(lime_passes.classifier)]
    embedding = make_params("embedding", "quick", {"ig_n_steps": 6})
    # one batched pass of 6 path points: about 1 + 5 x 0.4 one-row passes (was 6, four times its time)
    assert cost_weights("embedding", ["grad_x_input", "integrated_gradients"], embedding, None, 7) == [1.0, 3.0]


def test_the_measure_tables_show_rank_change_as_the_method_lines_do():
    """The table showed Rank Change 0.6667 under a line reading 67%, and 0.485 beside +0.4850."""
    from ui.adversarial import measure_columns

    formats = {name: column["type_config"]["format"] for name, column in measure_columns().items()}
    assert formats["Rank Change"] == "percent" and formats["success rate"] == "percent"
    assert formats["Probability Change"] == "%+.4f" and formats["Spearman ρ"] == "%+.2f"
    assert "Score Change" in measure_columns("regression")


def test_a_change_that_rounds_to_zero_is_shown_without_a_minus_sign():
    """A probability change of -2e-6 read "-0.0000" in the measure table and the method's line; it
    now reads +0.0000, while a change of -0.00006 still reads -0.0001 and the download keeps the
    exact numbers."""
    import pandas as pd

    from core.numbers import fixed
    from ui.adversarial import shown_measures

    assert fixed(-2e-6, 4, signed=True) == "+0.0000" and fixed(-6e-5, 4, signed=True) == "-0.0001"
    assert fixed(0.01234, 4, signed=True) == "+0.0123" and fixed(-0.04, 1) == "0.0" and fixed(-0.06, 1) == "-0.1"
    frame = pd.DataFrame({"method": ["a", "b", "c"], "Probability Change": [-2e-6, -6e-5, 0.25]})
    shown = shown_measures(frame)
    assert [f"{v:+.4f}" for v in shown["Probability Change"]] == ["+0.0000", "-0.0001", "+0.2500"]
    assert frame["Probability Change"].tolist() == [-2e-6, -6e-5, 0.25]
    regression = frame.rename(columns={"Probability Change": "Score Change"})
    assert f"{shown_measures(regression, 'regression')['Score Change'][0]:+.4f}" == "+0.0000"


def test_the_attacked_line_names_the_label_its_probability_belongs_to():
    """A multi-label attack read "Attacked — Homosexual p = 0.002" where 0.002 was the attacked
    label's (Jewish) probability: the number now goes with its own label, and the label ranked
    first after the attack is named beside it."""
    from types import SimpleNamespace

    from ui.adversarial import attacked_line

    names = ("African", "Jewish", "Homosexual")
    result = SimpleNamespace(target=1, attacked_probabilities=(0.1, 0.002, 0.6), attacked_predicted=2)
    line = attacked_line(result, names.__getitem__, "multi_label")
    assert line == "**Attacked** — Jewish p = 0.002 (the most probable label is now Homosexual)"
    flipped = attacked_line(SimpleNamespace(target=0, attacked_probabilities=(0.3, 0.7), attacked_predicted=1),
                            ("negative", "positive").__getitem__)  # fmt: skip
    assert flipped == "**Attacked** — negative p = 0.300 (the predicted class is now positive)"
    kept = SimpleNamespace(target=0, attacked_probabilities=(0.8, 0.2), attacked_predicted=0)
    assert attacked_line(kept, ("negative", "positive").__getitem__) == "**Attacked** — negative p = 0.800"
    score = SimpleNamespace(target=0, attacked_probabilities=(2.5,), attacked_predicted=0)
    assert attacked_line(score, ("toxicity",).__getitem__, "regression") == "**Attacked** — toxicity f = 2.500"


def test_a_kept_step_after_a_rejection_restores_the_step_size():
    """The halved size of a rejected step was never restored, so eleven rejections in the whole
    ascent (not in a row) ended it: with one step in ten rejected, a 500-step attack stopped at
    step 109 with its learning rate divided by 2,048."""
    from types import SimpleNamespace

    from experiments.attacks.embedding import EmbeddingAttackParams, _ascend

    weight = torch.tensor([1.0, -2.0, 0.5])
    calls = []

    def explain(delta, create_graph):
        return (delta[0] * weight).sum(-1), torch.tensor([0.3, 0.7])

    def keeps_prediction(probs) -> bool:
        calls.append(1)
        return len(calls) % 10 != 0  # one evaluated step in ten loses the class

    params = EmbeddingAttackParams(steps=300, stop_delta=0.0)
    _, trace, steps = _ascend(
        explain, torch.zeros(1, 4, 3), SimpleNamespace(scored_positions=[1, 2]), 1, torch.tensor([1]), 0.7,
        params, None, keeps_prediction, lambda candidates: [(True, 0.7)] * len(candidates),
    )  # fmt: skip
    assert steps == 300 and len(trace["objective"]) == 301
