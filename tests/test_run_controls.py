"""Stop, Resume and Delete of a stored run from its page (``ui.run_progress``): Stop sends the
process this server started the signal Ctrl-C sends, Resume starts ``python -m cli run --resume``
with the run's own settings, Delete removes the run and the page goes on with another; and, with
real processes, a stopped run keeps its stored examples and a resumed one computes only the rest."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import services
from engine.runs.spec import RunSpec
from engine.runs.store import RunStore
from services import access
from tests.fake_processes import Process
from tests.test_explorer_runs import model, open_explorer, start_form, stored, toy_spec  # noqa: F401 - the model fixture

POPEN = subprocess.Popen  # the real one, while ``started`` fakes the app's


def half_done(folder: str, results: Path, seed: int, claim: bool = False) -> str:
    """A run of 4 examples with its first unit of 2 stored (ended by an error), claimed by this
    test's process when ``claim`` (running, its writer alive); its id. Real processes meanwhile."""
    with pytest.MonkeyPatch.context() as real:
        real.setattr(subprocess, "Popen", POPEN)  # git, for the code version
        run_id = stored(toy_spec(folder, limit=4, seed=seed), results, units=1)
        if claim:
            RunStore(results).claim(run_id, "serial")
    return run_id


@pytest.fixture
def shared(monkeypatch):
    """Shared mode (any model folder refused: the page opens on no model)."""
    monkeypatch.setenv(access.SHARED_ENV, "1")
    monkeypatch.delenv(access.MODELS_ENV, raising=False)
    monkeypatch.delenv(access.PASSWORD_ENV, raising=False)
    access.policy.clear()
    yield
    access.policy.clear()


def buttons(at) -> list[str]:
    return [b.label for b in at.button]


