"""The ROAR page on the bundled precomputed job (offline, nothing computed): curves, the Eq. 3
table equal to the engine's summary of the bundled file, the removed words of an example shown
escaped; and the synthetic teaching task, plain and recursive side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.roar.report import load_report, summary
from services.roar import BUNDLED_DIR
from ui.roar import SYNTHETIC_SOURCE

APP = Path(__file__).resolve().parents[1] / "app.py"


def open_page(monkeypatch, tmp_path) -> AppTest:
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path / "empty-results"))
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.session_state["heatmaps.methods"] = []  # the home page computes nothing
    at.run()
    at.switch_page("app_pages/roar.py").run()
    assert not at.exception, at.exception
    return at


def test_the_bundled_job_shows_offline(monkeypatch, tmp_path) -> None:
    bundled = sorted(BUNDLED_DIR.glob("*.json"))
    assert bundled, "the bundled ROAR job is missing from assets/roar/"
    at = open_page(monkeypatch, tmp_path)
    picker = at.selectbox(key="roar.source")
    assert picker.value == f"bundled:{bundled[0].stem}" and picker.options[0] == f"Bundled: {bundled[0].stem}"
    report = load_report(bundled[0])
    expected = summary(report, "accuracy")
    charts = at.get("plotly_chart")
    assert len(charts) >= 2  # the curves and the sparsity plot
    table = at.dataframe[0].value
    assert list(table["method"]) == list(expected["faithfulness"])
    for method, shown in zip(table["method"], table["Eq. 3 (%)"], strict=True):
        mean = expected["faithfulness"][method]["mean"]
        assert shown == ("–" if mean is None else f"{mean:.1f}")
    assert report["command"].startswith("python -m cli roar --task sst2")
    # two seeds: the intervals are t(0.975, 1) = 12.7 standard errors wide, and the page says why
    assert report["job"]["seeds"] == 2
    assert any("With 2 seeds a 95% interval reaches 12.7 standard errors" in c.value for c in at.caption)
    assert any(report["command"] in code.value for code in at.code)
    removed = "".join(m.value for m in at.markdown)
    assert "<s " in removed  # removed words struck through
    assert "<script" not in removed


@pytest.mark.slow  # the synthetic task retrains 3 seeds x 2 x 16 logistic regressions
def test_the_synthetic_task_shows_plain_and_recursive(monkeypatch, tmp_path) -> None:
    at = open_page(monkeypatch, tmp_path)
    at.selectbox(key="roar.source").select(SYNTHETIC_SOURCE).run()
    at.select_slider(key="roar.synthetic_n").set_value(500).run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 2
    tables = [frame.value for frame in at.dataframe]
    assert len(tables) == 2 and all(set(t["method"]) == {"weights", "truth", "worst"} for t in tables)


def test_a_stored_job_stays_picked_while_its_progress_moves(monkeypatch, tmp_path) -> None:
    """The picker's label carries the job's live progress; a finished unit changes the label, and
    the page once fell back to the bundled job on the next rerun."""
    from types import SimpleNamespace

    from services import roar

    report = load_report(min(BUNDLED_DIR.glob("*.json")))
    done = {"units": 1}

    def job() -> SimpleNamespace:
        units = done["units"]
        return SimpleNamespace(
            run_id="run-job", status="running", shown_status="running", units_done=units, units_total=4, fraction=units / 4,
            writer_gone=False, being_written=True, rows_done=units, rows_total=4, wall_s=1.0,
        )  # fmt: skip

    monkeypatch.setattr(roar, "stored_jobs", lambda uploads=(): [job()])
    monkeypatch.setattr(roar, "info", lambda run_id: job())
    monkeypatch.setattr(roar, "stored_report", lambda run_id: {**report, "run_id": run_id})
    at = open_page(monkeypatch, tmp_path)
    at.selectbox(key="roar.source").select("stored:run-job").run()
    assert "Stored: run-job (running, 1/4 units)" in at.selectbox(key="roar.source").options
    done["units"] = 2  # a unit finishes
    at.radio(key="roar.metric").set_value("macro_f1").run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="roar.source")
    assert picker.value == "stored:run-job", picker.value
    assert "Stored: run-job (running, 2/4 units)" in picker.options


def test_a_stopped_job_resumes_from_the_page(monkeypatch, tmp_path, started) -> None:
    """A stopped stored job offers "Resume the job", which starts `cli roar --resume` with the
    job's own settings (``ui.run_progress``)."""
    from types import SimpleNamespace

    from services import roar

    report = load_report(min(BUNDLED_DIR.glob("*.json")))
    job = SimpleNamespace(
        run_id="run-job", kind="roar", status="stopped", shown_status="stopped", error=None, units_done=1, units_total=4, fraction=0.25,
        writer_gone=False, being_written=False, rows_done=1, rows_total=4, wall_s=1.0,
    )  # fmt: skip
    monkeypatch.setattr(roar, "stored_jobs", lambda uploads=(): [job])
    monkeypatch.setattr(roar, "info", lambda run_id: job)
    monkeypatch.setattr(roar, "stored_report", lambda run_id: {**report, "run_id": run_id})
    at = open_page(monkeypatch, tmp_path)
    at.selectbox(key="roar.source").select("stored:run-job").run()
    assert at.get("progress")[0].proto.text == "1 of 4 units · stopped · 1 s"
    at.button(key="runs.resume.run-job").click().run()
    assert not at.exception, at.exception
    [process] = started
    assert process.command[1:] == ["-m", "cli", "roar", "--resume", "run-job", "--no-estimate", "--quiet", "--json"]


