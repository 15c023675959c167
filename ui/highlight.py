"""The reader's own highlight on the human-rationales page: for an example no human highlighted
(a typed text, or a dataset without rationales), the words the reader would point to become the
rationale the methods are scored against; beside the annotators' (``compare_picker``), the
reader's highlight is scored against theirs as they are scored against each other. Teaching use:
mark first, then see which method, and which annotator, agrees.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from core.types import Example
from ui.share import first_read, link_warning, quoted, setting_from_link, setting_to_link
from ui.text import plain

LINK = "highlight"  # the link's word indices, comma-separated
COMPARE_LINK = "compare"  # the link's switch of the highlight beside the annotators' (1/0)
PILLS_MAX = 80  # words shown as clickable pills; a longer text gets a searchable list


def compare_picker(example: Example) -> tuple[int, ...]:
    """Beside an example's human highlights: a switch to mark one's own, then the word indices
    marked (empty while the switch is off or nothing is marked)."""
    setting_from_link("rationales.compare", COMPARE_LINK, (True, False), False)
    on = st.toggle(
        "Mark your own highlight beside the annotators'", key="rationales.compare", persist_state="session",
        help="Mark the words you would point to (before you look below), then see how you agree with the annotators, "
        "scored as each of them is scored against the others.",
    )  # fmt: skip
    setting_to_link(COMPARE_LINK, on, False)
    if not on:
        setting_to_link(LINK, None, None)
        return ()
    return highlight_picker(example, beside_humans=True)


def highlight_picker(example: Example, *, beside_humans: bool = False) -> tuple[int, ...]:
    """The word indices the reader marks in ``example`` (sorted; empty until they mark some). The
    widget is the example's own, so marks never carry over to another text; a link's
    ``highlight`` presets it once. ``beside_humans``: the example has the annotators' highlights,
    which the marks are compared with (else the methods are scored against the marks)."""
    words = example.words
    key = "rationales.highlight." + hashlib.sha256("\x1f".join(words).encode()).hexdigest()[:12]
    _from_link(key, len(words))
    label = "Your highlight: the words you would point to as the reasons for the label"
    help = (
        "Your highlight is scored against each annotator's in the table below (row “you”)."
        if beside_humans
        else "Each method's selected words are scored against yours with the metrics below."
    )
    if len(words) <= PILLS_MAX:
        chosen = st.pills(
            label, range(len(words)), selection_mode="multi", format_func=lambda i: plain(words[i]), key=key, help=help,
            persist_state="session",
        )  # fmt: skip
    else:
        chosen = st.multiselect(
            label, range(len(words)), format_func=lambda i: f"{i}: {words[i]}", key=key, help=help,
            placeholder="Choose words", persist_state="session",
        )  # fmt: skip
    marked = tuple(sorted(chosen or ()))
    setting_to_link(LINK, ",".join(map(str, marked)) or None, None)
    return marked


def _from_link(key: str, n_words: int) -> None:
    """On the page's first run in this session: the link's word indices set the widget; a value
    that is not a list of word positions (0 to ``n_words`` - 1) is named in a warning."""
    asked = first_read("rationales.highlight", LINK)
    if asked is None:
        return
    parts = asked.split(",")
    if all(p.isascii() and p.isdecimal() and len(p) <= 6 and int(p) < n_words for p in parts):
        st.session_state[key] = sorted({int(p) for p in parts})
    else:
        link_warning(
            f"The link asks for highlight {quoted(asked)}, which is not a list of word positions 0 to "
            f"{n_words - 1}: nothing is highlighted."
        )
