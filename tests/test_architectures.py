"""Classifiers other than BERT: a RoBERTa with a byte-level BPE tokenizer, and a GPT-2 (a decoder
classifier, which reads its last position).

The bundled models are all BERT with a WordPiece tokenizer, where two things never show:
- a byte-level BPE tokenizer saved without ``add_prefix_space`` (as RoBERTa's are) reads each word
  handed over alone as the start of a text: "movie" became "mo" "vie" instead of "Ġmovie", so the
  model read pieces it rarely saw (``core.models.reads_words_as_text``);
- a decoder classifier reads the last position of ``inputs_embeds`` whatever it holds, so every
  gradient method of a padded batch of examples read padding (saliency 34-71% away from the same
  example explained alone); ``core.padding`` finds that out and runs such rows by length;
- a tokenizer that adds no special tokens (GPT-2's) leaves no token at all once every word is
  removed, which the model could not read.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import explainers
from core.classifier import Classifier
from core.loaded import LoadedClassifier
from core.masked_lm import MaskedLM
from core.models import load_tokenizer, reads_words_as_text
from core.padding import ONE_ROW, PADS, SAME_LENGTH, padding_rule, parts
from core.types import Example
from tests.test_explainers import _fast_params, toy_mlm  # noqa: F401 - toy_mlm is a fixture
from tests.toy import toy_bert, toy_tokenizer

CORPUS = [
    "the movie was good and the film was fun",
    "a gorgeous movie that never quite lands",
    "the acting is bad but the music is great",
    "an overlong slog of a movie with a good cast",
    "the film is witty , seductive and fun",
] * 40
EXAMPLES = [
    Example((("the", "movie", "was", "good"),)),
    Example((("a", "gorgeous", "film", "that", "never", "quite", "lands"),)),
    Example((("bad", "music"),)),
]
LABELS = {"num_labels": 2, "id2label": {0: "negative", 1: "positive"}, "label2id": {"negative": 0, "positive": 1}}


@pytest.fixture(scope="module")
def bpe_folder(tmp_path_factory) -> str:
    """A RoBERTa tokenizer (byte-level BPE trained on ``CORPUS``) saved as RoBERTa's are, without
    ``add_prefix_space``."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizer

    folder = tmp_path_factory.mktemp("roberta")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))  # vocab.json and merges.txt
    lines = (folder / "merges.txt").read_text().splitlines()
    merges = [tuple(line.split()) for line in lines if line and not line.startswith("#")]
    RobertaTokenizer(vocab=json.loads((folder / "vocab.json").read_text()), merges=merges).save_pretrained(folder)
    return str(folder)


def _roberta(tokenizer, masked_lm: bool = False) -> torch.nn.Module:
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaForSequenceClassification

    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=130, pad_token_id=tokenizer.pad_token_id, type_vocab_size=1, **LABELS,
    )  # fmt: skip
    return (RobertaForMaskedLM if masked_lm else RobertaForSequenceClassification)(config).eval().requires_grad_(False)


def _gpt2(pad_token_id: int | None) -> LoadedClassifier:
    from transformers import GPT2Config, GPT2ForSequenceClassification

    torch.manual_seed(0)
    tokenizer = toy_tokenizer()
    config = GPT2Config(
        vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=64, pad_token_id=pad_token_id, **LABELS
    )
    model = GPT2ForSequenceClassification(config).eval().requires_grad_(False)
    return LoadedClassifier("toy-gpt2", model, tokenizer, torch.device("cpu"))


