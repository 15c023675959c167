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
from engine.reproduce import base, mask_papers, recursive_roar
from engine.reproduce.base import Row
from engine.reproduce.double_trouble import common, table1, table3, table4, table_a3, table_a5
from engine.runs.store import RESULTS_ENV
from metrics.base import mean_interval


def rows(*cells: tuple[tuple[str, ...], float]) -> list[Row]:
    """Rows of three examples each scoring the row's mean: two rows' paired differences are all
    alike, so their interval is a point and decides unless the means are equal."""
    return [Row(" · ".join(key), key, None, mean, mean, mean, 3, (mean,) * 3) for key, mean in cells]


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


def table1_rows(sst_bert_best: str = "IM", sst_deletion_im: float = 0.47) -> list[Row]:
    cells = []
    for dataset in ("SST-2", "e-SNLI"):
        deletion = {"IM": 0.47, "LOO_zero": 0.44, "LOO_unk": 0.45, "LOO_empty": 0.42}
        if dataset == "SST-2":
            deletion["IM"] = sst_deletion_im
        cells += [((dataset, "Deletion", m), v) for m, v in deletion.items()]
        bert = {"IM": 0.49, "LOO_zero": 0.495, "LOO_unk": 0.50, "LOO_empty": 0.51}
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


def test_table1_holds_when_im_is_best_under_bert_and_worst_under_deletion():
    finding = table1.check_table1(table1_rows())
    assert finding.holds is True
    assert "SST-2 Deletion_BERT: IM minus LOO_zero -0.005 [-0.005, -0.005], n=3 (IM better)" in finding.reason


def test_table1_fails_when_one_dataset_keeps_its_winner():
    finding = table1.check_table1(table1_rows("LOO_empty"))
    assert finding.holds is False and "does not flip" in finding.reason
    assert "SST-2 Deletion_BERT: IM minus LOO_empty +0.090" in finding.reason


def test_table1_checks_that_im_is_the_worst_under_deletion_not_only_that_the_winner_changes():
    """The winner flips (LOO_empty under Deletion, IM under Deletion_BERT), but IM is not the worst
    under Deletion: the caption's claim does not hold (the old check only asked for a flip)."""
    finding = table1.check_table1(table1_rows(sst_deletion_im=0.43))
    assert finding.holds is False and "SST-2 Deletion: LOO_zero minus IM +0.010" in finding.reason


def test_table3_check():
    good = rows((("iou", "IM"), 0.30), (("iou", "LOO_empty"), 0.34), (("f1", "IM"), 0.50), (("f1", "LOO_empty"), 0.54))
    assert table3.check_table3(good).holds is True
    bad = rows((("iou", "IM"), 0.40), (("iou", "LOO_empty"), 0.34), (("f1", "IM"), 0.50), (("f1", "LOO_empty"), 0.54))
    finding = table3.check_table3(bad)
    assert finding.holds is False and "iou: LOO_empty minus IM -0.060" in finding.reason


def test_overlapping_paired_interval_is_undecided_not_reversed():
    """Table 3 at 8 examples: IM's mean IoU above LOO_empty's with intervals overlapping was shown as
    "does not hold"; the paired difference's interval contains 0, so it is undecided."""
    im = (0.5, 0.1, 0.4, 0.3, 0.6, 0.2, 0.35, 0.39)
    loo = (0.2, 0.6, 0.1, 0.5, 0.3, 0.4, 0.1, 0.33)
    cells = [
        Row(f"{key} {name}", (key, name), None, sum(v) / 8, None, None, 8, v)
        for key in ("iou", "f1")
        for name, v in (("IM", im), ("LOO_empty", loo))
    ]
    finding = table3.check_table3(cells)
    assert finding.holds is None and finding.reason.startswith("undecided: 2 of 2 paired differences")
    assert "iou: LOO_empty minus IM -0.039 [-0.294, +0.217], n=8 (undecided)" in finding.reason


def test_paired_comparison_needs_two_pairs_and_values():
    a = Row("a", ("x", "A"), None, 0.5, None, None, 3, (0.5, None, 0.7))
    b = Row("b", ("x", "B"), None, 0.1, None, None, 3, (0.1, 0.2, float("nan")))
    c = base.compare([a, b], ("x", "A"), ("x", "B"), lower=False)
    assert (c.better, c.n) == (None, 0) and "fewer than 2 examples scored by both" in c.text()
    stored_before = Row("a", ("x", "A"), None, 0.5, 0.4, 0.6, 3)  # a result stored before values were kept
    assert base.compare([stored_before, b], ("x", "A"), ("x", "B"), lower=False).better is None
    assert base.paired((1.0, 2.0, 4.0), (0.0, 0.0, 1.0)) == pytest.approx(mean_interval([1.0, 2.0, 3.0]))


def test_rows_keep_their_per_example_values_in_the_json():
    row = Row.scored("r", ("k",), None, [0.5, None, float("nan"), 0.25], bounds=(0.0, 1.0), scale=100.0)
    assert row.values == (50.0, None, None, 25.0) and row.mean == 37.5 and row.n == 2
    assert base.row_json(row)["values"] == [50.0, None, None, 25.0]


