"""The dataset explorer on a stored run: the table of examples, a stored example's heatmap,
the per-run plots and the agreement matrix, then one click to the heatmap page, which shows the
run's own scores without recomputing them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.datasets import load_bundled_examples
from engine.runs.executor import execute, open_run
from engine.runs.spec import RunSpec
from engine.runs.store import RunStore
from tests.toy import toy_bert, toy_bert_head

APP = Path(__file__).resolve().parents[1] / "app.py"
METHODS = ("loo_empty", "grad_x_input", "random")


def run_table(at: AppTest):
    """The explorer's table of examples (its key names the run and the filter shown)."""
    [table] = [d for d in at.dataframe if (d.key or "").startswith("explorer.table.")]
    return table


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory) -> tuple[str, str, Path]:
    """A finished 4-example run of a tiny BERT in its own results folder."""
    folder = tmp_path_factory.mktemp("toy-bert")
    loaded = toy_bert()
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    results = tmp_path_factory.mktemp("results")
    spec = RunSpec(
        model=str(folder), dataset="examples", split="sst2", limit=4, methods=METHODS,
        metrics=("deletion", "comprehensiveness"), seed=0, chunk_size=2,
    )  # fmt: skip
    store = RunStore(results)
    outcome = execute(open_run(spec, store), store, executor="serial")
    assert outcome.info.status == "done"
    return outcome.info.run_id, str(folder), results


def open_explorer(stored_run, monkeypatch) -> AppTest:
    _, model, results = stored_run
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(results))
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["sidebar.model_path"] = model
    at.session_state["heatmaps.methods"] = []  # the home page computes nothing
    at.run()
    at.switch_page("app_pages/explorer.py").run()
    assert not at.exception, at.exception
    return at


def test_the_explorer_shows_a_stored_run(stored_run, monkeypatch) -> None:
    run_id, _, results = stored_run
    at = open_explorer(stored_run, monkeypatch)
    assert at.selectbox(key="explorer.run_picker").value == run_id
    table = run_table(at).value
    assert list(table["position"]) == [0, 1, 2, 3]
    assert {"loo_empty · deletion", "random · comprehensiveness", "disagreement", "correct"} <= set(table.columns)
    stored = RunStore(results, read_only=True).rows(run_id)
    np.testing.assert_allclose(table["loo_empty · deletion"], stored["value/loo_empty/deletion"].astype(float))
    assert 'data-role="heatmap"' in "".join(h.value for h in at.html)
    assert len(at.get("plotly_chart")) == 3  # distribution, mean curve, agreement
    assert not at.error


def test_a_link_to_a_run_not_in_the_store_says_so(stored_run, monkeypatch) -> None:
    """A link to a deleted run silently showed another one; it now names the run it asked for and
    the one shown, and a link to a stored run opens it without a word."""
    run_id, model, results = stored_run
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(results))
    warnings = {}
    for asked in ("run-deadbeef0000", run_id):
        at = AppTest.from_file(str(APP), default_timeout=300)
        at.session_state["sidebar.model_path"] = model
        at.session_state["heatmaps.methods"] = []
        at.run()
        at.query_params["run"] = asked
        at.switch_page("app_pages/explorer.py").run()
        assert not at.exception, at.exception
        assert at.selectbox(key="explorer.run_picker").value == run_id
        warnings[asked] = [w.value for w in at.warning]
    shown = run_id.replace("-", "\\-")  # the markdown escape of a link's value
    expected = (
        "The link asks for run “run\\-deadbeef0000”, which is not in this run store (deleted, not stored yet, or "
        f"kept in another results folder): “{shown}” is shown."
    )
    assert warnings["run-deadbeef0000"] == [expected]
    assert warnings[run_id] == []


def test_a_row_opens_on_the_heatmap_page_with_the_runs_scores(stored_run, monkeypatch) -> None:
    run_id, _, results = stored_run
    at = open_explorer(stored_run, monkeypatch)
    at.selectbox(key="explorer.position").set_value(2).run()
    at.button(key="explorer.open").click().run()
    assert not at.exception, at.exception
    assert any(run_id in info.value for info in at.info), [i.value for i in at.info]
    _, attributions = RunStore(results, read_only=True).example(run_id, 2)
    shown = "".join(h.value for h in at.html if 'data-role="heatmap"' in h.value)
    for method in METHODS:
        assert f'data-method="{method}"' in shown
    assert set(attributions) == set(METHODS)


