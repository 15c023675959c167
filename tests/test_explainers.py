"""Known answers on the toy classifier, and one contract test over the whole explainer registry."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import explainers
from core.classifier import Classifier
from core.masked_lm import MaskedLM
from core.types import Example
from tests.toy import PLANTED, WEIGHT, toy_masked_lm

EXAMPLE = Example(segments=(("the", "movie", "was", "great", "but", "the", "plot", "was", "bad", "."),), id="toy/0")


def toy_probabilities(words: list[str]) -> np.ndarray:
    """The toy linear model by hand: logits = ([CLS] + sum of planted rows) @ W, then softmax."""
    pooled = np.array([0.2, 0.0, 0.0, 0.0]) + sum((np.array(PLANTED[w]) for w in words if w in PLANTED), np.zeros(4))
    logits = pooled @ np.array(WEIGHT)
    e = np.exp(logits - logits.max())
    return e / e.sum()


def log2_odds(p: float) -> float:
    return float(np.log2(p / (1 - p)))


@pytest.mark.parametrize("key", ["loo_empty", "loo_unk", "loo_pad", "loo_mask", "loo_zero"])
@pytest.mark.parametrize("output", ["log_odds", "probability"])
def test_leave_one_out_equals_hand_computed_difference(linear_clf: Classifier, key: str, output: str) -> None:
    spec = explainers.get(key)
    result = explainers.run_explainer(spec, linear_clf, EXAMPLE, 1, spec.make_params({"output": output}))
    words = list(EXAMPLE.words)
    original = toy_probabilities(words)[1]
    for i in range(len(words)):
        removed = toy_probabilities(words[:i] + words[i + 1 :])[1]
        expected = log2_odds(original) - log2_odds(removed) if output == "log_odds" else original - removed
        assert result.scores[i] == pytest.approx(expected, abs=1e-5), (key, words[i])
    assert np.argmax(np.abs(result.scores)) == words.index("great")


def test_leave_one_out_scores_each_distinct_variant_once(linear_clf: Classifier) -> None:
    # "the" and "was" appear twice: deleting either copy gives the same input, scored once.
    result = explainers.run_explainer(explainers.get("loo_empty"), linear_clf, EXAMPLE, 1)
    distinct_inputs = {tuple(EXAMPLE.words[:i] + EXAMPLE.words[i + 1 :]) for i in range(len(EXAMPLE.words))}
    assert result.forward_passes == len(distinct_inputs) + 1


def test_grad_x_input_of_linear_model_is_weight_times_input(linear_clf: Classifier) -> None:
    spec = explainers.get("grad_x_input")
    for target in (0, 1):
        result = explainers.run_explainer(spec, linear_clf, EXAMPLE, target, spec.make_params({"output": "logit"}))
        expected = [float(np.array(PLANTED.get(w, [0, 0, 0, 0])) @ np.array(WEIGHT)[:, target]) for w in EXAMPLE.words]
        np.testing.assert_allclose(result.scores, expected, atol=1e-6)
    assert result.backward_passes == 1


def test_saliency_l2_of_linear_model_is_weight_norm(linear_clf: Classifier) -> None:
    spec = explainers.get("saliency")
    result = explainers.run_explainer(spec, linear_clf, EXAMPLE, 1, spec.make_params({"output": "logit"}))
    # d logit_1 / d embedding = W[:, 1] for every token, whatever the word.
    np.testing.assert_allclose(result.scores, np.linalg.norm(np.array(WEIGHT)[:, 1]), rtol=1e-6)


def test_integrated_gradients_is_complete(bert_clf: Classifier) -> None:
    spec = explainers.get("integrated_gradients")
    for baseline in ("pad", "mask", "zero"):
        params = spec.make_params({"n_steps": 256, "baseline": baseline})
        result = explainers.run_explainer(spec, bert_clf, EXAMPLE, 1, params)
        encoded = bert_clf.encode(EXAMPLE)
        # f(baseline) by hand: the same sequence with every word token's embedding replaced.
        from explainers.gradients import baseline_embeddings

        with torch.no_grad():
            base = torch.softmax(
                bert_clf.forward_embeds(baseline_embeddings(bert_clf, encoded, baseline), encoded.variant), -1
            )[0, 1]
        original = bert_clf.predict_proba([encoded.variant])[0, 1]
        assert float(result.scores.sum()) == pytest.approx(original - float(base), abs=1e-3), baseline
        # The reported delta is this gap: |sum of scores - (f(input) - f(baseline))|.
        gap = abs(float(result.scores.sum()) - (original - float(base)))
        assert result.extras["convergence_delta"] == pytest.approx(gap, abs=1e-6) and gap < 1e-3


def test_integrated_gradients_deltas_of_a_batch_are_each_example_s_own(bert_clf: Classifier) -> None:
    """The path ends of a batch share padded passes (here 3 rows a pass for 6 ends of different
    widths): each example's delta is the one it gets alone."""
    spec = explainers.get("integrated_gradients")
    params = spec.make_params({"n_steps": 8})
    examples = [EXAMPLE, Example(segments=(("bad",),)), Example(segments=(("great", "fun"), ("bad", "movie")))]
    alone = [explainers.run_explainer(spec, bert_clf, e, 1, params).extras["convergence_delta"] for e in examples]
    bert_clf.batch_size = 3
    together = explainers.run_explainers(spec, bert_clf, examples, [1, 1, 1], params)
    np.testing.assert_allclose([a.extras["convergence_delta"] for a in together], alone, rtol=1e-4, atol=1e-7)


