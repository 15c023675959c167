"""MaRC and AML (explainers/marc.py, explainers/aml/) on the toy models, and their UI panels.

The toy linear classifier sums its tokens' embeddings; only 'great' (+3 toward positive), 'awful',
'good' and 'bad' (+1 toward negative in the example) carry any signal, so the planted word of
the example below is 'great' (index 3) for the positive class and 'bad' (index 8) for the
negative class.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch

import explainers
from core.classifier import Classifier
from core.types import Attribution, Example
from engine.resources import Resources, training_examples
from explainers import _masking, marc
from explainers.aml import FALLBACK_SOURCE, pretrain_aml
from explainers.aml.model import own_backbone
from ui import mask_panels

GREAT, BAD = 3, 8
FAST_MARC = {"n_steps": 100, "lr": 0.1}
FAST_AML = {"lr": 0.01, "n_train": 64, "n_epochs": 2, "train_batch_size": 8, "n_steps": 5}


def _run(key: str, clf: Classifier, example: Example, target: int, resources: Resources | None = None, **overrides):
    spec = explainers.get(key)
    return explainers.run_explainer(spec, clf, example, target, spec.make_params(overrides), resources=resources)


def _state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _assert_same_state(before: dict[str, torch.Tensor], model: torch.nn.Module) -> None:
    after = model.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(p.grad is None and not p.requires_grad for p in model.parameters())


# --------------------------------------------------------------------------- MaRC building blocks


def test_span_mask_matches_the_gaussian_formula():
    weights = torch.tensor([1.2, 1.2, 1.2])
    widths = torch.tensor([2.0, 2.0, 2.0])
    sigmoid = lambda x: 1 / (1 + math.exp(-x))
    paper = marc.span_mask(weights, widths, "sigma")  # exp(-d^2 / s)
    assert paper[0].item() == pytest.approx(sigmoid(1.2 * (1 + math.exp(-1 / 2) + math.exp(-4 / 2))), abs=1e-6)
    assert paper[1].item() == pytest.approx(sigmoid(1.2 * (1 + 2 * math.exp(-1 / 2))), abs=1e-6)
    code = marc.span_mask(weights, widths, "sigma_squared")  # exp(-d^2 / s^2)
    assert code[0].item() == pytest.approx(sigmoid(1.2 * (1 + math.exp(-1 / 4) + math.exp(-4 / 4))), abs=1e-6)
    # One large weight spreads to its neighbours, less with a narrower width.
    wide = marc.span_mask(torch.tensor([0.0, 0.0, 4.0, 0.0, 0.0]), torch.full((5,), 4.0), "sigma")
    narrow = marc.span_mask(torch.tensor([0.0, 0.0, 4.0, 0.0, 0.0]), torch.full((5,), 0.5), "sigma")
    assert wide[1].item() == pytest.approx(sigmoid(4 * math.exp(-1 / 4)), abs=1e-6)
    assert narrow[1].item() == pytest.approx(sigmoid(4 * math.exp(-1 / 0.5)), abs=1e-6)


def test_rationale_spans_are_maximal_runs():
    assert _masking.rationale_spans(np.array([0.1, 0.6, 0.7, 0.2, 0.9]), 0.5) == [(1, 3), (4, 5)]
    assert _masking.rationale_spans(np.array([0.5, 0.5]), 0.5) == [(0, 2)]
    assert _masking.rationale_spans(np.array([0.1, 0.2]), 0.5) == []


# --------------------------------------------------------------------------- MaRC on the toy model


def test_marc_keeps_the_planted_word(linear_clf, toy_example):
    positive = _run("marc", linear_clf, toy_example, 1, **FAST_MARC)
    assert positive.words[GREAT] == "great"
    assert int(np.argmax(positive.scores)) == GREAT
    assert positive.scores[GREAT] > 0.9 and positive.scores[BAD] < 0.1
    assert np.all((positive.scores >= 0) & (positive.scores <= 1))
    trace = positive.extras["trace"]
    steps = positive.extras["n_steps_run"]
    assert len(trace["loss"]) == steps and steps <= FAST_MARC["n_steps"]
    # In the end the kept words alone keep the class and the rest lose it (final mask, no noise).
    assert positive.extras["p_masked"] > 0.95 and positive.extras["p_complement"] < 0.5
    assert np.mean(trace["p_masked"][-10:]) > np.mean(trace["p_masked"][:10])
    assert trace["mean_mask"][0] > 0.9 > trace["mean_mask"][-1]
    assert all(
        trace["loss"][i] == pytest.approx(sum(trace[t][i] for t in positive.extras["trace_terms"]), abs=1e-4)
        for i in range(steps)
    )
    # One batch of two (masked, complement) per step, each with a gradient, and one without at the end.
    assert positive.forward_passes == 2 * steps + 2 and positive.backward_passes == 2 * steps

    # The heatmap page draws its panel, also after a round trip through JSON (a session bundle).
    assert mask_panels.mask_extras_problem(positive) is None
    assert mask_panels.mask_extras_problem(Attribution.from_json(positive.to_json())) is None

    negative = _run("marc", linear_clf, toy_example, 0, **FAST_MARC)
    assert negative.scores[BAD] > 0.9 and negative.scores[GREAT] < 0.1
    assert any(start <= BAD < end for start, end in negative.extras["rationale_spans"])


def test_marc_rationale_is_a_phrase_around_the_planted_word(linear_clf, toy_example):
    """The Gaussian spans keep the neighbours of 'great' too (one span of several words), where a
    word-by-word method marks 'great' alone: fewer spans than kept words."""
    attribution = _run("marc", linear_clf, toy_example, 1, **FAST_MARC)
    spans = attribution.extras["rationale_spans"]
    kept = sum(attribution.extras["rationale"])
    assert any(start < GREAT < end - 1 for start, end in spans)  # 'great' inside, with a word on each side
    assert len(spans) < kept
    assert attribution.extras["rationale"] == [int(s >= 0.5) for s in attribution.scores]
    # Without the width reward and with narrow initial widths, the mask shrinks to 'great' itself.
    pointwise = _run("marc", linear_clf, toy_example, 1, **FAST_MARC, alpha_width=0.0, init_width=0.1)
    assert pointwise.extras["rationale_spans"] == [[GREAT, GREAT + 1]]


def test_marc_same_seed_same_mask(linear_clf, toy_example):
    first = _run("marc", linear_clf, toy_example, 1, n_steps=40, seed=3)
    again = _run("marc", linear_clf, toy_example, 1, n_steps=40, seed=3)
    other = _run("marc", linear_clf, toy_example, 1, n_steps=40, seed=4)
    np.testing.assert_array_equal(first.scores, again.scores)
    assert first.extras["trace"] == again.extras["trace"]
    assert not np.array_equal(first.scores, other.scores)


def test_marc_complement_keeps_the_special_tokens(bert_clf, toy_example):
    """The complement input (Brinner & Zarrieß 2023, Eq. 3) blends the words only: it replaced
    [CLS] and [SEP] with [PAD] as well, so every step scored a different input than Eq. 3's."""
    params = marc.MarcParams(noise_std=0.0, flip_fraction=0.0)
    run = marc._start(bert_clf, toy_example, 0, 1, params)
    pad = _masking.special_embedding(bert_clf, ("pad",))
    mask = torch.linspace(0.1, 0.9, run.encoded.n_words)
    masked, complement = marc._inputs(run, pad, params, mask)
    special = run.word_index == run.encoded.n_words
    assert special.sum() == 2
    torch.testing.assert_close(masked[special], run.embeds[special])
    torch.testing.assert_close(complement[special], run.embeds[special])
    lam = mask[run.word_index[~special]][:, None]
    torch.testing.assert_close(complement[~special], (1 - lam) * run.embeds[~special] + lam * pad)
    torch.testing.assert_close(masked[~special], lam * run.embeds[~special] + (1 - lam) * pad)


