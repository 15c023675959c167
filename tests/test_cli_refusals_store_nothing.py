"""A command refused for its arguments leaves no run store behind: ``run``, ``import`` and ``roar``
check their spec, job or file before the store (catalogue.duckdb and runs/) is created."""

from __future__ import annotations

import pytest

from cli.main import main


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--model", "minilm-sst2", "--dataset", "sst2", "--split", "dev", "--limit", "2", "--methods", "bogus"],
        ["run", "--model", "minilm-sst2", "--dataset", "sst2", "--split", "dev", "--limit", "2", "--metrics", ""],
        ["run", "--resume", "nosuchrun"],
        ["import", "FILE", "--model", "minilm-sst2", "--methods", "bogus"],
        ["import", "FILE", "--model", "minilm-sst2", "--param", "nodot=1"],
        ["import", "FILE", "--model", "minilm-sst2", "--dataset", "sst2"],
        ["import", "MISSING", "--model", "minilm-sst2"],
        ["roar", "--methods", "bogus", "--seeds", "1"],
        ["roar", "--resume", "nosuchrun"],
    ],
)
def test_a_refused_command_creates_no_store(argv, tmp_path, capsys) -> None:
    given = tmp_path / "records.jsonl"
    given.write_text('{"text": "a fine film", "attributions": {}}\n')
    argv = [{"FILE": str(given), "MISSING": str(tmp_path / "missing.jsonl")}.get(a, a) for a in argv]
    store = tmp_path / "store"
    assert main([*argv, "--results-dir", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert not store.exists()
