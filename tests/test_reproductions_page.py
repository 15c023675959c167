"""The Reproductions page (app_pages/reproductions.py) in AppTest, on a results folder of its own.

Opening the page reads the cache only: a result the current code computed, one an older code
version left behind, and five never run. The Run button goes through the one Run gate to
``engine.reproduce.cached_run``; the reproduction's computation itself is tested in
tests/test_reproduce.py, so here ``engine.reproduce.run`` returns a recorded payload (a real
``--limit 2`` run of Table A3 takes 20-90 s) and the test checks what the page does with it: the
file lands in the cache, and a new session shows it without running anything.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from engine import reproduce
from engine.reproduce import base

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
}  # fmt: skip


def payload(name: str, holds: bool, version: str, limit: int = 2) -> dict:
    out = copy.deepcopy(TABLE_A3)
    out.update(name=name, limit=limit, code_version=version)
    out["finding"] = {"holds": holds, "reason": f"checked {name}"}
    return out


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(base.RESULTS_ENV, str(tmp_path))
    version = base.code_version()
    base.save_atomic(
        base.cache_path("double-trouble-tableA3", 2, version), payload("double-trouble-tableA3", True, version)
    )
    old = "0123456789ab"
    base.save_atomic(
        base.cache_path("double-trouble-table4", 100, old), payload("double-trouble-table4", False, old, 100)
    )
    return tmp_path


def open_page():
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_latest_prefers_the_current_code_version(results):
    version = base.code_version()
    current, is_current = reproduce.latest("double-trouble-tableA3")
    assert is_current and current["code_version"] == version
    old, is_current = reproduce.latest("double-trouble-table4")
    assert not is_current and old["code_version"] == "0123456789ab"
    assert reproduce.latest("aml-table1") == (None, False)
    with pytest.raises(ValueError, match="unknown reproduction"):
        reproduce.latest("nope")


def test_page_shows_cached_tables_beside_the_published_values(results, monkeypatch):
    monkeypatch.setattr(reproduce, "run", lambda *a, **k: pytest.fail("opening the page must compute nothing"))
    app = open_page()
    text = "\n".join(m.value for m in app.markdown)
    assert "**1 of 8** findings hold here, 1 do not, 6 not run yet." in text
    assert text.count(":gray-badge[not run]") == 6
    assert text.count(":green-badge[holds]") == 2  # claim line and finding line of Table A3
    assert text.count(":red-badge[does not hold]") == 2
    assert "replaces a word with a masked language model" in text  # the paper's paragraph
    assert "earlier version of the code (0123456789ab)" in text
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
    keys = {b.key for b in app.download_button}
    assert "reproductions.double-trouble-tableA3.table.download.table.csv" in keys
    assert "reproductions.double-trouble-tableA3.table.download.table.parquet" in keys


def test_run_button_fills_the_cache_and_a_new_session_reads_it(results, monkeypatch):
    calls = []

    def recorded(name, limit, progress=None):
        calls.append((name, limit))
        progress(1.0, "done")
        return payload(name, True, base.code_version(), limit)

    monkeypatch.setattr(reproduce, "run", recorded)
    app = open_page()
    app.number_input(key="reproductions.aml-table1.limit").set_value(3).run()
    assert calls == []
    app.button(key="reproductions.aml-table1.run").click().run()
    assert not app.exception
    assert calls == [("aml-table1", 3)]
    assert base.cache_path("aml-table1", 3).is_file()
    assert "python -m cli reproduce aml-table1 --limit 3" in [c.value for c in app.code]
    app.run()  # a rerun reads the file the run wrote
    assert calls == [("aml-table1", 3)]
    again = open_page()
    assert calls == [("aml-table1", 3)]
    assert "**2 of 8** findings hold here, 1 do not, 5 not run yet." in "\n".join(m.value for m in again.markdown)


def test_table_exports_as_csv():
    from ui.export import table_bytes
    from ui.reproductions import rows_frame

    csv = table_bytes(rows_frame(TABLE_A3), "csv").decode("utf-8")
    assert csv.splitlines()[0] == "row,published,ours,95% low,95% high,n"
    assert "48.94" in csv