def test_marc_leaves_the_shared_model_unchanged(bert_clf, toy_example):
    before = _state(bert_clf.model)
    attribution = _run("marc", bert_clf, toy_example, 0, n_steps=20)
    _assert_same_state(before, bert_clf.model)
    assert np.all((attribution.scores >= 0) & (attribution.scores <= 1))


# --------------------------------------------------------------------------- AML on the toy model


def test_aml_finds_the_planted_word_in_both_modes(linear_clf, toy_example):
    resources = Resources()
    tuned = _run("aml", linear_clf, toy_example, 1, resources, **FAST_AML)
    assert int(np.argmax(tuned.scores)) == GREAT
    assert np.all((tuned.scores >= 0) & (tuned.scores <= 1))
    trace = tuned.extras["trace"]
    assert len(trace["loss"]) == FAST_AML["n_steps"] + 1 == len(trace["selection_metric"])
    # The kept step is the one with the best AOPC comprehensiveness (ties: the earliest).
    assert tuned.extras["selected_step"] == int(np.argmax(trace["selection_metric"]))
    # Its comprehensiveness is the probability drop when the top word ('great') is deleted...
    words = list(toy_example.words)
    drop = (
        linear_clf.predict_proba([linear_clf.encode(toy_example).variant])[0, 1]
        - linear_clf.predict_proba(
            [linear_clf.encode(Example(segments=(tuple(words[:GREAT] + words[GREAT + 1 :]),))).variant]
        )[0, 1]
    )
    # (10 words: the bins remove the top 1, 1, 1, 2 and 5 words; beside 'great' these carry no signal)
    assert max(trace["selection_metric"]) == pytest.approx(drop, abs=1e-6)
    pretraining = tuned.extras["pretraining"]
    assert (
        pretraining["source"] == "the explained example"
        and pretraining["on_explained_example"]
        and pretraining["n_examples"] == 64
    )
    assert len(pretraining["trace"]["loss"]) == 2 * 64 // 8
    assert pretraining["trace"]["loss"][-1] < pretraining["trace"]["loss"][0]

    one_pass = _run("aml", linear_clf, toy_example, 1, resources, **{**FAST_AML, "mode": "pretrained"})
    assert int(np.argmax(one_pass.scores)) == GREAT
    for attribution in (tuned, one_pass, Attribution.from_json(tuned.to_json())):
        assert mask_panels.mask_extras_problem(attribution) is None
    assert len(one_pass.extras["trace"]["loss"]) == 1 and one_pass.backward_passes == 0
    # One prediction plus one (masked, complement) pair; pre-training is cached and not charged again.
    assert one_pass.forward_passes == 3
    # pAML's single pass is fAML's step 0.
    assert one_pass.extras["trace"]["loss"][0] == pytest.approx(trace["loss"][0], abs=1e-6)
    assert tuned.subword_scores is not None and len(tuned.subword_scores) == len(words)


