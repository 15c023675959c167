"""ROAR results maths against independent hand computations: curves over seeds, Pham et al.'s
t-test (its Table 2 p-values from its printed means and deviations), Madsen et al.'s Eq. 3 and the
class-leakage flag."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.roar.removal import Level
from experiments.roar.scores import (
    SHARED,
    UnitResult,
    curves,
    faithfulness,
    faithfulness_scores,
    leakage,
    performance,
    sparsity,
    t_test,
)

T_975_2 = 4.302652729911275  # Student's t, 97.5% quantile, 2 degrees of freedom (tables)
L0, L10, L20, L30, L100 = Level(0), Level(10), Level(20), Level(30), Level(100)


def rows_of(table: dict[tuple[str, Level], list[float]]) -> list[UnitResult]:
    return [
        UnitResult(method, level, seed, value, value / 2)
        for (method, level), values in table.items()
        for seed, value in enumerate(values)
    ]


def test_performance_by_hand():
    # class 0: P = R = 1/2, F1 = 1/2; class 1: P = R = 2/3, F1 = 2/3
    accuracy, f1 = performance([0, 0, 1, 1, 1], [0, 1, 1, 1, 0], 2)
    assert accuracy == pytest.approx(0.6) and f1 == pytest.approx((1 / 2 + 2 / 3) / 2)
    # a constant prediction over three classes: F1 = 2 * (1/3 * 1) / (1/3 + 1) = 1/2 for class 0, 0 for the others
    assert performance([0, 1, 2], [0, 0, 0], 3) == pytest.approx((1 / 3, 1 / 6))
    with pytest.raises(ValueError, match="2 predictions for 3 gold labels"):
        performance([0, 1, 2], [0, 1], 3)


def test_curves_share_the_0_and_100_percent_models():
    rows = rows_of(
        {
            (SHARED, L0): [0.9, 0.9, 0.9],
            (SHARED, L100): [0.5, 0.5, 0.5],
            ("loo", L10): [0.7, 0.8, 0.9],
            ("random", L10): [0.85, 0.85, 0.85],
        }
    )
    out = curves(rows, [L0, L10, L100])
    assert list(out) == ["loo", "random"]
    zero, ten, full = out["loo"]
    assert (zero.mean, zero.n, full.mean, full.n) == (pytest.approx(0.9), 3, pytest.approx(0.5), 3)
    assert ten.mean == pytest.approx(0.8) and ten.std == pytest.approx(0.1)
    half = T_975_2 * 0.1 / math.sqrt(3)
    assert 0.8 + half > 1.0 and (ten.low, ten.high) == (pytest.approx(0.8 - half), 1.0)  # cut to accuracy's range
    assert ten.values == (0.7, 0.8, 0.9)
    assert out["random"][1].std == pytest.approx(0.0)
    macro = curves(rows, [L10], metric="macro_f1")
    assert macro["loo"][0].mean == pytest.approx(0.4)
    with pytest.raises(ValueError, match="unknown metric 'auc'; choose one of accuracy, macro_f1"):
        curves(rows, [L10], metric="auc")
    with pytest.raises(ValueError, match="two results for method 'loo', level 10%, seed 0"):
        curves([*rows, rows[6]], [L10])


def standardized(n: int = 5) -> np.ndarray:
    z = np.arange(n, dtype=np.float64)
    return (z - z.mean()) / z.std(ddof=1)


@pytest.mark.parametrize(
    ("loo", "im", "printed_p"),
    [
        ((74.59, 0.78), (76.22, 1.18), 0.0370),  # ROAR 10%
        ((68.94, 1.46), (70.07, 0.69), 0.1740),  # ROAR 20%
        ((67.89, 0.79), (66.54, 1.89), 0.1974),  # ROAR 30%
        ((76.79, 0.56), (77.36, 0.90), 0.2672),  # ROAR_BERT 10%
        ((71.95, 0.75), (71.56, 1.55), 0.6312),  # ROAR_BERT 20%
    ],
)
def test_t_test_reproduces_pham2022_table_2(loo, im, printed_p):
    """Five accuracies with the printed mean and standard deviation: the test's p-value is the
    hand-computed Welch p-value and lies within 0.01 of the paper's."""
    from scipy import stats

    a, b = loo[0] + loo[1] * standardized(), im[0] + im[1] * standardized()
    rows = rows_of({("loo_empty", L10): a.tolist(), ("im", L10): b.tolist()})
    result = t_test(rows, "loo_empty", "im", L10)
    va, vb = loo[1] ** 2 / 5, im[1] ** 2 / 5
    t = (loo[0] - im[0]) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 4)
    assert result.statistic == pytest.approx(t)
    assert result.p_value == pytest.approx(2 * stats.t.sf(abs(t), df))
    assert result.p_value == pytest.approx(printed_p, abs=0.01)
    assert (result.n_a, result.n_b) == (5, 5)


