"""Known answers of the methods the peers offer (issue 18): SmoothGrad / VarGrad / SmoothGrad-IG,
GradientSHAP, DeepLIFT, occlusion and Partition SHAP, on the toy models of tests/toy.py. The
registry contract (tests/test_explainers.py) covers their shapes, seeds and batch sizes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import explainers
from core.classifier import Classifier
from core.loaded import LoadedClassifier
from core.types import Example
from explainers.gradients import baseline_embeddings
from explainers.shap import coalitions, exact_shapley
from tests.toy import PLANTED, WEIGHT, ToyConfig, ToyLinearClassifier, tiny_bert_config, toy_tokenizer

EXAMPLE = Example(segments=(("the", "movie", "was", "great", "but", "the", "plot", "was", "bad", "."),), id="toy/0")
PAIR = Example(segments=(("a", "good", "film"), ("the", "plot", "was", "awful")), id="toy/pair")


@pytest.fixture(scope="module")
def sharp_bert() -> Classifier:
    """A tiny random BERT with large weights (initializer range 0.5), whose outputs move with
    its input, unlike the near-constant default toy BERT."""
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    config = tiny_bert_config(
        num_labels=2,
        initializer_range=0.5,
        attn_implementation="eager",
    )
    model = BertForSequenceClassification(config).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return Classifier(LoadedClassifier("sharp-bert", model, toy_tokenizer(), torch.device("cpu")))


def run(clf: Classifier, key: str, example: Example = EXAMPLE, target: int = 1, **overrides):
    spec = explainers.get(key)
    return explainers.run_explainer(spec, clf, example, target, spec.make_params(overrides))


def planted_logit(word: str, target: int) -> float:
    """The toy linear model's logit contribution of one word (its embedding row times W)."""
    return float(np.array(PLANTED.get(word, [0.0] * 4)) @ np.array(WEIGHT)[:, target])


# --------------------------------------------------------------------------- occlusion


@pytest.mark.parametrize("removal", ["delete", "mask", "zero"])
@pytest.mark.parametrize("output", ["probability", "log_odds"])
def test_occlusion_with_window_one_is_leave_one_out(linear_clf: Classifier, removal: str, output: str) -> None:
    loo = run(linear_clf, "loo_empty", removal=removal, output=output)
    occlusion = run(linear_clf, "occlusion", window=1, removal=removal, output=output)
    np.testing.assert_allclose(occlusion.scores, loo.scores, atol=1e-6)


def test_occlusion_averages_the_windows_that_cover_a_word(bert_clf: Classifier) -> None:
    result = run(bert_clf, "occlusion", window=3, removal="delete")
    encoded = bert_clf.encode(EXAMPLE)
    n = len(EXAMPLE.words)
    variants = [encoded.variant] + [encoded.perturb({w: () for w in range(s, s + 3)}) for s in range(n - 2)]
    probs = bert_clf.predict_proba(variants)[:, 1]
    drops = probs[0] - probs[1:]
    expected = [np.mean([drops[s] for s in range(n - 2) if s <= w < s + 3]) for w in range(n)]
    np.testing.assert_allclose(result.scores, expected, atol=1e-6)
    assert (
        result.forward_passes
        <= explainers.get("occlusion").passes(n, explainers.get("occlusion").make_params()).classifier
    )


def test_occlusion_window_longer_than_the_text_removes_everything(linear_clf: Classifier) -> None:
    short = Example(segments=(("great", "film"),), id="toy/short")
    result = run(linear_clf, "occlusion", window=3, removal="delete", example=short)
    assert result.extras["windows"] == [[0, 1]]
    assert result.scores[0] == pytest.approx(result.scores[1])


# --------------------------------------------------------------------------- Partition SHAP


@pytest.mark.parametrize("example", [EXAMPLE, PAIR], ids=["single", "pair"])
def test_partition_shap_on_an_additive_model_is_the_exact_shapley_values(linear_clf: Classifier, example) -> None:
    # The toy linear model's log-odds are additive over words (removal by deletion takes the
    # word's embedding row out of the sum), so Owen values = Shapley values = each word's part.
    result = run(linear_clf, "partition_shap", example=example, removal="delete", output="log_odds")
    expected = [(planted_logit(w, 1) - planted_logit(w, 0)) / np.log(2) for w in example.words]
    np.testing.assert_allclose(result.scores, expected, atol=2e-5)
    # The same from every coalition by the Shapley formula, through the shared scorer.
    encoded = linear_clf.encode(example)
    present = coalitions(len(example.words))
    variants = [encoded.perturb({w: () for w in np.flatnonzero(row < 0.5)}) for row in present]
    probs = linear_clf.predict_proba(variants)[:, 1]
    np.testing.assert_allclose(result.scores, exact_shapley(present, np.log2(probs / (1 - probs))), atol=2e-5)


