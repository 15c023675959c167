"""Ctrl-C outside a command's own guard (while the model loads, the first seconds of ``run``,
``roar``, ``evaluate`` and ``explain``) prints one line and exits 130, not a traceback."""

from __future__ import annotations

import pytest

import core.loaded
from cli.main import main


def interrupted(*_args, **_kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "argv",
    [
        ["explain", "--model", "minilm-sst2", "--text", "a fine film"],
        ["evaluate", "--model", "minilm-sst2", "--dataset", "sst2", "--split", "dev", "--limit", "2"],
    ],
)
def test_ctrl_c_while_the_model_loads_is_one_line_and_exit_130(argv, monkeypatch, capsys) -> None:
    monkeypatch.setattr(core.loaded, "load_classifier", interrupted)
    assert main(argv) == 130
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"{argv[0]} stopped (Ctrl-C)\n"


@pytest.mark.parametrize(
    ("raised", "status"),
    [(KeyboardInterrupt(), 130), (SystemExit(143), 143), (SystemExit(3), 3), (SystemExit(0), 1), (SystemExit(), 1)],
)
def test_a_stopped_run_exits_with_its_own_status(raised, status, tmp_path, monkeypatch, capsys) -> None:
    """Every ``SystemExit`` inside ``run`` exited 143, SIGTERM's status, whatever its code: a
    library's ``sys.exit(3)`` read as a kill. One without a code, or with 0, is 1: a run stopped
    part-way is no success. The run is kept as stopped either way."""
    import engine.runs.executor

    def stopping(*_args, **_kwargs):
        raise raised

    monkeypatch.setattr(engine.runs.executor, "execute", stopping)
    argv = ["run", "--model", "minilm-sst2", "--dataset", "sst2", "--split", "dev", "--limit", "2"]
    assert main([*argv, "--methods", "random", "--executor", "serial", "--results-dir", str(tmp_path)]) == status
    assert "stopped after 0 of 2 examples; continue it with" in capsys.readouterr().err