def test_a_bpe_tokenizer_saved_without_prefix_spaces_reads_each_word_as_running_text_does(bpe_folder: str) -> None:
    from transformers import AutoTokenizer

    as_saved = AutoTokenizer.from_pretrained(bpe_folder)
    words = ["a", "gorgeous", "movie"]
    split = as_saved.convert_ids_to_tokens(as_saved(words, is_split_into_words=True)["input_ids"])
    assert "Ġmovie" not in split and not reads_words_as_text(as_saved)  # the probe sees what went wrong
    loaded = load_tokenizer(bpe_folder)
    assert reads_words_as_text(loaded)
    encoded = loaded(words, is_split_into_words=True)
    assert loaded.convert_ids_to_tokens(encoded["input_ids"])[-2:] == ["Ġmovie", "</s>"]
    assert encoded["input_ids"] == loaded(" ".join(words))["input_ids"]  # the words as running text
    assert encoded.word_ids()[1:-1] == sorted(encoded.word_ids()[1:-1])


def test_the_masked_lms_original_word_probability_is_that_of_the_words_own_token(bpe_folder: str) -> None:
    """The probability of the masked word is read at the token the word is spelled with in the text
    ("Ġmovie"), not at a vocabulary entry of the bare word ("movie", a text's first word)."""
    tokenizer = load_tokenizer(bpe_folder)
    mlm = MaskedLM("toy-roberta-mlm", _roberta(tokenizer, masked_lm=True), tokenizer, torch.device("cpu"))
    assert len(tokenizer(["movie"], is_split_into_words=True, add_special_tokens=False)["input_ids"]) == 1
    ((fills, original),) = mlm.fill_words((("the", "movie", "was", "good"),), [1], k=len(tokenizer))
    by_token = {fill.token: fill.probability for fill in fills}
    assert original == pytest.approx(by_token["Ġmovie"]) and original != pytest.approx(by_token.get("movie", -1))


@pytest.mark.parametrize(
    ("make", "rule"),
    [
        (lambda: toy_bert(seed=1), PADS),
        # Read at the last real token (core.last_token): transformers reads embeddings at the last
        # position, padding or not, and refuses batches without a pad id.
        (lambda: _gpt2(pad_token_id=0), PADS),
        (lambda: _gpt2(pad_token_id=None), PADS),
    ],
)
def test_the_padding_rule_is_what_the_model_does_with_padding(make, rule: str) -> None:
    assert padding_rule(Classifier(make())) == rule


@pytest.mark.parametrize(("pad_token_id", "rule"), [(0, SAME_LENGTH), (None, ONE_ROW)])
def test_a_decoder_read_through_transformers_head_pads_by_length_or_not_at_all(pad_token_id, rule: str) -> None:
    """Without the last-token reading (a model of another structure fails its probe), transformers'
    head reads ids right but embeddings at the last position, and refuses batches without a pad id."""
    loaded = _gpt2(pad_token_id)
    assert loaded.reads_last_token
    loaded._last_token = False
    assert padding_rule(Classifier(loaded)) == rule


def test_the_last_token_logits_are_transformers_own_for_each_row_alone() -> None:
    """GPT-2's logits read at each row's last real token, three rows padded together, as ids and as
    embeddings, equal transformers' logits of each row alone; an encoder is not read that way."""
    from core.last_token import last_token_logits

    assert not toy_bert(seed=1).reads_last_token
    model = _gpt2(pad_token_id=0).model
    lengths = [3, 6, 1]
    ids = torch.arange(18).reshape(3, 6) % 50 + 5
    mask = (torch.arange(6) < torch.tensor(lengths)[:, None]).long()
    alone = torch.cat([model(input_ids=row[None, :n]).logits for row, n in zip(ids, lengths, strict=True)])
    embeds = model.get_input_embeddings()(ids)
    torch.testing.assert_close(last_token_logits(model, mask, input_ids=ids), alone, atol=1e-5, rtol=0)
    torch.testing.assert_close(last_token_logits(model, mask, inputs_embeds=embeds), alone, atol=1e-5, rtol=0)
    transformers_own = model(inputs_embeds=embeds, attention_mask=mask).logits  # the last position, padding or not
    assert not torch.allclose(transformers_own, alone, atol=1e-3)


