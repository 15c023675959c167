"""ROAR jobs on the run store with the real bundled recipe at a tiny budget (SST-2, 8 training
and 8 evaluation examples, two training steps per model): a job killed with SIGKILL, or stopped
and resumed as the app does, resumes through ``python -m cli roar --resume`` with the same results
as an uninterrupted job; the stored curves give Eq. 3 and the t-test when recomputed by hand;
Recursive ROAR with masked-LM removal keeps removed words removed and removes the paper's count."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats

from engine.roar.report import summary
from engine.roar.run import execute_job, open_job, unit_meta
from engine.runs.store import RunStore
from experiments.roar.job import RoarJob
from experiments.roar.removal import Level, n_to_remove
from experiments.roar.scores import RANDOM, SHARED, UnitResult
from tests.kill import kill_once_done

ROOT = Path(__file__).resolve().parents[1]
TINY = {"task": "sst2", "train_size": 8, "eval_size": 8, "train_steps": 2}
ARGS = ["--task", "sst2", "--methods", "loo_empty", "--levels", "10", "--seeds", "2"]
ARGS += ["--train-size", "8", "--eval-size", "8", "--train-steps", "2"]
pytestmark = pytest.mark.slow  # each unit trains and saves a model: 5-20 s on the busy 2-core machine


def unit_results(store: RunStore, run_id: str) -> list[UnitResult]:
    """The stored units' performance, in unit order, from each unit file's metadata (``unit_meta``)."""
    return [
        UnitResult(meta["method"], Level.parse(meta["level"]), int(meta["seed"]), meta["accuracy"], meta["macro_f1"])
        for meta, _ in unit_meta(store, run_id)
    ]


def plain_job() -> RoarJob:
    return RoarJob(methods=("loo_empty",), levels=(Level(10),), seeds=2, **TINY)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[RunStore, str]:
    """The plain job run in one go, in-process."""
    store = RunStore(tmp_path_factory.mktemp("reference"))
    info = execute_job(open_job(plain_job(), store), store)
    assert info.status == "done" and info.units_done == info.units_total == 8
    return store, info.run_id


def unit_tables(store: RunStore, run_id: str) -> dict[int, list[dict]]:
    units = store.units(run_id)
    return {
        int(u): pq.read_table(store.root / p).to_pylist() for u, p in zip(units["unit"], units["path"], strict=True)
    }


def test_a_job_killed_with_sigkill_resumes_with_identical_results(reference, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATTRIBUTION_RESULTS_DIR": str(tmp_path / "results")}
    command = [sys.executable, "-m", "cli", "roar", *ARGS, "--no-estimate", "--quiet", "--json"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    store = RunStore(tmp_path / "results", read_only=True)
    run_id = kill_once_done(process, store.catalogue_path, "units_done", 3, timeout_s=600)
    killed = store.get(run_id)
    assert killed.status == "running" and killed.writer_gone and 3 <= killed.units_done < 8
    assert killed.run_id == reference[1]  # the same settings are the same job
    estimated = subprocess.run(
        [sys.executable, "-m", "cli", "roar", "--resume", run_id, "--estimate-only"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert f"for the {8 - killed.units_done} units left" in estimated.stderr  # not the whole job's cost alone

    resumed = subprocess.run(
        [sys.executable, "-m", "cli", "roar", "--resume", run_id, "--no-estimate", "--quiet", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    result = json.loads(resumed.stdout)
    assert result["status"] == "done" and result["units_done"] == 8
    assert "python -m cli roar --task sst2 --methods loo_empty" in result["command"]
    assert unit_results(store, run_id) == unit_results(*reference)
    assert unit_tables(store, run_id) == unit_tables(*reference)
    assert set(result["faithfulness"]) == {"loo_empty"} and set(result["curves"]) == {"loo_empty", RANDOM}


def test_a_job_stopped_from_the_app_keeps_its_units_and_resumes_to_identical_results(reference, tmp_path, monkeypatch):
    """The ROAR page's Stop (``services.background.stop_background``: SIGINT) marks the job stopped
    with its units kept; its Resume (``resume_background``: ``cli roar --resume``) trains only the
    rest, to the uninterrupted job's results."""
    from services import background

    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    background.background.clear()
    background.start_background(
        "first", [sys.executable, "-m", "cli", "roar", *ARGS, "--no-estimate", "--quiet", "--json"]
    )
    store, deadline = RunStore(tmp_path, read_only=True), time.monotonic() + 600
    while not (store.catalogue_path.exists() and store.infos() and store.infos()[0].units_done >= 2):
        assert time.monotonic() < deadline and background.is_running("first"), "no second unit"
        time.sleep(0.05)
    assert background.stop_background("first")
    assert background.background().processes["first"].wait(timeout=120) == background.STOPPED_CODE
    stopped = store.infos()[0]
    assert stopped.status == "stopped" and not stopped.being_written and 2 <= stopped.units_done < 8
    assert stopped.run_id == reference[1]
    kept = unit_tables(store, stopped.run_id)
    background.resume_background(stopped.run_id, "roar")
    assert background.background().processes[stopped.run_id].wait(timeout=600) == 0
    assert store.get(stopped.run_id).status == "done"
    assert kept.items() <= unit_tables(store, stopped.run_id).items()  # the stored units were kept as they were
    assert unit_results(store, stopped.run_id) == unit_results(*reference)
    assert unit_tables(store, stopped.run_id) == unit_tables(*reference)