def test_aml_same_seed_same_mask_and_cached_model_unchanged(bert_clf, toy_example):
    settings = {**FAST_AML, "n_train": 16, "n_epochs": 1, "n_steps": 2}
    params = explainers.get("aml").make_params(settings)
    resources = Resources()
    first = _run("aml", bert_clf, toy_example, 0, resources, **settings)
    pretrained = resources.pretrained(bert_clf, toy_example, params)  # the cached model
    cached = _state(pretrained.model)
    again = _run("aml", bert_clf, toy_example, 0, resources, **settings)
    _assert_same_state(cached, pretrained.model)  # fAML fine-tunes a copy
    np.testing.assert_array_equal(first.scores, again.scores)
    resources.clear()  # retrained from scratch with the same seed: the same mask
    retrained = _run("aml", bert_clf, toy_example, 0, resources, **settings)
    assert resources.pretrained(bert_clf, toy_example, params) is not pretrained
    # Without resources AML trains on the example each time, from the same seed: the same mask.
    uncached = _run("aml", bert_clf, toy_example, 0, **settings)
    np.testing.assert_allclose(first.scores, uncached.scores, atol=1e-6)
    np.testing.assert_allclose(first.scores, retrained.scores, atol=1e-6)
    assert first.extras["pretraining"]["backbone"] == "copy of toy-bert's encoder"


