"""A run is ``done`` only with every unit committed, ``--actors`` below 1 is refused, ``run --resume``
checks that the stored run still matches before it writes anything (and says why not), and
``show`` / ``run --resume`` of a ROAR job or a reproduction name the command that handles it."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
import torch

import engine.runs.executor as executor_module
from cli.main import main
from engine.runs.executor import execute, open_run, prepare, resume_spec
from engine.runs.records import NewRun, UnitStats
from engine.runs.spec import RunSpec
from engine.runs.store import RunStore
from tests.toy import toy_bert

RUN = ["--dataset", "examples", "--split", "sst2", "--methods", "random", "--metrics", "deletion"]


def small_spec(model: str, **changes) -> RunSpec:
    fields = {"model": model, "dataset": "examples", "split": "sst2", "limit": 3, "methods": ("random",),
              "metrics": ("deletion",), "seed": 1, "chunk_size": 1}  # fmt: skip
    return RunSpec(**{**fields, **changes})


def other_kind(store: RunStore, kind: str, model: str, selection: dict) -> str:
    """A stored run of ``kind`` (a ROAR job's or a reproduction's rows: no ``position`` column) whose
    model, data, methods and metrics an evaluate run could take."""
    new = NewRun(key_fields={"kind": kind, **selection}, kind=kind, model=model, model_fingerprint="",
                 dataset="examples", split="sst2", selection={**selection, "limit": 2}, methods=["random"],
                 metrics=["deletion"], params={}, overrides={}, seed=None, target="predicted",
                 label_names=("negative", "positive"), chunk_size=1, rows_total=2)  # fmt: skip
    table = pa.table({"split": ["train"], "index": [0]})
    if kind == "reproduce":
        return store.save_whole(new, UnitStats(0, 0, 1, 0, 0.0, 0.0), table, 1.0).run_id
    run_id = store.create_or_resume(new)[0].run_id
    store.commit_unit(run_id, UnitStats(0, 0, 1, 0, 0.0, 0.0), table, 1.0)
    store.finish(run_id, "stopped", 1.0)
    return run_id


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_an_executor_that_returns_with_units_missing_fails_the_run(toy_bert_folder, tmp_path, monkeypatch) -> None:
    def lost_units(spec, units, commit, ready=None, *, within=None, address=None, actors=None, results=None):
        return {}  # as Ray's ActorPool with no actors (--actors -1 on a GPU cluster): no unit comes back

    store = RunStore(tmp_path)
    spec = small_spec(toy_bert_folder)
    monkeypatch.setattr(executor_module, "run_ray", lost_units)
    with pytest.raises(ValueError, match=r"3 of its 3 units were not computed \(the ray executor returned"):
        execute(open_run(spec, store), store, executor="ray")
    (info,) = store.infos()
    assert (info.status, info.units_done) == ("failed", 0)
    assert info.error.startswith("ValueError: run ") and "3 of its 3 units" in info.error
    resumed = execute(open_run(resume_spec(store, info.run_id), store, resume=info.run_id), store, executor="serial")
    assert (resumed.info.status, resumed.info.units_done, resumed.computed_units) == ("done", 3, 3)


@pytest.mark.parametrize("actors", ["0", "-1"])
def test_actors_below_one_are_refused_before_anything_is_stored(actors, toy_bert_folder, tmp_path, capsys) -> None:
    args = ["run", "--model", toy_bert_folder, *RUN, "--limit", "1", "--executor", "serial", "--actors", actors]
    assert main([*args, "--results-dir", str(tmp_path), "--quiet"]) == 2
    assert f"--actors must be at least 1, got {actors}" in one_error_line(capsys)
    assert RunStore(tmp_path, read_only=True).infos() == []


def test_resume_of_a_changed_model_says_so_and_stores_no_new_run(toy_bert_folder, tmp_path) -> None:
    model = tmp_path / "model"
    loaded = toy_bert()
    loaded.model.save_pretrained(model)
    loaded.tokenizer.save_pretrained(model)
    store = RunStore(tmp_path / "results")
    run_id = open_run(small_spec(str(model)), store).info.run_id
    store.finish(run_id, "stopped", 0.0)
    with torch.no_grad():
        loaded.model.classifier.bias[0] += 0.5
    loaded.model.save_pretrained(model)
    with pytest.raises(ValueError, match=f"run {run_id} cannot be resumed: the files of its model .* changed since"):
        open_run(resume_spec(store, run_id), store, resume=run_id)
    assert [info.run_id for info in store.infos()] == [run_id]


def test_resume_after_a_default_parameter_changed_names_it(toy_bert_folder, tmp_path, monkeypatch) -> None:
    store = RunStore(tmp_path)
    run_id = open_run(small_spec(toy_bert_folder), store).info.run_id
    store.finish(run_id, "failed", 0.0, "Interrupted")
    resolved = RunSpec.resolved_params

    def new_default(spec: RunSpec) -> dict:
        params = resolved(spec)
        return {**params, "deletion": {**params["deletion"], "fraction": 0.3}}

    monkeypatch.setattr(RunSpec, "resolved_params", new_default)
    with pytest.raises(ValueError, match="cannot be resumed: the default parameters of deletion changed since"):
        open_run(resume_spec(store, run_id), store, resume=run_id)
    assert [info.run_id for info in store.infos()] == [run_id]


@pytest.mark.parametrize("kind", ["roar", "reproduce"])
def test_resume_of_another_kind_names_its_command_and_stores_nothing(kind, toy_bert_folder, tmp_path, capsys) -> None:
    store = RunStore(tmp_path)
    run_id = other_kind(store, kind, toy_bert_folder, {"name": "a-reproduction"})
    assert main(["run", "--resume", run_id, "--executor", "serial", "--results-dir", str(tmp_path), "--quiet"]) == 2
    err = one_error_line(capsys)
    assert "`run --resume` continues dataset evaluations only" in err and f"(kind {kind})" in err
    command = f"roar --resume {run_id}" if kind == "roar" else "reproduce a-reproduction --cached --limit 2"
    assert f"`python -m cli {command} --results-dir {tmp_path}`" in err  # the store the run is in
    with pytest.raises(
        ValueError, match=f"run {run_id} cannot be resumed: it is a run of kind {kind}, not a dataset evaluation"
    ):
        open_run(small_spec(toy_bert_folder), store, resume=run_id)  # the engine's own check
    assert [info.run_id for info in store.infos()] == [run_id]


@pytest.mark.parametrize("kind", ["roar", "reproduce"])
def test_show_of_another_kind_names_the_command_that_shows_it(kind, toy_bert_folder, tmp_path, capsys) -> None:
    run_id = other_kind(RunStore(tmp_path), kind, toy_bert_folder, {"name": "a-reproduction"})
    assert main(["show", run_id, "--results-dir", str(tmp_path)]) == 2
    err = one_error_line(capsys)
    assert f"`show` prints dataset evaluations; {run_id} is a" in err and f"(kind {kind})" in err
    if kind == "roar":  # a stopped job: the ROAR command continues it, not `run --resume`
        assert f"`python -m cli roar --resume {run_id} --results-dir {tmp_path}` computes its missing units" in err
        assert "Remove and retrain page" in err
    else:
        assert f"`python -m cli reproduce a-reproduction --cached --limit 2 --results-dir {tmp_path}` prints it" in err


def test_show_of_a_stopped_evaluation_says_how_to_resume_it(toy_bert_folder, tmp_path, capsys, monkeypatch) -> None:
    store = RunStore(tmp_path)
    run_id = open_run(small_spec(toy_bert_folder), store).info.run_id
    store.finish(run_id, "stopped", 0.0)
    assert main(["show", run_id, "--results-dir", str(tmp_path)]) == 0
    hint = f"{run_id} is stopped: resume it with `python -m cli run --resume {run_id} --results-dir {tmp_path}`"
    assert hint in capsys.readouterr().err
    monkeypatch.setenv("ATTRIBUTION_RESULTS_DIR", str(tmp_path))  # the folder found by default: no option
    assert main(["show", run_id]) == 0
    assert f"resume it with `python -m cli run --resume {run_id}`\n" in capsys.readouterr().err


def test_resume_continues_on_the_executor_the_run_was_started_with(
    toy_bert_folder, tmp_path, monkeypatch, capsys
) -> None:
    """`run --resume ID` (what a stopped run says to type) keeps a serial run serial: it does not
    start Ray on a machine where the run was deliberately in-process (the explorer page's runs)."""
    store = RunStore(tmp_path)
    real_serial = executor_module.run_serial

    def stopped_after_one(spec, units, commit, progress=None, results=None):
        real_serial(spec, units[:1], commit, progress)
        raise KeyboardInterrupt

    monkeypatch.setattr(executor_module, "run_serial", stopped_after_one)
    args = ["run", "--model", toy_bert_folder, *RUN, "--limit", "3", "--chunk-size", "1", "--executor", "serial"]
    assert main([*args, "--results-dir", str(tmp_path), "--quiet"]) == 130
    (info,) = store.infos()
    assert (info.status, info.units_done, info.executor) == ("stopped", 1, "serial")
    monkeypatch.setattr(executor_module, "run_serial", real_serial)
    monkeypatch.setattr(executor_module, "run_ray", lambda *a, **k: pytest.fail("Ray was started for a serial run"))
    assert f"continue it with `python -m cli run --resume {info.run_id} --results-dir {tmp_path}`" in (
        capsys.readouterr().err
    )  # the store the run is in, not the default one
    resume = ["run", "--resume", info.run_id, "--model", "other", "--methods", "saliency", "--target", "gold"]
    assert main([*resume, "--results-dir", str(tmp_path), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"run {info.run_id} (stopped, 1 of 3 examples stored)" in err  # the id is printed even with --quiet
    assert "--resume uses the run's own settings: --model, --methods, --target ignored" in err
    (info,) = store.infos()
    assert (info.status, info.units_done, info.executor) == ("done", 3, "serial")


def test_a_limit_past_the_end_of_the_split_is_refused(toy_bert_folder, tmp_path, capsys) -> None:
    args = ["run", "--model", toy_bert_folder, *RUN, "--limit", "100000", "--executor", "serial"]
    assert main([*args, "--results-dir", str(tmp_path), "--quiet"]) == 2
    err = one_error_line(capsys)
    assert (
        "a limit of 100000 is more than the" in err
        and "examples of examples/sst2: ask for the whole split instead" in err
    )
    assert RunStore(tmp_path, read_only=True).infos() == []


def test_the_engine_refuses_a_limit_past_the_end_of_the_split(toy_bert_folder) -> None:
    """Every caller of the engine (the page's background runs too), not the command line alone."""
    spec = RunSpec(model=toy_bert_folder, dataset="examples", split="sst2", limit=100000, methods=("saliency",))
    with pytest.raises(ValueError, match="a limit of 100000 is more than the"):
        prepare(spec)
    _, examples = prepare(dataclasses.replace(spec, limit=None))
    assert prepare(dataclasses.replace(spec, limit=len(examples)))[1] == examples


def test_gold_target_on_unlabelled_data_is_refused_before_the_run_is_written(toy_bert_folder, tmp_path, capsys) -> None:
    # SST-2's test split has no labels (../shared/data, which the Makefile points the tests at)
    args = ["run", "--model", toy_bert_folder, "--dataset", "sst2", "--split", "test", "--limit", "2",
            "--methods", "random", "--metrics", "deletion", "--target", "gold", "--executor", "serial"]  # fmt: skip
    assert main([*args, "--results-dir", str(tmp_path), "--quiet"]) == 2
    assert "target 'gold' needs gold labels and these examples have none" in one_error_line(capsys)
    assert RunStore(tmp_path, read_only=True).infos() == []  # no failed run left behind


def test_a_resumed_runs_progress_never_goes_back_while_its_actors_start(toy_bert_folder, tmp_path, monkeypatch) -> None:
    """The Ray executor's "actor(s) ready" line comes through the run's tracker: a resumed run's
    bar stays at the rows already stored (it went back to 0 of 3, with a negative rate)."""
    store = RunStore(tmp_path)
    spec = small_spec(toy_bert_folder)
    real_serial = executor_module.run_serial

    def stopped_after_one(spec, units, commit, ready=None, *, within=None, **options):
        real_serial(spec, units[:1], commit, within)
        raise KeyboardInterrupt

    def actors_then_units(spec, units, commit, ready=None, *, within=None, **options):
        ready("1 actor(s) ready after 0.1 s")
        real_serial(spec, units, commit, within)
        return {"actors": 1, "gpus": 0, "startup_s": 0.1}

    monkeypatch.setattr(executor_module, "run_ray", stopped_after_one)
    with pytest.raises(KeyboardInterrupt):
        execute(open_run(spec, store), store, executor="ray")
    monkeypatch.setattr(executor_module, "run_ray", actors_then_units)
    reports: list[tuple[float, str]] = []
    execute(open_run(spec, store, resume=None), store, executor="ray", progress=lambda f, m: reports.append((f, m)))
    fractions = [fraction for fraction, _ in reports]
    assert fractions[0] == pytest.approx(1 / 3) and fractions[-1] == 1.0
    assert fractions == sorted(fractions), reports
    assert any("actor(s) ready" in message and fraction == pytest.approx(1 / 3) for fraction, message in reports)


def test_a_chunk_size_an_existing_run_cannot_take_is_said_to_be_ignored(toy_bert_folder, tmp_path, capsys) -> None:
    """The unit size is not part of a run's key: the same run asked for again with another
    --chunk-size kept its own units without a word."""
    args = ["run", "--model", toy_bert_folder, *RUN, "--limit", "3", "--executor", "serial", "--quiet",
            "--results-dir", str(tmp_path)]  # fmt: skip
    assert main([*args, "--chunk-size", "1"]) == 0
    capsys.readouterr()
    assert main([*args, "--chunk-size", "2"]) == 0
    assert "--chunk-size ignored: the stored run keeps its units of 1\n" in capsys.readouterr().err
    assert main([*args, "--chunk-size", "1"]) == 0
    assert "--chunk-size ignored" not in capsys.readouterr().err
