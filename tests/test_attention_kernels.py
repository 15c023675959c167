"""Fused attention by default, eager attention only where a method reads attention weights.

Models load with the fused kernel (``sdpa``); the methods whose registry entry declares
``needs_attention_weights`` run on an eager view of the same weights (core/attention_view.py).
Every method's scores are the same on both kernels; the shared model keeps its kernel and its
hooks whatever a request does."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import explainers
from core.attention_view import attention_implementation, eager_view
from core.classifier import Classifier
from core.datasets import split_words
from core.loaded import LoadedClassifier, load_classifier
from core.padding import padded_batch
from core.types import Example
from engine.explain import explain_example
from tests.test_explainers import _fast_params, toy_mlm  # noqa: F401 - toy_mlm is a fixture
from tests.test_shared_model_state import hook_count
from tests.toy import toy_bert

EXAMPLE = Example(segments=(("the", "film", "was", "unbelievable", "and", "fun"),), id="toy/kernels")
SENTENCE = Example(
    segments=(split_words("a gorgeous , witty and seductive film that never loses its charm ."),), id="sst2/kernels"
)
ATTENTION_METHODS = {"attention_mean", "attention_rollout"}


def scores_on(loaded: LoadedClassifier, key: str, example: Example, mlm) -> np.ndarray:
    spec = explainers.get(key)
    return explainers.run_explainer(spec, Classifier(loaded), example, 1, _fast_params(spec, 3), mlm=mlm).scores


def test_models_load_with_the_fused_kernel_and_only_attention_methods_ask_for_eager() -> None:
    assert attention_implementation(load_classifier("minilm-sst2").model) == "sdpa"
    assert {k for k, s in explainers.REGISTRY.items() if s.needs_attention_weights} == ATTENTION_METHODS


@pytest.mark.parametrize("key", list(explainers.REGISTRY))
def test_every_method_scores_the_same_on_the_fused_and_the_eager_kernel(key: str, toy_mlm) -> None:  # noqa: F811
    fused, eager = toy_bert(seed=5), toy_bert(seed=5, attention="eager")
    assert attention_implementation(fused.model) == "sdpa" and attention_implementation(eager.model) == "eager"
    np.testing.assert_allclose(
        scores_on(fused, key, EXAMPLE, toy_mlm), scores_on(eager, key, EXAMPLE, toy_mlm), rtol=1e-5, atol=1e-5
    )
    assert attention_implementation(fused.model) == "sdpa" and hook_count(fused.model) == 0


@pytest.mark.slow
def test_every_method_scores_the_same_on_both_kernels_of_a_bundled_model() -> None:
    """One SST-2 sentence, every method with the contract test's small budgets: the bundled model
    as loaded (sdpa) against an eager copy of its weights."""
    from core.masked_lm import MaskedLM

    fused = load_classifier("minilm-sst2")
    eager = LoadedClassifier("minilm-sst2 [eager]", eager_view(fused.model), fused.tokenizer, fused.device, pair=False)
    assert attention_implementation(eager.model) == "eager"
    mlm = MaskedLM.load("minilm-mlm")
    for key in explainers.REGISTRY:
        np.testing.assert_allclose(
            scores_on(fused, key, SENTENCE, mlm), scores_on(eager, key, SENTENCE, mlm), rtol=1e-5, atol=1e-5,
            err_msg=key,
        )  # fmt: skip
    assert attention_implementation(fused.model) == "sdpa" and hook_count(fused.model) == 0


def test_attention_methods_read_the_weights_of_the_eager_kernel() -> None:
    fused, eager = toy_bert(seed=5), toy_bert(seed=5, attention="eager")
    variant = Classifier(fused).encode(EXAMPLE).variant
    clf = Classifier(fused)
    with pytest.raises(ValueError, match="no attention weights with 'sdpa' attention"):
        clf.attentions([variant])
    with clf.eager_attention():
        weights = clf.attentions([variant])[0]
    with torch.inference_mode():
        expected = eager.model(**padded_batch(eager, [variant]), output_attentions=True).attentions
    assert weights.shape == (2, 2, len(variant.input_ids), len(variant.input_ids))
    torch.testing.assert_close(weights, torch.stack([a[0] for a in expected]), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))


def test_the_eager_view_shares_the_weights_and_leaves_the_shared_model_as_it_was() -> None:
    loaded = toy_bert(seed=5)
    view = loaded.eager_model
    assert loaded.eager_model is view  # built once
    shared = dict(loaded.model.named_parameters())
    assert all(p is shared[name] for name, p in view.named_parameters())
    assert view.config is not loaded.model.config
    explain_example(Classifier(loaded), EXAMPLE, sorted(ATTENTION_METHODS))
    assert attention_implementation(loaded.model) == "sdpa" and attention_implementation(view) == "eager"
    assert hook_count(loaded.model) == 0
    assert not getattr(loaded.model, "_output_capturing_hooks_installed", False)


def test_a_request_in_eager_attention_does_not_switch_another_request() -> None:
    """Two requests on one shared model: while one runs on the eager view, the other's forward
    passes still take the fused kernel (the switch lives on the per-request view, not the model)."""
    loaded = toy_bert(seed=5)
    inside, seen = threading.Event(), threading.Event()
    kernels: list[str | None] = []

    def attention_request() -> None:
        clf = Classifier(loaded)
        with clf.eager_attention():
            kernels.append(attention_implementation(clf.model))
            inside.set()
            seen.wait(timeout=30)

    thread = threading.Thread(target=attention_request)
    thread.start()
    assert inside.wait(timeout=30)
    other = Classifier(loaded)
    kernels.append(attention_implementation(other.model))
    saliency = explainers.run_explainer(explainers.get("saliency"), other, EXAMPLE, 1)
    seen.set()
    thread.join(timeout=30)
    assert kernels == ["eager", "sdpa"]
    assert other.model is loaded.model and np.all(np.isfinite(saliency.scores))


def test_double_back_propagation_runs_on_a_fused_model() -> None:
    """The fused CPU kernel has no second derivative: ``word_scores(create_graph=True)`` (the
    embedding attack) takes the eager view, and its gradient is the eager model's."""
    from explainers.gradients import SaliencyParams
    from explainers.word_scores import word_scores

    results = []
    for loaded in (toy_bert(seed=5), toy_bert(seed=5, attention="eager")):
        clf = Classifier(loaded)
        encoded = clf.encode(EXAMPLE)
        delta = torch.zeros(1, len(encoded.input_ids), 16, requires_grad=True)
        embeds = clf.input_embeddings(torch.tensor([encoded.input_ids])).detach() + delta
        scores, _ = word_scores(clf, encoded, embeds, 1, SaliencyParams(), create_graph=True)
        (grad,) = torch.autograd.grad(scores.sum(), delta)
        results.append(grad)
    torch.testing.assert_close(results[0], results[1], rtol=1e-5, atol=1e-7)