def test_a_units_forward_passes_count_its_explanations(reference):
    """A unit counted the passes of its evaluation only (8 examples), not those of the
    explanations that ranked its words: leave-one-out's pass per word, and the prediction that
    each explanation starts with (random's only pass)."""
    store, run_id = reference
    for meta, _ in unit_meta(store, run_id):
        if meta["method"] == "loo_empty":  # step 0 of its seed: the train and evaluation examples explained
            assert meta["explanations"] > 0 and meta["forward_passes"] >= 8 + 2 * meta["explanations"]
        elif meta["method"] == "random":
            assert meta["explanations"] > 0 and meta["forward_passes"] == 8 + meta["explanations"]
        else:  # the shared models: their evaluation (at 100%, one empty input for all 8)
            assert meta["forward_passes"] == (8 if meta["level"] == "0%" else 1)


def test_stored_curves_give_eq3_and_the_t_test_recomputed_by_hand(reference):
    store, run_id = reference
    rows = unit_results(store, run_id)
    assert len(rows) == 8 and {(r.method, r.level.label) for r in rows if r.method == SHARED} == {
        (SHARED, "0%"),
        (SHARED, "100%"),
    }
    value = {(r.method, r.level.amount, r.seed): r.accuracy for r in rows}
    x = np.array([0.0, 0.1])
    eq3 = []
    for seed in (0, 1):
        zero, floor = value[(SHARED, 0, seed)], value[(SHARED, 100, seed)]
        p = np.array([zero, value[("loo_empty", 10, seed)]])
        b = np.array([zero, value[(RANDOM, 10, seed)]])
        area = np.trapezoid(b - p, x)
        base = np.trapezoid(b - floor, x)
        eq3.append(100 * area / base if base else np.nan)
    eq3 = [v for v in eq3 if np.isfinite(v)]
    from engine.roar.report import job_report

    got = summary(job_report(store, run_id), "accuracy")
    mean = got["faithfulness"]["loo_empty"]["mean"]
    assert (mean is None and not eq3) or mean == pytest.approx(np.mean(eq3))
    a = [value[("loo_empty", 10, s)] for s in (0, 1)]
    b = [value[(RANDOM, 10, s)] for s in (0, 1)]
    test = next(t for t in got["t_tests"] if t["level"] == "10%" and {t["a"], t["b"]} == {"loo_empty", RANDOM})
    expected = stats.ttest_ind(a, b, equal_var=False)
    if np.isfinite(expected.pvalue):
        assert test["p"] == pytest.approx(expected.pvalue)
    curve = {c["level"]: c for c in got["curves"]["loo_empty"]}
    assert curve["10%"]["mean"] == pytest.approx(np.mean([value[("loo_empty", 10, s)] for s in (0, 1)]))
    assert got["floor"] == pytest.approx(np.mean([value[(SHARED, 100, s)] for s in (0, 1)]))


def test_recursive_mlm_keeps_removed_words_and_removes_the_papers_count(tmp_path):
    job = RoarJob(methods=("loo_empty",), levels=(Level(10), Level(30)), seeds=1, removal="mlm", recursive=True, **TINY)
    store = RunStore(tmp_path)
    opened = open_job(job, store)
    info = execute_job(opened, store)
    assert info.status == "done" and info.units_done == 6
    tables = unit_tables(store, info.run_id)
    index = {unit.key: i for i, unit in enumerate(job.units)}
    first, second = tables[index["loo_empty/10%/0"]], tables[index["loo_empty/30%/0"]]
    examples = {"train": opened.data.train, "eval": opened.data.eval}
    for before, after in zip(first, second, strict=True):
        words = examples[after["split"]][after["index"]].words
        assert set(before["removed"]) <= set(after["removed"])  # removed words stay removed
        assert len(before["removed"]) == n_to_remove(len(words), Level(10), "pham2022")
        assert len(after["removed"]) == n_to_remove(len(words), Level(30), "pham2022")
        if after["split"] == "eval":  # masked-LM fill-ins, one per removed word, never empty
            assert len(after["shown"]) == len(after["removed"]) and all(after["shown"])
    assert job.depends_on(job.units[index["loo_empty/30%/0"]]) == job.units[index["loo_empty/10%/0"]]


