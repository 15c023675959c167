"""tools/gpu_check.sh, read on a machine without a GPU: every command it would run on a lent GPU
parses, and names files, methods, metrics and models that exist. A lent machine is held for
minutes, so a renamed option or method must fail here, not there."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import explainers
from cli.main import build_parser
from core.random_models import PREFIX, SIZES
from engine.evaluate import resolve_metrics

ROOT = Path(__file__).resolve().parent.parent


def _commands(tmp_path: Path) -> list[list[str]]:
    """The script's commands (every step), as it prints them under ``DRY_RUN=1``."""
    env = {**os.environ, "DRY_RUN": "1", "OUT": str(tmp_path / "out")}
    env.pop("STEPS", None)
    printed = subprocess.run(
        ["bash", "tools/gpu_check.sh"], cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return [block.split("\n") for block in printed.split("\n\n") if block.strip()]


def _python_arguments(command: list[str]) -> list[str]:
    """The arguments after ``python3``, past a leading ``env NAME=VALUE ...``."""
    if command[0] == "env":
        command = command[1:]
        while "=" in command[0]:
            command = command[1:]
    assert command[0] == "python3", command
    return command[1:]


def _cli_arguments(arguments: list[str]) -> list[str] | None:
    """The arguments given to ``python -m cli`` (directly or under ``-m cProfile``), or None."""
    if arguments[:2] == ["-m", "cli"]:
        return arguments[2:]
    if arguments[:2] == ["-m", "cProfile"]:
        rest = arguments[2:]
        if rest[0] == "-o":
            rest = rest[2:]
        return _cli_arguments(rest)
    return None


def test_every_step_of_the_gpu_check_is_a_valid_command(tmp_path) -> None:
    commands = _commands(tmp_path)
    assert len(commands) == 11, [c[:6] for c in commands]  # one per step of its default STEPS
    parser = build_parser()
    cli_commands = 0
    for command in commands:
        arguments = _python_arguments(command)
        cli = _cli_arguments(arguments)
        if cli is None:
            scripts = [a for a in arguments if a.endswith(".py")]
            assert scripts and all((ROOT / s).is_file() for s in scripts), command
            continue
        cli_commands += 1
        try:
            args = parser.parse_args(cli)
        except SystemExit:
            pytest.fail(f"the CLI refuses: {' '.join(cli)}")
        explainers.resolve(args.methods)
        if getattr(args, "metrics", None):
            resolve_metrics(args.metrics)
        for model in (args.model, getattr(args, "mlm", None)):
            if model and model.startswith(PREFIX):
                assert model.removeprefix(PREFIX) in SIZES, model
    assert cli_commands == 9


def test_a_dry_run_writes_nothing_but_its_output_folder(tmp_path) -> None:
    _commands(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert list((tmp_path / "out").iterdir()) == []