@pytest.mark.slow
def test_a_row_opens_with_the_runs_head_and_autocast(stored_run, monkeypatch) -> None:
    """A sidebar under bfloat16 autocast and a head override named a model reference that never
    matched the run's plain model name: the page recomputed. Stored scores are float32 ones of
    the config's head, so the opener sets the sidebar to them and the stored scores show."""
    run_id, model, results = stored_run
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(results))
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["sidebar.model_path"] = model
    at.session_state["heatmaps.methods"] = []
    at.session_state["sidebar.autocast"] = "bfloat16"
    at.session_state["sidebar.head_type"] = "single_label"
    at.run()
    at.switch_page("app_pages/explorer.py").run()
    at.selectbox(key="explorer.position").set_value(2).run()
    at.button(key="explorer.open").click().run()
    assert not at.exception, at.exception
    assert any(f"The scores stored by run `{run_id}`" in info.value for info in at.info), [i.value for i in at.info]
    assert at.session_state["sidebar.autocast"] == "float32" and at.session_state["sidebar.head_type"] == "config"


@pytest.mark.slow
def test_a_clicked_row_is_applied_once_and_not_to_another_filter(stored_run, monkeypatch) -> None:
    """Streamlit keeps a table's selection under the same key: a row clicked in the table of all
    examples was applied on every rerun (the Example box could not change it) and to the rows of
    a shorter filtered table (IndexError). Clicks are emulated as Streamlit keeps them, per key."""
    import streamlit as st

    clicks: dict[str, list[int]] = {}
    real = st.dataframe

    def dataframe(data, *args, key=None, **kwargs):
        shown = real(data, *args, key=key, **kwargs)
        if key is None or not str(key).startswith("explorer.table"):
            return shown
        return SimpleNamespace(selection=SimpleNamespace(rows=clicks.get(key, []), columns=[]))

    monkeypatch.setattr(st, "dataframe", dataframe)
    at = open_explorer(stored_run, monkeypatch)
    table = run_table(at)
    clicks[table.key] = [3]
    at.run()
    assert at.selectbox(key="explorer.position").value == 3
    at.selectbox(key="explorer.position").set_value(1).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="explorer.position").value == 1  # the click is not applied again
    counts = table.value["correct"].value_counts()
    shorter = "correct" if counts.get(True, 0) < 4 and counts.get(True, 0) else "wrong"
    at.segmented_control(key="explorer.filter").set_value(shorter).run()
    assert not at.exception, at.exception
    positions = list(run_table(at).value["position"])
    assert 0 < len(positions) < 4
    assert at.selectbox(key="explorer.position").value in positions


@pytest.fixture(scope="module", params=["regression", "multi_label"])
def head_run(request, tmp_path_factory) -> tuple[str, str, Path, str]:
    """A finished 2-example SST-2 run of a tiny BERT with a regression head (one raw score) or a
    multi-label head (three sigmoids), neither of them the dataset's two classes."""
    head = request.param
    folder = tmp_path_factory.mktemp(f"toy-{head}")
    loaded = toy_bert_head(head)
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    results = tmp_path_factory.mktemp(f"results-{head}")
    spec = RunSpec(
        model=str(folder), dataset="examples", split="sst2", limit=2, methods=("loo_empty",),
        metrics=("deletion",), seed=0, chunk_size=2,
    )  # fmt: skip
    store = RunStore(results)
    outcome = execute(open_run(spec, store), store, executor="serial")
    assert outcome.info.status == "done"
    return outcome.info.run_id, str(folder), results, head


def test_a_regression_or_multi_label_run_is_shown_by_its_head(head_run, monkeypatch) -> None:
    """A stored run of a regression or multi-label head on a two-class dataset (the gold class is
    not one of its outputs): the table shows the head's own prediction and grades nothing, the
    mean curve is labelled with what the head outputs (a score is not p(target)), and the example
    opened on the heatmap page shows the head's prediction; gold labels are named as the dataset
    names them, not with the model's labels."""
    *run, head = head_run
    at = open_explorer(tuple(run), monkeypatch)
    table = run_table(at).value
    assert "correct" not in table.columns and "confidence" not in table.columns
    assert table["predicted"].dtype.kind == ("f" if head == "regression" else "O")  # a score / a label set
    gold = [e.gold_name for e in load_bundled_examples(split="sst2")[:2]]
    assert list(table["gold"]) == gold and set(gold) <= {"negative", "positive"}
    curve = next(c for c in at.get("plotly_chart") if c.key == "explorer.curves")
    y_title = json.loads(curve.proto.spec)["layout"]["yaxis"]["title"]["text"]
    assert y_title == ("score" if head == "regression" else "p(target)")
    at.button(key="explorer.open").click().run()
    assert not at.exception, at.exception
    summary = next(m.value for m in at.markdown if "**Explaining:**" in m.value)
    assert summary.startswith("**Score:**" if head == "regression" else "**Predicted labels**"), summary
    # SST-2's class is none of these heads' labels (a score, toxic/insult/threat): named the dataset's label
    assert summary.endswith(f"**Dataset label:** {gold[0]} (not one of the model's labels)"), summary
    assert not at.error, [e.value for e in at.error]


class Running:
    """A stand-in for a background process that goes on."""

    def poll(self) -> None:
        return None


