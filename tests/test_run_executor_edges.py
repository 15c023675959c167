"""The edges of ``engine.runs.executor.execute``: what is refused before a run is stored, what a
failure right after the claim records, a refused writer's unit file, a resume with nothing left
on Ray, the progress of a resume that recomputes a damaged unit, and where a run keeps AML's
pre-trained models."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from engine.runs import executor
from engine.runs.executor import execute, open_run, resume_spec
from engine.runs.spec import RunSpec
from engine.runs.store import RunStore


def spec_of(model: str, **changes) -> RunSpec:
    settings = {"model": model, "dataset": "examples", "split": "sst2", "limit": 2, "methods": ("random",),
                "metrics": ("deletion",), "chunk_size": 1} | changes  # fmt: skip
    return RunSpec(**settings)


@pytest.mark.skipif(torch.cuda.is_available(), reason="float16 autocast runs on a GPU")
def test_float16_autocast_on_a_cpu_is_refused_before_the_run_is_stored(toy_bert_folder, tmp_path, capsys) -> None:
    """It passed every check, was stored, and failed in the worker: a failed run left under its key."""
    import api
    from cli.main import main

    argv = ["run", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "2",
            "--executor", "serial", "--autocast", "float16", "--results-dir", str(tmp_path / "cli")]  # fmt: skip
    assert main(argv) == 2
    assert capsys.readouterr().err == "error: torch.float16 autocast needs a GPU; on a CPU use bfloat16\n"
    with pytest.raises(ValueError, match="float16 autocast needs a GPU"):
        api.run(toy_bert_folder, "examples", "sst2", limit=2, autocast="float16", results_dir=tmp_path / "api")
    assert not (tmp_path / "cli").exists() and not (tmp_path / "api").exists()


def test_a_failure_right_after_the_claim_marks_the_run_failed(toy_bert_folder, tmp_path, monkeypatch) -> None:
    """The claim set the run running before the try: an error there left it running for good."""
    store = RunStore(tmp_path)
    opened = open_run(spec_of(toy_bert_folder), store)

    def busy(store, run_id):
        raise OSError("catalogue busy")

    monkeypatch.setattr(executor, "_readable_units", busy)
    with pytest.raises(OSError, match="catalogue busy"):
        execute(opened, store, executor="serial")
    info = store.get(opened.info.run_id)
    assert (info.status, info.error) == ("failed", "OSError: catalogue busy")


def test_a_writer_refused_at_commit_leaves_no_unit_file(toy_bert_folder, tmp_path) -> None:
    """The unit file was renamed into place before the writer was checked: a run deleted while a
    process wrote it got its second unit's file back, an orphan."""
    store = RunStore(tmp_path)
    opened = open_run(spec_of(toy_bert_folder), store)
    run_id = opened.info.run_id

    def deleted_after_the_first_unit(fraction: float, message: str) -> None:
        if store.infos() and len(store.units(run_id)) == 1:  # once the first unit is committed
            with store._connect() as con:  # what a deletion by another process leaves
                con.execute("DELETE FROM units WHERE run_id = ?", [run_id])
                con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])

    with pytest.raises(ValueError, match=f"no run {run_id!r}: it was deleted while this process wrote it"):
        execute(opened, store, executor="serial", progress=deleted_after_the_first_unit)
    assert sorted(p.name for p in (tmp_path / "runs" / run_id).iterdir()) == ["unit-00000.parquet"]


def test_a_ray_resume_with_nothing_left_starts_no_cluster(toy_bert_folder, tmp_path, monkeypatch) -> None:
    """A run stopped after its last commit started Ray and loaded the model to compute nothing."""
    store = RunStore(tmp_path)
    run_id = execute(open_run(spec_of(toy_bert_folder), store), store, executor="serial").info.run_id
    store.claim(run_id, "serial", reopen=True)
    store.finish(run_id, "stopped", 1.0)

    def no_cluster(*args, **kwargs):
        raise AssertionError("Ray was started")

    monkeypatch.setattr(executor, "run_ray", no_cluster)
    outcome = execute(open_run(resume_spec(store, run_id), store, resume=run_id), store, executor="ray")
    assert (outcome.computed_units, outcome.info.status, outcome.info.rows_done) == (0, "done", 2)


def test_a_resume_counts_a_damaged_unit_as_not_done(toy_bert_folder, tmp_path) -> None:
    """The progress started from the catalogue's count, damaged units included: "2 of 2" before
    the damaged one was computed again."""
    store = RunStore(tmp_path)
    run_id = execute(open_run(spec_of(toy_bert_folder), store), store, executor="serial").info.run_id
    (tmp_path / store.units(run_id)["path"].iloc[1]).write_bytes(b"not parquet")
    seen: list[float] = []
    execute(open_run(resume_spec(store, run_id), store, resume=run_id), store, executor="serial",
            progress=lambda fraction, message: seen.append(fraction))  # fmt: skip
    assert seen[0] == 0.5 and seen[-1] == 1.0


def test_a_run_keeps_amls_pretrained_models_in_its_results_folder(toy_bert_folder, tmp_path) -> None:
    """They went to the default results folder (./results) whatever --results-dir said."""
    from engine.runs.worker import UnitWorker

    worker = UnitWorker(spec_of(toy_bert_folder), results=tmp_path)
    assert worker.resources.folder == Path(tmp_path) / "pretrained" / "aml"


def test_a_run_resumes_from_the_data_folder_it_was_started_with(toy_bert_folder, tmp_path, monkeypatch) -> None:
    """``--data-dir`` was not stored: the printed ``run --resume ID`` read $ATTRIBUTION_DATA_DIR,
    which failed, or silently took another copy of the dataset."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "sst2").symlink_to(Path(os.environ["ATTRIBUTION_DATA_DIR"]) / "sst2")
    store = RunStore(tmp_path / "store")
    spec = spec_of(toy_bert_folder, dataset="sst2", split="dev", data_dir=str(data))
    run_id = open_run(spec, store).info.run_id
    store.finish(run_id, "stopped", 0.0)
    monkeypatch.setenv("ATTRIBUTION_DATA_DIR", str(tmp_path / "elsewhere"))
    resumed = resume_spec(store, run_id)
    assert resumed.data_dir == str(data.resolve())
    outcome = execute(open_run(resumed, store, resume=run_id), store, executor="serial")
    assert (outcome.info.status, outcome.info.rows_done) == ("done", 2)
    assert resume_spec(store, run_id, data_dir="/given").data_dir == "/given"  # a folder given wins


def test_a_hub_models_fingerprint_is_its_commit_whichever_files_are_cached(tmp_path, monkeypatch) -> None:
    """The fingerprint hashed the cached snapshot's files: it changed as more of the model's files
    were cached, so a run could not be resumed, and online it downloaded every weight format the
    repository has. Now the commit the snapshot is named by is the model (offline, from the cache)."""
    import huggingface_hub.constants

    from engine.runs.model_identity import model_fingerprint

    repo = tmp_path / "hub" / "models--org--model"
    snapshot = repo / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    (snapshot / "config.json").write_text("{}")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    first = model_fingerprint("org/model")
    (snapshot / "pytorch_model.bin").write_bytes(b"weights in another format, cached later")
    assert model_fingerprint("org/model") == first
    (repo / "refs" / "main").write_text("b" * 40)  # the branch moved to another commit
    (repo / "snapshots" / ("b" * 40)).mkdir()
    (repo / "snapshots" / ("b" * 40) / "config.json").write_text("{}")
    assert model_fingerprint("org/model") != first
    with pytest.raises(ValueError):
        model_fingerprint("org/missing")