def test_an_estimate_stores_nothing_and_a_resume_of_changed_files_is_refused(tmp_path, capsys, monkeypatch):
    """``--estimate-only`` once left a job marked running (listed as killed for ever); a resume
    whose encoder or masked-LM files changed silently started another job from nothing."""
    from cli.main import main
    from engine.roar import run as roar_run

    results = tmp_path / "results"
    assert main(["roar", *ARGS, "--estimate-only", "--results-dir", str(results)]) == 0
    printed = capsys.readouterr()
    assert printed.out == ""  # the cost line on stderr is the answer; JSON only with --json
    run_id = re.search(r"^job (run-\w+) \(not stored: an estimate only\)$", printed.err, re.MULTILINE).group(1)
    assert "cost: " in printed.err and "for the whole job" in printed.err and "units left" not in printed.err
    assert not results.exists()  # not even an empty catalogue

    store = RunStore(results)
    opened = open_job(plain_job(), store)
    assert opened.info.run_id == run_id and opened.created
    assert roar_run.prepare_job(plain_job(), store, resume=run_id).run_id == run_id
    monkeypatch.setattr("engine.runs.model_identity.model_fingerprint", lambda source: f"changed:{source}")
    assert main(["roar", "--resume", run_id, "--results-dir", str(results), "--no-estimate", "--quiet"]) == 2
    assert f"job {run_id} no longer matches its encoder, masked-LM or data files" in capsys.readouterr().err
    assert [info.run_id for info in store.infos()] == [run_id]  # no second job


def test_a_job_whose_methods_fill_in_words_is_keyed_by_its_masked_lm(tmp_path):
    """IM and LIME with fill-ins explain through the masked LM, so a changed masked LM is another job."""
    from engine.roar.run import load_data, new_run

    plain, im = plain_job(), RoarJob(methods=("im",), levels=(Level(10),), seeds=2, **TINY)
    assert "mlm_fingerprint" not in new_run(plain, load_data(plain, tmp_path)).key_fields
    assert "mlm_fingerprint" in new_run(im, load_data(im, tmp_path)).key_fields


def test_a_job_is_keyed_by_its_training_recipe(tmp_path, monkeypatch):
    """A task's changed recipe (here its learning rate) trains other models: another job, and the
    old one is not resumed under it (it resumed, mixing units of both recipes)."""
    import dataclasses

    from core.train import TASKS
    from engine.roar.run import load_data, new_run, prepare_job

    store = RunStore(tmp_path / "results")
    before = prepare_job(plain_job(), store)
    recipe = new_run(plain_job(), load_data(plain_job(), tmp_path)).key_fields["recipe"]
    assert recipe["lr"] == TASKS["sst2"].lr and "base_model" not in recipe  # a path into the venv
    monkeypatch.setitem(TASKS, "sst2", dataclasses.replace(TASKS["sst2"], lr=TASKS["sst2"].lr * 2))
    assert prepare_job(plain_job(), store).run_id != before.run_id
    with pytest.raises(ValueError, match="no longer matches .* or its training recipe"):
        prepare_job(plain_job(), store, resume=before.run_id)


def test_a_resume_of_a_job_another_process_writes_is_refused_before_its_cost_is_measured(tmp_path, capsys, monkeypatch):
    """``roar --resume`` of a job being written ran training steps for the estimate, then refused."""
    from cli.main import main
    from tests.test_run_store_claims import claimer, release

    store = RunStore(tmp_path)
    run_id = open_job(plain_job(), store).info.run_id
    store.finish(run_id, "stopped", 0.0)
    monkeypatch.setattr("engine.roar.cost.estimate", lambda *_: pytest.fail("the cost was measured"))
    other = claimer(store.root, run_id)
    try:
        assert other.stdout is not None and other.stdout.readline() == "claimed\n"
        assert main(["roar", "--resume", run_id, "--results-dir", str(tmp_path)]) == 2
        assert f"error: run {run_id} is being written by process {other.pid} on " in capsys.readouterr().err
    finally:
        release(other)