def _toy_distilbert() -> LoadedClassifier:
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    from tests.toy import VOCAB, toy_tokenizer

    torch.manual_seed(3)
    config = DistilBertConfig(
        vocab_size=len(VOCAB), dim=16, n_layers=3, n_heads=2, hidden_dim=32, max_position_embeddings=64, num_labels=2
    )
    model = DistilBertForSequenceClassification(config).eval().requires_grad_(False)
    return LoadedClassifier("toy-distilbert", model, toy_tokenizer(), torch.device("cpu"))


@pytest.mark.parametrize("architecture", ["bert", "distilbert"])
def test_attention_weights_stop_the_pass_after_the_last_layer_and_equal_the_whole_pass(architecture: str) -> None:
    """The weights read by the pass that stops after the last attention layer equal those of the
    whole pass with ``output_attentions=True``, row by row in a padded batch, and the layers after
    them (the last feed-forward block, the head) never run."""
    loaded = toy_bert(seed=5) if architecture == "bert" else _toy_distilbert()
    clf = Classifier(loaded)
    variants = [clf.encode(e).variant for e in (EXAMPLE, Example(segments=(("bad", "plot"),), id="toy/short"))]
    view = loaded.eager_model
    with clf.eager_attention():
        clf.attentions(variants[:1])  # the first read on a view is checked against the whole pass
    head = view.classifier
    head_calls: list[int] = []
    handle = head.register_forward_hook(lambda module, args, output: head_calls.append(1))
    try:
        with clf.eager_attention():
            weights = clf.attentions(variants, owners=[0, 1])
    finally:
        handle.remove()
    assert head_calls == []  # stopped before the head
    with torch.inference_mode():
        whole = view(**padded_batch(clf.loaded, variants), output_attentions=True).attentions
    assert len(whole) == weights[0].shape[0] == (2 if architecture == "bert" else 3)
    for row, (variant, got) in enumerate(zip(variants, weights, strict=True)):
        n = len(variant.input_ids)
        expected = torch.stack([layer[row, :, :n, :n] for layer in whole])
        torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-7)
    assert clf.forward_passes == 3 and clf.model_calls == 2
    # Outside an attention request the hooks do nothing: the view's passes run whole.
    with torch.inference_mode():
        logits = view(**padded_batch(clf.loaded, variants)).logits
    assert logits.shape == (2, 2)
    assert hook_count(loaded.model) == 0