def test_partition_shap_is_efficient_on_a_transformer(bert_clf: Classifier) -> None:
    result = run(bert_clf, "partition_shap", example=PAIR, removal="mask")
    full = bert_clf.predict_proba([bert_clf.encode(PAIR).variant])[0, 1]
    assert result.scores.sum() == pytest.approx(full - result.extras["empty_value"], abs=1e-6)
    assert result.forward_passes <= result.extras["evaluations"] + 2


def test_partition_shap_tree_joins_the_segments_last() -> None:
    from explainers.partition_shap import word_tree

    tree = word_tree(PAIR.segments)
    assert tree.shape == (6, 4)
    # The last merge joins the premise's root (3 words) and the hypothesis's root (4 words).
    assert tree[-1, 3] == 7 and {tree[-1, 0], tree[-1, 1]} == {7 + 1, 7 + 4}


# --------------------------------------------------------------------------- noise tunnel


@pytest.mark.parametrize("reduction", ["l2", "sum"])
def test_smoothgrad_without_noise_is_saliency(bert_clf: Classifier, reduction: str) -> None:
    saliency = run(bert_clf, "saliency", reduction=reduction)
    smooth = run(bert_clf, "smoothgrad", reduction=reduction, noise=0.0, n_samples=3)
    np.testing.assert_allclose(smooth.scores, saliency.scores, rtol=1e-5, atol=1e-9)
    assert smooth.backward_passes == 3


def test_smoothgrad_noise_changes_the_map_and_vargrad_measures_it(sharp_bert: Classifier) -> None:
    saliency = run(sharp_bert, "saliency")
    smooth = run(sharp_bert, "smoothgrad", noise=0.5, n_samples=8)
    assert not np.allclose(smooth.scores, saliency.scores, rtol=1e-3)
    np.testing.assert_allclose(run(sharp_bert, "vargrad", noise=0.0).scores, 0.0, atol=1e-6)  # E[g^2] - E[g]^2, rounded
    noisy = run(sharp_bert, "vargrad", noise=0.5, n_samples=8)
    assert np.all(noisy.scores > 0)
    stdev = noisy.extras["noise_stdev"]
    words = sharp_bert.input_embeddings(torch.tensor([sharp_bert.encode(EXAMPLE).input_ids]))[0, 1:-1]
    assert stdev == pytest.approx(0.5 * float(words.max() - words.min()), rel=1e-6)


def test_smoothgrad_ig_without_noise_is_integrated_gradients(bert_clf: Classifier) -> None:
    ig = run(bert_clf, "integrated_gradients", n_steps=16)
    smooth = run(bert_clf, "smoothgrad_ig", n_steps=16, noise=0.0, n_samples=2)
    np.testing.assert_allclose(smooth.scores, ig.scores, rtol=1e-4, atol=1e-7)


# --------------------------------------------------------------------------- GradientSHAP


def test_gradient_shap_mean_is_complete(sharp_bert: Classifier) -> None:
    # E[sum of scores] = f(x) - mean over the baselines of f(b): checked with many draws.
    result = run(sharp_bert, "gradient_shap", n_samples=2000, seed=1)
    encoded = sharp_bert.encode(EXAMPLE)
    with torch.no_grad():
        base = [
            torch.softmax(sharp_bert.forward_embeds(baseline_embeddings(sharp_bert, encoded, b), encoded.variant), -1)[
                0, 1
            ]
            for b in ("pad", "mask", "zero")
        ]
    full = sharp_bert.predict_proba([encoded.variant])[0, 1]
    expected = full - float(np.mean(base))
    assert result.extras["expected_sum"] == pytest.approx(expected, abs=1e-6)
    assert abs(expected) > 0.1
    assert result.scores.sum() == pytest.approx(expected, rel=0.05)


def test_gradient_shap_on_a_linear_model_is_grad_times_mean_difference(linear_clf: Classifier) -> None:
    # Linear logit: every draw gives W x (x - b); the [PAD], [MASK] and zero baselines are all zero rows.
    result = run(linear_clf, "gradient_shap", output="logit", n_samples=5)
    np.testing.assert_allclose(result.scores, [planted_logit(w, 1) for w in EXAMPLE.words], atol=1e-6)


# --------------------------------------------------------------------------- DeepLIFT


@pytest.mark.parametrize("target", [0, 1])
def test_deeplift_on_a_linear_model_is_gradient_times_difference(linear_clf: Classifier, target: int) -> None:
    result = run(linear_clf, "deeplift", target=target)
    np.testing.assert_allclose(result.scores, [planted_logit(w, target) for w in EXAMPLE.words], atol=1e-6)
    assert result.extras["convergence_delta"] < 1e-6 and result.extras["rescaled_modules"] == []


