"""A refused command leaves no run store behind: ``run``, ``import`` and ``roar`` check their spec,
job, file and its content (a ``--limit`` past the split's end, a split of sentence pairs for a
single-text model, a file cut short, records that match no example) before the store (catalogue.duckdb and runs/) is created."""

from __future__ import annotations

import pytest

from cli.main import main


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--model", "minilm-sst2", "--dataset", "sst2", "--split", "dev", "--limit", "2", "--methods", "bogus"],
        ["run", "--model", "minilm-sst2", "--dataset", "sst2", "--split", "dev", "--limit", "2", "--metrics", ""],
        ["run", "--resume", "nosuchrun"],
        ["run", "--model", "minilm-sst2", "--dataset", "examples", "--split", "sst2", "--limit", "100000"],
        ["run", "--model", "minilm-sst2", "--dataset", "examples", "--split", "esnli", "--limit", "2"],  # pairs
        ["run", "--model", "minilm-esnli", "--dataset", "examples", "--split", "sst2", "--limit", "2"],  # singles
        ["import", "FILE", "--model", "minilm-sst2", "--methods", "bogus"],
        ["import", "FILE", "--model", "minilm-sst2", "--param", "nodot=1"],
        ["import", "FILE", "--model", "minilm-sst2", "--param", "lime.n_samples=10"],  # lime is not computed
        ["import", "FILE", "--model", "minilm-sst2", "--dataset", "sst2"],
        ["import", "MISSING", "--model", "minilm-sst2"],
        ["import", "BAD", "--model", "minilm-sst2"],
        ["import", "UNALIGNED", "--model", "minilm-sst2", "--dataset", "examples", "--split", "sst2"],
        ["roar", "--methods", "bogus", "--seeds", "1"],
        ["roar", "--resume", "nosuchrun"],
    ],
)
def test_a_refused_command_creates_no_store(argv, tmp_path, capsys) -> None:
    given = tmp_path / "records.jsonl"
    given.write_text('{"text": "a fine film", "attributions": {}}\n')
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "attribution/1", "scores": ')  # cut short
    unaligned = tmp_path / "unaligned.csv"
    unaligned.write_text("id,word_index,score\nno-such-example,0,1\n")  # matches no example of the split
    files = {"FILE": given, "MISSING": tmp_path / "missing.jsonl", "BAD": bad, "UNALIGNED": unaligned}
    argv = [str(files[a]) if a in files else a for a in argv]
    store = tmp_path / "store"
    assert main([*argv, "--results-dir", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert not store.exists()


def test_a_run_store_is_made_on_disk_by_its_first_write(toy_bert_folder, tmp_path) -> None:
    """``RunStore(...)`` itself creates nothing (it once made its folder and catalogue when
    constructed); reading an absent store finds no runs, and the first write makes both."""
    from engine.runs.executor import open_run
    from engine.runs.spec import RunSpec
    from engine.runs.store import CATALOGUE, RunStore

    root = tmp_path / "results"
    store = RunStore(root)
    assert (store.infos(), store.find("run-0123456789ab")) == ([], None)
    assert not root.exists()
    spec = RunSpec(model=toy_bert_folder, dataset="examples", split="sst2", limit=1, methods=("random",),
                   metrics=("deletion",))  # fmt: skip
    run_id = open_run(spec, store).info.run_id
    assert (root / CATALOGUE).is_file() and (root / "runs").is_dir()
    assert [info.run_id for info in RunStore(root, read_only=True).infos()] == [run_id]
