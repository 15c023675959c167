"""Reproduction results kept in the run store (``engine.reproduce.stored``, ``RunStore.save_whole``).

A reproduction's computation is replaced by a fast one (``fake_rows``) through the registry, so
these tests run the real ``engine.reproduce.run`` -> store -> read path without loading a model:
a round trip through a store reopened as after a restart, replacing and versioning, a computation
that raises mid-way or a write that fails mid-way leaving no stored row, the one-off import of the
JSON files earlier versions wrote, and ``python -m cli reproduce --cached`` reading a result back.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cli.main import main
from engine import reproduce
from engine.reproduce import stored
from engine.reproduce.base import Row
from engine.runs import store as store_module
from engine.runs.store import RESULTS_ENV, RunStore

NAME = "double-trouble-tableA3"  # its finding check reads ("SST-2", "exact_all") and ("SST-2", "likelihood")


def fake_rows(resources, limit, progress):
    """Three cells as a real run gives them, one with no published value and no interval."""
    if progress:
        progress(0.5, "half way")
    return [
        Row("SST-2 · exact", ("SST-2", "exact_all"), 48.94, 40.25, 30.125, 50.375, limit, (40.0, None, 40.5)),
        Row("SST-2 · likelihood", ("SST-2", "likelihood"), 0.8229, 0.6123456789012345, 0.5, 0.7246913578024690, limit),
        Row("SST-2 · highlighted", ("SST-2", "exact_highlighted"), None, 32.5, None, None, limit - 1),
    ]


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    entry = reproduce.REGISTRY[NAME]
    monkeypatch.setitem(reproduce.REGISTRY, NAME, dataclasses.replace(entry, compute=fake_rows))
    return tmp_path


def parquet_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.parquet"))


def latest(name: str):
    """The stored result of ``name`` the page shows (``pick``) and whether the current code computed it."""
    chosen, current = reproduce.pick(reproduce.stored_results(name))
    return (None, False) if chosen is None else (reproduce.load(chosen.run_id), current)


def test_round_trip_through_a_reopened_store(results):
    computed = reproduce.run(NAME, 5)
    payload, was_stored = reproduce.cached_run(NAME, 5)  # computes again (the fake is deterministic)
    assert not was_stored
    # A new store object on the same folder, as a restarted process opens it.
    store = RunStore(results, read_only=True)
    [listed] = stored.listing(store)
    assert (listed.name, listed.limit, listed.code, listed.n, listed.holds) == (
        NAME,
        5,
        reproduce.code_version(),
        5,
        True,  # 40.25% exact matches and likelihood 0.61: the finding's thresholds hold
    )
    assert listed.git == store.get(listed.run_id).code_version and listed.runtime_s == payload["runtime_s"]
    again = stored.load(store, listed.run_id)
    assert again["rows"] == computed["rows"]  # every float, None and list identical
    assert again["rows"][2] == {
        "label": "SST-2 · highlighted",
        "key": ["SST-2", "exact_highlighted"],
        "published": None,
        "mean": 32.5,
        "low": None,
        "high": None,
        "n": 4,
        "values": [],
    }
    assert again["rows"][0]["values"] == [40.0, None, 40.5]
    for field in ("name", "paper", "table", "claim", "published_note", "limit", "finding", "differences"):
        assert again[field] == computed[field], field
    assert again["settings"] == json.loads(json.dumps(computed["settings"]))
    assert again == payload  # what cached_run returned is what the store holds
    info = store.get(listed.run_id)
    assert (info.kind, info.status, info.rows_done, info.rows_total, info.units_done) == ("reproduce", "done", 3, 3, 1)


def test_a_stored_result_is_read_not_recomputed(results, monkeypatch):
    first, _ = reproduce.cached_run(NAME, 3)
    monkeypatch.setattr(reproduce, "run", lambda *a, **k: pytest.fail("the stored result should have been used"))
    again, was_stored = reproduce.cached_run(NAME, 3)
    assert was_stored and again == first
    assert latest(NAME) == (first, True)
    assert latest("aml-table1") == (None, False)
    with pytest.raises(ValueError, match="unknown reproduction 'nope'"):
        latest("nope")


def test_refresh_replaces_and_a_new_code_version_adds(results, monkeypatch):
    first, _ = reproduce.cached_run(NAME, 3)
    means = iter((41.0, 42.0))

    def shifted(resources, limit, progress):
        rows = fake_rows(resources, limit, progress)
        return [dataclasses.replace(rows[0], mean=next(means)), *rows[1:]]

    monkeypatch.setitem(reproduce.REGISTRY, NAME, dataclasses.replace(reproduce.REGISTRY[NAME], compute=shifted))
    refreshed, was_stored = reproduce.cached_run(NAME, 3, refresh=True)
    assert not was_stored and refreshed["run_id"] == first["run_id"] and refreshed["rows"][0]["mean"] == 41.0
    [only] = reproduce.stored_results(NAME)
    assert reproduce.load(only.run_id)["rows"][0]["mean"] == 41.0
    assert len(parquet_files(results)) == 1

    monkeypatch.setattr(reproduce, "code_version", lambda: "fedcba987654")
    newer, was_stored = reproduce.cached_run(NAME, 3)
    assert not was_stored and newer["run_id"] != first["run_id"] and newer["code_version"] == "fedcba987654"
    assert [r.code for r in reproduce.stored_results(NAME)] == ["fedcba987654", first["code_version"]]
    assert latest(NAME) == (newer, True)
    monkeypatch.setattr(reproduce, "code_version", lambda: "000000000000")  # a third version: nothing current
    shown, current = latest(NAME)
    assert not current and shown == newer  # the newest of the older versions


def test_a_result_computed_with_other_weights_is_computed_again(results, monkeypatch):
    from engine.reproduce import model_versions
    from engine.runs.model_identity import model_fingerprint

    def loading(resources, limit, progress):
        resources._classifiers["minilm-sst2"] = None  # as ``resources.classifier`` records a load
        return fake_rows(resources, limit, progress)

    monkeypatch.setitem(reproduce.REGISTRY, NAME, dataclasses.replace(reproduce.REGISTRY[NAME], compute=loading))
    first, _ = reproduce.cached_run(NAME, 3)
    assert first["model_fingerprints"] == {"minilm-sst2": model_fingerprint("minilm-sst2")}
    assert reproduce.cached_run(NAME, 3)[1] and reproduce.changed_models(first) == []
    assert reproduce.changed_models(first | {"model_fingerprints": {"minilm-sst2": "0" * 64}}) == ["minilm-sst2"]
    # a name that is not a bundled model is never looked up, and counts as changed
    assert reproduce.changed_models({"model_fingerprints": {"/": "0"}}) == ["/"]
    assert reproduce.changed_models({}) == []  # recorded before fingerprints were kept

    monkeypatch.setattr(model_versions, "fingerprints", lambda names: {name: "retrained" for name in names})
    again, was_stored = reproduce.cached_run(NAME, 3)
    assert not was_stored and again["model_fingerprints"] == {"minilm-sst2": "retrained"}
    assert len(reproduce.stored_results(NAME)) == 1  # the stale one replaced, not kept beside


def test_a_computation_that_raises_mid_way_stores_nothing(results, monkeypatch):
    progress = []

    def broken(resources, limit, report):
        report(0.5, "half way")
        raise RuntimeError("killed half way")

    monkeypatch.setitem(reproduce.REGISTRY, NAME, dataclasses.replace(reproduce.REGISTRY[NAME], compute=broken))
    with pytest.raises(RuntimeError, match="killed half way"):
        reproduce.cached_run(NAME, 3, progress=lambda f, m: progress.append(f))
    assert progress == [0.5]
    assert reproduce.stored_results() == [] and parquet_files(results) == []
    assert RunStore(results, read_only=True).list_runs().empty


def test_a_write_that_fails_before_the_commit_leaves_no_row(results, monkeypatch):
    def failing_insert(*args, **kwargs):
        raise OSError("disk full")  # after the Parquet file was renamed into place, inside the transaction

    monkeypatch.setattr(store_module, "insert_run", failing_insert)
    with pytest.raises(OSError, match="disk full"):
        reproduce.cached_run(NAME, 3)
    assert len(parquet_files(results)) == 1  # the orphan file: listed nowhere, so never read
    store = RunStore(results, read_only=True)
    assert store.list_runs().empty and reproduce.stored_results() == []
    monkeypatch.undo()
    monkeypatch.setenv(RESULTS_ENV, str(results))
    monkeypatch.setitem(reproduce.REGISTRY, NAME, dataclasses.replace(reproduce.REGISTRY[NAME], compute=fake_rows))
    payload, was_stored = reproduce.cached_run(NAME, 3)  # a rerun stores it whole, over the orphan
    assert not was_stored and [r.run_id for r in reproduce.stored_results()] == [payload["run_id"]]
    assert len(parquet_files(results)) == 1


def test_json_results_of_earlier_versions_are_imported_once(results):
    legacy = reproduce.run(NAME, 4)
    legacy.pop("computed")  # earlier versions did not record it: the file's time is used
    folder = results / "reproduce"
    folder.mkdir()
    good = folder / f"{NAME}-limit4-{legacy['code_version']}.json"
    good.write_text(json.dumps(legacy), encoding="utf-8")
    broken = folder / f"{NAME}-limit5-abc.json"
    broken.write_text('{"rows": [', encoding="utf-8")
    unknown = folder / "table9-limit5-abc.json"
    unknown.write_text(json.dumps({**legacy, "name": "table9"}), encoding="utf-8")
    text_mean = folder / f"{NAME}-limit6-abc.json"
    rows = [{**legacy["rows"][0], "mean": "<b>high</b>"}]
    text_mean.write_text(json.dumps({**legacy, "limit": 6, "rows": rows}), encoding="utf-8")
    no_verdict = folder / f"{NAME}-limit7-abc.json"
    no_verdict.write_text(json.dumps({**legacy, "limit": 7, "finding": "yes"}), encoding="utf-8")

    [imported] = reproduce.stored_results()
    assert (imported.name, imported.limit, imported.code) == (NAME, 4, legacy["code_version"])
    assert reproduce.load(imported.run_id)["rows"] == legacy["rows"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [good.name + ".imported"] + [f.name + ".unreadable" for f in (broken, unknown, text_mean, no_verdict)]
    )
    assert len(parquet_files(results)) == 1  # the refused files left nothing behind
    assert stored.import_legacy(results, reproduce.REGISTRY) == 0  # once: nothing left to import
    assert [r.run_id for r in reproduce.stored_results()] == [imported.run_id]


def test_no_legacy_folder_creates_nothing(results):
    assert stored.import_legacy(results, reproduce.REGISTRY) == 0
    assert reproduce.stored_results() == [] and list(results.iterdir()) == []


def test_cli_reads_a_stored_result_back(results, capsys, monkeypatch):
    assert main(["reproduce", NAME, "--limit", "3", "--json", "--quiet"]) == 0
    computed = json.loads(capsys.readouterr().out)
    assert computed["cached"] is False

    monkeypatch.setattr(reproduce, "run", lambda *a, **k: pytest.fail("--cached must not compute"))
    assert main(["reproduce", NAME, "--cached", "--json", "--results-dir", str(results)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == {**computed, "cached": True}
    assert main(["reproduce", NAME, "--limit", "3", "--cached"]) == 0
    text = capsys.readouterr().out
    assert "SST-2 · exact" in text and "48.94" in text and "40.25" in text and "[30.12, 50.38]" in text
    assert f"stored, run {computed['run_id']}" in text and "finding: HOLDS" in text

    assert main(["reproduce", NAME, "--limit", "7", "--cached"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"error: no stored result of {NAME} at --limit 7; compute it with `python -m cli reproduce {NAME} --limit 7`"
    )
    assert main(["reproduce", NAME, "--cached", "--refresh"]) == 2
    assert "not both" in capsys.readouterr().err


def test_cli_reads_the_packaged_result_when_none_is_stored(results, capsys, monkeypatch, tmp_path):
    """``--cached`` with nothing stored prints the result packaged with the app (at its slice), says
    so, and computes nothing; at another slice it is still the one-line error."""
    monkeypatch.setattr(reproduce, "BUNDLED_DIR", tmp_path / "bundled")
    assert main(["reproduce", NAME, "--limit", "4", "--json", "--quiet", "--results-dir", str(tmp_path / "a")]) == 0
    packaged = json.loads(capsys.readouterr().out)
    (tmp_path / "bundled").mkdir()
    (tmp_path / "bundled" / f"{NAME}.json").write_text(json.dumps(packaged))

    monkeypatch.setattr(reproduce, "run", lambda *a, **k: pytest.fail("--cached must not compute"))
    assert main(["reproduce", NAME, "--cached", "--json"]) == 0
    out, err = capsys.readouterr()
    shown = json.loads(out)
    assert shown["bundled"] is True and shown["rows"] == packaged["rows"] and shown["cached"] is True
    assert err.strip() == f"note: the result packaged with the app (computed {packaged['computed']} UTC)"
    assert main(["reproduce", NAME, "--cached", "--limit", "4"]) == 0
    assert "(code " in (text := capsys.readouterr().out) and "; packaged with the app)" in text
    assert main(["reproduce", NAME, "--cached", "--limit", "5"]) == 2
    assert "no stored result" in capsys.readouterr().err
    assert reproduce.stored_results(NAME) == []  # the store was never written


def test_run_listings_name_the_reproduction_and_the_explorer_leaves_it_out(results, capsys):
    from services import runs

    payload, _ = reproduce.cached_run(NAME, 3)
    assert RunStore(results, read_only=True).list_runs()["kind"].tolist() == ["reproduce"]
    assert main(["runs"]) == 0
    [line] = capsys.readouterr().out.strip().splitlines()[1:]
    assert line.startswith(f"{payload['run_id']}  done") and line.endswith(f"(reproduce {NAME} --limit 3)")
    assert "minilm-mlm / sst2/dev, esnli/dev_highlighted / " in line
    assert runs.catalogue().empty  # the explorer lists dataset runs only


def test_an_unreadable_stored_result_is_computed_again(results):
    """A stored result whose file is gone raised FileNotFoundError through ``cached_run`` (and the
    page); it is a one-line ``UnreadableResult``, and ``cached_run`` computes the result again."""
    payload, _ = reproduce.cached_run(NAME, 5)
    for path in parquet_files(results):
        path.unlink()
    with pytest.raises(stored.UnreadableResult, match=r"^stored reproduction \S+ cannot be read \(\w+\)$"):
        reproduce.load(payload["run_id"])
    again, was_stored = reproduce.cached_run(NAME, 5)
    assert not was_stored and again["rows"] == payload["rows"]
    assert reproduce.load(again["run_id"])["rows"] == payload["rows"]


def test_pick_shows_the_slice_asked_for_not_the_newest_of_any(results):
    """A run at --limit 2 replaced the default slice's result on the page."""
    reproduce.cached_run(NAME, 5)
    reproduce.cached_run(NAME, 2)  # newer
    chosen, current = reproduce.pick(reproduce.stored_results(NAME), limit=5)
    assert chosen is not None and (chosen.limit, current) == (5, True)
    assert reproduce.pick(reproduce.stored_results(NAME), limit=7) == (None, False)