def test_a_model_whose_attention_modules_are_not_recorded_is_read_by_the_whole_pass(monkeypatch) -> None:
    from core import attention_weights

    monkeypatch.setattr(attention_weights, "recorded_attention_modules", lambda model: [])
    loaded = toy_bert(seed=5)
    clf = Classifier(loaded)
    variant = clf.encode(EXAMPLE).variant
    assert attention_weights.read_attention_weights(loaded.eager_model, padded_batch(clf.loaded, [variant])) is None
    with clf.eager_attention():
        weights = clf.attentions([variant])[0]
    with torch.inference_mode():
        expected = loaded.eager_model(**padded_batch(clf.loaded, [variant]), output_attentions=True).attentions
    torch.testing.assert_close(weights, torch.stack([a[0] for a in expected]), rtol=1e-6, atol=1e-7)


def test_the_bundled_model_s_attention_weights_equal_the_whole_pass() -> None:
    """The bundled LoRA model (a peft model over MiniLM): six layers read, equal to the whole pass."""
    loaded = load_classifier("minilm-sst2")
    clf = Classifier(loaded)
    variants = [clf.encode(SENTENCE).variant, clf.encode(EXAMPLE).variant]
    with clf.eager_attention():
        weights = clf.attentions(variants, owners=[0, 1])
    from core.attention_weights import read_attention_weights

    with torch.inference_mode():
        batch = padded_batch(clf.loaded, variants)
        assert read_attention_weights(loaded.eager_model, batch) is not None  # read by the pass that stops early
        whole = loaded.eager_model(**batch, output_attentions=True).attentions
    assert len(whole) == 6
    for row, (variant, got) in enumerate(zip(variants, weights, strict=True)):
        n = len(variant.input_ids)
        torch.testing.assert_close(got, torch.stack([layer[row, :, :n, :n] for layer in whole]), rtol=1e-5, atol=1e-6)


def test_a_model_that_shares_one_attention_module_across_layers_is_read_by_the_whole_pass() -> None:
    """ALBERT calls one attention module for every layer: stopping after its first call would read
    one layer of three. The first read's check against the whole pass catches it, and every
    read on that model is the whole pass."""
    from transformers import AlbertConfig, AlbertForSequenceClassification

    from core.attention_weights import read_attention_weights
    from tests.toy import VOCAB, toy_tokenizer

    torch.manual_seed(4)
    config = AlbertConfig(
        vocab_size=len(VOCAB), embedding_size=8, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, num_labels=2,
    )  # fmt: skip
    model = AlbertForSequenceClassification(config).eval().requires_grad_(False)
    loaded = LoadedClassifier("toy-albert", model, toy_tokenizer(), torch.device("cpu"))
    clf = Classifier(loaded)
    variant = clf.encode(EXAMPLE).variant
    with clf.eager_attention():
        weights = clf.attentions([variant])[0]
    with torch.inference_mode():
        batch = padded_batch(clf.loaded, [variant])
        assert read_attention_weights(loaded.eager_model, batch) is None
        whole = loaded.eager_model(**batch, output_attentions=True).attentions
    assert weights.shape[0] == len(whole) == 3
    torch.testing.assert_close(weights, torch.stack([a[0] for a in whole]), rtol=1e-6, atol=1e-7)


def test_concurrent_attention_requests_read_their_own_weights() -> None:
    """Two threads read attention weights from one shared eager view at the same time: each gets
    the weights of its own example (the capture list is per request, a ContextVar)."""
    loaded = toy_bert(seed=5)
    examples = [EXAMPLE, Example(segments=(("bad", "plot", "and", "dull"),), id="toy/other")]
    expected = [scores_on(loaded, "attention_rollout", e, None) for e in examples]
    results: dict[int, list[np.ndarray]] = {0: [], 1: []}
    start = threading.Barrier(2)

    def request(which: int) -> None:
        start.wait(timeout=30)
        for _ in range(30):
            results[which].append(scores_on(loaded, "attention_rollout", examples[which], None))

    threads = [threading.Thread(target=request, args=(which,)) for which in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for which in (0, 1):
        assert len(results[which]) == 30
        for got in results[which]:
            np.testing.assert_allclose(got, expected[which], rtol=1e-6, atol=1e-7)
