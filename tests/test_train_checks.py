"""Training's refusals and figures, the bundled-model listing's skipping of a killed training's
staging folder, and the benchmark's one throughput measurement per sequence shape."""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from core.types import Example
from tests.kill import DEAD_PID


def _adapter(folder: Path) -> None:
    folder.mkdir()
    (folder / "adapter_config.json").write_text("{}")
    (folder / "task.json").write_text("{}")


def test_a_killed_training_s_staging_folder_is_not_a_bundled_model(tmp_path, monkeypatch) -> None:
    import core.models

    monkeypatch.setattr(core.models, "BUNDLED_DIR", tmp_path)
    for name in ("minilm-sst2", ".minilm-sst2.123.abcd1234.tmp", "minilm-odd.tmp", ".hidden"):
        _adapter(tmp_path / name)
    assert core.models.bundled_names() == ["minilm-sst2"]


def test_training_defaults_to_the_bundled_folder_and_clears_its_task_s_leftovers(tmp_path, monkeypatch) -> None:
    from core import train

    models = tmp_path / "models"
    models.mkdir()
    running = f".minilm-sst2.{os.getpid()}.abcd1234.tmp"  # a training of the same task still running
    for name in (f".minilm-sst2.{DEAD_PID}.abcd1234.tmp", f".minilm-esnli.{DEAD_PID}.abcd1234.tmp", running):
        _adapter(models / name)
    staged: list[Path] = []

    def complete(cfg, data_root, staging: Path) -> dict:
        staged.append(staging)
        staging.mkdir()
        return {"accuracy": 0.5}

    monkeypatch.setattr(train, "BUNDLED_DIR", models)
    monkeypatch.setattr(train, "train_classifier", complete)
    monkeypatch.chdir(tmp_path)  # not the folder the default is relative to any more
    train.run_training("sst2", None, None, steps=1, seed=0)
    assert staged[0].parent == models
    # The other task's leftover may belong to a training still running, and so may a live one: they stay.
    assert sorted(p.name for p in models.iterdir()) == [
        f".minilm-esnli.{DEAD_PID}.abcd1234.tmp",
        running,
        "minilm-sst2",
    ]
    assert not (tmp_path / "assets").exists()


def test_a_label_absent_from_gold_and_prediction_counts_f1_one() -> None:
    from core.datasets import HATEXPLAIN_COMMUNITIES
    from core.train_heads import head_figures

    n_labels = len(HATEXPLAIN_COMMUNITIES)
    targets = np.zeros((4, n_labels), dtype=np.float32)
    targets[:2, 0] = 1
    logits = np.full((4, n_labels), -5.0, dtype=np.float32)
    logits[:2, 0] = 5.0  # label 0 right, the others absent everywhere
    figures = head_figures("hatexplain-targets", logits, targets)
    assert figures["macro_f1"] == 1.0 and set(figures["f1_per_label"].values()) == {1.0}


def test_a_constant_prediction_has_no_pearson_r_and_the_card_stays_json() -> None:
    from core.train_heads import head_figures

    gold = np.array([[0.0], [1 / 3], [1.0]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        constant = head_figures("hatexplain-score", np.full((3, 1), 0.5, dtype=np.float32), gold)
        flat_gold = head_figures("hatexplain-score", gold, np.full((3, 1), 0.5, dtype=np.float32))
    assert constant["pearson"] is None and flat_gold["pearson"] is None
    json.dumps(constant, allow_nan=False)
    assert head_figures("hatexplain-score", gold, gold)["pearson"] == 1.0


def _cfg(task: str):
    from core.train.tasks import TrainConfig

    return TrainConfig(task=task, steps=1, seed=0)


def test_an_empty_or_one_class_training_set_is_refused(tmp_path, monkeypatch) -> None:
    import core.train_heads as heads
    from core.train import classifiers

    def examples(labels):
        return [Example(segments=(("a", "b"),), label=label, label_names=("negative", "positive")) for label in labels]

    monkeypatch.setattr(classifiers.ds, "load_examples", lambda *a, **k: examples([None, None]))
    with pytest.raises(ValueError, match=re.escape("sst2: no labelled training example in sst2/train")):
        classifiers.train_classifier(_cfg("sst2"), None, tmp_path / "out")
    monkeypatch.setattr(classifiers.ds, "load_examples", lambda *a, **k: examples([1, 1, None]))
    with pytest.raises(
        ValueError, match=re.escape("sst2: the training examples in sst2/train hold only one class, 'positive'")
    ):
        classifiers.train_classifier(_cfg("sst2"), None, tmp_path / "out")
    monkeypatch.setattr(heads.ds, "hatexplain_annotations", lambda *a, **k: [])
    for task in ("hatexplain-score", "hatexplain-targets"):
        with pytest.raises(ValueError, match=re.escape(f"{task}: no usable training example in hatexplain/val")):
            heads.train_head(_cfg(task), None, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_benchmark_measures_the_throughput_once_per_sequence_shape(toy_bert_loaded, monkeypatch) -> None:
    from core.classifier import Classifier
    from engine import bench

    measured: list[tuple[str, ...]] = []

    def counted(clf, example, mlm=None):
        measured.append(example.words)
        return bench.Throughput(100.0, 50.0, None, 0.01, 0.02)

    monkeypatch.setattr(bench, "measure_throughput", counted)
    examples = [
        Example(segments=(("the", "film", "was", "fun"),), id="a"),
        Example(segments=(("the", "plot", "was", "bad"),), id="b"),  # as long as a
        Example(segments=(("bad",),), id="c"),
        Example(segments=(("the", "film"), ("was", "fun")), id="d"),  # a pair
    ]
    result = bench.run_bench(Classifier(toy_bert_loaded), examples, ["saliency"])
    assert len(measured) == 3 and ("the", "plot", "was", "bad") not in measured
    assert result["examples"] == 4 and result["forward_per_s"] == 100.0
