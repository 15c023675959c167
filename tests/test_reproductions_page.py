"""The Reproductions page (app_pages/reproductions.py) in AppTest, on a run store of its own.

Opening the page reads the run store only: a result the current code computed, one an older code
version left behind, and six never run; no model is loaded and no computation starts. The Run
button goes through the one Run gate to ``engine.reproduce.cached_run``; the reproduction's
computation itself is tested in tests/test_reproduce.py, so here the registry entry's ``compute``
returns recorded rows (a real ``--limit 2`` run of Table A3 takes 20-90 s) and the test checks
what the page does with them: the result lands in the run store, and a new session shows it
without running anything.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from engine import reproduce
from engine.reproduce import base, stored
from engine.reproduce.base import Row
from engine.runs.store import RESULTS_ENV, RunStore
from tests.test_reproduce_store import latest

PAGE = str(Path(__file__).resolve().parent.parent / "app_pages" / "reproductions.py")

# `python -m cli reproduce double-trouble-tableA3 --limit 2 --json`, trimmed to three rows
TABLE_A3 = {
    "name": "double-trouble-tableA3",
    "paper": "Pham, Bui, Mai & Nguyen 2022, arXiv 2110.11929",
    "title": "Double Trouble",
    "table": "Table A3",
    "claim": reproduce.REGISTRY["double-trouble-tableA3"].claim,
    "published_note": "% of words whose BERT top-1 is the word (uncased)",
    "settings": {"masked_lm": "minilm-mlm", "k": 10},
    "limit": 2,
    "default_limit": 300,
    "rows": [
        {"label": "SST-2 · % top-1 exact match, all words", "key": ["SST-2", "exact_all"], "published": 48.94,
         "mean": 34.72222222222222, "low": -88.81032382392061, "high": 158.25476826836507, "n": 2},
        {"label": "SST-2 · top-1 likelihood where it is an exact match", "key": ["SST-2", "likelihood"],
         "published": 0.8229, "mean": 0.5652021393179893, "low": -1.1144289380911636, "high": 2.2448332167271423,
         "n": 2},
        {"label": "e-SNLI · % top-1 exact match, human-highlighted words", "key": ["e-SNLI", "exact_highlighted"],
         "published": None, "mean": 32.5, "low": None, "high": None, "n": 2},
    ],
    "finding": {"holds": True, "reason": "the masked LM often restores the word (SST-2: 34.7% exact)"},
    "differences": ["our masked LM is minilm-mlm, not pre-trained BERT-base"],
    "runtime_s": 85.8,
    "load_average": None,
    "code_version": "",
    "computed": "2025-01-02T03:04:05",
}  # fmt: skip


def payload(name: str, holds: bool | None, version: str, limit: int = 2) -> dict:
    out = copy.deepcopy(TABLE_A3)
    out.update(name=name, limit=limit, code_version=version)
    out["finding"] = {"holds": holds, "reason": f"checked {name}"}
    return out


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    monkeypatch.setattr(reproduce, "BUNDLED_DIR", tmp_path / "bundled")  # none packaged unless a test writes one
    # the page shows each reproduction's default slice: Table A3's is 2 here, as stored below
    entry = reproduce.REGISTRY["double-trouble-tableA3"]
    monkeypatch.setitem(reproduce.REGISTRY, entry.name, dataclasses.replace(entry, default_limit=2))
    store = RunStore(tmp_path)
    version = base.code_version()
    stored.save(store, payload("double-trouble-tableA3", True, version))
    old = "0123456789ab"
    stored.save(store, payload("double-trouble-table4", False, old, 100))
    return tmp_path


@pytest.fixture
def no_computing(monkeypatch):
    """Every way of computing a reproduction fails the test: each entry's compute, the engine's
    run and the loading of a classifier or the masked LM."""

    def refuse(*args, **kwargs):
        pytest.fail("opening the page must compute nothing and load no model")

    for name, entry in list(reproduce.REGISTRY.items()):
        monkeypatch.setitem(reproduce.REGISTRY, name, dataclasses.replace(entry, compute=refuse))
    monkeypatch.setattr(reproduce, "run", refuse)
    monkeypatch.setattr(base.Resources, "classifier", refuse)
    monkeypatch.setattr(base.Resources, "mlm", refuse)
    # patched where the app calls it too: a module first imported inside this test would otherwise
    # bind ``refuse`` for good and break every later test that loads a model
    import services.models

    monkeypatch.setattr("core.loaded.load_classifier", refuse)
    monkeypatch.setattr(services.models, "load_classifier", refuse)
    monkeypatch.setattr("core.masked_lm.MaskedLM.load", refuse)


def open_page():
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_latest_prefers_the_current_code_version(results):
    version = base.code_version()
    current, is_current = latest("double-trouble-tableA3")
    assert is_current and current["code_version"] == version
    old, is_current = latest("double-trouble-table4")
    assert not is_current and old["code_version"] == "0123456789ab"
    assert latest("aml-table1") == (None, False)
    with pytest.raises(ValueError, match="unknown reproduction"):
        latest("nope")


def test_page_shows_stored_tables_beside_the_published_values(results, no_computing):
    app = open_page()
    text = "\n".join(m.value for m in app.markdown)
    assert "**1 of 8** findings hold here, 1 does not, 0 undecided, 6 not run yet." in text
    assert text.count(":gray-badge[not run]") == 6
    assert text.count(":green-badge[holds]") == 2  # claim line and finding line of Table A3
    assert text.count(":red-badge[does not hold]") == 2
    assert "replaces a word with a masked language model" in text  # the paper's paragraph
    assert "earlier version of the code (0123456789ab)" in text
    assert "finished 2025\\-01\\-02T03:04:05 UTC" in text  # escaped: renders as typed
    assert text.count("No stored result yet. On the command line:") == 6
    headers = [h.value for h in app.header]
    assert headers[0].startswith("Double Trouble (Pham, Bui, Mai & Nguyen 2022, arXiv 2110.11929)")
    assert len(headers) == 4  # Double Trouble, MaRC, AML, Recursive ROAR
    table = next(
        d.value for d in app.dataframe if "e-SNLI · % top-1 exact match, human-highlighted words" in set(d.value["row"])
    )
    assert list(table.columns) == ["row", "published", "ours", "95% low", "95% high", "n"]
    assert table.loc[0, "published"] == 48.94 and table.loc[0, "ours"] == pytest.approx(34.7222222)
    assert table["published"].isna().iloc[2] and table["95% low"].isna().iloc[2]
    commands = [c.value for c in app.code]
    assert "python -m cli reproduce double-trouble-tableA3 --limit 2" in commands
    assert "python -m cli reproduce double-trouble-table4 --limit 100" in commands
    assert "python -m cli reproduce aml-table1 --limit 40" in commands  # not run: the default slice
    listings = [d.value.to_dict("records") for d in app.dataframe if "finished (UTC)" in d.value.columns]
    run_of = {r.name: r.run_id for r in reproduce.stored_results()}
    common = {"finished (UTC)": "2025-01-02 03:04", "n": 2, "run time (s)": 85.8}
    assert listings == [  # page order: Table 4, then Table A3
        [{**common, "code": "0123456789ab", "examples per split": 100, "finding": "does not hold",
          "run": run_of["double-trouble-table4"]}],
        [{**common, "code": f"{base.code_version()} (current)", "examples per split": 2, "finding": "holds",
          "run": run_of["double-trouble-tableA3"]}],
    ]  # fmt: skip
    keys = {b.key for b in app.download_button}
    assert "reproductions.double-trouble-tableA3.table.download.table.csv" in keys
    assert "reproductions.double-trouble-tableA3.table.download.table.parquet" in keys


def test_run_button_stores_the_result_and_a_new_session_reads_it(results, monkeypatch):
    calls = []

    def recorded(resources, limit, progress):
        calls.append(limit)
        progress(1.0, "done")
        return [Row("SST-2 · published cell", ("SST-2", "log_odds", "fAML"), -1.994, -1.5, -2.0, -1.0, limit)]

    entry = reproduce.REGISTRY["aml-table1"]
    monkeypatch.setitem(reproduce.REGISTRY, "aml-table1", dataclasses.replace(entry, compute=recorded))
    app = open_page()
    app.number_input(key="reproductions.aml-table1.limit").set_value(3).run()
    assert calls == []
    app.button(key="reproductions.aml-table1.run").click().run()
    assert not app.exception
    assert calls == [3]
    [kept] = reproduce.stored_results("aml-table1")
    assert (kept.limit, kept.code, kept.n) == (3, base.code_version(), 3)
    assert reproduce.load(kept.run_id)["rows"][0]["mean"] == -1.5
    assert "python -m cli reproduce aml-table1 --limit 3" in [c.value for c in app.code]
    app.run()  # a rerun reads what the run stored
    assert calls == [3]
    again = open_page()
    assert calls == [3]
    text = "\n".join(m.value for m in again.markdown)
    # the page shows the default slice (40): the run at 3 did not replace it, it is a choice
    assert "not run yet" in text and text.count("No stored result yet.") == 6
    assert not any(-1.5 in set(d.value.get("ours", [])) for d in again.dataframe)
    again.selectbox(key="reproductions.aml-table1.shown").set_value(3).run()
    assert any(-1.5 in set(d.value.get("ours", [])) for d in again.dataframe)


def test_a_result_bundled_with_the_app_shows_until_the_store_has_one(results, no_computing, tmp_path):
    """A reproduction the run store has no result of shows the one packaged in ``assets/reproductions``
    (marked as such, counted, its table beside the published values); the store's own result wins
    over it; a file that is not a result of its name is ignored, not shown and not an error."""
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    packaged = payload("double-trouble-table3", False, base.code_version(), 8) | {"run_id": "run-x", "cached": False}
    (bundled / "double-trouble-table3.json").write_text(json.dumps(packaged))
    (bundled / "aml-table1.json").write_text(json.dumps(payload("marc-table1", True, "0")))  # another name inside
    (bundled / "marc-table1.json").write_text("{not json")
    (bundled / "double-trouble-tableA3.json").write_text(json.dumps(payload("double-trouble-tableA3", False, "0")))

    shown = reproduce.bundled("double-trouble-table3")
    assert shown["bundled"] is True and shown["limit"] == 8 and "run_id" not in shown and "cached" not in shown
    assert reproduce.bundled("aml-table1") is None and reproduce.bundled("marc-table1") is None
    assert reproduce.stored_results("double-trouble-table3") == []  # nothing was stored

    app = open_page()
    text = "\n".join(m.value for m in app.markdown)
    assert (
        "**1 of 8** findings hold here, 2 do not, 0 undecided, 5 not run yet (1 of the results was computed when the"
        " app was packaged)." in text
    )
    assert text.count("**Precomputed, bundled with the app**: 8 examples per split") == 1
    assert text.count("No stored result yet. On the command line:") == 5  # AML and MaRC's files are not shown
    assert "python -m cli reproduce double-trouble-table3 --limit 8" in [c.value for c in app.code]
    # Table A3: the store's own result (holds) is shown, not the bundled one (does not hold)
    assert "checked double-trouble-tableA3" in text.replace("\\", "")  # the stored finding's reason


def test_the_packaged_results_are_results_of_their_reproductions():
    """Every file in ``assets/reproductions`` is what ``reproduce NAME --json`` printed at NAME's
    default slice: it parses, its rows have the registry entry's published cells, and it holds no
    path of the machine that computed it."""
    files = sorted(reproduce.BUNDLED_DIR.glob("*.json"))
    assert files, "the app ships packaged reproduction results"
    for path in files:
        name = path.stem
        shown = reproduce.bundled(name)
        assert shown is not None, path
        entry = reproduce.REGISTRY[name]
        assert shown["limit"] == entry.default_limit and shown["claim"] == entry.claim
        assert shown["rows"] and all(len(row["key"]) >= 2 and row["n"] >= 1 for row in shown["rows"])
        assert shown["finding"]["holds"] in (True, False, None) and shown["finding"]["reason"]
        assert "/work/" not in path.read_text() and "/home/" not in path.read_text()
        assert reproduce.changed_models(shown) == [], f"{name} was computed with other model weights"


def test_table_exports_as_csv():
    from ui.export import table_bytes
    from ui.reproductions import rows_frame

    csv = table_bytes(rows_frame(TABLE_A3), "csv").decode("utf-8")
    assert csv.splitlines()[0] == "row,published,ours,95% low,95% high,n"
    assert "48.94" in csv


def test_each_number_column_has_one_format(results, no_computing, monkeypatch):
    """Every table of the packaged results shows each number column with one number of decimals
    (Table 1 showed 0.497 under 0.4374: the paper's 0.4970 read back as a float)."""
    from tests.page_text import shown_cells

    monkeypatch.setattr(reproduce, "BUNDLED_DIR", Path(__file__).resolve().parents[1] / "assets" / "reproductions")
    app = open_page()
    tables = [d for d in app.dataframe if "published" in d.value.columns or "run time (s)" in d.value.columns]
    assert len(tables) >= 8
    for table in tables:
        for column, cells in shown_cells(table).items():
            if column in ("published", "ours", "95% low", "95% high", "run time (s)"):
                shown = {len(c.partition(".")[2]) for c in cells if c != "None"}
                assert len(shown) <= 1, (column, cells)


def test_the_papers_loo_zero_is_not_read_as_ours(results, no_computing, monkeypatch):
    """Table 1's note said "LOO_zero is our loo_pad" beside the app's own, different ``loo_zero``."""
    from tests.page_text import as_read

    monkeypatch.setattr(reproduce, "BUNDLED_DIR", Path(__file__).resolve().parents[1] / "assets" / "reproductions")
    app = open_page()
    notes = next(
        text for text in map(as_read, (m.value for m in app.markdown)) if "LOO_zero" in text and "[PAD]" in text
    )
    assert "LOO_zero is our loo_pad" not in notes
    assert (
        "the paper's LOO_zero ([PAD] in place of the word, Pham et al. 2022 Sec. 4) is the method called loo_pad"
        in notes
    )
    assert "not this app's loo_zero, another method (leave-one-out: zero the word's input embedding)" in notes


def test_a_result_stored_before_the_new_note_is_reworded_on_the_page() -> None:
    """The packaged results now word Table 1's note themselves; a result a run store kept from
    before still says "LOO_zero is our loo_pad", which the page rewords the same way."""
    from ui.reproductions import worded

    descriptions = {"loo_pad": "leave-one-out: [PAD] in place of the word", "loo_zero": "zero the word's embedding"}
    old = "LOO_zero is our loo_pad ([PAD] in place of the word, Pham et al. 2022 Sec. 4)"
    assert worded(old, descriptions) == (
        "the paper's LOO_zero ([PAD] in place of the word, Pham et al. 2022 Sec. 4) is the method called loo_pad"
        " here (leave-one-out: [PAD] in place of the word); not this app's loo_zero, another method (zero the"
        " word's embedding)"
    )
    new = "a dev slice (the first N examples), not all dev examples"
    assert worded(new, descriptions) == new


def test_an_undecided_finding_is_neither_green_nor_red(results, no_computing):
    """A finding whose paired intervals contain 0 was shown as a red "does not hold"."""
    from ui.reproductions import finding_word, headline, verdict

    undecided = payload("double-trouble-table3", None, base.code_version(), 8)
    stored.save(RunStore(results), undecided)
    assert verdict(undecided) == ":blue-badge[undecided]" and finding_word(None) == "undecided"
    assert (
        headline([True, None, False], 8, 0) == "**1 of 8** findings hold here, 1 does not, 1 undecided, 5 not run yet."
    )
    text = "\n".join(m.value for m in open_page().markdown)
    assert "**1 of 8** findings hold here, 1 does not, 1 undecided, 5 not run yet." in text
    assert text.count(":blue-badge[undecided]") == 2  # claim line and finding line of Table 3


def test_an_unreadable_stored_result_falls_back_to_the_bundled_one(results, no_computing, tmp_path):
    """A stored result whose file was deleted raised FileNotFoundError through the whole page."""
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    packaged = payload("double-trouble-tableA3", False, base.code_version())
    (bundled / "double-trouble-tableA3.json").write_text(json.dumps(packaged))
    for path in tmp_path.rglob("*.parquet"):
        path.unlink()
    app = open_page()
    warnings = sorted(w.value.replace("\\", "") for w in app.warning)  # Table 4 has no bundled result
    assert len(warnings) == 2 and all("\n" not in w and "cannot be read (FileNotFoundError)" in w for w in warnings)
    assert sum(w.endswith("; showing the result bundled with the app") for w in warnings) == 1
    assert "**Precomputed, bundled with the app**: 2 examples per split" in "\n".join(m.value for m in app.markdown)


def test_a_bundled_result_of_other_model_weights_says_so(results, no_computing, tmp_path):
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    packaged = payload("double-trouble-table3", True, base.code_version(), 8) | {
        "model_fingerprints": {"minilm-mlm": "0" * 64}
    }
    (bundled / "double-trouble-table3.json").write_text(json.dumps(packaged))
    app = open_page()
    text = "\n".join(m.value for m in app.markdown).replace("\\", "")
    assert "with other weights of minilm-mlm than this machine's: run it again to update" in text


def test_the_slice_field_starts_at_the_entrys_smallest_slice(results, no_computing):
    app = open_page()
    assert app.number_input(key="reproductions.recursive-roar-synthetic.limit").min == 10
    assert app.number_input(key="reproductions.aml-table1.limit").min == 2
