"""The logits-only view of the shared model (``core.first_token_view``): its last layer computed at
the first token only. Same logits and input gradients as the full model on padded batches of real
sentences, the shared model untouched, and the full model kept where the view does not fit."""

from __future__ import annotations

import torch
from torch import nn
from transformers import BertForSequenceClassification

from core.attention_view import eager_view
from core.classifier import Classifier
from core.first_token_view import FirstTokenLayer, first_token_view
from core.loaded import LoadedClassifier, load_classifier
from core.padding import padded_batch
from core.types import Example
from tests.toy import toy_bert, toy_tokenizer

SENTENCES = [
    "a gorgeous , witty , seductive movie .",
    "the story is too predictable and the characters are thin , but the cast never stops trying",
    "it 's not a bad film",
    "bad",
]


def _padded_batch(clf: Classifier) -> dict[str, torch.Tensor]:
    variants = [clf.encode(Example(segments=(tuple(s.split()),))).variant for s in SENTENCES]
    return padded_batch(clf.loaded, variants)


def test_the_view_gives_the_full_models_logits_on_padded_real_sentences() -> None:
    loaded = load_classifier("minilm-sst2")
    clf = Classifier(loaded)
    batch = _padded_batch(clf)
    assert batch["attention_mask"].sum(1).unique().numel() == len(SENTENCES)  # every row padded differently
    view = loaded.logits_model
    assert isinstance(view.bert.encoder.layer[-1], FirstTokenLayer)
    assert type(loaded.model.bert.encoder.layer[-1]).__name__ == "BertLayer"  # the shared model keeps its layer
    shared = {id(p) for p in loaded.model.parameters()}
    assert {id(p) for p in view.parameters()} == shared  # the same weights, no copy
    with torch.inference_mode():
        full = loaded.model(**batch).logits
        pruned = view(**batch).logits
    torch.testing.assert_close(pruned, full, atol=1e-5, rtol=0)
    assert not torch.equal(full[0], full[1])  # the rows differ: the comparison is not of constants


def test_input_gradients_through_the_view_equal_the_full_models() -> None:
    loaded = load_classifier("minilm-sst2")
    clf = Classifier(loaded)
    batch = _padded_batch(clf)
    ids = batch.pop("input_ids")

    def gradient(model: nn.Module) -> torch.Tensor:
        embeds = loaded.model.get_input_embeddings()(ids).detach().requires_grad_(True)
        with torch.enable_grad():
            logits = model(inputs_embeds=embeds, **batch).logits
            (grad,) = torch.autograd.grad(logits[:, 1].sum(), embeds)
        return grad

    full, pruned = gradient(loaded.model), gradient(loaded.logits_model)
    assert full.abs().max() > 1e-3
    torch.testing.assert_close(pruned, full, atol=1e-5, rtol=1e-4)


def test_the_classifier_scores_through_the_view_and_attention_weights_through_the_full_model() -> None:
    loaded = toy_bert(seed=3)
    clf = Classifier(loaded)
    calls = {"view": 0, "full": 0}
    hooks = [
        loaded.logits_model.register_forward_pre_hook(lambda *_: calls.__setitem__("view", calls["view"] + 1)),
        loaded.model.register_forward_pre_hook(lambda *_: calls.__setitem__("full", calls["full"] + 1)),
    ]
    try:
        variants = [clf.encode(Example(segments=(("good", "movie"),))).variant]
        clf.predict_proba(variants)
        assert calls == {"view": 1, "full": 0}
        with clf.eager_attention():
            layers = clf.attentions(variants)
        assert layers[0].shape[-2:] == (4, 4)  # every query's row: the eager view is not the pruned one
    finally:
        for hook in hooks:
            hook.remove()


def test_the_eager_kernel_view_fits_too() -> None:
    loaded = toy_bert(seed=1, attention="eager")
    view = first_token_view(loaded.model)
    assert view is not None
    fused = toy_bert(seed=1)
    pruned_eager = first_token_view(eager_view(fused.model))
    assert pruned_eager is not None
    ids = torch.tensor([[2, 5, 6, 7, 3], [2, 5, 3, 0, 0]])
    mask = (ids != 0).long()
    with torch.inference_mode():
        torch.testing.assert_close(
            view(input_ids=ids, attention_mask=mask).logits,
            loaded.model(input_ids=ids, attention_mask=mask).logits,
            atol=1e-5,
            rtol=0,
        )


class _MeanPooled(BertForSequenceClassification):
    """A BERT whose head reads the mean of every position, not the first token."""

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        weights = attention_mask[..., None].float()
        logits = self.classifier((hidden * weights).sum(1) / weights.sum(1))
        return type("Output", (), {"logits": logits})()


def test_a_head_that_reads_other_positions_keeps_the_full_model() -> None:
    config = toy_bert().model.config
    model = _MeanPooled(config).eval()
    assert first_token_view(model) is None  # the probe's logits differ: the view is refused
    loaded = LoadedClassifier("mean-pooled", model, toy_tokenizer(), torch.device("cpu"))
    assert loaded.logits_model is model


def test_a_faulty_replacement_is_caught_by_the_check(monkeypatch) -> None:
    loaded = toy_bert(seed=2)

    def wrong(self, hidden_states, attention_mask=None, *args, **kwargs):
        return hidden_states[:, :1] * 0.5

    monkeypatch.setattr(FirstTokenLayer, "forward", wrong)
    assert first_token_view(loaded.model) is None
    assert loaded.logits_model is loaded.model