def test_integrated_gradients_reports_its_path_points_as_it_goes(bert_clf: Classifier) -> None:
    """A long document's integrated gradients is many of Captum's internal batches: each one is a
    progress report (the heatmap page's bar stood still for the whole method before)."""
    spec = explainers.get("integrated_gradients")
    bert_clf.batch_size = 8  # 40 path points: 5 internal batches of 8
    reports: list[tuple[float, str]] = []
    explainers.run_explainer(
        spec, bert_clf, EXAMPLE, 1, spec.make_params({"n_steps": 40}), progress=lambda f, m: reports.append((f, m))
    )
    assert reports == [(k / 5, f"path point {8 * k} of 40") for k in range(1, 6)]


def test_integrated_gradients_finds_planted_word(linear_clf: Classifier) -> None:
    result = explainers.run_explainer(explainers.get("integrated_gradients"), linear_clf, EXAMPLE, 1)
    assert EXAMPLE.words[int(np.argmax(result.scores))] == "great"
    assert EXAMPLE.words[int(np.argmin(result.scores))] == "bad"


def test_attention_rollout_rows_are_distributions(bert_clf: Classifier) -> None:
    from explainers.attention import rollout

    with bert_clf.eager_attention():
        attention = bert_clf.attentions([bert_clf.encode(EXAMPLE).variant])[0]
    for residual in (True, False):
        matrix = rollout(attention, residual)
        np.testing.assert_allclose(matrix.sum(-1).numpy(), 1.0, atol=1e-6)


def test_attention_mean_by_hand(bert_clf: Classifier) -> None:
    encoded = bert_clf.encode(EXAMPLE)
    with bert_clf.eager_attention():
        attention = bert_clf.attentions([encoded.variant])[0].numpy()  # (layers, heads, seq, seq)
    received = attention.mean(axis=(0, 1, 2))
    result = explainers.run_explainer(explainers.get("attention_mean"), bert_clf, EXAMPLE, 1)
    for w in range(len(EXAMPLE.words)):
        assert result.scores[w] == pytest.approx(received[encoded.word_positions(w)].sum(), rel=1e-5)


def test_subword_scores_sum_to_word_scores(bert_clf: Classifier) -> None:
    example = Example(segments=(("an", "unbelievable", "movie"),), id="toy/sub")
    result = explainers.run_explainer(explainers.get("grad_x_input"), bert_clf, example, 1)
    assert result.subwords == ("[UNK]", "un", "##believ", "##able", "movie")
    assert result.scores[1] == pytest.approx(result.subword_scores[1:4].sum(), rel=1e-5)


def test_pairs_keep_segments_apart(bert_clf: Classifier) -> None:
    example = Example(segments=(("a", "man", "runs"), ("a", "man", "sleeps")), id="toy/pair")
    encoded = bert_clf.encode(example)
    assert encoded.word_ids.count(None) == 3
    assert encoded.token_type_ids[-2] == 1 and encoded.token_type_ids[1] == 0
    result = explainers.run_explainer(explainers.get("loo_empty"), bert_clf, example, 0)
    assert result.scores.shape == (6,)


