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