def test_a_serial_job_reports_inside_its_units_through_the_live_file(tmp_path, monkeypatch):
    """A ROAR unit explains and retrains for minutes at a real budget: the job's live file says
    which unit and stage it is at (``engine.runs.live``), and the bar moves between commits."""
    from engine.runs.live import live_path
    from tests.test_run_live import recorded_live

    store = RunStore(tmp_path)
    opened = open_job(RoarJob(methods=("loo_empty",), levels=(Level(10),), seeds=1, **TINY), store)
    run_id = opened.info.run_id
    seen = recorded_live(monkeypatch, store, run_id)  # a ROAR job's rows are its units
    progress = []
    info = execute_job(opened, store, progress=lambda fraction, message: progress.append(message))
    assert info.status == "done" and info.units_total == 4
    messages = [found.message for found, _ in seen]
    assert all(found.pid == os.getpid() for found, _ in seen)
    assert any(
        re.fullmatch(r"unit \d of 4 \(loo_empty/10%/0\) · explaining train example \d of 8", m) for m in messages
    )
    assert any(re.fullmatch(r"unit \d of 4 \(loo_empty/10%/0\) · retraining step 2 of 2", m) for m in messages)
    assert not any("explaining" in m for m in messages if "(*/" in m)  # the 0% and 100% units explain nothing
    assert any(found.fraction * 4 > done for found, done in seen if "retraining" in found.message)
    fractions = [found.fraction for found, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] <= 1.0
    assert progress[0] == "4 of 4 units to run" and progress[-1].endswith("done: 4 of 4 units")
    assert any(m.startswith("loo_empty/10%/0 done: ") for m in progress)
    assert not live_path(store.root, run_id).exists()


def test_a_job_on_ray_gives_the_serial_results_and_reports_inside_its_units(reference, tmp_path, monkeypatch):
    """ROAR's Ray executor (a task per unit, each once its dependency is stored) gives the serial
    job's results, and its tasks' progress reaches the job's live file through the driver."""
    from engine.runs import ray_executor
    from tests.test_run_live import recorded_live

    monkeypatch.setattr(ray_executor, "REPORT_EVERY_S", 0.0)  # the tasks send every report
    store = RunStore(tmp_path)
    opened = open_job(plain_job(), store)
    seen = recorded_live(monkeypatch, store, opened.info.run_id)
    info = execute_job(opened, store, executor="ray")
    assert (info.status, info.units_done, info.executor) == ("done", 8, "ray")
    assert unit_results(store, info.run_id) == unit_results(*reference)
    messages = [found.message for found, _ in seen]
    assert any(" · retraining step " in m for m in messages), messages
    assert any(" · explaining train example " in m for m in messages), messages
    assert all(found.pid == os.getpid() for found, _ in seen)  # the driver writes the file


def test_an_estimate_of_a_finished_job_prints_its_cost_and_touches_nothing(reference, capsys):
    """``--estimate-only`` on a finished job skipped the estimate, claimed the job and printed its
    whole report (with ``--json``, the result instead of the run id and cost)."""
    from cli.main import main

    store, run_id = reference
    before = store.get(run_id)
    argv = ["roar", "--resume", run_id, "--estimate-only", "--json", "--results-dir", str(store.root)]
    assert main(argv) == 0
    printed = capsys.readouterr()
    answer = json.loads(printed.out)
    assert set(answer) == {"run_id", "cost"} and answer["run_id"] == run_id
    assert "for the whole job" in printed.err and "units left" not in printed.err
    assert store.get(run_id) == before  # not claimed, not written


def test_a_pair_jobs_sparsity_is_over_the_words_it_may_remove(tmp_path):
    """In scope ``main`` only a pair's premise is removed, yet the sparsity of the step-0 scores
    was taken over premise and hypothesis: the share the top words hold is now the premise's."""
    from engine.roar.report import SPARSITY_LEVELS, job_report
    from experiments.roar.scores import sparsity

    job = RoarJob(
        task="esnli", methods=("loo_empty",), levels=(Level(10),), seeds=1, train_size=8, eval_size=8, train_steps=2
    )
    store = RunStore(tmp_path)
    opened = open_job(job, store)
    assert execute_job(opened, store).status == "done"
    index = {unit.key: i for i, unit in enumerate(job.units)}
    rows = [r for r in unit_tables(store, opened.info.run_id)[index["loo_empty/10%/0"]] if r["split"] == "eval"]
    premises = [len(opened.data.eval[r["index"]].segments[0]) for r in rows]
    assert all(len(r["scores"]) > n for r, n in zip(rows, premises, strict=True))  # hypotheses scored too

    def shares(scores):
        return {level.label: s.mean for level, s in sparsity(scores, SPARSITY_LEVELS, str(job.rounding)).items()}

    premise_only = shares([np.asarray(r["scores"])[:n] for r, n in zip(rows, premises, strict=True)])
    every_word = shares([np.asarray(r["scores"]) for r in rows])
    reported = job_report(store, opened.info.run_id)["sparsity"]["loo_empty"]
    assert reported == pytest.approx(premise_only) and reported != pytest.approx(every_word)
