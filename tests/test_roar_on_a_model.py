"""A ROAR job on a model and a dataset instead of a bundled task (issue 17: "a hub model id plus a
dataset"): a local model folder (a tiny BERT classifier with its own tokenizer, standing in for a
hub id, which the same loader takes) retrained on SST-2's splits. The retrained models are
adapters over that folder: each saved unit reloads through the ordinary loader and predicts what
the job stored; the job's recipe and splits follow engine.roar.recipe."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from core.classifier import Classifier
from core.loaded import load_classifier
from engine.roar.cost import estimate
from engine.roar.recipe import DEFAULT_LR, recipe_of
from engine.roar.report import command_of
from engine.roar.run import execute_job, open_job
from engine.roar.unit import _variant
from engine.runs.store import RunStore
from experiments.roar.job import RoarJob
from experiments.roar.removal import Level

pytestmark = pytest.mark.slow  # trains and saves four small models


def test_the_recipe_of_a_model_job_takes_train_and_dev(model_dirs):
    job = RoarJob(methods=("loo_empty",), model=str(model_dirs[0]), dataset="sst2", train_steps=2)
    recipe = recipe_of(job)
    assert (recipe.train_split, recipe.eval_split, recipe.lr) == ("train", "dev", DEFAULT_LR)
    assert recipe.base_model == str(model_dirs[0])
    hatexplain = RoarJob(methods=("loo_empty",), model=str(model_dirs[0]), dataset="hatexplain", train_steps=2)
    assert (recipe_of(hatexplain).train_split, recipe_of(hatexplain).eval_split) == ("test", "val")
    assert f"--model {model_dirs[0]} --dataset sst2" in command_of(job)


def test_a_job_on_a_model_folder_retrains_adapters_over_it(model_dirs, tmp_path):
    folder = str(model_dirs[0])
    job = RoarJob(
        methods=("loo_empty",), model=folder, dataset="sst2", levels=(Level(20),), seeds=1,
        train_size=12, eval_size=6, train_steps=2,
    )  # fmt: skip
    store = RunStore(tmp_path)
    opened = open_job(job, store)
    assert opened.data.info["base_model"] == folder and opened.data.info["label_names"] == ["negative", "positive"]
    cost, rates = estimate(opened.data)  # measured with the probe's own three-step model
    assert cost.retrains == 4 and rates.seconds_per_step > 0 and set(rates.seconds_per_explanation) == set(job.methods)
    info = execute_job(opened, store)
    assert info.status == "done" and info.units_done == info.units_total == 4
    assert info.model == folder and (info.dataset, info.split) == ("sst2", "dev")
    units = store.units(info.run_id)
    for unit, path in zip(units["unit"], units["path"], strict=True):
        saved = opened.data.model_folder(int(unit))
        assert json.loads((saved / "task.json").read_text())["base_model"] == folder
        assert json.loads((saved / "adapter_config.json").read_text())["base_model_name_or_path"] == folder
        clf = Classifier(load_classifier(str(saved)))
        rows = [r for r in pq.read_table(store.root / path).to_pylist() if r["split"] == "eval"]
        shown = opened.data.eval if not any(r["removed"] for r in rows) else None
        if shown is not None:  # the 0% model: the stored predictions are the reloaded model's
            predicted = np.argmax(clf.predict_proba([_variant(clf, e) for e in shown]), axis=1)
            assert predicted.tolist() == [r["predicted"] for r in rows]
    # the head was trained: the 0% model's head differs from the folder's own
    zero = load_classifier(str(opened.data.model_folder(0))).model
    original = load_classifier(folder).model
    assert not np.allclose(zero.classifier.weight.detach().numpy(), original.classifier.weight.detach().numpy())


def test_a_dataset_without_an_evaluation_split_is_refused(model_dirs, tmp_path):
    job = RoarJob(methods=("loo_empty",), model=str(model_dirs[0]), dataset="examples", train_steps=2)
    with pytest.raises(ValueError, match="needs a training split and an evaluation split"):
        recipe_of(job)


def test_a_job_on_a_data_file_retrains_on_its_train_rows_and_is_keyed_by_its_content(model_dirs, tmp_path):
    import pandas as pd

    from engine.roar.run import prepare_job

    words = ("good", "bad")
    rows = [(f"a {words[i % 2]} film number {i}", i % 2, "dev" if i >= 12 else "train") for i in range(18)]
    path = tmp_path / "films.csv"
    pd.DataFrame(rows, columns=["text", "label", "split"]).to_csv(path, index=False)
    job = RoarJob(
        methods=("loo_empty",), model=str(model_dirs[0]), dataset=f"file:{path}", levels=(Level(20),), seeds=1,
        train_steps=2,
    )  # fmt: skip
    store = RunStore(tmp_path / "results")
    opened = open_job(job, store)
    assert [e.id for e in opened.data.eval] == [f"films/{i}" for i in range(12, 18)]
    assert len(opened.data.train) == 12  # class numbers, named as the starting model names its two classes
    assert opened.data.info["label_names"] == ["negative", "positive"]
    info = execute_job(opened, store)
    assert info.status == "done" and (info.dataset, info.split) == (f"file:{path}", "dev")
    path.write_text(path.read_text().replace("number 13", "number thirteen"))
    with pytest.raises(ValueError, match="no longer matches its encoder, masked-LM or data files"):
        prepare_job(job, store, resume=info.run_id)
