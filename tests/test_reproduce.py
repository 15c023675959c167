"""The reproductions of the papers' findings (``engine.reproduce``, ``python -m cli reproduce``):
the registry's contract, every finding check on hand-made rows (holds and does not hold), one
reproduction end to end on the bundled masked LM and kept in the run store, and the command line's
bad input (the store itself: tests/test_reproduce_store.py)."""

from __future__ import annotations

import json
import math

import pytest

from cli.main import main
from engine import reproduce
from engine.reproduce import base, mask_papers
from engine.reproduce.base import Row
from engine.reproduce.double_trouble import common, table1, table3, table4, table_a3, table_a5
from engine.runs.store import RESULTS_ENV


def rows(*cells: tuple[tuple[str, ...], float]) -> list[Row]:
    return [Row(" · ".join(key), key, None, mean, mean, mean, 2) for key, mean in cells]


# --------------------------------------------------------------------------- registry contract


def test_registry_covers_the_brief():
    assert set(reproduce.REGISTRY) == {
        "double-trouble-table1",
        "double-trouble-table3",
        "double-trouble-table4",
        "double-trouble-tableA3",
        "double-trouble-tableA5",
        "marc-table1",
        "aml-table1",
        "recursive-roar-synthetic",
    }


@pytest.mark.parametrize("name", list(reproduce.REGISTRY))
def test_every_entry_is_complete(name):
    entry = reproduce.REGISTRY[name]
    assert entry.paper.authors and 2000 < entry.paper.year < 2030 and entry.table
    assert entry.claim.endswith(".") and entry.published_note and entry.settings and entry.differences
    assert entry.default_limit >= 2
    assert callable(entry.compute) and callable(entry.check)

    def numbers(value):
        if isinstance(value, dict):
            return [n for v in value.values() for n in numbers(v)]
        if isinstance(value, tuple):
            return [n for v in value for n in numbers(v)]
        return [value] if isinstance(value, float) else []

    printed = numbers(entry.published)
    if "without printed numbers" in entry.published_note:  # a figure: the check is qualitative
        assert not printed
    else:
        assert len(printed) >= 4 and all(math.isfinite(v) for v in printed)


def test_double_trouble_cites_its_arxiv_id():
    assert common.PAPER.cite() == "Pham, Bui, Mai & Nguyen 2022, arXiv 2110.11929"


# --------------------------------------------------------------------------- finding checks


def table1_rows(sst_bert_best: str) -> list[Row]:
    cells = []
    for dataset in ("SST-2", "e-SNLI"):
        cells += [((dataset, "Deletion", m), v) for m, v in (("IM", 0.47), ("LOO_unk", 0.45), ("LOO_empty", 0.42))]
        bert = {"IM": 0.49, "LOO_unk": 0.50, "LOO_empty": 0.51}
        if dataset == "SST-2" and sst_bert_best == "LOO_empty":
            bert["LOO_empty"] = 0.40
        cells += [((dataset, "Deletion_BERT", m), v) for m, v in bert.items()]
    return rows(*cells)


def test_table1_names_the_papers_loo_zero_apart_from_ours():
    """Table 1's note read "LOO_zero is our loo_pad", beside this app's own, different loo_zero;
    the Reproductions page had to reword it."""
    from ui.reproductions import worded

    note = next(d for d in reproduce.REGISTRY["double-trouble-table1"].differences if "LOO_zero" in d)
    assert note == (
        "the paper's LOO_zero ([PAD] in place of the word, Pham et al. 2022 Sec. 4) is the method called loo_pad"
        " here; not this app's loo_zero, another method (leave-one-out: zero the word's input embedding)"
    )
    assert worded(note, {"loo_pad": "pad", "loo_zero": "zero"}) == note  # shown as written


def test_table1_flip_holds_when_the_winner_changes():
    finding = table1.check_table1(table1_rows("IM"))
    assert finding.holds
    assert "SST-2: best under Deletion LOO_empty, under Deletion_BERT IM" in finding.reason


def test_table1_flip_fails_when_one_dataset_keeps_its_winner():
    finding = table1.check_table1(table1_rows("LOO_empty"))
    assert not finding.holds and "does not flip" in finding.reason


def test_table3_check():
    good = rows((("iou", "IM"), 0.30), (("iou", "LOO_empty"), 0.34), (("f1", "IM"), 0.50), (("f1", "LOO_empty"), 0.54))
    assert table3.check_table3(good).holds
    bad = rows((("iou", "IM"), 0.40), (("iou", "LOO_empty"), 0.34), (("f1", "IM"), 0.50), (("f1", "LOO_empty"), 0.54))
    finding = table3.check_table3(bad)
    assert not finding.holds and "iou LOO_empty 0.340 vs IM 0.400" in finding.reason


def test_table4_ratio_check():
    names = table4.TABLE4_ROWS
    good = rows(*[(("SST-2", n), v) for n, v in zip(names, (3.0, 2.0, 16.0))])
    assert table4.check_table4(good).holds
    # 9 points is more than half of 16: the single-word change is not "much smaller".
    bad = rows(*[(("SST-2", n), v) for n, v in zip(names, (9.0, 2.0, 16.0))])
    assert not table4.check_table4(bad).holds


