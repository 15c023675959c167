"""A run's progress inside its units (``engine.runs.live``): the serial executor, and Ray's actors
through the driver, report where they are in a unit through the run's live file, readers trust it only while the catalogue names its
writer as live, and the file is gone once the run is let go."""

from __future__ import annotations

import dataclasses
import os

import pytest

from engine.runs import live as live_module
from engine.runs.executor import execute, open_run
from engine.runs.live import LiveProgress, LiveWriter, live_path, read_live
from engine.runs.store import RunStore
from tests.test_runs import toy_spec


def recorded_live(monkeypatch, store: RunStore, run_id: str) -> list[tuple[LiveProgress, int]]:
    """Every write of the run's live file from now on (each report written), read back at once,
    with the catalogue's count of stored rows at that moment."""
    monkeypatch.setattr(live_module, "EVERY_S", 0.0)
    seen: list[tuple[LiveProgress, int]] = []
    report = LiveWriter.report

    def read_back(self, fraction: float, message: str) -> None:
        report(self, fraction, message)
        if not self.closed:
            info = store.get(run_id)
            found = read_live(store.root, info)
            assert found is not None, message
            seen.append((found, info.rows_done))

    monkeypatch.setattr(LiveWriter, "report", read_back)
    return seen


def test_a_serial_run_reports_inside_its_units_and_removes_the_file_at_the_end(toy_bert_folder, tmp_path, monkeypatch):
    store = RunStore(tmp_path)
    opened = open_run(toy_spec(toy_bert_folder, limit=4), store)
    run_id = opened.info.run_id
    seen = recorded_live(monkeypatch, store, run_id)
    execute(opened, store, executor="serial")  # no progress callback: quiet, as the app's runs
    assert seen and all(found.pid == os.getpid() for found, _ in seen)
    inside = [(found, done) for found, done in seen if "explaining" in found.message or "scoring" in found.message]
    assert inside, [found.message for found, _ in seen]
    assert any("explaining loo_empty" in found.message for found, _ in inside)
    # Between the units' commits the bar moves past the rows the catalogue counts, never back.
    assert any(found.fraction * 4 > done for found, done in inside)
    fractions = [found.fraction for found, _ in seen]
    assert fractions == sorted(fractions) and 0.0 <= fractions[0] and fractions[-1] <= 1.0
    walls = [found.wall_s for found, _ in seen]  # the writer's seconds, which the catalogue has per unit
    assert walls == sorted(walls) and walls[-1] > 0.0
    assert not live_path(store.root, run_id).exists()
    assert store.get(run_id).status == "done" and read_live(store.root, store.get(run_id)) is None


def test_the_live_file_is_read_only_for_its_runs_live_writer(toy_bert_folder, tmp_path):
    store = RunStore(tmp_path)
    run_id = execute(open_run(toy_spec(toy_bert_folder, limit=2), store), store, executor="serial").info.run_id
    writer = LiveWriter(store.root, run_id, lambda: 42.0)
    writer.report(0.5, "example 2 of 2 · explaining lime: 40%")
    done = store.get(run_id)
    assert read_live(store.root, done) is None  # done: the catalogue is the truth, not a left file
    claimed = store.claim(run_id, "serial", reopen=True)  # this process writes it again
    found = read_live(store.root, claimed)
    assert found is not None and (found.fraction, found.wall_s) == (0.5, 42.0)
    assert found.message == "example 2 of 2 · explaining lime: 40%"
    assert read_live(store.root, dataclasses.replace(claimed, pid=claimed.pid + 1)) is None  # another writer's
    live_path(store.root, run_id).write_text('{"fraction": 0.5, "mess')  # damaged
    assert read_live(store.root, claimed) is None
    writer.close()
    writer.report(0.9, "after the end")
    assert not live_path(store.root, run_id).exists()
    store.finish(run_id, "done", 1.0)


def test_reports_are_written_at_most_once_a_second(tmp_path, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(live_module.time, "time", lambda: now[0])
    writer = LiveWriter(tmp_path, "run-x", lambda: 1.0)
    writer.report(0.1, "first")
    writer.report(0.2, "too soon")
    assert '"first"' in live_path(tmp_path, "run-x").read_text()
    now[0] += 1.0
    writer.report(0.3, "a second later")
    assert '"a second later"' in live_path(tmp_path, "run-x").read_text()
    assert [p.name for p in live_path(tmp_path, "run-x").parent.iterdir()] == ["live.json"]  # no temporary left


def test_runs_and_show_say_where_a_live_writer_is(toy_bert_folder, tmp_path, capsys):
    import json

    from cli.main import main

    store = RunStore(tmp_path)
    run_id = execute(open_run(toy_spec(toy_bert_folder, limit=2), store), store, executor="serial").info.run_id
    store.claim(run_id, "serial", reopen=True)  # this process writes it again
    LiveWriter(store.root, run_id, lambda: 61.4).report(0.75, "example 2 of 2 · explaining lime: 40%")
    assert main(["runs", "--results-dir", str(tmp_path)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[-1].strip() == "now example 2 of 2 · explaining lime: 40%, 61 s in"
    assert main(["runs", "--results-dir", str(tmp_path), "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["now"] == {"fraction": 0.75, "line": "example 2 of 2 · explaining lime: 40%", "wall_s": 61.4}
    assert main(["show", run_id, "--results-dir", str(tmp_path)]) == 0
    assert "is writing it (now example 2 of 2 · explaining lime: 40%, 61 s in)" in capsys.readouterr().err
    store.finish(run_id, "done", 1.0)
    assert main(["runs", "--results-dir", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["now"] is None


@pytest.mark.slow
def test_a_ray_run_reports_its_actors_progress_inside_their_units(toy_bert_folder, tmp_path, monkeypatch):
    """Ray's actors send their progress inside a unit through a queue that the driver reads while
    it waits: the live file moves between commits, as in a serial run."""
    from engine.runs import ray_executor

    monkeypatch.setattr(ray_executor, "REPORT_EVERY_S", 0.0)  # the actors send every report
    store = RunStore(tmp_path)
    opened = open_run(toy_spec(toy_bert_folder, limit=6, chunk_size=2), store)
    run_id = opened.info.run_id
    seen = recorded_live(monkeypatch, store, run_id)
    outcome = execute(opened, store, executor="ray", actors=2)
    assert outcome.info.status == "done" and outcome.executor["actors"] == 2
    inside = [(found, done) for found, done in seen if " · explaining " in found.message]
    assert inside, [found.message for found, _ in seen]
    assert all(found.pid == os.getpid() for found, _ in seen)  # the driver writes the file, not the actors
    fractions = [found.fraction for found, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] <= 1.0
    assert not live_path(store.root, run_id).exists()
