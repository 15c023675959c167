"""One reading of Madsen et al.'s Eq. 3 for the ROAR page and ``python -m cli roar``: the 95%
interval over seeds decides (faithful, not faithful, undecided). The command line said "(not
faithful)" for any negative mean, even where the interval held 0 and the page said undecided."""

from __future__ import annotations

from experiments.roar.removal import Level
from experiments.roar.scores import RANDOM, SHARED, UnitResult

LEVELS = (Level(0), Level(50), Level(100))


def rows() -> list[UnitResult]:
    """Three seeds: random at 0.7 at 50%, ``loo`` around it (Eq. 3 of 25, -25 and -12.5: a
    negative mean whose interval holds 0), ``attention`` above it (-37.5, -40, -35)."""
    out = []
    for seed, (loo, attention) in enumerate(((0.6, 0.85), (0.8, 0.86), (0.75, 0.84))):
        out += [
            UnitResult(SHARED, Level(0), seed, 0.9, 0.9),
            UnitResult(SHARED, Level(100), seed, 0.5, 0.5),
            UnitResult(RANDOM, Level(50), seed, 0.7, 0.7),
            UnitResult("loo", Level(50), seed, loo, loo),
            UnitResult("attention", Level(50), seed, attention, attention),
        ]
    return out


def test_the_command_line_and_the_page_read_eq3_from_the_interval_alike(capsys) -> None:
    from cli.roar import print_summary
    from engine.roar.report import summarize
    from ui.roar import faithfulness_table

    summary = summarize(rows(), LEVELS, (Level(50),))
    loo, attention = summary["faithfulness"]["loo"], summary["faithfulness"]["attention"]
    assert loo["mean"] < 0 < loo["high"] and attention["high"] < 0
    page = faithfulness_table(summary).set_index("method")["reading"]
    assert page["loo"] == "undecided: the interval holds 0 (random)"
    assert page["attention"] == "not faithful (its curve above random's)"
    result = {"run_id": "run-x", "status": "done", "units_done": 1, "units_total": 1, "wall_s": 1.0,
              "command": "python -m cli roar", **summary}  # fmt: skip
    print_summary(result)
    lines = {line.split(":")[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("Eq. 3")}
    assert lines["Eq. 3 loo"].endswith(f"over 3 seed(s): {page['loo']}"), lines
    assert lines["Eq. 3 attention"].endswith(f"over 3 seed(s): {page['attention']}"), lines


def test_the_rule_reads_the_interval_not_the_mean_alone() -> None:
    from engine.roar.report import eq3_reading

    assert eq3_reading(55.7, 20.2, 91.3) == "faithful (its curve below random's)"
    assert eq3_reading(79.9, -284.6, 444.3) == "undecided: the interval holds 0 (random)"
    assert eq3_reading(-12.0, -20.0, -4.0) == "not faithful (its curve above random's)"
    assert eq3_reading(-5.0, -30.0, 20.0) == "undecided: the interval holds 0 (random)"
    assert eq3_reading(30.0, None, None) == "undecided: one seed, no interval"
    assert eq3_reading(None, None, None) == "–"