def test_parts_keep_every_row_once() -> None:
    lengths = [5, 3, 5, 7, 3]
    assert parts(PADS, lengths) == [[0, 1, 2, 3, 4]]
    assert parts(SAME_LENGTH, lengths) == [[0, 2], [1, 4], [3]]
    assert parts(SAME_LENGTH, [4, 4]) == [[0, 1]]
    assert parts(ONE_ROW, lengths) == [[0], [1], [2], [3], [4]]


@pytest.fixture(scope="module")
def models(bpe_folder: str, toy_mlm: MaskedLM) -> dict[str, tuple[LoadedClassifier, MaskedLM]]:  # noqa: F811
    tokenizer = load_tokenizer(bpe_folder)
    roberta = LoadedClassifier("toy-roberta", _roberta(tokenizer), tokenizer, torch.device("cpu"))
    roberta_mlm = MaskedLM("toy-roberta-mlm", _roberta(tokenizer, masked_lm=True), tokenizer, torch.device("cpu"))
    models = {"roberta": (roberta, roberta_mlm), "gpt2": (_gpt2(pad_token_id=0), toy_mlm)}
    return models | {"gpt2 without a pad id": (_gpt2(pad_token_id=None), toy_mlm)}


@pytest.mark.parametrize("architecture", ["roberta", "gpt2", "gpt2 without a pad id"])
@pytest.mark.parametrize("key", list(explainers.REGISTRY))
def test_every_method_explains_examples_together_as_it_explains_each_alone(models, architecture: str, key: str) -> None:
    """Every registered method on each architecture: one finite score per word, and three examples
    of different lengths explained together (padded passes, pooled scorer calls) get the scores
    each gets alone."""
    loaded, mlm = models[architecture]
    spec = explainers.get(key)
    clf = Classifier(loaded)
    params = _fast_params(spec, seed=3)
    together = explainers.run_explainers(spec, clf, EXAMPLES, [1, 0, 1], params, mlm=mlm)
    for example, target, found in zip(EXAMPLES, [1, 0, 1], together, strict=True):
        alone = explainers.run_explainer(spec, clf, example, target, dataclasses.replace(params), mlm=mlm)
        assert found.scores.shape == (len(example.words),) and np.all(np.isfinite(found.scores))
        scale = float(np.max(np.abs(alone.scores))) or 1.0
        np.testing.assert_allclose(found.scores, alone.scores, rtol=1e-3, atol=1e-4 * scale, err_msg=key)


def test_a_text_without_tokens_is_read_as_the_end_of_text_token(bpe_folder: str) -> None:
    """GPT-2's tokenizer adds no special tokens, so removing a text's only word leaves no token: that
    row is read as "<|endoftext|>" alone (padded with the rows of other lengths: no pad id). Leave-
    one-out of a one-word text is then the log2-odds of the word less those of <|endoftext|>, by hand."""
    from transformers import GPT2Config, GPT2ForSequenceClassification, GPT2Tokenizer

    vocab = json.loads((Path(bpe_folder) / "vocab.json").read_text())
    end = "<|endoftext|>"
    vocab[end] = len(vocab)
    lines = (Path(bpe_folder) / "merges.txt").read_text().splitlines()
    merges = [tuple(line.split()) for line in lines if line and not line.startswith("#")]
    tokenizer = GPT2Tokenizer(vocab=vocab, merges=merges, unk_token=end, bos_token=end, eos_token=end)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=64, **LABELS)
    model = GPT2ForSequenceClassification(config).eval().requires_grad_(False)
    clf = Classifier(LoadedClassifier("toy-gpt2-bpe", model, tokenizer, torch.device("cpu")))
    example = Example((("movie",),))
    found = explainers.run_explainer(explainers.get("loo_empty"), clf, example, 1)
    assert clf.padding == PADS

    def log2_odds(ids: list[int]) -> float:  # of the positive class, leave-one-out's default space
        logits = model(torch.tensor([ids])).logits[0].double()
        return float(logits[1] - logits[0]) / math.log(2)

    word = tokenizer(["movie"], is_split_into_words=True)["input_ids"]
    assert found.scores[0] == pytest.approx(log2_odds(word) - log2_odds([vocab[end]]), abs=1e-5)