def test_table4_ratio_check():
    names = table4.TABLE4_ROWS
    good = rows(*[(("SST-2", n), v) for n, v in zip(names, (3.0, 2.0, 16.0))])
    assert table4.check_table4(good).holds is True
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
    assert table_a5.check_table_a5(good).holds is True
    bad = rows((("SST-2", "sign_change", "LOO_empty"), 50.0), (("SST-2", "sign_change", "IM"), 60.0))
    assert table_a5.check_table_a5(bad).holds is False


def marc_rows(**lime: float) -> list[Row]:
    marc = {"token_f1": 0.47, "auprc": 0.47, "iou_f1": 0.16}
    return rows(
        *[((key, "MaRC"), v) for key, v in marc.items()], *[((key, "LIME"), lime.get(key, 0.1)) for key in marc]
    )


def test_marc_check_needs_every_human_metric():
    assert mask_papers.check_marc(marc_rows()).holds is True
    finding = mask_papers.check_marc(marc_rows(iou_f1=0.2))
    assert finding.holds is False and "iou_f1: MaRC minus LIME -0.040" in finding.reason
    # The claim names mAP too: the check read only token F1 and IoU F1.
    assert mask_papers.check_marc(marc_rows(auprc=0.6)).holds is False


def test_aml_check_directions():
    cells = [
        (("log_odds", "fAML"), -2.0),
        (("log_odds", "IG"), -0.9),
        (("sufficiency", "fAML"), 0.02),
        (("sufficiency", "IG"), 0.07),
        (("comprehensiveness", "fAML"), 0.29),
        (("comprehensiveness", "IG"), 0.19),
    ]
    assert mask_papers.check_aml(rows(*cells)).holds is True
    cells[3] = (("sufficiency", "IG"), 0.01)  # lower sufficiency is better: IG wins it
    assert mask_papers.check_aml(rows(*cells)).holds is False


def test_a_check_without_scored_rows_is_undecided():
    finding = table_a5.check_table_a5(rows((("SST-2", "sign_change", "IM"), 60.0)))
    assert finding.holds is None and "fewer than 2 examples scored by both" in finding.reason


def synthetic_rows(plain_gaps: tuple[float, ...], recursive_gap: float = 0.01) -> list[Row]:
    n = len(plain_gaps)
    return [
        Row("plain gap", ("plain", "gap"), None, sum(plain_gaps) / n, None, None, n, plain_gaps),
        Row("recursive gap", ("recursive", "gap"), None, recursive_gap, None, None, n, (recursive_gap,) * n),
        Row("plain at4", ("plain", "at4"), None, 0.9, None, None, n, tuple(0.5 + 4 * g for g in plain_gaps)),
        Row("truth at4", ("truth", "at4"), None, 0.5, None, None, n, (0.5,) * n),
    ]


def test_recursive_roar_uses_an_unselected_range_of_seeds_and_counts_them():
    """Seeds were (0, 2, 3): seed 1, where plain ROAR matches the truth, was left out by outcome."""
    assert recursive_roar.SEEDS == (0, 1, 2, 3, 4)
    finding = recursive_roar.check_synthetic(synthetic_rows((0.1, 0.0, 0.12, 0.11, 0.09)))
    assert "plain ROAR is off the truth curve (mean |gap| above 0.05) on 4 of 5 seeds" in finding.reason
    assert recursive_roar.check_synthetic(synthetic_rows((0.1, 0.11, 0.12, 0.11, 0.09))).holds is True
    assert recursive_roar.check_synthetic(synthetic_rows((0.1,) * 5, recursive_gap=0.05)).holds is False


def test_differences_disclose_where_our_protocol_departs():
    said = {name: " ".join(entry.differences) for name, entry in reproduce.REGISTRY.items()}
    assert "IM's samples" in said["double-trouble-table4"]
    assert "pools all words" in said["double-trouble-tableA3"]
    assert "int(tokens * k / 100)" in said["aml-table1"]
    assert "L1 norm" in said["marc-table1"]


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
    assert payload["finding"]["holds"] in (True, False, None) and payload["finding"]["reason"]
    assert all(len(row["values"]) == 2 for row in payload["rows"])
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
    assert main(["reproduce", "--list", "double-trouble-table1"]) == 0  # NAME: that one (it listed all)
    assert capsys.readouterr().out.splitlines() == lines[:1]


def test_a_slice_past_the_splits_end_is_refused_not_cut() -> None:
    """``reproduce NAME --limit 100000`` computed the whole split and stored it as a slice of 100,000."""
    with pytest.raises(ValueError, match="a limit of 100000 is more than the"):
        base.examples("examples", "sst2", 100_000)


def test_aml_models_are_kept_in_the_reproductions_results_folder(tmp_path, monkeypatch) -> None:
    """``reproduce --results-dir X`` kept its run in X but AML's pre-trained models in the default
    results folder."""
    from engine.pretrained_store import FOLDER

    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "default"))
    assert base.Resources(results=str(tmp_path / "asked")).methods().folder == tmp_path / "asked" / FOLDER
    assert base.Resources().methods().folder == tmp_path / "default" / FOLDER