def test_a_split_with_no_example_that_fits_pretrains_per_example(bert_clf, toy_example, monkeypatch):
    """Where the model's training split has no example that fits (MultiRC's passages are all
    longer than pAML's 128 tokens), pAML trains on the explained example: the cache keeps one
    model per example, not the first example's model for every other."""
    import engine.resources

    monkeypatch.setattr(engine.resources, "training_split", lambda clf: ("multirc", "train"))
    monkeypatch.setattr(
        engine.resources, "training_examples", lambda clf, example, n, seed: ([example] * n, FALLBACK_SOURCE)
    )
    params = explainers.get("aml").make_params({**FAST_AML, "n_train": 8, "n_epochs": 1})
    other = Example(segments=(("a", "dull", "plot", "."),), id="toy/other")
    resources = Resources()
    first = resources.pretrained(bert_clf, toy_example, params)
    assert resources.pretrained(bert_clf, other, params) is not first
    assert resources.pretrained(bert_clf, toy_example, params) is first
    # a sentence pair is its segments: the same words cut elsewhere are another input
    pair = Example(segments=(("a", "dull"), ("plot", ".")), id="toy/pair")
    cut_elsewhere = Example(segments=(("a",), ("dull", "plot", ".")), id="toy/pair")
    assert resources.pretrained(bert_clf, cut_elsewhere, params) is not resources.pretrained(bert_clf, pair, params)


def test_aml_leaves_the_shared_model_unchanged(linear_clf, bert_clf, toy_example):
    for clf in (linear_clf, bert_clf):
        before = _state(clf.model)
        _run("aml", clf, toy_example, 1, **{**FAST_AML, "n_train": 16, "n_epochs": 1, "n_steps": 2})
        _assert_same_state(before, clf.model)


def test_aml_training_slice_rule(linear_clf, toy_example):
    examples, source = training_examples(linear_clf, toy_example, 5, seed=0)
    assert source == "the explained example" and examples == [toy_example] * 5


# --------------------------------------------------------------------------- UI panels


# --------------------------------------------------------------------------- several examples in one batch

# Three texts of different lengths (so the batch is padded), each with its planted word elsewhere.
PLANTED = (
    (("the", "movie", "was", "great", "but", "the", "plot", "was", "bad", "."), 1, 3),
    (("it", "is", "a", "bad", "film"), 0, 3),
    (("great", "actors", ",", "a", "fun", "plot", "and", "a", "very", "good", "film", "."), 1, 0),
)


def _planted() -> tuple[list[Example], list[int], list[int]]:
    examples = [Example(segments=(words,), id=f"planted/{i}") for i, (words, _, _) in enumerate(PLANTED)]
    return examples, [target for _, target, _ in PLANTED], [where for _, _, where in PLANTED]


def _model_calls(clf: Classifier):
    """A list that grows by one per call of the classifier's logits model (a forward pre-hook, removed by the caller)."""
    calls: list[int] = []
    handle = clf.logits_model.register_forward_pre_hook(lambda module, args: calls.append(1))
    return calls, handle


@pytest.mark.parametrize("fixture", ["linear_clf", "bert_clf"])
def test_marc_batch_equals_one_example_at_a_time(fixture, request):
    """Each example keeps its own random stream, Adam state and early stop, so the batch gives each
    example what it gets alone (the padding is masked: equal to float rounding) with one model
    call per step instead of one per example and step."""
    clf = request.getfixturevalue(fixture)
    examples, targets, _ = _planted()
    spec = explainers.get("marc")
    params = spec.make_params({"n_steps": 120, "lr": 0.1})
    calls, handle = _model_calls(clf)
    try:
        batched = explainers.run_explainers(spec, clf, examples, targets, params)
        batched_calls = len(calls)
        alone = [explainers.run_explainer(spec, clf, e, t, params) for e, t in zip(examples, targets)]
    finally:
        handle.remove()
    steps = [a.extras["n_steps_run"] for a in alone]
    for together, single in zip(batched, alone):
        np.testing.assert_allclose(together.scores, single.scores, atol=1e-5)
        assert together.extras["n_steps_run"] == single.extras["n_steps_run"]
        np.testing.assert_allclose(together.extras["trace"]["loss"], single.extras["trace"]["loss"], atol=1e-4)
        assert together.extras["p_masked"] == pytest.approx(single.extras["p_masked"], abs=1e-5)
        # each example is charged its own passes: two per step it ran and two for the final mask
        assert (together.forward_passes, together.backward_passes) == (single.forward_passes, single.backward_passes)
        assert together.forward_passes == 2 * together.extras["n_steps_run"] + 2
    assert batched_calls == max(steps) + 1  # one call per step (the longest run) and one for the final masks
    assert len(calls) - batched_calls == sum(steps) + len(examples)


