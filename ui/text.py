"""Text shown literally inside Streamlit markdown."""

from __future__ import annotations

import re

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")
_SCHEME = re.compile(r"(?<=:)//")  # "https://": the start of a URL that markdown would turn into a link
# A colon that starts Streamlit's own codes (":smile:", ":red[x]", ":material/warning:"): a backslash
# stops the first two but not the icons; a word joiner (U+2060, invisible) after the colon stops all.
_CODE_COLON = re.compile(r":(?=\\?(?:[^\W\d]|[+-]))")  # a letter, _, + or -: not a time's digits
WORD_JOINER = "\u2060"


def plain(text: str) -> str:
    """``text`` with every markdown and HTML character escaped, so it renders as typed; a URL in
    it stays text (its ``//`` escaped: markdown makes a link of ``https://x`` and would keep the
    other escapes inside the link, showing ``https://x\\.co``), and a colon that could start one of
    Streamlit's emoji, colour or icon codes is followed by an invisible word joiner."""
    escaped = _SCHEME.sub(r"\/\/", _MARKDOWN.sub(r"\\\1", text))
    return _CODE_COLON.sub(":" + WORD_JOINER, escaped)
