"""Runs started in the background: ``cli run`` (and ``cli evaluate``) refuses an empty method or metric list (it does
not quietly run the defaults under another id), and a process that stops at once is reported
with the end of its log."""

from __future__ import annotations

import sys

import pytest

import services
from cli.main import main
from engine.runs.store import RunStore


@pytest.mark.parametrize("option", ["--metrics", "--methods"])
def test_run_refuses_an_empty_list(option, toy_bert_folder, tmp_path, capsys) -> None:
    args = ["run", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "1"]
    assert main([*args, "--executor", "serial", "--results-dir", str(tmp_path), option, ""]) == 2
    assert f"no {option[2:]} in {option} '': name at least one" in capsys.readouterr().err
    assert RunStore(tmp_path, read_only=True).infos() == []  # nothing ran


@pytest.mark.parametrize("option", ["--metrics", "--methods"])
def test_evaluate_refuses_an_empty_list(option, toy_bert_folder, capsys) -> None:
    args = ["evaluate", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2"]
    assert main([*args, option, ""]) == 2
    assert f"no {option[2:]} in {option} '': name at least one" in capsys.readouterr().err


@pytest.fixture
def background():
    services.background.background.clear()
    yield
    services.background.background.clear()


def test_a_process_that_stops_at_once_gives_the_end_of_its_log(background, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    failing = "print('starting'); print('error: no such thing'); raise SystemExit(2)"
    services.background.start_background("run-failing", [sys.executable, "-c", failing])
    assert services.background.early_failure("run-failing", wait_s=60) == "starting\nerror: no such thing"
    services.background.start_background("run-fine", [sys.executable, "-c", "print('done')"])
    assert services.background.early_failure("run-fine", wait_s=60) is None
    services.background.start_background("run-slow", [sys.executable, "-c", "import time; time.sleep(30)"])
    assert services.background.early_failure("run-slow", wait_s=0.1) is None
    services.background.background().processes["run-slow"].kill()
    assert services.background.early_failure("run-unknown") is None
    assert (tmp_path / "logs" / "run-fine.log").read_text() == "done\n"


def test_a_start_says_whether_it_started_a_process(background, tmp_path, monkeypatch) -> None:
    """A second visitor's start of the run whose process is still starting started nothing: it was
    noted as theirs all the same, and got the first visitor's Stop button in shared mode."""
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    slow = [sys.executable, "-c", "import time; time.sleep(30)"]
    assert services.background.start_background("run-slow", slow) is True
    assert services.background.started_here("run-slow")
    assert services.background.start_background("run-slow", slow) is False
    assert not services.background.started_here("run-slow")
    services.background.stop_background("run-slow")


def test_a_shared_server_resumes_no_run_of_a_model_it_does_not_offer(
    background, toy_bert_folder, tmp_path, monkeypatch
) -> None:
    """Resume started ``cli run --resume`` on any stopped run: in shared mode, one of a model
    outside the allow-list too."""
    import re

    from engine.runs.executor import execute, open_run
    from engine.runs.spec import RunSpec
    from services import access

    store = RunStore(tmp_path)
    spec = RunSpec(model=toy_bert_folder, dataset="examples", split="sst2", limit=1, methods=("random",),
                   metrics=("deletion",), seed=0, chunk_size=1)  # fmt: skip
    run_id = execute(open_run(spec, store), store, executor="serial").info.run_id
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv(access.SHARED_ENV, "1")
    monkeypatch.delenv(access.MODELS_ENV, raising=False)
    access.policy.clear()
    try:
        refusal = access.policy().refusal(toy_bert_folder)
        assert refusal is not None
        with pytest.raises(ValueError, match=re.escape(refusal)):
            services.background.resume_background(run_id, "evaluate")
        assert not services.background.is_running(run_id)
    finally:
        access.policy.clear()
