"""Text shown literally inside Streamlit markdown."""

from __future__ import annotations

import re

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")
_SCHEME = re.compile(r"(?<=:)//")  # "https://": the start of a URL that markdown would turn into a link


def plain(text: str) -> str:
    """``text`` with every markdown and HTML character escaped, so it renders as typed; a URL in
    it stays text (its ``//`` escaped: markdown makes a link of ``https://x`` and would keep the
    other escapes inside the link, showing ``https://x\\.co``)."""
    return _SCHEME.sub(r"\/\/", _MARKDOWN.sub(r"\\\1", text))
