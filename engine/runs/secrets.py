"""Keep a Ray cluster's credentials out of everything the project writes or shows (issue 25).

A cluster address may carry a user and password (``ray://user:secret@host:10001``) and a token-
authenticated cluster reads its token from Ray's own environment variables (``RAY_AUTH_TOKEN``,
or a file named by ``RAY_AUTH_TOKEN_PATH``). The executor never records the address (a run
stores only the executor's name), and ``redact`` removes both from the one place a message of
Ray's could carry them: a failed run's stored error (and the command line's error line)."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

TOKEN_VARIABLES = ("RAY_AUTH_TOKEN",)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")


def secrets(address: str | None = None) -> list[str]:
    """The credential strings in play: Ray's token and the user information of ``address``."""
    found = [os.environ.get(name, "") for name in TOKEN_VARIABLES]
    token_path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if token_path:
        with contextlib.suppress(OSError):
            found.append(Path(token_path).read_text(encoding="utf-8").strip())
    for text in (address, os.environ.get("RAY_ADDRESS")):
        match = _USERINFO.search(text or "")
        if match:
            userinfo = match.group(0)[len(match.group("scheme")) : -1]
            found += [userinfo, *userinfo.split(":")]
    return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


def redact(text: str, address: str | None = None) -> str:
    """``text`` with every URL's user information and every known credential replaced by ``***``."""
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", text)
    for secret in secrets(address):
        text = text.replace(secret, "***")
    return text
