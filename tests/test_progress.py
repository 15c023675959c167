"""The time left added to progress messages (core/progress.py)."""

from __future__ import annotations

from core.progress import duration_text, with_eta


def test_time_left_is_extrapolated_from_the_work_done_since_the_first_report():
    now = [100.0]
    shown: list[tuple[float, str]] = []
    report = with_eta(lambda fraction, message: shown.append((fraction, message)), clock=lambda: now[0])
    report(0.2, "start")  # e.g. the first 20% came from a cache: not counted as speed
    now[0] = 110.0
    report(0.3, "step")  # 10% in 10 s: 70% left takes 70 s
    now[0] = 130.0
    report(0.6, "step")  # 40% in 30 s: 40% left takes 30 s
    now[0] = 131.0
    report(1.0, "done")
    assert shown == [
        (0.2, "start"),
        (0.3, "step (about 1 min 10 s left)"),
        (0.6, "step (about 30 s left)"),
        (1.0, "done"),
    ]


def test_no_estimate_too_early_and_none_stays_none():
    now = [0.0]
    shown: list[str] = []
    report = with_eta(lambda fraction, message: shown.append(message), clock=lambda: now[0])
    report(0.0, "a")
    now[0] = 0.5
    report(0.5, "b")  # under a second since the first report
    now[0] = 5.0
    report(0.01, "c")  # 1% is too little to extrapolate from
    assert shown == ["a", "b", "c"]
    assert with_eta(None) is None


def test_duration_text():
    assert [duration_text(s) for s in (0.4, 42, 185, 3720)] == ["0 s", "42 s", "3 min 5 s", "1 h 2 min"]


def test_the_command_lines_bar_counts_whole_items_and_closes_at_the_end():
    """``cli.common.progress_bar`` over 4 examples: 0.89 done shows 3 of 4 (rounding showed "4/4
    100%" while the last example was still being scored); the bar closes at 1.0."""
    from cli.common import _OPEN_BARS, progress_bar

    report = progress_bar(4)
    assert report is not None
    report(0.25, "example 2 of 4")
    report(0.889, "example 4 of 4 · scoring 217 of 279 variants")
    bar = _OPEN_BARS[-1]
    assert (bar.n, bar.total) == (3, 4)
    report(1.0, "4 examples done")
    assert bar.n == 4 and bar not in _OPEN_BARS


def test_a_bar_in_percent_shows_no_count_or_rate(capsys):
    """The attack, import and randomisation bars run over 100 "%" and read "37/100 [00:03<00:05,
    12.1%/s, ...]"; they now show the percentage, the times and the message only."""
    from cli.common import _OPEN_BARS, progress_bar

    report = progress_bar(100, unit="%")
    assert report is not None
    report(0.37, "example 1 of 3, saliency")
    bar = _OPEN_BARS[-1]
    line = str(bar)
    assert line.startswith(" 37%|") and line.endswith(", example 1 of 3, saliency]"), line
    assert "/100" not in line and "%/s" not in line
    report(1.0, "done")
    assert bar not in _OPEN_BARS
    examples = progress_bar(4)
    assert examples is not None
    examples(0.5, "example 3 of 4")
    assert "2/4" in str(_OPEN_BARS[-1])  # a bar of items keeps its count and rate
    examples(1.0, "done")
