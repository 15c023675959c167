"""The bundled demo models on real data: offline loading, accuracy, size, and engine agreement
with independent computations (Captum's layer IG, hand-made deletions)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import explainers
from core.classifier import Classifier
from core.datasets import load_examples, split_words
from core.loaded import load_classifier
from core.masked_lm import MaskedLM
from core.models import BUNDLED_DIR, bundled_names
from core.types import Example

CLASSIFIERS = ["minilm-sst2", "minilm-esnli", "minilm-movies", "minilm-hatexplain"]
# Each classifier is checked on its full report split: it must reproduce the accuracy its model
# card records (``training.json``) and reach the target where there is one.
REPORT_SPLITS = {
    "minilm-sst2": ("sst2", "dev"),
    "minilm-esnli": ("esnli", "dev"),
    "minilm-movies": ("movies", "test"),
    "minilm-hatexplain": ("hatexplain", "test"),
}
TARGETS = {"minilm-sst2": 0.87, "minilm-esnli": 0.80, "minilm-movies": 0.80}  # HateXplain: reported only
# The regression and multi-label heads (issue 24): their card's figures on HateXplain test, and
# the task they were trained for (``core.train_heads``).
HEADS = {"minilm-hatexplain-score": "hatexplain-score", "minilm-hatexplain-targets": "hatexplain-targets"}
MLM_TARGETS = {"mlm_accuracy": 0.35, "content_top10": 0.40}  # on held-out SST-2 dev sentences
SENTENCE = "a gorgeous , witty and seductive film that never loses its charm , even when the ending drags a little ."


def need_data() -> None:
    if not os.environ.get("ATTRIBUTION_DATA_DIR"):
        pytest.skip("ATTRIBUTION_DATA_DIR is not set: real-data checks need the data folder (make test sets it)")


@pytest.fixture(scope="module")
def sst2() -> Classifier:
    return Classifier(load_classifier("minilm-sst2"))


def test_every_bundled_model_is_present_and_small() -> None:
    assert set(bundled_names()) == {*CLASSIFIERS, *HEADS, "minilm-mlm"}
    for name in bundled_names():
        folder = BUNDLED_DIR / name
        size = sum(f.stat().st_size for f in folder.iterdir())
        assert size <= 8 * 1024 * 1024, f"{name} is {size / 1e6:.1f} MB"
        assert (folder / "README.md").read_text().count("## Measured") == 1


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_bundled_classifier_loads_offline_quickly_and_meets_its_target(name: str) -> None:
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    start = time.perf_counter()
    loaded = load_classifier(name)
    assert time.perf_counter() - start < 10
    need_data()
    dataset, split = REPORT_SPLITS[name]
    card = json.loads((BUNDLED_DIR / name / "training.json").read_text())["figures"]
    assert card["report_split"] == f"{dataset}/{split}"
    examples = load_examples(dataset, split)
    assert len(examples) == card["report_examples"]
    clf = Classifier(loaded)
    fitted = [clf.fit_example(e)[0] for e in examples]
    predicted = clf.predict_proba([clf.encode(e).variant for e in fitted]).argmax(1)
    accuracy = float(np.mean(predicted == np.array([e.label for e in examples])))
    assert accuracy == pytest.approx(card["accuracy"], abs=0.005), f"{name}: {accuracy:.4f} on {dataset}/{split}"
    assert accuracy >= TARGETS.get(name, 0.0), f"{name}: {accuracy:.4f} is below the target {TARGETS[name]}"


@pytest.mark.slow  # the whole test split through each head: about a minute each
@pytest.mark.parametrize("name", HEADS)
def test_bundled_heads_reproduce_their_cards_and_beat_the_trivial_answer(name: str) -> None:
    """The regression head's MSE and Pearson r and the multi-label head's F1 on the whole report
    split equal its card; the score beats predicting the mean, and the tagger finds some targets."""
    need_data()
    from core import datasets as ds
    from core.heads import detect_head
    from core.train_heads import _outputs, _targets, head_figures

    loaded = load_classifier(name)
    card = json.loads((BUNDLED_DIR / name / "training.json").read_text())["figures"]
    assert card["report_split"] == "hatexplain/test"
    rows = ds.hatexplain_annotations("test")
    assert len(rows) == card["report_examples"]
    outputs = _outputs(loaded.model, loaded.tokenizer, [r[0] for r in rows], 512)
    figures = head_figures(HEADS[name], outputs, _targets(HEADS[name], rows))
    for key, value in figures.items():
        assert value == pytest.approx(card[key], abs=0.005), key
    if HEADS[name] == "hatexplain-score":
        assert detect_head(loaded.model.config).kind == "regression"
        assert figures["mse"] < figures["mse_of_mean_baseline"] and figures["pearson"] > 0.3
    else:
        assert detect_head(loaded.model.config).kind == "multi_label"
        assert figures["micro_f1"] > 0.2


@pytest.mark.parametrize(
    ("sentence", "position"),
    [
        ("a group of people are standing in front of a building .", 7),  # e-SNLI style
        ("this is the worst movie i have ever seen .", 8),  # SST-2 style
    ],
)
def test_masked_lm_restores_a_predictable_word(sentence: str, position: int) -> None:
    start = time.perf_counter()
    mlm = MaskedLM.load("minilm-mlm")
    assert time.perf_counter() - start < 10
    words = tuple(sentence.split())
    ((fills, original),) = mlm.fill_words((words,), [position], k=10)
    assert fills[0].token == words[position] and original > 0.5, fills[:3]


def test_masked_lm_reproduces_its_card_and_meets_its_targets() -> None:
    """Masked-word accuracy (15%, 80/10/10) and one content word in the top 10, on all SST-2 dev."""
    need_data()
    from core.models import encoder_path, load_masked_lm, load_tokenizer
    from core.train import evaluate_mlm

    card = json.loads((BUNDLED_DIR / "minilm-mlm" / "training.json").read_text())["figures"]
    held_out = [tuple(w.lower() for w in e.words) for e in load_examples("sst2", "dev")]
    assert card["report_split"] == "sst2/dev" and len(held_out) == card["report_examples"]
    figures = evaluate_mlm(load_masked_lm("minilm-mlm"), load_tokenizer(encoder_path()), held_out)
    for key in ("mlm_accuracy", "content_top1", "content_top10", "top10_mass"):
        assert figures[key] == pytest.approx(card[key], abs=0.005), key
    for key, target in MLM_TARGETS.items():
        assert figures[key] >= target, f"{key} {figures[key]:.4f} is below the target {target}"


def test_loo_empty_matches_hand_made_deletions(sst2: Classifier) -> None:
    example = Example(segments=(tuple(SENTENCE.split()),))
    result = explainers.run_explainer(
        explainers.get("loo_empty"),
        sst2,
        example,
        1,
        explainers.get("loo_empty").make_params({"output": "probability"}),
    )
    tokenizer, model = sst2.tokenizer, sst2.model
    words = SENTENCE.split()

    def probability(text: str) -> float:
        with torch.no_grad():
            return float(torch.softmax(model(**tokenizer(text, return_tensors="pt")).logits, -1)[0, 1])

    original = probability(SENTENCE)
    for i in (1, 3, 8, 15):
        expected = original - probability(" ".join(words[:i] + words[i + 1 :]))
        assert result.scores[i] == pytest.approx(expected, abs=1e-5), words[i]


def test_integrated_gradients_matches_captum_layer_ig(sst2: Classifier) -> None:
    from captum.attr import LayerIntegratedGradients

    example = Example(segments=(tuple(SENTENCE.split()),))
    spec = explainers.get("integrated_gradients")
    ours = explainers.run_explainer(spec, sst2, example, 1, spec.make_params({"n_steps": 64}))
    tokenizer, model = sst2.tokenizer, sst2.model
    enc = tokenizer(SENTENCE, return_tensors="pt")
    ids = enc["input_ids"]
    baseline = ids.clone()
    baseline[0, 1:-1] = tokenizer.pad_token_id

    def forward(input_ids):
        return torch.softmax(model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).logits, -1)[:, 1]

    lig = LayerIntegratedGradients(forward, model.bert.embeddings.word_embeddings)
    attributions = lig.attribute(ids, baselines=baseline, n_steps=64, method="gausslegendre").sum(-1)[0]
    word_ids = enc.word_ids()
    words = SENTENCE.split()
    # The sentence is split on spaces, like split_words: map tokens to words by the tokenizer.
    assert split_words(SENTENCE) == tuple(words)
    theirs = np.zeros(len(words))
    for position, word in enumerate(word_ids):
        if word is not None:
            theirs[word] += float(attributions[position])
    np.testing.assert_allclose(ours.scores, theirs, atol=2e-4)


def test_every_method_gives_finite_scores_on_the_bundled_model(sst2: Classifier) -> None:
    example = Example(segments=(tuple(SENTENCE.split()),))
    fast = [
        k for k, s in explainers.REGISTRY.items() if not s.needs_mlm and k not in {"lime", "kernel_shap", "marc", "aml"}
    ]
    for key in fast:
        result = explainers.run_explainer(explainers.get(key), sst2, example, 1)
        assert np.all(np.isfinite(result.scores)) and np.any(result.scores != 0), key


@pytest.mark.slow
def test_training_command_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    need_data()
    from cli.main import main

    out = tmp_path / "tiny-sst2"
    assert main(["train", "sst2", "--steps", "3", "--train-limit", "96", "--eval-limit", "64", "--out", str(out)]) == 0
    files = {"adapter_model.safetensors", "adapter_config.json", "task.json", "README.md", "training.json"}
    assert {p.name for p in out.iterdir()} == files
    clf = Classifier(load_classifier(str(out)))
    assert clf.label_names == ("negative", "positive")
    out_mlm = tmp_path / "tiny-mlm"
    assert (
        main(["train", "mlm", "--steps", "2", "--train-limit", "64", "--eval-limit", "16", "--out", str(out_mlm)]) == 0
    )
    assert MaskedLM.load(str(out_mlm)).fill_texts(["a [MASK] film"], k=3)[0]

    # Continuing a run starts from the saved adapter: at a vanishing learning rate nothing moves,
    # and the card names the earlier run's command (a fresh start would re-draw the LoRA factors).
    out_next = tmp_path / "tiny-mlm-continued"
    argv = ["train", "mlm", "--steps", "1", "--train-limit", "32", "--eval-limit", "8", "--lr", "1e-12"]
    assert main([*argv, "--init-from", str(out_mlm), "--out", str(out_next), "--bf16"]) == 0
    weights = "adapter_model.safetensors"
    before, after = load_file(str(out_mlm / weights)), load_file(str(out_next / weights))
    assert before.keys() == after.keys()
    for key in before:
        torch.testing.assert_close(after[key], before[key], rtol=0, atol=1e-3)
    card = json.loads((out_next / "training.json").read_text())
    assert [run["config"]["steps"] for run in card["earlier_runs"]] == [2]
    assert card["config"]["bf16"] and "Run 1" in (out_next / "README.md").read_text()
    assert main(["train", "sst2", "--steps", "1", "--init-from", str(out_mlm), "--out", str(tmp_path / "x")]) == 2
    assert "trained for 'mlm'" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_input_marginalization_matches_an_independent_computation(sst2: Classifier) -> None:
    """IM (Pham et al. 2022, Eq. 3-4) on the bundled classifier and masked LM, recomputed here with plain
    transformers calls: top-10 fill-ins at each word, renormalised, log2-odds difference."""
    from core.models import load_masked_lm

    example = Example(segments=(tuple(SENTENCE.split()),))
    spec = explainers.get("im")
    mlm = MaskedLM.load("minilm-mlm")
    ours = explainers.run_explainer(spec, sst2, example, 1, spec.make_params({}), mlm=mlm)
    tokenizer, classifier = sst2.tokenizer, sst2.model
    masked_lm = load_masked_lm("minilm-mlm")
    words = list(example.words)
    enc = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    ids, word_ids = enc["input_ids"][0].tolist(), enc.word_ids()

    def p_positive(batch_ids: list[list[int]]) -> np.ndarray:
        with torch.no_grad():
            logits = classifier(input_ids=torch.tensor(batch_ids)).logits
        return torch.softmax(logits, -1)[:, 1].numpy()

    def log2_odds(p: float) -> float:
        return float(np.log2(p) - np.log2(1 - p))

    original = float(p_positive([ids])[0])
    for i in (0, 1, 4, 10):
        masked = words[:i] + [tokenizer.mask_token] + words[i + 1 :]
        menc = tokenizer(masked, is_split_into_words=True, return_tensors="pt")
        position = int((menc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0])
        with torch.no_grad():
            probs = torch.softmax(masked_lm(**menc).logits[0, position], -1)
        top = torch.topk(probs, 10)
        first = word_ids.index(i)
        last = len(word_ids) - 1 - word_ids[::-1].index(i)
        variants = [ids[:first] + [int(t)] + ids[last + 1 :] for t in top.indices]
        weights = top.values.numpy() / float(top.values.sum())
        expected = float(weights @ p_positive(variants))
        assert ours.scores[i] == pytest.approx(log2_odds(original) - log2_odds(expected), abs=1e-3), words[i]


def test_input_marginalization_vanishes_on_words_the_masked_lm_restores(sst2: Classifier) -> None:
    """Pham et al.'s central claim on real data: a word the masked LM restores with likelihood above
    0.9 gets an IM score far smaller in magnitude than its leave-one-out (empty) score."""
    need_data()
    mlm = MaskedLM.load("minilm-mlm")
    im, loo = explainers.get("im"), explainers.get("loo_empty")
    restored = []  # (|IM|, |LOO|) of words restored with likelihood > 0.9
    for example in load_examples("sst2", "dev", limit=30):
        target = int(np.argmax(sst2.predict_proba([sst2.encode(example).variant])[0]))
        im_scores = explainers.run_explainer(im, sst2, example, target, im.make_params({}), mlm=mlm)
        loo_scores = explainers.run_explainer(loo, sst2, example, target, loo.make_params({}))
        for i, likelihood in enumerate(im_scores.extras["original_likelihood"]):
            if likelihood is not None and likelihood > 0.9:
                restored.append((abs(im_scores.scores[i]), abs(loo_scores.scores[i])))
    assert len(restored) >= 5
    im_abs, loo_abs = np.array(restored).T
    assert np.median(im_abs / np.maximum(loo_abs, 1e-9)) < 0.2
    assert im_abs.mean() < 0.2 * loo_abs.mean()
