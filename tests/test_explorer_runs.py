"""The dataset explorer on runs it used to fail on: a correct/wrong filter that leaves no example,
a split without gold labels, a run whose rows grow between two reads of the store, a model that
cannot be loaded now, and runs started with no metric or whose process stops at once."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import services
from engine.runs.executor import execute, open_run
from engine.runs.spec import RunSpec
from engine.runs.store import RunStore
from services import access
from tests.fake_processes import Process
from tests.page_text import errors, open_on_model
from tests.toy import toy_bert, toy_bert_head

POPEN = subprocess.Popen  # the real one, for the store's own processes while ``started`` fakes the app's


def run_table(at: AppTest):
    """The explorer's table of examples (its key names the run and the filter shown)."""
    [table] = [d for d in at.dataframe if (d.key or "").startswith("explorer.table.")]
    return table


class Stop(Exception):
    """Raised from a run's progress to stop it after its first unit."""


def toy_folder(tmp_path_factory, head: str | None = None) -> str:
    """The tiny BERT (``head``: ``toy_bert_head``'s) saved as a local folder."""
    folder = tmp_path_factory.mktemp(f"toy-{head or 'bert'}")
    loaded = toy_bert() if head is None else toy_bert_head(head)
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return str(folder)


def stored(spec: RunSpec, results: Path, units: int | None = None) -> str:
    """Run ``spec`` serially into the store at ``results`` (only its first ``units`` units when
    given); its run id."""
    store = RunStore(results)
    done: list[str] = []

    def stop(fraction: float, message: str) -> None:
        if message.endswith(" examples") and message.split()[0].isdigit():
            done.append(message)
            if len(done) == units:
                raise Stop

    try:
        outcome = execute(open_run(spec, store), store, executor="serial", progress=stop)
    except Stop:
        return RunStore(results, read_only=True).infos()[0].run_id
    return outcome.info.run_id


def toy_spec(model: str, **changes) -> RunSpec:
    fields = {"dataset": "examples", "split": "sst2", "limit": 2, "methods": ("loo_empty", "random")}
    return RunSpec(model=model, **(fields | {"metrics": ("deletion",), "seed": 0, "chunk_size": 2} | changes))


def open_explorer(model: str, results: Path, monkeypatch, **state) -> AppTest:
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(results))
    return open_on_model(model, "app_pages/explorer.py", **state)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    return toy_folder(tmp_path_factory)


def test_a_filter_that_leaves_no_example_says_so(model, tmp_path, monkeypatch) -> None:
    """One example, so one of "correct" and "wrong" matches none: the page says so and goes on."""
    stored(toy_spec(model, limit=1), tmp_path)
    at = open_explorer(model, tmp_path, monkeypatch)
    [correct] = run_table(at).value["correct"]
    other = "wrong" if correct else "correct"
    at.segmented_control(key="explorer.filter").set_value(other).run()
    assert not at.exception, at.exception
    assert run_table(at).value.empty
    assert f"No example of this run is {other}." in [i.value for i in at.info]
    assert not [s for s in at.selectbox if s.key == "explorer.position"]
    assert len(at.get("plotly_chart")) == 3  # the per-run plots and the agreement still show


