"""The "Copy link" button: the current view's URL, with the selection every page mirrors into
the query parameters (``ui.sidebar``: model, dataset, split, example, target, typed text; the
pages: methods, run, and the settings of each view, ``setting_from_link``), and the warning that
names what a link asked for and does not get.

It sits in the sidebar, which renders before the page, so it reads the query parameters the
page wrote on the previous run; opening it reruns the app (``on_change="rerun"``), so the link
it shows is always that of the view on screen. The URL is shown in a code block whose copy
button puts it on the clipboard (no script of our own, nothing fetched).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from ui.text import clipped, plain

QUOTED_MAX = 60  # characters of a link's value that a warning quotes


def view_url() -> str:
    """The URL of the current view: the page's address in the browser (``st.context.url``;
    empty in a test without a browser) and the query parameters."""
    base = st.context.url or ""
    query = urlencode(sorted(st.query_params.to_dict().items()))
    return f"{base}?{query}" if query else base


def copy_link() -> None:
    with st.popover(
        "Copy link", icon=":material/link:", key="share.link", on_change="rerun", help="A link to this exact view"
    ):
        st.caption("Anyone who can reach this app opens the same view with it (copy with the button on the right).")
        st.code(view_url(), language=None, wrap_lines=True)


def quoted(value: str) -> str:
    """A value of the link as a warning quotes it: in quotes, cut to ``QUOTED_MAX`` characters and
    escaped for markdown (a crafted link must not put a link or markup of its own on the page)."""
    return f"“{plain(clipped(value, QUOTED_MAX))}”"


def link_warning(message: str) -> None:
    """Name on the page what a link asked for and does not get, and what is shown instead (never a
    silent swap); shown on the run that reads the link. Values of the link go in through
    ``quoted``."""
    st.warning(message)


def first_read(reader: str, param: str) -> str | None:
    """The link's ``param`` the first time ``reader`` (a widget's or form's key) asks for it in this
    session, else None: a link sets a page's widgets once, and the user's choices stand after."""
    read = st.session_state.setdefault("share.read", set())
    if reader in read:
        return None
    read.add(reader)
    return st.query_params.get(param)


def setting_from_link(key: str, param: str, choices: Sequence[Any], default: Any) -> None:
    """Before the widget ``key`` is drawn: its state seeded with ``default`` (draw the widget with
    no default of its own: Streamlit warns of a value given both ways), and on the first run of its
    page in this session the link's ``param`` sets it, when it is one of ``choices`` (a toggle's:
    ``1``/``0``; a ``range``: a whole number in it); another value is named in a warning and
    ``default`` stays. Pair it with ``setting_to_link`` after the widget."""
    st.session_state.setdefault(key, default)
    asked = first_read(key, param)
    if asked is None:
        return
    found = _found(choices, asked)
    if found:
        st.session_state[key] = found[0]
    else:
        known = _range_text(choices) if isinstance(choices, range) else ", ".join(map(_choice_text, choices))
        link_warning(
            f"The link asks for {param} {quoted(asked)}, which is none of {plain(known)}: "
            f"{_choice_text(default) if isinstance(default, bool) else quoted(_link_text(default))} is shown."
        )


def setting_to_link(param: str, value: Any, default: Any) -> None:
    """A page setting in the URL (so Copy link carries it), left out while it is the default."""
    if value is None or value == default:
        st.query_params.pop(param, None)
    else:
        st.query_params[param] = _link_text(value)


def methods_from_link(key: str, known: Sequence[str], default: Sequence[str]) -> None:
    """Before a page's Methods box ``key`` is drawn, the first time in this session: its state
    seeded with the methods the link's ``methods`` names among ``known`` (the others named in a
    warning), else with ``default``. Pair it with ``methods_to_link`` after the box."""
    if key in st.session_state:  # chosen before, or set by an opener (a tour, a stored run, a bundle)
        return
    asked = [k for k in st.query_params.get("methods", "").split(",") if k]
    st.session_state[key] = [k for k in asked if k in known] or list(default)
    if unknown := [k for k in asked if k not in known]:
        link_warning(f"Not methods of this page, left out of the link's choice: {quoted(', '.join(unknown))}.")


def methods_to_link(chosen: Sequence[str]) -> None:
    """The page's chosen methods in the URL, so Copy link carries them."""
    st.query_params["methods"] = ",".join(chosen)


def _found(choices: Sequence[Any], asked: str) -> list[Any]:
    """The choice the link's text names (none or one); a ``range`` of whole numbers is read as a
    number, not searched."""
    if isinstance(choices, range):
        number = int(asked) if asked.isascii() and asked.isdecimal() and len(asked) <= 18 else None
        return [number] if number is not None and number in choices else []
    return [choice for choice in choices if _link_text(choice) == asked]


def _range_text(choices: range) -> str:
    """ "the whole numbers 0 to 9", "the multiples of 5 from 5 to 100"."""
    if choices.step == 1:
        return f"the whole numbers {choices.start:,} to {choices[-1]:,}"
    return f"the multiples of {choices.step} from {choices.start:,} to {choices[-1]:,}"


def _link_text(value: Any) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


def _choice_text(value: Any) -> str:
    """A choice as a warning names it: a toggle's "1 (on)" or "0 (off)", else its link text."""
    return f"{_link_text(value)} ({'on' if value else 'off'})" if isinstance(value, bool) else _link_text(value)
