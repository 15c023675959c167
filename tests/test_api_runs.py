"""``api.run``, ``api.runs`` and ``api.open_run``: dataset runs kept in the run store from a
notebook, under the ids the command line gives them, read back as ``api.evaluate`` returns a slice."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import api
from api.runs import RUNS_COLUMNS
from core.models import config_head_kind
from engine.runs.store import RunStore

METHODS = ["loo_empty", "saliency", "random"]
METRICS = ["deletion", "comprehensiveness"]


def assert_same_scores(found, expected) -> None:
    """To float rounding: a run groups its examples otherwise than ``evaluate`` (length order), and
    the toy model's leave-one-out scores (about 1e-5) are differences of float32 log-odds, each
    rounded to about 1e-8."""
    np.testing.assert_allclose(found, expected, rtol=1e-4, atol=1e-7)


def test_a_run_equals_evaluate_and_the_same_settings_read_it_back(toy_bert_folder, tmp_path):
    first = api.run(toy_bert_folder, "examples", "sst2", METHODS, METRICS, limit=5, seed=3, chunk_size=2,
                    results_dir=tmp_path)  # fmt: skip
    direct = api.evaluate(toy_bert_folder, "examples", METHODS, METRICS, split="sst2", limit=5, seed=3)
    ours, theirs = first.per_example(), direct.per_example()
    pd.testing.assert_frame_equal(ours.drop(columns="id"), theirs.drop(columns="id"), rtol=1e-5)
    summary = first.summary()
    assert np.allclose(summary["mean"], direct.summary()["mean"], rtol=1e-5, equal_nan=True)
    [listed] = api.runs(tmp_path).to_dict("records")
    assert tuple(listed) == RUNS_COLUMNS  # the empty store's columns too
    assert (listed["status"], listed["rows_done"], listed["rows_total"]) == ("done", 5, 5)
    assert listed["methods"] == METHODS and listed["metrics"] == METRICS
    passes = RunStore(tmp_path).get(listed["run_id"]).forward_passes
    again = api.run(toy_bert_folder, "examples", "sst2", METHODS, METRICS, limit=5, seed=3, chunk_size=2,
                    results_dir=tmp_path)  # fmt: skip
    assert len(api.runs(tmp_path)) == 1 and RunStore(tmp_path).get(listed["run_id"]).forward_passes == passes
    with pytest.warns(
        UserWarning, match=f"chunk_size=3 ignored: the stored run {listed['run_id']} keeps its units of 2"
    ):
        api.run(toy_bert_folder, "examples", "sst2", METHODS, METRICS, limit=5, seed=3, chunk_size=3,
                results_dir=tmp_path)  # fmt: skip
    pd.testing.assert_frame_equal(again.per_example(), ours)
    shown = api.open_run(listed["run_id"], tmp_path).explanation(2)
    expected = direct.explanation(2)
    assert shown.words == expected.words and shown.target == expected.target
    assert_same_scores(shown["loo_empty"].scores, expected["loo_empty"].scores)


def test_a_run_stopped_part_way_opens_with_its_finished_examples_by_position(toy_bert_folder, tmp_path):
    class Stop(Exception):
        pass

    def stop_after_one_unit(fraction: float, message: str) -> None:
        if message == "2 of 5 examples":
            raise Stop

    with pytest.raises(Stop):
        api.run(toy_bert_folder, "examples", "sst2", METHODS, METRICS, limit=5, seed=3, chunk_size=2,
                results_dir=tmp_path, progress=stop_after_one_unit)  # fmt: skip
    [listed] = api.runs(tmp_path).to_dict("records")
    assert (listed["status"], listed["rows_done"]) == ("failed", 2)
    partial = api.open_run(listed["run_id"], tmp_path)
    positions = sorted(partial.per_example()["example"].unique())
    assert len(positions) == 2
    assert partial.partial == "failed, 2 of 5 examples" and ": failed, 2 of 5 examples; methods" in repr(partial)
    whole = api.evaluate(toy_bert_folder, "examples", METHODS, METRICS, split="sst2", limit=5, seed=3)
    for position in positions:  # the run's order is by length: the positions need not be 0 and 1
        shown, expected = partial.explanation(position), whole.explanation(position)
        assert shown.words == expected.words
        assert_same_scores(shown["loo_empty"].scores, expected["loo_empty"].scores)
    missing = next(p for p in range(5) if p not in positions)
    with pytest.raises(IndexError, match=f"no example at position {missing}"):
        partial.explanation(missing)
    finished = api.run(toy_bert_folder, "examples", "sst2", METHODS, METRICS, limit=5, seed=3, chunk_size=2,
                       results_dir=tmp_path)  # fmt: skip
    assert len(finished.per_example()) == 5 * len(METHODS) and len(api.runs(tmp_path)) == 1
    assert api.open_run(listed["run_id"], tmp_path).partial is None  # finished: all its examples


def test_runs_says_where_a_live_writer_is(toy_bert_folder, tmp_path, monkeypatch):
    from engine.runs import live

    monkeypatch.setattr(live, "EVERY_S", 0.0)  # every report is written
    seen, told = [], []

    def look(fraction: float, message: str) -> None:  # the live file holds the report before this one
        seen.extend(api.runs(tmp_path)["now"])
        told.append(message)

    # batches of 2: the metrics' scoring takes several, so it reports
    api.run(toy_bert_folder, "examples", "sst2", METHODS, METRICS, limit=4, seed=3, chunk_size=2, batch_size=2,
            results_dir=tmp_path, progress=look)  # fmt: skip
    assert any(now is not None and now.startswith("examples ") and " · explaining " in now for now in seen), seen
    assert {now for now in seen if now is not None} <= set(told)  # the caller's lines are the live file's
    heads = {message.partition(" · ")[0] for message in told if " · explaining " in message}
    assert heads == {"examples 1-2 of 4", "examples 3-4 of 4"}, told  # each unit's examples, in the order done
    scoring = [message.partition(" · scoring ")[2] for message in told if " · scoring " in message]
    assert scoring and all(re.fullmatch(r"[\d,]+ of [\d,]+ variants", stage) for stage in scoring), scoring
    assert api.runs(tmp_path)["now"].tolist() == [None]  # done: no live writer


def test_a_run_with_no_unit_stored_yet_opens_empty(toy_bert_folder, tmp_path):
    from engine.runs.executor import open_run as open_stored_run
    from tests.test_runs import toy_spec

    store = RunStore(tmp_path)
    run_id = open_stored_run(toy_spec(toy_bert_folder, limit=4), store).info.run_id  # created, nothing computed
    empty = api.open_run(run_id, tmp_path)
    assert empty.evaluation.results == [] and empty.per_example().empty
    assert list(empty.per_example().columns) == ["example", "id", "method", "target", "predicted", "label", "deletion",
                                                 "comprehensiveness", "iou"]  # fmt: skip
    assert (empty.summary()["n"] == 0).all()


def test_refusals_name_the_problem(toy_bert_folder, tmp_path):
    with pytest.raises(ValueError, match="no run 'run-nothing'"):
        api.open_run("run-nothing", tmp_path)
    with pytest.raises(ValueError, match="give a bundled name, hub id or folder"):
        api.run(api.load(toy_bert_folder), "examples", "sst2", METHODS, METRICS, results_dir=tmp_path)
    with pytest.raises(ValueError, match="no metrics"):
        api.run(toy_bert_folder, "examples", "sst2", METHODS, [], results_dir=tmp_path)
    nothing = api.runs(tmp_path)  # the catalogue's columns with no row (it had none: `["run_id"]` failed)
    assert nothing.empty and tuple(nothing.columns) == RUNS_COLUMNS
    assert nothing.query("status == 'done'").empty and nothing["run_id"].tolist() == []


def test_the_head_of_a_stored_run_comes_from_the_models_config():
    kinds = [config_head_kind(m) for m in ("minilm-sst2", "minilm-hatexplain-score", "minilm-hatexplain-targets")]
    assert kinds == ["single_label", "regression", "multi_label"]
    assert config_head_kind("no/such-model-anywhere") is None
    assert config_head_kind("random:minilm") == "single_label"  # a benchmark model: a config, no file


def test_a_notebooks_numbers_and_a_repeated_method_are_the_same_run(toy_bert_folder, tmp_path):
    """numpy's integers (a notebook's usual numbers) and a method or metric named twice give the
    run the plain settings give: one id, computed once (numpy's ints failed in JSON, a method named
    twice failed the run with an Arrow error)."""
    first = api.run(toy_bert_folder, "examples", "sst2", ["loo_empty"], ["deletion"], limit=2, seed=1,
                    results_dir=tmp_path)  # fmt: skip
    again = api.run(toy_bert_folder, "examples", "sst2", ["loo_empty", "loo_empty"], "deletion,deletion",
                    limit=np.int64(2), seed=np.int32(1), chunk_size=None, results_dir=tmp_path)  # fmt: skip
    listed = api.runs(tmp_path)
    assert len(listed) == 1 and listed["seed"].tolist() == [1] and str(listed["seed"].dtype) == "Int64"
    pd.testing.assert_frame_equal(again.per_example(), first.per_example())


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"seed": "1"}, "seed must be a whole number from 0 to 2,147,483,647, got '1'"),
        ({"seed": True}, "seed must be a whole number from 0 to 2,147,483,647, got True"),
        ({"seed": 2**31}, "seed must be a whole number from 0 to 2,147,483,647"),
        ({"limit": 2.0}, "limit must be a whole number of 1 or more, got 2.0"),
        ({"chunk_size": 0}, "chunk_size must be a whole number from 1 to 2,147,483,647, got 0"),
        ({"autocast": "half"}, "autocast must be one of float16, bfloat16, got 'half'"),
        ({"head_type": "ranking"}, "head_type must be one of"),
        ({"params": {"lime": {"n_samples": 5}}}, "params for methods or metrics not requested: lime"),
        ({"executor": "threads"}, "unknown executor 'threads'; known: ray, serial"),
        ({"split": None}, "a stored run names its data"),
    ],
)
def test_a_bad_argument_is_refused_before_anything_is_stored(toy_bert_folder, tmp_path, changes, message):
    """Refusals name the API's parameters (``chunk_size``), not the command line's options."""
    arguments = {"limit": 2, "results_dir": tmp_path, **changes}
    split = arguments.pop("split", "sst2")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        api.run(toy_bert_folder, "examples", split, ["loo_empty"], ["deletion"], **arguments)
    assert not (tmp_path / "catalogue.duckdb").exists()


def test_runs_of_a_folder_that_is_not_there_is_refused(tmp_path):
    with pytest.raises(ValueError, match=f"results_dir {re.escape(str(tmp_path / 'typo'))}: no such folder"):
        api.runs(tmp_path / "typo")