# --------------------------------------------------------------------------- the registry contract

# Smaller budgets keep the contract test fast; the contract holds at any budget.
FAST = {
    "integrated_gradients": {"n_steps": 16},
    "lime": {"n_samples": 60},
    "lime_mlm": {"n_samples": 40},
    "kernel_shap": {"n_samples": 60},
    "smoothgrad": {"n_samples": 5},
    "vargrad": {"n_samples": 5},
    "smoothgrad_ig": {"n_samples": 3, "n_steps": 8},
    "gradient_shap": {"n_samples": 10},
    "partition_shap": {"n_evals": 40},
    "sobol": {"n_designs": 8},
    "marc": {"n_steps": 15},
    "aml": {"n_steps": 2, "n_train": 8, "n_epochs": 1},
}


@pytest.fixture(scope="module")
def toy_mlm() -> MaskedLM:
    return toy_masked_lm(seed=1)


def _fast_params(spec: explainers.ExplainerSpec, seed: int) -> object:
    import dataclasses

    names = {f.name for f in dataclasses.fields(spec.params_cls)}
    overrides = {k: v for k, v in FAST.get(spec.key, {}).items() if k in names}
    if "seed" in names:
        overrides["seed"] = seed
    return spec.make_params(overrides)


@pytest.mark.parametrize("key", list(explainers.REGISTRY))
def test_registry_contract(key: str, toy_bert_loaded, toy_mlm: MaskedLM) -> None:
    spec = explainers.get(key)
    before = {name: t.clone() for name, t in toy_bert_loaded.model.state_dict().items()}
    example = Example(segments=(("the", "film", "was", "unbelievable", "and", "fun"),), id="toy/contract")

    def run(batch_size: int, seed: int):
        clf = Classifier(toy_bert_loaded, batch_size=batch_size)
        return explainers.run_explainer(spec, clf, example, 1, _fast_params(spec, seed), mlm=toy_mlm)

    first = run(7, seed=3)
    assert first.scores.shape == (len(example.words),)
    assert np.all(np.isfinite(first.scores))
    assert first.method == key and first.words == example.words
    np.testing.assert_allclose(run(7, seed=3).scores, first.scores, rtol=1e-5, atol=1e-7)
    if key != "sobol":
        # Sobol's indices are scale-free: the toy BERT's output moves by about 1e-6 when words go,
        # so there they are a ratio of float noise; tests/test_batching.py checks them on the linear toy.
        np.testing.assert_allclose(run(1, seed=3).scores, first.scores, rtol=1e-4, atol=1e-6)
    if first.subword_scores is not None:
        # Special tokens are never scored: one subword score per word piece.
        assert len(first.subword_scores) == 6 + 2
    for name, tensor in toy_bert_loaded.model.state_dict().items():
        assert torch.equal(tensor, before[name]), f"{key} changed {name}"
    assert all(p.grad is None for p in toy_bert_loaded.model.parameters())
    _check_capabilities(spec, first, toy_bert_loaded, example)


def _check_capabilities(spec: explainers.ExplainerSpec, first, loaded, example: Example) -> None:
    """The spec's flags and cost models hold on the run they describe."""
    import dataclasses

    from explainers.word_scores import word_scores

    assert spec.paper.authors and 1990 < spec.paper.year < 2100, spec.key
    assert all(f.metadata.get("help") for f in dataclasses.fields(spec.params_cls)), f"{spec.key}: a field has no help"
    params = _fast_params(spec, 3)
    if spec.passes is not None:  # every method's cost model bounds the passes it spent
        passes = spec.passes(len(example.words), params)
        assert first.forward_passes <= passes.classifier, (spec.key, first.forward_passes, passes)
        assert (first.forward_passes > 0) == (passes.classifier > 0), spec.key
        assert first.backward_passes <= passes.backward, (spec.key, first.backward_passes, passes)
        assert first.extras.get("mlm_forward_passes", 0) <= passes.mlm, spec.key
    if spec.mask_optimiser:
        steps = spec.steps(params)
        assert steps.run > 0 and steps.pretrain >= 0 and spec.mask_filler, spec.key
    if spec.needs_mlm:
        with pytest.raises(ValueError, match="needs a masked language model"):
            explainers.run_explainer(spec, Classifier(loaded), example, 1, params)
    if spec.gradient:
        # The differentiable recomputation the embedding attack uses gives the explainer's scores.
        clf = Classifier(loaded)
        encoded = clf.encode(example)
        embeds = clf.input_embeddings(torch.tensor([encoded.input_ids])).detach()
        scores, _ = word_scores(clf, encoded, embeds, 1, params)
        np.testing.assert_allclose(scores.numpy(), first.scores, rtol=1e-4, atol=1e-6)