def test_a_deleted_job_leaves_the_picker(monkeypatch, tmp_path) -> None:
    """ "Delete this job" removes the stored job through ``services.roar.delete_job`` and the page
    goes back to the first job."""
    from types import SimpleNamespace

    from services import roar

    report = load_report(min(BUNDLED_DIR.glob("*.json")))
    job = SimpleNamespace(
        run_id="run-job", kind="roar", status="done", shown_status="done", error=None, units_done=4, units_total=4, fraction=1.0,
        writer_gone=False, being_written=False, rows_done=4, rows_total=4, wall_s=1.0,
    )  # fmt: skip
    jobs, deleted = [job], []
    monkeypatch.setattr(roar, "stored_jobs", lambda uploads=(): list(jobs))
    monkeypatch.setattr(roar, "info", lambda run_id: job)
    monkeypatch.setattr(roar, "stored_report", lambda run_id: {**report, "run_id": run_id})
    monkeypatch.setattr(roar, "delete_job", lambda run_id: deleted.append(run_id) or jobs.clear())
    at = open_page(monkeypatch, tmp_path)
    at.selectbox(key="roar.source").select("stored:run-job").run()
    at.button(key="runs.delete.run-job").click().run()
    assert not at.exception, at.exception
    assert deleted == ["run-job"]
    picker = at.selectbox(key="roar.source")
    assert picker.value.startswith("bundled:") and not [o for o in picker.options if "run-job" in o]


def test_the_faithfulness_reading_follows_the_interval_not_the_mean_alone() -> None:
    """The reading said "below random" for every positive mean, even with an interval from -285
    to 444, and read as a failure to a newcomer; it now says faithful only where the whole
    interval is above 0."""
    from engine.roar.report import eq3_reading
    from ui.roar import faithfulness_table

    summary = {"faithfulness": {
        "ig": {"mean": 55.7, "low": 20.2, "high": 91.3, "n": 3},
        "loo": {"mean": 79.9, "low": -284.6, "high": 444.3, "n": 3},
        "attention": {"mean": -12.0, "low": -20.0, "high": -4.0, "n": 3},
        "one_seed": {"mean": 30.0, "low": None, "high": None, "n": 1},
        "none": {"mean": None, "low": None, "high": None, "n": 0},
    }}  # fmt: skip
    for f in summary["faithfulness"].values():  # as engine.roar.report.summarize gives it
        f["reading"] = eq3_reading(f["mean"], f["low"], f["high"])
    table = faithfulness_table(summary).set_index("method")
    assert table.loc["ig", "reading"] == "faithful (its curve below random's)"
    assert table.loc["loo", "reading"] == "undecided: the interval holds 0 (random)"
    assert table.loc["attention", "reading"] == "not faithful (its curve above random's)"
    assert table.loc["one_seed", "reading"] == "undecided: one seed, no interval"
    assert table.loc["none", "reading"] == "–"
    assert table.loc["loo", "95% interval"] == "[-284.6, 444.3]"


def test_the_sparsity_chart_names_its_levels_in_order() -> None:
    """Levels are names ("1 token", "10%"): plotly read the shares as a numeric axis with a gap."""
    from ui.roar import sparsity_figure

    shares = {"ig": {"1 token": 0.3, "10%": 0.5, "20%": 0.6, "50%": 0.9}, "random": {"1 token": 0.1, "10%": 0.2}}
    figure = sparsity_figure(shares)
    assert figure.layout.xaxis.type == "category"
    assert figure.layout.xaxis.title.text and figure.layout.yaxis.title.text
    assert [list(bar.x) for bar in figure.data] == [["1 token", "10%", "20%", "50%"], ["1 token", "10%"]]


