"""Flags the commands once took at face value: zero and negative numbers, out-of-range values,
contradictory flags and paths found bad only after the long work. Each is refused up front with a
one-line ``error:`` naming the bad value (exit status 2), or its message names what the user gave."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli.main import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "imports"


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    """The exit status, stdout and the last stderr line of ``python -m cli ARGV``."""
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own errors
        code = stop.code if isinstance(stop.code, int) else 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    return code, captured.out, lines[-1] if lines else ""


def refused(capsys, argv: list[str], *names: str) -> str:
    code, out, last = run(capsys, argv)
    assert code == 2, f"accepted: {out[:200]}"
    assert "error:" in last and all(name in last for name in names), last
    return last


@pytest.fixture
def no_training(monkeypatch):
    """Training (or a ROAR job) starting is a failure of these tests, never hours of work."""
    import core.train
    import engine.roar.run

    def started(*args, **kwargs):
        raise AssertionError("the work started")

    for name in ("train_classifier", "train_mlm"):
        monkeypatch.setattr(core.train, name, started)
    monkeypatch.setattr(engine.roar.run, "prepare_job", started)


# ---------------------------------------------------------------------------- train (finding 6)


@pytest.mark.parametrize(
    "flag, value",
    [("--steps", "0"), ("--steps", "-3"), ("--lr", "0"), ("--lr", "-1"), ("--lr", "nan"), ("--train-limit", "0")]
    + [("--train-limit", "-1"), ("--eval-limit", "0")],
)
def test_train_refuses_numbers_below_one(capsys, tmp_path, no_training, flag, value) -> None:
    refused(capsys, ["train", "sst2", flag, value, "--out", str(tmp_path / "model")], flag, value)


def test_run_training_takes_only_none_as_the_default(tmp_path, monkeypatch) -> None:
    import core.train

    seen = []

    def fake(cfg, data_root, out):
        seen.append(cfg)
        out.mkdir(parents=True, exist_ok=True)
        return {}

    monkeypatch.setattr(core.train, "train_classifier", fake)
    core.train.run_training("sst2", None, tmp_path / "model", None, 0)
    assert (seen[0].steps, seen[0].lr) == (core.train.TASKS["sst2"].steps, core.train.TASKS["sst2"].lr)
    for name, bad in (("steps", 0), ("steps", -3), ("lr", 0.0), ("train_limit", -1), ("eval_limit", 0)):
        with pytest.raises(ValueError, match=f"{name} must be above 0"):
            core.train.run_training("sst2", None, tmp_path / "model", **{"steps": None, "seed": 0, name: bad})
    assert len(seen) == 1


def test_train_checks_out_before_training(capsys, tmp_path, no_training) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    refused(capsys, ["train", "sst2", "--steps", "1", "--out", str(blocker / "model")], str(blocker / "model"))
    refused(capsys, ["train", "sst2", "--steps", "1", "--out", str(blocker)], str(blocker), "not a folder")


# ----------------------------------------------------------------------------- fill (finding 9)


@pytest.mark.parametrize("k", ["0", "-3"])
def test_fill_k_must_be_positive(capsys, k) -> None:
    refused(capsys, ["fill", "--text", "a [MASK] film", "--k", k], "--k", k)


def test_fill_k_at_most_the_vocabulary(capsys, model_dirs) -> None:
    from tests.toy import VOCAB

    mlm = str(model_dirs[1])
    refused(capsys, ["fill", "--model", mlm, "--text", "a [MASK] film", "--k", "100000"], "--k 100000", "vocabulary")
    code, out, _ = run(capsys, ["fill", "--model", mlm, "--text", "good [MASK]", "--k", str(len(VOCAB))])
    assert code == 0 and out.count('"token"') == len(VOCAB)


# ----------------------------------------------------------------------------- roar (finding 10)


def test_roar_refuses_estimate_only_with_no_estimate(capsys, tmp_path, no_training) -> None:
    argv = ["roar", "--estimate-only", "--no-estimate", "--results-dir", str(tmp_path)]
    refused(capsys, argv, "--estimate-only", "--no-estimate")


def test_roar_checks_export_before_the_job(capsys, tmp_path, no_training) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for export in (blocker / "report.json", tmp_path):
        refused(capsys, ["roar", "--export", str(export), "--results-dir", str(tmp_path / "results")], str(export))


@pytest.mark.parametrize(("flag", "split"), [("--train-size", "sst2/train"), ("--eval-size", "sst2/dev")])
def test_roar_refuses_a_size_past_the_end_of_the_split(capsys, tmp_path, flag, split) -> None:
    """``--train-size 10**23`` silently trained on the whole split, while ``run --limit`` refuses it."""
    argv = ["roar", "--methods", "loo_empty", flag, str(10**23), "--estimate-only", "--results-dir", str(tmp_path)]
    refused(capsys, argv, str(10**23), f"examples of {split}")


def test_run_refuses_a_chunk_size_the_catalogue_cannot_hold(capsys, tmp_path, toy_bert_folder) -> None:
    """A chunk size of 2**31 or more ended in DuckDB's INT32 ConversionException."""
    argv = ["run", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2"]
    argv += ["--chunk-size", str(2**31), "--executor", "serial", "--results-dir", str(tmp_path)]
    refused(capsys, argv, f"--chunk-size must be a whole number from 1 to 2,147,483,647, got {2**31}")


@pytest.mark.parametrize(
    "command", [["run", "--dataset", "examples", "--split", "sst2"], ["explain", "--text", "fine"]]
)
def test_every_command_takes_the_seeds_a_run_keeps(capsys, tmp_path, toy_bert_folder, command) -> None:
    """A run refused a seed of 2**31 or more that the other commands took (numpy's 2**32 - 1)."""
    argv = [*command, "--model", toy_bert_folder, "--seed", str(2**31)]
    with pytest.raises(SystemExit):
        main(argv)
    assert "a seed must be in [0, 2**31 - 1], got 2147483648" in capsys.readouterr().err


# --------------------------------------------------------------------------- import (finding 11)


@pytest.mark.parametrize("metrics", ["", ",,"])
def test_import_refuses_an_empty_metric_list(capsys, tmp_path, toy_bert_folder, metrics) -> None:
    from engine.runs.store import RunStore

    argv = ["import", str(FIXTURES / "ferret.json"), "--model", toy_bert_folder, "--metrics", metrics]
    refused(capsys, [*argv, "--results-dir", str(tmp_path), "--quiet"], "--metrics")
    assert RunStore(tmp_path).infos() == []


# ---------------------------------------------------------------------------- bench (finding 14)


def test_bench_group_help_gives_a_runs_group(capsys) -> None:
    from engine.evaluate import DEFAULT_GROUP
    from engine.runs.spec import DEFAULT_CHUNK_SIZE

    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"default {DEFAULT_GROUP}" in text and f"--chunk-size, at most {DEFAULT_CHUNK_SIZE} by default" in text
    assert "8 per unit" not in text


# -------------------------------------------------------------------- data folders (finding 15)


def test_a_missing_data_dir_is_named(capsys, tmp_path, toy_bert_folder) -> None:
    from core.datasets import load_examples

    missing = str(tmp_path / "no-such-data")
    refused(capsys, ["datasets", "--data-dir", missing], "--data-dir", missing)
    argv = ["predict", "--model", toy_bert_folder, "--dataset", "sst2", "--split", "dev", "--data-dir", missing]
    assert "ATTRIBUTION_DATA_DIR" not in refused(capsys, argv, missing)
    with pytest.raises(FileNotFoundError, match=re.escape(missing)):
        load_examples("sst2", "dev", missing)


# ------------------------------------------------------------------------- predict (finding 16)


def test_predict_names_the_line_of_a_bad_text(capsys, tmp_path, toy_bert_folder) -> None:
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"text": "good film"}\n{"text": "  "}\n')
    refused(capsys, ["predict", "--model", toy_bert_folder, "--texts", str(texts)], f"{texts}:2", "empty")


