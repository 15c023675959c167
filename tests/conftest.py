from __future__ import annotations

import os

import pytest

from core.classifier import Classifier
from core.types import Example
from tests.toy import toy_bert, toy_linear

os.environ.setdefault("HF_HUB_OFFLINE", "1")


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
