"""A run's progress inside the unit it is computing, for readers in other processes.

The catalogue moves once a unit is stored. A unit of 16 long documents explained by slow methods,
or a ROAR unit that explains and retrains, runs for minutes, and a page that reads only the
catalogue shows nothing moving in that time. The process that writes a run (dataset runs and ROAR
jobs, serial or on Ray, where the driver gets its workers' reports through a Ray queue:
``engine.runs.ray_executor``) therefore keeps ``runs/<run_id>/live.json``: the run's fraction done
with the shares of the units under way, a line saying where it is, its pid and the run's wall
time so far. It is written at most once a second, under a temporary name renamed into place (a
reader never sees half a file), not synced (it is worth nothing after a crash), and removed when
the writer lets the run go. A reader trusts it only while the catalogue names that pid as the
run's live writer (``read_live``). ``RunTracker`` turns a run's progress reports into the
caller's and the file's.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.files import TEMPORARY_SUFFIX
from core.types import ProgressFn

if TYPE_CHECKING:
    from engine.runs.records import RunInfo

EVERY_S = 1.0


def live_path(root: Path, run_id: str) -> Path:
    return root / "runs" / run_id / "live.json"


@dataclass(frozen=True)
class LiveProgress:
    fraction: float  # of the run's rows, the current unit's share included
    message: str  # e.g. "examples 113-128 of 200 · explaining lime: 40%"
    pid: int
    wall_s: float  # the run's wall time so far, its earlier sessions included


class LiveWriter:
    """Writes a run's ``live.json`` from its progress reports, at most every ``EVERY_S`` seconds."""

    def __init__(self, root: Path, run_id: str, wall: Callable[[], float]) -> None:
        self.path = live_path(root, run_id)
        self.wall = wall
        self.last = 0.0
        self.closed = False

    def report(self, fraction: float, message: str) -> None:
        now = time.time()
        if self.closed or now - self.last < EVERY_S:
            return
        self.last = now
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}{TEMPORARY_SUFFIX}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(
                json.dumps({"fraction": fraction, "message": message, "pid": os.getpid(), "wall_s": self.wall()})
            )
            os.replace(temporary, self.path)
        except OSError:  # a full or read-only disk costs the readers a moving bar, not the run
            temporary.unlink(missing_ok=True)

    def close(self) -> None:
        """Remove the file; later reports write nothing."""
        self.closed = True
        self.path.unlink(missing_ok=True)


class RunTracker:
    """A run's progress in its rows (a dataset run's examples, a ROAR job's units): (rows finished
    + the shares of the units under way) / rows in the run, to the caller's ``progress`` and to the
    run's live file, both with a line that says where the run is and what a unit is doing."""

    def __init__(
        self, progress: ProgressFn | None, live: LiveWriter, done: int, total: int, noun: str = "example"
    ) -> None:
        self.progress, self.live, self.done, self.total, self.noun = progress, live, done, total, noun
        self.shares: dict[int, float] = {}  # rows' worth done of each unit under way

    def report(self, message: str, stage: str = "") -> None:
        fraction = min(1.0, (self.done + sum(self.shares.values())) / self.total)
        line = f"{message} · {stage}" if stage else message
        if self.progress is not None:
            self.progress(fraction, line)
        self.live.report(fraction, line)

    def finished(self, n_rows: int, unit: int, what: str = "") -> None:
        """Unit ``unit``'s ``n_rows`` rows are stored (``what``: the unit, for the message)."""
        self.shares.pop(unit, None)
        self.done += n_rows
        self.report(f"{what + ' done: ' if what else ''}{self.done} of {self.total} {self.noun}s")

    def within(self, n_rows: int, unit: int, what: str = "") -> ProgressFn:
        """The progress callback of unit ``unit`` of ``n_rows`` rows (``what``: the unit, for the
        line); its messages read "explaining examples 1-16 of 16: lime: 40%" (the stage's verb, a
        colon, where it is), and the line "examples 17-32 of 872 · explaining lime: 40%": the unit's
        rows in the order the run does them. With several units under way (Ray's actors), the line
        counts them."""

        def report(fraction: float, message: str) -> None:
            self.shares[unit] = fraction * n_rows
            verb, _, where = message.partition(": ")
            stage = f"{verb.split(' ')[0]} {where}" if where else ""
            if len(self.shares) > 1:
                done = self.done + int(sum(self.shares.values()))
                head = f"{done} of {self.total} {self.noun}s · {len(self.shares)} units under way"
            else:
                first, last = self.done + 1, self.done + n_rows  # the unit's rows, in the order they are done
                rows = f"{self.noun}s {first}-{last}" if n_rows > 1 else f"{self.noun} {first}"
                head = f"{rows} of {self.total}{f' ({what})' if what else ''}"
            self.report(head, stage)

        return report


def read_live(root: Path, info: RunInfo) -> LiveProgress | None:
    """The live progress of run ``info``, or None: when its process is not writing it any more
    (the catalogue is the truth), wrote none yet, or the file cannot be read."""
    if not info.being_written:
        return None
    try:
        found = json.loads(live_path(root, info.run_id).read_text())
        live = LiveProgress(float(found["fraction"]), str(found["message"]), int(found["pid"]), float(found["wall_s"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return live if live.pid == info.pid else None