def test_a_json_without_the_shown_fields_is_not_a_result(tmp_path):
    """The page reads ``differences``, ``published_note`` and the finding's ``reason``: a JSON
    without them raised KeyError on the page; it is refused like any other non-result."""
    good = {
        "name": NAME, "limit": 2, "code_version": "x", "rows": [], "settings": {}, "runtime_s": 1.0,
        "finding": {"holds": None, "reason": "undecided"}, "differences": ["a reason"], "published_note": "note",
    }  # fmt: skip
    path = tmp_path / "result.json"
    path.write_text(json.dumps(good))
    assert stored.parsed_payload(path, [NAME]) is not None  # undecided is a verdict
    for broken in (
        {k: v for k, v in good.items() if k != "differences"},
        {k: v for k, v in good.items() if k != "published_note"},
        good | {"finding": {"holds": True}},
        good | {"finding": {"holds": "yes", "reason": "r"}},
        good | {"differences": [1]},
    ):
        path.write_text(json.dumps(broken))
        assert stored.parsed_payload(path, [NAME]) is None, broken


def test_cli_prints_an_undecided_finding_as_undecided(results, capsys, monkeypatch):
    from engine.reproduce.base import Finding

    entry = reproduce.REGISTRY[NAME]
    monkeypatch.setitem(reproduce.REGISTRY, NAME, dataclasses.replace(entry, check=lambda rows: Finding(None, "why")))
    assert main(["reproduce", NAME, "--limit", "3", "--quiet"]) == 0
    assert "finding: UNDECIDED: why" in capsys.readouterr().out.splitlines()
    [listed] = reproduce.stored_results(NAME)
    assert listed.holds is None
