"""A damaged run store: a catalogue that is not a DuckDB file (random bytes, empty, truncated) stops
every store command with one line naming the catalogue and exit 2, and the Python API raises an
OSError that names it; so does reading a DuckDB file without the catalogue's tables."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from cli.main import main
from engine.runs.records import SCHEMA
from engine.runs.store import CATALOGUE, RunStore


def random_bytes(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 16)


def empty(path: Path) -> None:
    path.write_bytes(b"")


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:10000])


DAMAGES = [random_bytes, empty, truncated]
COMMANDS = {
    "runs": ["runs"],
    "show": ["show", "run-0123456789ab"],
    "run": ["run", "--model", "minilm-sst2", "--dataset", "examples", "--split", "sst2", "--limit", "2"],
    "resume": ["run", "--resume", "run-0123456789ab"],
}


@pytest.fixture(params=DAMAGES, ids=lambda damage: damage.__name__)
def damaged(request, tmp_path) -> Path:
    root = tmp_path / "results"
    root.mkdir()
    with duckdb.connect(str(root / CATALOGUE)) as con:
        con.execute(SCHEMA)
    request.param(root / CATALOGUE)
    return root


@pytest.mark.parametrize("command", list(COMMANDS.values()), ids=list(COMMANDS))
def test_a_damaged_catalogue_stops_a_store_command_with_one_line(damaged, command, capsys) -> None:
    assert main([*command, "--results-dir", str(damaged)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot use the run store's catalogue") and err.count("\n") == 1
    assert str(damaged / CATALOGUE) in err


def test_the_api_raises_an_os_error_naming_the_catalogue(damaged) -> None:
    with pytest.raises(OSError, match="cannot use the run store's catalogue .*catalogue.duckdb"):
        RunStore(damaged, read_only=True).infos()
    writer = RunStore(damaged)  # made freely: its first write opens the catalogue
    with pytest.raises(OSError, match="cannot use the run store's catalogue .*catalogue.duckdb"):
        writer.finish("run-0123456789ab", "stopped", 0.0)


def test_reading_a_duckdb_file_without_the_catalogue_tables_is_one_line(tmp_path, capsys) -> None:
    with duckdb.connect(str(tmp_path / CATALOGUE)) as con:
        con.execute("CREATE TABLE x (a INTEGER)")
    assert main(["runs", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot use the run store's catalogue {tmp_path / CATALOGUE}") and "runs" in err


def test_a_deleted_catalogue_with_run_folders_left_is_said_not_listed_as_empty(tmp_path, capsys) -> None:
    """A catalogue deleted by hand leaves the runs' rows behind: ``runs`` says so rather than a bare
    "no runs"."""
    root = tmp_path / "results"
    (root / "runs" / "run-0123456789ab").mkdir(parents=True)
    assert main(["runs", "--results-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.strip() == (
        f"no runs in {root}, but 1 run folder(s) under runs/ without the catalogue ({CATALOGUE}) to list them"
    )