def test_marc_batch_finds_every_planted_word(linear_clf):
    examples, targets, planted = _planted()
    spec = explainers.get("marc")
    attributions = explainers.run_explainers(spec, linear_clf, examples, targets, spec.make_params(FAST_MARC))
    for attribution, where in zip(attributions, planted):
        # the planted word is kept, inside a rationale span, and the kept words keep the class
        assert attribution.scores[where] > 0.9 and attribution.extras["p_masked"] > 0.8
        assert any(start <= where < end for start, end in attribution.extras["rationale_spans"])
    assert attributions[0].scores[BAD] < 0.1  # 'bad' speaks against the positive class


def test_marc_groups_follow_the_batch_size(linear_clf):
    """At batch size 4 the three examples run as two groups of two rows per example at most."""
    examples, targets, _ = _planted()
    spec = explainers.get("marc")
    params = spec.make_params({"n_steps": 30})
    wide = explainers.run_explainers(spec, linear_clf, examples, targets, params)
    narrow_clf = Classifier(linear_clf.loaded, batch_size=4)
    calls, handle = _model_calls(narrow_clf)
    try:
        narrow = explainers.run_explainers(spec, narrow_clf, examples, targets, params)
    finally:
        handle.remove()
    assert len(calls) == 2 * (30 + 1)  # groups of two examples and of one
    for a, b in zip(wide, narrow):
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-6)