def test_t_test_needs_two_seeds():
    rows = rows_of({("a", L10): [0.5], ("b", L10): [0.6, 0.7]})
    with pytest.raises(ValueError, match="at least 2 seeds per method at 10%: 'a' has 1, 'b' has 2"):
        t_test(rows, "a", "b", L10)


def test_eq3_by_hand():
    x, b, floor = [0.0, 0.5, 1.0], [0.9, 0.7, 0.5], 0.5
    # area(b - p) = 1/2*0.5*(0 + 0.1) + 1/2*0.5*(0.1 + 0) = 0.05; area(b - floor) = 0.25*0.6 + 0.25*0.2 = 0.2
    assert faithfulness(x, [0.9, 0.6, 0.5], b, floor) == pytest.approx(25.0)
    assert faithfulness(x, b, b, floor) == 0.0  # the random curve itself
    assert faithfulness(x, [0.9, 0.8, 0.5], b, floor) == pytest.approx(-25.0)  # above random
    # reaching the floor at the first step: area 0.1 of 0.2, below 100% because p = b at 0%
    assert faithfulness(x, [0.9, 0.5, 0.5], b, floor) == pytest.approx(50.0)
    # invariant to the step size: halving the steps on the same piecewise-linear curves
    fine = faithfulness([0, 0.25, 0.5, 0.75, 1.0], [0.9, 0.75, 0.6, 0.55, 0.5], [0.9, 0.8, 0.7, 0.6, 0.5], floor)
    assert fine == pytest.approx(25.0)
    assert math.isnan(faithfulness(x, [0.9, 0.6, 0.5], [0.5, 0.5, 0.5], floor))  # random on the floor
    with pytest.raises(ValueError, match=r"levels must increase, got \[0.0, 1.0, 0.5\]"):
        faithfulness([0.0, 1.0, 0.5], [0.9, 0.6, 0.5], b, floor)


def test_eq3_per_seed_over_the_job_levels():
    levels = [L0, Level(50), L100]
    rows = rows_of(
        {
            (SHARED, L0): [0.9, 0.9, 0.9],
            (SHARED, L100): [0.5, 0.5, 0.5],
            ("random", Level(50)): [0.7, 0.7, 0.7],
            ("good", Level(50)): [0.6, 0.5],  # seed 2 not done yet
            ("bad", Level(50)): [0.8, 0.8, 0.8],
        }
    )
    scores = faithfulness_scores(rows, levels)
    assert set(scores) == {"good", "bad"}
    assert scores["good"].mean == pytest.approx((25.0 + 50.0) / 2)
    assert (scores["good"].n, scores["good"].skipped) == (2, 1)
    assert scores["bad"].mean == pytest.approx(-25.0) and scores["bad"].n == 3
    with pytest.raises(ValueError, match=r"Eq. 3 starts at 0% removed, got levels \['10%', '20%'\]"):
        faithfulness_scores(rows, [L10, L20])


def test_leakage_flags_any_rise_and_marks_significant_ones():
    levels = [L0, L10, L20, L30]
    rows = rows_of(
        {
            (SHARED, L0): [0.90, 0.91, 0.92],
            ("ig", L10): [0.70, 0.71, 0.72],
            ("ig", L20): [0.80, 0.81, 0.82],  # rises by 0.10, far beyond both intervals
            ("ig", L30): [0.79, 0.83, 0.84],  # rises by 0.01, within the intervals
        }
    )
    leaks = leakage(curves(rows, levels)["ig"])
    assert [(leak.start, leak.end, leak.significant) for leak in leaks] == [(L10, L20, True), (L20, L30, False)]
    assert leaks[0].rise == pytest.approx(0.10) and leaks[1].rise == pytest.approx(0.01)
    assert leakage(curves(rows, levels)["ig"], tolerance=0.05)[0].end == L20
    assert len(leakage(curves(rows, levels)["ig"], tolerance=0.05)) == 1
    one_seed = rows_of({(SHARED, L0): [0.55], ("ig", L10): [0.50], ("ig", L20): [0.60]})
    curve = curves(one_seed, levels[:3])["ig"]
    assert all(math.isnan(c.low) and math.isnan(c.high) for c in curve)  # one value has no interval
    assert [(leak.end, leak.significant) for leak in leakage(curve)] == [(L20, False)]  # a rise, not a significant one