def test_registry_is_read_only_and_rejects_duplicates() -> None:
    spec = explainers.get("random")
    with pytest.raises(TypeError):
        explainers.REGISTRY["copy"] = spec  # type: ignore[index]
    with pytest.raises(ValueError, match="'random' is registered twice"):
        explainers._registry(spec, spec)


def test_spec_cost_models_match_their_flags() -> None:
    import dataclasses

    lime = explainers.get("lime")
    with pytest.raises(ValueError, match="every method but a mask optimiser needs a passes cost model"):
        dataclasses.replace(lime, passes=None)
    with pytest.raises(ValueError, match="mask optimiser needs a steps cost model"):
        dataclasses.replace(explainers.get("marc"), steps=None)
    # im on 4 words, top-10: one masked-LM pass per word and 1 + 4 x 10 classifier passes.
    im = explainers.get("im")
    assert im.passes(4, im.make_params()) == explainers.Passes(classifier=41, mlm=4)
    lime_mlm = explainers.get("lime_mlm")
    one_by_one = lime_mlm.passes(5, lime_mlm.make_params({"n_samples": 101, "fill": "one_at_a_time"}))
    assert one_by_one == explainers.Passes(classifier=101, mlm=300)  # 100 samples x mean (5 + 1) / 2 words
    aml = explainers.get("aml")
    steps = aml.steps(aml.make_params({"n_steps": 5, "n_train": 10, "n_epochs": 2}))
    assert steps.run == pytest.approx(21.0) and steps.pretrain == pytest.approx(32.0)


def test_the_random_baseline_draws_a_ranking_per_text(linear_clf: Classifier) -> None:
    """Texts of one length once got one ranking per seed (the baseline then measured word
    position); each text now gets its own, the same again for the same text and seed."""
    from scipy import stats

    spec = explainers.get("random")
    words = ["good", "bad", "film", "plot", "great", "boring", "the", "a"]
    rng = np.random.default_rng(0)
    texts = [tuple(rng.choice(words, size=8)) for _ in range(200)]
    scores = np.array([explainers.run_explainer(spec, linear_clf, Example(segments=(t,)), 1).scores for t in texts])
    first = np.argmax(scores, axis=1)  # the word each text's ranking puts first
    assert stats.chisquare(np.bincount(first, minlength=8)).pvalue > 0.001  # every position alike
    assert len({tuple(np.argsort(s)) for s in scores}) > 150  # (8! orders: repeats are rare)
    again = explainers.run_explainer(spec, linear_clf, Example(segments=(texts[0],)), 1)
    np.testing.assert_array_equal(again.scores, scores[0])
    other_seed = explainers.run_explainer(
        spec, linear_clf, Example(segments=(texts[0],)), 1, spec.make_params({"seed": 1})
    )
    assert not np.array_equal(other_seed.scores, scores[0])


def test_the_heatmap_page_names_the_method_in_each_progress_message() -> None:
    import services
    from core.datasets import load_bundled_examples

    reports: list[tuple[float, str]] = []
    example = load_bundled_examples(split="sst2")[0]
    services.explain(
        "minilm-sst2", example, ["random", "integrated_gradients"], progress=lambda f, m: reports.append((f, m))
    )
    fractions, messages = zip(*reports, strict=True)
    assert list(fractions) == sorted(fractions) and fractions[-1] == 1.0
    assert messages[0] == "random: starting" and messages[-1] == "integrated_gradients: done"
    path = [m for m in messages if "path point" in m]
    assert path and all(m.startswith("integrated_gradients: path point ") for m in path)
