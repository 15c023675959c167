"""Deleting a stored run (``RunStore.delete``, ``python -m cli delete``): its catalogue rows, unit
files and log go, other runs stay whole, a run a live process writes is refused, and the same run
started again afterwards is computed anew."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from engine.runs.executor import execute, open_run, read_evaluation
from engine.runs.store import RunStore
from tests.test_runs import toy_spec


def two_runs(model: str, store: RunStore) -> tuple[str, str]:
    spec = toy_spec(model, limit=4, methods=("loo_empty", "random"), metrics=("deletion",))
    first = execute(open_run(spec, store), store, executor="serial").info.run_id
    second = execute(open_run(toy_spec(model, limit=2, methods=("random",), metrics=("deletion",)), store), store,
                     executor="serial").info.run_id  # fmt: skip
    return first, second


def test_a_deleted_run_leaves_nothing_and_the_others_whole(toy_bert_folder, tmp_path) -> None:
    store = RunStore(tmp_path)
    first, second = two_runs(toy_bert_folder, store)
    kept = read_evaluation(store, second)[1]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / f"{first}.log").write_text("a background process's output\n")
    assert len(list((tmp_path / "runs" / first).glob("unit-*.parquet"))) == 2
    info = store.delete(first)
    assert info.run_id == first and info.rows_done == 4
    assert [i.run_id for i in store.infos()] == [second]
    assert store.find(first) is None and store.units(first).empty and store.row_order(first) is None
    assert not (tmp_path / "runs" / first).exists() and not (tmp_path / "logs" / f"{first}.log").exists()
    assert read_evaluation(store, second)[1] == kept
    with pytest.raises(ValueError, match=f"no run '{first}'"):
        store.delete(first)
    again = execute(open_run(toy_spec(toy_bert_folder, limit=4, methods=("loo_empty", "random"), metrics=("deletion",)), store),
                    store, executor="serial")  # fmt: skip
    assert again.info.run_id == first and again.created and again.computed_units == 2


def test_a_run_a_live_process_writes_is_refused(toy_bert_folder, tmp_path) -> None:
    store = RunStore(tmp_path)
    first, _ = two_runs(toy_bert_folder, store)
    store.claim(first, "serial", reopen=True)  # this process writes it: running, its writer alive
    try:
        with pytest.raises(ValueError, match=f"run {first} is being written by process .*: stop it first"):
            store.delete(first)
    finally:
        store.finish(first, "done", 1.0)
    assert store.get(first).rows_done == 4 and (tmp_path / "runs" / first).is_dir()


def test_the_command_deletes_and_names_what_it_refused(toy_bert_folder, tmp_path, capsys) -> None:
    store = RunStore(tmp_path)
    first, second = two_runs(toy_bert_folder, store)
    assert main(["delete", first, "--results-dir", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"deleted": [first], "refused": []}
    assert main(["delete", first, second, "--results-dir", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith(f"deleted {second} (evaluate: {toy_bert_folder} / examples, 2 rows)")
    assert captured.err == f"error: no run '{first}' in {tmp_path}\n"
    assert store.infos() == []
    assert main(["delete", "run-x", "--results-dir", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err and not (tmp_path / "nowhere").exists()