def test_a_split_without_gold_labels_offers_no_correct_or_wrong_filter(model, tmp_path, monkeypatch) -> None:
    stored(toy_spec(model, split="test", dataset="sst2"), tmp_path)
    at = open_explorer(model, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    table = run_table(at).value
    assert list(table["position"]) == [0, 1] and table["correct"].isna().all()
    assert not at.segmented_control
    assert 'data-role="heatmap"' in "".join(h.value for h in at.html)


def test_rows_committed_between_two_reads_do_not_break_the_page(model, tmp_path, monkeypatch) -> None:
    """The store gains a unit right after the page's first read of the rows (the run's second
    store, the same run finished, takes the first one's place): every table of the page shows
    the rows of that one read."""
    spec = toy_spec(model, limit=4, seed=5)
    run_id = stored(spec, tmp_path / "partial", units=1)
    assert stored(spec, tmp_path / "full") == run_id
    read = RunStore.rows

    def rows_then_commit(self, *args, **kwargs):
        found = read(self, *args, **kwargs)
        monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path / "full"))
        return found

    first_unit = sorted(RunStore(tmp_path / "partial").row_order(run_id)[:2])  # its two shortest examples
    monkeypatch.setattr(RunStore, "rows", rows_then_commit)
    at = open_explorer(model, tmp_path / "partial", monkeypatch)
    assert not at.exception, at.exception
    assert list(run_table(at).value["position"]) == first_unit
    [disputed] = [d.value for d in at.dataframe if "agreement" in d.value.columns]
    assert sorted(disputed["position"]) == first_unit


def test_a_model_that_cannot_be_loaded_now_is_tried_again_later(tmp_path) -> None:
    """A failed load is not remembered: the head is read again once the model is there."""
    folder = str(tmp_path / "later")
    assert services.runs.read_head(folder)[0] == "single_label"
    loaded = toy_bert_head("regression")
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    assert services.runs.read_head(folder) == ("regression", None)
    kind, why = services.runs.read_head(str(tmp_path / "gone"))
    assert kind == "single_label" and why.startswith("cannot load"), why


def test_the_page_says_when_the_runs_head_is_unknown(tmp_path_factory, tmp_path, monkeypatch) -> None:
    """A regression run whose model is not offered now (shared mode): read as single-label, and
    the page says so."""
    folder = toy_folder(tmp_path_factory, "regression")
    stored(toy_spec(folder), tmp_path)
    monkeypatch.setenv(access.SHARED_ENV, "1")
    access.policy.clear()
    try:
        at = open_explorer("", tmp_path, monkeypatch)
    finally:
        access.policy.clear()
    assert not at.exception, at.exception
    assert any("its head is unknown" in w.value for w in at.warning), [w.value for w in at.warning]
    assert any("not offered on this server" in c.value for c in at.caption)


def start_form(at: AppTest, metrics: list[str]) -> AppTest:
    boxes = {box.label: box for box in at.multiselect}
    boxes["Methods"].set_value(["random"])
    boxes["Metrics"].set_value(metrics)
    at.number_input(key="explorer.limit").set_value(1)
    next(b for b in at.button if b.label == "Start the run").click()
    return at.run()


def test_a_run_without_metrics_is_refused_in_one_line(model, tmp_path, started, monkeypatch) -> None:
    at = open_explorer(model, tmp_path, monkeypatch, **{"sidebar.dataset": "examples", "sidebar.split": "sst2"})
    start_form(at, [])
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == ["pick at least one metric to run"]
    assert not started


def test_a_regression_run_of_log_odds_alone_is_refused(tmp_path_factory, tmp_path, started, monkeypatch) -> None:
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    folder = toy_folder(tmp_path_factory, "regression")
    with pytest.raises(ValueError, match=r"^pick at least one metric other than log_odds"):
        services.runs.start_run(folder, "examples", "sst2", 1, ["random"], ["log_odds"])
    assert not started


def test_a_started_run_names_its_log_and_one_that_stops_at_once_shows_it(model, tmp_path, started, monkeypatch):
    at = open_explorer(model, tmp_path, monkeypatch, **{"sidebar.dataset": "examples", "sidebar.split": "sst2"})
    start_form(at, ["deletion"])
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    run_id = at.session_state["explorer.run"]
    assert f"log: `logs/{run_id}.log` in the run store's folder" in at.success[0].value
    monkeypatch.setattr(Process, "code", 2)
    monkeypatch.setattr(Process, "line", "error: something was wrong\n")
    start_form(at, ["insertion"])
    run_id = at.session_state["explorer.run"]
    assert at.error[0].value == f"Run `{run_id}` stopped as soon as it started; the end of its log `logs/{run_id}.log`:"
    assert at.code[0].value == "error: something was wrong"
    assert (tmp_path / "logs" / f"{run_id}.log").read_text() == "error: something was wrong\n"
    assert len(started) == 2


