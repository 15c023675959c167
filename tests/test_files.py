"""Files written whole or not at all (``core.files``), and the checks that a place can be written
before long work: the command line's ``--export`` and ``train --out``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.files import remove_leftovers, replaced_atomically, writable_folder_problem, write_text_atomic
from tests.kill import DEAD_PID


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_file_is_replaced_whole_and_a_failed_write_leaves_the_old_one(tmp_path):
    target = tmp_path / "report.json"
    write_text_atomic(target, "old")
    with pytest.raises(RuntimeError, match="stopped"), replaced_atomically(target) as temporary:
        assert temporary.parent == tmp_path and temporary.name.startswith(".report.json.")
        temporary.write_text("half of the new")
        raise RuntimeError("stopped")
    assert (target.read_text(), names(tmp_path)) == ("old", ["report.json"])
    write_text_atomic(target, "new é")
    assert (target.read_text(encoding="utf-8"), names(tmp_path)) == ("new é", ["report.json"])


def test_a_folder_replaces_a_full_one_and_a_failed_one_leaves_it(tmp_path):
    model = tmp_path / "models" / "unit-00003"
    for version in ("first", "second"):
        with replaced_atomically(model) as temporary:
            temporary.mkdir()
            (temporary / "weights").write_text(version)
    assert names(model) == ["weights"] and (model / "weights").read_text() == "second"
    with pytest.raises(KeyboardInterrupt), replaced_atomically(model) as temporary:
        temporary.mkdir()
        (temporary / "weights").write_text("third, half")
        raise KeyboardInterrupt
    assert (model / "weights").read_text() == "second" and names(model.parent) == ["unit-00003"]


def test_leftovers_are_removed_and_nothing_else(tmp_path):
    dead = DEAD_PID
    (tmp_path / "models" / f".unit-00001.{dead}.ab.tmp").mkdir(parents=True)
    (tmp_path / "models" / f".unit-00001.{dead}.ab.tmp" / "weights").write_text("x")
    (tmp_path / f".unit-00002.parquet.{dead}.ab.tmp").write_text("x")
    writing = f".unit-00003.parquet.{os.getpid()}.ab.tmp"  # a live writer's temporary stays
    for kept in ("unit-00001.parquet", "notes.tmp", ".hidden", writing):
        (tmp_path / kept).write_text("x")
    assert remove_leftovers(tmp_path) == 2
    assert names(tmp_path) == [".hidden", writing, "models", "notes.tmp", "unit-00001.parquet"]
    assert names(tmp_path / "models") == []
    assert remove_leftovers(tmp_path / "absent") == 0


def test_a_place_that_cannot_be_written_is_named_before_the_work(tmp_path, capsys):
    from cli.common import writable_file
    from cli.main import main
    from core.train import run_training

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert writable_folder_problem(tmp_path / "new" / "deeper") is None and (tmp_path / "new" / "deeper").is_dir()
    assert writable_folder_problem(blocker) == "a file is in the way"
    assert writable_folder_problem(blocker / "sub") == "Not a directory"
    with pytest.raises(
        ValueError, match=r"^--export .*a-file/report.json: cannot write in .*a-file \(a file is in the way\)$"
    ):
        writable_file(str(blocker / "report.json"), "--export")
    with pytest.raises(ValueError, match=r"^--export .* is a folder: give a file name$"):
        writable_file(str(tmp_path), "--export")
    with pytest.raises(ValueError, match=r"^cannot save the model in .*a-file: it is a file, not a folder$"):
        run_training("sst2", None, blocker, steps=1, seed=0)
    with pytest.raises(ValueError, match=r"^cannot save the model in .*a-file/model: a file is in the way$"):
        run_training("sst2", None, blocker / "model", steps=1, seed=0)
    assert (
        main(["roar", "--resume", "run-0", "--export", str(blocker / "job.json"), "--results-dir", str(tmp_path)]) == 2
    )
    assert "cannot write in" in capsys.readouterr().err  # before the job is looked up
    assert main(["roar", "--export", str(tmp_path / "none" / "job.json"), "--estimate-only"]) == 2
    assert "--estimate-only does not run the job" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()  # an estimate creates nothing


def test_a_training_that_fails_leaves_the_saved_model_as_it_was(tmp_path, monkeypatch):
    """``train`` writes the model beside ``--out`` and renames it once complete."""
    from core import train

    out = tmp_path / "minilm-sst2"
    out.mkdir()
    (out / "adapter_model.safetensors").write_text("the model from before")

    def failing(cfg, data_root, staging: Path) -> dict:
        assert staging.parent == tmp_path and staging != out
        staging.mkdir()  # as save_adapter does
        (staging / "adapter_model.safetensors").write_text("half of a new model")
        raise RuntimeError("killed")

    monkeypatch.setattr(train, "train_classifier", failing)
    with pytest.raises(RuntimeError, match="killed"):
        train.run_training("sst2", None, out, steps=1, seed=0)
    assert names(tmp_path) == ["minilm-sst2"]
    assert (out / "adapter_model.safetensors").read_text() == "the model from before"

    def complete(cfg, data_root, staging: Path) -> dict:
        staging.mkdir()
        (staging / "adapter_model.safetensors").write_text("the new model")
        return {"accuracy": 0.5}

    monkeypatch.setattr(train, "train_classifier", complete)
    card = train.run_training("sst2", None, out, steps=1, seed=0)
    assert card["figures"] == {"accuracy": 0.5}
    assert names(out) == ["README.md", "adapter_model.safetensors", "training.json"]
    assert (out / "adapter_model.safetensors").read_text() == "the new model"


def test_every_file_of_a_folder_and_the_rename_are_synced(tmp_path, monkeypatch):
    """A power cut after the rename must not leave empty files in the renamed folder, nor lose
    the rename: each file is synced before it, the parent folder after it."""
    import os

    import core.files

    synced: list[str] = []
    real_fsync = os.fsync

    def recording(handle: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{handle}"))
        real_fsync(handle)

    monkeypatch.setattr(core.files.os, "fsync", recording)
    model = tmp_path / "models" / "unit-00001"
    with replaced_atomically(model) as temporary:
        (temporary / "inner").mkdir(parents=True)
        (temporary / "adapter_model.safetensors").write_text("w")
        (temporary / "inner" / "task.json").write_text("{}")
    names_synced = [Path(p).name for p in synced]
    assert names_synced[:2] == ["adapter_model.safetensors", "task.json"]
    assert synced[2:] == [str(tmp_path / "models")]