def test_a_run_of_a_regression_or_multi_label_head_cannot_explain_the_gold_class(head_run, monkeypatch) -> None:
    """The gold class of the dataset is not one of such a head's outputs: the run is refused in
    one line before any process starts (it would fail on every example)."""
    import subprocess

    import services

    _, folder, results, head = head_run
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(results))
    started: list[list[str]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda command, **kwargs: started.append(command) or Running())
    services.background.background.clear()
    refused = rf"a {head.replace('_', '-')} head explains its own outputs, not the dataset's gold class"
    with pytest.raises(ValueError, match=refused):
        services.runs.start_run(folder, "examples", "sst2", 2, ["loo_empty"], ["deletion"], "gold")
    assert not started
    services.runs.start_run(folder, "examples", "sst2", 2, ["loo_empty"], ["deletion"], "predicted")
    assert len(started) == 1
    services.background.background.clear()


def test_the_mean_curves_are_of_the_snapshot_rows(stored_run, monkeypatch) -> None:
    """A run being written commits units between the page's read of its rows and of its curves:
    the curves are of the snapshot's rows, as its tables are, not of every row stored by then."""
    import dataclasses

    import services.runs
    from engine.runs.executor import read_evaluation
    from engine.slice_report import mean_curves

    run_id, _, results = stored_run
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(results))
    whole = services.runs.snapshot(run_id)
    earlier = dataclasses.replace(
        whole, info=dataclasses.replace(whole.info, rows_done=2), rows=whole.rows.iloc[:2]
    )  # as read while the second unit was still being written
    evaluation = read_evaluation(RunStore(results, read_only=True), run_id)[1]
    first_two = dataclasses.replace(evaluation, results=evaluation.results[:2])
    assert services.runs.mean_curves(earlier) == mean_curves(first_two) != mean_curves(evaluation)
    assert services.runs.mean_curves(whole) == mean_curves(evaluation)


def test_a_run_under_a_head_override_opens_with_that_head(tmp_path, monkeypatch) -> None:
    """A run may read a model's outputs through another head (``--head-type``): opened on the
    heatmap page, the sidebar takes that head, so the stored scores show (the config's head named
    another model reference, and the page recomputed)."""
    folder = tmp_path / "toy-bert"
    loaded = toy_bert()
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    results = tmp_path / "results"
    spec = RunSpec(
        model=str(folder), dataset="examples", split="sst2", limit=2, methods=("loo_empty",),
        metrics=("deletion",), seed=0, chunk_size=2, head_type="multi_label",
    )  # fmt: skip
    store = RunStore(results)
    run_id = execute(open_run(spec, store), store, executor="serial").info.run_id
    at = open_explorer((run_id, str(folder), results), monkeypatch)
    at.button(key="explorer.open").click().run()
    assert not at.exception, at.exception
    assert at.session_state["sidebar.head_type"] == "multi_label"
    assert any(f"The scores stored by run `{run_id}`" in info.value for info in at.info), [i.value for i in at.info]


def test_other_methods_or_another_class_leave_the_stored_scores_for_computed_ones(stored_run, monkeypatch) -> None:
    """The stored view kept showing the run's methods and class after the reader changed the
    Methods box or the sidebar's target class, with no word that the choice was ignored."""
    run_id, _, _ = stored_run
    at = open_explorer(stored_run, monkeypatch)
    at.selectbox(key="explorer.position").set_value(2).run()
    at.button(key="explorer.open").click().run()
    at.switch_page("app_pages/heatmaps.py").run()  # AppTest reruns the page it opened, not the switched-to one
    stored_note = f"The scores stored by run `{run_id}`"
    assert any(stored_note in i.value for i in at.info)
    at.multiselect(key="heatmaps.methods").set_value(["random"]).run()
    assert not at.exception, at.exception
    assert not any(stored_note in i.value for i in at.info)
    shown = "".join(h.value for h in at.html if 'data-role="heatmap"' in h.value)
    assert set(re.findall(r'data-method="([^"]+)"', shown)) == {"random"}
    at.multiselect(key="heatmaps.methods").set_value(list(METHODS)).run()  # the run's methods again
    assert any(stored_note in i.value for i in at.info)
    stored_for_class = []
    for target in (0, 1):  # the run explained one of the two classes: only that one shows its scores
        at.selectbox(key="sidebar.target").set_value(target).run()
        assert not at.exception, at.exception
        stored_for_class.append(any(stored_note in i.value for i in at.info))
    assert sorted(stored_for_class) == [False, True]
    at.selectbox(key="sidebar.target").set_value(at.selectbox(key="sidebar.target").options[0]).run()
    at.multiselect(key="heatmaps.methods").set_value([]).run()  # an emptied box computes nothing
    assert not at.exception and any(i.value == "Choose at least one method." for i in at.info)
