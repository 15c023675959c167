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