def test_sparsity_by_hand():
    # |scores| sorted: 4, 3, 2, 1 (total 10) and 5, 5 (total 10); an all-zero example is skipped
    scores = [np.array([1.0, -4.0, 2.0, 3.0]), np.array([5.0, 5.0]), np.zeros(3)]
    out = sparsity(scores, [Level(1, "tokens"), Level(2, "tokens"), Level(50), Level(100)])
    top1, top2, half, full = out.values()
    assert top1.mean == pytest.approx((0.4 + 0.5) / 2) and top1.skipped == 1 and top1.n == 2
    assert top2.mean == pytest.approx((0.7 + 1.0) / 2)
    assert half.mean == pytest.approx((0.7 + 0.5) / 2)  # floor(4 * 0.5) = 2 words, floor(2 * 0.5) = 1 word
    assert full.mean == pytest.approx(1.0)


def test_a_stopped_jobs_eq3_stops_at_its_first_missing_level():
    """A job stopped before 20% of ``good`` was retrained, with 30% done: Eq. 3 ran over 0%, 10%
    and 30%, drawing a straight line over 20%. It is now over 0% and 10%, and its reading says so."""
    from engine.roar.report import summarize

    levels = [L0, L10, L20, L30]
    table = {(SHARED, L0): [0.9, 0.9], (SHARED, L100): [0.5, 0.5]}
    table |= {("random", level): [0.85 - level.amount / 200] * 2 for level in (L10, L20, L30)}
    table |= {("good", L10): [0.7, 0.6], ("good", L30): [0.5, 0.5]}  # 20% not retrained yet
    summary = summarize(rows_of(table), levels, [L10])
    good = summary["faithfulness"]["good"]
    expected = faithfulness_scores(rows_of(table), [L0, L10])["good"]
    assert good["mean"] == pytest.approx(expected.mean) and good["levels"] == ["0%", "10%"]
    assert good["mean"] != pytest.approx(faithfulness_scores(rows_of(table), [L0, L10, L30])["good"].mean)
    assert good["reading"].endswith(" (over 0% to 10% only)")
    table[("good", L20)] = [0.6, 0.55]
    done = summarize(rows_of(table), levels, [L10])["faithfulness"]["good"]
    assert done["levels"] == ["0%", "10%", "20%", "30%"] and "only" not in done["reading"]
    del table[(SHARED, L100)]  # no 100% model yet: no Eq. 3 to read, and no span to qualify it
    floorless = summarize(rows_of(table), levels, [L10])["faithfulness"]["good"]
    assert floorless["mean"] is None and floorless["reading"] == "\N{EN DASH}"


def test_a_reports_sparsity_skips_rows_whose_example_is_gone_or_changed():
    """The report reads every evaluation row's scores against the dataset as it is now: an index
    past its end (a shorter file, another folder) raised IndexError and lost the whole report."""
    from core.types import Example
    from engine.roar.report import _removable_scores

    pair = Example(segments=(("a", "dull", "film"), ("it", "bores")), id="p")
    row = {"index": 0, "scores": [0.1, 0.2, 0.3, 0.4, 0.5]}
    assert _removable_scores(row, [pair], "main").tolist() == [0.1, 0.2, 0.3]  # the premise only
    assert _removable_scores(row, [pair], "all").tolist() == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert _removable_scores({**row, "index": 1}, [pair], "main") is None  # gone
    assert _removable_scores({**row, "scores": [0.1, 0.2]}, [pair], "main") is None  # another text now
    assert _removable_scores({**row, "scores": []}, [pair], "main") is None  # a unit without scores
