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


def one_layout(drawn: str) -> str:
    """A page's heatmap HTML with only its first (widest) layout: the page draws a heatmap in
    several line widths and shows the one that fits its column (``ui.heatmap._layouts``)."""
    kept, position = [], 0
    for found in re.finditer(r'<div class="hm-fit hm-fit-[1-9][0-9]*">', drawn):
        if found.start() < position:
            continue
        kept.append(drawn[position : found.start()])
        depth, scan = 1, found.end()
        while depth:
            opening, closing = drawn.find("<div", scan), drawn.find("</div>", scan)
            if opening != -1 and opening < closing:
                depth, scan = depth + 1, opening + 4
            else:
                depth, scan = depth - 1, closing + len("</div>")
        position = scan
    return "".join(kept) + drawn[position:]