class _OnePretrained:
    """AML resources that pre-train one attribution model, on the planted examples, for every
    explained example (the engine's ``Resources`` would train one per toy example: the toy models
    have no training split, so each example is its own training slice)."""

    def __init__(self) -> None:
        self.model = None

    def pretrained(self, clf, example, params, progress=None):
        if self.model is None:
            examples, _, _ = _planted()
            self.model = pretrain_aml(
                clf, examples * (params.n_train // 3), "the planted examples", params, own_backbone
            )
        return self.model


@pytest.mark.parametrize("fixture", ["linear_clf", "bert_clf"])
def test_aml_batch_equals_one_example_at_a_time(fixture, request):
    """fAML fine-tunes a copy per example; the batch stacks the copies (``torch.func.vmap``) and
    gives each example the maps of every step it gets alone, with one classifier call per step."""
    clf = request.getfixturevalue(fixture)
    examples, targets, planted = _planted()
    spec = explainers.get("aml")
    params = spec.make_params(FAST_AML)
    resources = _OnePretrained()
    resources.pretrained(clf, examples[0], params)  # pre-training, before the model's calls are counted
    calls, handle = _model_calls(clf)
    try:
        batched = explainers.run_explainers(spec, clf, examples, targets, params, resources=resources)
        batched_calls = len(calls)
        alone = [
            explainers.run_explainer(spec, clf, e, t, params, resources=resources) for e, t in zip(examples, targets)
        ]
    finally:
        handle.remove()
    for together, single in zip(batched, alone):
        for key in ("loss", "prediction", "sparsity", "inverse", "p_masked", "mean_mask", "selection_metric"):
            np.testing.assert_allclose(together.extras["trace"][key], single.extras["trace"][key], atol=1e-5)
        assert together.extras["selected_step"] == single.extras["selected_step"]
        np.testing.assert_allclose(together.scores, single.scores, atol=1e-5)
        # The linear toy gives several words exactly the same mask value; which of them a removal
        # bin takes first then depends on float rounding (1e-8) that differs between the batch and
        # one example alone, and so does how many of the selection's variants repeat (and are
        # scored once). The training steps' passes are the same.
        assert together.backward_passes == single.backward_passes == 2 * FAST_AML["n_steps"]
        assert abs(together.forward_passes - single.forward_passes) <= 2
    # the classifier's calls: one for the predictions, one per step (5 trained and the last one
    # evaluated) and the selection's scorer chunks (all examples' variants pooled), against as
    # many of each per example alone
    steps = FAST_AML["n_steps"] + 1
    assert 1 + steps + 1 <= batched_calls <= 1 + steps + 2
    assert len(calls) - batched_calls >= len(examples) * (1 + steps + 1)
    if fixture == "linear_clf":
        assert [int(np.argmax(a.scores)) for a in batched] == planted
        assert all(a.extras["pretraining"]["source"] == "the planted examples" for a in batched)


def test_aml_fine_tuning_copies_step_like_a_plain_fine_tuned_model(bert_clf):
    """Two steps of the stacked copies (``_Copies``, the fused AdamW, ``apply_gradients``) leave
    each copy with the weights a deep copy of the pre-trained model gets from torch's plain AdamW
    on its own example. (A linear weight's gradient comes back transposed in memory under vmap;
    handed to the fused AdamW as it was, the updates landed on the transposed elements.)"""
    import copy

    from explainers._masking import Batch, special_embedding
    from explainers.aml import _Copies
    from explainers.aml.model import _HEAD_LR_FACTOR, aml_step, apply_gradients

    examples, targets, _ = _planted()
    params = explainers.get("aml").make_params(FAST_AML)
    pretrained = _OnePretrained().pretrained(bert_clf, examples[0], params)
    fill = special_embedding(bert_clf, ("mask", "unk"))
    encodings = [bert_clf.encode(e) for e in examples]
    condition = torch.eye(bert_clf.num_labels)[targets]
    pad = bert_clf.tokenizer.pad_token_id or 0

    def loss(masks, batch, rows):
        variants = [encodings[i].variant for i in rows] * 2
        logits = lambda e: bert_clf.forward_embeds(e, variants).float()
        return aml_step(bert_clf, masks, batch, condition[rows], params, logits, fill).total.sum()

    copies = _Copies(pretrained.model, len(examples))
    optimizer = copies.optimizer(params.lr)
    batch = Batch.of(encodings, pad, bert_clf.device)
    with torch.enable_grad():
        for _ in range(2):
            apply_gradients(loss(copies.masks(batch, condition), batch, list(range(len(examples)))), optimizer)
            optimizer.zero_grad(set_to_none=True)
    moved = 0.0
    for i in range(len(examples)):
        model = copy.deepcopy(pretrained.model)
        trained = {name: p for name, p in model.named_parameters() if name in copies.weights}
        for p in trained.values():
            p.requires_grad_(True)
        head = [p for name, p in trained.items() if name.startswith("head.")]
        encoder = [p for name, p in trained.items() if not name.startswith("head.")]
        plain = torch.optim.AdamW(
            [{"params": head, "lr": params.lr * _HEAD_LR_FACTOR}, {"params": encoder, "lr": params.lr}]
        )
        one = Batch.of([encodings[i]], pad, bert_clf.device)
        with torch.enable_grad():
            for _ in range(2):
                plain.zero_grad()
                loss(model(one.input_ids, one.attention_mask, one.token_type_ids, condition[[i]]), one, [i]).backward()
                plain.step()
        for name, p in trained.items():
            torch.testing.assert_close(copies.weights[name][i].detach(), p.detach(), rtol=1e-4, atol=1e-6, msg=name)
            moved = max(moved, float((p.detach() - dict(pretrained.model.named_parameters())[name]).abs().max()))
    assert moved > 1e-3  # the steps moved the weights (the comparison is not between two unchanged models)


def test_aml_batch_leaves_the_cached_model_unchanged(bert_clf):
    examples, targets, _ = _planted()
    spec = explainers.get("aml")
    settings = {**FAST_AML, "n_train": 16, "n_epochs": 1, "n_steps": 2}
    params = spec.make_params(settings)
    resources = _OnePretrained()
    pretrained = resources.pretrained(bert_clf, examples[0], params)
    cached = _state(pretrained.model)
    before = _state(bert_clf.model)
    explainers.run_explainers(spec, bert_clf, examples, targets, params, resources=resources)
    _assert_same_state(cached, pretrained.model)
    _assert_same_state(before, bert_clf.model)


def test_spans_html_draws_escaped_phrases():
    words = ("a", "<script>", "b", "c")
    html = mask_panels.spans_html(words, [[0, 2]], np.array([0.8, 0.6, 0.1, 0.2]))
    assert "<script>" not in html and "a &lt;script&gt;</span>" in html
    assert html.count("border-radius") == 1 and "mean mask 0.700" in html


def test_spans_html_draws_spans_that_are_not_word_ranges_as_plain_words():
    """An empty or reversed span once made the page loop for ever (a crafted session bundle)."""
    words, drawn = ("a", "b", "c"), {}

    def draw() -> None:
        for spans in ([[0, 0]], [[2, 1]], [[-1, 2]], [[1, 9]]):
            drawn[str(spans)] = mask_panels.spans_html(words, spans, [0.5, 0.5, 0.5])

    worker = threading.Thread(target=draw, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "spans_html does not return"
    for spans, html in drawn.items():
        assert "border-radius" not in html and html.count("<span") == 3, spans
    assert len(drawn) == 4


def test_malformed_mask_extras_from_a_file_are_named_not_drawn():
    def problem(**extras):
        base = {"trace": {"step": [0], "loss": [1.0]}, "rationale_spans": [[0, 1]]}
        scores = np.array([0.9, 0.1], dtype=np.float32)
        return mask_panels.mask_extras_problem(
            Attribution("marc", "x", 1, ("a", "b"), scores, extras={**base, **extras})
        )

    assert problem() is None
    assert "spans" in problem(rationale_spans=[[0, 0]])
    assert "spans" in problem(rationale_spans=[["0", 1]])
    assert "spans" in problem(rationale_spans="0-1")
    assert "trace" in problem(trace={"loss": ["x"]})
    assert "span_threshold" in problem(span_threshold="high")
    assert "pretraining" in problem(pretraining={"n_examples": "many"})
    assert problem(select_by=None, selected_step=np.int64(0), pretraining={}) is None


def test_masked_preview_and_trace_figure():
    html = mask_panels.masked_preview_html(("kept", "gone"), [0.9, 0.1], fill="[PAD]")
    assert ">kept<" in html and ">[PAD]<" in html and ">gone<" not in html
    trace = {
        "step": [0, 1],
        "loss": [2.0, 1.0],
        "sufficiency": [1.0, 0.5],
        "p_masked": [0.6, 0.9],
        "mean_mask": [1.0, 0.5],
    }
    figure = mask_panels.trace_figure(trace, ["sufficiency", "missing"], selected_step=1)
    assert [t.name for t in figure.data] == ["loss", "sufficiency", "p(target | masked)", "mean mask"]


def test_summary_rows_report_the_kept_step_and_pretraining():
    extras = {
        "trace": {"step": [0, 1, 2], "p_masked": [0.5, 0.9, 0.8], "p_complement": [0.4, 0.1, 0.2]},
        "rationale_spans": [[0, 1]],
        "rationale": [1, 0],
        "selected_step": 1,
        "select_by": "aopc_comprehensiveness",
        "pretraining": {"n_examples": 256, "source": "sst2/train", "runtime_s": 12.34},
    }
    attribution = Attribution("aml", "x", 1, ("a", "b"), np.array([0.9, 0.1]), extras=extras)
    rows = {row[""]: row["value"] for row in mask_panels.summary_rows(attribution)}
    assert rows["kept step"] == "1 by aopc_comprehensiveness"
    assert rows["p(target | masked input)"] == "0.900" and rows["p(target | complement input)"] == "0.100"
    assert rows["pre-trained on"] == "256 examples of sst2/train" and rows["words kept (mask ≥ threshold)"] == "1"


# --------------------------------------------------------------------------- the bundled model


@pytest.fixture(scope="module")
def sst2_clf():
    from core.loaded import load_classifier
    from core.models import bundled_folder

    if bundled_folder("minilm-sst2") is None:
        pytest.skip("the bundled minilm-sst2 model is not trained yet")
    return Classifier(load_classifier("minilm-sst2", device="cpu"))


SENTENCE = (
    *("a", "grim", ",", "flat", "and", "boring", "werewolf", "movie", "that", "refuses"),
    *("to", "develop", "any", "energy", ",", "even", "in", "the", "final", "act"),
)


# An SST-2 dev sentence (negative) whose evidence sits in two places.
TWO_PLACES = (
    *("even", "horror", "fans", "will", "most", "likely", "not", "find", "what", "they", "'re", "seeking"),
    *("with", "trouble", "every", "day", ";", "the", "movie", "lacks", "both", "thrills", "and", "humor", "."),
)


@pytest.mark.slow
def test_marc_on_the_bundled_model(sst2_clf):
    example = Example(segments=(SENTENCE,), id="sentence")
    assert len(SENTENCE) == 20
    # The time budget (under a minute on 2 CPU cores) is measured by `python -m cli bench`
    # (BENCHMARKS.md), not here; the test bounds the work instead.
    marc = _run("marc", sst2_clf, example, 0)
    assert marc.forward_passes <= 2 * 300 + 2
    assert np.all((marc.scores >= 0) & (marc.scores <= 1))
    # The negative phrase is kept as one span and the kept words alone keep the class.
    spans = marc.extras["rationale_spans"]
    assert len(spans) == 1 and spans[0][0] <= SENTENCE.index("boring") < spans[0][1]
    assert marc.extras["p_masked"] > 0.9


@pytest.mark.slow
def test_marc_spans_are_fewer_and_longer_than_saliency_top_k(sst2_clf):
    example = Example(segments=(TWO_PLACES,), id="sst2/dev")
    marc = _run("marc", sst2_clf, example, 0)
    kept = sum(marc.extras["rationale"])
    assert 0 < kept < len(TWO_PLACES) // 2
    saliency = _run("saliency", sst2_clf, example, 0)
    top = np.zeros(len(TWO_PLACES))
    top[np.argsort(-saliency.scores, kind="stable")[:kept]] = 1
    saliency_spans = _masking.rationale_spans(top, 0.5)
    assert len(marc.extras["rationale_spans"]) < len(saliency_spans)
    assert kept / len(marc.extras["rationale_spans"]) > kept / len(saliency_spans)


@pytest.mark.slow
def test_aml_on_the_bundled_model(sst2_clf):
    example = Example(segments=(SENTENCE,), id="sentence")
    attribution = _run("aml", sst2_clf, example, 0, Resources())
    # fAML: one prediction, 6 (masked, complement) pairs, at most 5 selection variants per step.
    assert 13 <= attribution.forward_passes <= 1 + 12 + 6 * 5 and attribution.backward_passes == 10
    assert attribution.extras["pretraining"]["source"].startswith("sst2/")
    assert attribution.extras["pretraining"]["backbone"] == "packaged pre-trained MiniLM encoder"
    assert np.all((attribution.scores >= 0) & (attribution.scores <= 1))
    metric = attribution.extras["trace"]["selection_metric"]
    assert metric[attribution.extras["selected_step"]] == max(metric) >= metric[0]  # fAML never worse than pAML
    top3 = {SENTENCE[i] for i in np.argsort(-attribution.scores)[:3]}
    assert top3 & {"grim", "flat", "boring", "refuses"}


def test_resources_train_once_per_key_and_keys_do_not_wait_for_each_other(linear_clf, toy_example, monkeypatch):
    import threading
    import time

    import engine.resources as resources_module

    calls: list[tuple[int, float, float]] = []

    def fake_pretrain(clf, examples, source, params, backbone, progress=None):
        start = time.perf_counter()
        time.sleep(0.3)
        calls.append((params.seed, start, time.perf_counter()))
        return object()

    monkeypatch.setattr(resources_module, "pretrain_aml", fake_pretrain)
    resources = Resources()
    spec = explainers.get("aml")
    same, other = spec.make_params({"seed": 1}), spec.make_params({"seed": 2})
    got: dict[int, list[object]] = {1: [], 2: []}
    threads = [
        threading.Thread(target=lambda p=p: got[p.seed].append(resources.pretrained(linear_clf, toy_example, p)))
        for p in (same, same, other)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seed for seed, *_ in calls) == [1, 2]  # the shared key trained once
    assert len(got[1]) == 2 and got[1][0] is got[1][1]  # both seed-1 callers got the one model
    (_, start_1, end_1), (_, start_2, end_2) = sorted(calls)
    assert start_2 < end_1 and start_1 < end_2  # the two keys trained at the same time
