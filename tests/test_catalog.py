"""The model catalog: names, kinds, label orders and lookups (no model is loaded)."""

from __future__ import annotations

import dataclasses

import pytest

from core.catalog import CATALOG, CatalogEntry, classifiers, find, masked_lms
from core.datasets import DATASET_NAMES, ESNLI_LABELS, HATEXPLAIN_LABELS

BUNDLED = {
    "minilm-sst2", "minilm-esnli", "minilm-movies", "minilm-hatexplain", "minilm-hatexplain-score",
    "minilm-hatexplain-targets", "minilm-mlm",
}  # fmt: skip
HUB_CLASSIFIERS = {
    "textattack/bert-base-uncased-SST-2",
    "distilbert-base-uncased-finetuned-sst-2-english",
    "textattack/roberta-base-SST-2",
    "cross-encoder/nli-distilroberta-base",
    "Hate-speech-CNERG/bert-base-uncased-hatexplain",
}
HUB_MLMS = {"bert-base-uncased", "roberta-base", "distilbert-base-uncased"}


def test_names_are_unique_and_complete():
    names = [e.name for e in CATALOG]
    assert len(names) == len(set(names))
    assert set(names) == BUNDLED | HUB_CLASSIFIERS | HUB_MLMS
    assert {e.name for e in CATALOG if e.source == "bundled"} == BUNDLED


def test_fields_are_valid():
    for e in CATALOG:
        assert e.source in ("bundled", "hub"), e.name
        assert e.kind in ("classifier", "masked-lm"), e.name
        assert e.description, e.name
        assert e.dataset is None or e.dataset in DATASET_NAMES, e.name
        if e.kind == "classifier":  # a regression head has one output, every other at least two
            least = 1 if e.name == "minilm-hatexplain-score" else 2
            assert len(e.label_names) >= least and len(set(e.label_names)) == len(e.label_names), e.name
        else:
            assert e.label_names == () and not e.pair and e.dataset is None, e.name
        if e.source == "bundled":
            assert e.name.startswith("minilm-") and "/" not in e.name


def test_entries_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        CATALOG[0].name = "other"  # type: ignore[misc]
    assert isinstance(CATALOG, tuple) and all(isinstance(e, CatalogEntry) for e in CATALOG)


def test_bundled_models():
    esnli = find("minilm-esnli")
    assert esnli.pair and esnli.label_names == ESNLI_LABELS == ("entailment", "neutral", "contradiction")
    assert esnli.dataset == "esnli"
    hate = find("minilm-hatexplain")
    assert hate.label_names == HATEXPLAIN_LABELS == ("hatespeech", "normal", "offensive")
    assert find("minilm-sst2").label_names == ("negative", "positive")
    assert find("minilm-movies").dataset == "movies"
    assert find("minilm-hatexplain-score").label_names == ("hateful or offensive (share of annotators)",)
    assert len(find("minilm-hatexplain-targets").label_names) == 7
    mlm = find("minilm-mlm")
    assert mlm.kind == "masked-lm" and "MiniLM-MLM (locally trained)" in mlm.description


def test_hub_label_orders():
    nli = find("cross-encoder/nli-distilroberta-base")
    assert nli.pair and nli.label_names == ("contradiction", "entailment", "neutral")
    assert nli.dataset is None  # its order is not e-SNLI's: labels must be mapped by name
    assert set(nli.label_names) == set(ESNLI_LABELS)
    for name in ("textattack/bert-base-uncased-SST-2", "distilbert-base-uncased-finetuned-sst-2-english"):
        assert find(name).label_names == ("negative", "positive") and find(name).dataset == "sst2"
    assert find("Hate-speech-CNERG/bert-base-uncased-hatexplain").dataset == "hatexplain"


def test_lookups():
    assert {e.name for e in classifiers()} == (BUNDLED - {"minilm-mlm"}) | HUB_CLASSIFIERS
    assert {e.name for e in masked_lms()} == HUB_MLMS | {"minilm-mlm"}
    assert {e.name for e in classifiers("bundled")} == BUNDLED - {"minilm-mlm"}
    assert [e.name for e in masked_lms("bundled")] == ["minilm-mlm"]
    assert all(e.kind == "classifier" for e in classifiers())
    assert find("no-such-model") is None
    assert find("ROBERTA-BASE").name == "roberta-base"
    assert {e.name for e in classifiers() if e.dataset == "sst2"} == {
        "minilm-sst2",
        "textattack/bert-base-uncased-SST-2",
        "distilbert-base-uncased-finetuned-sst-2-english",
        "textattack/roberta-base-SST-2",
    }