def test_a_started_run_shows_as_starting_until_its_process_stores_it(model, tmp_path, started, monkeypatch) -> None:
    """Right after "Start the run", the process is still loading the model and has stored
    nothing: the page said "No stored run yet" under its own "goes on in the background". It now
    says the run is starting, shows the run once it is stored, and the log's end if the process
    stops before that."""
    at = open_explorer(model, tmp_path, monkeypatch, **{"sidebar.dataset": "examples", "sidebar.split": "sst2"})
    start_form(at, ["deletion"])
    assert not at.exception, at.exception
    run_id = at.session_state["explorer.starting"]
    assert [i.value for i in at.info] == [
        f"Run `{run_id}` is starting: its process loads the model, then the run shows here with its progress."
    ]
    spec = RunSpec(model=model, dataset="examples", split="sst2", limit=1, methods=("random",), metrics=("deletion",))
    with monkeypatch.context() as real:
        real.setattr(subprocess, "Popen", POPEN)
        assert stored(spec, tmp_path) == run_id  # what the process would have stored
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="explorer.run_picker").value == run_id
    assert "explorer.starting" not in at.session_state
    assert not [i.value for i in at.info if "is starting" in i.value]


def test_a_run_whose_process_stops_before_storing_anything_shows_its_log(model, tmp_path, started, monkeypatch):
    at = open_explorer(model, tmp_path, monkeypatch, **{"sidebar.dataset": "examples", "sidebar.split": "sst2"})
    start_form(at, ["deletion"])
    run_id = at.session_state["explorer.starting"]
    monkeypatch.setattr(started[0], "code", 1)  # it exits with an error after the start's first check
    (tmp_path / "logs" / f"{run_id}.log").write_text("error: the model is gone\n")
    at.run()
    assert not at.exception, at.exception
    assert at.error[0].value == f"Run `{run_id}` stopped before it stored anything; the end of its log:"
    assert at.code[0].value == "error: the model is gone"


def test_a_run_with_a_damaged_unit_file_says_so_in_one_line(model, tmp_path, monkeypatch) -> None:
    run_id = stored(toy_spec(model), tmp_path)
    path = tmp_path / RunStore(tmp_path, read_only=True).units(run_id)["path"][0]
    path.write_bytes(path.read_bytes()[:40])
    at = open_explorer(model, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    [error] = errors(at)
    assert "cannot be read: it is not a whole Parquet file" in error and "run --resume" in error


def test_a_results_folder_that_cannot_be_written_is_said_in_one_line(model, tmp_path, started, monkeypatch) -> None:
    """The log's folder could not be made (a results folder under a file): a traceback."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    at = open_explorer(
        model, blocker / "results", monkeypatch, **{"sidebar.dataset": "examples", "sidebar.split": "sst2"}
    )
    start_form(at, ["deletion"])
    assert not at.exception, at.exception
    [error] = [e.value for e in at.error]
    assert error.startswith("the job cannot be started: its log cannot be written in ") and "Not a directory" in error
    assert not started


def test_a_runs_head_is_read_from_the_config_without_loading_the_model(tmp_path_factory, monkeypatch) -> None:
    """The head kind loaded the whole classifier (a hub model's weights, another session's cached
    model evicted): the config alone says it."""
    from services import models

    folder = toy_folder(tmp_path_factory, "regression")

    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(models, "classifier", no_load)
    assert services.runs.read_head(folder) == ("regression", None)
    # a benchmark model has a config built in code, no file: still read without weights
    assert services.runs.read_head("random:bert-base") == ("single_label", None)
