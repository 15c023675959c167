"""An estimate of the time left, added to a progress callback's messages.

A long request reports ``progress(fraction, message)`` (``core.types.ProgressFn``); the app's
progress bar (``ui.runs.run_or_stop``) shows the message under the bar. ``with_eta`` wraps such a
callback so that each message ends with the time left, extrapolated linearly from the time since
its first report and the fraction done since then (so work skipped from a cache before the first
report does not count as speed).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from core.types import ProgressFn

# No estimate before this much is done or this many seconds have passed: too little to extrapolate.
MIN_FRACTION = 0.02
MIN_SECONDS = 1.0


def count_text(count: int, noun: str) -> str:
    """``1 example``, ``2 examples``: ``count`` of ``noun`` (a noun made plural by an s)."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def duration_text(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``1 h 2 min``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def with_eta(progress: ProgressFn | None, clock: Callable[[], float] = time.monotonic) -> ProgressFn | None:
    """``progress`` with "about ... left" appended to every message once ``MIN_FRACTION`` more
    than at the first report is done and ``MIN_SECONDS`` have passed since it; None stays None."""
    if progress is None:
        return None
    first: list[tuple[float, float]] = []  # (time, fraction) of the first report

    def report(fraction: float, message: str) -> None:
        now = clock()
        if not first:
            first.append((now, fraction))
        start, done = first[0]
        elapsed, gained = now - start, fraction - done
        if gained >= MIN_FRACTION and elapsed >= MIN_SECONDS and fraction < 1.0:
            message = f"{message} (about {duration_text(elapsed * (1 - fraction) / gained)} left)"
        progress(fraction, message)

    return report
