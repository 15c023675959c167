"""A run's progress inside the unit it is computing, for readers in other processes.

The catalogue moves once a unit is stored. A unit of 16 long documents explained by slow methods
runs for minutes, and a page that reads only the catalogue shows nothing moving in that time. The
writer of a run computed in its own process (the ``serial`` executor, as the app's background runs
are) therefore keeps ``runs/<run_id>/live.json``: the run's fraction done with the current unit's
share, a line saying where it is, its pid and the run's wall time so far. It is written at most
once a second, under a temporary name renamed into place (a reader never sees half a file), not
synced (it is worth nothing after a crash), and removed when the writer lets the run go. A reader
trusts it only while the catalogue names that pid as the run's live writer (``read_live``).
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

if TYPE_CHECKING:
    from engine.runs.records import RunInfo

EVERY_S = 1.0


def live_path(root: Path, run_id: str) -> Path:
    return root / "runs" / run_id / "live.json"


@dataclass(frozen=True)
class LiveProgress:
    fraction: float  # of the run's rows, the current unit's share included
    message: str  # e.g. "example 7 of 200"
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