def test_the_job_form_names_its_removals_and_keeps_their_keys(monkeypatch, tmp_path) -> None:
    """The form offered the raw keys delete / mlm / mask; it names them (``ui.roar.REMOVALS``, as
    the job's caption does) and still sends the key."""
    from services import roar

    asked = []
    cost = {"retrains": 1, "training_steps": 1, "explanations": {"x": 1}, "fills": 0, "seconds": 60}
    monkeypatch.setattr(roar, "estimate", lambda settings, **_: asked.append(settings) or cost)
    at = open_page(monkeypatch, tmp_path)
    [removal] = [r for r in at.radio if r.label == "Removal"]
    assert removal.options == [
        "delete the words (Pham et al.'s ROAR)", "masked-LM fill-in (ROAR_BERT)", "[MASK] (Madsen et al.)"
    ]  # fmt: skip
    removal.set_value("mlm")
    [estimate] = [b for b in at.button if b.label == "Estimate the cost"]
    estimate.click().run()
    assert not at.exception, at.exception
    assert [settings["removal"] for settings in asked] == ["mlm"]


def test_the_job_form_retrains_the_sidebars_model_on_its_dataset(monkeypatch, tmp_path) -> None:
    """ "Retrain" offers the sidebar's model on the sidebar's dataset (here a data file with train
    and dev rows) instead of the bundled task; the bundled examples, which have no training split,
    are refused before anything runs."""
    import pandas as pd

    from services import roar

    asked = []
    cost = {"retrains": 1, "training_steps": 1, "explanations": {"x": 1}, "fills": 0, "seconds": 60}
    monkeypatch.setattr(roar, "estimate", lambda settings, **_: asked.append(settings) or cost)
    data = tmp_path / "films.csv"
    pd.DataFrame({"text": ["good", "bad"], "label": [1, 0], "split": ["train", "dev"]}).to_csv(data, index=False)
    at = open_page(monkeypatch, tmp_path)
    retrain = at.radio(key="roar.retrain")
    assert retrain.options == [
        "the bundled SST-2 task",
        "the sidebar's model on its dataset (pick a dataset with a training split)",
    ]
    retrain.set_value("own")
    [estimate] = [b for b in at.button if b.label == "Estimate the cost"]
    estimate.click().run()
    assert not asked and any("Pick a dataset in the sidebar" in e.value for e in at.error)
    at.selectbox(key="sidebar.dataset").set_value("data file").run()
    at.text_input(key="sidebar.data_file").set_value(str(data)).run()
    at.radio(key="roar.retrain").set_value("own")
    [estimate] = [b for b in at.button if b.label == "Estimate the cost"]
    estimate.click().run()
    assert not at.exception, at.exception
    [settings] = asked
    assert (settings["model"], settings["dataset"]) == ("minilm-sst2", f"file:{data}") and "task" not in settings


@pytest.mark.parametrize("source", ["stored:run-job", SYNTHETIC_SOURCE])
def test_the_start_form_is_under_every_view(monkeypatch, tmp_path, source) -> None:
    """The page stopped before its "Start a job" form on the synthetic task and on a job with no
    finished unit yet (the job just started, which the page says to pick to follow)."""
    from types import SimpleNamespace

    from services import roar

    report = load_report(min(BUNDLED_DIR.glob("*.json")))
    job = SimpleNamespace(
        run_id="run-job", kind="roar", status="running", shown_status="running", error=None, units_done=0, units_total=4,
        fraction=0.0, writer_gone=False, being_written=True, rows_done=0, rows_total=4, wall_s=1.0,
    )  # fmt: skip
    monkeypatch.setattr(roar, "stored_jobs", lambda uploads=(): [job])
    monkeypatch.setattr(roar, "info", lambda run_id: job)
    monkeypatch.setattr(roar, "stored_report", lambda run_id: {**report, "run_id": run_id, "units": []})
    monkeypatch.setattr(
        roar, "synthetic", lambda n, metric: {kind: summary(report, metric) for kind in ("plain", "recursive")}
    )
    at = open_page(monkeypatch, tmp_path)
    at.selectbox(key="roar.source").select(source).run()
    assert not at.exception, at.exception
    assert "Start a job (runs in the background)" in [e.label for e in at.expander]
    if source.startswith("stored:"):
        assert any("No unit of this job has finished yet." in i.value for i in at.info)
