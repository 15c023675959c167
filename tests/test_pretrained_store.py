"""AML's pre-trained attribution models on disk (engine/pretrained_store.py): trained once, read
back by a later ``Resources`` (a new process's) with the same weights and the same explanations;
another setting, training slice or model is another entry; a damaged entry is trained again; a
model object handed over is never saved."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import explainers
from core.classifier import Classifier
from core.loaded import load_classifier
from engine import pretrained_store
from engine.resources import Resources, backbone

SETTINGS = {"lr": 0.01, "n_train": 8, "n_epochs": 1, "train_batch_size": 4, "n_steps": 2}


@pytest.fixture(scope="module")
def folder_clf(toy_bert_folder) -> Classifier:
    """The toy BERT read from its folder, so its weights have files to fingerprint."""
    return Classifier(load_classifier(toy_bert_folder, device="cpu"))


def _explain(clf, example, resources, **overrides):
    spec = explainers.get("aml")
    return explainers.run_explainer(
        spec, clf, example, 0, spec.make_params({**SETTINGS, **overrides}), resources=resources
    )


def _entries(folder) -> list:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.exists() else []


def _pretrain_calls(monkeypatch) -> list:
    import engine.resources

    calls = []
    original = engine.resources.pretrain_aml

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(engine.resources, "pretrain_aml", counting)
    return calls


def test_a_saved_model_is_read_back_with_the_same_weights_and_explanations(
    folder_clf, toy_example, tmp_path, monkeypatch
):
    calls = _pretrain_calls(monkeypatch)
    first_resources = Resources(folder=tmp_path)
    first = _explain(folder_clf, toy_example, first_resources)
    assert len(calls) == 1 and len(_entries(tmp_path)) == 1
    params = explainers.get("aml").make_params(SETTINGS)
    trained = first_resources.pretrained(folder_clf, toy_example, params)
    assert first.extras["pretraining"]["loaded_from"] is None

    later = Resources(folder=tmp_path)  # what a new process builds
    again = _explain(folder_clf, toy_example, later)
    assert len(calls) == 1  # read back, not trained
    loaded = later.pretrained(folder_clf, toy_example, params)
    assert loaded is not trained and loaded.loaded_from == str(tmp_path / _entries(tmp_path)[0])
    for (name, a), (_, b) in zip(trained.model.state_dict().items(), loaded.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert all(not p.requires_grad for p in loaded.model.parameters()) and not loaded.model.training
    np.testing.assert_array_equal(first.scores, again.scores)
    summary = again.extras["pretraining"]
    for field in ("backbone", "source", "n_examples", "forward_passes", "backward_passes", "trace"):
        assert summary[field] == first.extras["pretraining"][field]


def test_ready_says_whether_a_request_would_pretrain(folder_clf, toy_example, tmp_path, monkeypatch):
    """What a time estimate asks before counting AML's pre-training: false before, true after in
    the same resources (memory) and in a new one (disk), false for other settings or without a
    folder."""
    calls = _pretrain_calls(monkeypatch)
    params = explainers.get("aml").make_params(SETTINGS)
    first = Resources(folder=tmp_path)
    assert not first.ready(folder_clf, toy_example, params)
    _explain(folder_clf, toy_example, first)
    assert first.ready(folder_clf, toy_example, params) and Resources(folder=tmp_path).ready(
        folder_clf, toy_example, params
    )
    other = explainers.get("aml").make_params({**SETTINGS, "n_epochs": 2})
    assert not Resources(folder=tmp_path).ready(folder_clf, toy_example, other)
    assert not Resources().ready(folder_clf, toy_example, params)
    assert len(calls) == 1  # asking trains nothing


def test_other_settings_or_models_are_other_entries(folder_clf, toy_example, tmp_path, monkeypatch):
    calls = _pretrain_calls(monkeypatch)
    _explain(folder_clf, toy_example, Resources(folder=tmp_path))
    _explain(folder_clf, toy_example, Resources(folder=tmp_path), n_epochs=2)
    assert len(calls) == 2 and len(_entries(tmp_path)) == 2
    # fAML's own steps are not part of the key: read back.
    _explain(folder_clf, toy_example, Resources(folder=tmp_path), n_steps=3)
    assert len(calls) == 2
    # Another training slice (the model has no training split: it trains on the explained example).
    other = toy_example.__class__(segments=(("a", "bad", "movie", "."),), id="toy/1")
    _explain(folder_clf, other, Resources(folder=tmp_path))
    assert len(calls) == 3 and len(_entries(tmp_path)) == 3


def test_a_damaged_entry_is_trained_again_and_replaced(folder_clf, toy_example, tmp_path, monkeypatch):
    calls = _pretrain_calls(monkeypatch)
    first = _explain(folder_clf, toy_example, Resources(folder=tmp_path))
    (entry,) = _entries(tmp_path)
    weights = tmp_path / entry / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # cut short
    again = _explain(folder_clf, toy_example, Resources(folder=tmp_path))
    assert len(calls) == 2 and again.extras["pretraining"]["loaded_from"] is None
    np.testing.assert_allclose(first.scores, again.scores, atol=1e-6)  # same seed, same model
    assert _entries(tmp_path) == [entry]
    json.loads((tmp_path / entry / "card.json").read_text())
    assert pretrained_store.load(tmp_path, entry, folder_clf, backbone) is not None


def test_a_model_object_is_never_saved(bert_clf, toy_example, tmp_path):
    assert not bert_clf.loaded.from_files
    params = explainers.get("aml").make_params(SETTINGS)
    assert pretrained_store.entry_key(bert_clf, params, "example:any") is None
    _explain(bert_clf, toy_example, Resources(folder=tmp_path))
    assert _entries(tmp_path) == []


def test_the_training_data_is_named_by_its_files_not_by_the_explained_example(
    bert_clf, toy_example, tmp_path, monkeypatch
):
    import engine.resources
    from engine.resources import training_digest

    (tmp_path / "sst2").mkdir()
    (tmp_path / "sst2" / "train.tsv").write_text("sentence\tlabel\na fine film\t1\n")
    monkeypatch.setenv("ATTRIBUTION_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(engine.resources, "training_split", lambda clf: ("sst2", "train"))
    other = toy_example.__class__(segments=(("a", "bad", "movie", "."),), id="toy/1")
    first = training_digest(bert_clf, toy_example)
    assert first.startswith("split:sst2/train:") and training_digest(bert_clf, other) == first
    (tmp_path / "sst2" / "train.tsv").write_text("sentence\tlabel\na fine film\t0\n")  # a label changed
    assert training_digest(bert_clf, toy_example) != first
    monkeypatch.setattr(engine.resources, "training_split", lambda clf: None)  # trains on the example
    assert training_digest(bert_clf, toy_example) != training_digest(bert_clf, other)


def test_the_apps_estimate_counts_the_pretraining_until_it_is_done(folder_clf, toy_example, tmp_path, monkeypatch):
    """The heatmap page added AML's one-off pre-training to every estimate, so each new text waited
    for a click though the pre-trained model was already loaded or on disk."""
    import services

    resources = Resources(folder=tmp_path)
    monkeypatch.setattr(services.models, "loaded", lambda name: folder_clf.loaded)
    monkeypatch.setattr(services.estimates, "resources", lambda: resources)
    monkeypatch.setattr(services.estimates, "_step_seconds", lambda model, key, example: 0.01)
    services.estimates._pretrained.clear()
    before = services.estimate_mask_cost("toy", toy_example, "aml", SETTINGS)
    _explain(folder_clf, toy_example, resources)
    kept = services.estimate_mask_cost("toy", toy_example, "aml", SETTINGS)  # the answer is kept a while
    services.estimates._pretrained.clear()  # as PRETRAINED_CHECK_TTL_S later
    after = services.estimate_mask_cost("toy", toy_example, "aml", SETTINGS)
    assert before.pretrain_s > 0 and kept == before and before.note.startswith("pre-training on 8 examples")
    assert after.pretrain_s == 0 and after.seconds == pytest.approx(before.seconds)
    assert after.note == "its pre-trained model is loaded or on disk"  # not the pre-training's note
