"""A finished run whose unit files were damaged or deleted afterwards: reading it names the file
and what is wrong with it, and ``run --resume`` computes those units again (it said "already
done: nothing recomputed" and then failed on Parquet's "magic bytes not found")."""

from __future__ import annotations

import numpy as np
import pytest

from cli.main import main
from engine.runs.executor import execute, open_run
from engine.runs.store import RunStore
from tests.test_run_resume_checks import small_spec


def test_a_damaged_or_deleted_unit_is_named_and_computed_again_on_resume(toy_bert_folder, tmp_path, capsys) -> None:
    store = RunStore(tmp_path)
    run_id = execute(open_run(small_spec(toy_bert_folder), store), store, executor="serial").info.run_id
    before = store.rows(run_id)
    paths = list(store.units(run_id)["path"])
    damaged, deleted = tmp_path / paths[1], tmp_path / paths[2]
    damaged.write_bytes(damaged.read_bytes()[:40])
    deleted.unlink()

    with pytest.raises(
        OSError, match=rf"the stored unit {paths[1]} under .* cannot be read: it is not a whole Parquet"
    ):
        store.rows(run_id)
    assert main(["run", "--resume", run_id, "--results-dir", str(tmp_path), "--executor", "serial", "--quiet"]) == 0
    assert "already done" not in capsys.readouterr().err
    after = RunStore(tmp_path, read_only=True)
    info = after.get(run_id)
    assert (info.status, info.units_done, info.rows_done) == ("done", 3, 3)
    rows = after.rows(run_id)
    assert list(rows["position"]) == [0, 1, 2]
    for old, new in zip(before["score/random"], rows["score/random"], strict=True):
        assert np.array_equal(old, new)  # the seeded scores computed again, as they were
    assert list(rows["value/random/deletion"]) == pytest.approx(list(before["value/random/deletion"]), abs=1e-6)
