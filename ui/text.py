"""Text shown literally inside Streamlit markdown."""

from __future__ import annotations

import re

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&])")
_SCHEME = re.compile(r"(?<=:)//")  # "https://": the start of a URL that markdown would turn into a link
# A colon that starts Streamlit's own codes (":smile:", ":red[x]", ":material/warning:"): a backslash
# stops the first two but not the icons; a word joiner (U+2060, invisible) after the colon stops all.
_CODE_COLON = re.compile(r":(?=\\?(?:[^\W\d]|[+-]))")  # a letter, _, + or -: not a time's digits
WORD_JOINER = "\u2060"
# The one thesis the sanity-check and attack pages follow, named where a page first mentions it.
THESIS = "the thesis “Assessing the Interpretability of Large Language Models” (Oxford MSc, 2022)"
_NAME_PARTS = re.compile(r"(?<=[-_.])(?!\d+(?:[-_.]|$))")  # after a separator, unless a number follows


def clipped(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: cut, with an ellipsis as the last one, where it is
    longer (a select box's or button's label that would run past its box)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shortened_name(name: str, limit: int) -> str:
    """A model's name in at most ``limit`` characters: as it is where it fits, else its first and
    last whole parts (split after ``-``, ``_`` or ``.``; a number stays with the part before it, as
    in ``SST-2``) around an ellipsis, the last part always kept and as many characters as fit; a
    name whose parts do not fill two thirds of ``limit`` keeps characters from both ends."""
    if len(name) <= limit:
        return name
    parts = _NAME_PARTS.split(name)
    best = ""
    for first in range(len(parts) - 1):  # on equal lengths, more of the start
        for last in range(1, len(parts) - first):
            label = "".join(parts[:first]) + "…" + "".join(parts[-last:])
            if len(best) <= len(label) <= limit:
                best = label
    if len(best) >= 2 * limit // 3:
        return best
    head = (limit - 1) // 2
    return f"{name[:head]}…{name[head + 1 - limit :]}"


def plain(text: str) -> str:
    """``text`` with every markdown and HTML character escaped, so it renders as typed; a URL in
    it stays text (its ``//`` escaped: markdown makes a link of ``https://x`` and would keep the
    other escapes inside the link, showing ``https://x\\.co``), and a colon that could start one of
    Streamlit's emoji, colour or icon codes is followed by an invisible word joiner."""
    escaped = _SCHEME.sub(r"\/\/", _MARKDOWN.sub(r"\\\1", text))
    return _CODE_COLON.sub(":" + WORD_JOINER, escaped)


def breakable(name: str) -> str:
    """``name`` as markdown text that may wrap after each of its underscores (a zero-width space
    follows each) rather than inside a word: at the presentation font the heatmaps page's narrow
    expander broke "integrated_gradients" into "integrated_gradie" and "nts"."""
    return plain(name).replace("\\_", "\\_\u200b")