def test_table_a3_thresholds():
    good = rows((("SST-2", "exact_all"), 40.0), (("SST-2", "likelihood"), 0.6))
    assert table_a3.check_table_a3(good).holds
    assert not table_a3.check_table_a3(rows((("SST-2", "exact_all"), 20.0), (("SST-2", "likelihood"), 0.9))).holds
    assert not table_a3.check_table_a3(rows((("SST-2", "exact_all"), 40.0), (("SST-2", "likelihood"), 0.4))).holds


def test_table_a5_ordering():
    good = rows((("SST-2", "sign_change", "LOO_empty"), 70.0), (("SST-2", "sign_change", "IM"), 60.0))
    assert table_a5.check_table_a5(good).holds
    bad = rows((("SST-2", "sign_change", "LOO_empty"), 50.0), (("SST-2", "sign_change", "IM"), 60.0))
    assert not table_a5.check_table_a5(bad).holds


def test_marc_check_needs_both_human_metrics():
    cells = [
        (("token_f1", "MaRC"), 0.47),
        (("token_f1", "LIME"), 0.43),
        (("iou_f1", "MaRC"), 0.16),
        (("iou_f1", "LIME"), 0.08),
    ]
    assert mask_papers.check_marc(rows(*cells)).holds
    cells[3] = (("iou_f1", "LIME"), 0.2)
    finding = mask_papers.check_marc(rows(*cells))
    assert not finding.holds and "best IoU F1: LIME 0.200" in finding.reason


def test_aml_check_directions():
    cells = [
        (("log_odds", "fAML"), -2.0),
        (("log_odds", "IG"), -0.9),
        (("sufficiency", "fAML"), 0.02),
        (("sufficiency", "IG"), 0.07),
        (("comprehensiveness", "fAML"), 0.29),
        (("comprehensiveness", "IG"), 0.19),
    ]
    assert mask_papers.check_aml(rows(*cells)).holds
    cells[3] = (("sufficiency", "IG"), 0.01)  # lower sufficiency is better: IG wins it
    assert not mask_papers.check_aml(rows(*cells)).holds


def test_a_check_without_scored_rows_does_not_hold():
    finding = table_a5.check_table_a5(rows((("SST-2", "sign_change", "IM"), 60.0)))
    assert not finding.holds and "no scored examples" in finding.reason


# --------------------------------------------------------------------------- end to end and the run store


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    return tmp_path


def test_table_a3_end_to_end_then_stored(results, capsys, monkeypatch):
    assert main(["reproduce", "double-trouble-tableA3", "--limit", "2", "--json", "--quiet"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["cached"] is False and payload["limit"] == 2
    by_key = {tuple(r["key"]): r for r in payload["rows"]}
    assert by_key[("SST-2", "exact_all")]["published"] == 48.94
    for row in payload["rows"]:
        assert row["n"] == 2 and row["low"] <= row["mean"] <= row["high"]
    # Top-10 mass holds the top-1 probability, so it is at least the exact matches' likelihood share.
    assert 0 < by_key[("SST-2", "exact_all")]["mean"] < 100
    assert by_key[("e-SNLI", "top10_mass")]["mean"] <= 100
    assert isinstance(payload["finding"]["holds"], bool) and payload["finding"]["reason"]
    [stored] = reproduce.stored_results()
    assert (stored.name, stored.limit, stored.code, stored.n) == ("double-trouble-tableA3", 2, base.code_version(), 2)
    assert stored.run_id == payload["run_id"] and not (results / "reproduce").exists()

    def no_compute(*args, **kwargs):
        raise AssertionError("the stored result should have been used")

    monkeypatch.setattr(reproduce, "run", no_compute)
    assert main(["reproduce", "double-trouble-tableA3", "--limit", "2", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["cached"] is True and again["rows"] == payload["rows"]
    with pytest.raises(AssertionError, match="stored result"):
        main(["reproduce", "double-trouble-tableA3", "--limit", "2", "--refresh"])


def test_unknown_name_is_one_line_naming_the_choices(results, capsys):
    for extra in ([], ["--cached"]):
        assert main(["reproduce", "table9", *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "unknown reproduction 'table9'" in err and "double-trouble-table1" in err
    assert list(results.iterdir()) == []  # no store, no file


def test_slice_too_small_for_an_interval(results, capsys):
    for extra in ([], ["--cached"]):
        assert main(["reproduce", "marc-table1", "--limit", "1", *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert err == "error: --limit 1 is too small for a 95% interval: give 2 or more"
    assert list(results.iterdir()) == []
    assert main(["reproduce", "recursive-roar-synthetic", "--limit", "3"]) == 2  # not scikit-learn's "one class"
    assert (
        capsys.readouterr().err.strip() == "error: --limit 3 is too small for recursive-roar-synthetic: give 10 or more"
    )


def test_list_names_paper_table_and_claim(capsys):
    assert main(["reproduce", "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(reproduce.REGISTRY)
    assert lines[0].split("\t")[:3] == ["double-trouble-table1", common.PAPER.cite(), "Table 1 (a)"]