def test_subwords_are_shown_as_the_text_they_stand_for(models) -> None:
    """The subword view's pieces: RoBERTa's "Ġgorge" "ous" show as "gorge" "ous"; BERT's pieces
    keep their WordPiece marks."""
    loaded, _ = models["roberta"]
    example = Example((("a", "gorgeous", "moviegoer"),))
    clf = Classifier(loaded)
    found = explainers.run_explainer(explainers.get("saliency"), clf, example, 1)
    tokens = clf.tokenizer.convert_ids_to_tokens(list(clf.encode(example).input_ids[1:-1]))
    assert tokens[0] == "Ġa" and len(tokens) > 3 and not tokens[-1].startswith("Ġ")  # "moviegoer" in pieces
    assert found.subwords == tuple(token.removeprefix("Ġ") for token in tokens)
    bert = Classifier(toy_bert(seed=1))
    found = explainers.run_explainer(explainers.get("saliency"), bert, Example((("the", "unbelievable"),)), 1)
    expected = bert.tokenizer.convert_ids_to_tokens(
        list(bert.encode(Example((("the", "unbelievable"),))).input_ids[1:-1])
    )
    assert found.subwords == tuple(expected)


def test_a_tokenizer_that_refuses_the_prefix_space_option_loads_as_it_is(bpe_folder: str, monkeypatch) -> None:
    from transformers import AutoTokenizer

    plain = AutoTokenizer.from_pretrained.__func__  # type: ignore[attr-defined]

    def refusing(cls, source, *args, **kwargs):
        if "add_prefix_space" in kwargs:
            raise TypeError("unexpected keyword argument 'add_prefix_space'")
        return plain(cls, source, *args, **kwargs)

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", classmethod(refusing))
    assert not reads_words_as_text(load_tokenizer(bpe_folder))  # loaded, words read as before


def test_a_runs_unit_sizing_cuts_lengths_where_the_loaded_model_does(bpe_folder: str, tmp_path: Path) -> None:
    """A run sizes its units by the tokens the model reads of each example, read without loading
    the weights (``engine.runs.worker.token_lengths``); for a saved RoBERTa with 130 positions that
    is 128 (its positions start two places later), the loaded model's ``max_length``."""
    import shutil

    from core.loaded import load_classifier
    from engine.runs.worker import token_lengths

    folder = tmp_path / "roberta-classifier"
    shutil.copytree(bpe_folder, folder)
    _roberta(load_tokenizer(bpe_folder)).save_pretrained(folder)
    lengths, read = token_lengths(str(folder), [Example((("movie",) * 300,)), Example((("movie",) * 3,))])
    assert lengths == [302, 5] and read == [128, 5]  # <s> ... </s>; cut at 130 - 2
    assert load_classifier(str(folder), device="cpu").max_length == 128


def test_a_roberta_reads_as_many_tokens_as_its_tokenizer_counts() -> None:
    """RoBERTa's two extra positions cap its embeddings, not its tokenizer's ``model_max_length``:
    a ROAR unit capped at 128 tokens read 126 of the 128 it was trained on; roberta-base reads
    512."""
    from types import SimpleNamespace

    from core.models import readable_length

    def roberta(positions: int):
        return SimpleNamespace(model_type="roberta", max_position_embeddings=positions)

    assert readable_length(roberta(514), SimpleNamespace(model_max_length=128)) == 128
    assert readable_length(roberta(514), SimpleNamespace(model_max_length=512)) == 512
    assert readable_length(roberta(130), SimpleNamespace(model_max_length=int(1e30))) == 128
    bert = SimpleNamespace(model_type="bert", max_position_embeddings=512)
    assert readable_length(bert, SimpleNamespace(model_max_length=64)) == 64
