"""Page text as the user reads it in AppTest: the markdown escapes the pages add to messages that
may quote user input (``ui.text.plain``) removed."""

from __future__ import annotations

import re


def as_read(markdown: str) -> str:
    """``markdown`` without the escapes and the invisible word joiners ``plain`` adds."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def errors(at) -> list[str]:
    """The page's ``st.error`` messages as read."""
    return [as_read(e.value) for e in at.error]