def test_a_stopped_run_resumes_with_its_own_settings(model, tmp_path, started, monkeypatch) -> None:  # noqa: F811
    run_id = half_done(model, tmp_path, seed=3)
    info = RunStore(tmp_path, read_only=True).get(run_id)
    assert info.status == "failed" and info.rows_done == 2  # the test's stop is an error, not Ctrl-C
    at = open_explorer(model, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert "Stop the run" not in buttons(at) and "Resume the run" in buttons(at)
    assert any(c.value.startswith("It ended with: Stop") for c in at.caption)
    assert [b for b in at.button if b.key == f"runs.delete.{run_id}"]
    monkeypatch.setattr(Process, "code", None)  # the resumed process runs on
    at.button(key=f"runs.resume.{run_id}").click().run()
    assert not at.exception, at.exception
    [process] = started
    assert process.command[1:] == ["-m", "cli", "run", "--resume", run_id, "--executor", "serial", "--quiet", "--json"]
    assert "Resume the run" not in buttons(at)
    assert any("Its process is starting" in c.value for c in at.caption)
    assert not [b for b in at.button if b.key == f"runs.delete.{run_id}"]  # not while its process starts


def test_stop_signals_the_process_this_server_started(model, tmp_path, started, monkeypatch) -> None:  # noqa: F811
    run_id = half_done(model, tmp_path, seed=4, claim=True)  # running, its writer (this test) alive
    monkeypatch.setattr(Process, "code", None)
    services.background.start_background(run_id, ["python", "-m", "cli", "run", "--resume", run_id])
    at = open_explorer(model, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert "Stop the run" in buttons(at) and "Resume the run" not in buttons(at)
    at.button(key=f"runs.stop.{run_id}").click().run()
    assert started[0].signals == [signal.SIGINT]


def test_shared_mode_stop_is_for_the_starting_session(model, tmp_path, started, shared, monkeypatch) -> None:  # noqa: F811
    """In shared mode only the session that started a run stops it (this one started none)."""
    run_id = half_done(model, tmp_path, seed=6, claim=True)
    monkeypatch.setattr(Process, "code", None)
    services.background.start_background(run_id, ["python", "-m", "cli", "run", "--resume", run_id])
    at = open_explorer("", tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert "Stop the run" not in buttons(at)


def test_shared_mode_resume_waits_for_another_process(model, tmp_path, started, shared, monkeypatch) -> None:  # noqa: F811
    """In shared mode Resume is refused while another background process runs, and says so."""
    run_id = half_done(model, tmp_path, seed=7)
    # The run's toy model folder is not offered on a shared server, which Resume refuses first
    # (tests/test_runs_background.py); here the model passes, to reach the busy check.
    monkeypatch.setattr(services.background, "check_model", lambda name: None)
    monkeypatch.setattr(Process, "code", None)
    services.background.start_background("run-other", ["python", "-m", "cli", "run"])
    at = open_explorer("", tmp_path, monkeypatch)
    at.button(key=f"runs.resume.{run_id}").click().run()
    assert not at.exception, at.exception
    assert len(started) == 1
    [refusal] = [e.value for e in at.error]
    assert refusal.startswith("This server runs one background job at a time and run\\-other is still running")
    at.run()  # drawn again (the fragment's tick): the refusal stays
    assert [e.value for e in at.error] == [refusal]


def test_delete_removes_the_picked_run_and_the_page_shows_another(model, tmp_path, monkeypatch) -> None:  # noqa: F811
    older = stored(toy_spec(model, limit=2, seed=8), tmp_path)
    newer = stored(toy_spec(model, limit=2, seed=9), tmp_path)
    at = open_explorer(model, tmp_path, monkeypatch, **{"explorer.run": older})
    assert at.selectbox(key="explorer.run_picker").value == older
    at.button(key=f"runs.delete.{older}").click().run()
    assert not at.exception, at.exception
    assert [i.run_id for i in RunStore(tmp_path, read_only=True).infos()] == [newer]
    assert not (tmp_path / "runs" / older).exists()
    picker = at.selectbox(key="explorer.run_picker")
    assert picker.value == newer and picker.options == [services.runs.run_label(_row(tmp_path, newer))]
    assert at.query_params["run"] == newer
    assert [t.value for t in at.toast] == [f"Deleted `{older}`"]
    at.button(key=f"runs.delete.{newer}").click().run()
    assert not at.exception, at.exception
    assert "No stored run yet" in at.info[-1].value


def test_no_delete_in_shared_mode(model, tmp_path, shared, monkeypatch) -> None:  # noqa: F811
    done = stored(toy_spec(model, limit=2, seed=10), tmp_path)
    at = open_explorer("", tmp_path, monkeypatch)
    assert not [b for b in at.button if b.key == f"runs.delete.{done}"]
    with pytest.raises(ValueError, match="not deleted on a shared server"):
        services.runs.delete_run(done)
    assert RunStore(tmp_path, read_only=True).find(done) is not None


def test_no_delete_while_a_process_writes_the_run(model, tmp_path, monkeypatch) -> None:  # noqa: F811
    run_id = half_done(model, tmp_path, seed=11, claim=True)
    at = open_explorer(model, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert not [b for b in at.button if b.key == f"runs.delete.{run_id}"]


def test_starting_a_stored_run_again_says_so_and_starts_nothing(model, tmp_path, started, monkeypatch) -> None:  # noqa: F811
    """ "Start the run" with the settings of a run stored already said the run "goes on in the
    background" though no process started; it now says the run is stored already."""
    at = open_explorer(model, tmp_path, monkeypatch, **{"sidebar.dataset": "examples", "sidebar.split": "sst2"})
    start_form(at, ["deletion"])
    run_id = at.session_state["explorer.starting"]
    assert "goes on in the background" in at.success[0].value and len(started) == 1
    spec = RunSpec(model=model, dataset="examples", split="sst2", limit=1, methods=("random",), metrics=("deletion",))
    with pytest.MonkeyPatch.context() as real:
        real.setattr(subprocess, "Popen", POPEN)
        assert stored(spec, tmp_path) == run_id  # what the process would have stored
    started[0].finish()
    start_form(at, ["deletion"])
    assert not at.exception, at.exception
    assert len(started) == 1 and not at.success
    assert f"Run `{run_id}` is stored already with these settings: nothing was computed again." in [
        i.value for i in at.info
    ]


def _row(results: Path, run_id: str) -> dict:
    return RunStore(results, read_only=True).list_runs().set_index("run_id").loc[run_id].to_dict() | {"run_id": run_id}


@pytest.mark.slow  # two real `python -m cli run` processes on the toy model
def test_a_real_run_stopped_keeps_its_examples_and_resumed_computes_the_rest(model, tmp_path, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setattr(subprocess, "Popen", POPEN)
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    services.background.background.clear()
    command = [sys.executable, "-m", "cli", "run", "--model", model, "--dataset", "sst2", "--split", "dev"]
    command += ["--limit", "400", "--chunk-size", "2", "--methods", "random", "--metrics", "deletion"]
    command += ["--executor", "serial", "--quiet", "--json"]
    services.background.start_background("first", command)
    store = RunStore(tmp_path, read_only=True)
    run_id = _wait(lambda: store.infos()[0].run_id if store.catalogue_path.exists() and store.infos() else None)
    _wait(lambda: store.get(run_id).rows_done >= 2 or None)
    assert services.background.stop_background("first")
    assert services.background.background().processes["first"].wait(timeout=60) == services.background.STOPPED_CODE
    stopped = store.get(run_id)
    assert stopped.status == "stopped" and 2 <= stopped.rows_done < 400, (stopped.status, stopped.rows_done)
    kept = set(store.done_units(run_id))
    assert services.background.early_failure(run_id, wait_s=0) is None  # a stop is not a failure
    services.background.resume_background(run_id, "evaluate")
    assert services.background.background().processes[run_id].wait(timeout=300) == 0
    done = store.get(run_id)
    assert done.status == "done" and done.rows_done == 400
    assert kept <= set(store.done_units(run_id)) and len(store.done_units(run_id)) == 200
    log = (Path(tmp_path) / "logs" / f"{run_id}.log").read_text()
    assert f"run {run_id} (stopped, {stopped.rows_done} of 400 examples stored)" in log, log[-2000:]


def _wait(found, timeout_s: float = 120.0):
    """``found()`` once it is not None, polled every 20 ms."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = found()
        if value is not None:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_the_bar_moves_inside_a_unit_with_where_the_writer_is(model, tmp_path, monkeypatch) -> None:  # noqa: F811
    """Between stored units the bar follows the run's live file (``engine.runs.live``) and says
    what its process does; the file of a run no live process writes is not read."""
    from engine.runs.live import LiveWriter

    run_id = half_done(model, tmp_path, seed=5, claim=True)  # 2 of 4 stored; this process writes it
    LiveWriter(tmp_path, run_id, lambda: 61.4).report(0.75, "example 4 of 4 · explaining integrated_gradients: 40%")
    at = open_explorer(model, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    [bar] = at.get("progress")
    assert bar.proto.value == 75
    assert bar.proto.text.startswith("2 of 4 examples · running · 61 s · ")  # the writer's seconds
    assert bar.proto.text.endswith(r" · now example 4 of 4 · explaining integrated\_gradients: 40%")
    RunStore(tmp_path).finish(run_id, "stopped", 1.0)
    at.run()
    [bar] = at.get("progress")
    assert bar.proto.value == 50 and "now" not in bar.proto.text


def test_a_run_whose_writer_is_gone_reads_killed_and_offers_resume(model, tmp_path, monkeypatch) -> None:  # noqa: F811
    """A run marked running whose process is gone is not running: the picker says ``killed`` (as
    ``cli runs`` and ``api.runs`` do), its bar says why it stopped, and it can be resumed."""
    run_id = half_done(model, tmp_path, seed=4, claim=True)
    with RunStore(tmp_path)._connect() as con:  # the pid is alive, but it started after the writer did
        con.execute("UPDATE runs SET pid_started = pid_started - 3600 WHERE run_id = ?", [run_id])
    info = RunStore(tmp_path, read_only=True).get(run_id)
    assert info.status == "running" and info.shown_status == "killed"
    at = open_explorer(model, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    [label] = at.selectbox(key="explorer.run_picker").options
    assert label.endswith(" · 2/4 · killed"), label
    assert at.get("progress")[0].proto.text == f"2 of 4 examples · stopped (its process is gone) · {info.wall_s:.0f} s"
    assert "Resume the run" in buttons(at) and "Stop the run" not in buttons(at)
