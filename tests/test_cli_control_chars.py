"""Text output shows control characters escaped: a word, a method, a label or an error message from
a bundle, a store, a file or the command line cannot clear the screen, recolour the terminal or
split a row of a table (``cli.common.printable``); ``--json`` escapes them already."""

from __future__ import annotations

import numpy as np

from cli.common import print_summary_table, printable
from cli.main import main
from core.types import Attribution, Example
from engine.bundles import Bundle, write_bundle

CLEAR_RED = "\x1b[2J\x1b[31mPWNED"


def test_printable_escapes_c0_del_and_c1_only() -> None:
    assert printable("a\nb\tc\x1b[2J\x00\x7f\x85\x9f") == "a\\nb\\tc\\x1b[2J\\x00\\x7f\\x85\\x9f"
    assert printable("plain, ünïcode ‘quotes’ \\ and 3") == "plain, ünïcode ‘quotes’ \\ and 3"


def test_open_prints_a_hostile_bundle_escaped_one_row_per_word(tmp_path, capsys) -> None:
    words = ("good", CLEAR_RED, "line\nbreak")
    example = Example(segments=(words,), id="x\x1b[1m")
    attribution = Attribution(
        method="loo_empty", example_id=example.id, target=1, words=words, scores=np.array([0.1, 0.2, 0.3])
    )
    bundle = Bundle(
        model="evil\x1b[31m",
        label_names=("neg", "pos\x1b[5m"),
        selection={"dataset": None, "text": " ".join(words), "target": None, "methods": ["loo_empty"]},
        params={"loo_empty": {}},
        example=example,
        probabilities=(0.3, 0.7),
        predicted=1,
        target=1,
        attributions={"loo_empty": attribution},
        errors={"im": "bad\x1b[2Jthing\nsecond line"},
    )
    path = tmp_path / "evil.zip"
    path.write_bytes(write_bundle(bundle))
    assert main(["open", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    lines = out.splitlines()
    assert lines[0].startswith("evil.zip: evil\\x1b[31m, typed text (x\\x1b[1m)")
    assert lines[1] == "predicted 'pos\\x1b[5m' (p = 0.700); explaining 'pos\\x1b[5m'"
    rows = lines[3:6]
    assert [row.split()[0] for row in rows] == ["good", "\\x1b[2J\\x1b[31mPWNED", "line\\nbreak"]
    assert len({row.index(".") for row in rows}) == 1  # the scores line up under their method
    assert lines[6:] == ["im failed: bad\\x1b[2Jthing\\nsecond line"]


def test_explain_text_output_escapes_the_words(capsys, model_dirs) -> None:
    clf_dir, _ = model_dirs
    argv = ["explain", "--model", str(clf_dir), "--text", f"the plot {CLEAR_RED}", "--methods", "loo_empty"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and " \\x1b:" in out  # split_words keeps ESC a word of its own


def test_a_stored_summary_escapes_methods_metrics_and_errors(capsys) -> None:
    cell = {"mean": 0.5, "interval": [0.4, 0.6], "n": 3}
    payload = {
        "results": {"m\x1b[31m": {"k\x1b[2J": cell}},
        "metrics": {"k\x1b[2J": {"higher_is_better": True}},
        "n_examples": 3,
        "runtime_s": 1.0,
        "forward_passes": 9,
        "errors": {"m\x1b[31m": [{"error": "boom\x1b[2J\ntraceback line"}]},
    }
    print_summary_table(payload)
    out = capsys.readouterr().out
    assert "\x1b" not in out and len(out.splitlines()) == 4
    assert out.splitlines()[-1] == "m\\x1b[31m failed on 1 example, first: boom\\x1b[2J\\ntraceback line"


def test_an_error_message_escapes_what_was_given(tmp_path, capsys) -> None:
    assert main(["show", "r", "--results-dir", str(tmp_path / f"a{CLEAR_RED}")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b[2J\\x1b[31mPWNED: no such folder" in err


def test_the_roar_summary_escapes_what_the_store_holds(capsys) -> None:
    """``roar`` printed its job's methods, levels and command unescaped."""
    from cli.roar import print_summary

    cell = {"level": f"10%{CLEAR_RED}", "mean": 0.8, "low": 0.7, "high": 0.9, "n": 3}
    result = {
        "run_id": "run-x\x1b[1m", "status": "done\x1b[2J", "units_done": 1, "units_total": 1, "wall_s": 1.0,
        "command": f"python -m cli roar --methods m{CLEAR_RED}",
        "curves": {f"m{CLEAR_RED}": [cell]},
        "faithfulness": {f"m{CLEAR_RED}": {"mean": 5.0, "low": 1.0, "high": 9.0, "n": 3, "reading": "ok\x1b[5m"}},
        "t_tests": [{"a": f"m{CLEAR_RED}", "b": "random", "level": "10%\x1b[5m", "t": 2.0, "p": 0.05}],
        "leakage": [{"method": f"m{CLEAR_RED}", "rise": 0.1, "from": "0%\x1b[2J", "to": "10%\n", "significant": True}],
    }  # fmt: skip
    print_summary(result)
    out = capsys.readouterr().out
    assert "\x1b" not in out and len(out.splitlines()) == 6, out
    assert out.splitlines()[1] == "python -m cli roar --methods m\\x1b[2J\\x1b[31mPWNED"


def test_reproduce_prints_a_stored_result_escaped(capsys) -> None:
    """``reproduce`` printed a stored result's paper, rows, settings and reasons unescaped."""
    from cli.reproduce import _print

    evil = CLEAR_RED
    payload = {
        "paper": f"P{evil}", "title": f"T{evil}", "table": f"Table{evil}", "claim": f"c{evil}",
        "published_note": f"n{evil}", "settings": f"s{evil}", "differences": [f"d{evil}"],
        "rows": [{"label": f"row{evil}", "published": 0.5, "mean": 0.4, "low": 0.3, "high": 0.5, "n": 8}],
        "finding": {"holds": True, "reason": f"r{evil}\nsecond"},
        "run_id": f"run{evil}", "limit": 8, "runtime_s": 1.0, "computed": f"now{evil}", "code_version": f"v{evil}",
    }  # fmt: skip
    _print(payload, cached=True)
    out = capsys.readouterr().out
    assert "\x1b" not in out and len(out.splitlines()) == 10, out
    assert "finding: HOLDS: r\\x1b[2J\\x1b[31mPWNED\\nsecond" in out.splitlines()
