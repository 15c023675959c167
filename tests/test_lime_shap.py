"""LIME, LIME with masked-LM fill-ins and KernelSHAP on the toy linear classifier, whose only
informative words are 'great' (strongly positive), 'good', 'bad' and 'awful'."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.linear_model import Ridge

import explainers
from core.classifier import Classifier
from core.types import Example
from explainers.lime import draw_kept, fill_removed, fit_ridge, kernel_weights
from tests.test_input_marginalization import NEUTRAL, FakeMLM

POSITIVE = 1
GREAT, BAD = 3, 8  # positions in the toy example "the movie was great but the plot was bad ."


def run(key: str, clf, example, mlm=None, **overrides):
    spec = explainers.get(key)
    return explainers.run_explainer(spec, clf, example, POSITIVE, spec.make_params(overrides), mlm=mlm)


@pytest.fixture
def film_mlm() -> FakeMLM:
    return FakeMLM({}, NEUTRAL, fill_word="film")


def test_sampler_follows_lime():
    kept = draw_kept(6, 4000, np.random.default_rng(0))
    assert kept[0].all()
    removed = (~kept[1:]).sum(axis=1)
    assert removed.min() == 1 and removed.max() == 6  # 1..n words removed, all of them possible
    assert removed.mean() == pytest.approx(3.5, abs=0.1)  # uniform on 1..6
    np.testing.assert_array_equal(kept, draw_kept(6, 4000, np.random.default_rng(0)))


def test_kernel_is_lime_default():
    kept = np.array([[1, 1, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)
    # Cosine distances to all-ones: 0, 1 - sqrt(1/4) = 0.5, 1; times 100; sqrt(exp(-d^2 / 25^2)).
    expected = [1.0, math.exp(-0.5 * 50.0**2 / 625.0), math.exp(-0.5 * 100.0**2 / 625.0)]
    np.testing.assert_allclose(kernel_weights(kept, 25.0), expected, rtol=1e-12)


def test_ridge_matches_sklearn():
    rng = np.random.default_rng(1)
    features = rng.integers(0, 2, (200, 7)).astype(float)
    targets = features @ rng.normal(size=7) + rng.normal(scale=0.1, size=200)
    weights = rng.random(200)
    surrogate = fit_ridge(features, targets, weights, alpha=1.0)
    reference = Ridge(alpha=1.0).fit(features, targets, sample_weight=weights)
    np.testing.assert_allclose(surrogate.coef, reference.coef_, atol=1e-10)
    assert surrogate.intercept == pytest.approx(reference.intercept_, abs=1e-10)
    assert surrogate.r2 == pytest.approx(reference.score(features, targets, sample_weight=weights), abs=1e-10)


@pytest.mark.parametrize(
    ("key", "overrides"),
    [
        ("lime", {}),
        ("lime", {"removal": "mask"}),
        ("lime_mlm", {}),
        ("lime_mlm", {"fill": "one_at_a_time", "n_samples": 300}),
        ("kernel_shap", {}),
        ("kernel_shap", {"removal": "unk", "n_samples": 300}),
    ],
)
def test_planted_word_ranked_first(linear_clf, toy_example, film_mlm, key, overrides):
    attribution = run(key, linear_clf, toy_example, film_mlm, **overrides)
    scores = attribution.scores
    assert int(np.argmax(scores)) == GREAT and int(np.argmin(scores)) == BAD
    others = np.delete(scores, [GREAT, BAD])
    assert scores[GREAT] > 0.3 and scores[BAD] < -0.05 and np.abs(others).max() < 0.05


def test_lime_scores_and_extras(linear_clf, toy_example):
    attribution = run("lime", linear_clf, toy_example)
    extras = attribution.extras
    assert extras["original_probability"] == pytest.approx(1 / (1 + math.exp(-2 * 2.2)), abs=1e-6)
    assert extras["r2"] > 0.8
    assert extras["mean_removed_share"] == pytest.approx(0.55, abs=0.03)  # (n + 1) / 2n for n = 10
    first = extras["samples"][0]
    assert first["text"] == "the movie was great but the plot was bad ." and first["weight"] == 1.0
    kept = draw_kept(10, 1000, np.random.default_rng(0))
    assert [s["kept"] for s in extras["samples"]] == kept[:50].sum(axis=1).tolist()
    assert attribution.forward_passes < 1000  # duplicates among the 1,000 samples scored once


@pytest.mark.parametrize("key", ["lime", "lime_mlm", "kernel_shap"])
def test_same_seed_same_scores_and_batch_size_invariance(toy_linear_loaded, toy_example, film_mlm, key):
    small = run(key, Classifier(toy_linear_loaded, batch_size=1), toy_example, film_mlm, n_samples=200, seed=3)
    large = run(key, Classifier(toy_linear_loaded, batch_size=7), toy_example, film_mlm, n_samples=200, seed=3)
    np.testing.assert_allclose(small.scores, large.scores, atol=1e-6)
    other = run(key, Classifier(toy_linear_loaded, batch_size=7), toy_example, film_mlm, n_samples=200, seed=4)
    assert not np.allclose(small.scores, other.scores, atol=1e-6)


def test_kernel_shap_efficiency_and_global_rng_untouched(linear_clf, toy_example):
    torch.manual_seed(123)
    state = torch.get_rng_state()
    attribution = run("kernel_shap", linear_clf, toy_example, seed=5)
    assert torch.equal(torch.get_rng_state(), state)
    extras = attribution.extras
    # Captum weights the full and the empty coalition by 1e6: the scores sum to f(x) - f(empty).
    f_x = 1 / (1 + math.exp(-2 * 2.2))
    f_empty = 1 / (1 + math.exp(-2 * 0.2))
    assert extras["full_value"] == pytest.approx(f_x, abs=1e-6) and extras["empty_value"] == pytest.approx(
        f_empty, abs=1e-6
    )
    assert float(attribution.scores.sum()) == pytest.approx(f_x - f_empty, abs=2e-3)


def test_kernel_shap_single_word_is_exact(linear_clf):
    attribution = run("kernel_shap", linear_clf, Example(segments=(("great",),), id="one"))
    expected = 1 / (1 + math.exp(-2 * 3.2)) - 1 / (1 + math.exp(-2 * 0.2))
    assert attribution.scores[0] == pytest.approx(expected, abs=1e-6)


def test_lime_mlm_fills_are_conditioned_left_to_right(toy_example, film_mlm):
    kept = np.array([[True] * 10, [False, True, True, False] + [True] * 6], dtype=bool)
    fills = fill_removed(film_mlm, toy_example, kept, "one_at_a_time")
    assert fills[0] == {} and [f.token for f in fills[1].values()] == ["film", "film"]
    first, second = film_mlm.mask_rows
    assert first[0][:4] == ("[MASK]", "movie", "was", "[MASK]")
    assert second[0][:4] == ("film", "movie", "was", "[MASK]")  # the first fill stays in place

    film_mlm.mask_rows.clear()
    at_once = fill_removed(film_mlm, toy_example, kept, "all_at_once")
    assert list(at_once[1]) == [0, 3] and len(film_mlm.mask_rows) == 1


def test_lime_mlm_sample_texts_show_fills(linear_clf, toy_example, film_mlm):
    attribution = run("lime_mlm", linear_clf, toy_example, film_mlm, n_samples=50)
    texts = [s["text"] for s in attribution.extras["samples"]]
    assert texts[0] == "the movie was great but the plot was bad ."
    assert all(len(t.split()) == 10 for t in texts) and sum("film" in t for t in texts) >= 45
    assert attribution.extras["mlm_forward_passes"] <= 49


def brute_force_shapley(value, n: int) -> np.ndarray:
    """Shapley values by the permutation definition: the mean marginal contribution of each word
    over every order in which the words can arrive."""
    import itertools

    phi = np.zeros(n)
    orders = list(itertools.permutations(range(n)))
    for order in orders:
        present: set[int] = set()
        for word in order:
            before = value(present)
            present.add(word)
            phi[word] += value(present) - before
    return phi / len(orders)


def test_kernel_shap_is_exact_when_every_coalition_fits(linear_clf, toy_bert_loaded):
    """2^6 - 2 = 62 coalitions fit in a budget of 100: all 64 inputs are scored and the scores are
    the Shapley values (checked by permutations, to 1e-6) that sum to f(x) - f(empty)."""
    from explainers.loo import removal_variant

    words = ("the", "plot", "was", "great", "but", "bad")
    example = Example(segments=(words,), id="six")
    for clf in (linear_clf, Classifier(toy_bert_loaded)):
        attribution = run("kernel_shap", clf, example, n_samples=100)
        encoded = clf.encode(example)

        def value(present: set[int], clf=clf, encoded=encoded) -> float:
            absent = [i for i in range(len(words)) if i not in present]
            return float(clf.predict_proba([removal_variant(clf, encoded, absent, "delete")])[0, 1])

        assert attribution.extras["exact"] is True
        np.testing.assert_allclose(attribution.scores, brute_force_shapley(value, len(words)), atol=1e-6)
        # The scores are stored as float32 (core.types.Attribution): six of them sum to within about 1e-7.
        assert attribution.scores.sum() == pytest.approx(value(set(range(6))) - value(set()), abs=2e-7)
        assert attribution.forward_passes <= 64
    sampled = run("kernel_shap", linear_clf, example, n_samples=50)
    assert sampled.extras["exact"] is False


def test_lime_explains_a_pairs_texts_in_separate_runs_on_request(linear_clf):
    """Pham et al. 2022's code explains a premise and a hypothesis in their own LIME runs, the
    other text held whole; ``pairs="separate"`` does so: each text's scores are the ridge fit of
    its own run's samples, weighted by the kernel over that text's words only."""
    from core.perturb import removal_variant
    from explainers.lime import draw_runs

    pair = Example(segments=(("the", "movie", "was", "great"), ("the", "plot", "was", "bad")), id="pair/0")
    separate = run("lime", linear_clf, pair, n_samples=300, pairs="separate")
    runs = draw_runs(pair, 300, "separate", np.random.default_rng(0))
    assert [(words.start, words.stop) for words, _ in runs] == [(0, 4), (4, 8)]
    assert runs[0][1][:, 4:].all() and runs[1][1][:, :4].all()  # the other text kept whole
    encoded = linear_clf.encode(pair)
    expected = []
    for words, kept in runs:
        variants = [removal_variant(linear_clf, encoded, np.flatnonzero(~row).tolist(), "delete") for row in kept]
        values = linear_clf.predict_proba(variants)[:, POSITIVE]
        fitted = fit_ridge(kept[:, words].astype(float), values, kernel_weights(kept[:, words], 25.0), 1.0)
        expected.append(fitted.coef)
    np.testing.assert_allclose(separate.scores, np.concatenate(expected), atol=1e-5)
    assert int(np.argmax(separate.scores)) == 3 and int(np.argmin(separate.scores)) == 7
    assert all(s["text"].endswith("the plot was bad") for s in separate.extras["samples"])  # run 1's rows
    assert len(separate.extras["intercept"]) == 2
    joint = run("lime", linear_clf, pair, n_samples=300)
    assert not np.allclose(joint.scores, separate.scores)
    assert separate.forward_passes <= explainers.get("lime").passes(8, explainers.get("lime").make_params(
        {"n_samples": 300, "pairs": "separate"})).classifier == 600  # fmt: skip
    single = Example(segments=(("the", "movie", "was", "great"),), id="one/0")
    np.testing.assert_array_equal(run("lime", linear_clf, single, pairs="separate").scores,
                                  run("lime", linear_clf, single).scores)  # fmt: skip