def test_deeplift_runs_on_a_copy_and_reports_its_gap(toy_bert_loaded) -> None:
    clf = Classifier(toy_bert_loaded)
    rows: list[int] = []  # the copy of the module tree takes this hook with it: it sees the copy's rows
    handle = toy_bert_loaded.logits_model.register_forward_pre_hook(
        lambda module, args, kwargs: rows.append(kwargs["inputs_embeds"].shape[0]), with_kwargs=True
    )
    try:
        result = run(clf, "deeplift")
    finally:
        handle.remove()
    assert sum(rows) == result.forward_passes == 2 and result.backward_passes == 2  # input and baseline together
    assert result.extras["rescaled_modules"] == ["bert.pooler.activation"]
    assert np.isfinite(result.extras["convergence_delta"])
    for module in toy_bert_loaded.model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks and not module._backward_hooks
    activation = toy_bert_loaded.model.bert.pooler.activation
    assert not hasattr(activation, "input") and not hasattr(activation, "output")


class _ReusedRelu(ToyLinearClassifier):
    """The toy linear model with one ReLU module called twice: DeepLIFT's hooks cannot follow it."""

    def __init__(self, config: ToyConfig) -> None:
        super().__init__(config)
        self.relu = torch.nn.ReLU()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, inputs_embeds=None, **kwargs):
        out = super().forward(input_ids, attention_mask, token_type_ids, inputs_embeds)
        out.logits = self.relu(self.relu(out.logits) - 1.0)
        return out


def test_deeplift_delta_is_captums_own() -> None:
    """The delta comes from the attribution pass's outputs; Captum computes it with two more
    passes. Both are ``sum(scores) - (f(x) - f(b))``, on the bundled SST-2 model, where it is not
    zero."""
    from captum.attr import DeepLift

    from core.attention_view import module_view
    from core.loaded import load_classifier

    loaded = load_classifier("minilm-sst2")
    clf = Classifier(loaded)
    result = run(clf, "deeplift")
    encoded = clf.encode(EXAMPLE)
    inputs = clf.input_embeddings(torch.tensor([encoded.input_ids])).detach()
    baseline = baseline_embeddings(clf, encoded, "pad")

    class TargetLogit(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = module_view(loaded.model)  # the full model's tree, hooked by Captum

        def forward(self, embeds: torch.Tensor) -> torch.Tensor:
            return self.model(inputs_embeds=embeds).logits[:, 1]

    with torch.enable_grad():
        scores, delta = DeepLift(TargetLogit()).attribute(
            inputs.clone().requires_grad_(True), baselines=baseline, return_convergence_delta=True
        )
    assert abs(float(delta)) > 1e-3  # the pooler's tanh and the GELUs leave a gap
    assert result.extras["convergence_delta"] == pytest.approx(abs(float(delta)), rel=1e-4, abs=1e-5)
    np.testing.assert_allclose(result.subword_scores, scores[0].sum(-1).detach().numpy()[1:-1], atol=1e-5)


def test_deeplift_refuses_a_reused_module_with_a_clear_message() -> None:
    model = _ReusedRelu(ToyConfig(id2label={0: "negative", 1: "positive"})).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    clf = Classifier(LoadedClassifier("toy-reused", model, toy_tokenizer(), torch.device("cpu")))
    with pytest.raises(ValueError, match="DeepLIFT .* cannot explain toy-reused: .*used more than once"):
        run(clf, "deeplift")


# --------------------------------------------------------------------------- Sobol


def test_sobol_total_order_of_an_additive_model(linear_clf: Classifier) -> None:
    # Additive log-odds over independent keep/remove coins: S_T,i = a_i^2 / sum_j a_j^2, and a word
    # the model ignores gets exactly 0.
    result = run(linear_clf, "sobol", n_designs=1024, output="log_odds", seed=2)
    parts = np.array([planted_logit(w, 1) - planted_logit(w, 0) for w in EXAMPLE.words])
    expected = parts**2 / np.sum(parts**2)
    assert np.all(result.scores[parts == 0] == 0)
    np.testing.assert_allclose(result.scores[parts != 0], expected[parts != 0], rtol=0.1)
    assert result.forward_passes <= 2 ** len(EXAMPLE.words)


def test_sobol_estimator_by_hand() -> None:
    from explainers.sobol import total_order

    f_a, f_b = np.array([1.0, 0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0, 1.0])
    f_c = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]])  # word 0 never matters, word 1 twice
    # Var over A and B: mean 0.5, variance 0.25; word 1: mean((1, 1, 0, 0)) / (2 x 0.25) = 1.
    np.testing.assert_allclose(total_order(f_a, f_b, f_c), [0.0, 1.0])
