from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import torch

from core.classifier import Classifier
from core.types import Example
from tests.toy import VOCAB, toy_bert, toy_linear, toy_tokenizer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# What the commands and pages keep in the results folder (runs, AML's pre-trained models) goes to
# a folder of this test session's, never to the checkout's ./results.
os.environ.setdefault("ATTRIBUTION_RESULTS_DIR", tempfile.mkdtemp(prefix="attribution-test-results-"))


@pytest.fixture(scope="session")
def toy_linear_loaded():
    return toy_linear()


@pytest.fixture(scope="session")
def toy_bert_loaded():
    return toy_bert()


@pytest.fixture
def linear_clf(toy_linear_loaded) -> Classifier:
    return Classifier(toy_linear_loaded)


@pytest.fixture
def bert_clf(toy_bert_loaded) -> Classifier:
    return Classifier(toy_bert_loaded)


@pytest.fixture
def toy_example() -> Example:
    return Example(segments=(("the", "movie", "was", "great", "but", "the", "plot", "was", "bad", "."),), id="toy/0")


@pytest.fixture(scope="session")
def toy_bert_folder(tmp_path_factory) -> str:
    """The tiny BERT classifier (``toy_bert()``) saved as a local folder, for the CLI and the app."""
    folder = tmp_path_factory.mktemp("toy-bert")
    loaded = toy_bert()
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny BERT classifier and masked LM saved as local folders (clf, mlm)."""
    from transformers import BertConfig, BertForMaskedLM

    root = tmp_path_factory.mktemp("models")
    loaded = toy_bert(seed=2)
    loaded.model.save_pretrained(root / "clf")
    toy_tokenizer().save_pretrained(root / "clf")
    torch.manual_seed(3)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertForMaskedLM(config).save_pretrained(root / "mlm")
    toy_tokenizer().save_pretrained(root / "mlm")
    return root / "clf", root / "mlm"
