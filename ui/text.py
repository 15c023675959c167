"""Text shown literally inside Streamlit markdown."""

from __future__ import annotations

import re

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")


def plain(text: str) -> str:
    """``text`` with every markdown and HTML character escaped, so it renders as typed."""
    return _MARKDOWN.sub(r"\\\1", text)