@pytest.mark.parametrize("threshold", ["0", "-0.5", "2", "nan"])
def test_predict_threshold_is_a_probability(capsys, tmp_path, toy_bert_folder, threshold) -> None:
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"text": "good film"}\n')
    argv = ["predict", "--model", toy_bert_folder, "--texts", str(texts), "--threshold", threshold]
    refused(capsys, argv, "--threshold", threshold)


# --------------------------------------------------------------------------- models (finding 17)


@pytest.mark.parametrize("command", ["predict", "fill"])
def test_an_unknown_model_lists_the_bundled_ones(capsys, tmp_path, monkeypatch, command) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"text": "a [MASK] film"}\n')
    argv = [command, "--model", "no-such-model-xyz", "--texts", str(texts)]
    last = refused(capsys, argv, "no-such-model-xyz", "minilm-sst2", "minilm-mlm")
    assert len(last) < 500, last


# --------------------------------------------------------------------------- README (finding 19)


def test_readme_train_row_names_every_task() -> None:
    from cli.main import build_parser

    train = build_parser()._subparsers._group_actions[0].choices["train"]
    tasks = next(action.choices for action in train._actions if action.dest == "task")
    row = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| `train TASK"))
    assert [task for task in tasks if f"`{task}`" not in row] == []


def test_a_reader_that_goes_away_is_not_an_error(tmp_path) -> None:
    """``python -m cli runs | head -1`` ended in "error: [Errno 32] Broken pipe" and status 2."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "cli", "methods"], cwd=Path(__file__).resolve().parents[1], stdout=write,
            stderr=subprocess.PIPE, text=True, check=False, env={**os.environ, "ATTRIBUTION_RESULTS_DIR": str(tmp_path)},
        )  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 0 and "Broken pipe" not in done.stderr, done.stderr


def test_a_results_dir_that_is_no_folder_is_named_not_read_as_an_empty_store(capsys, tmp_path) -> None:
    """``runs --results-dir`` with a typo printed "no runs in ..." and exited 0."""
    (tmp_path / "a-file").write_text("not a store")
    for folder, said in ((tmp_path / "nope", "no such folder"), (tmp_path / "a-file", "a file, not a folder")):
        for argv in (["runs"], ["show", "run-000000000000"], ["reproduce", "marc-table1", "--cached"]):
            refused(capsys, [*argv, "--results-dir", str(folder)], f"--results-dir {folder}: {said}")
    assert not (tmp_path / "nope").exists()


def test_run_names_its_options_in_a_refused_setting(capsys, tmp_path, toy_bert_folder) -> None:
    """The run's settings are refused by the engine in the API's words (``params``); the command
    line words them with its own options."""
    argv = ["run", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2"]
    argv += ["--methods", "loo_empty", "--param", "lime.n_samples=5", "--results-dir", str(tmp_path)]
    refused(capsys, argv, "--param for methods or metrics not requested: lime")


def test_a_results_folder_that_is_a_file_is_refused_for_writers_and_by_variable(
    capsys, tmp_path, toy_bert_folder, monkeypatch
) -> None:
    """A writer said "Not a directory: X/runs" at its first write; ``$ATTRIBUTION_RESULTS_DIR``
    naming a file read as an empty store ("no runs in X", exit 0)."""
    from engine.runs.store import RESULTS_ENV

    a_file = tmp_path / "a-file"
    a_file.write_text("not a store")
    argv = ["run", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2"]
    argv += ["--methods", "loo_empty", "--metrics", "deletion", "--executor", "serial", "--results-dir", str(a_file)]
    refused(capsys, argv, f"results folder {a_file}: a file, not a folder")
    monkeypatch.setenv(RESULTS_ENV, str(a_file))
    refused(capsys, ["runs"], f"results folder {a_file}: a file, not a folder")
    assert a_file.read_text() == "not a store"


@pytest.mark.parametrize(
    "extra, said",
    [
        (["--seeds", "0"], "--seeds must be a whole number from 1 to 100, got 0"),
        (["--train-size", "-5"], "--train-size must be a whole number of at least 1, got -5"),
        (["--train-steps", "0"], "--train-steps must be a whole number"),
    ],
)
def test_roar_names_its_options_in_a_refused_setting(capsys, tmp_path, no_training, extra, said) -> None:
    argv = ["roar", "--methods", "loo_empty", *extra, "--estimate-only", "--results-dir", str(tmp_path)]
    last = refused(capsys, argv, said)
    assert "train_size" not in last and "train_steps" not in last


def test_roar_refuses_a_model_with_random_weights_before_storing_anything(capsys, tmp_path, no_training) -> None:
    """``roar --model random:minilm`` failed in the hub's repo-id check and left a failed job."""
    argv = ["roar", "--model", "random:minilm", "--dataset", "sst2", "--methods", "saliency", "--train-steps", "1"]
    refused(capsys, [*argv, "--no-estimate", "--results-dir", str(tmp_path)], "--model 'random:minilm' has random")
    assert not any(tmp_path.iterdir())


def test_reproduce_list_refuses_the_options_of_a_computation(capsys) -> None:
    """``reproduce --list --limit 3`` (or --cached, --refresh) listed and dropped the option."""
    for extra in (["--limit", "3"], ["--cached"], ["--refresh"]):
        refused(capsys, ["reproduce", "--list", *extra], "--list", extra[0])


@pytest.mark.parametrize("command", [["run", "--executor", "serial"], ["evaluate"]])
def test_a_data_dir_that_is_no_folder_is_refused_by_every_command(capsys, tmp_path, toy_bert_folder, command) -> None:
    """``predict`` refused ``--data-dir /nonexist`` while ``run`` and ``evaluate`` ignored it and
    read the bundled examples."""
    if command[0] == "run":
        command = [*command, "--results-dir", str(tmp_path / "results")]
    argv = [*command, "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--methods", "random"]
    argv += ["--limit", "1", "--metrics", "deletion", "--data-dir", str(tmp_path / "nonexist")]
    refused(capsys, argv, f"--data-dir {tmp_path / 'nonexist'}: no such folder")


def test_predict_refuses_a_limit_past_the_splits_end(capsys, toy_bert_folder) -> None:
    """``predict --limit 100000`` gave the whole split, where ``run`` and ``evaluate`` refuse it."""
    argv = ["predict", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "100000"]
    refused(capsys, argv, "a limit of 100000 is more than the")


def test_resuming_a_serial_run_with_ray_options_says_which_executor(capsys, tmp_path, toy_bert_folder) -> None:
    """The refusal blamed "the serial executor" the user never chose: the stored run's."""
    argv = ["run", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "1"]
    argv += ["--methods", "random", "--metrics", "deletion", "--executor", "serial", "--quiet", "--json"]
    assert main([*argv, "--results-dir", str(tmp_path)]) == 0
    run_id = json.loads(capsys.readouterr().out)["run"]["run_id"]
    resume = ["run", "--resume", run_id, "--actors", "2", "--results-dir", str(tmp_path)]
    refused(capsys, resume, f"run {run_id} ran on the serial executor: add --executor ray")


def test_show_of_a_failed_run_that_stored_nothing_exits_1(capsys, tmp_path, toy_bert_folder) -> None:
    """``show`` of a failed run with none of its examples stored exited 0, as for a finished one
    (a failed run's stored examples are still a result: ``tests/test_runs.py``)."""
    from engine.runs.executor import open_run
    from engine.runs.spec import RunSpec
    from engine.runs.store import RunStore

    store = RunStore(tmp_path)
    spec = RunSpec(toy_bert_folder, "examples", "sst2", limit=2, methods=("random",), metrics=("deletion",))
    run_id = open_run(spec, store).info.run_id
    store.finish(run_id, "failed", 1.0, "the worker ran out of memory")
    assert main(["show", run_id, "--results-dir", str(tmp_path)]) == 1
    assert "failed, 0 of 2 examples" in capsys.readouterr().out
