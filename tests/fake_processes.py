"""A stand-in for the background processes the app starts (``services.background``): the
``started`` fixture (tests/conftest.py) records each ``subprocess.Popen`` call as a ``Process``."""

from __future__ import annotations

import subprocess


class Process:
    """Writes ``line`` to its log and exits with ``code`` at once (None: it runs until ``finish``);
    a test sets both on the class before the page starts it."""

    code: int | None = None
    line = ""

    def __init__(self, command: list[str], stdout=None, **kwargs) -> None:
        self.command = command
        self.code = type(self).code
        self.signals: list[int] = []
        if stdout is not None:
            stdout.write(self.line)

    def poll(self) -> int | None:
        return self.code

    def wait(self, timeout: float) -> int:
        if self.code is None:
            raise subprocess.TimeoutExpired(self.command, timeout)
        return self.code

    def send_signal(self, number: int) -> None:
        self.signals.append(number)

    def finish(self) -> None:
        self.code = 0
